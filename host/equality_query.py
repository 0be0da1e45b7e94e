"""Queries over a program with an equality relation (rewritten relations, paper 001 §2).

The relations hold rewritten rows (representatives in every merged column); the answer
of a query is over the *expansion* (each row stands for the product of its classes).  A
query alternative is answered in the rewritten space and expanded:

1. **Classify variables.**  A variable in a merged (domain) column of a positive atom is
   a *domain variable*; one in an unmerged column is plain.  A variable in both is
   refused (equal constants are interchangeable in one column and not in the other, so
   the join would need the members of the class, not the representative).
2. **Normalise constants** of domain columns (positive and negated atoms) through ρ: a
   fact ``R(.., c, ..)`` of the expansion holds iff ``R(.., ρ(c), ..)`` is stored.
3. **Comparisons** over domain variables read *members*, not classes (``X = "a"`` keeps
   ``a``, not its class): ``=`` and ``!=`` between a domain variable and a constant or
   another domain variable are taken out of the rule, the variables they read are added
   to its head, and they filter the expanded rows.  ``Y = X`` with ``Y`` in no atom
   renames ``Y`` to ``X``.  Other comparisons over domain values are refused.
4. **Negation** ``!R(..)`` holds for a member iff it holds for its representative (the
   expansion is closed under the classes), so it is evaluated on representatives; a
   domain column of a negated atom must hold a domain variable, a constant or ``_``, an
   unmerged one no domain variable.
5. **Evaluate** the rule over the rewritten relations
   (:func:`gpu_engine.query.evaluate_query`), **expand** the domain variables of its head
   (:func:`gpu_engine.equality_expand.expand_sorted`), apply the filters, project to the
   query's columns; alternatives are unioned and deduplicated.

Refusals are :class:`ProgramError` located in the query text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from gpu_engine import ir
from gpu_engine.equality_expand import expand_sorted
from gpu_engine.ir import Location, ProgramError
from gpu_engine.query import evaluate_query
from gpu_engine.rowset import RowSet

if TYPE_CHECKING:
    from .query import Query
    from .reasoner import Reasoner


@dataclass(frozen=True)
class EqRule:
    """One query alternative in the rewritten space: the rule (head: the query's columns,
    then the filter variables), which head positions expand, the filters
    ``(op, i, j_or_None, const_id_or_None)`` over head positions, the query's arity."""

    rule: ir.Rule
    expand: tuple[int, ...]
    filters: tuple[tuple[str, int, int | None, Any], ...]
    project: tuple[int, ...]  # per query column, its head position


def _atoms(rule: ir.Rule) -> list[ir.Atom]:
    return [lit for lit in rule.body if isinstance(lit, ir.Atom)]


def _named(t: Any) -> str | None:
    return t.name if isinstance(t, ir.Var) and t.name != "_" else None


def _rename(t: Any, alias: dict[str, str]) -> Any:
    if isinstance(t, ir.Var) and t.name in alias:
        return ir.Var(alias[t.name])
    return t


def _rename_lit(lit: Any, alias: dict[str, str]) -> Any:
    if isinstance(lit, ir.Atom):
        return ir.Atom(lit.relation, tuple(_rename(t, alias) for t in lit.args), lit.loc)
    if isinstance(lit, ir.Negation):
        return ir.Negation(_rename_lit(lit.atom, alias), *_rest(lit))
    if isinstance(lit, ir.Compare):
        return ir.Compare(lit.op, _rename(lit.left, alias), _rename(lit.right, alias),
                          lit.type, lit.loc)
    return lit


def _rest(neg: ir.Negation) -> tuple[Any, ...]:
    """The fields of a Negation after its atom (kept as they are)."""
    import dataclasses

    return tuple(getattr(neg, f.name) for f in dataclasses.fields(neg)[1:])


def plan_rule(rule: ir.Rule, eq: ir.Equality, normal: Any, find: Any) -> EqRule:
    """The rewritten-space form of one query alternative (module docstring, steps 1–4).
    ``normal(value)`` is a domain constant's representative (as a constant value),
    ``find(value)`` a symbol's id or None."""
    domain = eq.domain
    dvars: set[str] = set()
    plain: dict[str, ir.Atom] = {}
    for a in _atoms(rule):
        pos = set(domain.get(a.relation, ()))
        for p, t in enumerate(a.args):
            n = _named(t)
            if n is None:
                continue
            if p in pos:
                dvars.add(n)
            else:
                plain.setdefault(n, a)
    for a in _atoms(rule):
        pos = set(domain.get(a.relation, ()))
        for p, t in enumerate(a.args):
            n = _named(t)
            if n is not None and n in dvars and p not in pos:
                raise ProgramError(
                    f"variable '{n}' joins a column that the equality relation "
                    f"'{eq.relation}' merges with a column of '{a.relation}' it does not "
                    "merge: not supported in a query", a.loc)
    # Y = X with Y in no atom: Y is another name of X
    alias: dict[str, str] = {}
    body: list[Any] = []
    in_atoms = dvars | set(plain)
    for lit in rule.body:
        if isinstance(lit, ir.Compare) and lit.op == "=":
            left, right = _named(lit.left), _named(lit.right)
            for x, y in ((left, right), (right, left)):
                if x is not None and y is not None and x in dvars and y not in in_atoms \
                        and y not in alias:
                    alias[y] = x
                    break
            else:
                body.append(lit)
                continue
            continue
        body.append(lit)
    if alias:
        body = [_rename_lit(lit, alias) for lit in body]
    names = [_rename(t, alias) for t in rule.head.args]
    head_args = list({t: None for t in names})  # Y = X with both answers: one column
    arity = len(head_args)
    project = tuple(head_args.index(t) for t in names)
    extra: list[str] = []

    def slot(name: str) -> int:
        for i, t in enumerate(head_args):
            if _named(t) == name:
                return i
        if name not in extra:
            extra.append(name)
        return arity + extra.index(name)

    filters: list[tuple[str, int, int | None, Any]] = []
    kept: list[Any] = []
    for lit in body:
        if isinstance(lit, ir.Atom):
            kept.append(_normal_atom(lit, domain, normal))
            continue
        if isinstance(lit, ir.Negation):
            a = lit.atom
            pos = set(domain.get(a.relation, ()))
            for p, t in enumerate(a.args):
                n = _named(t)
                if n is None or n.startswith("_"):
                    continue
                if (p in pos) != (n in dvars):
                    raise ProgramError(
                        f"variable '{n}' of a negated '{a.relation}' is read in a column the "
                        f"equality relation '{eq.relation}' "
                        + ("merges" if p in pos else "does not merge")
                        + " and bound in one it "
                        + ("does not" if p in pos else "does")
                        + ": not supported in a query", a.loc)
            kept.append(ir.Negation(_normal_atom(a, domain, normal), *_rest(lit)))
            continue
        if isinstance(lit, ir.Compare):
            names = [_named(t) for t in (lit.left, lit.right)]
            touched = [n for n in names if n is not None and n in dvars]
            if not touched:
                kept.append(lit)
                continue
            other = [t for t, n in zip((lit.left, lit.right), names)
                     if not (n is not None and n in dvars)]
            ok_other = all(isinstance(t, ir.Const) and t.type == "symbol" for t in other)
            if lit.op not in ("=", "!=") or not ok_other:
                raise ProgramError(
                    f"comparison '{lit}' reads values of columns that the equality relation "
                    f"'{eq.relation}' merges: only = and != between such variables and "
                    "symbol constants are supported in a query", lit.loc)
            if len(touched) == 2:
                filters.append((lit.op, slot(touched[0]), slot(touched[1]), None))
            else:
                const = other[0]
                filters.append((lit.op, slot(touched[0]), None, find(str(const.value))))
            continue
        kept.append(lit)
    head = ir.Atom(rule.head.relation,
                   tuple(head_args) + tuple(ir.Var(n) for n in extra), rule.head.loc)
    expand = tuple(i for i, t in enumerate(head.args) if _named(t) in dvars)
    return EqRule(ir.Rule(head, tuple(kept), rule.loc), expand, tuple(filters), project)


def _normal_atom(a: ir.Atom, domain: dict[str, tuple[int, ...]], normal: Any) -> ir.Atom:
    pos = set(domain.get(a.relation, ()))
    args = tuple(ir.Const(normal(t.value), "symbol")
                 if p in pos and isinstance(t, ir.Const) and t.type == "symbol" else t
                 for p, t in enumerate(a.args))
    return ir.Atom(a.relation, args, a.loc)


def evaluate(reasoner: Reasoner, q: Query, rules: list[ir.Rule], prefix: int
             ) -> tuple[tuple[np.ndarray, ...], int]:
    """The distinct answers of the query's ``rules`` over the expansion, as host columns
    and a row count (for no columns: 1 when it holds)."""
    from .query import _in_query

    engine = reasoner.engine
    eq = reasoner.program.equality
    assert eq is not None
    symbols = reasoner.symbols
    body = q.text.rstrip()
    body = body[:-1].rstrip() if body.endswith(".") else body
    lines = body.split("\n")
    end = Location("<query>", len(lines), len(lines[-1]) + 2)  # as parse_query
    try:
        plans = [plan_rule(r, eq, engine._normal_constant,  # type: ignore[attr-defined]
                           symbols.find) for r in rules]
    except ProgramError as exc:
        raise _in_query(exc, prefix, end) from None
    arity = len(q.columns)
    parts: list[tuple[np.ndarray, ...]] = []
    holds = False
    be = engine.be
    index = engine.class_index()  # type: ignore[attr-defined]
    for plan in plans:
        width = len(plan.rule.head.args)
        cols, n = evaluate_query(engine, [plan.rule], width)
        if width == 0:
            holds |= n > 0
            continue
        if n == 0:
            continue
        dev = tuple(be.asarray(c) for c in cols)
        if plan.expand:
            dev = expand_sorted(be, dev, plan.expand, *index)
        out = tuple(be.to_host(c) for c in dev)
        mask = np.ones(len(out[0]), dtype=bool)
        for op, i, j, cid in plan.filters:
            other = out[j] if j is not None else (np.int64(-1) if cid is None else cid)
            same = out[i] == other
            mask &= same if op == "=" else ~same
        if arity == 0:
            holds |= bool(mask.any())
            continue
        parts.append(tuple(out[i][mask] for i in plan.project))
    if arity == 0:
        return (), int(holds)
    if not parts:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(arity)), 0
    from gpu_engine.kernels.backend import get_backend

    cpu = get_backend("cpu")
    joined = tuple(np.concatenate([p[i] for p in parts]) for i in range(arity))
    rows = RowSet.from_columns(cpu, joined, arity)
    return tuple(np.asarray(c) for c in rows.cols), len(rows)

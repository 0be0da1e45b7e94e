"""Comparisons of record literals whose type is not declared, solved by unification.

Soufflé accepts ``[a] = [1]``, ``a = [1, b], a = [1, 0]`` or ``[1, "3", 5] != [2, "3", 5]``
although no side has a declared record type.  Such a comparison is decided structurally,
before typing, in the clause's conjunctive body:

* a variable that occurs in no atom of the body (so no declared type can reach it) and is
  equated with a record literal (or ``nil``) is replaced by that literal everywhere
  (head included), once the literal does not contain it;
* ``[a1..an] = [b1..bn]`` becomes ``a1 = b1, ..., an = bn``; literals of different sizes
  (or a literal and ``nil``) make the body false; ``_ = t`` holds;
* ``[a1..an] != [b1..bn]`` becomes the disjunction of ``ai != bi`` (one alternative body
  per field), true for different sizes;
* comparisons of two constants are folded (numbers by value, strings by text).

Everything else (records compared with variables of a declared record type, scalar
equalities such as ``b = 1`` that fields produce) is left to the rest of the front end.
"""

from __future__ import annotations

from typing import Any

from gpu_engine.host.lang.dl_safety import term_vars
from gpu_engine.host.lang.dl_syntax import (
    SAtom,
    SCmp,
    SLiteral,
    SNegAtom,
    SNil,
    SNum,
    SRecord,
    SStr,
    STerm,
    SVar,
    SWild,
)
from gpu_engine.host.lang.dl_walk import transform

from gpu_engine.ir import ProgramError

_REC = (SRecord, SNil)


def has_untyped_records(body: list[SLiteral]) -> bool:
    """Whether the body compares a record literal (the pass has work to do)."""
    return any(isinstance(lit, SCmp) and lit.op in ("=", "!=")
               and (isinstance(lit.left, _REC) or isinstance(lit.right, _REC)) for lit in body)


def solve_untyped_records(head: SAtom, body: list[SLiteral]
                          ) -> list[tuple[SAtom, list[SLiteral]]]:
    """The clause's alternatives with record-literal comparisons decided (none: false)."""
    in_atoms = {v.name for lit in body if isinstance(lit, (SAtom, SNegAtom))
                for a in (lit.atom if isinstance(lit, SNegAtom) else lit).args
                for v in term_vars(a)}
    out: list[tuple[SAtom, list[SLiteral]]] = []
    todo: list[tuple[SAtom, list[SLiteral]]] = [(head, list(body))]
    for _ in range(10_000):
        if not todo:
            return out
        h, lits = todo.pop()
        solved = _solve(lits, in_atoms)
        if solved is None:
            continue  # false
        sigma, rest, split = solved
        h = _subst(h, sigma)
        rest = [_subst(lit, sigma) for lit in rest]
        if split is not None:  # a record inequality: one alternative per field
            i, pairs = split
            at = rest[i]
            for a, b in pairs:
                todo.append((h, [*rest[:i], SCmp("!=", a, b, at.loc, at.loc),  # type: ignore[union-attr]
                                 *rest[i + 1:]]))
            continue
        out.append((h, rest))
    raise ProgramError("record comparisons expand to too many alternatives", head.loc)


def _subst(node: Any, sigma: dict[str, STerm]) -> Any:
    if not sigma:
        return node

    def f(n: Any) -> Any:
        if isinstance(n, SVar) and n.name in sigma:
            return sigma[n.name]
        return n

    for _ in range(len(sigma) + 1):  # substituted terms may hold substituted variables
        new = transform(node, f)
        if new == node:
            return new
        node = new
    return node


def _resolve(t: STerm, sigma: dict[str, STerm]) -> STerm:
    while isinstance(t, SVar) and t.name in sigma:
        t = sigma[t.name]
    return t


def _solve(lits: list[SLiteral], in_atoms: set[str]
           ) -> tuple[dict[str, STerm], list[SLiteral], tuple[int, list[tuple[STerm, STerm]]] | None] | None:
    """Unify the body's record equalities: (substitution, remaining literals, a record
    inequality to split at its index) or None when the body is false."""
    sigma: dict[str, STerm] = {}
    pending = list(lits)
    changed = True
    while changed:
        changed = False
        rest: list[SLiteral] = []
        for k, lit in enumerate(pending):
            if not isinstance(lit, SCmp) or lit.op not in ("=", "!="):
                rest.append(lit)
                continue
            left = _subst(_resolve(lit.left, sigma), sigma)
            right = _subst(_resolve(lit.right, sigma), sigma)
            if lit.op == "=" and (isinstance(left, SWild) or isinstance(right, SWild)) and (
                    isinstance(left, _REC) or isinstance(right, _REC)):
                changed = True
                continue  # `_ = [..]` holds
            folded = _fold(lit.op, left, right)
            if folded is not None:
                changed = True
                if not folded:
                    return None
                continue
            if isinstance(left, _REC) and isinstance(right, _REC):
                la = left.args if isinstance(left, SRecord) else None
                ra = right.args if isinstance(right, SRecord) else None
                same = (la is None) == (ra is None) and (la is None or len(la) == len(ra or ()))
                changed = True
                if lit.op == "=":
                    if not same:
                        return None
                    rest.extend(SCmp("=", a, b, lit.loc, lit.op_loc)
                                for a, b in zip(la or (), ra or (), strict=True))
                elif same and la:
                    pairs = list(zip(la, ra or (), strict=True))
                    return sigma, [*rest, lit, *pending[k + 1:]], (len(rest), pairs)
                elif same:
                    return None  # `[] != []`, `nil != nil`
                continue  # different sizes: `!=` holds
            if lit.op == "=":
                bound = False
                for var, other in ((left, right), (right, left)):
                    if (isinstance(var, SVar) and var.name not in in_atoms
                            and var.name not in sigma and isinstance(other, _REC)
                            and var.name not in {v.name for v in term_vars(other)}):
                        sigma[var.name] = other
                        bound = changed = True
                        break
                if bound:
                    continue
            rest.append(lit)
        pending = rest
    return sigma, pending, None


def _fold(op: str, a: STerm, b: STerm) -> bool | None:
    """A comparison of two constants decided now (None: not two constants)."""
    if isinstance(a, SNum) and isinstance(b, SNum):
        eq = a.value == b.value
    elif isinstance(a, SStr) and isinstance(b, SStr):
        eq = a.value == b.value
    elif isinstance(a, (SNum, SStr)) and isinstance(b, (SNum, SStr)):
        eq = False
    else:
        return None
    return eq if op == "=" else (not eq if op == "!=" else None)

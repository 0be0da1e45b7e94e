"""Backward evaluation of one rule, one body atom at a time: the planner shared by
B/F≈'s backward step (paper 001 Algorithm 4 lines 32–33, :mod:`gpu_engine.equality_bf`)
and DRed≈'s one-step rederivation (:mod:`gpu_engine.equality_maintenance`).

The head is bound to each candidate fact, then the positive body atoms are joined one at
a time, the atom with the smallest estimated fan-out on its bound columns first (the
evaluator's own order, smallest input first, can start from an atom bound only by a
low-selectivity column and multiply the bindings); the bindings are deduplicated after
each step, and the other literals (comparisons) filter the last bindings.  A rule with a
single body atom whose variables the head binds needs no join: its instance is the
head's image, a membership test.

DRed's one-step check (:func:`one_step`) may instead run the rule forwards
(:func:`_forward`): when many candidate facts share few values of the columns that bind
the first atom (``fan(z, v) :- knows(z, y), attr(y, v)`` with fifty ``v`` per ``z``),
binding each fact repeats the first atom's rows per fact; evaluating the rule from the
distinct values and testing the candidates against its heads reads them once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from gpu_engine.kernels.backend import INDEX

from .affected import VersionOf, bind_head, rederivable
from .expr import const_value, term_vars
from .ir import Atom, Call, Compare, Const, Negation, Rule, Var
from .rowset import RowSet
from .rule_eval import Bindings, RuleEvaluator
from .runs import RunSet

RowsOf = Callable[[str], RunSet]
FORWARD_MIN = 64  # one_step forwards: fewer candidate facts are always bound one by one


def fanout(rows_of: RowsOf, name: str, pos: tuple[int, ...]) -> float:
    """Average number of rows of ``name`` per distinct key on the columns ``pos``, from
    the join index of the relation's largest run on those columns, or for one later
    column without an index from the run's bitset of its values (the estimate is cached
    on the run, so across updates too: runs are immutable)."""
    runs = rows_of(name).runs
    if not runs or not pos:
        return float(sum(len(r) for r in runs))
    run = max(runs, key=len)
    key = ("fanout", pos)
    hit = run._indexes.get(key)
    if hit is None and len(pos) == 1 and pos[0] and (pos, (), ()) not in run._indexes:
        # one later column without a join index: its distinct values from the run's
        # bitset of them (one pass) rather than an index built to be counted
        distinct = run.distinct_values(pos[0])
        if distinct is not None:
            hit = len(run) / max(distinct, 1)
            run._indexes[key] = hit
    if hit is None:
        idx = run.index(pos)
        k = idx.sorted_keys
        distinct = (int((k[1:] != k[:-1]).sum()) + 1 if idx.spec is not None and len(k)
                    else 1)
        hit = len(run) / max(distinct, 1)
        run._indexes[key] = hit
    return hit


def atom_fanout(rows_of: RowsOf, a: Atom, bound: set[str]) -> float:
    """:func:`fanout` of ``a`` on its constants and the columns of ``bound`` variables."""
    pos = tuple(p for p, t in enumerate(a.args)
                if isinstance(t, Const) or (isinstance(t, Var) and t.name in bound))
    return fanout(rows_of, a.relation, pos)


def supported(rule: Rule) -> bool:
    """Whether :func:`join_backward` takes the rule (no functor in its head)."""
    return not any(isinstance(t, Call) for t in rule.head.args)


def join_backward(ev: RuleEvaluator, rule: Rule, facts: RowSet, source: RowsOf,
                  rows_of: RowsOf, emit: tuple[str, ...] = ()) -> Bindings | None:
    """The instances of ``rule`` (no head functor: :func:`supported`) whose head is one
    of ``facts``, its positive atoms over ``source(relation)``: bindings of ``#fact``
    (the fact's index in ``facts``) and of the variables ``emit``, one row per distinct
    (fact, emitted values) (module docstring).  Join order from the fan-outs of
    ``rows_of(relation)``.  None when no instance exists."""
    xp = ev.be.xp
    cols, ok, _ = bind_head(ev, rule, facts)
    idx = xp.flatnonzero(ok)
    if not len(idx):
        return None
    b = Bindings({v: (c[idx] if len(idx) < len(facts) else c) for v, c in cols.items()},
                 len(idx))
    atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
    filters = tuple(lit for lit in rule.body if not isinstance(lit, Atom))
    keep = set(emit)
    for f in filters:
        if isinstance(f, Compare):
            keep |= term_vars(f.left) | term_vars(f.right)
    if len(atoms) == 1 and all(not isinstance(t, Var) or t.name in b.cols
                               for t in atoms[0].args):
        # one body atom, every variable bound by the head: the body fact is the head's
        # image, an instance iff it is in the source (no join needed)
        a = atoms[0]
        acols = tuple(b.cols[t.name] if isinstance(t, Var)
                      else xp.full(b.n, const_value(t, ev.symbols), dtype=INDEX)
                      for t in a.args)
        hit = source(a.relation).contains(acols, b.n)
    elif len(atoms) == 1 and not keep & {t.name for t in atoms[0].args
                                         if isinstance(t, Var) and t.name not in b.cols}:
        # one body atom whose variables the head leaves unbound are read by nothing
        # after it: the instances that count are the facts with a match, a semi-join
        # (the look-up is the rule's compiled step from the head's bindings: filters
        # read no variable it leaves unbound, so none binds one of them first)
        probe = ev.plans.plan(rule).root(frozenset(b.cols)).step(0).probe
        hit = ev.member(probe, b, source(atoms[0].relation))
    else:
        hit = None
    if hit is not None:  # the one atom checked: the bindings of the facts with a match
        sel = xp.flatnonzero(hit)
        if not len(sel):
            return None
        b = Bindings({v: c[sel] for v, c in b.cols.items()}, len(sel))
        atoms = []
    b = _join_atoms(ev, b, atoms, keep, source, rows_of)
    if b is None or not b.n:
        return None
    out = ("#fact", *emit)
    if filters:
        q = Rule(Atom("#q", tuple(Var(v) for v in out)), filters, rule.loc)
        outs = [o for o in ev.evaluate(q, [], {}, initial=b) if o.n]
        if not outs:
            return None
        cols_out = [xp.concatenate([o.cols[i][:o.n] for o in outs]) for i in range(len(out))]
        return Bindings(dict(zip(out, cols_out)), len(cols_out[0]))
    return Bindings({v: b.cols[v] for v in out}, b.n)


def _join_atoms(ev: RuleEvaluator, b: Bindings, atoms: list[Atom], keep: set[str],
                source: RowsOf, rows_of: RowsOf) -> Bindings | None:
    """``b`` joined with ``atoms`` one at a time, the smallest estimated fan-out first,
    deduplicated after each step, keeping ``#fact``, ``keep`` and what later atoms read;
    None when no binding is left."""
    xp = ev.be.xp
    atoms = list(atoms)
    while atoms and b.n:
        bound = set(b.cols)
        a = min(atoms, key=lambda a, bound=bound: atom_fanout(rows_of, a, bound))
        atoms.remove(a)
        later = set(keep)
        for other in atoms:
            later |= {t.name for t in other.args if isinstance(t, Var)}
        names = [v for v in b.cols if v == "#fact" or v in later]
        names += sorted({t.name for t in a.args if isinstance(t, Var)
                         and t.name not in bound and t.name in later})
        q = Rule(Atom("#q", tuple(Var(v) for v in names)), (a,), a.loc)
        outs = [o for o in ev.evaluate(q, [source(a.relation)], {}, initial=b) if o.n]
        if not outs:
            return None
        got = RowSet.from_columns(ev.be, tuple(
            xp.concatenate([o.cols[i][:o.n] for o in outs]) for i in range(len(names))),
            len(names))
        b = Bindings(dict(zip(names, got.cols)), len(got))
    return b if b.n else None


def _estimate(rows_of: RowsOf, atoms: list[Atom], bound: set[str], n: float
              ) -> float:
    """Rows the bindings grow through when ``n`` bindings of ``bound`` join ``atoms`` in
    the planner's order (average fan-outs, :func:`fanout`)."""
    bound, rest, total = set(bound), list(atoms), 0.0
    while rest:
        a = min(rest, key=lambda a: atom_fanout(rows_of, a, bound))
        rest.remove(a)
        n *= atom_fanout(rows_of, a, bound)
        total += n
        bound |= {t.name for t in a.args if isinstance(t, Var)}
    return total


def _forward(ev: RuleEvaluator, rule: Rule, facts: RowSet, source: RowsOf, rows_of: RowsOf
             ) -> tuple[Any, int] | None:
    """:func:`one_step` by evaluating ``rule`` forwards from the distinct values of the
    head variables that bind its first atom (the planner's choice from the head), and
    testing ``facts`` against the heads; None when the estimate (:func:`_estimate`)
    says binding every fact costs less than half of it."""
    atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
    if len(atoms) < 2 or len(facts) < FORWARD_MIN:
        return None
    head = {t.name for t in rule.head.args if isinstance(t, Var)}
    first = min(atoms, key=lambda a: atom_fanout(rows_of, a, head))
    kv = sorted({t.name for t in first.args if isinstance(t, Var) and t.name in head})
    if not kv or set(kv) == head:
        return None
    cols, ok, extra = bind_head(ev, rule, facts)
    if extra:
        return None
    xp = ev.be.xp
    sel = xp.flatnonzero(ok)
    keys = RowSet.from_columns(ev.be, tuple(cols[v][sel] for v in kv), len(kv))
    if 2 * _estimate(rows_of, atoms, set(kv), len(keys)) >= _estimate(
            rows_of, atoms, head, len(sel)):
        return None
    filters = tuple(lit for lit in rule.body if not isinstance(lit, Atom))
    need = set(head)
    for f in filters:
        if isinstance(f, Compare):
            need |= term_vars(f.left) | term_vars(f.right)
    hit = xp.zeros(len(facts), dtype=bool)
    b = _join_atoms(ev, Bindings(dict(zip(kv, keys.cols)), len(keys)), atoms, need, source,
                    rows_of)
    if b is None:
        return hit, 0
    q = Rule(rule.head, filters, rule.loc)  # the heads of the bindings the filters pass
    outs = [o for o in ev.evaluate(q, [], {}, initial=b) if o.n]
    if not outs:
        return hit, 0
    arity = len(rule.head.args)
    heads = RowSet.from_columns(ev.be, tuple(
        xp.concatenate([o.cols[i][:o.n] for o in outs]) for i in range(arity)), arity)
    hit[sel] = heads.contains(tuple(c[sel] for c in facts.cols))
    return hit, b.n


def one_step(ev: RuleEvaluator, rule: Rule, facts: RowSet, source: RowsOf, rows_of: RowsOf,
             pos: VersionOf, neg: VersionOf, forward: bool = False) -> tuple[Any, int]:
    """Mask over ``facts``: which have an instance of ``rule`` (DRed's one-step
    rederivation), and the instances matched.  Through :func:`join_backward` over
    ``source`` when the rule has no head functor and no negation, else through
    :func:`gpu_engine.affected.rederivable` (positive atoms over ``pos``, negated ones
    missing ``neg``); with ``forward``, by :func:`_forward` where its estimate says so
    (DRed≈, whose candidates cluster on the representatives of large classes)."""
    if not supported(rule) or any(isinstance(x, Negation) for x in rule.body):
        return rederivable(ev, rule, facts, pos, neg)
    fwd = _forward(ev, rule, facts, source, rows_of) if forward else None
    if fwd is not None:
        return fwd
    hit = ev.be.xp.zeros(len(facts), dtype=bool)
    b = join_backward(ev, rule, facts, source, rows_of)
    if b is None:
        return hit, 0
    hit[b.cols["#fact"]] = True
    return hit, b.n

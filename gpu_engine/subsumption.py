"""Subsumptive rules ``A(x..) <= A(y..) :- body.``: a tuple of ``A`` that another tuple of
``A`` dominates (the body holds for the pair) is deleted.

A subsumptive rule is kept in the IR as a :class:`~gpu_engine.ir.Rule` whose head is
``A(x.., y..)`` (the dominated tuple's arguments, then the dominating one's) and whose
body starts with the atoms ``A(x..)`` and ``A(y..)``; it lives in
``Program.subsumptions``, not among the deriving rules.

Our reading of Soufflé's semantics (deterministic): in the stratum of ``A``, after the
non-recursive rules and after every seminaive round, the dominated tuples of the
relation as it then is (a tuple never dominates itself) are deleted all at once, from
the relation and from the round's Δ, so that they derive nothing further.  Subsumption
is not maintained incrementally (updates rematerialise; see order_dependent).
"""

from __future__ import annotations

from typing import Any

from .ir import Atom, Negation, Rule
from .rowset import RowSet, union_rows
from .runs import RunSet


def dominated(engine: Any, rules: list[Rule]) -> dict[str, RowSet]:
    """The tuples each relation loses to its subsumptive ``rules`` (over ``engine.store``)."""
    be, xp = engine.be, engine.be.xp
    out: dict[str, RowSet] = {}
    for rule in rules:
        name = rule.head.relation
        k = len(rule.head.args) // 2
        atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
        sources = [engine.store[a.relation] for a in atoms]
        negated = {lit.atom.relation: engine.store[lit.atom.relation]
                   for lit in rule.body if isinstance(lit, Negation)}
        for o in engine.evaluator.evaluate(rule, sources, negated):
            differ = xp.zeros(o.n, dtype=bool)
            for i in range(k):
                differ |= o.cols[i] != o.cols[k + i]
            if k == 0 or not bool(differ.any()):
                continue
            idx = xp.flatnonzero(differ)
            rows = RowSet.from_columns(be, tuple(c[idx] for c in o.cols[:k]), k)
            out[name] = union_rows(be, k, [out[name], rows]) if name in out else rows
    return out


def apply(engine: Any, rules: list[Rule], views: list[dict[str, RunSet]]) -> None:
    """Delete the dominated tuples from ``engine.store`` and from each version in
    ``views`` (maps relation -> RunSet, e.g. the round's Δ and previous version)."""
    for name, rows in dominated(engine, rules).items():
        engine.store[name] = _drop(engine.store[name], rows)
        for v in views:
            if name in v:
                v[name] = _drop(v[name], rows)


def _drop(rs: RunSet, rows: RowSet) -> RunSet:
    live = rows.select(rs.has(rows))
    return rs.without(live) if len(live) else rs

"""Answer a conjunctive query over a materialisation, read-only.

A query arrives as one or more rules (one per disjunct) whose heads list the query's
named variables.  Each body is evaluated exactly like a rule body during materialisation
(:class:`gpu_engine.rule_eval.RuleEvaluator`: greedy join order, the relations' runs and
their cached join indexes, negation as an anti-join against the complete relation), over
the relations of the current materialisation, and the head rows are deduplicated (set
semantics).  A positive atom with constants reads only the rows that match them, so the
greedy order (smallest input first) sees the constants' selectivity.  Nothing of the engine state changes: no relation, counter or flag is
written, and join indexes filtered by the query's own constants (useless to the rules and
to other queries) are dropped from the runs' caches afterwards.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .engine import Engine
from .expr import const_value
from .ir import Atom, Const, Negation, Rule
from .rowset import RowSet
from .rule_eval import RuleEvaluator, RuleOutput, concat_outputs
from .runs import RunSet
from .stratify import normalise_rule


def evaluate_query(engine: Engine, rules: list[Rule], arity: int
                   ) -> tuple[tuple[np.ndarray, ...], int]:
    """The distinct head rows the ``rules`` derive from ``engine``'s materialisation, as
    host int64 columns (sorted by their stored values) and a row count (for ``arity``
    0: 1 when some body holds, else 0).  The engine must be materialised."""
    host = engine._host_reads()  # a GPU engine whose host twin is current: read there
    eng = host if host is not None else engine
    be = eng.be
    store = eng.current_state().store
    evaluator = RuleEvaluator(be, eng.symbols)
    evaluator.compact = _distinct(be, arity)  # bound memory: duplicates are not needed
    runs = _runs_read(rules, store)
    cached = [set(r._indexes) for r in runs]
    outs: list[RuleOutput] = []
    try:
        for rule in rules:
            rule = normalise_rule(rule)
            atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
            sources = [_narrowed(be, store[a.relation], a, eng.symbols) for a in atoms]
            negated = {lit.atom.relation: store[lit.atom.relation]
                       for lit in rule.body if isinstance(lit, Negation)}
            outs.extend(evaluator.evaluate(rule, sources, negated))
            if sum(o.n for o in outs) > evaluator.compact_rows:
                outs = evaluator.compact(rule, outs)  # type: ignore[misc]
    finally:
        for run, before in zip(runs, cached):  # forget indexes filtered by query constants
            for key in [k for k in run._indexes if k not in before and k[1]]:
                del run._indexes[key]
    if arity == 0:
        return (), int(any(o.count > 0 for o in outs))
    if not outs:
        return tuple(np.zeros(0, dtype=np.int64) for _ in range(arity)), 0
    cols, _ = concat_outputs(be, arity, outs)
    rows = RowSet.from_columns(be, cols, arity, sum(o.n for o in outs))
    return tuple(be.to_host(c) for c in rows.cols), len(rows)


def _narrowed(be: Any, rs: RunSet, atom: Atom, symbols: Any) -> RunSet:
    """The rows of ``rs`` that match the atom's constants (each run and tombstone set
    filtered alike, so tombstones stay subsets of the runs): the greedy join order then
    sees how selective a constant is, and the filtered runs' indexes die with the query."""
    consts = [(p, const_value(t, symbols)) for p, t in enumerate(atom.args)
              if isinstance(t, Const)]
    if not consts:
        return rs

    def keep(r: RowSet) -> RowSet:
        mask = be.xp.ones(len(r), dtype=bool)
        for p, v in consts:
            mask &= r.cols[p] == v
        return r.select(mask)

    runs = tuple(x for x in map(keep, rs.runs) if len(x))
    dead = tuple(x for x in map(keep, rs.dead) if len(x))
    return RunSet(rs.be, rs.arity, runs, dead)


def _distinct(be: Any, arity: int) -> Any:
    """A compactor that keeps the distinct rows of rule outputs."""
    def compact(rule: Rule, outs: list[RuleOutput]) -> list[RuleOutput]:
        if not outs or arity == 0:
            return outs[:1]
        cols, _ = concat_outputs(be, arity, outs)
        d = RowSet.from_columns(be, cols, arity, sum(o.n for o in outs))
        return [RuleOutput(d.cols, len(d))]
    return compact


def _runs_read(rules: list[Rule], store: dict[str, RunSet]) -> list[RowSet]:
    """The runs and tombstone sets of every relation the rules read (their index caches
    are watched)."""
    names = {lit.relation if isinstance(lit, Atom) else lit.atom.relation
             for r in rules for lit in r.body if isinstance(lit, (Atom, Negation))}
    return [run for n in sorted(names) for run in (*store[n].runs, *store[n].dead)]

"""Soufflé's view of the seminaive loop: ``recursive_iteration_cnt()``, ``debug_delta``
and ``.limitsize``.

Reading chosen (matching Soufflé's ``semantic/iteration_counter`` test): a recursive
stratum starts with iteration 0, in which its non-recursive rules run (and its explicit
facts are there); seminaive round ``j`` (1, 2, ...) evaluates the recursive rules over the
Δ of round ``j - 1`` with ``recursive_iteration_cnt()`` equal to ``j`` (``unsigned``).
``.decl D = debug_delta(R)`` declares ``D`` with ``R``'s attributes plus
``iteration: unsigned``: ``D`` holds ``(t, j)`` for each tuple ``t`` of ``R`` that was
new in iteration ``j`` (0: known before the first round), so every tuple of ``R`` occurs
exactly once.  ``R`` must be recursive; ``D`` is filled by ``R``'s stratum and may be read
by later strata, but gets no rules or facts of its own.  ``recursive_iteration_cnt()``
outside a recursive rule is refused (Soufflé's counter is only defined inside the loop).

``.limitsize R(n=N)`` (Soufflé's exit condition of the fixpoint loop): after a round of
``R``'s recursive stratum has computed its new tuples, the stratum stops without adding
them when ``R`` already holds ``N`` tuples or more (so ``R`` may exceed ``N`` by the last
round it absorbed).  Only a recursive ``R`` may have one (refused otherwise).

The round numbers are observable, so such strata keep the array path round by round
(no small-delta path, no TC/STC modules), and the results depend on the evaluation
order: ``order_dependent.features`` lists them, so updates rematerialise (another
algorithm and derivation counters are refused).
"""

from __future__ import annotations

from typing import Any

from gpu_engine.kernels.backend import INDEX

from .ir import Atom, Call, Compare, Negation, Program, ProgramError, Rule, Term
from .rowset import RowSet
from .runs import RunSet


def _has_iteration(t: Term) -> bool:
    return isinstance(t, Call) and (t.op == "iteration" or any(_has_iteration(a)
                                                               for a in t.args))


def uses_iteration(rule: Rule) -> bool:
    """Whether ``recursive_iteration_cnt()`` occurs anywhere in the rule."""
    terms = list(rule.head.args)
    for lit in rule.body:
        if isinstance(lit, Compare):
            terms += [lit.left, lit.right]
        elif isinstance(lit, (Atom, Negation)):
            atom = lit.atom if isinstance(lit, Negation) else lit
            terms += list(atom.args)
    return any(_has_iteration(t) for t in terms)


def features(program: Program, rules: list[Rule]) -> list[str]:
    """The features of this module a program uses (for messages)."""
    out = []
    if any(uses_iteration(r) for r in rules):
        out.append("recursive_iteration_cnt()")
    if program.debug_deltas:
        out.append("debug_delta")
    if program.limits:
        out.append(".limitsize")
    return out


def check(program: Program, strata: list[Any]) -> None:
    """Refuse ``recursive_iteration_cnt()`` outside recursive rules, rules or facts for a
    ``debug_delta`` relation, and one of a relation that is not recursive."""
    recursive = {id(r) for s in strata for r in s.recursive_rules}
    eq = program.equality
    for s in strata:
        if eq is not None and eq.relation in s.relations and observes_rounds(program, s):
            raise ProgramError("recursive_iteration_cnt() or debug_delta in the stratum of "
                               f"the equality relation {eq.relation} is not supported",
                               program.relations[eq.relation].loc)
    for s in strata:
        for rule in s.rules:
            if id(rule) not in recursive and uses_iteration(rule):
                raise ProgramError("recursive_iteration_cnt() outside a recursive rule (it "
                                   "counts the iterations of a recursive stratum)", rule.loc)
    for name, (_n, loc) in program.limits.items():
        if not next(s for s in strata if name in s.relations).recursive:
            raise ProgramError(f".limitsize {name}: {name} is not recursive (Soufflé's limit "
                               "stops the fixpoint loop of a recursive stratum)", loc)
    for agg in program.aggregates.values():
        for rule in agg.rules:
            if uses_iteration(rule):
                raise ProgramError("recursive_iteration_cnt() inside an aggregate is not "
                                   "supported", agg.loc)
    if not program.debug_deltas:
        return
    for rule in program.rules:
        if rule.head.relation in program.debug_deltas:
            raise ProgramError(f"'{rule.head.relation}' is a debug_delta relation: it gets "
                               "no rules or facts of its own", rule.loc)
    for name in program.debug_deltas:
        if program.facts.get(name):
            raise ProgramError(f"'{name}' is a debug_delta relation: it gets no facts of its "
                               "own", program.relations[name].loc)
    for name, src in program.debug_deltas.items():
        s = next(s for s in strata if src in s.relations)
        if not s.recursive:
            raise ProgramError(f"debug_delta({src}): {src} is not recursive (Soufflé keeps "
                               "the deltas of recursive relations only)",
                               program.relations[name].loc)


def observes_rounds(program: Program, s: Any) -> bool:
    """Whether stratum ``s`` must run round by round on the array path."""
    return (any(src in s.relations for src in program.debug_deltas.values())
            or any(r in program.limits for r in s.relations)
            or any(uses_iteration(r) for r in s.recursive_rules))


def limit_reached(engine: Any, s: Any) -> bool:
    """Whether a ``.limitsize`` relation of stratum ``s`` holds its limit (the round's new
    tuples are then not added and the stratum stops)."""
    limits = engine.program.limits
    return any(len(engine.store[r]) >= limits[r][0] for r in s.relations if r in limits)


def start(engine: Any, s: Any) -> None:
    """Before stratum ``s``: iteration 0, its debug relations reset to their facts."""
    engine.evaluator.expr.iteration = 0
    for name, src in engine.program.debug_deltas.items():
        if src in s.relations:
            engine.store[name] = engine.explicit[name]


def record(engine: Any, s: Any, rows: dict[str, Any], j: int) -> None:
    """Add ``(t, j)`` to each debug relation of stratum ``s`` for its source's new rows."""
    be = engine.be
    for name, src in engine.program.debug_deltas.items():
        if src not in s.relations:
            continue
        d = rows[src]
        d = d.compact() if isinstance(d, RunSet) else d
        if not len(d):
            continue
        cols = (*d.cols, be.xp.full(len(d), j, dtype=INDEX))
        add = RowSet.from_columns(be, cols, len(cols))
        engine.store[name] = engine.store[name].append(engine.store[name].new_rows(add))


__all__ = ["check", "features", "limit_reached", "observes_rounds", "record", "start",
           "uses_iteration"]

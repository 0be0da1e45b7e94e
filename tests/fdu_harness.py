"""Differential harness of fully dynamic updates (paper 004, issue 17).

A case: a generated program (a quarter of them with aggregate relations,
``generators.aggregate_programs``, an eighth a TC/STC closure with a stratum above it,
:func:`module_programs`), 3-10 generated updates, an algorithm, modules on or off, a
queue policy (wait, inject, restart) and an arrival schedule: update ``i`` arrives ``gap[i]``
round boundaries after update ``i - 1`` did (0: together with it, so they are composed; a
gap past the end of the running update: it arrives when the queue is idle).  The updates
go through an :class:`~gpu_engine.host.update_queue.UpdateQueue` that processes in the
calling thread, arrivals being submitted from its boundary hook.  The judge: strictly
sequential application (``Reasoner.update`` one by one, same algorithm) and a fresh
materialisation of the final E: relations, explicit facts and counters must be equal.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from generators import (
    AGG_NAMES,
    Program,
    Update,
    aggregate_programs,
    engine_facts,
    programs,
    render_program,
    updates,
)
from gpu_engine.host.reasoner import Reasoner
from gpu_engine.host.update_queue import INTERLEAVE_ALGORITHMS, POLICIES, reasoner_queue
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from test_update import counters_of, engine_update, explicit_of, non_recursive, relations_of

ALGORITHMS = ("remat", "remat1c", "remat2c", "dred", "counting", "dredc", "bf", "bfc")
NEVER = 10**9  # a gap that no update reaches: the next update arrives when idle


@dataclass
class Case:
    program: Program
    updates: list[Update]
    algorithm: str
    modules: str
    policy: str
    gaps: list[int]  # gaps[i]: boundaries between the arrivals of updates i-1 and i

    def describe(self) -> str:
        ups = "\n".join(f"  U{i} (gap {g}): {u.describe()}"
                        for i, (u, g) in enumerate(zip(self.updates, self.gaps)))
        return (f"algorithm={self.algorithm} modules={self.modules} policy={self.policy}\n"
                f"{render_program(self.program)}\n{ups}")


@dataclass
class Outcome:
    problems: list[str]
    boundaries: int = 0
    stats: list[Any] = field(default_factory=list)

    @property
    def composed(self) -> int:
        return sum(s.composed - 1 - s.injected for s in self.stats)

    @property
    def injected(self) -> int:
        return sum(s.injected for s in self.stats)

    @property
    def aborted(self) -> int:
        return sum(s.aborted for s in self.stats)

    @property
    def interleaved(self) -> int:
        return sum(s.interleaved for s in self.stats)

    @property
    def refused(self) -> list[str]:
        """The reasons arrivals could not join a running update (each once per update)."""
        return [why for s in self.stats for why in s.refused]

    @property
    def modules(self) -> bool:
        """Whether an update ran TC/STC modules (DRed^c-MOD)."""
        return any(s.modules for s in self.stats)


def _reasoner(program: Program, modules: str) -> Reasoner:
    r = Reasoner(render_program(program), device="cpu", counting=True, modules=modules)
    for name, facts in engine_facts(program).items():
        r.add_facts(name, facts)
    r.materialise()
    return r


@st.composite
def module_programs(draw: Any) -> Program:
    """A transitive (or symmetric-transitive) closure ``p`` of ``e`` in the doubly recursive
    form that DRed^c-MOD runs as a TC/STC module (paper 002), and a stratum ``q`` above it
    reading ``p`` with ``f`` (positive or negated): changes of ``e`` arriving while ``q``
    is maintained reach a finished module stratum."""
    from generators import NUMBER, Neg, Relation
    from generators import Atom as A
    from generators import Rule as R
    from generators import Var as V

    e, p = Relation("e", (NUMBER, NUMBER)), Relation("p", (NUMBER, NUMBER))
    f, q = Relation("f", (NUMBER,)), Relation("q", (NUMBER, NUMBER))
    x, y, z = V("x"), V("y"), V("z")
    rules = [R(A("p", (x, z)), (A("e", (x, z)),)),
             R(A("p", (x, z)), (A("p", (x, y)), A("p", (y, z))))]
    if draw(st.booleans()):
        rules.append(R(A("p", (y, x)), (A("p", (x, y)),)))
    guard = A("f", (y,))
    rules.append(R(A("q", (x, y)), (A("p", (x, y)), Neg(guard) if draw(st.booleans())
                                    else guard)))
    node = st.integers(0, 6)
    edges = draw(st.lists(st.tuples(node, node), min_size=2, max_size=10, unique=True))
    marks = draw(st.lists(st.tuples(node), max_size=4, unique=True))
    return Program(relations=(e, f, p, q), rules=tuple(rules),
                   facts={"e": edges, "f": marks})


@st.composite
def cases(draw: Any, max_updates: int = 10, gap_max: int = 8,
          policies: tuple[str, ...] = POLICIES, family: str = "") -> Case:
    """A program, 3-``max_updates`` updates and a schedule (updates drawn against the
    explicit facts as they evolve, so they delete present facts and re-insert deleted ones)."""
    # a quarter with aggregates, an eighth TC/STC-shaped (``family``: "modules" only those,
    # run by DRed^c with modules on)
    kind = 2 if family == "modules" else draw(st.integers(0, 7))
    program = draw(aggregate_programs() if kind < 2 else module_programs() if kind == 2
                   else programs(max_relations=4, max_rules=5, max_facts=12))
    # updates change the relations no aggregate defines
    updatable = replace(program, relations=tuple(r for r in program.relations
                                                 if r.name not in AGG_NAMES))
    policy = draw(st.sampled_from(policies))
    algorithm = "dredc" if family == "modules" else draw(st.sampled_from(
        INTERLEAVE_ALGORITHMS if policy == "interleave" else ALGORITHMS))
    if algorithm == "counting":
        program = non_recursive(program)
    explicit = {rel.name: set() for rel in program.relations}
    for name, rows in program.facts.items():
        explicit[name] |= set(rows)
    ups: list[Update] = []
    for _ in range(draw(st.integers(3, max_updates))):
        u = draw(updates(updatable, explicit, explicit, max_relations=2, max_rows=4))
        ups.append(u)
        for name, rows in u.delete.items():
            explicit[name] -= set(rows)
        for name, rows in u.insert.items():
            explicit[name] |= set(rows)
    gaps = [0] + [draw(st.sampled_from([0, 1, 2, 3, 4, 6, NEVER])) for _ in ups[1:]]
    modules = "auto" if family == "modules" else draw(st.sampled_from(["auto", "off"]))
    return Case(program, ups, algorithm, modules, policy, gaps)


def sequential(case: Case) -> Reasoner | None:
    """Strictly consecutive application; None when the algorithm refuses the program."""
    r = _reasoner(case.program, case.modules)
    for u in case.updates:
        ins, dele = engine_update(u, case.program)
        try:
            r.update(insert=ins, delete=dele, algorithm=case.algorithm)
        except ValueError as e:
            if "recurs" in str(e).lower():
                return None
            raise
    return r


def run_queued(case: Case) -> tuple[Reasoner, Outcome]:
    """Apply the case's updates through a queue with its arrival schedule."""
    r = _reasoner(case.program, case.modules)
    out = Outcome([])
    encoded = []
    for u in case.updates:
        ins, dele = engine_update(u, case.program)
        encoded.append(({n: r._encode(n, d) for n, d in ins.items()},
                        {n: r._encode(n, d) for n, d in dele.items()}))
    q = reasoner_queue(r, policy=case.policy, algorithm=case.algorithm, background=False)
    n = len(encoded)
    state = {"b": 0, "next": 0, "target": 0}

    def arrive() -> None:
        while state["next"] < n and state["b"] >= state["target"]:
            k = state["next"]
            q.submit(*encoded[k], batch_id=k)
            state["next"] = k + 1
            if k + 1 < n:
                g = case.gaps[k + 1]
                state["target"] = NEVER * 2 if g >= NEVER else state["b"] + g

    def on_boundary(_point: Any) -> None:
        state["b"] += 1
        out.boundaries += 1
        arrive()

    q.on_boundary = on_boundary
    arrive()
    while True:
        out.stats += q.drain()
        if state["next"] >= n:
            break
        state["target"] = state["b"]  # the queue is idle: the next update arrives now
        arrive()
    return r, out


def check(case: Case) -> Outcome | None:
    """Run a case; None when the algorithm refuses the program (Counting, recursion)."""
    seq = sequential(case)
    if seq is None:
        return None
    got, out = run_queued(case)
    p = case.program
    fresh = _reasoner(_with_explicit(p, explicit_of(seq, p)), case.modules)
    want_rel, want_e = relations_of(seq, p), explicit_of(seq, p)
    for what, w, g in (("relations", want_rel, relations_of(got, p)),
                       ("explicit", want_e, explicit_of(got, p)),
                       ("fresh materialisation", relations_of(fresh, p), relations_of(got, p))):
        for name in w:
            if w[name] != g[name]:
                out.problems.append(f"{what} {name}: missing {sorted(w[name] - g[name])[:8]}, "
                                    f"extra {sorted(g[name] - w[name])[:8]}")
    if not out.problems and seq.engine.counting and seq.engine.counting == got.engine.counting:
        modular = got.engine.modular_relations() | seq.engine.modular_relations()
        for rel in p.relations:
            if rel.eqrel:
                continue
            a, b = counters_of(seq, rel), counters_of(got, rel)
            if seq.engine.counting < 2 or rel.name in modular:
                a = {k: (v[0], 0) for k, v in a.items()}
                b = {k: (v[0], 0) for k, v in b.items()}
            if a != b:
                bad = [(k, a.get(k), b.get(k)) for k in set(a) | set(b) if a.get(k) != b.get(k)]
                out.problems.append(f"counters {rel.name}: (row, sequential, queued) {bad[:8]}")
    return out


def _with_explicit(program: Program, explicit: dict[str, set]) -> Program:
    arity = {rel.name: rel.arity for rel in program.relations}
    return replace(program, facts={n: sorted(rows, key=repr) for n, rows in explicit.items()
                                   if rows and arity[n]},
                   inline_facts={n: [()] for n, rows in explicit.items()
                                 if rows and not arity[n]})


# --- the hand-written cases shared by test_fdu.py and test_fdu_interleave.py ---------------

PROP = """.decl a(x:number) .decl b(x:number) .decl c(x:number) .decl d(x:number)
.output a .output b .output c .output d
"""
CYCLE = "b(x) :- a(x). c(x) :- b(x). a(x) :- c(x).\n"  # the paper's A→B→C→A
EXAMPLES = int(os.environ.get("FDU_EXAMPLES", "25"))  # generated schedules per test
SCHEDULES = settings(max_examples=EXAMPLES, deadline=None,
                     suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                            HealthCheck.data_too_large])


def state(r: Reasoner) -> dict[str, set[int]]:
    """The facts of the unary relations a-d of :data:`PROP` programs."""
    return {n: {row[0] for row in r.relation(n).to_pylist() for row in [list(row.values())]}
            for n in "abcd"}


def run_schedule(program: str, init: dict[str, list[int]], ups: list[tuple[dict, dict]],
                 policy: str, at: int, algorithm: str | None = None
                 ) -> tuple[Reasoner, list[Any]]:
    """A :data:`PROP` program: materialise ``init``, submit ``ups[0]``; ``ups[1:]`` arrive at
    the ``at``-th round boundary (0: together with it; past the end: when idle)."""
    r = Reasoner(PROP + program, device="cpu", counting=True)
    for n, xs in init.items():
        r.add_facts(n, np.array([[x] for x in xs], dtype=np.int64))
    r.materialise()
    q = reasoner_queue(r, policy=policy, algorithm=algorithm, background=False)
    enc = [({n: r._encode(n, np.array([[x] for x in xs])) for n, xs in i.items()},
            {n: r._encode(n, np.array([[x] for x in xs])) for n, xs in d.items()})
           for i, d in ups]
    seen = {"b": 0, "sent": at == 0}

    def hook(_p: Any) -> None:
        seen["b"] += 1
        if seen["b"] == at and not seen["sent"]:
            seen["sent"] = True
            for e in enc[1:]:
                q.submit(*e)

    q.on_boundary = hook
    q.submit(*enc[0])
    if at == 0:
        for e in enc[1:]:
            q.submit(*e)
    stats = q.drain()
    if not seen["sent"]:
        seen["sent"] = True
        for e in enc[1:]:
            q.submit(*e)
    stats += q.drain()
    return r, stats


def chain_case() -> tuple[Program, list[Update]]:
    """A path program over a chain of six edges and three overlapping updates."""
    from generators import NUMBER, Relation
    from generators import Atom as A
    from generators import Rule as R
    from generators import Var as V

    e, p = Relation("e", (NUMBER, NUMBER)), Relation("p", (NUMBER, NUMBER))
    X, Y, Z = V("X"), V("Y"), V("Z")
    prog = Program(relations=(e, p), rules=(
        R(A("p", (X, Y)), (A("e", (X, Y)),)),
        R(A("p", (X, Z)), (A("p", (X, Y)), A("e", (Y, Z))))),
        facts={"e": [(i, i + 1) for i in range(6)]})
    ups = [Update({"e": [(6, 7), (7, 8)]}, {"e": [(2, 3)]}),
           Update({"e": [(2, 3), (8, 9)]}, {}),
           Update({}, {"e": [(6, 7), (0, 1)]})]
    return prog, ups


def exhaustive_small(algorithms: tuple[str, ...], policies: tuple[str, ...]) -> None:
    """:func:`chain_case` with the second and third update arriving at every boundary."""
    prog, ups = chain_case()
    for alg in algorithms:
        for policy in policies:
            for g1 in [0, 1, 2, 3, 4, 5, 6, 8, 10, NEVER]:
                for g2 in [0, 1, 3, NEVER]:
                    case = Case(prog, ups, alg, "off", policy, [0, g1, g2])
                    out = check(case)
                    assert out is not None and not out.problems, case.describe() + "\n" + \
                        "\n".join(out.problems)


__all__ = ["ALGORITHMS", "CYCLE", "Case", "EXAMPLES", "Outcome", "PROP", "SCHEDULES", "cases",
           "chain_case", "check", "exhaustive_small", "run_queued", "run_schedule",
           "sequential", "state"]

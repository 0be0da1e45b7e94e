"""The interleaved mode of fully dynamic updates (paper 004 Algorithm 1 with the remedies
of its §3; ``gpu_engine/fdu_interleave.py``): deletions arriving mid-update join it at the
next boundary.  The paper's Examples 1-4 with the second update arriving at every round
boundary, against their final states and the counters of sequential application; a
differential run of the harness with the ``interleave`` policy (``make fuzz-fdu`` runs
1,000+ schedules)."""

from __future__ import annotations

import numpy as np
import pytest
from fdu_harness import CYCLE, SCHEDULES, Case, cases, check, exhaustive_small, run_schedule, state
from gpu_engine.host.reasoner import Reasoner
from gpu_engine.host.update_queue import reasoner_queue
from hypothesis import given, note

ALGS = ["dredc", "dred", "bf", "bfc"]
ATS = [1, 2, 3, 4, 5, 6, 8]


def _counters(r: Reasoner, name: str) -> list[tuple]:
    t = r.counters(name).to_pylist()
    return sorted(tuple(row.values()) for row in t)


def _sequential(program: str, init: dict, ups: list, algorithm: str) -> Reasoner:
    r, _ = run_schedule(program, init, ups, "wait", 10**6, algorithm)
    return r


def _same_counters(a: Reasoner, b: Reasoner, algorithm: str) -> None:
    if algorithm in ("dred", "bf"):
        return
    for n in "abcd":
        x, y = _counters(a, n), _counters(b, n)
        if algorithm == "bfc":  # c_r is not kept
            x, y = [r[:-1] for r in x], [r[:-1] for r in y]
        assert x == y, n


@pytest.mark.parametrize("at", ATS)
@pytest.mark.parametrize("algorithm", ALGS)
def test_example_1_interleaved(at: int, algorithm: str) -> None:
    """A→B→C→A; U1 adds A; U2 deletes A at boundary ``at``: ∅ (no invalid addition, no
    endless delete/re-add), and the deletion joined the running update."""
    ups = [({"a": [1]}, {}), ({}, {"a": [1]})]
    r, stats = run_schedule(CYCLE, {}, ups, "interleave", at, algorithm)
    assert state(r) == {"a": set(), "b": set(), "c": set(), "d": set()}
    assert sum(s.composed for s in stats) == 2
    _same_counters(r, _sequential(CYCLE, {}, ups, algorithm), algorithm)


def test_example_1_deletion_does_not_wait() -> None:
    """U2 arrives after B was derived: it is interleaved (one update, no restart)."""
    r, stats = run_schedule(CYCLE, {}, [({"a": [1]}, {}), ({}, {"a": [1]})], "interleave", 3,
                            "dredc")
    assert len(stats) == 1 and stats[0].interleaved == 1 and stats[0].aborted == 0
    assert stats[0].composed == 2


@pytest.mark.parametrize("at", [*ATS, 99])
@pytest.mark.parametrize("algorithm", ALGS)
def test_example_2_interleaved(at: int, algorithm: str) -> None:
    """A→B→C→A, D→A; E = {A}; U1 = ({D}, ∅), then U2 = (∅, {A}): {A, B, C, D}."""
    prog = CYCLE + "a(x) :- d(x).\n"
    ups = [({"d": [1]}, {}), ({}, {"a": [1]})]
    r, _ = run_schedule(prog, {"a": [1]}, ups, "interleave", at, algorithm)
    assert state(r) == {"a": {1}, "b": {1}, "c": {1}, "d": {1}}
    _same_counters(r, _sequential(prog, {"a": [1]}, ups, algorithm), algorithm)


@pytest.mark.parametrize("at", ATS)
@pytest.mark.parametrize("algorithm", ["counting", *ALGS])
def test_example_3_interleaved(at: int, algorithm: str) -> None:
    """A→B, A→C, D→C; U1 = ({A, D}, ∅), U2 = (∅, {A}) mid-way: {C, D}, count(C) = 1."""
    prog = "b(x) :- a(x). c(x) :- a(x). c(x) :- d(x).\n"
    r, _ = run_schedule(prog, {}, [({"a": [1], "d": [1]}, {}), ({}, {"a": [1]})], "interleave",
                        at, algorithm)
    assert state(r) == {"a": set(), "b": set(), "c": {1}, "d": set() | {1}}
    if algorithm not in ("dred", "bf"):
        assert r.counters("c").column("c_nr").to_pylist() == [1]


@pytest.mark.parametrize("at", ATS)
@pytest.mark.parametrize("algorithm", ["counting", *ALGS])
def test_example_4_interleaved(at: int, algorithm: str) -> None:
    """A→B, A→C; M = {A, B, C}; U1 deletes A, U2 re-adds it mid-way: {A, B, C} with
    count(B) = count(C) = 1 (no duplicate derivation counted)."""
    prog = "b(x) :- a(x). c(x) :- a(x).\n"
    r, _ = run_schedule(prog, {"a": [1]}, [({}, {"a": [1]}), ({"a": [1]}, {})], "interleave",
                        at, algorithm)
    assert state(r) == {"a": {1}, "b": {1}, "c": {1}, "d": set()}
    if algorithm not in ("dred", "bf"):
        assert r.counters("b").column("c_nr").to_pylist() == [1]
        assert r.counters("c").column("c_nr").to_pylist() == [1]


def test_interleave_refuses_rematerialisation() -> None:
    r = Reasoner(".decl a(x:number)\n.decl b(x:number)\nb(x) :- a(x).", device="cpu")
    r.materialise()
    with pytest.raises(ValueError, match="round boundaries"):
        reasoner_queue(r, policy="interleave", algorithm="remat", background=False)


def test_chain_deletions_interleaved() -> None:
    """A long chain insertion; deletions of its edges arrive at its insertion boundaries
    and are interleaved: relations and counters equal a fresh materialisation."""
    prog = """.decl e(x:number, y:number) .decl p(x:number, y:number) .output p
    p(x, y) :- e(x, y). p(x, z) :- p(x, y), e(y, z)."""
    r = Reasoner(prog, device="cpu", counting=True, modules="off")
    r.add_facts("e", np.array([[0, 1]]))
    r.materialise()
    q = reasoner_queue(r, policy="interleave", background=False)
    arrivals = [({}, {"e": r._encode("e", np.array([[4, 5]]))}),
                ({"e": r._encode("e", np.array([[20, 21]]))}, {"e": r._encode(
                    "e", np.array([[1, 2]]))}),
                ({"e": r._encode("e", np.array([[1, 2], [4, 5]]))}, {})]

    def hook(p):
        if p.phase == "insert" and arrivals:
            q.submit(*arrivals.pop(0))

    q.on_boundary = hook
    q.submit({"e": r._encode("e", np.array([[i, i + 1] for i in range(1, 12)]))})
    stats = q.drain()
    assert stats[0].interleaved >= 2
    ref = Reasoner(prog, device="cpu", counting=True, modules="off")
    ref.add_facts("e", np.array([[i, i + 1] for i in [*range(0, 12), 20]]))
    ref.materialise()
    assert r.relation("p").equals(ref.relation("p"))
    assert r.counters("p").equals(ref.counters("p"))


@SCHEDULES
@given(case=cases(max_updates=5, policies=("interleave",)))
def test_differential_interleaved(case: Case) -> None:
    """Random programs, updates and arrival schedules in the interleaved mode: equal to
    sequential application and to a fresh materialisation (relations, E, counters)."""
    note(case.describe())
    out = check(case)
    if out is not None:
        assert not out.problems, "\n".join(out.problems)


def test_exhaustive_small_interleaved() -> None:
    """One fixed case, the second and third update arriving at every boundary."""
    exhaustive_small(("dredc", "dred", "bfc", "bf"), ("interleave",))


REFUSALS = {
    "module": (""".decl e(x:number, y:number) .decl f(x:number) .decl p(x:number, y:number)
.decl r(x:number, y:number) .output r
p(x, y) :- e(x, y). p(x, z) :- p(x, y), p(y, z). r(x, y) :- p(x, y), f(y).""",
               "TC/STC module"),
    "aggregate": (""".decl e(x:number, y:number) .decl f(x:number) .decl c(x:number, n:number)
.decl r(x:number, n:number) .output r
c(x, n) :- e(x, _), n = count : { e(x, _) }. r(x, n) :- c(x, n), f(x).""", "aggregate"),
}


@pytest.mark.parametrize("fallback", ["restart", "wait"])
@pytest.mark.parametrize("kind", sorted(REFUSALS))
def test_refused_into_finished_module_or_aggregate(kind: str, fallback: str) -> None:
    """A deletion of e arrives at every boundary of an update of f, in turn; where it
    would reach a finished TC module or aggregate stratum the step is refused, the reason
    is in ``UpdateStats.refused`` and the update restarts (or the deletion waits); the
    result equals sequential application."""
    prog, reason = REFUSALS[kind]
    edges = np.array([[i, i + 1] for i in range(6)] + [[0, 3], [2, 5]])
    seen_reasons: set[str] = set()
    for at in range(1, 8):
        r = Reasoner(prog, device="cpu", counting=True, modules="auto")
        r.add_facts("e", edges)
        r.add_facts("f", np.array([[1], [3]]))
        r.materialise()
        q = reasoner_queue(r, policy="interleave", algorithm="dredc", background=False,
                           interleave_fallback=fallback)
        late = [({}, {"e": r._encode("e", np.array([[1, 2], [0, 3]]))})]
        count = {"b": 0}

        def hook(_p, late=late, count=count, q=q, at=at):
            count["b"] += 1
            if count["b"] == at and late:
                q.submit(*late.pop())

        q.on_boundary = hook
        q.submit({"f": r._encode("f", np.array([[2], [5], [0]]))})
        stats = q.drain()
        if late:
            q.submit(*late.pop())
            stats += q.drain()
        for s in stats:
            seen_reasons |= set(s.refused)
        ref = Reasoner(prog, device="cpu", counting=True, modules="auto")
        ref.add_facts("e", np.array([x for x in edges.tolist() if x not in ([1, 2], [0, 3])]))
        ref.add_facts("f", np.array([[1], [3], [2], [5], [0]]))
        ref.materialise()
        assert r.relation("r").equals(ref.relation("r")), at
    assert any(reason in why for why in seen_reasons), seen_reasons

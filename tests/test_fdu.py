"""Fully dynamic updates (paper 004, issue 17): composition, the update queue, injection
and abort-and-restart, the paper's Examples 1-4, and a small differential harness run
(``make fuzz-fdu`` runs 1,000+ schedules)."""

from __future__ import annotations

import numpy as np
import pytest
from fdu_harness import CYCLE, SCHEDULES, Case, cases, check, exhaustive_small, run_schedule, state
from gpu_engine.host.reasoner import Reasoner
from gpu_engine.host.update_queue import reasoner_queue
from hypothesis import given, note

from gpu_engine.fdu import compose


def _enc(rows: list[tuple[int, ...]], arity: int = 2):
    a = np.array(rows, dtype=np.int64).reshape(len(rows), arity)
    return tuple(a[:, i] for i in range(arity)), len(rows)


def _rows(enc, name):
    if name not in enc:
        return set()
    cols, n = enc[name]
    return set(zip(*[c.tolist() for c in cols])) if cols else {()} if n else set()


def test_compose_last_writer_wins() -> None:
    ar = {"e": 2}
    u1 = ({"e": _enc([(1, 2), (2, 3)])}, {})
    u2 = ({}, {"e": _enc([(1, 2), (5, 5)])})
    u3 = ({"e": _enc([(5, 5)])}, {"e": _enc([(2, 3), (5, 5)])})  # insert beats delete
    ins, dele = compose([u1, u2, u3], ar)
    assert _rows(ins, "e") == {(5, 5)}
    assert _rows(dele, "e") == {(1, 2), (2, 3)}
    ins, dele = compose([u2, u1], ar)  # the newer insertion is never cancelled
    assert _rows(ins, "e") == {(1, 2), (2, 3)} and _rows(dele, "e") == {(5, 5)}
    ins, dele = compose([({"z": ((), 1)}, {}), ({}, {"z": ((), 1)})], {"z": 0})
    assert "z" not in ins and "z" in dele


@pytest.mark.parametrize("policy", ["wait", "inject", "restart"])
@pytest.mark.parametrize("at", [0, 1, 2, 3, 5, 99])
@pytest.mark.parametrize("algorithm", ["dredc", "dred", "bf", "bfc", "remat"])
def test_example_1_invalid_addition(policy: str, at: int, algorithm: str) -> None:
    """A→B→C→A; U1 adds A, U2 deletes A before C is processed: the result is empty."""
    r, stats = run_schedule(CYCLE, {}, [({"a": [1]}, {}), ({}, {"a": [1]})], policy, at, algorithm)
    assert state(r) == {"a": set(), "b": set(), "c": set(), "d": set()}
    assert sum(s.composed for s in stats) == 2


@pytest.mark.parametrize("policy", ["wait", "inject", "restart"])
def test_example_1_composed_runs_no_round(policy: str) -> None:
    """U1 and U2 both queued before U1 starts: they cancel, no round runs."""
    r, stats = run_schedule(CYCLE, {}, [({"a": [1]}, {}), ({}, {"a": [1]})], policy, 0)
    assert len(stats) == 1 and stats[0].composed == 2
    assert stats[0].rounds == 0 and stats[0].derivations == 0


@pytest.mark.parametrize("algorithm", ["dredc", "dred", "bf", "bfc"])
def test_example_2_invalid_deletion(algorithm: str) -> None:
    """A→B→C→A, D→A; E = {A}; U = ({D}, {A}): everything holds (A not deleted via C→A)."""
    r, _ = run_schedule(CYCLE + "a(x) :- d(x).\n", {"a": [1]}, [({"d": [1]}, {"a": [1]})],
                "inject", 99, algorithm)
    assert state(r) == {"a": {1}, "b": {1}, "c": {1}, "d": {1}}


@pytest.mark.parametrize("policy", ["wait", "inject", "restart"])
@pytest.mark.parametrize("at", [0, 1, 2, 3, 99])
@pytest.mark.parametrize("algorithm", ["counting", "dredc", "dred"])
def test_example_3_deletion_without_derivation(policy: str, at: int, algorithm: str) -> None:
    """A→B, A→C, D→C; U1 = ({A, D}, ∅), U2 = (∅, {A}) mid-way: {C, D}, count(C) = 1."""
    prog = "b(x) :- a(x). c(x) :- a(x). c(x) :- d(x).\n"
    r, _ = run_schedule(prog, {}, [({"a": [1], "d": [1]}, {}), ({}, {"a": [1]})], policy, at,
                algorithm)
    assert state(r) == {"a": set(), "b": set(), "c": {1}, "d": {1}}
    if algorithm != "dred":
        assert r.counters("c").column("c_nr").to_pylist() == [1]


@pytest.mark.parametrize("policy", ["wait", "inject", "restart"])
@pytest.mark.parametrize("at", [0, 1, 2, 3, 99])
@pytest.mark.parametrize("algorithm", ["counting", "dredc"])
def test_example_4_duplicate_derivation(policy: str, at: int, algorithm: str) -> None:
    """A→B, A→C; M = {A, B, C}; U1 deletes A, U2 re-adds it mid-way: {A, B, C} with
    count(B) = count(C) = 1."""
    prog = "b(x) :- a(x). c(x) :- a(x).\n"
    r, _ = run_schedule(prog, {"a": [1]}, [({}, {"a": [1]}), ({"a": [1]}, {})], policy, at, algorithm)
    assert state(r) == {"a": {1}, "b": {1}, "c": {1}, "d": set()}
    assert r.counters("b").column("c_nr").to_pylist() == [1]
    assert r.counters("c").column("c_nr").to_pylist() == [1]


def test_injection_joins_the_running_insertion() -> None:
    """A chain insertion; further insertions arrive at its boundaries and are injected."""
    prog = """.decl e(x:number, y:number) .decl p(x:number, y:number) .output p
    p(x, y) :- e(x, y). p(x, z) :- p(x, y), e(y, z)."""
    r = Reasoner(prog, device="cpu", counting=True, modules="off")
    r.add_facts("e", np.array([[0, 1]]))
    r.materialise()
    q = reasoner_queue(r, policy="inject", background=False)
    extra = [r._encode("e", np.array([[i, i + 1]])) for i in range(10, 14)]

    def hook(p):
        if p.phase == "insert" and extra:
            q.submit({"e": extra.pop(0)})

    q.on_boundary = hook
    q.submit({"e": r._encode("e", np.array([[i, i + 1] for i in range(1, 8)]))})
    stats = q.drain()
    assert stats[0].injected >= 1
    ref = Reasoner(prog, device="cpu", counting=True, modules="off")
    ref.add_facts("e", np.array([[i, i + 1] for i in [*range(0, 8), *range(10, 14)]]))
    ref.materialise()
    assert r.relation("p").equals(ref.relation("p"))
    assert r.counters("p").equals(ref.counters("p"))


def test_submit_in_the_background() -> None:
    prog = """.decl e(x:number, y:number) .decl p(x:number, y:number) .output p
    p(x, y) :- e(x, y). p(x, z) :- p(x, y), e(y, z)."""
    r = Reasoner(prog, device="cpu")
    r.add_facts("e", np.array([[0, 1]]))
    hs = [r.submit(insert={"e": np.array([[i, i + 1]])}) for i in range(1, 30)]
    hs += [r.submit(delete={"e": np.array([[i, i + 1]])}) for i in range(10, 30)]
    hs[-1].wait(60)
    for h in hs:
        h.wait(60)
        assert h.done() and h.delay is not None
    assert r.relation("p").num_rows == 55  # the chain 0..10
    assert hs[-1].stats.composed >= 1


@SCHEDULES
@given(case=cases(max_updates=5))
def test_differential_schedules(case: Case) -> None:
    """Random programs, updates and arrival schedules: equal to sequential application."""
    note(case.describe())
    out = check(case)
    if out is not None:
        assert not out.problems, "\n".join(out.problems)


def test_differential_exhaustive_small() -> None:
    """One fixed case, the second and third update arriving at every boundary."""
    exhaustive_small(("dredc", "dred", "bfc"), ("inject", "restart"))


def test_admission_window_and_frozen_gc() -> None:
    """``admit_seconds=0``: arrivals never join the running update (they run next, the
    result is the same); ``freeze_gc``: the collector's permanent generation holds the
    loaded engine until the queue is closed."""
    import gc

    prog = """.decl e(x:number, y:number) .decl p(x:number, y:number) .output p
    p(x, y) :- e(x, y). p(x, z) :- p(x, y), e(y, z)."""
    r = Reasoner(prog, device="cpu", counting=True, modules="off")
    r.add_facts("e", np.array([[0, 1]]))
    r.materialise()
    q = reasoner_queue(r, policy="inject", background=False, admit_seconds=0.0,
                       freeze_gc=True)
    assert gc.get_freeze_count() > 0
    extra = [r._encode("e", np.array([[i, i + 1]])) for i in range(10, 14)]

    def hook(p):
        if p.phase == "insert" and extra:
            q.submit({"e": extra.pop(0)})

    q.on_boundary = hook
    q.submit({"e": r._encode("e", np.array([[i, i + 1] for i in range(1, 8)]))})
    stats = q.drain()
    assert stats[0].injected == 0 and len(stats) >= 2
    q.close()
    assert gc.get_freeze_count() == 0
    ref = Reasoner(prog, device="cpu", counting=True, modules="off")
    ref.add_facts("e", np.array([[i, i + 1] for i in [*range(0, 8), *range(10, 14)]]))
    ref.materialise()
    assert r.relation("p").equals(ref.relation("p"))

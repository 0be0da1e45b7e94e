"""Maintenance's shortcuts for small changes (gpu_engine.touch, gpu_engine.scan_rules and
the rule-less strata of DRed^c) against the general passes.

Generated programs get the same generated update sequence twice, with the shortcuts and
without them (``touch.SHORTCUTS = False``: every rule goes through the general
evaluator, every stratum through the counter passes): relations, explicit facts, the
derivation counters and the update statistics must be equal after every update, and the
result is judged by the reference evaluator (relations and counters recomputed).
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from generators import describe, engine_facts, programs, render_program
from hypothesis import HealthCheck, given, note, reject, settings
from hypothesis import strategies as st
from reference import LimitExceeded, evaluate
from test_fuzz import MAX_TUPLES
from test_update import (
    check_state,
    draw_update,
    engine_update,
    explicit_facts,
    has_recursive_rule,
    reference,
    snapshot,
    updated_facts,
    with_facts,
)

import gpu_engine.touch as touch

STAT_FIELDS = ("deleted", "inserted", "overdeleted", "rederived", "added", "derivations",
               "backward", "rounds")


def _reasoner(program, device: str):
    from gpu_engine import Reasoner

    r = Reasoner(render_program(program), device=device, counting=True, modules="off")
    for name, data in engine_facts(program).items():
        r.add_facts(name, data)
    r.materialise()
    return r


def _stats(stats) -> dict[str, int]:
    return {f: getattr(stats, f) for f in STAT_FIELDS}


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=programs(), data=st.data())
def test_shortcuts_equal_general_passes(program, data, monkeypatch, device: str) -> None:
    """Same facts, counters and statistics with and without the shortcuts."""
    try:
        evaluate(program, max_tuples=MAX_TUPLES)
    except LimitExceeded:
        reject()
    note(describe(program))
    recursive = has_recursive_rule(program)
    algorithms = ["dredc", "dred", "bfc"] + ([] if recursive else ["counting"])
    fast, plain = _reasoner(program, device), _reasoner(program, device)
    explicit = explicit_facts(program)
    expected = reference(program)
    with monkeypatch.context() as m:
        m.setitem(os.environ, "GPU_ENGINE_HOST_UPDATES", "0")
        for step in range(data.draw(st.integers(1, 3), label="updates")):
            algorithm = data.draw(st.sampled_from(algorithms), label="algorithm")
            update = draw_update(data, program, explicit, expected)
            note(f"update {step + 1} ({algorithm}): {update.describe()}")
            insert, delete = engine_update(update, program)
            m.setattr(touch, "SHORTCUTS", True)
            got = fast.update(insert=insert, delete=delete, algorithm=algorithm)
            m.setattr(touch, "SHORTCUTS", False)
            want = plain.update(insert=insert, delete=delete, algorithm=algorithm)
            assert _stats(got) == _stats(want)
            assert snapshot(fast, program) == snapshot(plain, program)
            explicit = updated_facts(explicit, update)
            expected = reference(with_facts(program, explicit))
            problems = check_state(fast, program, explicit, expected, algorithm)
            assert not problems, "\n".join(problems)


PROGRAM = """
.decl A(x: number, y: number, z: number)
.decl S(x: symbol, p: symbol, y: symbol)
.decl B(x: number, y: number)
.decl C(x: number, y: number)
.decl D(x: symbol)
.decl E(x: symbol, y: symbol)
.decl F(x: number)
B(x, x) :- A(x, x, 3).
C(1, y) :- A(y, 2, _).
C(x, y) :- A(x, y, z), z > 1.
D(x) :- S(x, "type", "Person").
E(y, x) :- S(x, "knows", y).
E(x, x) :- S(x, p, x).
F(7) :- A(_, _, _).
F(x) :- B(x, _), !C(x, x).
"""


@pytest.mark.parametrize("algorithm", ["dredc", "counting", "dred", "bfc"])
@pytest.mark.parametrize("shortcuts", [True, False])
def test_one_atom_rules(shortcuts: bool, algorithm: str, monkeypatch, device: str) -> None:
    """Constants, repeated variables, wildcards and head constants in one-atom rules
    (scan_rules), beside rules the general evaluator keeps (a comparison, a negation)."""
    from gpu_engine import Reasoner

    monkeypatch.setattr(touch, "SHORTCUTS", shortcuts)
    monkeypatch.setenv("GPU_ENGINE_HOST_UPDATES", "0")
    r = Reasoner(PROGRAM, device=device, counting=True)
    a = [(1, 1, 3), (2, 2, 3), (4, 2, 5), (5, 2, 1), (3, 3, 3), (6, 6, 0)]
    s = [("ann", "type", "Person"), ("bob", "type", "Person"), ("ann", "knows", "bob"),
         ("cy", "self", "cy"), ("bob", "knows", "cy")]
    r.add_facts("A", a)
    r.add_facts("S", s)
    r.materialise()
    stats = r.update(delete={"A": [(1, 1, 3), (4, 2, 5)], "S": [("ann", "type", "Person"),
                                                            ("cy", "self", "cy")]},
                     insert={"A": [(8, 8, 3), (9, 2, 2)], "S": [("dan", "dan", "dan")]},
                     algorithm=algorithm)
    assert stats.algorithm == algorithm

    def rows(x, name: str) -> set[tuple]:
        return {tuple(d.values()) for d in x.relation(name).to_pylist()}

    def counters(x, name: str) -> list[tuple]:
        return sorted(tuple(d.values()) for d in x.counters(name).to_pylist())

    assert rows(r, "B") == {(2, 2), (3, 3), (8, 8)}
    assert rows(r, "C") == {(1, 2), (1, 5), (1, 9), (2, 2), (3, 3), (8, 8), (9, 2)}
    assert rows(r, "D") == {("bob",)}
    assert rows(r, "E") == {("bob", "ann"), ("cy", "bob"), ("dan", "dan")}
    assert rows(r, "F") == {(7,)}  # every B(x, _) has C(x, x)
    fresh = Reasoner(PROGRAM, device=device, counting=True)  # the judge: from scratch
    fresh.add_facts("A", [(2, 2, 3), (5, 2, 1), (3, 3, 3), (6, 6, 0), (8, 8, 3), (9, 2, 2)])
    fresh.add_facts("S", [("bob", "type", "Person"), ("ann", "knows", "bob"),
                          ("bob", "knows", "cy"), ("dan", "dan", "dan")])
    fresh.materialise()
    for name in "ABCDEFS":
        assert rows(r, name) == rows(fresh, name)
        if algorithm in ("dredc", "counting"):  # (the others leave no counters)
            assert counters(r, name) == counters(fresh, name)


@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_scan_equals_general_evaluator(data) -> None:
    """A one-atom rule over a delta run: scan_rules gives the general evaluator's head
    rows (as multisets), and rows it marks as sorted and distinct are so."""
    import numpy as np
    from gpu_engine.kernels.backend import get_backend

    from gpu_engine.ir import Atom, Const, Rule, Var
    from gpu_engine.rowset import RowSet
    from gpu_engine.rule_eval import RuleEvaluator
    from gpu_engine.runs import RunSet
    from gpu_engine.scan_rules import scan, scan_plan

    be = get_backend("cpu")
    arity = data.draw(st.integers(1, 3), label="arity")
    vals = st.integers(0, 3)
    rows = data.draw(st.lists(st.tuples(*[vals] * arity), min_size=1, max_size=30))
    cols = tuple(np.asarray([r[c] for r in rows], dtype=np.int64) for c in range(arity))
    run = RowSet.from_columns(be, cols, arity)
    args = tuple(data.draw(st.one_of(st.builds(lambda v: Const(v, "number"), vals),
                                     st.sampled_from([Var("x"), Var("y"), Var("_a"),
                                                      Var("_b")])), label=f"arg {q}")
                 for q in range(arity))
    names = sorted({t.name for t in args if isinstance(t, Var) and not t.anonymous})
    head_terms = data.draw(st.lists(st.one_of(st.sampled_from([Var(v) for v in names])
                                              if names else st.nothing(),
                                              st.builds(lambda v: Const(v, "number"), vals)),
                                    min_size=1, max_size=3), label="head")
    rule = Rule(Atom("H", tuple(head_terms)), (Atom("A", args),))

    class Symbols:
        word_size = 32

        def encode(self, s: str) -> int:
            raise AssertionError(s)

    symbols = Symbols()
    plan = scan_plan(rule, symbols)
    assert plan is not None
    src = RunSet.of(run)
    got = scan(plan, src)
    want = RuleEvaluator(be, symbols).evaluate(rule, [src], [], delta=src)

    def bag(outs) -> list[tuple]:
        return sorted(tuple(int(c[i]) for c in o.cols) for o in outs for i in range(o.n))

    assert bag(got) == bag(want)
    for o in got:
        if o.rows is not None:
            listed = [tuple(int(c[i]) for c in o.cols) for i in range(o.n)]
            assert listed == sorted(set(listed))
            assert [tuple(int(c[i]) for c in o.rows.cols) for i in range(o.n)] == listed


def _chain_with_counted_copies(monkeypatch) -> tuple[Any, list[str]]:
    """A TC over the chain 0..20, materialised with counters, small updates on a host
    twin (``always``, on the CPU), and the list of the whole-state copies
    (``twin.state_to``: the backend each went to) made from then on."""
    from gpu_engine import Reasoner, twin

    copies: list[str] = []
    original = twin.state_to

    def counted(st, be):
        copies.append(be.name)
        return original(st, be)

    monkeypatch.setattr(twin, "state_to", counted)
    monkeypatch.setenv("GPU_ENGINE_HOST_UPDATES", "always")
    r = Reasoner(".decl e(x:number, y:number)\n.decl p(x:number, y:number)\n"
                 "p(x, y) :- e(x, y).\np(x, z) :- p(x, y), e(y, z).\n", device="cpu",
                 counting=True)
    r.add_facts("e", [(i, i + 1) for i in range(20)])
    r.materialise()
    return r, copies


def test_host_twin_updates_leave_the_device_copy_alone(monkeypatch, tmp_path) -> None:
    """Consecutive small updates on the host twin copy the state to the host once and
    never back to the device until the device is needed (a materialisation): before, the
    update's first line read ``engine.store`` and so copied every counter array back; saving
    to a store read ``engine.state`` likewise."""
    from gpu_engine.host.store import open_store, save_store

    r, copies = _chain_with_counted_copies(monkeypatch)
    for k in range(3):
        r.update(delete={"e": [(k, k + 1)]}, algorithm="dredc")
        r.update(insert={"e": [(k, k + 1)]}, algorithm="dredc")
        assert r.relation("p").num_rows == 210
    assert len(copies) == 1  # to the host, once
    save_store(r, tmp_path / "store")  # written from the host's state
    assert len(copies) == 1
    again = open_store(tmp_path / "store", device="cpu")
    assert again.relation("p").num_rows == 210 and again.engine.counter_arrays("p")[0].sum() > 0
    r.update(delete={"e": [(5, 6)]}, algorithm="remat")  # the device's own path
    assert len(copies) == 2 and r.relation("p").num_rows == 15 + 105


def test_a_no_op_deletion_copies_no_state_to_the_twin(monkeypatch) -> None:
    """A deletion of facts that are not explicit, while the host twin is not made yet or
    is stale (after an update on the device), stays on the engine: no copy of the whole
    state for an update that changes nothing; a real one then goes to the twin."""
    r, copies = _chain_with_counted_copies(monkeypatch)
    st = r.update(delete={"e": [(0, 2), (7, 7)]})  # none of them explicit
    assert st.deleted == 0 and "(host twin)" not in st.device and not copies
    assert r.engine._twin is None and r.relation("p").num_rows == 210
    st = r.update(delete={"e": [(3, 4)]})  # a real one: to the twin, one copy
    assert st.device.endswith("(host twin)") and copies == ["cpu"]
    r.update(delete={"e": [(5, 6)]}, algorithm="remat")  # the device's own path: stale twin
    assert copies == ["cpu", "cpu"]
    st = r.update(delete={"e": [(3, 4)], "p": [(0, 5)]})  # (deleted already; p derived)
    assert st.deleted == 0 and "(host twin)" not in st.device and len(copies) == 2
    assert r.relation("p").num_rows == 6 + 1 + 105  # chains 0-3, 4-5, 6-20


COPYING = """
.decl T(x: symbol, p: symbol, y: symbol)
.decl R(x: symbol, y: symbol)
.decl K(x: symbol)
.decl Q(x: symbol)
.decl W(x: symbol)
.decl N(x: symbol)
R(x, y) :- T(x, "r", y).
K(x) :- T(x, "type", "K").
Q(y) :- R(_, y).
W(x) :- R(x, x).
N(x) :- K(x), !Q(x).
.decl Z()
Z() :- T("a1", "r", "a1").
"""


@pytest.mark.parametrize("algorithm", ["dredc", "counting"])
@pytest.mark.parametrize("shortcuts", [True, False])
def test_copying_strata(shortcuts: bool, algorithm: str, monkeypatch, device: str) -> None:
    """DRed^c's and Counting's strata that copy facts (``R``, ``K``, ``W``: one rule whose head determines
    the fact it reads) skip their counters: deleting, re-adding and deleting again, with mixed
    updates (deletions from and additions to ``T``: the general passes) and explicit facts
    of ``K`` (the general passes too), give the relations and counters of a materialisation from
    scratch after every update, and the shortcut is taken where it applies."""
    from gpu_engine import Reasoner
    from gpu_engine import forward_algorithms as F

    monkeypatch.setattr(touch, "SHORTCUTS", shortcuts)
    monkeypatch.setenv("GPU_ENGINE_HOST_UPDATES", "0")
    taken: list[str] = []
    original = F._copying

    def copying(u, s, plan, **kw):
        taken.append(s.rules[0].head.relation)
        return original(u, s, plan, **kw)

    monkeypatch.setattr(F, "_copying", copying)
    t = {(f"a{i}", "r", f"a{(i * 3) % 7}") for i in range(7)} | {("a1", "r", "a1")} | \
        {(f"a{i}", "type", "K") for i in range(0, 7, 2)}
    k: set[tuple] = set()
    r = Reasoner(COPYING, device=device, counting=True)
    r.add_facts("T", sorted(t))
    r.materialise()

    def rows(x, name: str) -> set[tuple]:
        return {tuple(d.values()) for d in x.relation(name).to_pylist()}

    def counters(x, name: str) -> list[tuple]:
        return sorted(tuple(d.values()) for d in x.counters(name).to_pylist())

    gone = [("a1", "r", "a3"), ("a1", "r", "a1"), ("a2", "type", "K"), ("a0", "r", "a0")]
    steps = [({}, {"T": gone}), ({"T": gone}, {}), ({}, {"T": gone}),
             ({"T": [("a9", "r", "a9")]}, {"T": [("a3", "r", "a2")]}),
             ({"K": [("a4",), ("a5",)]}, {"T": [("a4", "type", "K")]}),
             ({}, {"T": [("a6", "type", "K"), ("a9", "r", "a9")], "K": [("a5",)]})]
    for step, (ins, dele) in enumerate(steps):
        taken.clear()
        r.update(insert=ins, delete=dele, algorithm=algorithm)
        t = (t | set(ins.get("T", []))) - set(dele.get("T", []))
        k = (k | set(ins.get("K", []))) - set(dele.get("K", []))
        fresh = Reasoner(COPYING, device=device, counting=True)
        fresh.add_facts("T", sorted(t))
        if k:
            fresh.add_facts("K", sorted(k))
        fresh.materialise()
        for name in "TRKQWNZ":
            assert rows(r, name) == rows(fresh, name), (step, name)
            assert counters(r, name) == counters(fresh, name), (step, name)
        # deletions only or additions only: the three copying strata (W(x) :- R(x, x)
        # copies too); deletions from and additions to T at once: none (R reads T, W
        # reads R); explicit facts of K: not K
        want = {0: "KRW", 1: "KRW", 2: "KRW", 3: "", 4: "RW", 5: "RW"}[step]
        assert "".join(sorted(taken)) == (want if shortcuts else ""), step

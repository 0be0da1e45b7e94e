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

import pytest
from generators import describe, engine_facts, programs, render_program, updates
from hypothesis import HealthCheck, given, note, reject, settings
from hypothesis import strategies as st
from reference import LimitExceeded, evaluate
from test_fuzz import MAX_TUPLES
from test_update import (
    check_state,
    derivation_counts,
    derived_facts,
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
            counts = derivation_counts(with_facts(program, explicit), expected)
            update = data.draw(updates(program, explicit, derived_facts(counts, explicit)))
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

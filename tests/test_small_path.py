"""The small-delta path (gpu_engine.small_rounds, kernels.small_path) against the array path.

Generated programs are materialised twice, with the compiled small path and without it
(``GPU_ENGINE_SMALL_PATH=0``): relations, derivations per rule and the derivation counters
must be equal; the counters are also judged by the reference evaluator in
test_reference_counts.  Tiny buffers force every way out of the path (a round that
overflows the output buffer, a large delta, N growing) on the same programs.
"""

from __future__ import annotations

import pytest
from generators import describe, engine_facts, programs, render_program
from hypothesis import HealthCheck, given, note, reject, settings
from hypothesis import strategies as st
from reference import LimitExceeded, evaluate
from test_fuzz import MAX_TUPLES, table_rows

import gpu_engine.small_rounds as SR


def _run(program, monkeypatch, small: bool, counting: bool, device: str = "cpu"):
    from gpu_engine import Reasoner

    monkeypatch.setenv("GPU_ENGINE_SMALL_PATH", "1" if small else "0")
    monkeypatch.setattr(SR, "WARM_ROUNDS", 0)  # from the first tiny round
    r = Reasoner(render_program(program), device=device, counting=counting, modules="off")
    for name, data in engine_facts(program).items():
        r.add_facts(name, data)
    stats = r.materialise()
    rels = {rel.name: sorted(table_rows(r.relation(rel.name), rel), key=repr)
            for rel in program.relations}
    per_rule = [(rs.rule, rs.derivations) for s in stats.strata for rs in s.rules]
    counters = {}
    if counting:  # decoded rows with their (c_nr, c_r)
        for rel in program.relations:
            table = r.counters(rel.name)
            pairs = zip(table.column("c_nr").to_pylist(), table.column("c_r").to_pylist())
            counters[rel.name] = dict(zip(table_rows(table, rel), pairs))
    small_rounds = sum(s.small_rounds for s in stats.strata)
    return rels, per_rule, counters, small_rounds


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=programs(), counting=st.booleans(), tiny=st.booleans())
def test_small_path_equals_array_path(program, counting: bool, tiny: bool,
                                      monkeypatch, device: str) -> None:
    """On the GPU the path runs on host copies of the runs it reads."""
    try:
        evaluate(program, max_tuples=MAX_TUPLES)
    except LimitExceeded:
        reject()
    note(describe(program))
    with monkeypatch.context() as m:  # a fresh context per example
        if tiny:
            m.setattr(SR, "OUT_ROWS", 3)
            m.setattr(SR, "LEAVE_DELTA", 2)
            m.setattr(SR, "MIN_CAPACITY", 1)
            m.setattr(SR, "ROUND_SLICE", 2)
        got = _run(program, m, True, counting, device)
        want = _run(program, m, False, counting, device)
    assert got[0] == want[0]
    assert got[1] == want[1]
    assert got[2] == want[2]
    assert want[3] == 0


CHAIN = """
.decl a(x:number)
a(x) :- b(x), c(y), d(y).
.decl b(x:number)
b(0).
b(x+1) :- a(x), x < N.
.decl c(x:number)
c(0).
c(x+2) :- c(x), x < 100.
.decl d(x:number)
d(0).
d(x+3) :- d(x), x < 100.
"""


@pytest.mark.parametrize("counting", [False, True])
def test_chain_runs_on_the_small_path(counting: bool, monkeypatch, device: str) -> None:
    """A chain of one-fact rounds (Soufflé's independent_body3, shorter) runs its rounds in
    the compiled path, with the array path's facts and derivations."""
    from gpu_engine import Reasoner

    out = []
    monkeypatch.setattr(SR, "WARM_ROUNDS", 0)  # from the first tiny round
    for small in ("1", "0"):
        monkeypatch.setenv("GPU_ENGINE_SMALL_PATH", small)
        r = Reasoner(CHAIN.replace("N", "2000"), device=device, counting=counting)
        stats = r.materialise()
        out.append((stats, r.relation_sizes()))
    (s1, sizes1), (s0, sizes0) = out
    assert sizes1 == sizes0 and sizes1["a"] == 2001
    assert s1.derivations == s0.derivations
    assert sum(s.small_rounds for s in s1.strata) >= 4000
    assert sum(s.iterations for s in s1.strata) == sum(s.iterations for s in s0.strata)


def test_a_short_stratum_does_not_load_the_compiled_path(monkeypatch) -> None:
    """A stratum that reaches its fixpoint within ``WARM_ROUNDS`` rounds stays on the
    array path in a process that has not run the compiled path (Numba's first call costs
    about 0.4 s); a longer one enters it after ``WARM_ROUNDS`` rounds."""
    from gpu_engine.kernels import cpu_numba, cpu_small

    from gpu_engine import Reasoner

    monkeypatch.setenv("GPU_ENGINE_SMALL_PATH", "1")
    monkeypatch.setattr(SR, "_entered", False)
    monkeypatch.setattr(cpu_numba, "_warm", False)
    monkeypatch.setattr(cpu_small, "_on", False)
    monkeypatch.setattr(SR, "WARM_ROUNDS", 16)
    r = Reasoner(".decl e(x:number, y:number)\ne(1, 2). e(2, 3). e(3, 4).\n"
                 ".decl p(x:number, y:number)\np(x, y) :- e(x, y).\n"
                 "p(x, z) :- p(x, y), e(y, z).\n")
    stats = r.materialise()
    assert r.relation_sizes()["p"] == 6
    assert sum(s.small_rounds for s in stats.strata) == 0 and not SR._entered
    r = Reasoner(CHAIN.replace("N", "200"))
    stats = r.materialise()
    assert r.relation_sizes()["a"] == 201 and SR._entered
    assert 0 < sum(s.small_rounds for s in stats.strata) < sum(s.iterations
                                                              for s in stats.strata)


def test_independent_parts() -> None:
    """The parts of a body that share no variable with Δ or the head, and read only lower
    strata, are found as whole components (linked through comparisons and negations, not
    through a negation's anonymous variables)."""
    from gpu_engine.ir import Atom, Negation
    from host.lang.parser import parse_program

    prog = parse_program("""
    .decl b(x:number)
    .decl c(x:number)
    .decl d(x:number)
    .decl e(x:number, y:number)
    .decl a(x:number)
    a(x) :- b(x), c(y), d(z), y < z, !e(z, _), e(1, 2), a(w), c(w), !e(_, w).
    """).program
    rule = next(r for r in prog.rules if r.head.relation == "a")
    atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
    b_atom = next(a for a in atoms if a.relation == "b")
    a_atom = next(a for a in atoms if a.relation == "a")

    def shown(parts: list) -> list[list[str]]:
        def name(lit) -> str:
            if isinstance(lit, Atom):
                return lit.relation
            return "!" + lit.atom.relation if isinstance(lit, Negation) else "<"
        return sorted(sorted(name(lit) for lit in part) for part in parts)

    in_stratum = {"a", "b"}.__contains__
    # c(y), d(z), y < z, !e(z, _) are one part and e(1, 2) another; a(w), c(w), !e(_, w)
    # reads the stratum's a
    assert shown(SR.independent_parts(rule, b_atom, in_stratum)) == [
        ["!e", "<", "c", "d"], ["e"]]
    # with Δ at a(w), b(x) carries the head: the same two parts
    assert shown(SR.independent_parts(rule, a_atom, in_stratum)) == [
        ["!e", "<", "c", "d"], ["e"]]
    # when c is in the stratum, the first part is evaluated per instance
    assert shown(SR.independent_parts(rule, b_atom, {"a", "b", "c"}.__contains__)) == [
        ["e"]]


INDEPENDENT = """
.decl a(x:number)
.decl b(x:number)
b(0).
b(x+1) :- a(x), x < 40.
.decl c(x:number)
.decl d(x:number)
.decl f(x:number)
.decl g(x:number, y:number)
c(0). c(2). c(4). c(6). c(9).
d(0). d(3). d(6). d(9).
f(7).
g(1, 2). g(2, 2). g(3, 5).
BODY
"""

BODIES = {
    "join": "a(x) :- b(x), c(y), d(y).",
    "empty": "a(x) :- b(x), c(y), d(y), y > 100.\na(x) :- b(x), x < 3.",
    "filters": "a(x) :- b(x), c(y), d(z), y < z, !f(z), g(_, v), v > 1.",
    "constant atom": "a(x) :- b(x), g(1, 2), c(y).\na(x) :- b(x), g(1, 3).\n"
                     "a(x) :- b(x), x < 2.",
    "two parts, two Δ": "a(x) :- b(x), c(y), d(z), a(w), w < 3.\n"
                        "a(x) :- b(x), x < 1.",
}


@pytest.mark.parametrize("counting", [False, True])
@pytest.mark.parametrize("name", sorted(BODIES))
def test_independent_parts_equal_the_array_path(name: str, counting: bool, monkeypatch,
                                                device: str) -> None:
    """Rules whose bodies hold parts independent of Δ and of the head (evaluated once, as
    counts): the same facts, derivations per rule and counters as the array path."""
    from gpu_engine import Reasoner

    out = []
    counted = []
    count_instances = SR.K.count_instances
    monkeypatch.setattr(SR, "WARM_ROUNDS", 0)
    monkeypatch.setattr(SR.K, "count_instances",
                        lambda *a: counted.append(count_instances(*a)) or counted[-1])
    for small in ("1", "0"):
        monkeypatch.setenv("GPU_ENGINE_SMALL_PATH", small)
        r = Reasoner(INDEPENDENT.replace("BODY", BODIES[name]), device=device,
                     counting=counting, modules="off")
        stats = r.materialise()
        rels = {n: sorted(r.relation(n).to_pylist(), key=repr) for n in ("a", "b")}
        per_rule = [(rs.rule, rs.derivations) for s in stats.strata for rs in s.rules]
        counters = ({n: sorted(r.counters(n).to_pylist(), key=repr) for n in ("a", "b")}
                    if counting else None)
        out.append((rels, per_rule, counters, sum(s.small_rounds for s in stats.strata)))
    (got, want) = out
    assert got[:3] == want[:3]
    assert got[3] > 0 and want[3] == 0
    assert counted  # the parts were counted apart

"""Incremental maintenance on generated programs and update sequences, for every algorithm.

A generated program (generators.programs) is materialised with ``counting=True``; then 1-4
generated updates (generators.updates: insertions, deletions, both, absent and present facts,
explicit-and-derived facts, explicit facts in derived relations) are applied with
``Reasoner.update``. After every update the relations equal the reference evaluator on
E' = (E \\ E⁻) ∪ E⁺, ``explicit`` equals E', and the counters equal ``derivation_counts``
where the algorithm maintains them; after the last one a fresh Reasoner on E' agrees.
``counting`` must refuse programs with a recursive rule. Bad input leaves everything unchanged.

Examples per algorithm: ``UPDATE_EXAMPLES``, else the fuzz profile's count (``FUZZ_EXAMPLES``),
else a CI-sized fraction of the default profile.
"""

from __future__ import annotations

import os
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from generators import (
    Atom,
    Const,
    Neg,
    Program,
    Relation,
    Row,
    Rule,
    Update,
    describe,
    engine_facts,
    programs,
    render_program,
    update_data,
    updated_facts,
    updates,
)
from gpu_engine.host.reasoner import ProgramError, Reasoner
from hypothesis import given, note, reject, settings
from hypothesis import strategies as st
from reference import (
    Counts,
    LimitExceeded,
    derivation_counts,
    evaluate,
    explicit_facts,
    has_recursive_rule,
    is_recursive,
    strata,
)
from test_fuzz import MAX_TUPLES, table_rows

import gpu_engine.runs as runs_mod

ALGORITHMS = ("remat", "remat1c", "remat2c", "dred", "counting", "dredc", "bf", "bfc")
FULL_COUNTERS = {"remat2c", "dredc", "counting"}  # c_nr and c_r maintained
NR_COUNTERS = {"remat1c", "bfc"}  # c_nr only


def _examples() -> int:
    """Generated sequences per algorithm (see the module docstring)."""
    if os.environ.get("UPDATE_EXAMPLES"):
        return int(os.environ["UPDATE_EXAMPLES"])
    if os.environ.get("FUZZ_EXAMPLES"):
        return settings.default.max_examples
    return max(10, settings.default.max_examples // 2)


EXAMPLES = _examples()

State = tuple[dict[str, set[Row]], dict[str, set[Row]], dict[str, dict[Row, tuple[int, int]]]]


# --------------------------------------------------------------------------- helpers


def with_facts(program: Program, explicit: dict[str, set[Row]]) -> Program:
    """``program`` with E replaced by ``explicit`` (all as external facts)."""
    facts = {name: sorted(rows, key=repr) for name, rows in explicit.items() if rows}
    return replace(program, facts=facts, inline_facts={})


def non_recursive(program: Program) -> Program:
    """``program`` without its recursive rules (and recursive disjuncts): what Counting
    accepts. Dropping rules only splits strata, so no remaining rule becomes recursive."""
    stratum_of = {n: set(c) for c in strata(program) for n in c}
    rules: list[Rule] = []
    for rule in program.rules:
        members = stratum_of[rule.head.rel]
        if not rule.alternatives:
            if not is_recursive(rule.body, members):
                rules.append(rule)
            continue
        alts = tuple(a for a in rule.alternatives if not is_recursive(rule.body + a, members))
        if alts:
            rules.append(replace(rule, alternatives=alts))
    return replace(program, rules=tuple(rules))


# examples whose naive reference evaluation reads and matches more rows than this are
# discarded: about 1 % of the drawn ones, which took 1-2 s per step (most take under 30 ms)
MAX_WORK = 40 * MAX_TUPLES


def reference(program: Program) -> dict[str, set[Row]]:
    """The reference materialisation, or reject the example when it is too large or too
    costly to evaluate naively."""
    try:
        return evaluate(program, max_tuples=MAX_TUPLES, max_work=MAX_WORK)
    except LimitExceeded:
        reject()


def relations_of(r: Reasoner, program: Program) -> dict[str, set[Row]]:
    """Every relation of the engine as a set of rows (duplicates fail)."""
    out: dict[str, set[Row]] = {}
    for rel in program.relations:
        rows = table_rows(r.relation(rel.name), rel)
        assert len(rows) == len(set(rows)), f"{rel.name}: duplicate rows"
        out[rel.name] = set(rows)
    return out


def explicit_of(r: Reasoner, program: Program) -> dict[str, set[Row]]:
    """Every relation's explicit facts E according to the engine."""
    return {rel.name: set(table_rows(r.explicit(rel.name), rel)) for rel in program.relations}


def counters_of(r: Reasoner, rel: Relation) -> dict[Row, tuple[int, int]]:
    """A relation's counters: row -> (c_nr, c_r)."""
    table = r.counters(rel.name)
    rows = table_rows(table, rel)
    pairs = zip(table.column("c_nr").to_pylist(), table.column("c_r").to_pylist(), strict=True)
    return dict(zip(rows, pairs, strict=True))


def snapshot(r: Reasoner, program: Program) -> State:
    """Relations, explicit facts and (where the engine has them) counters."""
    counters: dict[str, dict[Row, tuple[int, int]]] = {}
    for rel in program.relations:
        try:
            counters[rel.name] = counters_of(r, rel)
        except RuntimeError:
            pass
    return relations_of(r, program), explicit_of(r, program), counters


def engine_update(update: Update, program: Program) -> tuple[dict[str, Any], dict[str, Any]]:
    """The update's insert/delete mappings in the drawn input formats."""

    def encode(part: dict[str, list[Row]]) -> dict[str, Any]:
        return {
            name: update_data(program.relation(name), rows, update.formats.get(name, "arrow"))
            for name, rows in part.items()
        }

    return encode(update.insert), encode(update.delete)


def _diff(what: str, expected: set[Any] | dict[Any, Any], got: set[Any] | dict[Any, Any]) -> str:
    if isinstance(expected, dict) and isinstance(got, dict):
        keys = sorted(set(expected) | set(got), key=repr)
        bad = [(k, expected.get(k), got.get(k)) for k in keys if expected.get(k) != got.get(k)]
        return f"{what}: (row, expected, got) {bad[:12]}"
    missing = sorted(set(expected) - set(got), key=repr)[:12]
    extra = sorted(set(got) - set(expected), key=repr)[:12]
    return f"{what}: missing {missing}, extra {extra}"


def compare_counters(
    r: Reasoner, program: Program, expected: Counts, algorithm: str | None
) -> list[str]:
    """Counter mismatches for the counters ``algorithm`` maintains (eqrel relations skipped)."""
    if algorithm not in FULL_COUNTERS | NR_COUNTERS:
        return []
    problems: list[str] = []
    modular = r.engine.modular_relations()  # no recursive counters kept (paper 002 §4.2)
    for rel in program.relations:
        if rel.eqrel:
            continue
        got = counters_of(r, rel)
        want = expected[rel.name]
        if algorithm in NR_COUNTERS or rel.name in modular:
            got = {row: (nr, 0) for row, (nr, _) in got.items()}
            want = {row: (nr, 0) for row, (nr, _) in want.items()}
        if got != want:
            problems.append(_diff(f"{rel.name} counters (c_nr, c_r)", want, got))
    return problems


def check_state(
    r: Reasoner,
    program: Program,
    explicit: dict[str, set[Row]],
    expected: dict[str, set[Row]],
    algorithm: str | None,
) -> list[str]:
    """Mismatches of relations, explicit facts and maintained counters."""
    problems: list[str] = []
    got = relations_of(r, program)
    for rel in program.relations:
        if got[rel.name] != expected[rel.name]:
            problems.append(_diff(rel.name, expected[rel.name], got[rel.name]))
    got_e = explicit_of(r, program)
    for rel in program.relations:
        if got_e[rel.name] != explicit[rel.name]:
            problems.append(_diff(f"explicit {rel.name}", explicit[rel.name], got_e[rel.name]))
    if not problems:
        counts = derivation_counts(with_facts(program, explicit), expected)
        problems += compare_counters(r, program, counts, algorithm)
    return problems


def fresh_reasoner(program: Program, explicit: dict[str, set[Row]], device: str) -> Reasoner:
    """A Reasoner materialised from scratch on E = ``explicit``."""
    plain = replace(program, inline_facts={})
    r = Reasoner(render_program(plain), device=device, counting=True)
    for rel in program.relations:
        if explicit[rel.name]:
            fmt = program.fact_formats.get(rel.name, "arrow")
            r.add_facts(rel.name, update_data(rel, sorted(explicit[rel.name], key=repr), fmt))
    r.materialise()
    return r


def derived_facts(counts: Counts, explicit: dict[str, set[Row]]) -> dict[str, set[Row]]:
    """Facts with at least one rule instance deriving them."""
    return {
        name: {row for row, (nr, rc) in table.items() if nr - (row in explicit[name]) + rc > 0}
        for name, table in counts.items()
    }


# --------------------------------------------------------------------------- sequences


def run_sequence(
    program: Program, data: st.DataObject, algorithms: tuple[str | None, ...], device: str,
    modules: str | None = None, budgeted: bool = False,
) -> None:
    """Materialise, apply 1-4 generated updates, each with an algorithm drawn from
    ``algorithms`` (None: the engine's default), and check after each one. Counting on a
    recursive program must be refused without changing anything (the sequence goes on).
    ``budgeted``: the default algorithm may have fallen back to rematerialising (its time
    budget is on)."""
    note(describe(program))
    if modules is None:
        modules = data.draw(st.sampled_from(["auto", "off"]), label="modules")
    r = Reasoner(render_program(program), device=device, counting=True, modules=modules)
    if data.draw(st.booleans(), label="compact every rule output"):
        r.engine.evaluator.compact_rows = 0  # the memory bound of large rounds, always on
    twin = data.draw(st.booleans(), label="small updates on a host twin")
    # always: the GPU's host path, also on the CPU; 0: never (the device's own path)
    os.environ["GPU_ENGINE_HOST_UPDATES"] = "always" if twin else "0"
    lazy = data.draw(st.booleans(), label="keep tombstones and small runs")
    saved = (runs_mod.COMPACT_SHARE, runs_mod.MAX_RUNS, runs_mod.SMALL)
    if lazy:  # relations keep many runs and are never rewritten as one
        runs_mod.COMPACT_SHARE, runs_mod.MAX_RUNS, runs_mod.SMALL = 0, 1 << 30, 1
    try:
        _run_updates(r, program, data, algorithms, device, budgeted)
    finally:
        runs_mod.COMPACT_SHARE, runs_mod.MAX_RUNS, runs_mod.SMALL = saved
        os.environ.pop("GPU_ENGINE_HOST_UPDATES", None)


def draw_update(data: st.DataObject, program: Program, explicit: dict[str, set[Row]],
                expected: dict[str, set[Row]]) -> Update:
    """A random update of ``program``'s explicit facts (deleting explicit and derived
    facts, inserting new ones), drawn from ``data``."""
    counts = derivation_counts(with_facts(program, explicit), expected)
    return data.draw(updates(program, explicit, derived_facts(counts, explicit)))


def _run_updates(r: Reasoner, program: Program, data: st.DataObject,
                 algorithms: tuple[str | None, ...], device: str, budgeted: bool = False
                 ) -> None:
    """The body of :func:`run_sequence` once the reasoner is set up."""
    explicit = explicit_facts(program)
    expected = reference(program)
    for name, facts in engine_facts(program).items():
        r.add_facts(name, facts)
    r.materialise()
    recursive = has_recursive_rule(program)
    eqrel = any(rel.eqrel for rel in program.relations)  # its closure may count as recursive
    log: list[str] = []
    for step in range(data.draw(st.integers(1, 4), label="updates")):
        algorithm = data.draw(st.sampled_from(algorithms), label="algorithm")
        update = draw_update(data, program, explicit, expected)
        log.append(f"update {step + 1} ({algorithm}): {update.describe()}")
        header = f"device={device}\n{describe(program)}" + "\n".join(log)
        insert, delete = engine_update(update, program)
        # the judge first: an update whose result is too large is rejected before the
        # engine spends time on it (B/F checks facts one at a time)
        new_explicit = updated_facts(explicit, update)
        new_expected = reference(with_facts(program, new_explicit))
        before = snapshot(r, program)
        if algorithm == "counting" and recursive:
            with pytest.raises((ValueError, ProgramError), match="(?i)recurs"):
                r.update(insert=insert, delete=delete, algorithm=algorithm)
            assert snapshot(r, program) == before, f"{header}\nrefused update changed the state"
            continue
        try:
            stats = r.update(insert=insert, delete=delete, algorithm=algorithm)
        except (ValueError, ProgramError) as exc:
            if not (algorithm == "counting" and eqrel and "recurs" in str(exc).lower()):
                raise
            assert snapshot(r, program) == before, f"{header}\nrefused update changed the state"
            continue
        deleted = sum(
            len((set(rows) & explicit[n]) - set(update.insert.get(n, [])))
            for n, rows in update.delete.items()
        )
        inserted = sum(len(set(rows) - explicit[n]) for n, rows in update.insert.items())
        explicit, expected = new_explicit, new_expected
        problems = check_state(r, program, explicit, expected, stats.algorithm)
        allowed = {algorithm} if algorithm else {"dredc"} if recursive else (
            {"counting", "dredc"} if eqrel else {"counting"})
        if budgeted and not algorithm and "dredc" in allowed:
            allowed.add("remat2c")  # past its time budget
        if stats.algorithm not in allowed:
            problems.append(f"stats.algorithm {stats.algorithm!r}, expected one of {allowed}")
        if (stats.deleted, stats.inserted) != (deleted, inserted):
            problems.append(f"stats deleted/inserted {stats.deleted}/{stats.inserted}, "
                            f"expected {deleted}/{inserted}")
        if stats.facts != sum(map(len, expected.values())):
            problems.append(f"stats.facts {stats.facts}, expected {sum(map(len, expected.values()))}")
        assert not problems, f"{header}\n" + "\n".join(problems)
    fresh = fresh_reasoner(program, explicit, device)
    got, want = relations_of(r, program), relations_of(fresh, program)
    assert got == want, f"device={device}\n{describe(program)}" + "\n".join(log) + (
        "\nupdated != fresh: " + "; ".join(_diff(n, want[n], got[n]) for n in want if want[n] != got[n])
    )


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@settings(max_examples=EXAMPLES)
@given(program=programs(), data=st.data())
def test_update_sequences(program: Program, data: st.DataObject, algorithm: str, device: str) -> None:
    """Generated programs and update sequences: relations, E and counters stay exact.
    For Counting, half of the programs lose their recursive rules (the rest must be refused)."""
    if algorithm == "counting" and data.draw(st.booleans(), label="strip recursion"):
        program = non_recursive(program)
    run_sequence(program, data, (algorithm,), device)


@settings(max_examples=max(10, EXAMPLES // 2))
@given(program=programs(), data=st.data())
def test_mixed_algorithm_sequences(program: Program, data: st.DataObject, device: str) -> None:
    """Each update of a sequence with another algorithm (or the default: Counting without
    recursion, else DRed^c): counters stay exact where the step's algorithm maintains them."""
    if data.draw(st.booleans(), label="strip recursion"):
        program = non_recursive(program)
    run_sequence(program, data, (*ALGORITHMS, None), device)


# --------------------------------------------------------------------------- nullary relations

E0, Q0, R0 = (Relation(n, ()) for n in ("e", "Q", "R"))
P1 = Relation("P", ("number",))
NULLARY_CASES: dict[str, tuple[Program, list[Update]]] = {
    "delete an explicit nullary fact": (
        Program((E0,), inline_facts={"e": [()]}),
        [Update({}, {"e": [()]}), Update({"e": [()]}, {})],
    ),
    "insert, then delete a nullary fact": (
        Program((E0,)),
        [Update({"e": [()]}, {}), Update({}, {"e": [()]})],
    ),
    "an explicit nullary fact loses its derivation": (  # R() :- Q().  E = {Q(), R()}
        Program((Q0, R0), (Rule(Atom("R", ()), (Atom("Q", ()),)),),
                inline_facts={"Q": [()], "R": [()]}),
        [Update({}, {"Q": [()]}), Update({"Q": [()]}, {"R": [()]})],
    ),
    "negation turns off a recursive nullary rule": (  # R() :- R(), !P(1).  E = {R()}
        Program((P1, R0), (Rule(Atom("R", ()), (Atom("R", ()), Neg(Atom("P", (Const(1),))))),),
                inline_facts={"R": [()]}),
        [Update({"P": [(1,)]}, {}), Update({}, {"P": [(1,)], "R": [()]})],
    ),
}


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize("case", list(NULLARY_CASES))
def test_nullary_updates(case: str, algorithm: str, device: str) -> None:
    """Fixed updates of nullary relations (regressions found by test_update_sequences)."""
    program, steps = NULLARY_CASES[case]
    r = Reasoner(render_program(program), device=device, counting=True)
    r.materialise()
    if algorithm == "counting" and has_recursive_rule(program):
        insert, delete = engine_update(steps[0], program)
        with pytest.raises((ValueError, ProgramError), match="(?i)recurs"):
            r.update(insert=insert, delete=delete, algorithm=algorithm)
        return
    explicit = explicit_facts(program)
    for k, update in enumerate(steps):
        insert, delete = engine_update(update, program)
        r.update(insert=insert, delete=delete, algorithm=algorithm)
        explicit = updated_facts(explicit, update)
        expected = evaluate(with_facts(program, explicit))
        problems = check_state(r, program, explicit, expected, algorithm)
        assert not problems, f"{case}, {algorithm}, update {k + 1}: " + "; ".join(problems)


# --------------------------------------------------------------------------- atomicity

ATOMIC_PROGRAM = """
.decl e(x: number, y: number)
.decl s(x: symbol)
.decl p(x: number, y: number)
.decl q(x: number, n: symbol)
p(x, y) :- e(x, y).
p(x, z) :- p(x, y), e(y, z).
q(x, n) :- e(x, _), s(n).
"""

FLAT_PROGRAM = """
.decl e(x: number, y: number)
.decl s(x: symbol)
.decl q(x: number, n: symbol)
q(x, n) :- e(x, _), s(n).
"""

BAD_UPDATES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("unknown relation", {"nope": np.array([[1, 2]])}, {}),
    ("unknown relation in delete", {"e": np.array([[7, 8]])}, {"nope": np.array([[1]])}),
    ("wrong arity", {"e": np.array([[1, 2, 3]])}, {}),
    ("wrong arity in delete", {"e": np.array([[7, 8]])}, {"e": np.array([[1]])}),
    ("symbol for a number", {"e": pa.table({"x": ["a"], "y": ["b"]})}, {}),
    ("symbol for a number in delete", {"s": np.array([["z"]])},
     {"e": pa.table({"x": [1], "y": ["b"]})}),
]


@pytest.mark.parametrize("algorithm", ALGORITHMS)
@pytest.mark.parametrize(("label", "insert", "delete"), BAD_UPDATES, ids=[b[0] for b in BAD_UPDATES])
def test_bad_update_is_atomic(
    label: str, insert: dict[str, Any], delete: dict[str, Any], algorithm: str, device: str
) -> None:
    """An update with bad input raises and changes neither relations, E nor counters; a
    later good update still works."""
    text = FLAT_PROGRAM if algorithm == "counting" else ATOMIC_PROGRAM
    r = Reasoner(text, device=device, counting=True)
    r.add_facts("e", np.array([[1, 2], [2, 3], [3, 4]]))
    r.add_facts("s", np.array([["a"], ["b"]]))
    r.materialise()
    names = [n for n in ("e", "s", "p", "q") if n in r.program.relations]

    def state() -> tuple[Any, ...]:
        rels = {n: r.relation(n).to_pylist() for n in names}
        expl = {n: r.explicit(n).to_pylist() for n in names}
        cnt = {}
        for n in names:
            try:
                cnt[n] = r.counters(n).to_pylist()
            except RuntimeError:
                pass
        return rels, expl, cnt

    before = state()
    with pytest.raises((ProgramError, ValueError, TypeError, KeyError)):
        r.update(insert=insert, delete=delete, algorithm=algorithm)
    assert state() == before, f"{label}: the failed update changed the state"
    r.update(insert={"e": np.array([[4, 5]])}, delete={"e": np.array([[1, 2]])},
             algorithm=algorithm)
    assert {"x": 4, "y": 5} in r.relation("e").to_pylist()
    assert {"x": 1, "y": 2} not in r.relation("e").to_pylist()


@pytest.mark.parametrize("algorithm", [*ALGORITHMS, "no-such-algorithm"])
def test_unknown_algorithm_or_recursion_refused(algorithm: str, device: str) -> None:
    """An unknown algorithm name always, and ``counting`` on a recursive program, raise a
    clear error and change nothing."""
    r = Reasoner(ATOMIC_PROGRAM, device=device, counting=True)
    r.add_facts("e", np.array([[1, 2], [2, 3]]))
    r.materialise()
    before = r.relation("p").to_pylist(), r.explicit("e").to_pylist()
    update = {"insert": {"e": np.array([[3, 4]])}, "delete": {"e": np.array([[1, 2]])}}
    if algorithm == "no-such-algorithm":
        with pytest.raises((ValueError, ProgramError), match="no-such-algorithm"):
            r.update(**update, algorithm=algorithm)
    elif algorithm == "counting":
        with pytest.raises((ValueError, ProgramError), match="(?i)recurs"):
            r.update(**update, algorithm=algorithm)
    else:
        r.update(**update, algorithm=algorithm)
        assert sorted(map(tuple, (d.values() for d in r.relation("p").to_pylist()))) == [
            (2, 3), (2, 4), (3, 4)
        ]
        return
    assert (r.relation("p").to_pylist(), r.explicit("e").to_pylist()) == before

"""The Spark backend (host.spark.backend.SparkRunner) against the local engine.

Generated programs (tests/generators.py) on the plain Spark path, the decomposed path and
the hybrid (local finish) path; hand-written programs for the paths taken, negation,
built-ins, symbols, floats, unsigned, nullary relations and eqrel; LUBM(1) LUBM_L counts.
Results are compared as sets of tuples (NaN-aware: tuples are compared by ``repr``).
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from generators import NUMBER, Program, programs, render_program
from gpu_engine.host.lang.parser import parse_program
from gpu_engine.host.spark.adapter import from_arrow, to_arrow
from gpu_engine.host.spark.backend import SparkRunner, decomposition_plan
from hypothesis import given, note, settings

from gpu_engine.ir import ProgramError

pytestmark = pytest.mark.spark

REPO = Path(__file__).resolve().parents[1]

TC = """
.decl e(a:number, b:number)
.decl p(a:number, b:number)
p(x, y) :- e(x, y).
p(x, z) :- p(x, y), e(y, z).
"""
TC_NONLINEAR = TC.replace("p(x, y), e(y, z)", "p(x, y), p(y, z)")
CHAIN = pa.table({"a": pa.array([1, 2, 3, 4, 5, 9, 8], pa.int32()),
                  "b": pa.array([2, 3, 4, 5, 1, 8, 7], pa.int32())})


# --- helpers -------------------------------------------------------------------------------


def _rows(table: pa.Table) -> set[str]:
    return {repr(row) for row in zip(*(c.to_pylist() for c in table.columns))}


def _count(df: Any) -> int:
    return int(df.count())


def run_both(spark: Any, text: str, facts: dict[str, pa.Table],
             **kw: Any) -> tuple[SparkRunner, dict[str, Any]]:
    """Materialise ``text`` with the local engine and with SparkRunner(**kw); assert that
    every relation agrees (columns, types, no duplicates, same facts)."""
    from gpu_engine import Reasoner

    program = parse_program(text, "<test>").program
    local = Reasoner(text, device="cpu")
    for name, table in facts.items():
        local.add_facts(name, table)
    local.materialise()
    runner = SparkRunner(program, spark, device="cpu", **kw)
    out = runner.materialise({n: from_arrow(spark, t) for n, t in facts.items()})
    assert set(out) == set(program.relations)
    problems = []
    for name, rel in program.relations.items():
        expected = local.relation(name)
        if rel.arity == 0:
            if _count(out[name]) != expected.num_rows:
                problems.append(f"{name}: {_count(out[name])} != {expected.num_rows}")
            continue
        got = to_arrow(out[name])
        assert got.column_names == expected.column_names, name
        rows = _rows(got)
        if len(rows) != got.num_rows:
            problems.append(f"{name}: {got.num_rows - len(rows)} duplicates")
        if rows != _rows(expected):
            problems.append(f"{name}: expected {sorted(_rows(expected))[:8]}, "
                            f"got {sorted(rows)[:8]}")
    assert not problems, f"{kw}\n{text}\n" + "\n".join(problems)
    return runner, out


def _paths(runner: SparkRunner) -> list[str]:
    return [s["path"] for s in runner.stats["strata"]]


def _facts_of(program: Program) -> dict[str, pa.Table]:
    """Explicit facts of a generated program as Arrow tables in the exchange types."""
    out = {}
    for name, rows in program.facts.items():
        rel = program.relation(name)
        out[name] = pa.table({a: pa.array([r[i] for r in rows],
                                           pa.int32() if t == NUMBER else pa.string())
                              for i, (a, t) in enumerate(zip(rel.attrs, rel.types))})
    return out


def _check_generated(spark: Any, program: Program, **kw: Any) -> SparkRunner:
    text = render_program(program)
    note(text)
    note(repr(program.facts))
    runner, _ = run_both(spark, text, _facts_of(program), **kw)
    return runner


SMALL = programs(max_relations=4, max_rules=5, max_facts=8)


# --- generated programs ------------------------------------------------------------------


@settings(max_examples=4)
@given(program=SMALL)
def test_generated_spark_path(spark: Any, program: Program) -> None:
    """Plain Spark seminaive evaluation (no decomposition, no local finish)."""
    runner = _check_generated(spark, program, decompose="off", local_finish_rows=0)
    assert set(_paths(runner)) <= {"spark"}


@settings(max_examples=3)
@given(program=SMALL)
def test_generated_decompose_auto(spark: Any, program: Program) -> None:
    """Decomposition where the condition holds, Spark rounds elsewhere."""
    runner = _check_generated(spark, program, decompose="auto", local_finish_rows=0)
    assert set(_paths(runner)) <= {"spark", "decomposed"}


@settings(max_examples=10)
@given(program=SMALL)
def test_generated_hybrid(spark: Any, program: Program) -> None:
    """A large threshold: every stratum finishes in the local engine."""
    runner = _check_generated(spark, program, local_finish_rows=10_000)
    assert set(_paths(runner)) == {"local"} or not runner.stats["strata"]


# --- paths ---------------------------------------------------------------------------------


def test_decomposition_condition() -> None:
    """Linear TC decomposes on x (position 0); non-linear TC and eqrel do not."""
    from gpu_engine.stratify import stratify

    def plans(text: str) -> list[Any]:
        program = parse_program(text, "<t>").program
        return [decomposition_plan(s, program.relations) for s in stratify(program)
                if s.recursive]

    assert plans(TC) == [{"p": 0}]
    assert plans(TC.replace("p(x, y), e(y, z)", "e(x, y), p(y, z)")) == [{"p": 1}]
    assert plans(TC_NONLINEAR) == [None]
    assert plans(".decl e(a:number, b:number) eqrel\n.decl f(a:number, b:number)\n"
                 "e(x, y) :- f(x, y).") == [None]
    mutual = (".decl e(a:number, b:number)\n.decl p(a:number, b:number)\n"
              ".decl q(a:number, b:number)\n"
              "p(x, y) :- e(x, y).\nq(x, z) :- p(x, y), e(y, z).\n"
              "p(x, z) :- q(x, y), e(y, z), !e(z, x).\n")
    assert plans(mutual) == [{"p": 0, "q": 0}]


def test_paths_linear_tc(spark: Any) -> None:
    """The same TC on the three paths; the stats name the path taken."""
    off, _ = run_both(spark, TC, {"e": CHAIN}, decompose="off", local_finish_rows=0)
    assert _paths(off) == ["spark", "spark"] and off.stats["strata"][1]["rounds"] >= 4
    auto, _ = run_both(spark, TC, {"e": CHAIN}, decompose="auto", local_finish_rows=0)
    assert _paths(auto) == ["spark", "decomposed"]
    hybrid, _ = run_both(spark, TC, {"e": CHAIN}, decompose="off", local_finish_rows=30)
    assert _paths(hybrid) == ["local", "local"]  # 7 edges + 0 read: local from the start


def test_hybrid_switch_mid_fixpoint(spark: Any) -> None:
    """The local finish after some Spark rounds, once the tracked sizes fit."""
    line = pa.table({"a": pa.array(range(1, 12), pa.int32()),
                     "b": pa.array(range(2, 13), pa.int32())})
    seeds = pa.table({"a": pa.array([1] * 40, pa.int32()), "b": pa.array([2] * 40, pa.int32())})
    # start: 40 explicit + 11 read > 20; round r: 11 read + a delta of 12 - r facts
    runner, _ = run_both(spark, TC, {"e": line, "p": seeds}, decompose="off",
                         local_finish_rows=20)
    st = runner.stats["strata"][1]
    assert st["path"] == "local" and st["rounds"] >= 1
    runner, _ = run_both(spark, TC_NONLINEAR, {"e": line, "p": seeds}, decompose="off",
                         local_finish_rows=40)  # non-linear: the full relations count too
    assert runner.stats["strata"][1]["path"] == "local"  # after the seeds, in Spark


def test_nonlinear_is_not_decomposed(spark: Any) -> None:
    runner, _ = run_both(spark, TC_NONLINEAR, {"e": CHAIN}, decompose="auto",
                         local_finish_rows=0, compact_every=2)
    assert _paths(runner) == ["spark", "spark"]


# --- language features -----------------------------------------------------------------------


NEGATION = """
.decl e(a:symbol, b:symbol)
.decl blocked(a:symbol)
.decl p(a:symbol, b:symbol)
.decl q(a:symbol, n:number)
.decl lone(a:symbol)
.decl any_d()
.decl none_z()
blocked("b").
p(x, y) :- e(x, y), !blocked(y).
p(x, z) :- p(x, y), p(y, z).
q(x, strlen(cat(x, "-", y)) * 3 / 2) :- p(x, y), x != y.
lone(x) :- e(x, _), !p(_, x), !e(x, x).
any_d() :- p(_, "d").
none_z() :- e(x, _), !any_d(), x = "zz".
"""
SYMS = pa.table({"a": ["a", "b", "c", "a", "d", "x y"], "b": ["b", "c", "d", "c", "a", "a"]})


def test_negation_symbols_nullary(spark: Any) -> None:
    run_both(spark, NEGATION, {"e": SYMS}, local_finish_rows=0)


ARITH = """
.decl v(x:number, y:number)
.decl u(x:unsigned, y:unsigned)
.decl f(x:float, y:float)
.decl h(a:number, b:number, c:number, d:number, e:number, f:number)
.decl hu(a:unsigned, b:unsigned, c:unsigned, d:unsigned)
.decl hf(a:float, b:float, c:float, d:float, e:number)
.decl s(a:symbol, b:number, c:symbol, d:unsigned)
.decl g(a:number, b:number)
h(x, y, x / y, x % y, x ^ 3, (x band y) bxor (x bshl 3)) :- v(x, y).
h(x, y, x * y, -x, x bshr 2, min(x, y, 3)) :- v(x, y), x != 0.
h(x, y, max(x, y), x ^ y, bnot x, (x land y) + (x lor 0)) :- v(x, y), y < 3.
hu(x, y, x * y, x ^ y) :- u(x, y).
hu(x, y, x / y, (x bshru 1) + to_unsigned("12")) :- u(x, y).
hf(a, b, a / b, a * b + 1.5, to_number(a)) :- f(a, b).
hf(a, b, -a, a ^ b, 1) :- f(a, b), a < b.
hf(a, b, max(a / b, 1.0), min(1.0, a / b, b), 2) :- f(a, b).
hf(itof(x), utof(itou(y)), max(itof(x), 2.5), 0.5, ftoi(itof(y))) :- v(x, y), x < 10.
s(to_string(x), to_number(to_string(y)) + 1, substr("hello", x, y), itou(x)) :- v(x, y).
g(x, z) :- v(x, y), z = x + y, z > 2, !v(z, _), !h(x - 1, _, _, _, _, _).
"""


def test_builtins_numbers_unsigned_floats(spark: Any) -> None:
    """Wraparound, C division, division by zero, powers, bit operations, conversions,
    string functors, float division by zero and -0.0, bindings and functors in negation."""
    v = pa.table({"x": pa.array([5, -7, 2**31 - 1, -(2**31), 0, 3, 1], pa.int32()),
                  "y": pa.array([2, 2, 2, -1, 0, 1, 4], pa.int32())})
    u = pa.table({"x": pa.array([2**32 - 1, 3, 0, 65536], pa.int64()),
                  "y": pa.array([2**32 - 1, 7, 0, 65537], pa.int64())})
    f = pa.table({"x": pa.array([1.5, -0.0, 3.25, 0.0, math.inf], pa.float32()),
                  "y": pa.array([0.0, 2.0, -1.0, 0.0, 2.0], pa.float32())})
    run_both(spark, ARITH, {"v": v, "u": u, "f": f}, local_finish_rows=0)


EQREL = """
.decl link(a:number, b:number)
.decl same(a:number, b:number) eqrel
.decl reach(a:number, b:number)
same(x, y) :- link(x, y).
reach(x, y) :- same(x, y), x < y.
"""


def test_eqrel(spark: Any) -> None:
    link = pa.table({"a": pa.array([1, 2, 5, 7], pa.int32()),
                     "b": pa.array([2, 3, 6, 7], pa.int32())})
    runner, _ = run_both(spark, EQREL, {"link": link}, local_finish_rows=0)
    assert "decomposed" not in _paths(runner)


SELF_COPY = """
.decl e(a:symbol)
e("c") :- e(x), e(y).
e(x) :- e(x), x = x.
e(x) :- e(x), e(x).
"""


@pytest.mark.parametrize("decompose", ["off", "auto"])
def test_union_of_self_joins(spark: Any, decompose: str) -> None:
    """Recursive copy rules beside another rule for the same relation: Catalyst's
    constraint propagation failed on the union of their self-joins ("key not found")."""
    facts = {"e": pa.table({"a": pa.array(["a"], pa.string())})}
    _, out = run_both(spark, SELF_COPY, facts, decompose=decompose, local_finish_rows=0)
    assert _count(out["e"]) == 2


def test_program_facts_duplicates_and_absent_inputs(spark: Any) -> None:
    text = TC + "e(10, 11).\ne(11, 12).\n"
    dup = pa.concat_tables([CHAIN, CHAIN])
    run_both(spark, text, {"e": dup}, decompose="auto", local_finish_rows=0)
    _, out = run_both(spark, text, {}, decompose="off", local_finish_rows=0)
    assert _count(out["p"]) == 3


def test_unsupported_functor_is_rejected(spark: Any) -> None:
    text = ".decl s(a:symbol)\n.decl n(a:number)\nn(ord(x)) :- s(x).\n"
    program = parse_program(text, "<t>").program
    with pytest.raises(ProgramError, match="ord"):
        SparkRunner(program, spark)


# --- LUBM ----------------------------------------------------------------------------------


def _lubm_counts(spark: Any, **kw: Any) -> tuple[dict[str, int], dict[str, int], SparkRunner]:
    from gpu_engine.host.ntriples import read_ntriples

    from gpu_engine import Reasoner

    path = REPO / "examples" / "lubm" / "lubm1.nt.gz"
    if not path.exists():
        pytest.skip("examples/lubm absent")
    triples = read_ntriples(path)
    text = (REPO / "examples" / "lubm" / "LUBM_L.dl").read_text()
    local = Reasoner(text, device="cpu")
    local.add_facts("TE", triples)
    local.materialise()
    program = parse_program(text, "LUBM_L.dl").program
    runner = SparkRunner(program, spark, device="cpu", **kw)
    out = runner.materialise({"TE": from_arrow(spark, triples.rename_columns(["s", "p", "o"]))})
    got = runner.stats["sizes"]
    assert _count(out["RP2"]) == got["RP2"]  # the tracked counts are the DataFrames' counts
    return local.relation_sizes(), got, runner


def test_lubm1_counts_hybrid(spark: Any) -> None:
    """LUBM(1) with LUBM_L: every relation's size equals the local engine's (the default
    threshold finishes every stratum on the driver)."""
    expected, got, runner = _lubm_counts(spark)
    assert got == expected
    assert set(_paths(runner)) == {"local"}


@pytest.mark.extended
def test_lubm1_counts_spark(spark: Any) -> None:
    """LUBM(1) with LUBM_L on the Spark and decomposed paths (minutes on two cores)."""
    expected, got, runner = _lubm_counts(spark, local_finish_rows=0)
    assert got == expected

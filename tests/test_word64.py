"""64-bit words (``--word-size 64``, ``Reasoner(word_size=64)``): Soufflé's 64-bit build.

``number`` is int64, ``unsigned`` uint64 and ``float`` double; arithmetic wraps at 64 bits,
shift counts are masked to 6 bits, constants and fact values are range-checked in 64 bits,
floats print as doubles, aggregates and conversions follow, and a store keeps its word size.
The default stays 32-bit (checked side by side).
"""

from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest import locate_shared_dir
from generators import (
    Program,
    arithmetic_programs,
    describe,
    engine_facts,
    programs,
    render_program,
)
from gpu_engine.host.cli import main
from gpu_engine.host.reasoner import Reasoner
from gpu_engine.host.store import open_store, read_meta
from hypothesis import given, note, reject, settings
from reference import LimitExceeded, evaluate

from gpu_engine.ir import ProgramError

I64_MIN, I64_MAX = -(2**63), 2**63 - 1
U64_MAX = 2**64 - 1
_SHARED = locate_shared_dir()
SHARED = (_SHARED if _SHARED is not None else Path("/nonexistent")) / "conformance" / \
    "wider-souffle"


def rows(r: Reasoner, name: str) -> set[tuple]:
    t = r.relation(name)
    return set(zip(*(c.to_pylist() for c in t.columns)))


def run(text: str, bits: int = 64, device: str = "cpu") -> Reasoner:
    r = Reasoner(text, device=device, word_size=bits)
    r.materialise()
    return r


def cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(args))
    return rc, out.getvalue(), err.getvalue()


# --- arithmetic -----------------------------------------------------------------------------

ARITH = """
.decl a(x: number)
a(2147483647). a(-2147483648). a(9223372036854775807). a(-9223372036854775808). a(-7).
.decl inc(x: number, y: number)
inc(x, x + 1) :- a(x).
.decl mul(x: number, y: number)
mul(x, x * 3) :- a(x).
.decl dv(x: number, q: number, m: number)
dv(x, x / 3, x % 7) :- a(x).
.decl pw(x: number)
pw(2 ^ 62). pw(2 ^ 64). pw(3 ^ 40).
"""


def test_arithmetic_wraps_at_64_bits(device: str) -> None:
    r = run(ARITH, device=device)
    assert rows(r, "inc") == {(2147483647, 2147483648), (-2147483648, -2147483647),
                              (I64_MAX, I64_MIN), (I64_MIN, I64_MIN + 1), (-7, -6)}
    wrap = lambda v: (v + 2**63) % 2**64 - 2**63  # noqa: E731
    assert rows(r, "mul") == {(x, wrap(3 * x)) for x in (2147483647, -2147483648, I64_MAX,
                                                       I64_MIN, -7)}
    expect = set()
    for x in (2147483647, -2147483648, I64_MAX, I64_MIN, -7):
        q = abs(x) // 3 * (1 if x >= 0 else -1)
        expect.add((x, q, x - 7 * (abs(x) // 7 * (1 if x >= 0 else -1))))
    assert rows(r, "dv") == expect
    assert rows(r, "pw") == {(2**62,), (0,), (wrap(3**40),)}


def test_default_stays_32_bit(device: str) -> None:
    text = """
    .decl a(x: number)
    a(2147483647).
    .decl inc(x: number, y: number)
    inc(x, x + 1) :- a(x).
    .decl f(x: float)
    f(x) :- a(_), x = 1.0 / 3.0.
    """
    r = run(text, bits=32, device=device)
    assert rows(r, "inc") == {(2147483647, -2147483648)}
    assert r.relation("inc").schema.types == [pa.int32(), pa.int32()]
    assert r.render("f").strip() == "0.333333343"  # %.9g, as Soufflé's writers print
    r64 = run(text, bits=64, device=device)
    assert rows(r64, "inc") == {(2147483647, 2147483648)}
    assert r64.relation("inc").schema.types == [pa.int64(), pa.int64()]
    assert r64.render("f").strip() == "0.33333333333333331"  # %.17g
    with pytest.raises(ProgramError, match="out of the 32-bit range"):
        Reasoner(".decl a(x: number)\na(2147483648).", device="cpu")


def test_engine_matches_reference_on_64_bit_arithmetic(device: str) -> None:
    """Generated arithmetic (C-style / and %, ^, comparisons, bindings) over values near the
    64-bit limits equals the reference evaluator's 64-bit wrap-around."""

    @settings(max_examples=40)
    @given(program=arithmetic_programs(wide=True, bits=64))
    def check(program: Program) -> None:
        try:
            expected = evaluate(program, max_tuples=3000, bits=64)
        except LimitExceeded:
            reject()
        note(describe(program))
        r = Reasoner(render_program(program), device=device, word_size=64)
        for name, data in engine_facts(program).items():
            r.add_facts(name, data)
        r.materialise()
        for rel in program.relations:
            assert rows(r, rel.name) == expected[rel.name], rel.name

    check()


def test_generated_programs_are_unchanged_with_64_bit_words() -> None:
    """Random stratified programs (joins, negation, eqrel, symbols, small numbers) give the
    reference's results with 64-bit words too."""

    @settings(max_examples=40)
    @given(program=programs())
    def check(program: Program) -> None:
        try:
            expected = evaluate(program, max_tuples=3000, bits=64)
        except LimitExceeded:
            reject()
        note(describe(program))
        r = Reasoner(render_program(program), device="cpu", word_size=64)
        for name, data in engine_facts(program).items():
            r.add_facts(name, data)
        r.materialise()
        for rel in program.relations:
            got = rows(r, rel.name) if rel.arity else ({()} if r.relation_sizes()[rel.name]
                                                          else set())
            assert got == expected[rel.name], rel.name

    check()


def test_updates_keep_64_bit_aggregates_exact() -> None:
    """Incremental maintenance of a 64-bit aggregate (sum wrapping at 64 bits, unsigned
    max above 2^63) equals rematerialisation, for every algorithm."""
    text = """
    .decl v(g: number, x: number, u: unsigned)
    .decl s(g: number, t: number, m: unsigned)
    s(g, t, m) :- v(g, _, _), t = sum x : v(g, x, _), m = max u : v(g, _, u).
    .decl big(g: number)
    big(g) :- s(g, t, _), t < 0.
    """
    facts = [(1, I64_MAX, U64_MAX), (1, 5, 1), (2, 2**62, 2**63), (2, 2**62, 7), (3, -1, 0)]
    gone = [(1, 5, 1), (2, 2**62, 7)]
    new = [(3, I64_MIN, 2**64 - 2)]

    def table(rs: list[tuple]) -> pa.Table:
        return pa.table({"g": pa.array([r[0] for r in rs], pa.int64()),
                         "x": pa.array([r[1] for r in rs], pa.int64()),
                         "u": pa.array([r[2] for r in rs], pa.uint64())})

    fresh = Reasoner(text, device="cpu", word_size=64)
    fresh.add_facts("v", table([f for f in facts if f not in gone] + new))
    fresh.materialise()
    for algorithm in ("remat", "dred", "counting", "dredc", "bf", "bfc"):
        r = Reasoner(text, device="cpu", word_size=64, counting=True)
        r.add_facts("v", table(facts))
        r.materialise()
        r.update(insert={"v": table(new)}, delete={"v": table(gone)}, algorithm=algorithm)
        for name in ("s", "big"):
            assert rows(r, name) == rows(fresh, name), (algorithm, name)
    assert rows(fresh, "s") == {(1, I64_MAX, U64_MAX), (2, 2**62, 2**63),
                                (3, I64_MAX, 2**64 - 2)}


# --- bitwise functors ----------------------------------------------------------------------


def test_shifts_and_bitwise_use_64_bits(device: str) -> None:
    r = run("""
    .decl s(a: number, b: number, c: number, d: number, e: number, f: number)
    s(1 bshl 40, 1 bshl 63, -1 bshr 62, -1 bshru 60, 1 bshl 64, bnot 0).
    .decl v(x: number)
    v(1). v(40). v(63). v(64). v(65).
    .decl sh(x: number, y: number, z: number)
    sh(x, 1 bshl x, -8 bshr x) :- v(x).
    .decl u(a: unsigned, b: unsigned)
    u(18446744073709551615 bshr 4, 18446744073709551615 band 255).
    """, device=device)
    assert rows(r, "s") == {(2**40, I64_MIN, -1, 15, 1, -1)}
    # counts masked to the low 6 bits (RAM_BIT_SHIFT_MASK of the 64-bit build)
    assert rows(r, "sh") == {(1, 2, -4), (40, 2**40, -1), (63, I64_MIN, -1), (64, 1, -8),
                             (65, 2, -4)}
    assert rows(r, "u") == {(2**60 - 1, 255)}


@pytest.mark.skipif(not (SHARED / "semantic__bitwise").is_dir() or not shutil.which("cpp"),
                    reason="needs the wider Soufflé cases and cpp")
def test_souffle_bitwise_case_with_64_bit_words(tmp_path: Path) -> None:
    """Soufflé's semantic/bitwise test has a RAM_DOMAIN_SIZE == 64 branch that emulates
    32-bit shifts; run through cpp with RAM_DOMAIN_SIZE=64 its outputs are the same."""
    case = SHARED / "semantic__bitwise"
    rc, _, err = cli("run", str(case / "orig" / "bitwise.dl"), "--word-size", "64",
                     "-D", str(tmp_path), "--device", "cpu", "--quiet")
    assert rc == 0, err
    for expected in case.glob("*.csv"):
        got = (tmp_path / expected.name).read_text().splitlines()
        assert sorted(got) == sorted(expected.read_text().splitlines()), expected.name


# --- unsigned --------------------------------------------------------------------------------


def test_unsigned_64(device: str) -> None:
    r = run("""
    .decl u(x: unsigned)
    u(18446744073709551615). u(9223372036854775808). u(4294967296). u(1). u(0).
    .decl lt(x: unsigned, y: unsigned)
    lt(x, y) :- u(x), u(y), x < y, y <= 9223372036854775808.
    .decl ar(x: unsigned, d: unsigned, m: unsigned, s: unsigned)
    ar(x, x / 3, x % 10, x + 1) :- u(x).
    .decl mm(lo: unsigned, hi: unsigned, s: unsigned)
    mm(min x : u(x), max x : u(x), sum x : u(x)).
    .decl cv(i: number, f: float, back: unsigned)
    cv(utoi(x), utof(x), ftou(utof(x) / 2.0)) :- u(x), x > 4294967296.
    """, device=device)
    big = [U64_MAX, 2**63, 2**32, 1, 0]
    assert rows(r, "lt") == {(x, y) for x in big for y in big if x < y <= 2**63}
    assert rows(r, "ar") == {(x, x // 3, x % 10, (x + 1) % 2**64) for x in big}
    assert rows(r, "mm") == {(0, U64_MAX, (sum(big)) % 2**64)}
    assert rows(r, "cv") == {(-1, float(2**64), 2**63), (I64_MIN, float(2**63), 2**62)}
    assert r.relation("u").schema.types == [pa.uint64()]
    assert sorted(r.render("u").split()) == sorted(str(v) for v in big)


# --- floats ----------------------------------------------------------------------------------


def test_floats_are_doubles(device: str) -> None:
    r = run("""
    .decl f(x: float)
    f(0.1). f(16777217.0). f(3.141592653589793).
    .decl g(x: float, y: float, n: number)
    g(x, x * 3.0, ftoi(x * 100000000000.0)) :- f(x).
    .decl m(x: float, s: float)
    m(max x : f(x), sum x : f(x)).
    .decl r(x: float)
    r(x) :- x = range(0.0, 0.35, 0.1).
    .decl c(x: number)
    c(ftoi(itof(9007199254740993))).
    """, device=device)
    assert r.relation("f").schema.types == [pa.float64()]
    assert sorted(r.render("f").split()) == sorted(  # %.17g, as Soufflé 64-bit prints them
        ["0.10000000000000001", "16777217", "3.1415926535897931"])
    assert rows(r, "g") == {(x, x * 3.0, int(x * 1e11)) for x in (0.1, 16777217.0,
                                                                   3.141592653589793)}
    ((hi, total),) = rows(r, "m")
    assert hi == 16777217.0 and total == pytest.approx(16777220.241592653, rel=1e-15)
    x, vals = 0.0, set()
    while x < 0.35:  # Soufflé steps by repeated double addition
        vals.add((x,))
        x += 0.1
    assert rows(r, "r") == vals
    assert rows(r, "c") == {(9007199254740992,)}
    r32 = run(".decl f(x: float)\nf(16777217.0).", bits=32, device=device)
    assert r32.render("f").strip() == "16777216"


def test_to_number_and_friends_use_64_bits(device: str) -> None:
    r = run("""
    .decl s(t: symbol)
    s("9223372036854775807"). s("-9223372036854775808"). s("0x7fffffffffffffff").
    .decl n(x: number)
    n(to_number(t)) :- s(t).
    .decl u(x: unsigned)
    u(to_unsigned("18446744073709551615")).
    .decl f(x: float)
    f(to_float("0.1")).
    .decl t(x: symbol)
    t(to_string(x)) :- n(x).
    """, device=device)
    assert rows(r, "n") == {(I64_MAX,), (I64_MIN,)}
    assert rows(r, "u") == {(U64_MAX,)}
    assert rows(r, "f") == {(0.1,)}
    assert rows(r, "t") == {(str(I64_MAX),), (str(I64_MIN),)}
    bad = Reasoner('.decl n(x: number)\nn(to_number("9223372036854775808")).', device="cpu",
                   word_size=64)
    with pytest.raises(ProgramError, match="to_number"):
        bad.materialise()
    r32 = Reasoner('.decl n(x: number)\nn(to_number("2147483648")).', device="cpu")
    with pytest.raises(ProgramError, match="to_number"):
        r32.materialise()


# --- parsing limits --------------------------------------------------------------------------


def test_constants_are_checked_against_64_bits() -> None:
    ok = run(".decl a(x: number, u: unsigned)\n"
             "a(9223372036854775807, 18446744073709551615). a(-9223372036854775808, 0).\n"
             "a(0xFFFFFFFFFFFFFFFF, 0).")
    assert rows(ok, "a") == {(I64_MAX, U64_MAX), (I64_MIN, 0), (-1, 0)}
    with pytest.raises(ProgramError, match="out of the 64-bit range") as e:
        Reasoner(".decl a(x: number)\na(9223372036854775808).", device="cpu", word_size=64)
    assert e.value.loc is not None and e.value.loc.line == 2
    with pytest.raises(ProgramError, match="out of the 64-bit range"):
        Reasoner(".decl a(x: unsigned)\na(18446744073709551616).", device="cpu", word_size=64)


def test_fact_files_are_read_in_64_bits(tmp_path: Path) -> None:
    prog = tmp_path / "p.dl"
    prog.write_text(".decl a(x: number, u: unsigned, f: float)\n.input a\n"
                    ".decl b(x: number, u: unsigned, f: float)\n.output b\n"
                    "b(x, u, f) :- a(x, u, f).\n")
    facts = tmp_path / "in"
    facts.mkdir()
    (facts / "a.facts").write_text("9223372036854775807\t18446744073709551615\t0.1\n"
                                   "-9223372036854775808\t0x10\t1e300\n")
    rc, _, err = cli("run", str(prog), "-F", str(facts), "-D", str(tmp_path / "out"),
                     "--word-size", "64", "--device", "cpu", "--quiet")
    assert rc == 0, err
    got = set((tmp_path / "out" / "b.csv").read_text().splitlines())
    assert got == {f"{I64_MAX}\t{U64_MAX}\t0.10000000000000001",
                   f"{I64_MIN}\t16\t1.0000000000000001e+300"}
    (facts / "a.facts").write_text("1\t2\t0.5\n9223372036854775808\t1\t1.0\n")
    rc, _, err = cli("run", str(prog), "-F", str(facts), "-D", str(tmp_path / "out2"),
                     "--word-size", "64", "--device", "cpu", "--quiet")
    assert rc == 1 and "a.facts:2:1" in err and "out of range" in err
    (facts / "a.facts").write_text("1\t18446744073709551616\t0.5\n")
    rc, _, err = cli("run", str(prog), "-F", str(facts), "-D", str(tmp_path / "out3"),
                     "--word-size", "64", "--device", "cpu", "--quiet")
    assert rc == 1 and "a.facts:1:3" in err
    with pytest.raises(SystemExit):
        cli("run", str(prog), "-F", str(facts), "-D", str(tmp_path / "out4"), "--word-size", "48")


def test_add_facts_checks_64_bit_ranges() -> None:
    r = Reasoner(".decl a(x: number, u: unsigned)", device="cpu", word_size=64)
    r.add_facts("a", pa.table({"x": pa.array([I64_MIN, I64_MAX], pa.int64()),
                               "u": pa.array([0, U64_MAX], pa.uint64())}))
    r.materialise()
    assert rows(r, "a") == {(I64_MIN, 0), (I64_MAX, U64_MAX)}
    r32 = Reasoner(".decl a(x: number)", device="cpu")
    with pytest.raises(ProgramError, match="out of range"):
        r32.add_facts("a", np.array([[2**31]]))


# --- aggregates --------------------------------------------------------------------------------


def test_aggregates_use_64_bits(device: str) -> None:
    r = run("""
    .decl v(g: number, x: number)
    v(1, 9223372036854775807). v(1, 1). v(2, 4294967296). v(2, 4294967296). v(2, 3).
    .decl s(g: number, s: number, c: number, lo: number, hi: number, m: float)
    s(g, s, c, lo, hi, m) :- v(g, _), s = sum x : v(g, x), c = count : v(g, _),
        lo = min x : v(g, x), hi = max x : v(g, x), m = mean to_float(x) : v(g, x).
    """, device=device)
    assert rows(r, "s") == {(1, I64_MIN, 2, 1, I64_MAX, (I64_MAX + 1) / 2),
                            (2, 2**32 + 3, 2, 3, 2**32, (2**32 + 3) / 2)}


# --- store, update, export, query, explain -------------------------------------------------------

STORE_PROG = """
.decl e(x: number, y: number)
.input e
.decl p(x: number, y: number)
.output p
p(x, y) :- e(x, y).
p(x, z) :- p(x, y), e(y, z).
.decl w(x: number, u: unsigned, f: float)
.output w
w(x, itou(x) * 2, itof(x) / 3.0) :- p(x, _).
"""


def test_store_keeps_the_word_size(tmp_path: Path) -> None:
    prog = tmp_path / "p.dl"
    prog.write_text(STORE_PROG)
    facts = tmp_path / "in"
    facts.mkdir()
    big = 2**40
    (facts / "e.facts").write_text(f"{big}\t{big + 1}\n{big + 1}\t{big + 2}\n")
    store = tmp_path / "db"
    rc, _, err = cli("run", str(prog), "-F", str(facts), "-D", str(tmp_path / "o1"),
                     "--store", str(store), "--word-size", "64", "--device", "cpu", "--quiet")
    assert rc == 0, err
    assert read_meta(store)["word_size"] == 64
    ins = tmp_path / "ins"
    ins.mkdir()
    (ins / "e.facts").write_text(f"{big + 2}\t{2**62}\n")
    rc, _, err = cli("update", str(store), "--insert", str(ins), "-D", str(tmp_path / "o2"),
                     "--device", "cpu", "--quiet")
    assert rc == 0, err
    paths = set((tmp_path / "o2" / "p.csv").read_text().splitlines())
    assert f"{big}\t{2**62}" in paths and len(paths) == 6
    w = set((tmp_path / "o2" / "w.csv").read_text().splitlines())
    assert f"{big}\t{2 * big}\t{big / 3.0:.17g}" in w and len(w) == 3
    rc, _, err = cli("export", str(store), "-D", str(tmp_path / "o3"), "--device", "cpu")
    assert rc == 0, err
    assert (tmp_path / "o3" / "p.csv").read_text() == (tmp_path / "o2" / "p.csv").read_text()
    rc, out, err = cli("query", str(store), f"p({big}, X), X > {2**41}", "--device", "cpu")
    assert rc == 0, err
    assert out.split() == [str(2**62)]
    rc, out, err = cli("explain", str(store), f"p({big}, {2**62})", "--json", "--device", "cpu")
    assert rc == 0, err
    assert str(2**62) in json.loads(out)["fact"]
    r = open_store(store, device="cpu")
    assert r.word_size == 64 and r.relation("p").schema.types == [pa.int64(), pa.int64()]


def test_old_store_reads_as_32_bit(tmp_path: Path) -> None:
    r = Reasoner(STORE_PROG, device="cpu", counting=True)
    r.add_facts("e", np.array([[1, 2], [2, 3]]))
    from gpu_engine.host.store import _meta_crc, current_version, save_store

    save_store(r, tmp_path / "db")
    meta_path = tmp_path / "db" / current_version(tmp_path / "db") / "meta.json"
    meta = json.loads(meta_path.read_text())
    del meta["word_size"]  # as written before the option existed
    meta.pop("meta_crc32")
    meta["meta_crc32"] = _meta_crc(meta)
    meta_path.write_text(json.dumps(meta))
    back = open_store(tmp_path / "db", device="cpu")
    assert back.word_size == 32 and back.relation("p").schema.types == [pa.int32(), pa.int32()]


def test_parquet_columns_follow_the_word_size(tmp_path: Path) -> None:
    prog = tmp_path / "p.dl"
    prog.write_text(".decl a(x: number, u: unsigned, f: float)\n.output a(IO=parquet)\n"
                    "a(9223372036854775807, 18446744073709551615, 0.1).\n")
    rc, _, err = cli("run", str(prog), "-D", str(tmp_path / "o"), "--word-size", "64",
                     "--device", "cpu", "--quiet")
    assert rc == 0, err
    import pyarrow.parquet as pq

    t = pq.read_table(tmp_path / "o" / "a.parquet")
    # unsigned as decimal(20, 0): how Spark reads Parquet's UINT64
    assert t.schema.types == [pa.int64(), pa.decimal128(20, 0), pa.float64()]
    assert [int(v) for v in t.column("u").to_pylist()] == [U64_MAX]
    assert t.column("x").to_pylist() == [I64_MAX] and t.column("f").to_pylist() == [0.1]
    # and read back
    prog.write_text(".decl a(x: number, u: unsigned, f: float)\n.input a(IO=parquet)\n"
                    ".decl b(x: number, u: unsigned, f: float)\n.output b\nb(x, u, f) :- a(x, u, f).")
    rc, out, err = cli("run", str(prog), "-F", str(tmp_path / "o"), "-D", "-", "--word-size",
                       "64", "--device", "cpu", "--quiet")
    assert rc == 0, err
    assert f"{I64_MAX}\t{U64_MAX}\t0.10000000000000001" in out


def test_spark_backend_refuses_64_bit_words() -> None:
    with pytest.raises(ProgramError, match="32-bit words only"):
        Reasoner(".decl a(x: number)", backend="spark", spark=object(), word_size=64)


def test_preprocessor_sees_the_word_size(tmp_path: Path) -> None:
    if not shutil.which("cpp"):
        pytest.skip("needs cpp")
    prog = tmp_path / "p.dl"
    prog.write_text(".decl w(x: number)\n.output w\n#if RAM_DOMAIN_SIZE == 64\nw(64).\n"
                    "#else\nw(32).\n#endif\n")
    for bits in ("32", "64"):
        rc, out, err = cli("run", str(prog), "-D", "-", "--word-size", bits, "--device", "cpu",
                           "--quiet")
        assert rc == 0, err
        assert f"\n{bits}\n" in out


def test_ipv4_constants_follow_the_word_size() -> None:
    """Soufflé's IPv4 literals are numbers: 255.255.255.255 is -1 in 32 bits (its
    semantic/ipv4_1 case) and 4294967295 in 64 bits."""
    text = ".decl ip(n: number)\nip(255.255.255.255). ip(1.0.0.1).\n"
    assert rows(run(text, bits=32), "ip") == {(-1,), (16777217,)}
    assert rows(run(text, bits=64), "ip") == {(4294967295,), (16777217,)}


@pytest.mark.parametrize("io_kind", ["jsonfile", "sqlite"])
def test_json_and_sqlite_io_follow_the_word_size(tmp_path: Path, io_kind: str) -> None:
    """Values at the 64-bit limits go out and come back in through JSON and SQLite files
    (unsigned as the signed int of its bits, as Soufflé writes it)."""
    fname = "a.json" if io_kind == "jsonfile" else "db.sqlite"
    prog = tmp_path / "w.dl"
    prog.write_text(".decl a(x: number, u: unsigned, f: float)\n"
                    f'.output a(IO={io_kind}, filename="{fname}")\n'
                    "a(9223372036854775807, 18446744073709551615, 0.1).\n"
                    "a(-9223372036854775808, 9223372036854775808, 16777217.5).\n")
    rc, _, err = cli("run", str(prog), "-D", str(tmp_path / "o"), "--word-size", "64",
                     "--device", "cpu", "--quiet")
    assert rc == 0, err
    back = tmp_path / "r.dl"
    back.write_text(".decl a(x: number, u: unsigned, f: float)\n"
                    f'.input a(IO={io_kind}, filename="{fname}")\n'
                    ".decl b(x: number, u: unsigned, f: float)\n.output b\nb(x, u, f) :- a(x, u, f).\n")
    rc, out, err = cli("run", str(back), "-F", str(tmp_path / "o"), "-D", "-", "--word-size",
                       "64", "--device", "cpu", "--quiet")
    assert rc == 0, err
    if io_kind == "sqlite":  # floats are written as their bits and read as text (both sizes)
        out = "\n".join(line.rsplit("\t", 1)[0] for line in out.splitlines())
        assert f"{I64_MAX}\t{U64_MAX}" in out and f"{I64_MIN}\t{2**63}" in out
        return
    assert f"{I64_MAX}\t{U64_MAX}\t0.10000000000000001" in out
    # Soufflé's JSON writer prints floats at its stream's default precision, 6 digits
    assert f"{I64_MIN}\t{2**63}\t16777200" in out

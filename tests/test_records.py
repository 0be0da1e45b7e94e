"""Soufflé records and ADTs: constructors, patterns, nil, recursion, IO, store, updates."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_engine.host.cli import main
from gpu_engine.host.io import read_facts
from gpu_engine.host.lang.parser import parse_program
from gpu_engine.host.reasoner import Reasoner
from gpu_engine.host.store import open_store, save_store

from gpu_engine.ir import ProgramError


def lines(r: Reasoner, name: str) -> set[str]:
    return set(r.render(name).splitlines())


def run(text: str, **facts: list[tuple]) -> Reasoner:
    r = Reasoner(text, device="cpu")
    for name, rows in facts.items():
        r.add_facts(name, rows)
    r.materialise()
    return r


PAIRS = """
.type Pair = [a: number, b: symbol]
.decl p(x: Pair)
p([1, "a"]). p([2, "b"]). p(nil).
.decl q(x: number, y: symbol)
q(x, y) :- p([x, y]).
.decl first(x: number)
first(x) :- p([x, _]).
.decl notnil(x: Pair)
notnil(r) :- p(r), r != nil.
.decl anypair(x: number)
anypair(1) :- p([_, _]).
.decl swapped(x: Pair)
swapped([y + 10, s]) :- q(y, s).
.decl eq(x: number)
eq(x) :- p(r), r = [x, "b"].
"""


def test_constructors_patterns_nil() -> None:
    r = run(PAIRS)
    assert lines(r, "p") == {"[1, a]", "[2, b]", "nil"}
    assert lines(r, "q") == {"1\ta", "2\tb"}
    assert lines(r, "first") == {"1", "2"}
    assert lines(r, "notnil") == {"[1, a]", "[2, b]"}
    assert lines(r, "anypair") == {"1"}
    assert lines(r, "swapped") == {"[11, a]", "[12, b]"}
    assert lines(r, "eq") == {"2"}


def test_records_are_hash_consed() -> None:
    r = run(""".type P = [a: number, b: number]
    .decl e(x: number, y: number)
    .decl p(r: P) .decl s(r: P, t: P)
    p([x, y]) :- e(x, y).
    s(r, t) :- p(r), p(t), r = t.
    .decl same(x: number) same(1) :- p([1, 2]), p([1, 2]) , [1, 2] = [1, 2].
    same(2) :- _ = [1, 2], [[_], 3] = [[[4, 5]], 3].
    """, e=[(1, 2), (3, 4), (1, 2)])
    assert lines(r, "s") == {"[1, 2]\t[1, 2]", "[3, 4]\t[3, 4]"}
    assert lines(r, "same") == {"1", "2"}


LISTS = """
.type List = [head: number, tail: List]
.decl l(x: List)
l([1, nil]).
l([x + 1, [x, t]]) :- l([x, t]), x < 5.
.decl len(x: List, n: number)
len(nil, 0).
len([h, t], n + 1) :- l([h, t]), len(t, n).
len(t, n) :- l(r), r = [_, t], len(t, n).
.decl second(x: number)
second(y) :- l([_, [y, _]]).
"""


def test_recursive_lists_and_nested_patterns() -> None:
    r = run(LISTS)
    assert lines(r, "l") == {"[1, nil]", "[2, [1, nil]]", "[3, [2, [1, nil]]]",
                             "[4, [3, [2, [1, nil]]]]", "[5, [4, [3, [2, [1, nil]]]]]"}
    assert "[3, [2, [1, nil]]]\t3" in lines(r, "len")
    assert "nil\t0" in lines(r, "len")
    assert lines(r, "second") == {"1", "2", "3", "4"}


ADT = """
.type T = A {x: number} | B {} | C {t: T} | D {s: symbol, n: number}
.decl t(x: T)
t($A(1)). t($B()). t($C($A(2))). t($B). t($D("hi", 3)).
.decl a(x: number)
a(x) :- t($A(x)).
a(x) :- t($C($A(x))).
.decl c(x: T)
c(y) :- t($C(y)).
.decl d(s: symbol, n: number)
d(s, n) :- t($D(s, n)).
.decl isb(x: number)
isb(1) :- t($B).
.decl wrap(x: T)
wrap($C(x)) :- t(x), x != $B.
"""


def test_adts() -> None:
    r = run(ADT)
    assert lines(r, "t") == {"$A(1)", "$B", "$C($A(2))", "$D(hi, 3)"}
    assert lines(r, "a") == {"1", "2"}
    assert lines(r, "c") == {"$A(2)"}
    assert lines(r, "d") == {"hi\t3"}
    assert lines(r, "isb") == {"1"}
    assert lines(r, "wrap") == {"$C($A(1))", "$C($C($A(2)))", "$C($D(hi, 3))"}


def test_enum_adt_recursion() -> None:
    r = run(""".type Day = Mon {} | Tue {} | Wed {}
    .decl next(x: Day, y: Day)
    next($Mon, $Tue). next($Tue, $Wed).
    .decl before(x: Day, y: Day)
    before(x, y) :- next(x, y).
    before(x, z) :- next(x, y), before(y, z).""")
    assert lines(r, "before") == {"$Mon\t$Tue", "$Tue\t$Wed", "$Mon\t$Wed"}


def test_aliases_and_records_as_arguments() -> None:
    r = run(""".type P = [a: number, b: number]
    .type Q = P
    .type N <: number
    .type R = [p: Q, n: N]
    .decl r(x: R)
    r([[1, 2], 3]).
    .decl out(x: Q, y: number)
    out(p, n) :- r([p, n]).""")
    assert lines(r, "out") == {"[1, 2]\t3"}


@pytest.mark.parametrize("text, message", [
    (".type P = [a: number]\n.decl p(x: P)\np(1).", "numeric constant"),
    (".type P = [a: number]\n.decl p(x: P)\np([1, 2]).", "field(s)"),
    (".type P = [a: number]\n.decl p(x: P) .decl q(x: number)\nq(x) :- p(x).",
     "type mismatch"),
    (".type P = [a: number]\n.decl p(x: P) .decl q(x: P)\nq(x) :- p(x), p(y), x < y.",
     "ordering"),
    (".type T = A {x: number}\n.decl p(x: T)\np($Z(1)).", "unknown ADT branch"),
    (".type P = [a: number]\n.decl p(x: P) .decl q(x: number)\nq(x) :- !p([x, _]), q(x).",
     "'_'"),
    (".type P = [a: number, b: Nope]\n.decl p(x: P)", "unknown type"),
    (".type P = [a: number]\n.decl p(x: P) .decl q(x: P)\nq(m) :- m = min x : p(x).",
     "over records"),
])
def test_refused_with_location(text: str, message: str) -> None:
    with pytest.raises(ProgramError) as e:
        parse_program(text, "f.dl")
    assert message in str(e.value)
    assert e.value.loc is not None and e.value.loc.line > 0


def test_facts_files_and_output(tmp_path: Path) -> None:
    prog = tmp_path / "p.dl"
    prog.write_text(""".type Tup = [f: number, s: symbol]
    .type T = A {x: number} | B {s: symbol} | E {}
    .decl a(x: Tup, t: T)
    .input a
    .decl b(x: Tup, t: T, n: number)
    b(x, t, n) :- a(x, t), x = [n, _].
    .output b""")
    facts = tmp_path / "facts"
    facts.mkdir()
    (facts / "a.facts").write_text(
        '[1, meow meow]\t$A(0)\n[2, "q"]\t$B(Hegel)\nnil\t$E\n[ 3 ,x]\t$E()\n')
    out = tmp_path / "out"
    assert main(["run", str(prog), "-F", str(facts), "-D", str(out), "--quiet",
                 "--device", "cpu"]) == 0
    assert set((out / "b.csv").read_text().splitlines()) == {
        "[1, meow meow]\t$A(0)\t1", "[2, q]\t$B(Hegel)\t2", "[3, x]\t$E\t3"}
    # what is written reads back to the same values
    (facts / "a.facts").write_text((out / "b.csv").read_text().replace("\t1\n", "\n")
                                   .replace("\t2\n", "\n").replace("\t3\n", "\n"))
    r = Reasoner(prog, device="cpu")
    r.load_inputs(facts)
    assert lines(r, "b") == set((out / "b.csv").read_text().splitlines())


def test_bad_record_text_is_located(tmp_path: Path) -> None:
    r = Reasoner(".type P = [a: number, b: number]\n.decl a(x: P)\n.input a", device="cpu")
    (tmp_path / "a.facts").write_text("[1, 2]\n[1 2]\n")
    with pytest.raises(ProgramError) as e:
        read_facts(tmp_path / "a.facts", r.program.relations["a"], r.symbols)
    assert e.value.loc is not None and e.value.loc.line == 2


def test_store_round_trip_and_update(tmp_path: Path) -> None:
    text = """.type List = [head: number, tail: List]
    .decl e(x: number)
    .decl l(x: List)
    l([x, nil]) :- e(x).
    l([x, t]) :- e(x), l(t), t = [y, _], y < x.
    .decl heads(x: number)
    heads(h) :- l([h, _])."""
    r = run(text, e=[(1,), (2,)])
    before = lines(r, "l")
    assert before == {"[1, nil]", "[2, nil]", "[2, [1, nil]]"}
    save_store(r, tmp_path / "s")
    s = open_store(tmp_path / "s", device="cpu")
    assert lines(s, "l") == before
    s.update(insert={"e": [(3,)]})  # makes new records
    after = lines(s, "l")
    assert after == before | {"[3, nil]", "[3, [1, nil]]", "[3, [2, nil]]",
                              "[3, [2, [1, nil]]]"}
    fresh = run(text, e=[(1,), (2,), (3,)])
    assert lines(fresh, "l") == after
    s.update(delete={"e": [(1,)]})
    assert lines(s, "l") == {"[2, nil]", "[3, nil]", "[3, [2, nil]]"}
    save_store(s, tmp_path / "s")
    assert lines(open_store(tmp_path / "s", device="cpu"), "l") == lines(s, "l")


def test_record_texts_in_the_api_and_failed_update_rollback() -> None:
    r = run(""".type P = [a: number, b: symbol]
    .decl p(x: P)
    .decl q(x: number)
    q(x) :- p([x, _]).""")
    r.update(insert={"p": [["[1, a]"], ["[2, b]"]]})
    assert lines(r, "q") == {"1", "2"}
    assert r.relation("p").column(0).to_pylist() == ["[1, a]", "[2, b]"] or set(
        r.relation("p").column(0).to_pylist()) == {"[1, a]", "[2, b]"}
    size = len(r.symbols.records)
    with pytest.raises(ProgramError):
        r.update(insert={"p": [["[5, new]"]], "nope": [[1]]})
    assert len(r.symbols.records) == size
    r.update(delete={"p": [["[1, a]"]]})
    assert lines(r, "q") == {"2"}


ALGO_PROGRAM = """.type List = [head: number, tail: List]
.type T = A {x: number} | B {l: List}
.decl e(x: number, y: number)
.decl path(x: number, l: List)
path(y, [x, nil]) :- e(x, y).
path(z, [y, l]) :- path(y, l), e(y, z), l = [h, _], h < y.
.decl t(x: T)
t($A(x)) :- path(x, _).
t($B(l)) :- path(_, l), !e(1, 5), !e(x, x + 1), e(x, _), x > 100.
t($B(l)) :- path(_, l), !e(1, 5).
.decl heads(h: number)
heads(h) :- path(_, [h, _]).
"""


@pytest.mark.parametrize("algorithm", ["remat", "dred", "dredc", "bf", "bfc"])
def test_incremental_algorithms_match_rematerialisation(algorithm: str) -> None:
    edges = [(1, 2), (2, 3), (3, 4), (4, 1), (2, 5)]
    r = Reasoner(ALGO_PROGRAM, device="cpu", counting=algorithm in ("dredc", "bfc"))
    r.add_facts("e", edges)
    r.materialise()
    r.update(insert={"e": [(1, 5), (5, 6)]}, delete={"e": [(2, 3)]}, algorithm=algorithm)
    mid = run(ALGO_PROGRAM, e=[(1, 2), (3, 4), (4, 1), (2, 5), (1, 5), (5, 6)])
    for name in ("path", "t", "heads"):
        assert lines(r, name) == lines(mid, name)
    r.update(delete={"e": [(1, 5)]}, insert={"e": [(2, 3)]}, algorithm=algorithm)
    fresh = run(ALGO_PROGRAM, e=[*edges, (5, 6)])
    for name in ("path", "t", "heads"):
        assert lines(r, name) == lines(fresh, name)


def test_negated_record_constructors_and_ord() -> None:
    r = run(""".type P = [a: number, b: number]
    .decl e(x: number, y: number)
    e(1, 2). e(2, 3). e(3, 3).
    .decl p(r: P)
    p([x, y]) :- e(x, y), x != y.
    .decl n(x: number, y: number)
    n(x, y) :- e(x, y), !p([x, y]).
    .decl m(x: number)
    m(x) :- e(x, _), !p([x, x + 1]).
    .decl o(x: number)
    o(ord(r)) :- p(r).""")
    assert lines(r, "n") == {"3\t3"}
    assert lines(r, "m") == {"3"}
    assert len(lines(r, "o")) == 2


@pytest.mark.spark
def test_spark_backend_refuses_record_rules(spark) -> None:
    text = """.type P = [a: number, b: number]
    .decl e(x: number, y: number)
    .decl p(r: P)
    p([x, y]) :- e(x, y)."""
    with pytest.raises(ProgramError) as e:
        r = Reasoner(text, backend="spark", spark=spark)
        r.add_facts("e", [(1, 2)])
        r.materialise()
    assert "records" in str(e.value)


def test_float_unsigned_fields_and_arrow_tables() -> None:
    import pyarrow as pa
    from gpu_engine.host.io import encode_table

    r = run(""".type F = [f: float, u: unsigned, s: symbol]
    .decl p(x: F)
    p([1.5, 7u, "x y"]).
    .decl q(f: float)
    q(f) :- p([f, _, _]).""")
    assert lines(r, "p") == {"[1.5, 7, x y]"}
    assert lines(r, "q") == {"1.5"}
    table = r.relation("p")
    assert table.column(0).to_pylist() == ["[1.5, 7, x y]"]
    cols, n = encode_table(pa.table({"x": ["[2.5, 1, z]"]}), r.program.relations["p"],
                           r.symbols, "test")
    r.add_facts("p", pa.table({"x": ["[2.5, 1, z]"]}))
    assert n == 1 and lines(r, "q") == {"1.5", "2.5"}


def test_queries_over_records() -> None:
    r = run(PAIRS)
    res = r.query("p(r)")
    assert set(res.column(0).to_pylist()) == {"[1, a]", "[2, b]", "nil"}
    res = r.query('p([x, "b"])')
    assert res.column(0).to_pylist() == [2]
    a = run(ADT)
    assert set(a.query("t($C(y))").column(0).to_pylist()) == {"$A(2)"}


def test_records_in_aggregates() -> None:
    """Record-typed group keys and bodies (Soufflé's example__rewrite shape), a record
    witness of min, and records inside a materialised body."""
    r = run("""
    .type E = [op: symbol, arg: number]
    .decl size(e: E, n: number)
    size(["a", 1], 3). size(["a", 2], 1). size(["b", 1], 2).
    .decl same(e: E, f: E)
    same(e, f) :- size(e, _), size(f, _), e != f.
    .decl best(e: E, n: number)
    best(e, m) :- size(e, _), m = min n : { same(e, f), size(f, n) }.
    .decl smallest(e: E, n: number)
    smallest(e, m) :- m = min n : size(e, n).
    .decl kinds(k: symbol, c: number)
    kinds(k, c) :- size([k, _], _), c = count : { size([k, x], _), x > 0 }.
    """)
    assert lines(r, "best") == {"[a, 1]\t1", "[a, 2]\t2", "[b, 1]\t1"}
    assert lines(r, "smallest") == {"[a, 2]\t1"}
    assert lines(r, "kinds") == {"a\t2", "b\t1"}


def test_subsumption_with_record_patterns() -> None:
    r = run("""
    .type I = [lb: number, ub: number]
    .decl v(n: number, i: I)
    v(n, [a, b]) <= v(n, [c, d]) :- a >= c, b <= d.
    v(1, [2, 3]). v(1, [1, 5]). v(2, [0, 0]). v(1, [0, 4]).
    """)
    assert lines(r, "v") == {"1\t[1, 5]", "1\t[0, 4]", "2\t[0, 0]"}


def test_untyped_record_literals() -> None:
    """Comparisons of record literals without a declared type are decided by unification
    (Soufflé's semantic__type_system_records)."""
    r = run("""
    .decl b(x: number)
    b(a) :- [a, a] = [2, 2], [3] = [3].
    b(a) :- [1, a] = [2, 4].
    b(5) :- [1, "3", 5] != [2, "3", 5].
    b(6) :- [] != [].
    b(7) :- _ = [1], [[_], 3] = [[[1]], 3].
    b(c) :- a = [1, [x, c]], [1, y] = a, y = [8, 9], x = 8.
    b(x) :- a = [10, 2], b = a, c = b, c = [10, x], x != 3.
    b(a) :- b(a), [[a, 1]] != [[5, 1]], a < 3.
    .type P = [x: number, y: number]
    .decl p(r: P)
    p(r) :- r = [1, 2].
    p(r) :- b(x), x > 8, r = [x, x].
    """)
    assert lines(r, "b") == {"2", "5", "7", "9"}
    assert lines(r, "p") == {"[1, 2]", "[9, 9]"}


def test_fields_packed_after_the_record_print() -> None:
    """A record whose tuple was packed earlier for another type of the same arity has an
    id below its fields' (``[1, 2]`` of P is the outer ``[1, <[2, nil]>]`` of L); nested
    records of one family share ids; both print fields first, as Soufflé's
    WriteStream::outputRecord unpacks recursively."""
    r = run(""".type P = [a: number, b: number]
.type L = [h: number, t: L]
.type Q = [x: number, y: number]
.type R = [q: Q, z: number]
.type N = Z {} | S {n: N}
.decl a(p: P)
a([1, 2]).
.decl ls(l: L)
ls([1, [2, nil]]).
.decl s(r: R)
s([[1, 5], 5]).
.decl nat(n: N)
nat($S($S($Z))).
""")
    assert lines(r, "ls") == {"[1, [2, nil]]"}
    assert lines(r, "s") == {"[[1, 5], 5]"}
    assert lines(r, "nat") == {"$S($S($Z))"}


def test_fields_packed_after_the_record_in_json(tmp_path: Path) -> None:
    prog = tmp_path / "p.dl"
    prog.write_text(""".type Q = [x: number, y: number]
.type R = [q: Q, z: number]
.decl s(r: R)
.output s(IO=jsonfile, filename="s.json")
s([[1, 5], 5]).
""", encoding="utf-8")
    assert main(["run", str(prog), "-D", str(tmp_path), "--quiet"]) == 0
    assert (tmp_path / "s.json").read_text(encoding="utf-8") == "[[[[1, 5], 5]]]\n"


def test_a_record_field_named_twice_is_an_error() -> None:
    """Soufflé's semantic check: "Doubly defined field name a in definition of type V"."""
    with pytest.raises(ProgramError, match="doubly defined field name 'a'") as e:
        Reasoner(".type V = [a: number, a: number]\n.decl r(v: V)\nr([1, 2]).\n", device="cpu")
    assert (e.value.loc.line, e.value.loc.column) == (1, 23)

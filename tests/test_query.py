"""Queries over a materialisation: ``Reasoner.query`` and ``gpu-engine query``.

The judge for generated queries is the naive reference evaluator (``reference.solve``) run
on the relations the engine exports; hand-written cases cover every kind of constant,
negation, comparisons, functors, alternatives, errors with their locations, the CLI's
output formats and a query on a store after ``update``.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from generators import (
    NUMBER,
    Atom,
    Bind,
    Cmp,
    Const,
    Literal,
    Neg,
    Program,
    Row,
    _body_atom,
    _cmp,
    _expr,
    _filter_atom,
    _Scope,
    describe,
    engine_facts,
    programs,
    render_literal,
    render_program,
)
from gpu_engine.host.cli import main
from hypothesis import event, given, note, reject, settings
from hypothesis import strategies as st
from reference import LimitExceeded, evaluate, solve

from gpu_engine import ProgramError, Reasoner
from gpu_engine import runs as runs_mod

PROGRAM = """
.type Name <: symbol
.decl edge(a:number, b:number)
.decl path(a:number, b:number)
.decl lab(x:number, s:Name, f:float, u:unsigned)
.decl flag()
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
edge(1, 2). edge(2, 3). edge(3, 4). edge(4, 1). edge(5, 6).
lab(1, "one", 1.5, 10). lab(2, "two", 2.25, 20). lab(3, "three", -0.5, 4000000000).
flag().
"""


@pytest.fixture(scope="module")
def r() -> Reasoner:
    reasoner = Reasoner(PROGRAM, device="cpu")
    reasoner.materialise()
    return reasoner


def rows(table: pa.Table) -> list[tuple]:
    return list(zip(*(c.to_pylist() for c in table.columns), strict=True))


# --- answers --------------------------------------------------------------------------------


def test_join_columns_in_order_of_first_appearance(r: Reasoner) -> None:
    t = r.query("path(1, X), edge(X, Y)")
    assert t.column_names == ["X", "Y"]
    assert rows(t) == [(1, 2), (2, 3), (3, 4), (4, 1)]
    t = r.query("edge(Y, X), path(X, Z), Z = 1")
    assert t.column_names == ["Y", "X", "Z"]
    assert rows(t) == [(1, 2, 1), (2, 3, 1), (3, 4, 1), (4, 1, 1)]


def test_set_semantics_and_wildcards(r: Reasoner) -> None:
    t = r.query("path(X, _)")  # five facts per X in 1..4, one for 5: distinct X only
    assert rows(t) == [(1,), (2,), (3,), (4,), (5,)]
    assert rows(r.query("path(X, _), path(_, X)")) == [(1,), (2,), (3,), (4,)]


def test_negation(r: Reasoner) -> None:
    assert rows(r.query("path(1, X), !edge(X, 3)")) == [(1,), (3,), (4,)]
    assert rows(r.query("edge(X, Y), !path(Y, _)")) == [(5, 6)]
    assert rows(r.query("edge(X, Y), !path(Y, X)")) == [(5, 6)]
    assert rows(r.query("lab(X, _, _, _), !edge(_, X + 2)")) == [(3,)]  # nothing reaches 5


def test_comparisons(r: Reasoner) -> None:
    assert rows(r.query("path(X, Y), X < Y, Y != 3")) == [(1, 2), (1, 4), (2, 4), (3, 4), (5, 6)]
    assert rows(r.query("path(X, Y), X = Y")) == [(1, 1), (2, 2), (3, 3), (4, 4)]
    assert rows(r.query('lab(X, S, F, _), F >= 1.5, S != "two"')) == [(1, "one", 1.5)]
    assert rows(r.query("lab(X, _, _, U), U > 100u")) == [(3, 4000000000)]


def test_constants_of_every_type_and_decoded_types(r: Reasoner) -> None:
    t = r.query('lab(X, "two", F, U)')
    assert rows(t) == [(2, 2.25, 20)]
    assert t.schema.types == [pa.int32(), pa.float32(), pa.uint32()]
    assert rows(r.query("lab(X, S, 2.25, _)")) == [(2, "two")]
    assert rows(r.query("lab(X, S, -0.5, 4000000000)")) == [(3, "three")]
    assert rows(r.query("lab(X, S, _, 0xA)")) == [(1, "one")]
    t = r.query("lab(X, S, F, U)")
    assert t.schema.types == [pa.int32(), pa.string(), pa.float32(), pa.uint32()]
    assert rows(t)[2] == (3, "three", -0.5, 4000000000)


def test_functors_bindings_and_alternatives(r: Reasoner) -> None:
    assert rows(r.query("path(1, X), Y = X * 2, Y > 4")) == [(3, 6), (4, 8)]
    assert rows(r.query("edge(X, Y), edge(X + 1, Z)")) == [(1, 2, 3), (2, 3, 4), (3, 4, 1),
                                                            (4, 1, 6)]
    t = r.query('lab(X, S, _, _), T = cat(S, "!"), strlen(T) = 4')
    assert rows(t) == [(1, "one", "one!"), (2, "two", "two!")]
    assert rows(r.query("edge(X, 2) ; edge(2, X)")) == [(1,), (3,)]
    assert rows(r.query('lab(X, S, _, _), S = as("one", Name)')) == [(1, "one")]
    assert rows(r.query("path(1, X), X > 9 ; edge(X, 6)")) == [(5,)]


def test_variable_free_queries_answer_one_boolean(r: Reasoner) -> None:
    for text, holds in [("path(1, 4)", True), ("path(1, 6)", False), ("flag()", True),
                        ("path(1, _), !edge(_, 5)", True), ("edge(5, 6), 1 > 2", False),
                        ('lab(_, "nobody", _, _)', False)]:
        t = r.query(text)
        assert t.column_names == ["holds"] and rows(t) == [(holds,)], text


def test_limit_and_empty_answers(r: Reasoner) -> None:
    assert rows(r.query("path(X, Y)", limit=2)) == [(1, 1), (1, 2)]
    t = r.query('lab(X, "nobody", F, _)')
    assert t.num_rows == 0 and t.schema.types == [pa.int32(), pa.float32()]
    with pytest.raises(ValueError):
        r.query("path(X, Y)", limit=-1)


def test_query_changes_nothing(r: Reasoner) -> None:
    sizes = r.relation_sizes()
    n_symbols = len(r.symbols)
    runs = [run for rs in r.engine.store.values() for run in rs.runs]
    before = [set(run._indexes) for run in runs]
    r.query('lab(X, "nobody", _, _)')  # unknown symbol constants: not added
    assert rows(r.query('lab(X, S, _, _), !lab(X, "nobody", _, _), X < 2')) == [(1, "one")]
    assert len(r.symbols) == n_symbols and r.symbols.find("nobody") is None
    r.query('lab(X, S, _, _), T = cat(S, "-new")')  # new symbols, dropped again
    r.query("path(3, X), edge(X, 2), lab(X, _, _, 20)")  # constant-filtered indexes
    assert len(r.symbols) == n_symbols and r.symbols.find("one-new") is None
    assert r.relation_sizes() == sizes and r.engine.materialised
    for run, keys in zip(runs, before, strict=True):
        assert {k for k in run._indexes if k[1]} <= keys


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("path(1, X", "1:10", "unexpected end of the query"),
        ("path(1, X))", "1:11", "syntax error"),
        ("nope(X)", "1:1", "undeclared relation 'nope'"),
        ("path(1, X), edge(X, Y, Z)", "1:13", "arity mismatch"),
        ("path(1, X), !edge(X, Z)", "1:22", "unsafe variable 'Z'"),
        ("path(1, X), Y < 3", "1:13", "unsafe variable 'Y'"),
        ('path("a", X)', "1:6", "type mismatch"),
        ("lab(X, S, F, _), S = F", "1:20", "type mismatch"),
        ("path(X, Y), X < 1.5", "1:15", "type mismatch in comparison"),
        ("edge(X, Y) ; edge(X, Z)", "1:22", "every alternative"),
        ("path(1, X).\nedge(X, Y)", "2:1", "one rule body"),
        ("path(1, X),\n  edge(X, Y, 1)", "2:3", "arity mismatch"),
        ("", "1:1", "empty query"),
        ("path(X, Y), X = count : { edge(_, _) }", "1:17", "aggregate"),
        ("lab(X, S, _, _), S = as(X, Nope)", "1:28", "unknown type 'Nope'"),
    ],
)
def test_errors_are_located_in_the_query(r: Reasoner, text: str, where: str,
                                         message: str) -> None:
    with pytest.raises(ProgramError) as e:
        r.query(text)
    assert str(e.value.loc) == f"<query>:{where}", str(e.value)
    assert message in e.value.message


def test_relations_computed_on_demand_are_refused() -> None:
    r = Reasoner("""
        .pragma "magic-transform" "*"
        .decl edge(a:number, b:number)
        .decl path(a:number, b:number)
        .decl q(b:number)
        .output q
        edge(1, 2). edge(2, 3). edge(5, 6).
        path(x, y) :- edge(x, y).
        path(x, z) :- path(x, y), edge(y, z).
        q(y) :- path(1, y).
    """, device="cpu")
    assert rows(r.query("q(X)")) == [(2,), (3,)]
    assert rows(r.query("edge(X, 6)")) == [(5,)]
    with pytest.raises(ProgramError) as e:
        r.query("edge(X, _), path(X, Y)")
    assert str(e.value.loc) == "<query>:1:13" and "magic-transform" in e.value.message


# --- generated queries against the naive evaluation ------------------------------------------

MAX_TUPLES = 2000


@st.composite
def queries(draw: st.DrawFn, program: Program) -> tuple[str, list[tuple[Literal, ...]]]:
    """A query over any relations of ``program``: atoms (constants, variables, ``_``),
    a binding, comparisons, negations of any relation and sometimes alternatives.
    Returns its text and its conjunctions (for the reference)."""
    rels = program.relations
    scope = _Scope()
    body: list[Literal] = []
    for _ in range(draw(st.integers(1, 3))):
        body.append(_body_atom(draw, scope, draw(st.sampled_from(rels)), fresh_ok=True))
    if scope.bound[NUMBER] and draw(st.integers(0, 2)) == 0:
        expr = _expr(draw, scope, 2)
        body.append(Bind(scope.fresh(NUMBER), expr, draw(st.booleans())))
    for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
        if (cmp := _cmp(draw, scope)) is not None:
            body.append(cmp)
    for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
        body.append(Neg(_filter_atom(draw, scope, draw(st.sampled_from(rels)))))
    body.extend(scope.guards)
    body = list(draw(st.permutations(body)))
    text = ", ".join(render_literal(lit) for lit in body)
    conjunctions = [tuple(body)]
    if draw(st.integers(0, 4)) == 0:
        alts = []
        for _ in range(2):
            kind = draw(st.integers(0, 2))
            rel = draw(st.sampled_from(rels))
            alts.append(_filter_atom(draw, scope, rel) if kind == 0 else
                        Neg(_filter_atom(draw, scope, rel)) if kind == 1 else
                        _cmp(draw, scope) or Cmp("=", Const(1), Const(1)))
        text += ", (" + " ; ".join(render_literal(a) for a in alts) + ")"
        conjunctions = [(*body, a) for a in alts]
    return text, conjunctions


def _first_appearance(text: str, names: set[str]) -> list[str]:
    return sorted(names, key=lambda v: re.search(rf"(?<![\w\"]){v}(?![\w\"])", text).start())


@settings(max_examples=60)
@given(programs(max_relations=4, max_rules=5, max_facts=12), st.data())
def test_generated_queries_equal_the_naive_evaluation(program: Program,
                                                      data: st.DataObject) -> None:
    try:
        evaluate(program, max_tuples=MAX_TUPLES)
    except LimitExceeded:
        reject()
    note(describe(program))
    reasoner = Reasoner(render_program(program), device="cpu", counting=True)
    for name, facts in engine_facts(program).items():
        reasoner.add_facts(name, facts)
    reasoner.materialise()
    gone = {name: data.draw(st.lists(st.sampled_from(facts), max_size=4), label=f"delete {name}")
            for name, facts in program.facts.items() if facts and data.draw(st.booleans())}
    if gone:  # relations keep tombstones and several runs (never rewritten as one)
        saved = (runs_mod.COMPACT_SHARE, runs_mod.MAX_RUNS, runs_mod.SMALL)
        runs_mod.COMPACT_SHARE, runs_mod.MAX_RUNS, runs_mod.SMALL = 0, 1 << 30, 1
        try:
            reasoner.update(delete={n: pa.table({f"a{i}": [row[i] for row in rs]
                                                 for i in range(len(rs[0]))})
                                    for n, rs in gone.items() if rs})
        finally:
            runs_mod.COMPACT_SHARE, runs_mod.MAX_RUNS, runs_mod.SMALL = saved
    event(f"tombstones: {any(rs.dead for rs in reasoner.engine.store.values())}")
    db: dict[str, set[Row]] = {}
    for rel in program.relations:  # the exported relations are the naive query's input
        t = reasoner.relation(rel.name)
        db[rel.name] = ({()} if t.num_rows else set()) if rel.arity == 0 else set(rows(t))
    for _ in range(3):
        text, conjunctions = data.draw(queries(program))
        note(f"query: {text}")
        named: set[str] = set()
        expected: list[dict] = []
        for conj in conjunctions:
            try:
                envs, _ = solve(conj, db, limit=20_000)
            except LimitExceeded:
                reject()
            expected.extend(envs)
            named |= {v for lit in conj for v in _vars(lit)}
        order = _first_appearance(text, named)
        got = reasoner.query(text)
        event(f"answers: {'some' if expected else 'none'}; negation: {'!' in text}")
        if not order:
            assert rows(got) == [(bool(expected),)]
            continue
        assert got.column_names == order
        want = {tuple(env[v] for v in order) for env in expected}
        got_rows = rows(got)
        assert len(got_rows) == len(set(got_rows))
        assert set(got_rows) == want


def _vars(lit: Literal) -> set[str]:
    from reference import term_vars

    if isinstance(lit, Neg):
        lit = lit.atom
    if isinstance(lit, Atom):
        return set().union(*(term_vars(a) for a in lit.args)) if lit.args else set()
    if isinstance(lit, Bind):
        return {lit.var.name} | term_vars(lit.expr)
    return term_vars(lit.left) | term_vars(lit.right)


# --- the command line -----------------------------------------------------------------------


def _cli(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(list(argv))
    return rc, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("query")
    (d / "prog.dl").write_text(PROGRAM.replace("edge(1, 2). edge(2, 3). edge(3, 4). "
                                               "edge(4, 1). edge(5, 6).", ".input edge"))
    facts = d / "facts"
    facts.mkdir()
    (facts / "edge.facts").write_text("1\t2\n2\t3\n3\t4\n4\t1\n5\t6\n")
    rc, _, err = _cli("run", str(d / "prog.dl"), "-F", str(facts), "-D", str(d / "out"),
                      "--store", str(d / "store"), "--device", "cpu", "--quiet")
    assert rc == 0, err
    return d / "store"


def test_cli_formats(store: Path) -> None:
    q = "lab(X, S, F, U), X < 3"
    rc, out, _ = _cli("query", str(store), q, "--device", "cpu")
    assert rc == 0 and out == "1\tone\t1.5\t10\n2\ttwo\t2.25\t20\n"
    rc, out, _ = _cli("query", str(store), q, "--header", "--format", "tsv")
    assert out.splitlines()[0] == "X\tS\tF\tU"
    rc, out, _ = _cli("query", str(store), 'lab(X, S, _, _), T = cat(S, ",\\"x")',
                      "--format", "csv", "--header", "--limit", "1")
    assert out == 'X,S,T\n1,one,"one,""x"\n'
    rc, out, _ = _cli("query", str(store), q, "--format", "json")
    assert json.loads(out) == [{"X": 1, "S": "one", "F": 1.5, "U": 10},
                               {"X": 2, "S": "two", "F": 2.25, "U": 20}]
    rc, out, _ = _cli("query", str(store), "path(1, 5)")
    assert (rc, out) == (0, "false\n")
    rc, out, _ = _cli("query", str(store), "path(1, 4)", "--format", "json")
    assert json.loads(out) == [{"holds": True}]
    rc, out, err = _cli("query", str(store), "path(X, Y)", "--limit", "3", "--stats")
    assert out.count("\n") == 3 and "query answered in" in err


def test_cli_errors(store: Path, tmp_path: Path) -> None:
    rc, out, err = _cli("query", str(store), "path(1, X), !edge(X, Z)")
    assert rc == 1 and out == "" and err.startswith("<query>:1:22: unsafe variable 'Z'")
    rc, _, err = _cli("query", str(tmp_path / "none"), "path(1, X)")
    assert rc == 1 and "does not exist" in err


def test_query_after_update(store: Path, tmp_path: Path) -> None:
    ins = tmp_path / "ins"
    ins.mkdir()
    (ins / "edge.facts").write_text("6\t7\n")
    dele = tmp_path / "del"
    dele.mkdir()
    (dele / "edge.facts").write_text("4\t1\n")
    rc, _, err = _cli("update", str(store), "--insert", str(ins), "--delete", str(dele),
                      "--device", "cpu", "--quiet")
    assert rc == 0, err
    rc, out, _ = _cli("query", str(store), "path(X, 7)")
    assert out == "5\n6\n"
    rc, out, _ = _cli("query", str(store), "path(1, X), !path(X, X)")
    assert out == "2\n3\n4\n"
    from gpu_engine.host.store import open_store

    r = open_store(store, device="cpu")
    r.update(insert={"edge": np.array([[7, 5]])})  # in memory: tombstones, several runs
    assert rows(r.query("path(5, X), path(X, 5)")) == [(5,), (6,), (7,)]
    r.update(delete={"edge": np.array([[1, 2]])})
    assert rows(r.query("path(1, X)")) == []
    assert rows(r.query("edge(X, Y), !path(Y, _)")) == [(3, 4)]


def test_query_reads_the_current_side_of_a_host_twin(monkeypatch: pytest.MonkeyPatch) -> None:
    """After a small update on a (GPU) engine's host twin, a query reads the twin and does
    not copy anything back to the device (here the twin path is forced on the CPU)."""
    monkeypatch.setenv("GPU_ENGINE_HOST_UPDATES", "always")
    r = Reasoner(PROGRAM, device="cpu", counting=True)
    r.materialise()
    r.update(insert={"edge": np.array([[6, 7]])}, delete={"edge": np.array([[4, 1]])})
    assert r.engine._host_reads() is not None
    assert rows(r.query("path(5, X)")) == [(6,), (7,)]
    assert rows(r.query("path(X, X)")) == []
    assert r.engine._host_reads() is not None  # still on the twin: nothing synchronised


def test_constants_over_relations_with_tombstones() -> None:
    saved = (runs_mod.COMPACT_SHARE, runs_mod.MAX_RUNS, runs_mod.SMALL)
    runs_mod.COMPACT_SHARE, runs_mod.MAX_RUNS, runs_mod.SMALL = 0, 1 << 30, 1
    try:
        r = Reasoner(PROGRAM, device="cpu", counting=True)
        r.materialise()
        r.update(delete={"edge": np.array([[1, 2], [5, 6]])})
        r.update(insert={"edge": np.array([[1, 2]])})  # back: its tombstone is lifted
        r.update(delete={"edge": np.array([[1, 2]])})
        assert r.engine.store["edge"].dead and r.engine.store["path"].dead
    finally:
        runs_mod.COMPACT_SHARE, runs_mod.MAX_RUNS, runs_mod.SMALL = saved
    sets = [x for rs in r.engine.store.values() for x in (*rs.runs, *rs.dead)]
    before = [set(x._indexes) for x in sets]
    assert rows(r.query("edge(1, X)")) == []
    assert rows(r.query("edge(X, 3)")) == [(2,)]
    assert rows(r.query("path(X, 6)")) == [] and rows(r.query("path(1, X)")) == []
    assert rows(r.query("path(2, X), path(X, 1)")) == [(3,), (4,)]
    assert rows(r.query("path(X, 1), !path(X, 2)")) == [(2,), (3,), (4,)]
    assert rows(r.query("path(X, Y), !path(Y, 2), !edge(X, 3)")) == [(3, 1), (3, 4), (4, 1)]
    for x, keys in zip(sets, before, strict=True):  # no index filtered by a query constant
        assert {k for k in x._indexes if k[1]} <= keys


def test_symbol_table_truncate_keeps_the_first_symbols() -> None:
    from gpu_engine.host.dictionary import SymbolTable

    for cut in (0, 1, 3, 4, 5, 6):
        t = SymbolTable()
        t.encode_many(["a", "b", "c"])
        t.encode("d")
        t.encode_many(["e", "a", "f"])
        t.truncate(cut)
        kept = ["a", "b", "c", "d", "e", "f"][:cut]
        assert len(t) == cut and t.values().to_pylist() == kept
        assert [t.find(s) for s in "abcdef"] == [*range(cut), *[None] * (6 - cut)]
        assert t.encode("z") == cut and t.decode_many([cut]) == ["z"]

"""No silent wrong answer, no lost data (issue 12): special input files, IO parameters,
column matching by name, store checksums, staged outputs and resource failures."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from gpu_engine.host.cli import main
from gpu_engine.host.io import FactsError
from gpu_engine.host.reasoner import Reasoner
from gpu_engine.host.store import StoreError, current_version, open_store, save_store

from gpu_engine.ir import ProgramError

ROOT = Path(__file__).resolve().parents[1]


def cli(*args: str | Path) -> int:
    return main([str(a) for a in args])


def run_cli(tmp: Path, program: str, *args: str, facts: dict[str, str | bytes] | None = None,
            stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    """The CLI in a subprocess (for stdin and signals)."""
    (tmp / "p.dl").write_text(program)
    fdir = tmp / "facts"
    fdir.mkdir(exist_ok=True)
    for name, text in (facts or {}).items():
        (fdir / name).write_bytes(text if isinstance(text, bytes) else text.encode())
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT))}
    return subprocess.run([sys.executable, "-m", "gpu_engine.host.cli", "run", str(tmp / "p.dl"),
                           "-F", str(fdir), "--quiet", "--device", "cpu", *args],
                          input=stdin, capture_output=True, cwd=tmp, env=env, timeout=120)


def rows(r: Reasoner, name: str) -> list[tuple]:
    return sorted(tuple(v.values()) for v in r.relation(name).to_pylist())


# --- 1. special files are streams ------------------------------------------------------------


def test_dev_stdin_is_read(tmp_path: Path) -> None:
    prog = ('.decl e(x:number, y:symbol)\n.input e(filename="/dev/stdin")\n'
            '.decl p(x:number, y:symbol)\n.output p\np(x, y) :- e(x, y).\n')
    p = run_cli(tmp_path, prog, "-D", "-", stdin=b"1\ta\n2\tb\n")
    assert p.returncode == 0, p.stderr
    assert b"1\ta\n2\tb\n" in p.stdout


def test_named_pipe_and_proc_file(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.facts"
    os.mkfifo(fifo)

    def feed() -> None:
        with open(fifo, "w") as f:
            f.write("7\n8\n")

    t = threading.Thread(target=feed, daemon=True)
    t.start()
    r = Reasoner(f'.decl e(x:number)\n.input e(filename="{fifo}")\n'
                 '.decl c(s:symbol)\n.input c(filename="/proc/self/comm")\n', device="cpu")
    try:
        r.load_inputs(tmp_path)
    finally:
        if t.is_alive():  # the pipe was never opened: unblock the writer
            os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
    t.join(10)
    assert rows(r, "e") == [(7,), (8,)]
    assert r.relation("c").num_rows == 1  # /proc files report size 0 but have content


def test_nullary_blank_line_holds(tmp_path: Path) -> None:
    (tmp_path / "a.facts").write_text("\n")
    (tmp_path / "b.facts").write_text("")
    r = Reasoner(".decl a()\n.input a\n.decl b()\n.input b\n", device="cpu")
    r.load_inputs(tmp_path)
    assert r.relation("a").num_rows == 1 and r.relation("b").num_rows == 0


# --- IO parameters -------------------------------------------------------------------------


def test_headers_rfc4180_gzip_and_long_delimiter(tmp_path: Path) -> None:
    (tmp_path / "h.facts").write_text("x\ty\n1\t2\n")
    (tmp_path / "q.facts").write_text('"a,b",1\n"say ""hi""\nthere",2\n')
    (tmp_path / "z.facts").write_bytes(gzip.compress(b"5\t6\n"))
    (tmp_path / "m.facts").write_text("1::2\n3::4\n")
    r = Reasoner(".decl h(x:number, y:number)\n.input h(headers=true)\n"
                 ".decl q(s:symbol, n:number)\n.input q(rfc4180=true)\n"
                 ".decl z(x:number, y:number)\n.input z()\n"
                 '.decl m(x:number, y:number)\n.input m(delimiter="::")\n', device="cpu")
    r.load_inputs(tmp_path)
    assert rows(r, "h") == [(1, 2)]
    assert rows(r, "q") == [("a,b", 1), ('say "hi"\nthere', 2)]
    assert rows(r, "z") == [(5, 6)]
    assert rows(r, "m") == [(1, 2), (3, 4)]


def test_outputs_with_parameters(tmp_path: Path) -> None:
    prog = ('.decl a(x:number, s:symbol)\na(1, "p,q").\na(2, "r").\n'
            '.output a(filename="h.csv", headers=true, delimiter="<>")\n'
            '.output a(filename="q.csv", rfc4180=true)\n'
            '.output a(filename="z.csv.gz", compress=true)\n'
            '.output a(IO=stdout, headers=true, attributeNames="n\ts")\n')
    p = run_cli(tmp_path, prog, "-D", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    assert (out / "h.csv").read_text().splitlines() == ["x<>s", "1<>p,q", "2<>r"]
    assert (out / "q.csv").read_text().splitlines() == ['1,"p,q"', '2,"r"']
    assert gzip.decompress((out / "z.csv.gz").read_bytes()) == b"1\tp,q\n2\tr\n"
    assert p.stdout.decode() == ("---------------\na\nn\ts\n===============\n1\tp,q\n2\tr\n"
                                 "===============\n")


def test_output_headers_as_souffle(tmp_path: Path) -> None:
    """``attributeNames`` is the header as written; without it the names are joined by
    the delimiter parameter, a tab when there is none (rfc4180's comma is no parameter:
    Soufflé's IOAttributes)."""
    prog = ('.decl a(x:number, s:symbol)\na(1, "p").\n'
            '.output a(filename="n.csv", headers=true, attributeNames="p,q", delimiter="|")\n'
            '.output a(filename="r.csv", headers=true, rfc4180=true)\n')
    p = run_cli(tmp_path, prog, "-D", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    out = tmp_path / "out"
    assert (out / "n.csv").read_text().splitlines() == ["p,q", "1|p"]
    assert (out / "r.csv").read_text().splitlines() == ["x\ts", '1,"p"']


def test_rfc4180_output_quotes_as_souffle(tmp_path: Path) -> None:
    """Soufflé's rfc4180 writer: a symbol's quote becomes \\"" (its documentation's
    example), and so does one inside a record, whose symbols are written between "" (as in
    the conformance case syntactic/input_directive_rfc4180)."""
    prog = ('.type R = [s: symbol]\n.decl a(s: symbol, r: R)\n'
            'a("double-quote=\\" comma=,", ["q\\"x"]).\n'
            '.output a(filename="q.csv", rfc4180=true, delimiter="\\t")\n')
    p = run_cli(tmp_path, prog, "-D", str(tmp_path / "out"))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "out" / "q.csv").read_text() == (
        '"double-quote=\\"" comma=,"\t"[""q\\""x""]"\n')


@pytest.mark.parametrize("param", ["filname", "delimter", "header"])
def test_unknown_parameter_is_ignored_with_a_note(param: str) -> None:
    r = Reasoner(f'.decl e(x:number)\n.input e({param}="x")\n', device="cpu")  # as Soufflé
    note = next(n for n in r.notes if f"unknown parameter '{param}'" in n)
    assert ":2:" in note and "did you mean" in note


def test_bad_boolean_parameter() -> None:
    r = Reasoner('.decl e(x:number)\n.input e(headers=maybe)\n', device="cpu")
    with pytest.raises(ProgramError, match="expected true or false"):
        r.load_inputs(".")


# --- 7. errors carry file:line:col -------------------------------------------------------------


@pytest.mark.parametrize(("text", "where", "what"), [
    (b"1\t2\n3\t4\n5\t\xff\n", (3, 3), "invalid UTF8"),
    (b"1\t2\n3\t5x\n", (2, 3), "expected a number for attribute 2"),
    (b"1\t2\n3\t++5\n", (2, 3), "expected a number"),
    (b"1::2\n3::x\n", None, None),
])
def test_value_errors_are_located(tmp_path: Path, text: bytes, where: tuple[int, int] | None,
                                  what: str | None) -> None:
    (tmp_path / "e.facts").write_bytes(text)
    delim = '(delimiter="::")' if b"::" in text else ""
    r = Reasoner(f".decl e(x:number, y:number)\n.input e{delim}\n", device="cpu")
    if where is None:  # multi-character delimiter: located too
        with pytest.raises(FactsError) as e:
            r.load_inputs(tmp_path)
        assert (e.value.loc.line, e.value.loc.column) == (2, 4)
        return
    with pytest.raises(FactsError, match=what) as e:
        r.load_inputs(tmp_path)
    assert (e.value.loc.file, e.value.loc.line, e.value.loc.column) == (
        str(tmp_path / "e.facts"), *where)


def test_plus_sign_is_a_number(tmp_path: Path) -> None:
    (tmp_path / "e.facts").write_text("+5\t-3\n")
    r = Reasoner(".decl e(x:number, y:number)\n.input e\n", device="cpu")
    r.load_inputs(tmp_path)
    assert rows(r, "e") == [(5, -3)]


# --- 2. add_facts matches columns by name -----------------------------------------------------


PQ = ".decl p(x:number, y:symbol)\n"


def test_add_facts_matches_names() -> None:
    import pandas as pd

    r = Reasoner(PQ, device="cpu")
    r.add_facts("p", pd.DataFrame({"y": ["a"], "x": [1]}))
    r.add_facts("p", pa.table({"y": ["b"], "x": [2]}))
    r.add_facts("p", pd.DataFrame([[3, "c"]]))  # unnamed (0, 1): by position
    r.add_facts("p", np.array([[4, "d"]], dtype=object))
    assert rows(r, "p") == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]


def test_add_facts_name_errors() -> None:
    import pandas as pd

    r = Reasoner(PQ, device="cpu")
    with pytest.raises(FactsError, match="'z' is not an attribute of p"):
        r.add_facts("p", pd.DataFrame({"x": [1], "z": ["a"]}))
    with pytest.raises(FactsError, match="no column for attribute 'y'"):
        r.add_facts("p", pa.table({"x": [1]}))


# --- 3. store checksums and run --store without --force ---------------------------------------


def test_edited_program_in_store_is_detected(tmp_path: Path) -> None:
    r = Reasoner(".decl e(x:number)\ne(1).\n.decl p(x:number)\np(x) :- e(x).\n", device="cpu")
    save_store(r, tmp_path / "s")
    prog = tmp_path / "s" / current_version(tmp_path / "s") / "program.dl"
    prog.write_text(prog.read_text().replace("p(x) :- e(x).", "p(x) :- e(x), x > 5."))
    with pytest.raises(StoreError, match="program.dl: edited or corrupt"):
        open_store(tmp_path / "s")


def test_edited_metadata_is_detected(tmp_path: Path) -> None:
    r = Reasoner(".decl e(x:number)\ne(1).\n", device="cpu")
    save_store(r, tmp_path / "s")
    meta = tmp_path / "s" / current_version(tmp_path / "s") / "meta.json"
    d = json.loads(meta.read_text())
    d["counting"] = 2
    meta.write_text(json.dumps(d))
    with pytest.raises(StoreError, match="corrupt metadata"):
        open_store(tmp_path / "s")


def test_run_store_needs_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "a.dl").write_text(".decl e(x:number)\ne(1).\n")
    (tmp_path / "b.dl").write_text(".decl f(x:number)\nf(2).\n")
    s = tmp_path / "s"
    assert cli("run", tmp_path / "a.dl", "-D", tmp_path / "o", "--store", s) == 0
    v = current_version(s)
    assert cli("run", tmp_path / "b.dl", "-D", tmp_path / "o", "--store", s) == 1
    assert "already exists" in capsys.readouterr().err and current_version(s) == v
    assert cli("run", tmp_path / "b.dl", "-D", tmp_path / "o", "--store", s, "--force") == 0
    assert "f" in open_store(s).program.relations


# --- 5. no output written on error -------------------------------------------------------------


def test_failed_second_output_keeps_the_first(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / "a.csv").write_text("old\n")
    (out / "b.csv").mkdir()  # cannot be replaced by a file
    (tmp_path / "p.dl").write_text(".decl a(x:number)\na(1).\n.output a\n"
                                   ".decl b(x:number)\nb(2).\n.output b\n")
    assert cli("run", tmp_path / "p.dl", "-D", out) == 1
    assert (out / "a.csv").read_text() == "old\n"
    assert sorted(p.name for p in out.iterdir()) == ["a.csv", "b.csv"]  # no temporary file


def test_stats_json_checked_before_outputs(tmp_path: Path) -> None:
    (tmp_path / "p.dl").write_text(".decl a(x:number)\na(1).\n.output a\n")
    bad = tmp_path / "no" / "such" / "stats.json"
    assert cli("run", tmp_path / "p.dl", "-D", tmp_path / "out", "--stats-json", bad) == 1
    assert not (tmp_path / "out").exists()
    ok = tmp_path / "stats.json"
    assert cli("run", tmp_path / "p.dl", "-D", tmp_path / "out", "--stats-json", ok) == 0
    assert json.loads(ok.read_text())["facts"] == 1


# --- 6. resource failures ----------------------------------------------------------------------


def test_out_of_memory_is_one_line(tmp_path: Path) -> None:
    """A cross product far larger than an address-space limit: one line naming the
    stratum, the rule and the size, no traceback."""
    if sys.platform != "linux":
        pytest.skip("needs RLIMIT_AS")
    import resource

    (tmp_path / "facts").mkdir()
    (tmp_path / "facts" / "n.facts").write_text("".join(f"{i}\n" for i in range(100_000)))
    prog = (".decl n(x:number)\n.input n\n.decl p(x:number, y:number)\n.printsize p\n"
            "p(x, y) :- n(x), n(y).\n")

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))

    (tmp_path / "p.dl").write_text(prog)
    env = {**os.environ, "PYTHONPATH": os.environ.get("PYTHONPATH", str(ROOT)),
           "NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    p = subprocess.run([sys.executable, "-m", "gpu_engine.host.cli", "run", str(tmp_path / "p.dl"),
                        "-F", str(tmp_path / "facts"), "-D", "-", "--quiet", "--device", "cpu"],
                       capture_output=True, text=True, env=env, preexec_fn=limit, timeout=300)
    assert p.returncode == 1
    assert "Traceback" not in p.stderr
    lines = p.stderr.strip().splitlines()
    assert len(lines) == 1, p.stderr
    assert "out of memory: stratum" in lines[0] and "p.dl:5:1" in lines[0]
    assert "Unable to allocate" in lines[0]


def test_ctrl_c_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                            capsys: pytest.CaptureFixture[str]) -> None:
    from gpu_engine.host import cli as cli_mod

    def interrupted(*_a: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli_mod, "_render_outputs", interrupted)
    (tmp_path / "p.dl").write_text(".decl a(x:number)\na(1).\n.output a\n")
    assert cli("run", tmp_path / "p.dl", "-D", tmp_path / "out") == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "interrupted" in err[0]
    assert not (tmp_path / "out").exists()


def test_fact_file_of_blank_lines_is_empty(tmp_path: Path) -> None:
    """Only blank lines in a non-nullary relation's facts file: no facts, no traceback
    (fuzz-inputs seeds 22609, 24727)."""
    from souffle_cases import run_cli

    (tmp_path / "p.dl").write_text(".decl u(x: unsigned, f: float)\n.input u(delimiter=\",\")\n"
                                   ".decl o(x: unsigned)\n.output o\no(x) :- u(x, _).\n")
    (tmp_path / "u.facts").write_text("\n\n")
    rc, out, err = run_cli(["run", str(tmp_path / "p.dl"), "-F", str(tmp_path), "-D", "-",
                            "--device", "cpu", "--quiet"])
    assert rc == 0 and "Traceback" not in err, err


def test_missing_fact_files_of_relations_no_output_needs(tmp_path: Path) -> None:
    """As Soufflé (which drops relations no output depends on): a missing fact file of an
    input nothing printed depends on is not an error; one that an output needs is."""
    text = (".decl a(x:number)\n.decl b(x:number)\n.decl o(x:number)\n.input a, b\n"
            "o(x) :- a(x).\n.output o\n")
    (tmp_path / "a.facts").write_text("1\n", encoding="utf-8")
    r = Reasoner(text, device="cpu")
    r.load_inputs(tmp_path)
    assert r.relation("o").num_rows == 1
    (tmp_path / "a.facts").unlink()
    (tmp_path / "b.facts").write_text("1\n", encoding="utf-8")
    with pytest.raises(ProgramError, match="cannot open fact file") as e:
        Reasoner(text, device="cpu").load_inputs(tmp_path)
    assert e.value.loc is not None and e.value.loc.file.endswith("a.facts")


def test_symbol_columns_encoded_by_chunk_as_one_at_a_time(tmp_path: Path) -> None:
    """Symbol columns read in many chunks (``read_facts`` encodes every column of an
    all-symbol relation at once, chunk by chunk) get the ids that encoding one whole
    column after the other gives: first occurrence, column by column."""
    import pyarrow.csv as pacsv
    from gpu_engine.host import io as hio
    from gpu_engine.host.dictionary import SymbolTable

    rng = np.random.default_rng(5)
    rows = [(f"s{a}", f"p{b}", f"s{c}") for a, b, c in rng.integers(0, 3000, (40_000, 3))]
    (tmp_path / "t.facts").write_text("".join(f"{a}\t{b}\t{c}\n" for a, b, c in rows))
    (tmp_path / "m.facts").write_text("".join(f"{a}\t{i}\n" for i, (a, _, _) in
                                              enumerate(rows)))
    r = Reasoner(".decl t(a: symbol, b: symbol, c: symbol)\n.decl m(a: symbol, n: number)\n")
    old = pacsv.ReadOptions
    try:  # small blocks: many chunks per column
        hio.pacsv.ReadOptions = lambda **kw: old(**{**kw, "block_size": 1 << 12})
        t = hio.read_facts(tmp_path / "t.facts", r.program.relations["t"], r.symbols)
        m = hio.read_facts(tmp_path / "m.facts", r.program.relations["m"], r.symbols)
    finally:
        hio.pacsv.ReadOptions = old
    want = SymbolTable()
    cols = [want.encode_many(pa.array([x[i] for x in rows])) for i in range(3)]
    for got, w in zip(t, cols):
        assert got.dtype == np.int64 and (got == w).all()
    assert (m[0] == cols[0]).all() and (m[1] == np.arange(len(rows))).all()
    assert r.symbols.decode_many(t[1][:5]) == [x[1] for x in rows[:5]]
    chunked = pa.chunked_array([pa.array(["b", "a"]), pa.array([], pa.string()),
                                pa.array(["c", "b"])])
    fresh = SymbolTable()
    assert fresh.encode_many(chunked).tolist() == [0, 1, 2, 0]
    assert fresh.encode_many(pa.chunked_array([], pa.string())).tolist() == []
    assert fresh.encode_many(pa.chunked_array([pa.array(["c", "d"])])).tolist() == [2, 3]


def test_the_symbol_lookup_dict_is_built_on_the_first_single_lookup() -> None:
    """Bulk encoding adds symbols without a Python dict entry; a single look-up (find,
    encode, a batch of few values) completes the dict first; ``encode_few`` (a program's
    constants) finds its symbols by a pass and remembers them; truncation forgets symbols
    whether or not the dict has learnt them."""
    from gpu_engine.host.dictionary import SymbolTable

    t = SymbolTable()
    assert t.encode("x") == 0
    assert t.encode_many(pa.array([f"n{i}" for i in range(200)]))[0] == 1
    assert len(t) == 201 and t._indexed == 1  # not in the dict yet
    assert t.encode_few(["n5", "new", "x", "n5"]).tolist() == [6, 201, 0, 6]
    assert t._indexed == 1 and t.find("new") == 201 and t.encode("n5") == 6
    assert t._indexed == 1 and len(t) == 202  # answered from what encode_few remembered
    assert t.find("n1") == 2 and t._indexed == 202  # a look-up of a symbol it lacks
    t.encode_many(pa.array([f"m{i}" for i in range(100)]))
    assert t.encode_many(pa.array(["m7", "z"])).tolist() == [209, 302]  # few: the dict
    assert t._indexed == 302  # z: learnt at the next completion
    t.encode_many(pa.chunked_array([["q"], ["r", "q"]]))
    t.truncate(304)  # r: never in the dict
    assert len(t) == 304 and t.find("r") is None and t.find("q") == 303
    t.truncate(201)  # new, m*, z, q: in the dict
    assert t.find("new") is None and t.find("q") is None and t.encode("w") == 201
    fresh = SymbolTable()
    fresh.encode_many(pa.array([f"k{i}" for i in range(100)]))
    assert fresh.encode_few(["k3", "k4"]).tolist() == [3, 4]
    fresh.truncate(4)  # k4: remembered by encode_few, forgotten here
    assert fresh.find("k4") is None and fresh.encode("k4") == 4
    assert t.decode_many([0, 1, 201]) == ["x", "n0", "w"]
    u = SymbolTable.from_values(t.values())
    assert len(u) == 202 and u._indexed == 0 and u.find("w") == 201 and u.encode("s") == 202
    with pytest.raises(ValueError, match="duplicate"):
        SymbolTable.from_values(pa.array(["a", "b", "a"]))


def test_fact_files_read_as_souffle_reads_them(tmp_path: Path) -> None:
    """Soufflé's CSV reader: columns past the attributes are ignored, ``columns="2:0"``
    picks and orders them, and a blank line of a one-column symbol file is the symbol
    ``""`` (other blank lines, which Soufflé rejects, are skipped)."""
    (tmp_path / "a.facts").write_text("1\tx\textra\n2\ty\tz\tw\n")
    (tmp_path / "c.facts").write_text("p\tq\t7\nr\ts\t8\n")
    (tmp_path / "m.facts").write_text("1::x::more\n2::y\n")
    (tmp_path / "s.facts").write_text("a\n\nb\n")
    (tmp_path / "n.facts").write_text("5\n\n6\n")
    r = Reasoner(".decl a(n:number, s:symbol)\n.input a\n"
                 '.decl c(n:number, s:symbol)\n.input c(columns="2:0")\n'
                 '.decl m(n:number, s:symbol)\n.input m(delimiter="::")\n'
                 ".decl s(x:symbol)\n.input s\n.decl n(x:number)\n.input n\n", device="cpu")
    r.load_inputs(tmp_path)
    assert rows(r, "a") == [(1, "x"), (2, "y")]
    assert rows(r, "c") == [(7, "p"), (8, "r")]
    assert rows(r, "m") == [(1, "x"), (2, "y")]
    assert rows(r, "s") == [("",), ("a",), ("b",)]
    assert rows(r, "n") == [(5,), (6,)]
    (tmp_path / "c.facts").write_text("p\tq\t7\nr\ts\n")  # a line without column 2
    bad = Reasoner('.decl c(n:number, s:symbol)\n.input c(columns="2:0")\n', device="cpu")
    with pytest.raises(FactsError, match="expected 3 tab-separated values for c, found 2"):
        bad.load_inputs(tmp_path)
    with pytest.raises(ProgramError, match="columns="):
        Reasoner('.decl c(n:number, s:symbol)\n.input c(columns="2:x")\n',
                 device="cpu").load_inputs(tmp_path)


def test_lines_and_fields_as_souffle_reads_them(tmp_path: Path) -> None:
    """Soufflé's ReadStreamCSV: lines end at \\n only (one \\r before it goes, a lone \\r
    is text); a blank line of a one-symbol file is the symbol "", at the end too; with a
    comma in the delimiter, a delimiter inside [...] is text."""
    (tmp_path / "s.facts").write_text("a\n\n")
    (tmp_path / "t.facts").write_bytes(b"a\rb\nx\r\n")
    (tmp_path / "u.facts").write_bytes(b"a\tb\rc\td\n")
    (tmp_path / "v.facts").write_text("a[b,c]d,e\n[x,y],z\n")
    (tmp_path / "w.facts").write_text("[1,2],3\n")
    r = Reasoner(".decl s(x:symbol)\n.input s\n.decl t(x:symbol)\n.input t\n"
                 ".decl u(x:symbol, y:symbol)\n.input u\n"
                 '.decl v(x:symbol, y:symbol)\n.input v(delimiter=",")\n'
                 '.type P = [a:number, b:number]\n.decl w(p:P, n:number)\n'
                 '.input w(delimiter=",")\n', device="cpu")
    r.load_inputs(tmp_path)
    assert rows(r, "s") == [("",), ("a",)]
    assert rows(r, "t") == [("a\rb",), ("x",)]
    assert rows(r, "u") == [("a", "b\rc")]
    assert rows(r, "v") == [("[x,y]", "z"), ("a[b,c]d", "e")]
    assert r.render("w").strip() == "[1, 2]\t3"


def test_float_spellings_strtof_reads(tmp_path: Path) -> None:
    """A float column reads what ``strtof`` reads: inf, infinity and nan in any case."""
    (tmp_path / "f.facts").write_text("INF\n-Infinity\nNaN\n1.5\n")
    r = Reasoner(".decl f(x:float)\n.input f\n", device="cpu")
    r.load_inputs(tmp_path)
    assert sorted(r.render("f").splitlines()) == ["-inf", "1.5", "inf", "nan"]

"""JSON (``IO=jsonfile`` / ``IO=json``) and SQLite (``IO=sqlite``) inputs and outputs in
Soufflé's formats (host/json_io.py, host/sqlite_io.py), through the command line."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from souffle_cases import run_cli

DECLS = """
.type L = [head: number, tail: L]
.type P = [name: symbol, w: float]
.decl r(a: number, s: symbol, l: L, p: P, u: unsigned)
r(1, "x\\"y", [1, [2, nil]], ["n", 1.5], 4000000000).
r(-2, "z", nil, ["m", -0.25], 7).
.decl e(a: number)
.decl z()
z().
"""


def _run(tmp_path: Path, text: str, facts: Path | None = None) -> tuple[int, str, str]:
    prog = tmp_path / "p.dl"
    prog.write_text(text, encoding="utf-8")
    fdir = facts if facts is not None else tmp_path / "facts"
    fdir.mkdir(exist_ok=True)
    out = tmp_path / "out"
    return run_cli(["run", str(prog), "-F", str(fdir), "-D", str(out), "--quiet"])


def test_json_output_formats(tmp_path: Path) -> None:
    rc, stdout, stderr = _run(tmp_path, DECLS + ".output r(IO=jsonfile)\n"
                              ".output r(IO=jsonfile, format=object, filename=\"o.json\")\n"
                              ".output e(IO=jsonfile)\n.output z(IO=json)\n")
    assert rc == 0, stderr
    lists = (tmp_path / "out" / "r.json").read_text(encoding="utf-8")
    assert lists == ('[[-2, "z", null, ["m", -0.25], 7],\n'
                     '[1, "x\\"y", [1, [2, null]], ["n", 1.5], -294967296]]\n')
    objects = (tmp_path / "out" / "o.json").read_text(encoding="utf-8")
    assert objects.splitlines()[0] == (
        '[{"a": -2, "s": "z", "l": null, "p": {"name": "m", "w": -0.25}, "u": 7},')
    assert (tmp_path / "out" / "e.json").read_text(encoding="utf-8") == "[]\n"
    assert stdout == "[null\n]\n"


def test_json_round_trip(tmp_path: Path) -> None:
    rc, _, stderr = _run(tmp_path, DECLS + ".output r(IO=jsonfile)\n"
                         ".output r(IO=jsonfile, format=object, filename=\"o.json\")\n")
    assert rc == 0, stderr
    back = tmp_path / "back"
    back.mkdir()
    prog = DECLS.replace("r(1,", "// r(1,").replace("r(-2,", "// r(-2,") + (
        ".decl s(a: number, s: symbol, l: L, p: P, u: unsigned)\n"
        ".input r(IO=jsonfile, filename=\"{0}/r.json\")\n"
        ".input s(IO=jsonfile, filename=\"{0}/o.json\")\n.output r, s\n").format(tmp_path / "out")
    rc, _, stderr = _run(back, prog)
    assert rc == 0, stderr
    r = (back / "out" / "r.csv").read_text(encoding="utf-8")
    assert r == (back / "out" / "s.csv").read_text(encoding="utf-8")
    assert set(r.splitlines()) == {'1\tx"y\t[1, [2, nil]]\t[n, 1.5]\t4000000000',
                                   "-2\tz\tnil\t[m, -0.25]\t7"}


def test_json_input_errors_and_adts(tmp_path: Path) -> None:
    facts = tmp_path / "facts"
    facts.mkdir()
    (facts / "a.json").write_text('[[1, "x"],\n [2, 3]]', encoding="utf-8")
    rc, _, stderr = _run(tmp_path, ".decl a(x: number, y: symbol)\n.input a(IO=jsonfile)\n"
                         ".output a\n")
    assert rc != 0 and "a.json" in stderr and "expected a string, found 3" in stderr, stderr
    (facts / "a.json").write_text('[[1, "x"]', encoding="utf-8")
    rc, _, stderr = _run(tmp_path, ".decl a(x: number, y: symbol)\n.input a(IO=jsonfile)\n"
                         ".output a\n")
    assert rc != 0 and "a.json:1:" in stderr and "malformed JSON" in stderr, stderr
    rc, _, stderr = _run(tmp_path, ".type T = A {x: number} | B {}\n.decl b(t: T)\nb($B).\n"
                         ".output b(IO=jsonfile)\n")
    assert rc != 0 and "p.dl:4:9" in stderr and "algebraic data types" in stderr, stderr


def test_sqlite_round_trip_and_soufflé_layout(tmp_path: Path) -> None:
    text = (".decl a(n: number, s: symbol, f: float, u: unsigned)\n"
            'a(1, "one", 0.5, 4000000000). a(2, "two", -1.0, 3). a(3, "one", 2.0, 0).\n'
            ".decl b(s: symbol)\nb(\"one\"). b(\"three\").\n"
            ".output a(IO=sqlite, filename=\"db.sqlite\")\n"
            ".output b(IO=sqlite, filename=\"db.sqlite\")\n")
    rc, _, stderr = _run(tmp_path, text)
    assert rc == 0, stderr
    db = tmp_path / "out" / "db.sqlite"
    con = sqlite3.connect(db)
    assert sorted(con.execute("SELECT * FROM a")) == [
        (1, "one", 1056964608, -294967296), (2, "two", -1082130432, 3), (3, "one", 1073741824, 0)]
    assert sorted(con.execute("SELECT * FROM b")) == [("one",), ("three",)]
    assert sorted(r[0] for r in con.execute("SELECT symbol FROM __SymbolTable")) == [
        "one", "three", "two"]
    con.close()
    # read back (the view), and a plain table of texts with a NULL
    con = sqlite3.connect(tmp_path / "plain.sqlite")
    con.execute("CREATE TABLE t (x TEXT, y FLOAT, z INTEGER)")
    con.executemany("INSERT INTO t VALUES (?, ?, ?)", [(None, 0.5, "0x10"), ("q", 2, 5)])
    con.commit()
    con.close()
    back = tmp_path / "back"
    back.mkdir()
    rc, _, stderr = _run(back, (
        ".decl a(n: number, s: symbol, f: float, u: unsigned)\n"
        f".input a(IO=sqlite, filename=\"{db}\")\n"
        ".decl t(x: symbol, y: float, z: number)\n"
        f".input t(IO=sqlite, dbname=\"{tmp_path / 'plain.sqlite'}\")\n.output a, t\n"))
    assert rc == 0, stderr
    assert set((back / "out" / "a.csv").read_text().splitlines()) == {
        # floats were written as their bits and read back as those integers' values
        # (floats as Soufflé's CSV writer prints them: %.9g)
        "1\tone\t1.05696461e+09\t4000000000", "2\ttwo\t-1.08213043e+09\t3",
        "3\tone\t1.07374182e+09\t0"}
    assert set((back / "out" / "t.csv").read_text().splitlines()) == {"n/a\t0.5\t16",
                                                                     "q\t2\t5"}


def test_sqlite_rewrites_its_relation_and_refuses_records(tmp_path: Path) -> None:
    text = ".decl a(n: number)\na(1).\n.output a(IO=sqlite)\n"
    assert _run(tmp_path, text)[0] == 0
    assert _run(tmp_path, text.replace("a(1).", "a(2). a(3)."))[0] == 0
    con = sqlite3.connect(tmp_path / "out" / "a.sqlite")
    assert sorted(con.execute("SELECT * FROM a")) == [(2,), (3,)]
    con.close()
    rc, _, stderr = _run(tmp_path, ".type R = [x: number]\n.decl a(r: R)\na([1]).\n"
                         ".output a(IO=sqlite)\n")
    assert rc != 0 and "p.dl:4:9" in stderr and "record/ADT" in stderr, stderr
    rc, _, stderr = _run(tmp_path, ".decl a(n: number)\n.input a(IO=sqlite)\n")
    assert rc != 0 and "a.sqlite" in stderr and "Traceback" not in stderr, stderr

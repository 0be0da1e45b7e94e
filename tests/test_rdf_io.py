"""RDF in and out (host/rdf.py): formats, gzip, canonical terms, blank node scoping, errors
at file:line:col with nothing added, N-Triples/Turtle output, and the CLI (--rdf, --rules,
IO=rdf)."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow as pa
import pytest
from gpu_engine.host.cli import main
from gpu_engine.host.io import FactsError
from gpu_engine.host.rdf import rdf_bytes, read_rdf, read_rdf_files

from gpu_engine import Reasoner

EX = "http://ex.org/"
TTL = f"""@prefix : <{EX}> .
:a :p "x y"@EN , 12 , "s" ; a :C .
:b :q ( :a :b ) .
"""
TRIPLES = [
    (f"<{EX}a>", f"<{EX}p>", '"x y"@en'),
    (f"<{EX}a>", f"<{EX}p>", '"12"^^<http://www.w3.org/2001/XMLSchema#integer>'),
    (f"<{EX}a>", f"<{EX}p>", '"s"'),
    (f"<{EX}a>", "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", f"<{EX}C>"),
]
PROGRAM = """.decl triple(s: symbol, p: symbol, o: symbol)
.decl typed(x: symbol, c: symbol)
typed(x, c) :- triple(x, "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>", c).
.output typed
"""


def _rows(t: pa.Table) -> set[tuple[str, str, str]]:
    return set(zip(*(t.column(i).to_pylist() for i in range(3))))


def test_turtle_terms_are_canonical(tmp_path: Path) -> None:
    (tmp_path / "d.ttl").write_text(TTL)
    rows = _rows(read_rdf(tmp_path / "d.ttl"))
    assert set(TRIPLES) <= rows
    assert len(rows) == 4 + 1 + 4  # the collection: two cells of first/rest


@pytest.mark.parametrize("fmt,text", [
    ("nt", '<http://ex.org/a> <http://ex.org/p> "x" .\n'),
    ("nq", '<http://ex.org/a> <http://ex.org/p> "x" <http://ex.org/g> .\n'),
    ("trig", '<http://ex.org/g> { <http://ex.org/a> <http://ex.org/p> "x" . }\n'),
    ("ttl", '<http://ex.org/a> <http://ex.org/p> "x" .\n'),
])
def test_formats_and_gzip(tmp_path: Path, fmt: str, text: str) -> None:
    want = {("<http://ex.org/a>", "<http://ex.org/p>", '"x"')}
    plain = tmp_path / f"d.{fmt}"
    plain.write_text(text)
    assert _rows(read_rdf(plain)) == want
    packed = tmp_path / f"d.{fmt}.gz"
    packed.write_bytes(gzip.compress(text.encode()))
    assert _rows(read_rdf(packed)) == want


def test_ntriples_fast_and_library_paths_agree(tmp_path: Path) -> None:
    """Canonical lines go through the vectorised reader, others through pyoxigraph; both
    give canonical terms (escapes decoded, language tags in lower case, xsd:string
    dropped)."""
    canon = tmp_path / "c.nt"
    canon.write_text('<http://ex.org/a> <http://ex.org/p> "x"@en .\n')
    odd = tmp_path / "o.nt"
    odd.write_text('<http://ex.org/a>  <http://ex.org/p> "\\u0078"@EN .\n'
                   '<http://ex.org/a> <http://ex.org/p> "y"^^<http://www.w3.org/2001/XMLSchema#string> .\n')
    assert _rows(read_rdf(canon)) == {("<http://ex.org/a>", "<http://ex.org/p>", '"x"@en')}
    assert _rows(read_rdf(odd)) == {("<http://ex.org/a>", "<http://ex.org/p>", '"x"@en'),
                                    ("<http://ex.org/a>", "<http://ex.org/p>", '"y"')}


def test_blank_nodes_are_scoped_per_file(tmp_path: Path) -> None:
    for name in ("a.nt", "b.nt"):
        (tmp_path / name).write_text("_:x <http://ex.org/p> <http://ex.org/o> .\n")
    t = read_rdf_files([tmp_path / "a.nt", tmp_path / "b.nt"])
    assert sorted(t.column("s").to_pylist()) == ["_:f2_x", "_:x"]


@pytest.mark.parametrize("name,text,where", [
    ("bad.nt", '<http://ex.org/a> <http://ex.org/p> <http://ex.org/b> .\n<a> <b> "c" .\n',
     "bad.nt:2:1: malformed N-Triples"),
    ("bad.ttl", "@prefix : <http://ex.org/> .\n:a :p :b ;\n  :q .\n",
     "bad.ttl:3:6: malformed Turtle"),
])
def test_bad_input_is_located_and_adds_nothing(tmp_path: Path, name: str, text: str,
                                               where: str) -> None:
    good = tmp_path / "good.ttl"
    good.write_text(TTL)
    path = tmp_path / name
    path.write_text(text)
    r = Reasoner(PROGRAM, device="cpu")
    with pytest.raises(FactsError) as exc:
        r.load_rdf([good, path])  # the good file is read first, but nothing is added
    assert str(exc.value).startswith(str(tmp_path / where.split(":")[0]))
    assert str(exc.value).endswith(where.split(":", 3)[3]) or where.split(": ")[1] in str(exc.value)
    assert f"{name}:{where.split(':')[1]}:{where.split(':')[2]}" in str(exc.value)
    assert r.relation_sizes()["triple"] == 0


def test_write_ntriples_and_turtle(tmp_path: Path) -> None:
    (tmp_path / "d.ttl").write_text(TTL)
    r = Reasoner(PROGRAM, device="cpu")
    r.load_rdf(tmp_path / "d.ttl")
    assert r.write_rdf(tmp_path / "out.nt") == 0
    assert r.write_rdf(tmp_path / "out.ttl") == 0
    back_nt = _rows(read_rdf(tmp_path / "out.nt"))
    back_ttl = _rows(read_rdf(tmp_path / "out.ttl"))
    assert back_nt == _rows(r.relation("triple")) == back_ttl
    assert "@prefix rdf:" in (tmp_path / "out.ttl").read_text()


def test_generalised_triples_are_left_out() -> None:
    t = pa.table({"s": ['"lit"', "<a:b>", "<a:b>"], "p": ["<a:p>", "<a:p>", "_:x"],
                  "o": ["<a:o>", '"v"', "<a:o>"]})
    data, dropped = rdf_bytes(t, "nt")
    assert data == b'<a:b> <a:p> "v" .\n' and dropped == 2


def test_cli_rules_owl2rl(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.ttl"
    data.write_text(f"""@prefix : <{EX}> .
@prefix rdfs: <http://www.w3.org/2000/01/rdf-schema#> .
:Student rdfs:subClassOf :Person . :bob a :Student .
""")
    out = tmp_path / "out"
    assert main(["run", "--rules", "owl2rl", "--rdf", str(data), "-D", str(out),
                 "--device", "cpu", "--quiet"]) == 0
    nt = (out / "triple.nt").read_text()
    assert f"<{EX}bob> <http://www.w3.org/1999/02/22-rdf-syntax-ns#type> <{EX}Person> ." in nt
    assert (out / "inconsistency.csv").read_text() == ""
    assert main(["run", "--rules", "owl2rl-spelled", "--rdf", str(data), "-D", str(out),
                 "--rdf-format", "ttl", "--device", "cpu", "--quiet"]) == 0
    assert "@prefix owl:" in (out / "triple.ttl").read_text()


def test_cli_bad_rdf_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "d.ttl"
    data.write_text("@prefix : <http://ex.org/> .\n:a :b .\n")
    out = tmp_path / "out"
    store = tmp_path / "store"
    assert main(["run", "--rules", "owl2rl", "--rdf", str(data), "-D", str(out),
                 "--store", str(store), "--device", "cpu", "--quiet"]) == 1
    err = capsys.readouterr().err
    assert f"{data}:2:7: malformed Turtle" in err and "Traceback" not in err
    assert not out.exists() and not store.exists()


def test_cli_program_with_io_rdf(tmp_path: Path) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "data.ttl").write_text(TTL)
    prog = tmp_path / "p.dl"
    prog.write_text(PROGRAM + '.input triple(IO=rdf, filename="data.ttl")\n'
                    '.output triple(IO=rdf, format=turtle)\n')
    out = tmp_path / "out"
    assert main(["run", str(prog), "-F", str(tmp_path / "in"), "-D", str(out),
                 "--device", "cpu", "--quiet"]) == 0
    assert (out / "typed.csv").read_text() == f"<{EX}a>\t<{EX}C>\n"
    assert _rows(read_rdf(out / "triple.ttl")) == _rows(read_rdf(tmp_path / "in" / "data.ttl"))


def test_anonymous_blank_nodes_are_numbered(tmp_path: Path) -> None:
    """pyoxigraph names [] and collection cells by random ids; they are numbered in order
    of appearance (a prefix no label of the file uses), so two reads agree."""
    path = tmp_path / "g.ttl"
    path.write_text("@prefix : <http://ex.org/> .\n_:g1 :p [ :q ( :a ) ] .\n:x :r [] .\n")
    rows = _rows(read_rdf(path))
    assert rows == _rows(read_rdf(path))
    assert ("_:g1", "<http://ex.org/p>", "_:gg2") in rows
    assert ("<http://ex.org/x>", "<http://ex.org/r>", "_:gg3") in rows


def test_cli_needs_program_or_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["run", "--rdf", "x.ttl"]) == 1
    assert "needs a program" in capsys.readouterr().err


def test_cli_store_and_export_keep_rdf_outputs(tmp_path: Path) -> None:
    data = tmp_path / "d.ttl"
    data.write_text(f"@prefix : <{EX}> .\n:a :p :b .\n")
    first, again, store = tmp_path / "o1", tmp_path / "o2", tmp_path / "db"
    assert main(["run", "--rules", "owl2rl-spelled", "--rdf", str(data), "-D", str(first),
                 "--store", str(store), "--device", "cpu", "--quiet"]) == 0
    assert main(["export", str(store), "-D", str(again), "--device", "cpu"]) == 0
    assert (again / "triple.nt").read_bytes() == (first / "triple.nt").read_bytes()

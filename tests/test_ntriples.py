"""The N-Triples reader: both parse paths, terms kept as written, errors with file:line."""

from __future__ import annotations

import gzip
from pathlib import Path

import pyarrow as pa
import pytest
from gpu_engine.host.ntriples import parse_ntriples_bytes, read_ntriples

REPO_ROOT = Path(__file__).resolve().parents[1]
LUBM1 = REPO_ROOT / "examples" / "lubm" / "lubm1.nt.gz"

RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"


def _write(tmp_path: Path, text: str, name: str = "data.nt") -> Path:
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode("utf-8")))
    else:
        path.write_bytes(text.encode("utf-8"))
    return path


def _rows(table: pa.Table) -> list[tuple[str, str, str]]:
    assert table.column_names == ["s", "p", "o"]
    for col in table.columns:
        assert pa.types.is_string(col.type) or pa.types.is_large_string(col.type)
    return list(zip(*(table[c].to_pylist() for c in ("s", "p", "o")), strict=True))


def test_simple_iris_and_literals(tmp_path: Path) -> None:
    path = _write(tmp_path, f'<http://a/x> {RDF_TYPE} <http://a/C> .\n<http://a/x> <http://a/name> "X1" .\n')
    assert _rows(read_ntriples(path)) == [
        ("<http://a/x>", RDF_TYPE, "<http://a/C>"),
        ("<http://a/x>", "<http://a/name>", '"X1"'),
    ]


def test_gzip_and_duplicates_kept(tmp_path: Path) -> None:
    line = "<http://a/x> <http://a/p> <http://a/y> .\n"
    path = _write(tmp_path, line * 3, "dup.nt.gz")
    assert _rows(read_ntriples(path)) == [("<http://a/x>", "<http://a/p>", "<http://a/y>")] * 3


def test_comments_blank_lines_and_crlf(tmp_path: Path) -> None:
    text = (
        "# a comment\r\n"
        "\r\n"
        "<http://a/x> <http://a/p> <http://a/y> .\r\n"
        "   \n"
        "  # indented comment\n"
        "<http://a/y> <http://a/p> <http://a/z> . # trailing comment\n"
    )
    path = _write(tmp_path, text)
    assert _rows(read_ntriples(path)) == [
        ("<http://a/x>", "<http://a/p>", "<http://a/y>"),
        ("<http://a/y>", "<http://a/p>", "<http://a/z>"),
    ]


def test_literals_with_spaces_escapes_tags_and_datatypes(tmp_path: Path) -> None:
    text = (
        '<http://a/x> <http://a/name> "Full Professor 7" .\n'
        '<http://a/x> <http://a/quote> "say \\"hi there\\" now" .\n'
        '<http://a/x> <http://a/label> "chat"@fr .\n'
        '<http://a/x> <http://a/label> "colour gray"@en-GB .\n'
        '<http://a/x> <http://a/age> "42"^^<http://www.w3.org/2001/XMLSchema#integer> .\n'
        '<http://a/x> <http://a/note> "a # not a comment" .\n'
        '<http://a/x> <http://a/empty> "" .\n'
    )
    rows = _rows(read_ntriples(_write(tmp_path, text)))
    assert [o for _, _, o in rows] == [
        '"Full Professor 7"',
        '"say \\"hi there\\" now"',
        '"chat"@fr',
        '"colour gray"@en-GB',
        '"42"^^<http://www.w3.org/2001/XMLSchema#integer>',
        '"a # not a comment"',
        '""',
    ]


def test_tabs_multiple_spaces_and_blank_nodes(tmp_path: Path) -> None:
    text = "_:b0\t<http://a/p>   _:b1\t.\n<http://a/x>  <http://a/p> _:b0.\n"
    assert _rows(read_ntriples(_write(tmp_path, text))) == [
        ("_:b0", "<http://a/p>", "_:b1"),
        ("<http://a/x>", "<http://a/p>", "_:b0"),
    ]


def test_unicode_literal(tmp_path: Path) -> None:
    text = '<http://a/x> <http://a/name> "Zoë Ñandú 東京" .\n'
    assert _rows(read_ntriples(_write(tmp_path, text)))[0][2] == '"Zoë Ñandú 東京"'


def test_no_trailing_newline_and_empty_file(tmp_path: Path) -> None:
    path = _write(tmp_path, "<http://a/x> <http://a/p> <http://a/y> .", "a.nt")
    assert read_ntriples(path).num_rows == 1
    empty = _write(tmp_path, "", "empty.nt")
    assert read_ntriples(empty).num_rows == 0
    only_comments = _write(tmp_path, "# nothing\n\n", "c.nt")
    assert read_ntriples(only_comments).num_rows == 0


@pytest.mark.parametrize(
    "bad",
    [
        "<http://a/x> <http://a/p> <http://a/y>",  # no final dot
        "<http://a/x> <http://a/p> .",  # two terms
        '<http://a/x> "lit" <http://a/y> .',  # literal predicate
        '"lit" <http://a/p> <http://a/y> .',  # literal subject
        '<http://a/x> <http://a/p> "unterminated .',  # open literal
        "<http://a/x> <http://a/p> <http://a/y> <http://a/z> .",  # four terms
        "http://a/x <http://a/p> <http://a/y> .",  # IRI without brackets
    ],
)
def test_malformed_line_reports_file_and_line(tmp_path: Path, bad: str) -> None:
    text = "# header\n<http://a/x> <http://a/p> <http://a/y> .\n\n" + bad + "\n"
    path = _write(tmp_path, text, "bad.nt")
    with pytest.raises(ValueError, match=r"bad\.nt:4\b"):
        read_ntriples(path)


def test_malformed_line_in_gzip_with_spaced_literals(tmp_path: Path) -> None:
    text = '<http://a/x> <http://a/p> "a b" .\n' * 5 + "garbage here\n"
    path = _write(tmp_path, text, "bad.nt.gz")
    with pytest.raises(ValueError, match=r"bad\.nt\.gz:6: malformed"):
        read_ntriples(path)


def test_invalid_utf8_reports_line(tmp_path: Path) -> None:
    path = tmp_path / "latin1.nt"
    path.write_bytes(b'<http://a/x> <http://a/p> "ok" .\n<http://a/x> <http://a/p> "caf\xe9" .\n')
    with pytest.raises(ValueError, match=r"latin1\.nt:2: invalid UTF-8"):
        read_ntriples(path)


def test_missing_file(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        read_ntriples(tmp_path / "nope.nt")


def test_general_path_matches_fast_path(tmp_path: Path) -> None:
    objects = [f"<http://a/m{i * 7}>" if i % 2 else f'"v{i}"' for i in range(500)]
    text = "".join(f"<http://a/n{i}> <http://a/p{i % 3}> {o} .\n" for i, o in enumerate(objects))
    path = _write(tmp_path, text)
    fast = read_ntriples(path)  # no spaces in literals: the pyarrow.csv path
    general = parse_ntriples_bytes(text.encode("utf-8"))
    assert _rows(fast) == _rows(general)


@pytest.mark.skipif(not LUBM1.exists(), reason="examples/lubm/lubm1.nt.gz not present")
def test_lubm1() -> None:
    table = read_ntriples(LUBM1)
    assert table.num_rows == 100_543
    assert table["p"].unique().to_pylist().count(RDF_TYPE) == 1
    assert len(table["p"].unique()) == 17  # rdf:type and 16 univ-bench properties
    first = _rows(table.slice(0, 1))[0]
    assert first == (
        "<http://www.Department0.University0.edu/AssistantProfessor0/Publication0>",
        "<http://swat.cse.lehigh.edu/onto/univ-bench.owl#name>",
        '"Publication0"',
    )
    with gzip.open(LUBM1, "rb") as fh:
        general = parse_ntriples_bytes(fh.read())
    assert general.equals(table)

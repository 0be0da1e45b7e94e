"""Fast, array-based N-Triples reader.

``read_ntriples(path)`` returns a :class:`pyarrow.Table` with three string columns
``s``, ``p`` and ``o``. Terms are kept exactly as written in the file: IRIs with their
angle brackets (``<http://...>``), literals with their quotes and any ``^^<datatype>`` or
``@lang`` suffix, blank nodes as ``_:label``. Blank lines and ``#`` comment lines are
skipped. Rows are returned as read (duplicates included): the engine deduplicates.

Two paths, both vectorised:

* a fast path through ``pyarrow.csv`` with a space delimiter (multi-threaded), valid
  when every line is exactly ``term SP term SP term SP .`` and no literal holds a space;
  its result is validated with anchored regular expressions per column;
* a general path when the fast one does not apply (literals with spaces, tabs,
  comments, trailing comments): the file is split into lines with NumPy and each line
  is parsed with one RE2 regular expression (``pyarrow.compute.extract_regex``). A
  malformed line raises ``ValueError`` naming ``file:line``.
"""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

__all__ = ["read_ntriples", "parse_ntriples_bytes"]

# Term patterns (RE2 syntax). IRIs hold no spaces, '<', '>' or '"'.
_IRI = r'<[^<>"\s]*>'
_BNODE = r"_:[^\s<>\"]+"
_LITERAL = r'"(?:[^"\\\n\r]|\\.)*"(?:\^\^<[^<>"\s]*>|@[A-Za-z]+(?:-[A-Za-z0-9]+)*)?'
_SUBJECT = f"(?:{_IRI}|{_BNODE})"
_OBJECT = f"(?:{_IRI}|{_BNODE}|{_LITERAL})"
_WS = r"[ \t]"

# One full line (already stripped of surrounding white space).
_LINE_RE = (
    rf"^(?P<s>{_SUBJECT}){_WS}*(?P<p>{_IRI}){_WS}*(?P<o>{_OBJECT}){_WS}*\.(?:{_WS}*#.*)?$"
)
_SKIP_RE = r"^(?:#.*)?$"  # blank (after stripping) or a comment line

_COLUMNS = ("s", "p", "o")


def _as_string_column(arr: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Cast to ``pa.string()`` where the data fit 32-bit offsets, else keep large_string."""
    if arr.type == pa.string():
        return arr
    try:
        return arr.cast(pa.string())
    except (pa.ArrowInvalid, OverflowError):
        return arr.cast(pa.large_string())


def _fast_path(source: str | os.PathLike[str]) -> pa.Table | None:
    """Parse with pyarrow.csv (space-delimited); ``None`` when the file does not fit."""
    read_opts = pacsv.ReadOptions(column_names=["s", "p", "o", "dot"], block_size=1 << 24)
    parse_opts = pacsv.ParseOptions(
        delimiter=" ",
        quote_char=False,
        double_quote=False,
        escape_char=False,
        newlines_in_values=False,
        ignore_empty_lines=True,
    )
    convert_opts = pacsv.ConvertOptions(
        column_types={c: pa.string() for c in ("s", "p", "o", "dot")},
        strings_can_be_null=False,
        quoted_strings_can_be_null=False,
        check_utf8=True,
    )
    try:
        table = pacsv.read_csv(
            str(source),
            read_options=read_opts,
            parse_options=parse_opts,
            convert_options=convert_opts,
        )
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, UnicodeDecodeError):
        return None
    if table.num_rows == 0:
        return table.select(list(_COLUMNS))
    # Validate every column; any doubt sends the file to the general path, which
    # either parses it correctly or reports the offending line.
    checks = [
        pc.all(pc.equal(table["dot"], ".")),
        pc.all(pc.match_substring_regex(table["s"], f"^{_SUBJECT}$")),
        pc.all(pc.match_substring_regex(table["p"], f"^{_IRI}$")),
        pc.all(pc.match_substring_regex(table["o"], f"^{_OBJECT}$")),
    ]
    if not all(c.as_py() for c in checks):
        return None
    return table.select(list(_COLUMNS))


def _read_bytes(source: str | os.PathLike[str]) -> pa.Buffer:
    """Whole file contents, decompressed according to the extension (.gz, .bz2, ...)."""
    with pa.input_stream(str(source), compression="detect") as stream:
        return stream.read_buffer()


def parse_ntriples_bytes(data: bytes | pa.Buffer, name: str = "<bytes>") -> pa.Table:
    """Parse N-Triples text held in memory with the general (regex) path."""
    buf = data if isinstance(data, pa.Buffer) else pa.py_buffer(data)
    raw = np.frombuffer(buf, dtype=np.uint8)
    n = raw.size
    # Line boundaries: line i spans [starts[i], ends[i]) and excludes its '\n'.
    newlines = np.flatnonzero(raw == 10)
    ends = newlines
    if n and (newlines.size == 0 or newlines[-1] != n - 1):
        ends = np.concatenate([newlines, np.array([n], dtype=newlines.dtype)])
    n_lines = ends.size
    # Contiguous offsets: line i = buf[offsets[i]:offsets[i+1]] = text + its '\n'.
    offsets = np.empty(n_lines + 1, dtype=np.int64)
    offsets[0] = 0
    offsets[1:] = np.minimum(ends + 1, n)
    lines_bin = pa.Array.from_buffers(
        pa.large_binary(), n_lines, [None, pa.py_buffer(offsets), buf]
    )
    try:
        lines = lines_bin.cast(pa.large_string())
    except pa.ArrowInvalid as exc:
        bad = _first_invalid_utf8_line(lines_bin)
        raise ValueError(f"{name}:{bad}: invalid UTF-8") from exc
    lines = pc.utf8_trim_whitespace(lines)
    keep = pc.invert(pc.match_substring_regex(lines, _SKIP_RE))
    line_numbers = np.flatnonzero(keep.to_numpy(zero_copy_only=False)) + 1
    lines = lines.filter(keep)
    if len(lines) == 0:
        return pa.table({c: pa.array([], pa.string()) for c in _COLUMNS})
    parsed = pc.extract_regex(lines, _LINE_RE)
    invalid = parsed.is_null()
    if pc.any(invalid).as_py():
        first = int(np.flatnonzero(invalid.to_numpy(zero_copy_only=False))[0])
        text = lines[first].as_py()
        if len(text) > 200:
            text = text[:200] + "..."
        raise ValueError(f"{name}:{int(line_numbers[first])}: malformed N-Triples line: {text!r}")
    return pa.table({c: _as_string_column(parsed.field(c)) for c in _COLUMNS})


def _first_invalid_utf8_line(lines: pa.Array) -> int:
    """1-based number of the first line that is not valid UTF-8 (slow path, errors only)."""
    for i, value in enumerate(lines):
        try:
            value.as_py().decode("utf-8")
        except UnicodeDecodeError:
            return i + 1
    return 0


def read_ntriples(path: str | os.PathLike[str]) -> pa.Table:
    """Read an N-Triples file (optionally compressed) into a table ``(s, p, o)`` of strings."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(path)
    table = _fast_path(path)
    if table is None:
        table = parse_ntriples_bytes(_read_bytes(path), name=str(path))
    cols = {c: _as_string_column(table[c]) for c in _COLUMNS}
    return pa.table(cols)


if __name__ == "__main__":  # pragma: no cover - manual timing helper
    import sys
    import time

    for arg in sys.argv[1:]:
        t0 = time.perf_counter()
        t = read_ntriples(arg)
        print(f"{arg}: {t.num_rows} triples in {time.perf_counter() - t0:.2f}s")

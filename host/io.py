"""Fact files and tables in, output relations out (Soufflé's tab-separated formats).

Columns are converted with Arrow kernels; a value that does not parse is reported as
``file:line:col: expected <type>, found '<text>'`` (the slow scan for the location runs
only on that error path).
"""

from __future__ import annotations

import csv
import gzip
import io
import math
import mmap
import os
import re
import stat
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from gpu_engine.ir import Location, ProgramError, Relation
from gpu_engine.values import floats_from_host, floats_to_host, int_range, word_size

from .dictionary import SymbolTable
from .io_params import IOOptions
from .record_io import RecordSyntaxError, encode_record_column, format_records, parse_records

_INT_RE = {"number": r"^\s*[-+]?(\d+|0x[0-9a-fA-F]+|0b[01]+)\s*$",
           "unsigned": r"^\s*\+?(\d+|0x[0-9a-fA-F]+|0b[01]+)\s*$",
           "float": r"^\s*[-+]?(\d+\.?\d*([eE][-+]?\d+)?|\.\d+([eE][-+]?\d+)?"
                    r"|(?i:inf|infinity|nan))\s*$"}  # strtof's spellings of inf and nan


class FactsError(ProgramError):
    """Malformed input data (with the file position when there is one)."""


# --- values <-> stored int64 columns -----------------------------------------------------


def encode_column(values: Any, typ: str, symbols: SymbolTable, what: str) -> np.ndarray:
    """Convert one column of user data (Arrow, NumPy or list) to stored int64 values."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if len(values) == 0:
        return np.zeros(0, dtype=np.int64)
    if isinstance(values, pa.Array) and values.null_count:
        raise FactsError(f"{what}: column contains nulls")
    if isinstance(values, pa.Array) and pa.types.is_decimal(values.type) and typ != "symbol":
        target = pa.float64() if typ == "float" else pa.uint64() if typ == "unsigned" else (
            pa.int64())
        try:  # decimal(20, 0): how Spark holds 64-bit unsigned values
            values = values.cast(target)
        except pa.ArrowInvalid:
            raise FactsError(f"{what}: a value is out of range for {typ} "
                             f"(or not an integer)") from None
    if typ == "symbol":
        if isinstance(values, pa.Array):
            if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
                    or pa.types.is_dictionary(values.type)):
                raise FactsError(f"{what}: expected strings for a symbol column, "
                                 f"got {values.type}")
            return symbols.encode_many(values.cast(pa.string())
                                       if pa.types.is_large_string(values.type) else values)
        arr = np.asarray(values)
        if arr.dtype.kind not in "OUS":
            raise FactsError(f"{what}: expected strings for a symbol column, got {arr.dtype}")
        return symbols.encode_many(pa.array(arr.astype(str).tolist(), type=pa.string()))
    arr = values.to_numpy(zero_copy_only=False) if isinstance(values, pa.Array) else (
        np.asarray(values))
    bits = word_size(symbols)
    if typ == "float":
        if arr.dtype.kind not in "fiu":
            raise FactsError(f"{what}: expected numbers for a float column, got {arr.dtype}")
        return floats_from_host(arr.astype(np.float64), bits)
    if bits == 64 and typ == "unsigned" and arr.dtype == np.uint64:
        return arr.view(np.int64).copy()  # uint64 values as their stored bit patterns
    if arr.dtype.kind not in "iu":
        if arr.dtype.kind == "f" and np.all(np.mod(arr, 1) == 0):
            arr = arr.astype(np.int64)
        elif arr.dtype.kind == "O" and len(arr) and all(isinstance(v, (int, np.integer))
                                                        for v in arr[:1]):
            arr = arr.astype(np.int64)
        else:
            raise FactsError(f"{what}: expected integers for a {typ} column, got {arr.dtype}")
    if arr.dtype == np.uint64 and len(arr) and int(arr.max()) > (1 << 63) - 1:
        bad = int(np.flatnonzero(arr > (1 << 63) - 1)[0])
        raise FactsError(f"{what}: value {arr[bad]} at row {bad} is out of range for {typ}")
    arr = arr.astype(np.int64)
    lo, hi = int_range(typ, bits)
    if len(arr) and (arr.min() < lo or arr.max() > hi):
        bad = int(np.flatnonzero((arr < lo) | (arr > hi))[0])
        raise FactsError(f"{what}: value {arr[bad]} at row {bad} is out of range for {typ}")
    return arr


def decode_column(col: np.ndarray, typ: str, symbols: SymbolTable) -> pa.Array:
    """Stored int64 values -> an Arrow column of the attribute's type."""
    if typ == "symbol":
        return symbols.decode_arrow(col)
    if word_size(symbols) == 64:  # int64, uint64 (from the stored bits), float64
        col = np.ascontiguousarray(col, dtype=np.int64)
        if typ == "number":
            return pa.array(col)
        if typ == "unsigned":
            return pa.array(col.view(np.uint64))
        return pa.array(floats_to_host(col, 64))
    if typ == "number":
        return pa.array(col.astype(np.int32))
    if typ == "unsigned":
        return pa.array(col.astype(np.uint32))
    return pa.array(floats_to_host(col))


def decode_table(cols: tuple[np.ndarray, ...] | list[np.ndarray], rel: Relation,
                 symbols: SymbolTable) -> pa.Table:
    """Stored columns of ``rel`` (arity >= 1) as an Arrow table named after its attributes
    (records and ADT values as their text)."""
    arrays = [decode_column(c, t, symbols) if rel.format(i) is None
              else format_records(c, rel.format(i), symbols)  # type: ignore[arg-type]
              for i, (c, (_, t)) in enumerate(zip(cols, rel.attributes))]
    return pa.table(arrays, names=unique_names([a for a, _ in rel.attributes]))


def unique_names(names: list[str]) -> list[str]:
    """Attribute names made unique for a table (``x, x`` -> ``x, x_1``)."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        out.append(n if k == 0 else f"{n}_{k}")
        seen[n] = k + 1
    return out


def format_column(col: np.ndarray, typ: str, symbols: SymbolTable,
                  float_digits: int | None = None) -> pa.Array:
    """Stored values as text, the way Soufflé prints them: floats as a C++ stream with
    ``setprecision(max_digits10)`` (``%.9g``, ``%.17g`` with 64-bit words), as Soufflé's
    CSV and stdout writers do; ``float_digits`` another precision (its JSON writer: 6)."""
    if typ == "symbol":
        return symbols.decode_arrow(col)
    bits = word_size(symbols)
    if typ != "float":
        if typ == "unsigned" and bits == 64:
            return pc.cast(pa.array(np.ascontiguousarray(col, dtype=np.int64).view(np.uint64)),
                           pa.string())
        return pc.cast(pa.array(col), pa.string())
    uniq, inv = np.unique(col, return_inverse=True)
    digits = float_digits or (17 if bits == 64 else 9)
    text = [float_output_text(v, digits) for v in floats_to_host(uniq, bits)]
    return pa.array(text, type=pa.string()).take(pa.array(inv.reshape(-1)))


def float_output_text(v: float, digits: int = 9) -> str:
    """``std::ostream << v`` at precision ``digits`` (``%.<digits>g``): ``0.1f`` is
    ``0.100000001``, ``1e10`` is ``1e+10``, a negative NaN ``-nan`` (glibc)."""
    f = float(v)
    if math.isnan(f):
        return "-nan" if math.copysign(1.0, f) < 0 else "nan"
    if math.isinf(f):
        return "inf" if f > 0 else "-inf"
    return f"{f:.{digits}g}"


# --- reading fact files --------------------------------------------------------------------


def read_facts(path: str | Path, rel: Relation, symbols: SymbolTable,
               delimiter: str = "\t", options: IOOptions | None = None) -> list[np.ndarray]:
    """Read a Soufflé ``.facts`` file for ``rel``; returns stored int64 columns.

    ``options`` (a directive's :class:`IOOptions`) override ``delimiter``.  Pipes,
    ``/dev/stdin``, ``/proc`` files and gzip-compressed files are read as streams; a
    nullary relation holds when its file has any content (a blank line is its tuple)."""
    opts = options if options is not None else IOOptions(delimiter)
    src = _FactSource(Path(path), rel)
    data = src.data
    if rel.arity == 0:
        # one marker column: holds or not
        body = data if data is not None else b"x" if src.size else b""
        if opts.headers and body:
            body = body.split(b"\n", 1)[1] if b"\n" in body else b""
        return [np.zeros(1 if body else 0, dtype=np.int64)]
    # Soufflé reads a symbol from a blank line of a one-column file (other blank lines,
    # which it rejects, are skipped here)
    blank = rel.arity == 1 and rel.attributes[0][1] == "symbol" and rel.format(0) is None
    if data is not None and not data.strip(b"\r\n") and not blank:
        return [np.zeros(0, dtype=np.int64) for _ in range(rel.arity)]
    if data is None and src.size == 0 or data == b"":
        return [np.zeros(0, dtype=np.int64) for _ in range(rel.arity)]
    want = opts.columns if opts.columns is not None else tuple(range(rel.arity))
    if len(want) != rel.arity:
        raise FactsError(f"columns={':'.join(map(str, want))} names {len(want)} columns for the "
                         f"{rel.arity} attributes of {rel.name}", Location(str(src.path), 1, 1))
    # Arrow's reader ends lines at a lone \r, which Soufflé keeps (getline splits at \n
    # only); a blank line of a one-symbol file is a symbol, at the very end too; with a
    # comma in the delimiter Soufflé keeps [...] together: the text path reads those
    by_lines = not opts.rfc4180 and (blank or _lone_cr(src) or _bracketed(src, opts))
    if len(opts.delimiter) == 1 and opts.delimiter not in "\r\n" and not by_lines:
        try:
            table = _read_csv(src, opts, rel.arity if opts.columns is None else None, blank)
        except pa.ArrowInvalid as exc:
            # lines with more columns than attributes: Soufflé reads the first ones
            try:
                table = _read_csv(src, opts, None, blank)
            except pa.ArrowInvalid:
                table = None
            if table is None and opts.rfc4180:
                raise _locate_shape_error(src, opts, str(exc), max(want) + 1) from None
        if table is not None and table.num_columns <= max(want):
            raise _locate_shape_error(src, opts, "", max(want) + 1)
        raw_cols = (_split_lines(src, opts, want, blank) if table is None
                    else [table.column(c) for c in want])  # chunked
        del table
    else:
        raw_cols = _split_lines(src, opts, want, blank)
    if all(t == "symbol" and rel.format(i) is None for i, (_, t) in enumerate(rel.attributes)):
        # every column a symbol: one dictionary encoding of all of them, chunk by chunk
        # (ids in the order of first occurrence, column by column, as one at a time)
        chunks = [c for raw in raw_cols for c in
                  (raw.chunks if isinstance(raw, pa.ChunkedArray) else [raw])]
        ids = symbols.encode_many(pa.chunked_array(chunks, type=pa.string()))
        ends = np.cumsum([len(raw) for raw in raw_cols])
        return np.split(ids, ends[:-1])
    cols = []
    for i, (_, typ) in enumerate(rel.attributes):
        raw = raw_cols[i]
        fmt = rel.format(i)
        if isinstance(raw, pa.ChunkedArray) and (fmt is not None or typ != "symbol"):
            raw = raw.combine_chunks()
        if fmt is not None:  # a record or ADT value (host/record_io.py)
            try:
                cols.append(parse_records(raw, fmt, symbols))
            except RecordSyntaxError as e:
                raise _locate_value_error(src, opts, e.row, i, fmt.name, str(e)) from None
            continue
        if typ == "symbol":
            cols.append(symbols.encode_many(raw))
            continue
        bits = word_size(symbols)
        ok = pc.fill_null(pc.match_substring_regex(raw, _INT_RE[typ]), False)
        if len(ok) and not pc.all(ok).as_py():
            bad = int(np.flatnonzero(~ok.to_numpy(zero_copy_only=False))[0])
            raise _locate_value_error(src, opts, bad, i, typ)
        text = pc.replace_substring_regex(pc.utf8_trim_whitespace(raw), r"^\+", "")
        try:
            if typ == "float":
                with np.errstate(over="ignore"):  # beyond float32: inf, as Soufflé reads it
                    cols.append(floats_from_host(pc.cast(text, pa.float64()).to_numpy(), bits))
                continue
            if bits == 64:
                cols.append(_read_ints64(text, typ, lambda row, i=i, typ=typ: _locate_value_error(
                    src, opts, row, i, typ, "out of range")))
                continue
            if pc.any(pc.match_substring_regex(text, "0[xb]")).as_py():
                vals = np.array([int(t, 0) for t in text.to_pylist()], dtype=np.int64)
            else:
                vals = pc.cast(text, pa.int64()).to_numpy()
        except (pa.ArrowInvalid, ValueError, OverflowError):
            bad = _first_unconvertible(text, typ)
            raise _locate_value_error(src, opts, bad, i, typ) from None
        lo, hi = int_range(typ)
        outside = (vals < lo) | (vals > hi)
        if outside.any():
            raise _locate_value_error(src, opts, int(np.flatnonzero(outside)[0]),
                                      i, typ, "out of range")
        cols.append(vals)
    return cols


def _read_ints64(text: pa.Array, typ: str, out_of_range: Any) -> np.ndarray:
    """64-bit ``number``/``unsigned`` text (checked against the value pattern) as stored
    values: int64, or uint64 bit patterns; a value beyond the range raises
    ``out_of_range(row)``."""
    lo, hi = int_range(typ, 64)
    if not pc.any(pc.match_substring_regex(text, "0[xb]")).as_py():
        try:
            if typ == "unsigned":
                return pc.cast(text, pa.uint64()).to_numpy().view(np.int64)
            return pc.cast(text, pa.int64()).to_numpy()
        except pa.ArrowInvalid:
            pass  # out of range somewhere: found below
    vals = [int(t, 0) for t in text.to_pylist()]
    for row, v in enumerate(vals):
        if not lo <= v <= hi:
            raise out_of_range(row)
    if typ == "unsigned":
        return np.array(vals, dtype=np.uint64).view(np.int64)
    return np.array(vals, dtype=np.int64)


def _first_unconvertible(text: pa.Array, typ: str) -> int:
    """The row of the first value a cast rejected (error path only)."""
    for k, t in enumerate(text.to_pylist()):
        try:
            float(t) if typ == "float" else int(t, 0)
        except (ValueError, OverflowError):
            return k
    return 0


_GZIP_MAGIC = b"\x1f\x8b"


class _FactSource:
    """A fact file: a regular file Arrow reads by path, or the bytes of a stream (pipe,
    ``/dev/stdin``, a ``/proc`` file, anything whose size is not known) or of a gzip file
    (decompressed), read once."""

    def __init__(self, path: Path, rel: Relation) -> None:
        self.path = path
        try:
            st = path.stat()
        except OSError:
            raise FactsError(f"cannot open fact file {path} for relation {rel.name}",
                             Location(str(path), 0, 0)) from None
        if stat.S_ISDIR(st.st_mode):
            raise FactsError(f"fact file {path} for relation {rel.name} is a directory",
                             Location(str(path), 0, 0))
        self.rel = rel
        self.size = st.st_size
        self.data: bytes | None = None
        try:
            if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
                self.data = _maybe_gunzip(path, path.read_bytes())
            else:
                with open(path, "rb") as f:
                    if f.read(2) == _GZIP_MAGIC:
                        self.data = _maybe_gunzip(path, _GZIP_MAGIC + f.read())
        except OSError as exc:
            raise FactsError(f"cannot read fact file {path} for relation {rel.name}: "
                             f"{exc.strerror or exc}", Location(str(path), 0, 0)) from None

    def arrow_source(self) -> Any:
        return str(self.path) if self.data is None else pa.BufferReader(self.data)

    def raw(self) -> bytes:
        return self.data if self.data is not None else self.path.read_bytes()

    def text(self) -> str:
        """The whole text, or :class:`FactsError` at the first byte that is not UTF-8."""
        raw = self.raw()
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            line = raw.count(b"\n", 0, exc.start) + 1
            col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
            raise FactsError(f"invalid UTF8 byte 0x{raw[exc.start]:02x} in facts for "
                             f"{self.rel.name}", Location(str(self.path), line, col)) from None


def _maybe_gunzip(path: Path, data: bytes) -> bytes:
    if not data.startswith(_GZIP_MAGIC):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error) as exc:
        raise FactsError(f"corrupt gzip data: {exc}", Location(str(path), 0, 0)) from None


def _rows(src: _FactSource, opts: IOOptions) -> list[tuple[int, list[str], list[int]]]:
    """(line number, fields, 1-based start column of each field) of every data row, the
    way the reader sees them (error paths only)."""
    text = src.text()
    out: list[tuple[int, list[str], list[int]]] = []
    if opts.rfc4180:
        reader = csv.reader(io.StringIO(text), delimiter=opts.delimiter, quotechar='"',
                            doublequote=True, strict=True)
        first = True
        try:
            start = 1
            for fields in reader:
                if not (first and opts.headers) and fields:
                    out.append((start, fields, [1] * len(fields)))
                first = False
                start = reader.line_num + 1
        except csv.Error as exc:
            raise FactsError(f"malformed quoted CSV for {src.rel.name}: {exc}",
                             Location(str(src.path), reader.line_num, 1)) from None
        return out
    for k, line in enumerate(text.split("\n")):
        if k == 0 and opts.headers:
            continue
        line = line.removesuffix("\r")
        if line == "":
            continue
        fields = line.split(opts.delimiter)
        starts, c = [], 1
        for f in fields:
            starts.append(c)
            c += len(f) + len(opts.delimiter)
        out.append((k + 1, fields, starts))
    return out


def _read_csv(src: _FactSource, opts: IOOptions, width: int | None, blank: bool) -> pa.Table:
    """The file as string columns by Arrow's CSV reader: ``width`` columns, or (None) as
    many as its first line has (every line must have as many)."""
    names = None if width is None else [f"c{i}" for i in range(width)]
    types = names or [f"f{i}" for i in range(1024)]  # (autogenerated names: f0, f1, ...)
    return pacsv.read_csv(
        src.arrow_source(),
        read_options=pacsv.ReadOptions(column_names=names,
                                       autogenerate_column_names=names is None,
                                       block_size=1 << 24, skip_rows=1 if opts.headers else 0),
        parse_options=pacsv.ParseOptions(
            delimiter=opts.delimiter, quote_char='"' if opts.rfc4180 else False,
            double_quote=opts.rfc4180, escape_char=False,
            newlines_in_values=opts.rfc4180, ignore_empty_lines=not blank),
        convert_options=pacsv.ConvertOptions(
            column_types={n: pa.string() for n in types}, strings_can_be_null=False,
            quoted_strings_can_be_null=False),
    )


def _split_lines(src: _FactSource, opts: IOOptions, want: tuple[int, ...],
                 blank: bool = False) -> list[pa.Array]:
    """The columns ``want`` of a file split by Arrow string kernels (a delimiter Arrow's
    CSV reader cannot take, or lines of different widths); columns past them are
    ignored, as Soufflé ignores them."""
    text = src.text()
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final line break
    if opts.headers:
        lines = lines[1:]
    # one \r before the line break goes (Soufflé's readNextTuple), others stay
    arr = pc.replace_substring_regex(pa.array(lines, pa.string()), pattern="\r$",
                                     replacement="", max_replacements=1)
    if not blank:
        arr = arr.filter(pc.not_equal(arr, ""))
    if "," in opts.delimiter and not opts.rfc4180 and "[" in text:  # Soufflé's nextElement:
        # a delimiter inside [...] is text
        parts = pa.array([_split_bracketed(x, opts.delimiter) for x in arr.to_pylist()],
                         pa.list_(pa.string()))
    else:
        parts = pc.split_pattern(arr, pattern=opts.delimiter)
    lens = pc.list_value_length(parts).to_numpy(zero_copy_only=False)
    if len(lens) and (lens <= max(want)).any():
        raise _locate_shape_error(src, opts, "", max(want) + 1)
    return [pc.list_element(parts, c) for c in want]


def _scan(src: _FactSource, fn: Any) -> Any:
    """``fn`` of the file's bytes (a memory map of a regular file: nothing is copied)."""
    if src.data is not None or not src.size:
        return fn(src.data or b"")
    with open(src.path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
        return fn(m)


def _lone_cr(src: _FactSource) -> bool:
    """Whether the file holds a carriage return not followed by a line break (one pass
    of ``memchr`` when it holds none)."""
    def lone(buf: Any) -> bool:
        if buf.find(b"\r") < 0:
            return False
        a = np.frombuffer(buf, dtype=np.uint8)
        cr = a == 13
        found = bool(cr[-1] or (cr[:-1] & (a[1:] != 10)).any())
        del a, cr  # the map's buffer is released before it closes
        return found

    return bool(_scan(src, lone))


def _bracketed(src: _FactSource, opts: IOOptions) -> bool:
    """Whether fields are split around brackets: a comma in the delimiter and a ``[`` in
    the file (Soufflé's ReadStreamCSV keeps a record's text whole then)."""
    if "," not in opts.delimiter or opts.rfc4180:
        return False
    return bool(_scan(src, lambda buf: buf.find(b"[") >= 0))


def _split_bracketed(line: str, delimiter: str) -> list[str]:
    """The fields of a line split at ``delimiter`` outside brackets (``[1,2],3`` with a
    comma is ``[1,2]`` and ``3``), as Soufflé's ``nextElement`` does for a delimiter
    holding a comma."""
    out: list[str] = []
    start = depth = 0
    i = 0
    while i < len(line):
        if depth == 0 and line.startswith(delimiter, i):
            out.append(line[start:i])
            i = start = i + len(delimiter)
            continue
        depth += {"[": 1, "]": -1}.get(line[i], 0)
        i += 1
    out.append(line[start:])
    return out


def _locate_value_error(src: _FactSource, opts: IOOptions, row: int, col: int, typ: str,
                        why: str = "") -> FactsError:
    rows = _rows(src, opts)
    if row >= len(rows):
        return FactsError(f"expected a {typ} for attribute {col + 1} of {src.rel.name}"
                          + (f" ({why})" if why else ""), Location(str(src.path), 1, 1))
    lineno, fields, starts = rows[row]
    text = fields[col] if col < len(fields) else ""
    column = starts[col] if col < len(starts) else 1
    msg = f"expected a {typ} for attribute {col + 1} of {src.rel.name}, found {text!r}"
    return FactsError(msg + (f" ({why})" if why else ""), Location(str(src.path), lineno, column))


def _locate_shape_error(src: _FactSource, opts: IOOptions, detail: str,
                        need: int | None = None) -> FactsError:
    """The first line with fewer than ``need`` (default: the arity) values."""
    what = "tab-separated" if opts.delimiter == "\t" else f"{opts.delimiter!r}-separated"
    need = need or src.rel.arity
    for lineno, fields, _ in _rows(src, opts):  # raises at a bad UTF-8 byte
        if len(fields) < need:
            return FactsError(f"expected {need} {what} values for {src.rel.name}, "
                              f"found {len(fields)}", Location(str(src.path), lineno, 1))
    return FactsError(f"cannot parse facts for {src.rel.name}: {detail}",
                      Location(str(src.path), 1, 1))


# --- writing outputs ---------------------------------------------------------------------


def render_rows(cols: tuple[np.ndarray, ...], rel: Relation, symbols: SymbolTable,
                delimiter: str = "\t", n_rows: int | None = None,
                options: IOOptions | None = None) -> str:
    """The rows of a relation as Soufflé writes them (nullary: ``()`` when it holds).

    ``options`` (a directive's :class:`IOOptions`) override ``delimiter``; with
    ``rfc4180`` symbols and records are quoted as Soufflé quotes them.  The header line
    (``headers=true``) is :func:`header_line`'s business, not this function's."""
    opts = options if options is not None else IOOptions(delimiter)
    delimiter = opts.delimiter
    if rel.arity == 0:
        return "()\n" if n_rows else ""
    if len(cols[0]) == 0:
        return ""
    texts = [format_column(c, t, symbols) if rel.format(i) is None
             else format_records(c, rel.format(i), symbols,  # type: ignore[arg-type]
                                 quote_symbols=opts.rfc4180)
             for i, (c, (_, t)) in enumerate(zip(cols, rel.attributes))]
    if opts.rfc4180:  # symbols and records quoted (Soufflé's WriteStreamCSV): a record's
        # '"' doubled, a symbol's written as \"" (its writer puts a backslash before the
        # quote it then writes twice: "a\""b" for a"b, as Soufflé's documentation shows)
        texts = [pc.binary_join_element_wise(
                     '"', pc.replace_substring(x, '"', '\\""' if t == "symbol" else '""'),
                     '"', "")
                 if t == "symbol" or rel.format(i) is not None else x
                 for i, (x, (_, t)) in enumerate(zip(texts, rel.attributes))]
    try:
        if len(delimiter) == 1 and delimiter not in "\"\r\n" and not opts.rfc4180:
            return _csv_text(texts, delimiter)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        pass  # a value holds the delimiter, a quote or a line break: written as it is below
    lines = texts[0] if len(texts) == 1 else pc.binary_join_element_wise(*texts, delimiter)
    return "\n".join(lines.to_pylist()) + "\n"


def header_line(rel: Relation, options: IOOptions) -> str | None:
    """The header line ``headers=true`` asks for (the directive's ``attributeNames`` as
    written, or the attribute names joined by its delimiter parameter, a tab without
    one: Soufflé's IOAttributes), without its line break."""
    if not options.headers:
        return None
    if options.attribute_names is not None:
        return options.attribute_names
    return options.header_delimiter.join(a for a, _ in rel.attributes)


def encode_output(text: str, options: IOOptions) -> bytes:
    """The bytes of an output file: UTF-8, gzip-compressed with ``compress=true``."""
    data = text.encode()
    return gzip.compress(data, mtime=0) if options.compress else data


WRITE_CHUNK_ROWS = 1 << 18  # rows per piece of text written by one thread


def _csv_text(texts: list[pa.Array], delimiter: str) -> str:
    """The lines of text columns joined by ``delimiter`` (no quoting, ``\\n`` after every
    line) by Arrow's CSV writer, large tables in pieces written by parallel threads (the
    writer releases the GIL).  Raises ``ArrowInvalid`` when a value holds the delimiter,
    a quote or a line break (Arrow would have to quote it; the caller writes it as is)."""
    table = pa.table(texts, names=[f"c{i}" for i in range(len(texts))])
    opts = pacsv.WriteOptions(include_header=False, delimiter=delimiter, quoting_style="none")

    def piece(start: int, length: int) -> str:
        sink = pa.BufferOutputStream()
        pacsv.write_csv(table.slice(start, length), sink, opts)
        return sink.getvalue().to_pybytes().decode()

    n = table.num_rows
    workers = min(os.cpu_count() or 1, -(-n // WRITE_CHUNK_ROWS))
    if workers <= 1:
        return piece(0, n)
    k = 4 * workers  # a few pieces a thread: even when a core is busy elsewhere
    bounds = [n * i // k for i in range(k + 1)]
    with ThreadPoolExecutor(workers) as ex:
        return "".join(ex.map(lambda i: piece(bounds[i], bounds[i + 1] - bounds[i]),
                              range(k)))


def write_text_atomic(path: Path, text: str | bytes) -> None:
    """Write ``text`` beside ``path`` and rename it into place (no temporary file is
    left behind when the write fails)."""
    tmp = stage_file(path, text.encode() if isinstance(text, str) else text)
    os.replace(tmp, path)


_STAGED = 0


def stage_file(path: Path, data: bytes) -> Path:
    """Write ``data`` to a temporary file beside ``path`` and return its name (the caller
    renames it into place, or removes it); removes it itself when the write fails."""
    global _STAGED
    _STAGED += 1  # unique per call: two outputs may name the same file
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}.{_STAGED}")
    try:
        with open(tmp, "wb") as f:
            f.write(data)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return tmp


_PARAM_RE = re.compile(r"^[A-Za-z_]+$")


# --- Arrow tables in (Spark DataFrames and Parquet datasets arrive as Arrow) ----------------

_ARROW_KINDS = {"number": ("integer", pa.types.is_integer),
                "unsigned": ("integer", lambda t: pa.types.is_integer(t) or (  # Spark's uint64
                    pa.types.is_decimal(t) and t.scale == 0)),
                "float": ("floating-point or integer",
                          lambda t: pa.types.is_floating(t) or pa.types.is_integer(t)),
                "symbol": ("string", lambda t: pa.types.is_string(t) or pa.types.is_large_string(t)
                           or (pa.types.is_dictionary(t) and pa.types.is_string(t.value_type)))}


def table_columns(schema: pa.Schema, rel: Relation, source: str,
                  columns: list[str] | tuple[str, ...] | None = None) -> list[str]:
    """The columns of ``schema`` that hold ``rel``'s attributes, in declaration order.

    Columns are found by name (the ``.decl`` attribute names, or ``columns``); extra
    columns are ignored.  Raises :class:`FactsError` naming ``source`` for a missing
    column or a column whose type cannot hold the attribute's values."""
    names = list(columns) if columns is not None else [a for a, _ in rel.attributes]
    if rel.arity == 0:
        return []
    if len(names) != rel.arity:
        raise FactsError(f"{source}: {len(names)} column names given for {rel.name}, "
                         f"which has {rel.arity} attributes")
    decl = ", ".join(f"{a}:{t}" for a, t in rel.attributes)
    for k, (name, (attr, typ)) in enumerate(zip(names, rel.attributes)):
        if name not in schema.names:
            raise FactsError(f"{source}: no column {name!r} for attribute {k + 1} of "
                             f"{rel.name}({decl}); the data has columns {schema.names}")
        t = schema.field(name).type
        what, ok = _ARROW_KINDS[typ]
        if rel.format(k) is not None:  # a record/ADT column: its text (or ids)
            what, ok = "record text or integer", lambda t: (_ARROW_KINDS["symbol"][1](t)
                                                            or pa.types.is_integer(t))
        if not ok(t):
            raise FactsError(f"{source}: column {name!r} has type {t}, but attribute "
                             f"{attr!r} of {rel.name} is declared {typ} and needs {what} values")
    return names


def encode_table(table: pa.Table, rel: Relation, symbols: SymbolTable, source: str,
                 columns: list[str] | tuple[str, ...] | None = None
                 ) -> tuple[tuple[np.ndarray, ...], int]:
    """A table's facts for ``rel`` as stored int64 columns and a row count (nullary:
    the relation holds when the table has a row whose ``holds`` column, if any, is true).

    Checks names and types (:func:`table_columns`), nulls and value ranges."""
    if rel.arity == 0:
        n = table.num_rows
        if n and "holds" in table.schema.names:
            n = int(pc.sum(pc.cast(table.column("holds"), pa.int64())).as_py() or 0)
        return (), min(n, 1)
    names = table_columns(table.schema, rel, source, columns)
    cols = []
    for k, (name, (_attr, typ)) in enumerate(zip(names, rel.attributes)):
        col = table.column(name)
        if col.null_count:
            first = int(np.flatnonzero(col.is_null().to_numpy(zero_copy_only=False))[0])
            raise FactsError(f"{source}: column {name!r} of {rel.name} has {col.null_count} "
                             f"null values (first at row {first}); facts cannot hold nulls")
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        what = f"{source}: column {name!r} of {rel.name}"
        fmt = rel.format(k)
        if fmt is not None:
            try:
                cols.append(encode_record_column(col, fmt, symbols, what))
            except ValueError as e:
                raise FactsError(str(e)) from None
            continue
        cols.append(encode_column(col, typ, symbols, what))
    return tuple(cols), table.num_rows


def portable_table(table: pa.Table, arity: int) -> pa.Table:
    """A decoded relation table in the types Spark and Parquet readers share: unsigned
    widened to int64 (64-bit unsigned to decimal(20, 0), as Spark reads Parquet's UINT64),
    non-null fields; a nullary relation as one boolean ``holds`` column (one row when it
    holds)."""
    if arity == 0:
        return pa.table({"holds": pa.array([True] * min(table.num_rows, 1), pa.bool_())})
    fields = [pa.field(f.name, _portable_type(f.type), nullable=False) for f in table.schema]
    return table.cast(pa.schema(fields))


def _portable_type(t: pa.DataType) -> pa.DataType:
    if t == pa.uint64():
        return pa.decimal128(20, 0)
    return pa.int64() if pa.types.is_unsigned_integer(t) else t

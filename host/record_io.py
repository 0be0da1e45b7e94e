"""Record and ADT values as text, in Soufflé's format.

Records print as ``[1, 2, meow]`` (symbols unquoted, fields separated by ``", "``), the
empty record as ``nil``, ADT values as ``$Branch(a, b)`` or ``$Branch`` for a branch
without fields.  Reading accepts the same text (a symbol field may also be a quoted
string).  Both work on the distinct values only; printing shares the text of shared
subterms.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pyarrow as pa

from gpu_engine.ir import RecordFormat
from gpu_engine.values import floats_from_host, int_range, word_size, wrap_int

_NUMBER = re.compile(r"\s*([-+]?(?:0x[0-9a-fA-F]+|0b[01]+|\d+(?:\.\d*)?(?:[eE][-+]?\d+)?|inf|nan))")
_IDENT = re.compile(r"\s*([_?A-Za-z][_?A-Za-z0-9]*)")
_BRANCH = re.compile(r"\s*([_?A-Za-z][_?A-Za-z0-9]*(?:\.[_?A-Za-z][_?A-Za-z0-9]*)*)")


def format_records(ids: np.ndarray, fmt: RecordFormat, symbols: Any,
                   quote_symbols: bool = False) -> pa.Array:
    """Text of a column of record ids of type ``fmt`` (``quote_symbols``: symbols inside
    are written ``"..."`` with ``\\`` and ``"`` escaped by a backslash, as Soufflé writes
    records in ``rfc4180`` files).

    The records reachable from the column are collected level by level (one gather per
    field and level, no recursion), then printed fields first (:func:`children_first`: a
    record's id may be below its fields' when its tuple was packed before, for another
    type of the same arity), so their text is ready when it is printed.
    """
    uniq, inverse = np.unique(np.asarray(ids, dtype=np.int64), return_inverse=True)
    records = symbols.records
    wanted: dict[int, tuple[RecordFormat, set[int]]] = {}
    frontier = [(fmt, uniq)]
    while frontier:
        nxt = []
        for f, vals in frontier:
            vals = vals[(vals > 0) & (vals < len(records))]
            _, seen = wanted.setdefault(id(f), (f, set()))
            new = np.array(sorted(set(vals.tolist()) - seen), dtype=np.int64)
            if not len(new):
                continue
            seen.update(new.tolist())
            for branch, ftypes in _shapes(f, new, records):
                for j, ft in enumerate(ftypes):
                    if isinstance(ft, RecordFormat):
                        nxt.append((ft, records.field(branch, j + _shift(f))[0]))
        frontier = nxt
    text: dict[tuple[int, int], str] = {}
    jobs = []  # (id, fmt, name or None, [per-field texts or None])
    for f, seen in wanted.values():
        todo = np.array(sorted(seen), dtype=np.int64)
        for k, (branch, ftypes) in enumerate(_shapes(f, todo, records)):
            base = [None if isinstance(ft, RecordFormat) else
                    _base_texts(records.field(branch, j + _shift(f))[0], ft, symbols,
                                quote_symbols)
                    for j, ft in enumerate(ftypes)]
            kids = [records.field(branch, j + _shift(f))[0].tolist()
                    if isinstance(ft, RecordFormat) else None for j, ft in enumerate(ftypes)]
            name = f.branches[k][0] if f.kind == "adt" else None
            for r, rid in enumerate(branch.tolist()):
                jobs.append((rid, f, name, ftypes, base, kids, r))
    by_key = {(id(j[1]), j[0]): j for j in jobs}

    def fields_of(key: tuple[int, int]) -> list[tuple[int, int]]:
        _, _, _, ftypes, _, kids, r = by_key[key]
        return [(id(ft), kids[j][r]) for j, ft in enumerate(ftypes)
                if isinstance(ft, RecordFormat) and (id(ft), kids[j][r]) in by_key]

    for key in children_first(sorted(by_key), fields_of):
        rid, f, name, ftypes, base, kids, r = by_key[key]
        parts = [base[j][r] if base[j] is not None else  # type: ignore[index]
                 text.get((id(ft), kids[j][r]), "nil")  # type: ignore[index]
                 for j, ft in enumerate(ftypes)]
        if name is None:
            text[(id(f), rid)] = "[" + ", ".join(parts) + "]"
        else:
            text[(id(f), rid)] = f"${name}({', '.join(parts)})" if ftypes else f"${name}"
    key = id(fmt)
    out = [text.get((key, i), "nil") for i in uniq.tolist()]
    return pa.array(out, type=pa.string()).take(pa.array(inverse.reshape(-1)))


def children_first(keys: list[Any], kids: Any) -> list[Any]:
    """``keys`` and what ``kids`` reaches from them, each after the keys it reaches (an
    iterative depth-first post-order; a cycle, which no packing makes, is cut)."""
    out: list[Any] = []
    state: dict[Any, bool] = {}  # False: on the current path, True: placed
    for root in keys:
        stack = [(root, False)]
        while stack:
            k, placed = stack.pop()
            if placed:
                state[k] = True
                out.append(k)
            elif k not in state:
                state[k] = False
                stack.append((k, True))
                stack.extend((c, False) for c in kids(k) if c not in state)
    return out


def _shift(f: RecordFormat) -> int:
    return 1 if f.kind == "adt" else 0


def _shapes(f: RecordFormat, ids: np.ndarray, records: Any) -> list[tuple[np.ndarray, list]]:
    """(ids, field types) per branch of ``f`` (one group for a record type)."""
    if f.kind == "record":
        return [(ids, [ft for _, ft in f.fields])]
    tags, _ = records.field(ids, 0)
    return [(ids[tags == k], ftypes) for k, (_, ftypes) in enumerate(f.branches)]


def _base_texts(vals: np.ndarray, ft: Any, symbols: Any, quote: bool = False) -> list[str]:
    from .io import format_column

    texts = format_column(vals, ft, symbols).to_pylist()
    if quote and ft == "symbol":
        return ['"' + t.replace("\\", "\\\\").replace('"', '\\"') + '"' for t in texts]
    return texts


# --- reading ---------------------------------------------------------------------------


class RecordSyntaxError(ValueError):
    """A record or ADT value that does not parse (``pos``: its 0-based column)."""

    def __init__(self, message: str, pos: int) -> None:
        super().__init__(message)
        self.pos = pos
        self.row = 0


def parse_records(raw: pa.Array, fmt: RecordFormat, symbols: Any) -> np.ndarray:
    """Ids of a column of record texts; raises :class:`RecordSyntaxError` (with the
    first row holding the text) for text that does not parse."""
    enc = raw.dictionary_encode()
    uniq = enc.dictionary.to_pylist()
    ids = np.empty(len(uniq), dtype=np.int64)
    for k, text in enumerate(uniq):
        p = _Parser(text, symbols)
        try:
            ids[k] = p.value(fmt)
            p.end()
        except RecordSyntaxError as e:
            e.row = int(np.flatnonzero(enc.indices.to_numpy(zero_copy_only=False) == k)[0])
            raise
    return ids[enc.indices.to_numpy(zero_copy_only=False).astype(np.int64)]


class _Parser:
    def __init__(self, text: str, symbols: Any) -> None:
        self.s = text
        self.i = 0
        self.symbols = symbols

    def _ws(self) -> None:
        while self.i < len(self.s) and self.s[self.i] in " \t\r":
            self.i += 1

    def _expect(self, ch: str) -> None:
        self._ws()
        if not self.s.startswith(ch, self.i):
            found = self.s[self.i:self.i + 10] or "end of value"
            raise RecordSyntaxError(f"expected '{ch}', found {found!r}", self.i)
        self.i += len(ch)

    def _peek(self, ch: str) -> bool:
        self._ws()
        return self.s.startswith(ch, self.i)

    def end(self) -> None:
        self._ws()
        if self.i != len(self.s):
            raise RecordSyntaxError(f"unexpected {self.s[self.i:self.i + 10]!r}", self.i)

    def value(self, ft: Any) -> int:
        if isinstance(ft, RecordFormat):
            return self._record(ft) if ft.kind == "record" else self._adt(ft)
        if ft == "symbol":
            return self._symbol()
        m = _NUMBER.match(self.s, self.i)
        if not m:
            raise RecordSyntaxError(f"expected a {ft}", self.i)
        self.i = m.end()
        text = m.group(1)
        bits = word_size(self.symbols)
        if ft == "float":
            return int(floats_from_host(np.array([float(text)]), bits)[0])
        v = int(text, 0) if text.lstrip("+-")[:2] in ("0x", "0b") else int(text)
        lo, hi = int_range(ft, bits)
        if not lo <= v <= hi:
            raise RecordSyntaxError(f"{ft} {text} out of range", self.i)
        return wrap_int(v, ft, bits)

    def _symbol(self) -> int:
        self._ws()
        if self._peek('"'):
            j = self.i + 1
            out = []
            while j < len(self.s) and self.s[j] != '"':
                if self.s[j] == "\\" and j + 1 < len(self.s):
                    j += 1
                out.append(self.s[j])
                j += 1
            if j >= len(self.s):
                raise RecordSyntaxError("unterminated string", self.i)
            self.i = j + 1
            return int(self.symbols.encode("".join(out)))
        j = self.i
        depth = 0
        while j < len(self.s):
            c = self.s[j]
            if c in "[(":
                depth += 1
            elif c in "])":
                if depth == 0:
                    break
                depth -= 1
            elif c == "," and depth == 0:
                break
            j += 1
        text = self.s[self.i:j].strip()
        self.i = j
        return int(self.symbols.encode(text))

    def _record(self, fmt: RecordFormat) -> int:
        if self._peek("nil"):
            self.i += 3
            return 0
        self._expect("[")
        vals = []
        for k, (_, ft) in enumerate(fmt.fields):
            if k:
                self._expect(",")
            vals.append(self.value(ft))
        self._expect("]")
        return self.symbols.records.pack_one(tuple(vals))

    def _adt(self, fmt: RecordFormat) -> int:
        self._expect("$")
        m = _BRANCH.match(self.s, self.i)  # branches of component instances: `inst.B`
        if not m:
            raise RecordSyntaxError(f"expected a branch of {fmt.name}", self.i)
        names = [b for b, _ in fmt.branches]
        if m.group(1) not in names:
            raise RecordSyntaxError(f"{m.group(1)!r} is not a branch of {fmt.name}", self.i)
        self.i = m.end()
        k = names.index(m.group(1))
        ftypes = fmt.branches[k][1]
        vals = []
        if ftypes or self._peek("("):
            self._expect("(")
            for j, ft in enumerate(ftypes):
                if j:
                    self._expect(",")
                vals.append(self.value(ft))
            self._expect(")")
        return self.symbols.records.pack_one((k, *vals))


def encode_record_column(values: Any, fmt: RecordFormat, symbols: Any, what: str) -> np.ndarray:
    """User data of a record/ADT column: texts (``"[1, a]"``, ``"$A(1)"``) or ids."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
            return _parse_column(values.cast(pa.string()), fmt, symbols, what)
        values = values.to_numpy(zero_copy_only=False)
    arr = np.asarray(values)
    if arr.dtype.kind in "OUS":
        return _parse_column(pa.array([str(v) for v in arr.tolist()], type=pa.string()),
                             fmt, symbols, what)
    if arr.dtype.kind not in "iu":
        raise ValueError(f"{what}: expected record texts or ids, got {arr.dtype}")
    ids = arr.astype(np.int64)
    if len(ids) and (ids.min() < 0 or ids.max() >= len(symbols.records)):
        raise ValueError(f"{what}: record id outside the record table")
    return ids


def _parse_column(raw: pa.Array, fmt: RecordFormat, symbols: Any, what: str) -> np.ndarray:
    try:
        return parse_records(raw, fmt, symbols)
    except RecordSyntaxError as e:
        raise ValueError(f"{what}: row {e.row}: {e} (a {fmt.name} value)") from None

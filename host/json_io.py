"""Soufflé's JSON IO: ``IO=jsonfile`` (``<rel>.json`` or ``filename=``) and ``IO=json``
(standard input / output), with ``format=list`` (the default) or ``format=object``.

Output, as Soufflé writes it: ``[`` then one JSON value per tuple separated by ``,\\n``, then
``]\\n``; a tuple is ``[v1, v2]`` (list) or ``{"a": v1, "b": v2}`` (object, keys the attribute
names); a record is a list (or an object keyed by its field names), ``nil`` is ``null``;
symbols are JSON strings, numbers and floats as in ``.csv`` output, an ``unsigned`` is
printed as the signed 32-bit integer of its bits (Soufflé casts it to ``int``).  A nullary
relation that holds is ``[null\\n]``.  ADT attributes are refused (Soufflé's JSON writer and
reader have no ADT form).

Input: a JSON array of tuples, each a list or an object (keys the attribute names, in any
order; a missing key is an error here, where Soufflé would read a 0).  Values must have the
attribute's JSON kind (strings for symbols, integers for ``number``/``unsigned``, numbers for
``float``, lists/objects/``null`` for records); errors name the file and the tuple.  Values
are converted once per tuple in Python on the host (JSON is parsed by Python's ``json``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpu_engine.ir import Location, ProgramError, RecordFormat, Relation
from gpu_engine.values import int_range, word_size

from .dictionary import SymbolTable
from .io import FactsError, encode_column, format_column
from .record_io import children_first

JSON_KINDS = ("json", "jsonfile")


def check_json_relation(rel: Relation, loc: Location) -> None:
    """Refuse relations with ADT attributes (there is no JSON form of them)."""
    for i, (name, _) in enumerate(rel.attributes):
        fmt = rel.format(i)
        if fmt is not None and _has_adt(fmt, set()):
            raise ProgramError(f"IO=json cannot read or write attribute '{name}' of "
                               f"{rel.name}: algebraic data types have no JSON form", loc)


def _has_adt(fmt: RecordFormat, seen: set[int]) -> bool:
    if id(fmt) in seen:
        return False
    seen.add(id(fmt))
    if fmt.kind == "adt":
        return True
    return any(isinstance(t, RecordFormat) and _has_adt(t, seen) for _, t in fmt.fields)


# --- writing -------------------------------------------------------------------------------


def render_json(cols: tuple[np.ndarray, ...], rel: Relation, symbols: SymbolTable,
                n_rows: int, objects: bool = False) -> str:
    """The relation's tuples as Soufflé's JSON writer prints them (see the module)."""
    if rel.arity == 0:
        return "[null\n]\n" if n_rows else "[]\n"
    if n_rows == 0:
        return "[]\n"
    texts = []
    for i, (name, typ) in enumerate(rel.attributes):
        col = np.asarray(cols[i], dtype=np.int64)
        fmt = rel.format(i)
        if fmt is not None:
            uniq, inv = np.unique(col, return_inverse=True)
            memo: dict[tuple[int, int], str] = {}
            vals = [_record_text(int(v), fmt, symbols, objects, memo) for v in uniq.tolist()]
            text = pa.array(vals, pa.string()).take(pa.array(inv.reshape(-1)))
        else:
            text = _base_texts(col, typ, symbols)
        if objects:
            text = pc.binary_join_element_wise(json.dumps(name) + ": ", text, "")
        texts.append(text)
    joined = texts[0] if len(texts) == 1 else pc.binary_join_element_wise(*texts, ", ")
    opening, closing = ("{", "}") if objects else ("[", "]")
    rows = pc.binary_join_element_wise(opening, joined, closing, "").to_pylist()
    return "[" + ",\n".join(rows) + "]\n"


def _base_texts(col: np.ndarray, typ: str, symbols: SymbolTable) -> pa.Array:
    """JSON texts of a plain column."""
    if typ == "symbol":
        uniq, inv = np.unique(col, return_inverse=True)
        vals = [json.dumps(s, ensure_ascii=False) for s in symbols.decode_many(uniq)]
        return pa.array(vals, pa.string()).take(pa.array(inv.reshape(-1)))
    if typ == "unsigned":  # Soufflé prints the bits as a signed int (as stored with 64 bits)
        if word_size(symbols) == 32:
            col = col.astype(np.uint32).view(np.int32).astype(np.int64)
        typ = "number"
    return format_column(col, typ, symbols, float_digits=6)  # its stream's default precision


def _scalar_text(v: int, typ: Any, symbols: SymbolTable, objects: bool,
                 memo: dict[tuple[int, int], str]) -> str:
    if isinstance(typ, RecordFormat):
        return _record_text(v, typ, symbols, objects, memo)
    return _base_texts(np.asarray([v], dtype=np.int64), typ, symbols)[0].as_py()


def _record_text(rid: int, fmt: RecordFormat, symbols: SymbolTable, objects: bool,
                 memo: dict[tuple[int, int], str]) -> str:
    """A record's JSON text; its fields are rendered first (:func:`children_first`, no
    deep recursion for deep lists)."""
    fmts: dict[int, RecordFormat] = {id(fmt): fmt}

    def fields_of(key: tuple[int, int]) -> list[tuple[int, int]]:
        r, f = key[0], fmts[key[1]]
        out = []
        for (_, ft), v in zip(f.fields, symbols.records.unpack(r), strict=False):
            if isinstance(ft, RecordFormat) and v != 0 and (v, id(ft)) not in memo:
                fmts[id(ft)] = ft
                out.append((v, id(ft)))
        return out

    roots = [] if rid == 0 or (rid, id(fmt)) in memo else [(rid, id(fmt))]
    for r, k in children_first(roots, fields_of):
        f = fmts[k]
        values = symbols.records.unpack(r)
        parts = []
        for (fname, ft), v in zip(f.fields, values, strict=False):
            t = "null" if isinstance(ft, RecordFormat) and v == 0 else (
                memo.get((v, id(ft)), "null") if isinstance(ft, RecordFormat)
                else _scalar_text(v, ft, symbols, objects, memo))
            parts.append(f"{json.dumps(fname)}: {t}" if objects else t)
        memo[(r, id(f))] = ("{" + ", ".join(parts) + "}") if objects else (
            "[" + ", ".join(parts) + "]")
    return "null" if rid == 0 else memo[(rid, id(fmt))]


# --- reading -------------------------------------------------------------------------------


def read_json_facts(text: str, rel: Relation, symbols: SymbolTable, source: str
                    ) -> tuple[list[np.ndarray], int]:
    """Stored columns and the tuple count of a JSON text for ``rel`` (see the module)."""
    try:
        data = json.loads(text) if text.strip() else []
    except json.JSONDecodeError as e:
        raise FactsError(f"malformed JSON for {rel.name}: {e.msg}",
                         Location(source, e.lineno, e.colno)) from None
    if not isinstance(data, list):
        raise FactsError(f"expected a JSON array of tuples for {rel.name}",
                         Location(source, 1, 1))
    if rel.arity == 0:
        return [], min(len(data), 1)
    names = [a for a, _ in rel.attributes]
    columns: list[list[Any]] = [[] for _ in names]
    for k, row in enumerate(data):
        if isinstance(row, dict):
            missing = [a for a in names if a not in row]
            extra = [a for a in row if a not in names]
            if missing or extra:
                raise FactsError(f"tuple {k + 1} of {rel.name}: "
                                 + (f"missing {missing}" if missing else f"unknown {extra}"),
                                 Location(source, 1, 1))
            vals = [row[a] for a in names]
        elif isinstance(row, list) and len(row) == len(names):
            vals = row
        else:
            raise FactsError(f"tuple {k + 1} of {rel.name}: expected a list of {len(names)} "
                             "values or an object", Location(source, 1, 1))
        for i, v in enumerate(vals):
            columns[i].append(v)
    out = []
    for i, (name, typ) in enumerate(rel.attributes):
        what = f"{source}: attribute '{name}' of {rel.name}"
        fmt = rel.format(i)
        try:
            if fmt is not None:
                out.append(np.asarray([_pack(v, fmt, symbols) for v in columns[i]],
                                      dtype=np.int64))
            else:
                out.append(_encode_base(columns[i], typ, symbols, what))
        except (TypeError, ValueError) as e:
            raise FactsError(f"{what}: {e}", Location(source, 1, 1)) from None
    return out, len(data)


def _check(v: Any, typ: str, bits: int = 32) -> Any:
    if typ == "symbol":
        if not isinstance(v, str):
            raise ValueError(f"expected a string, found {json.dumps(v)}")
        return v
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (
            typ != "float" and isinstance(v, float) and not v.is_integer()):
        raise ValueError(f"expected a {'number' if typ == 'float' else 'integer'}, "
                         f"found {json.dumps(v)}")
    if typ == "float":
        return float(v)
    v = int(v)
    if typ == "unsigned" and -(1 << (bits - 1)) <= v < 0:
        return v % (1 << bits)  # the bits of a signed int
    lo, hi = int_range(typ, bits)
    if not lo <= v <= hi:
        raise ValueError(f"{v} is out of range for {typ}")
    return v


def _encode_base(values: list[Any], typ: str, symbols: SymbolTable, what: str) -> np.ndarray:
    bits = word_size(symbols)
    checked = [_check(v, typ, bits) for v in values]
    if typ == "symbol":
        return encode_column(pa.array(checked, pa.string()), typ, symbols, what)
    if typ == "float":
        return encode_column(np.asarray(checked, dtype=np.float64), typ, symbols, what)
    wide = typ == "unsigned" and bits == 64  # uint64: encode_column stores the bits
    return encode_column(np.asarray(checked, dtype=np.uint64 if wide else np.int64), typ,
                         symbols, what)


def _pack(v: Any, fmt: RecordFormat, symbols: SymbolTable) -> int:
    if v is None:
        return 0
    names = [f for f, _ in fmt.fields]
    if isinstance(v, dict):
        if set(v) != set(names):
            raise ValueError(f"expected the fields {names} of {fmt.name}, found {sorted(v)}")
        v = [v[f] for f in names]
    if not isinstance(v, list) or len(v) != len(names):
        raise ValueError(f"expected a {fmt.name} record of {len(names)} fields, found "
                         f"{json.dumps(v)}")
    fields = []
    for (_, ft), x in zip(fmt.fields, v, strict=True):
        if isinstance(ft, RecordFormat):
            fields.append(_pack(x, ft, symbols))
        else:
            fields.append(int(_encode_base([x], ft, symbols, fmt.name)[0]))
    return symbols.records.pack_one(tuple(fields))


def read_json_path(path: Path, rel: Relation, symbols: SymbolTable
                   ) -> tuple[list[np.ndarray], int]:
    """:func:`read_json_facts` of a file (``-``: standard input)."""
    import sys

    if str(path) == "-":
        return read_json_facts(sys.stdin.read(), rel, symbols, "<stdin>")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        raise FactsError(f"cannot open JSON file {path} for relation {rel.name} "
                         f"({e.strerror or e})", Location(str(path), 0, 0)) from None
    return read_json_facts(text, rel, symbols, str(path))

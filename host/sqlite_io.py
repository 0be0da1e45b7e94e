"""Soufflé's SQLite IO (``IO=sqlite``), with Python's ``sqlite3``.

The database is ``filename=`` (or the legacy ``dbname=``, default ``<name>.sqlite``; ``name=``
defaults to the relation's name), in the fact directory (input) or the output directory
(output).  A ``file:`` URI or ``:memory:`` is passed to SQLite as it is; a relative ``file:``
path is resolved against the fact / output directory (Soufflé resolves it against the
working directory; its test harness runs in the output directory, where both agree).

Input: ``SELECT * FROM '<name>'`` (a table or a view), each value read as its text, as
Soufflé does: NULL or an empty text is ``n/a``; ``number`` parses like ``to_number``
(``0x``/``0b`` prefixes), ``unsigned`` like ``to_unsigned`` (a negative value is the signed
reading of its bits, as Soufflé writes them), ``float`` as C's ``strtof`` (so a float column
Soufflé wrote, as bits, reads back as that integer's value: Soufflé's own behaviour).

Output, in Soufflé's layout: a table ``'_<name>'`` with INTEGER columns ``'0'``, ``'1'`` ..
holding the stored 32-bit values (symbols as ids of the table ``__SymbolTable(id, symbol)``,
floats and unsigned as their bits read as a signed integer), and a view ``'<name>'`` that
names the columns after the attributes and resolves symbols.  An existing database is
updated (other relations' tables stay; this relation's rows are replaced), so several
relations may share one file.  Record and ADT attributes are refused (their ids mean
nothing outside the engine).
"""

from __future__ import annotations

import shutil
import sqlite3
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from gpu_engine.ir import Location, ProgramError, Relation
from gpu_engine.strings import FunctorError, parse_float, parse_signed, parse_unsigned
from gpu_engine.values import word_size

from .dictionary import SymbolTable
from .io import FactsError, encode_column
from .lang.dl_result import Directive


def database_name(d: Directive) -> str:
    """The database a directive names (before resolving it against a directory)."""
    name = d.params.get("name", d.relation)
    return d.params.get("filename", d.params.get("dbname", f"{name}.sqlite"))


def resolve(db: str, directory: str | Path) -> str:
    """The path (or URI) SQLite opens for ``db`` relative to ``directory``."""
    if db.startswith(":memory:"):
        return db
    if db.startswith("file:"):
        rest = db[5:]
        if rest.startswith("/"):
            return db
        return "file:" + str(Path(directory) / rest)
    return db if Path(db).is_absolute() else str(Path(directory) / db)


def check_sqlite_relation(rel: Relation, loc: Location) -> None:
    for i, (name, _) in enumerate(rel.attributes):
        if rel.format(i) is not None:
            raise ProgramError(f"IO=sqlite cannot read or write record/ADT attribute "
                               f"'{name}' of {rel.name}", loc)


def _quote(name: str) -> str:
    return "'" + name.replace("'", "''") + "'"


# --- reading -------------------------------------------------------------------------------


def read_sqlite_facts(db: str, table: str, rel: Relation, symbols: SymbolTable
                      ) -> tuple[list[np.ndarray], int]:
    """Stored columns and the row count of table/view ``table`` of database ``db``."""
    where = Location(db, 0, 0)
    uri = db.startswith("file:")
    if not uri and not db.startswith(":memory:") and not Path(db).is_file():
        raise FactsError(f"cannot open SQLite database {db} for relation {rel.name}", where)
    try:
        con = sqlite3.connect(db if uri else f"file:{db}?mode=ro"
                              if not db.startswith(":memory:") else db, uri=True)
    except sqlite3.Error as e:
        raise FactsError(f"cannot open SQLite database {db}: {e}", where) from None
    try:
        found = con.execute("SELECT count(*) FROM sqlite_master WHERE type IN "
                            "('table', 'view') AND name = ?", (table,)).fetchone()[0]
        if not found:
            raise FactsError(f"no table or view {table!r} in {db} for relation {rel.name}",
                             where)
        con.text_factory = lambda b: b.decode("utf-8", "replace")
        cur = con.execute(f"SELECT * FROM {_quote(table)}")
        width = len(cur.description or ())
        if width != rel.arity and rel.arity:
            raise FactsError(f"{table!r} in {db} has {width} columns, {rel.name} has "
                             f"{rel.arity} attributes", where)
        rows = cur.fetchall()
    except sqlite3.Error as e:
        raise FactsError(f"cannot read {table!r} from {db}: {e}", where) from None
    finally:
        con.close()
    if rel.arity == 0:
        return [], min(len(rows), 1)
    cols = []
    for i, (name, typ) in enumerate(rel.attributes):
        texts = [_text(r[i]) for r in rows]
        what = f"{db}: column {i + 1} of {table!r} for {rel.name}.{name}"
        try:
            if typ == "symbol":
                import pyarrow as pa

                cols.append(encode_column(pa.array(texts, pa.string()), typ, symbols, what))
                continue
            bits = word_size(symbols)
            if typ == "number":
                vals = np.asarray([parse_signed(t, bits) for t in texts], dtype=np.int64)
            elif typ == "unsigned":  # (uint64 with 64-bit words: encode_column stores bits)
                vals = np.asarray([_parse_unsigned(t, bits) for t in texts],
                                  dtype=np.uint64 if bits == 64 else np.int64)
            else:
                vals = np.asarray([_parse_float(t, bits) for t in texts], dtype=np.float64)
        except (FunctorError, ValueError, OverflowError):
            bad = next(t for t in texts if not _parses(t, typ))
            raise FactsError(f"{what}: cannot read {bad!r} as a {typ}", where) from None
        cols.append(encode_column(vals, typ, symbols, what))
    return cols, len(rows)


def _text(v: object) -> str:
    """A value as SQLite's text of it (NULL and '' are ``n/a``, as in Soufflé)."""
    if v is None:
        return "n/a"
    if isinstance(v, float):
        t = repr(v)
    elif isinstance(v, bytes):
        t = v.decode("utf-8", "replace")
    else:
        t = str(v)
    return t or "n/a"


def _parse_float(t: str, bits: int = 32) -> float:
    return parse_float(t, bits)


def _parse_unsigned(t: str, bits: int = 32) -> int:
    """An unsigned value: Soufflé writes (and reads) its bits as a signed integer."""
    if t.startswith("-"):
        return parse_signed(t, bits) % (1 << bits)
    return parse_unsigned(t, bits)


def _parses(t: str, typ: str) -> bool:
    try:
        {"number": parse_signed, "unsigned": _parse_unsigned}.get(typ, _parse_float)(t)
        return True
    except (FunctorError, ValueError):
        return False


# --- writing -------------------------------------------------------------------------------


@dataclass
class SqliteOutput:
    """The relations one ``.output`` database receives (written by :meth:`build`)."""

    db: str
    symbols: SymbolTable
    tables: list[tuple[str, Relation, tuple[np.ndarray, ...], int]] = field(default_factory=list)

    def add(self, name: str, rel: Relation, cols: tuple[np.ndarray, ...], n: int) -> None:
        self.tables.append((name, rel, cols, n))

    def build(self, existing: Path | None) -> bytes:
        """The database file's bytes: ``existing`` (if any) with the tables written."""
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "out.sqlite"
            if existing is not None and existing.is_file():
                shutil.copyfile(existing, path)
            con = sqlite3.connect(path)
            try:
                self._write(con, self.symbols)
                con.commit()
            finally:
                con.close()
            return path.read_bytes()

    def write_uri(self) -> None:
        """Write into a ``file:`` URI database directly (no staging: SQLite opens it)."""
        con = sqlite3.connect(self.db, uri=True)
        try:
            self._write(con, self.symbols)
            con.commit()
        finally:
            con.close()

    def _write(self, con: sqlite3.Connection, symbols: SymbolTable) -> None:
        con.execute("CREATE TABLE IF NOT EXISTS '__SymbolTable' "
                    "(id INTEGER PRIMARY KEY, symbol TEXT UNIQUE)")
        for name, rel, cols, _n in self.tables:
            cols_sql = ",".join(f"'{i}' INTEGER" for i in range(rel.arity))
            con.execute(f"CREATE TABLE IF NOT EXISTS {_quote('_' + name)} ({cols_sql})")
            con.execute(f"DELETE FROM {_quote('_' + name)}")
            proj, frm, where = [], [_quote("_" + name)], []
            for i, (attr, typ) in enumerate(rel.attributes):
                if typ == "symbol":
                    alias = _quote(f"_symtab_{i}")
                    proj.append(f"{alias}.symbol AS {_quote(attr)}")
                    frm.append(f"'__SymbolTable' AS {alias}")
                    where.append(f"{_quote('_' + name)}.'{i}' = {alias}.id")
                else:
                    proj.append(f"{_quote('_' + name)}.'{i}' AS {_quote(attr)}")
            if rel.arity:
                view = (f"CREATE VIEW IF NOT EXISTS {_quote(name)} AS SELECT {','.join(proj)} "
                        f"FROM {','.join(frm)}" + (f" WHERE {' AND '.join(where)}"
                                                   if where else ""))
                con.execute(view)
            if not rel.arity or not len(cols[0]):
                continue
            out = []
            for (_, typ), col in zip(rel.attributes, cols, strict=True):
                col = np.asarray(col, dtype=np.int64)
                if typ == "symbol":
                    out.append(self._symbol_ids(con, symbols, col))
                elif typ in ("float", "unsigned") and word_size(symbols) == 32:
                    # the 32-bit pattern as a signed int (64-bit words: stored as such)
                    out.append(col.astype(np.uint32).view(np.int32).astype(np.int64))
                else:
                    out.append(col)
            marks = ",".join("?" * rel.arity)
            con.executemany(f"INSERT INTO {_quote('_' + name)} VALUES ({marks})",
                            np.stack(out, axis=1).tolist())

    @staticmethod
    def _symbol_ids(con: sqlite3.Connection, symbols: SymbolTable, col: np.ndarray
                    ) -> np.ndarray:
        uniq, inv = np.unique(col, return_inverse=True)
        texts = symbols.decode_many(uniq)
        con.executemany("INSERT OR IGNORE INTO '__SymbolTable' VALUES (null, ?)",
                        [(t,) for t in texts])
        ids = dict(con.execute("SELECT symbol, id FROM '__SymbolTable'").fetchall())
        return np.asarray([ids[t] for t in texts], dtype=np.int64)[inv.reshape(-1)]

"""A persistent, crash-safe store of a materialisation (what ``gpu-engine update`` needs).

On-disk layout of a store directory::

    STORE/
      CURRENT                   name of the committed version, e.g. "v00000007\\n"
      LOCK                      advisory lock file (flock) serialising writers
      v00000007/                one complete version (read-only once committed)
        meta.json               format, versions, counting level, per-file row counts,
                                byte sizes and CRC-32 checksums, relation signatures
        program.dl              the program text
        symbols.arrow           the dictionary: one string column, symbol i has id i
        records.arrow           the record table (records, ADT values): one list column
                                ``fields``, row i-1 the fields of record i (0 is nil)
        rho.arrow               (programs with an equality relation) ρ: column ``rho``,
                                the representative of every dictionary id (format 2)
        H/0000.arrow ...        (decomposed rules) the kept bag of one node: columns
                                c0.. (χ(p) in order) and ``count``; meta.json lists
                                rule, node, decomposition and χ (gpu_engine.hd_persist)
        E/0000.arrow ...        explicit facts E of relation k (columns c0..c{n-1})
        I/0000.arrow ...        materialisation I of relation k, plus the derivation
                                counters c_nr and c_r when the store has counters
      .v00000008.partial/       a version being written (a crash leaves it behind)
      CURRENT.tmp               the pointer being written

Every file is an Arrow IPC file of host int64 columns (``symbols.arrow``: strings), so a
store written from a GPU loads on a CPU-only machine and back; the device is chosen when
the store is opened.  Rows are sorted and unique, as the engine holds them; a nullary
relation has one column ``holds`` with one row when it holds.  Relation ``k`` is the
``k``-th declared relation; ``meta.json`` maps the names.

Commit protocol (:func:`save_store`), under an exclusive ``flock`` on ``LOCK``:

1. remove leftovers of earlier crashes (``.v*.partial``, ``CURRENT.tmp``, versions that
   are not current);
2. write the new version into ``.vNNNNNNNN.partial/``, fsync every file and directory;
3. rename it to ``vNNNNNNNN/`` and fsync the store directory;
4. write ``CURRENT.tmp``, fsync it, ``os.replace`` it onto ``CURRENT`` and fsync the store
   directory: this one rename is the commit point;
5. only then remove the old versions.

A crash (or ``kill -9``) before step 4's rename leaves the previous version current and
intact; after it, the new one.  Readers only ever follow ``CURRENT``.
"""

from __future__ import annotations

import contextlib
import datetime
import fcntl
import json
import os
import re
import shutil
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.ipc as ipc

from gpu_engine.state import META, EngineState

from .dictionary import SymbolTable
from .records import RecordTable

if TYPE_CHECKING:
    from .reasoner import Reasoner

FORMAT = "gpu-engine-store"
FORMAT_VERSION = 2  # 2: rho.arrow (equality by rewriting); version 1 stores still load
_VERSION_RE = re.compile(r"^v(\d{8})$")
_PARTIAL_RE = re.compile(r"^\.v\d{8}\.partial$")
_HELD: dict[str, tuple[int, int]] = {}  # store path -> (lock fd, depth): reentrant lock


class StoreError(RuntimeError):
    """A store that is missing, locked, corrupt or of an unknown format."""


State = dict[str, tuple[tuple[np.ndarray, ...], int]]


# --- versions and locking ------------------------------------------------------------------


def current_version(store_dir: str | Path) -> str | None:
    """The committed version's directory name, or None when nothing was committed."""
    try:
        name = (Path(store_dir) / "CURRENT").read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return None
    except UnicodeDecodeError:
        raise StoreError(f"store {store_dir}: CURRENT is corrupt (not UTF-8 text)") from None
    if not _VERSION_RE.match(name):
        raise StoreError(f"store {store_dir}: CURRENT holds {name!r}, not a version name")
    return name


def store_versions(store_dir: str | Path) -> list[str]:
    """Complete version directories present in the store, oldest first."""
    d = Path(store_dir)
    if not d.is_dir():
        return []
    return sorted(p.name for p in d.iterdir() if _VERSION_RE.match(p.name) and p.is_dir())


@contextlib.contextmanager
def store_lock(store_dir: str | Path) -> Iterator[None]:
    """Hold the store's exclusive writer lock (blocking; reentrant within a process).

    ``gpu-engine update`` holds it from loading to committing, so concurrent updates run
    one after the other instead of losing one another's changes.
    """
    d = Path(store_dir)
    if not d.is_dir():
        raise StoreError(f"store {d} does not exist")
    key = str(d.resolve())
    if key in _HELD:
        fd, depth = _HELD[key]
        _HELD[key] = (fd, depth + 1)
    else:
        fd = os.open(d / "LOCK", os.O_RDWR | os.O_CREAT, 0o644)
        try:  # anything raised here (an interrupt, a time limit's signal) closes the
            fcntl.flock(fd, fcntl.LOCK_EX)  # descriptor, which releases the lock: a lock
            _HELD[key] = (fd, 1)  # held by a lost descriptor would block every writer
        except BaseException:
            os.close(fd)
            raise
    try:
        yield
    finally:
        fd, depth = _HELD[key]
        if depth > 1:
            _HELD[key] = (fd, depth - 1)
        else:
            del _HELD[key]
            os.close(fd)  # releases the lock (one call: nothing can come between)


# --- saving --------------------------------------------------------------------------------


def save_store(reasoner: Reasoner, store_dir: str | Path, *, keep: int = 1,
               extra: dict[str, Any] | None = None) -> str:
    """Commit the reasoner's program, dictionary, E, I and counters as a new version.

    Materialises first if needed.  ``keep`` is how many versions (the new one included)
    stay on disk.  ``extra`` (JSON values) is recorded in the version's metadata under
    ``"extra"`` (the streaming sink keeps its last applied batch id there).  Returns the
    new version's name.
    """
    if keep < 1:
        raise ValueError("keep must be at least 1")
    meta_extra = dict(extra or {})
    engine = reasoner.engine
    if not engine.materialised:
        reasoner.materialise()
    d = Path(store_dir)
    d.mkdir(parents=True, exist_ok=True)
    with store_lock(d):
        cur = current_version(d)
        _clean(d, keep=[v for v in store_versions(d) if cur and v <= cur])
        numbers = [int(v[1:]) for v in store_versions(d)]
        name = f"v{max(numbers, default=0) + 1:08d}"
        tmp = d / f".{name}.partial"
        tmp.mkdir()
        (tmp / "E").mkdir()
        (tmp / "I").mkdir()
        program = reasoner.source_text.encode()
        _write_file(tmp / "program.dl", program)
        files: dict[str, dict[str, int]] = {
            "program.dl": {"bytes": len(program), "crc32": zlib.crc32(program)},
            "symbols.arrow": _write_table(tmp / "symbols.arrow",
                                          pa.table({"symbol": reasoner.symbols.values()}))}
        files["records.arrow"] = _write_table(
            tmp / "records.arrow", pa.table({"fields": reasoner.symbols.records.to_arrow()}))
        if engine.program.equality is not None:  # ρ: representatives over the dictionary
            files["rho.arrow"] = _write_table(tmp / "rho.arrow", pa.table(
                {"rho": np.asarray(_current(engine).be.to_host(_current(engine).rho()), np.int64)}))
        state = engine.current_state()  # a GPU engine's host twin when it ran the last update
        counting = bool(state.counters)
        relations = {}
        for k, (rel_name, rel) in enumerate(engine.program.relations.items()):
            e_cols = engine.explicit_columns(rel_name)
            e_file = f"E/{k:04d}.arrow"
            files[e_file] = _write_table(tmp / e_file, _rows_table(
                e_cols, len(state.explicit[rel_name]), rel.arity))
            extra = {}
            if counting:
                c_nr, c_r = engine.counter_arrays(rel_name)
                extra = {"c_nr": np.asarray(c_nr, np.int64), "c_r": np.asarray(c_r, np.int64)}
            i_file = f"I/{k:04d}.arrow"
            files[i_file] = _write_table(tmp / i_file, _rows_table(
                engine.columns(rel_name), engine.size(rel_name), rel.arity, extra))
            relations[rel_name] = {"index": k, "arity": rel.arity,
                                   "types": [t for _, t in rel.attributes],
                                   "explicit": e_file, "materialised": i_file}
        hd_bags = _save_hd_bags(engine, tmp, files)
        meta = {
            "format": FORMAT, "format_version": FORMAT_VERSION,
            "gpu_engine_version": _package_version(), "version": name, "parent": cur,
            "created": datetime.datetime.now(datetime.timezone.utc).isoformat(),
            "written_on": reasoner.device, "source_name": reasoner.source_name,
            # the engine state's scalar fields (counting, modules, counted_with)
            **{f: getattr(state, f) for f in EngineState.fields_kept_as(META)},
            "counters": counting,
            "word_size": getattr(reasoner, "word_size", 32),  # of number/unsigned/float
            # user-defined functors: the libraries loaded (reloaded by path on open)
            "functor_libraries": list(getattr(getattr(reasoner.symbols, "functors", None),
                                              "loaded", [])),
            "symbols": len(reasoner.symbols), "records": len(reasoner.symbols.records),
            # the last materialisation's time on the writing device: the default update
            # algorithm's time budget after opening the store there (gpu_engine.maintenance)
            "materialise_seconds": engine.materialise_seconds,
            "relations": relations, "files": files,
            "extra": meta_extra,
        }
        if hd_bags:
            meta["hd_bags"] = hd_bags
        if getattr(reasoner, "rewrite_equality", False):
            meta["rewrite_equality"] = True
        meta["meta_crc32"] = _meta_crc(meta)
        _write_file(tmp / "meta.json", json.dumps(meta, indent=1).encode())
        for sub in (tmp / "E", tmp / "I", tmp):
            _fsync_dir(sub)
        os.rename(tmp, d / name)
        _fsync_dir(d)
        _write_file(d / "CURRENT.tmp", f"{name}\n".encode())
        os.replace(d / "CURRENT.tmp", d / "CURRENT")  # the commit point
        _fsync_dir(d)
        _clean(d, keep=store_versions(d)[-keep:])
    return name


def _save_hd_bags(engine: Any, tmp: Path, files: dict[str, dict[str, int]]
                  ) -> list[dict[str, Any]]:
    """The kept bags of the decomposed rules (gpu_engine.hd_persist) as ``H/NNNN.arrow``
    (columns c0.. in χ order and ``count``), listed for meta.json."""
    if engine.program.equality is not None:  # (rewritten facts: rebuilt on use)
        return []
    from gpu_engine.hd_persist import export_bags

    out = []
    for j, b in enumerate(export_bags(engine)):
        if j == 0:
            (tmp / "H").mkdir()
        f = f"H/{j:04d}.arrow"
        cols = {f"c{i}": c for i, c in enumerate(b.cols)}
        files[f] = _write_table(tmp / f, pa.table({**cols, "count": b.count}))
        out.append({"rule": b.rule, "node": b.node, "decomposition": b.decomposition,
                    "chi": b.chi, "file": f})
    if out:
        _fsync_dir(tmp / "H")
    return out


def _meta_crc(meta: dict[str, Any]) -> int:
    """CRC-32 of the metadata's canonical JSON (without the ``meta_crc32`` field)."""
    body = {k: v for k, v in meta.items() if k != "meta_crc32"}
    return zlib.crc32(json.dumps(body, sort_keys=True).encode())


def _rows_table(cols: tuple[np.ndarray, ...], n: int, arity: int,
                extra: dict[str, np.ndarray] | None = None) -> pa.Table:
    arrays = {f"c{i}": np.asarray(c, dtype=np.int64) for i, c in enumerate(cols)}
    if arity == 0:
        arrays = {"holds": np.zeros(n, dtype=np.int64)}
    arrays.update(extra or {})
    return pa.table(arrays)


def _write_table(path: Path, table: pa.Table) -> dict[str, int]:
    sink = pa.BufferOutputStream()
    with ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    buf = sink.getvalue()
    _write_file(path, buf)
    return {"rows": table.num_rows, "bytes": buf.size, "crc32": zlib.crc32(buf)}


def _write_file(path: Path, data: bytes | pa.Buffer) -> None:
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _clean(d: Path, keep: list[str]) -> None:
    """Remove crash leftovers and versions not in ``keep`` (only names the store owns)."""
    for p in d.iterdir():
        if (_PARTIAL_RE.match(p.name) or (_VERSION_RE.match(p.name) and p.name not in keep)):
            shutil.rmtree(p, ignore_errors=True)
        elif p.name == "CURRENT.tmp":
            p.unlink(missing_ok=True)


def _package_version() -> str:
    try:
        from importlib.metadata import version

        return version("gpu-engine")
    except Exception:  # noqa: BLE001 - not installed: fall back to the source tree's
        from gpu_engine import __version__

        return __version__


# --- loading -------------------------------------------------------------------------------


def open_store(store_dir: str | Path, device: str = "auto", *, version: str | None = None,
               verify: bool = True) -> Reasoner:
    """Load a version (default: the current one) into a materialised ``Reasoner``.

    ``verify`` checks every file's size and CRC-32 checksum as well as the row counts.
    Raises :class:`StoreError` when the store is missing or corrupt.
    """
    d = Path(store_dir)
    for _ in range(5):  # a concurrent commit may remove the version being read: retry
        name = version or current_version(d)
        if name is None:
            what = "is not a store" if d.is_dir() else "does not exist"
            raise StoreError(f"store {d} {what} (no committed version)")
        try:
            try:
                return _load(d / name, device, verify)
            except (KeyError, TypeError, AttributeError) as exc:
                raise StoreError(f"{d / name / 'meta.json'}: corrupt metadata ({exc!r})") from None
        except (OSError, StoreError):
            if version is not None or current_version(d) == name:
                raise
    raise StoreError(f"store {d}: kept changing while being read")


def read_meta(store_dir: str | Path, version: str | None = None) -> dict[str, Any]:
    """The metadata of a version (default: the current one; read again when a writer
    committed a newer one, and removed this one, between reading CURRENT and its
    metadata)."""
    for _ in range(8):
        name = version or current_version(store_dir)
        if name is None:
            raise StoreError(f"store {store_dir} has no committed version")
        path = Path(store_dir) / name / "meta.json"
        try:
            text = path.read_text(encoding="utf-8")
            break
        except FileNotFoundError:
            if version is not None or current_version(store_dir) == name:
                raise StoreError(f"store version {path.parent} is missing meta.json") from None
        except UnicodeDecodeError as exc:
            raise StoreError(f"{path}: corrupt metadata ({exc})") from None
    else:
        raise StoreError(f"store {store_dir}: its current version kept changing")
    try:
        meta = json.loads(text)
    except json.JSONDecodeError as exc:
        raise StoreError(f"{path}: corrupt metadata ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise StoreError(f"{path}: not a gpu-engine store")
    if meta.get("format_version", 0) > FORMAT_VERSION:
        raise StoreError(f"{path}: store format {meta['format_version']} is newer than this "
                         f"gpu-engine ({FORMAT_VERSION}); upgrade gpu-engine")
    if "meta_crc32" in meta and meta["meta_crc32"] != _meta_crc(meta):
        raise StoreError(f"{path}: corrupt metadata (its checksum differs: damaged or "
                         "edited by hand)")
    return meta


def _load(vdir: Path, device: str, verify: bool) -> Reasoner:
    from .reasoner import Reasoner

    meta = read_meta(vdir.parent, vdir.name)
    files = meta["files"]

    def table(rel_path: str) -> pa.Table:
        path = vdir / rel_path
        info = files.get(rel_path)
        if info is None:
            raise StoreError(f"{vdir / 'meta.json'}: no entry for {rel_path}")
        try:
            data = path.read_bytes()
        except FileNotFoundError:
            raise StoreError(f"store version {vdir} is missing {rel_path}") from None
        if verify and (len(data) != info["bytes"] or zlib.crc32(data) != info["crc32"]):
            raise StoreError(f"{path}: corrupt (size or checksum differs from meta.json)")
        try:
            t = ipc.open_file(pa.py_buffer(data)).read_all()
        except pa.ArrowInvalid as exc:
            raise StoreError(f"{path}: corrupt Arrow file ({exc})") from None
        if t.num_rows != info["rows"]:
            raise StoreError(f"{path}: {t.num_rows} rows, meta.json says {info['rows']}")
        return t

    try:
        raw = (vdir / "program.dl").read_bytes()
    except FileNotFoundError:
        raise StoreError(f"store version {vdir} is missing program.dl") from None
    info = files.get("program.dl")  # (stores written before it was checksummed lack it)
    if info is not None and (len(raw) != info["bytes"] or zlib.crc32(raw) != info["crc32"]):
        raise StoreError(f"{vdir / 'program.dl'}: edited or corrupt (size or checksum differs "
                         "from meta.json); the materialisation belongs to the program it "
                         "was computed with: run the new program with run --store --force")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise StoreError(f"{vdir / 'program.dl'}: not UTF-8 text") from None
    symbols = SymbolTable.from_values(table("symbols.arrow").column("symbol"))
    if "records.arrow" in files:  # (stores written before records have none)
        try:
            symbols.records = RecordTable.from_arrow(table("records.arrow").column("fields"))
        except (ValueError, KeyError, TypeError) as exc:
            raise StoreError(f"{vdir}/records.arrow: corrupt record table ({exc})") from None
    word_size = meta.get("word_size", 32)  # stores written before the option are 32-bit
    if word_size not in (32, 64):
        raise StoreError(f"{vdir / 'meta.json'}: word size {word_size!r} is not 32 or 64")
    r = Reasoner(text, device=device, counting=meta["counting"], symbols=symbols,
                 modules=meta.get("modules", "off"), word_size=word_size,
                 rewrite_equality=bool(meta.get("rewrite_equality", False)),
                 libraries=meta.get("functor_libraries") or ("functors",))
    r.source_name = meta.get("source_name", r.source_name)
    rels = r.engine.program.relations
    if set(rels) != set(meta["relations"]):
        raise StoreError(f"{vdir}: the relations of program.dl differ from meta.json")
    explicit: State = {}
    materialised: State = {}
    counters: dict[str, tuple[np.ndarray, np.ndarray]] | None = {} if meta["counters"] else None
    for name, info in meta["relations"].items():
        rel = rels[name]
        if info["arity"] != rel.arity or info["types"] != [t for _, t in rel.attributes]:
            raise StoreError(f"{vdir}: relation {name} does not match its declaration")
        e = table(info["explicit"])
        explicit[name] = (_columns(e, rel.arity), e.num_rows)
        i = table(info["materialised"])
        materialised[name] = (_columns(i, rel.arity), i.num_rows)
        if counters is not None:
            counters[name] = (_column(i, "c_nr"), _column(i, "c_r"))
    r.engine.install_state(explicit, materialised, counters)
    if "rho.arrow" in files and r.program.equality is not None:
        r.engine.set_rho(_column(table("rho.arrow"), "rho"))
    # the engine state's scalar fields; stores older than modules kept every recursive
    # counter (as with modules off)
    defaults = {"modules": "off", "counted_with": "off", "decompose": "off",
                "decompositions": {}}
    for f in EngineState.fields_kept_as(META):
        if f != "modules":  # (set through the constructor: it chooses the module plans)
            setattr(r.engine.state, f, meta.get(f, defaults.get(f)))
    if meta.get("hd_bags") and r.program.equality is None:  # kept bags (hd_persist)
        from gpu_engine.hd_persist import SavedBag, import_bags

        saved = []
        for b in meta["hd_bags"]:
            t = table(b["file"])
            saved.append(SavedBag(b["rule"], int(b["node"]), b["decomposition"], b["chi"],
                                  [_column(t, f"c{i}") for i in range(len(b["chi"]))],
                                  _column(t, "count")))
        import_bags(r.engine, saved)
    if meta.get("written_on") == r.device:  # (another device's time says nothing here)
        r.engine.materialise_seconds = meta.get("materialise_seconds")
    return r


def _column(t: pa.Table, name: str) -> np.ndarray:
    if name not in t.column_names:
        raise StoreError(f"stored table lacks column {name}")
    return t.column(name).to_numpy().astype(np.int64, copy=False)


def _columns(t: pa.Table, arity: int) -> tuple[np.ndarray, ...]:
    return tuple(_column(t, f"c{i}") for i in range(arity))


__all__ = ["StoreError", "current_version", "open_store", "read_meta", "save_store",
           "store_lock", "store_versions"]


def _current(engine: Any) -> Any:
    """The engine whose state is current: a GPU engine's host twin after host updates."""
    host = engine._host_reads() if hasattr(engine, "_host_reads") else None
    return host if host is not None else engine

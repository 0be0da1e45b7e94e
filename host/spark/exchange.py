"""Facts in from Spark DataFrames, relations out to Spark, updates from Spark streams.

Data crosses the boundary only as Arrow record batches (``host.spark.adapter``): a
DataFrame's selected columns are streamed to the driver with ``toArrow`` and encoded
with the reasoner's dictionary (symbols) by Arrow kernels; a relation leaves as a
decoded Arrow table handed to ``createDataFrame`` in a sensible number of partitions.

Column convention (both ways): one column per ``.decl`` attribute, named after it, typed
``number`` → IntegerType, ``unsigned`` → LongType (Spark has no unsigned types),
``float`` → FloatType, ``symbol`` → StringType; with 64-bit words ``number`` → LongType,
``unsigned`` → DecimalType(20, 0), ``float`` → DoubleType.  On the way in any integer type is
accepted for ``number``/``unsigned`` (values are range-checked), any numeric type for
``float``; extra columns are ignored.  A nullary relation is a one-column boolean
DataFrame ``holds`` (one row when the relation holds).

A DataFrame whose schema does not match the declaration (missing column, wrong type,
nulls, values out of range) raises :class:`host.io.FactsError` before any fact is added,
so a stored materialisation stays as it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpu_engine.ir import ProgramError
from gpu_engine.stats import UpdateStats

from ..io import FactsError, encode_table, portable_table
from . import adapter as sa

if TYPE_CHECKING:
    from ..reasoner import Reasoner

Encoded = tuple[tuple[np.ndarray, ...], int]
INSERT_OPS = ("+", "insert", "i", "add")
DELETE_OPS = ("-", "delete", "d", "del", "remove")


# --- facts in ------------------------------------------------------------------------------


def arrow_from_spark(r: Reasoner, relation: str, df: Any,
                     columns: list[str] | tuple[str, ...] | None = None) -> pa.Table:
    """The DataFrame's columns for ``relation``, schema-checked on the Spark side first
    (nothing is transferred for a DataFrame that cannot match), as a pyarrow Table."""
    from ..io import table_columns

    rel = r._relation(relation)
    source = f"DataFrame for {relation}"
    if rel.arity == 0:
        return sa.to_arrow(df)
    names = table_columns(sa.arrow_schema_of(df), rel, source, columns)
    return sa.to_arrow(df.select(*[f"`{n}`" for n in names]))


def encode_spark(r: Reasoner, relation: str, df: Any,
                 columns: list[str] | tuple[str, ...] | None = None) -> Encoded:
    """A DataFrame of facts of ``relation`` as stored int64 columns and a row count."""
    rel = r._relation(relation)
    table = arrow_from_spark(r, relation, df, columns)
    return encode_table(table, rel, r.symbols, f"DataFrame for {relation}", columns)


def load_spark(r: Reasoner, relation: str, df: Any,
               columns: list[str] | tuple[str, ...] | None = None) -> int:
    """Add the rows of ``df`` as explicit facts of ``relation``; returns how many were new."""
    t0 = time.perf_counter()
    cols, n = encode_spark(r, relation, df, columns)
    added = r.engine.add_facts(relation, list(cols), n_rows=n)
    r.load_seconds += time.perf_counter() - t0
    return added


def load_spark_inputs(r: Reasoner, frames: Mapping[str, Any]) -> dict[str, int]:
    """Bulk :func:`load_spark`: every DataFrame is checked and encoded before any is
    added.  Returns the new facts per relation."""
    _check_names(r, frames)
    encoded = {name: encode_spark(r, name, df) for name, df in frames.items()}
    t0 = time.perf_counter()
    added = {name: r.engine.add_facts(name, list(cols), n_rows=n)
             for name, (cols, n) in encoded.items()}
    r.load_seconds += time.perf_counter() - t0
    return added


# --- relations out -------------------------------------------------------------------------


def to_spark(r: Reasoner, relation: str, spark: Any, partitions: int | None = None) -> Any:
    """The facts of ``relation`` as a Spark DataFrame (columns named and typed after the
    declaration, see the module docstring)."""
    table = spark_table(r, relation)
    return sa.from_arrow(spark, table, partitions)


def spark_table(r: Reasoner, relation: str) -> pa.Table:
    """The Arrow table :func:`to_spark` sends: decoded, Spark-typed columns."""
    return portable_table(r.relation(relation), r._relation(relation).arity)


def outputs_to_spark(r: Reasoner, spark: Any,
                     relations: list[str] | None = None) -> dict[str, Any]:
    """Bulk :func:`to_spark`: every ``.output`` relation (or ``relations``)."""
    names = relations if relations is not None else output_relations(r)
    return {name: to_spark(r, name, spark) for name in names}


def output_relations(r: Reasoner) -> list[str]:
    """The ``.output`` relations in directive order (each once)."""
    return list(dict.fromkeys(d.relation for d in r.parsed.directives if d.kind == "output"))


# --- updates from Spark --------------------------------------------------------------------


def update_from_spark(r: Reasoner, insert: Mapping[str, Any] | None = None,
                      delete: Mapping[str, Any] | None = None,
                      algorithm: str | None = None) -> UpdateStats:
    """Insert and delete the facts of DataFrames (relation name → DataFrame) through the
    incremental algorithms (:meth:`Reasoner.update`); atomic like it."""
    insert, delete = dict(insert or {}), dict(delete or {})
    _check_names(r, {**insert, **delete})
    ins = {n: encode_spark(r, n, df) for n, df in insert.items()}
    dele = {n: encode_spark(r, n, df) for n, df in delete.items()}
    return r.update_encoded(ins, dele, algorithm)


def split_changes(r: Reasoner, relation: str, table: pa.Table, op_column: str | None,
                  source: str) -> tuple[Encoded | None, Encoded | None]:
    """Rows of a change table as (inserted, deleted) encoded facts.  Without
    ``op_column`` every row is an insertion; otherwise the column says ``+``/``insert``
    or ``-``/``delete`` (case-insensitive), or is a boolean (true: insert)."""
    rel = r._relation(relation)
    if op_column is None:
        return encode_table(table, rel, r.symbols, source), None
    if op_column not in table.schema.names:
        raise FactsError(f"{source}: no operation column {op_column!r}; "
                         f"the data has columns {table.schema.names}")
    op = table.column(op_column)
    if pa.types.is_boolean(op.type):
        if op.null_count:
            raise FactsError(f"{source}: operation column {op_column!r} has nulls")
        is_ins, is_del = op, pc.invert(op)
    else:
        text = pc.utf8_lower(pc.utf8_trim_whitespace(op.cast(pa.string())))
        is_ins = pc.is_in(text, pa.array(INSERT_OPS))
        is_del = pc.is_in(text, pa.array(DELETE_OPS))
        bad = pc.invert(pc.or_(is_ins, is_del)).fill_null(True)
        if pc.any(bad).as_py():
            k = int(np.flatnonzero(bad.to_numpy(zero_copy_only=False))[0])
            raise FactsError(f"{source}: row {k}: operation {op[k].as_py()!r} is neither an "
                             f"insertion ({'/'.join(INSERT_OPS)}) nor a deletion "
                             f"({'/'.join(DELETE_OPS)})")
    ins = table.filter(is_ins)
    dele = table.filter(is_del)
    return (encode_table(ins, rel, r.symbols, source) if ins.num_rows else None,
            encode_table(dele, rel, r.symbols, source) if dele.num_rows else None)


class StreamingUpdateSink:
    """A Structured Streaming ``foreachBatch`` sink applying each micro-batch as one
    update of a persistent store (``gpu-engine run --store``) and writing the output
    relations that changed.

    >>> query = (stream_df.writeStream.foreachBatch(StreamingUpdateSink("store", "edge",
    ...          op_column="op", output_dir="out")).start())   # doctest: +SKIP

    Each micro-batch is read once as Arrow, split into insertions and deletions
    (:func:`split_changes`), applied with the incremental algorithms under the store's
    lock, and committed as a new store version that records the batch id; a batch id
    already committed (a replay after a failure) is skipped, so each batch is applied
    exactly once.  An error leaves the store at its last committed version and is raised
    to Spark, which stops the query.  Output relations (``.output`` ones by default)
    whose facts changed are written to ``output_dir`` as Parquet datasets
    (``<relation>/part-*.parquet``, replaced atomically) or as ``.csv`` text.

    ``coalesce=True`` (the default, issue 17): a checked micro-batch is spooled durably and
    the call returns; a background worker composes every spooled batch into one update and
    commits it with all their batch ids (``host/stream_spool.py``), so batches arriving
    faster than they are served share one maintenance and churn cancels.  ``flush()``
    waits until everything accepted is visible (and raises a worker failure).
    ``coalesce=False``: one update and one commit per micro-batch, inside the call.
    """

    def __init__(self, store_dir: str | Path, relation: str, *, op_column: str | None = "op",
                 output_dir: str | Path | None = None, output_format: str = "parquet",
                 outputs: list[str] | None = None, algorithm: str | None = None,
                 device: str = "auto", on_update: Callable[[int, UpdateStats], None] | None = None,
                 coalesce: bool = True) -> None:
        if output_format not in ("parquet", "file"):
            raise ValueError("output_format must be 'parquet' or 'file'")
        self.store_dir = Path(store_dir)
        self.relation = relation
        self.op_column = op_column
        self.output_dir = Path(output_dir) if output_dir is not None else None
        self.output_format = output_format
        self.outputs = outputs
        self.algorithm = algorithm
        self.device = device
        self.on_update = on_update
        self.reasoner: Reasoner | None = None
        self._version: str | None = None
        self.history: list[dict[str, Any]] = []
        self.coalesce = coalesce
        self._spool: Any = None
        self._checker: Any = None

    def __call__(self, batch: Any, batch_id: int) -> None:
        self.apply(sa.to_arrow(batch), int(batch_id))

    def flush(self, timeout: float | None = None) -> None:
        """Wait until every accepted micro-batch is committed (``coalesce=True``)."""
        if self._spool is not None:
            self._spool.flush(timeout)

    def _coalesced(self, table: pa.Table, batch_id: int) -> None:
        from ..stream_spool import CoalescingStore

        if self._spool is None:
            self._spool = CoalescingStore(self.store_dir, self.relation, self.op_column,
                                          self.algorithm, self.device, self._committed)
            self._spool.outputs = self.outputs
        if not self._spool.apply(table, batch_id, self._check, self._last_committed):
            self.history.append({"batch": batch_id, "skipped": True})

    def _last_committed(self) -> int | None:
        from ..store import current_version, read_meta

        if current_version(self.store_dir) is None:
            raise ProgramError(f"store {self.store_dir} has no committed version")
        last = read_meta(self.store_dir).get("extra", {}).get("stream_batch")
        return None if last is None else int(last)

    def _check(self, table: pa.Table) -> None:
        """Encode a batch into a scratch dictionary: a bad one raises before it is
        accepted, and the real dictionary is touched only by the worker."""
        from types import SimpleNamespace

        from ..dictionary import SymbolTable
        from ..reasoner import Reasoner
        from ..store import current_version

        if self._checker is None:
            vdir = self.store_dir / str(current_version(self.store_dir))
            self._checker = Reasoner((vdir / "program.dl").read_text(), device="cpu")
        scratch = SimpleNamespace(_relation=self._checker._relation, symbols=SymbolTable())
        split_changes(scratch, self.relation, table, self.op_column,  # type: ignore[arg-type]
                      f"micro-batch for {self.relation}")

    def _committed(self, r: Reasoner, ids: list[int], stats: UpdateStats,
                   changed: list[str]) -> None:
        if self.output_dir is not None and changed:
            self._write(r, changed)
        for b in ids:
            self.history.append({"batch": b, "skipped": False, "changed": changed,
                                 "inserted": stats.inserted, "deleted": stats.deleted,
                                 "seconds": stats.seconds, "composed": len(ids)})
            if self.on_update is not None:
                self.on_update(b, stats)

    def apply(self, table: pa.Table, batch_id: int) -> UpdateStats | None:
        """Apply one micro-batch (as Arrow); returns its statistics, None if skipped
        (or, with ``coalesce``, accepted: its statistics come with the composed commit)."""
        from ..store import current_version, open_store, read_meta, save_store, store_lock

        if self.coalesce:
            self._coalesced(table, batch_id)
            return None

        with store_lock(self.store_dir):
            cur = current_version(self.store_dir)
            if cur is None:
                raise ProgramError(f"store {self.store_dir} has no committed version")
            last = read_meta(self.store_dir).get("extra", {}).get("stream_batch")
            if last is not None and batch_id <= int(last):
                self.history.append({"batch": batch_id, "skipped": True})
                return None
            if self.reasoner is None or self._version != cur:
                self.reasoner = open_store(self.store_dir, device=self.device)
            r = self.reasoner
            source = f"micro-batch {batch_id} for {self.relation}"
            ins, dele = split_changes(r, self.relation, table, self.op_column, source)
            names = self.outputs if self.outputs is not None else output_relations(r)
            before = {n: r.engine.size(n) for n in names}
            before_sig = {n: _signature(r, n) for n in names}
            try:
                stats = r.update_encoded({self.relation: ins} if ins else {},
                                         {self.relation: dele} if dele else {},
                                         self.algorithm)
                self._version = save_store(r, self.store_dir,
                                           extra={"stream_batch": batch_id})
            except BaseException:
                self.reasoner = None  # reopen the committed version next time
                raise
        changed = [n for n in names
                   if r.engine.size(n) != before[n] or _signature(r, n) != before_sig[n]]
        if self.output_dir is not None and changed:
            self._write(r, changed)
        self.history.append({"batch": batch_id, "skipped": False, "changed": changed,
                             "inserted": stats.inserted, "deleted": stats.deleted,
                             "seconds": stats.seconds})
        if self.on_update is not None:
            self.on_update(batch_id, stats)
        return stats

    def _write(self, r: Reasoner, names: list[str]) -> None:
        from ..io import write_text_atomic
        from ..parquet_io import write_parquet_dataset

        self.output_dir.mkdir(parents=True, exist_ok=True)  # type: ignore[union-attr]
        for n in names:
            if self.output_format == "parquet":
                write_parquet_dataset(spark_table(r, n), self.output_dir / n)  # type: ignore[operator]
            else:
                write_text_atomic(self.output_dir / f"{n}.csv", r.render(n))  # type: ignore[operator]


def _signature(r: Reasoner, name: str) -> int:
    """An order-independent fingerprint of a relation's stored rows (changes detection
    for the streaming sink; equal sizes and signatures mean unchanged)."""
    cols = r.engine.columns(name)
    if not cols:
        return r.engine.size(name)
    h = np.zeros(len(cols[0]), dtype=np.uint64)
    for c in cols:
        v = np.asarray(c).astype(np.uint64)
        h = (h ^ v) * np.uint64(0x9E3779B97F4A7C15)
        h ^= h >> np.uint64(29)
    return int(np.bitwise_xor.reduce(h)) if len(h) else 0


def _check_names(r: Reasoner, frames: Mapping[str, Any]) -> None:
    for name, df in frames.items():
        r._relation(name)
        if not sa.is_dataframe(df):
            raise FactsError(f"{name}: expected a Spark DataFrame, got {type(df).__name__}")


__all__ = ["load_spark", "load_spark_inputs", "to_spark", "outputs_to_spark",
           "update_from_spark", "StreamingUpdateSink", "split_changes", "spark_table",
           "encode_spark", "output_relations"]

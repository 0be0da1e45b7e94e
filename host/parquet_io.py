"""Parquet datasets in and out, laid out the way Spark writes them.

A Spark job and the CLI hand data to each other through these files: ``.input r(IO=parquet)``
reads ``r.parquet`` (a file, or a directory of ``part-*.parquet`` files with Spark's
``_SUCCESS``/``.crc`` side files ignored and ``key=value`` sub-directories read as
columns); ``.output r(IO=parquet)`` writes the directory ``r.parquet`` with
``part-N.parquet`` files and ``_SUCCESS``, replacing an existing one atomically.
Columns are named after the ``.decl`` attributes (see :mod:`host.spark.exchange` for the
types).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds

from gpu_engine.ir import Location, Relation

from .dictionary import SymbolTable
from .io import FactsError, encode_table

ROWS_PER_FILE = 8_000_000
ROWS_PER_GROUP = 1_000_000


def read_parquet_table(path: str | Path, what: str) -> pa.Table:
    """A Parquet file or dataset directory as one Arrow table."""
    path = Path(path)
    if not path.exists():
        raise FactsError(f"cannot open Parquet data {path} for {what}", Location(str(path), 0, 0))
    try:
        dataset = ds.dataset(path, format="parquet", partitioning="hive",
                             exclude_invalid_files=False)
        return dataset.to_table()
    except (pa.ArrowException, OSError) as exc:  # also ArrowNotImplementedError: parts
        detail = "; ".join(ln.strip() for ln in str(exc).splitlines() if ln.strip())
        raise FactsError(f"cannot read Parquet data for {what}: {detail}",
                         Location(str(path), 0, 0)) from None


def read_parquet_facts(path: str | Path, rel: Relation, symbols: SymbolTable,
                       columns: list[str] | None = None) -> tuple[tuple[np.ndarray, ...], int]:
    """Facts of ``rel`` from Parquet as stored int64 columns and a row count."""
    table = read_parquet_table(path, f"relation {rel.name}")
    return encode_table(table, rel, symbols, str(path), columns)


def write_parquet_dataset(table: pa.Table, path: str | Path) -> None:
    """Write ``table`` as a Spark-style Parquet directory, replacing ``path`` atomically
    (written beside it, then renamed into place)."""
    path = Path(path)
    commit_parquet_dataset(stage_parquet_dataset(table, path), path)


def stage_parquet_dataset(table: pa.Table, path: str | Path) -> Path:
    """Write ``table`` as a Parquet directory beside ``path``; returns its temporary name
    for :func:`commit_parquet_dataset` (removed again when writing fails)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    tmp.mkdir()
    try:
        if table.num_rows:
            ds.write_dataset(table, tmp, format="parquet", basename_template="part-{i}.parquet",
                             max_rows_per_file=ROWS_PER_FILE,
                             max_rows_per_group=min(ROWS_PER_GROUP, ROWS_PER_FILE),
                             existing_data_behavior="overwrite_or_ignore")
        else:  # an empty relation still has a file carrying its schema
            import pyarrow.parquet as pq

            pq.write_table(table, tmp / "part-00000.parquet")
        (tmp / "_SUCCESS").write_bytes(b"")
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return tmp


def commit_parquet_dataset(tmp: Path, path: Path) -> None:
    """Rename a directory from :func:`stage_parquet_dataset` onto ``path``."""
    old = path.with_name(f".{path.name}.old{os.getpid()}")
    if path.is_dir():
        os.replace(path, old)
    elif path.exists():
        path.unlink()
    os.replace(tmp, path)
    shutil.rmtree(old, ignore_errors=True)


__all__ = ["read_parquet_table", "read_parquet_facts", "write_parquet_dataset",
           "stage_parquet_dataset", "commit_parquet_dataset"]

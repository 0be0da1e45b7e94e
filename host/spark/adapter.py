"""Every Spark-version-specific call of the project, in one place.

The rest of the code moves data to and from Spark only through these functions:
Arrow record batches both ways (``DataFrame.toArrow`` and ``createDataFrame(pa.Table)``,
public since Spark 4.0), never ``collect()`` of rows and never pandas.  Both classic
sessions (py4j) and Spark Connect sessions are supported; where they differ, the
difference is handled here.

PySpark is an optional dependency: importing this module does not import it; the first
call that needs it does, and raises :class:`SparkUnavailable` with an installation hint
when it is missing.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pyarrow as pa

MIN_VERSION = (4, 0)
# createDataFrame(pa.Table) makes one partition per Arrow batch of this many rows (Spark's
# default is 10,000: a partition per 10k rows, 2.3x slower and 4x the CPU on 10M rows).
TARGET_PARTITION_BYTES = 64 << 20


class SparkUnavailable(ImportError):
    """PySpark (>= 4.0) is not installed, or the session is too old."""


def require_pyspark() -> Any:
    """Import and return the ``pyspark`` module, checking its version."""
    try:
        import pyspark
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise SparkUnavailable("Spark support needs PySpark >= 4.0: "
                               "pip install 'gpu-engine[spark]'") from exc
    if version_tuple(pyspark.__version__) < MIN_VERSION:
        raise SparkUnavailable(f"Spark support needs PySpark >= 4.0, found {pyspark.__version__}")
    return pyspark


def version_tuple(text: str) -> tuple[int, int]:
    """``"4.3.0"`` -> ``(4, 3)``."""
    parts = (text.split(".") + ["0"])[:2]
    return tuple(int("".join(ch for ch in p if ch.isdigit()) or 0) for p in parts)  # type: ignore[return-value]


def is_connect(spark: Any) -> bool:
    """Whether ``spark`` is a Spark Connect session (or a DataFrame of one)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def is_dataframe(obj: Any) -> bool:
    """Whether ``obj`` is a Spark DataFrame (classic or Connect), without importing PySpark."""
    mod = type(obj).__module__
    return mod.startswith("pyspark.sql") and type(obj).__name__ == "DataFrame"


def session_of(df: Any) -> Any:
    """The SparkSession a DataFrame belongs to."""
    return df.sparkSession


# --- sessions ------------------------------------------------------------------------------


def local_session(master: str = "local[2]", *, app: str = "gpu-engine",
                  shuffle_partitions: int = 4, conf: dict[str, str] | None = None) -> Any:
    """A SparkSession for one machine or a cluster ``master``: UI off, loopback binding
    for ``local`` masters, Python workers running this interpreter unless
    ``PYSPARK_PYTHON`` or ``spark.pyspark.python`` in ``conf`` names another (on a
    cluster whose nodes lack this interpreter's path, name theirs), Arrow batches large
    enough that createDataFrame does not cut a table into 10,000-row partitions, and this
    package shipped to the executors (:mod:`host.spark.ship`)."""
    require_pyspark()
    from pyspark.sql import SparkSession

    python = (conf or {}).get("spark.pyspark.python")
    if python:  # a context started from Python reads the variable, not the setting
        os.environ["PYSPARK_PYTHON"] = python
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    b = (SparkSession.builder.master(master).appName(app)
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", str(shuffle_partitions))
         .config("spark.sql.execution.arrow.maxRecordsPerBatch", "1000000")
         .config("spark.sql.adaptive.enabled", "true")
         .config("spark.python.worker.reuse", "true"))
    if master.startswith("local"):
        b = (b.config("spark.driver.bindAddress", "127.0.0.1")
             .config("spark.driver.host", "127.0.0.1"))
    for k, v in (conf or {}).items():
        b = b.config(k, v)
    spark = b.getOrCreate()
    if not is_connect(spark):
        spark.sparkContext.setLogLevel("ERROR")
    _ship(spark)
    return spark


def _ship(spark: Any) -> None:
    from .ship import ensure_shipped

    ensure_shipped(spark)


def session(master: str = "local[*]", *, conf: dict[str, str] | None = None) -> Any:
    """A session for ``master``: ``sc://...`` connects to a Spark Connect server, anything
    else starts (or joins) a classic session through :func:`local_session`."""
    if master.startswith("sc://"):
        require_pyspark()
        from pyspark.sql import SparkSession

        b = SparkSession.builder.remote(master)
        for k, v in (conf or {}).items():
            b = b.config(k, v)
        spark = b.getOrCreate()
        _ship(spark)
        return spark
    return local_session(master, conf=conf)


def shipping_key(spark: Any) -> Any:
    """What a shipped file belongs to: the SparkContext of a classic session, the session
    id (a string) of a Connect session."""
    if is_connect(spark):
        return str(spark.session_id)
    return spark.sparkContext


def add_py_file(spark: Any, path: Any) -> None:
    """Put a ``.zip``/``.py`` file on the executors' Python path for ``spark``'s jobs:
    ``SparkContext.addPyFile`` (classic) or ``addArtifacts(pyfile=True)`` (Connect)."""
    if is_connect(spark):
        spark.addArtifacts(str(path), pyfile=True)
    else:
        spark.sparkContext.addPyFile(str(path))


def cancel_jobs(spark: Any) -> None:
    """Cancel every running job of the session (classic: the context's jobs; Connect:
    the session's operations)."""
    if is_connect(spark):
        spark.interruptAll()
    else:
        spark.sparkContext.cancelAllJobs()


def parallelism(spark: Any) -> int:
    """How many partitions make every core of the session busy."""
    if not is_connect(spark):
        try:
            return max(1, int(spark.sparkContext.defaultParallelism))
        except Exception:  # noqa: BLE001 - a session without a context (shared clusters)
            pass
    return max(1, int(spark.conf.get("spark.sql.shuffle.partitions", "2")))


def partitions_for(spark: Any, table: pa.Table) -> int:
    """A sensible partition count for ``table``: at least one per core, at most
    ``TARGET_PARTITION_BYTES`` each."""
    by_size = math.ceil(table.nbytes / TARGET_PARTITION_BYTES) if table.num_rows else 1
    return max(1, min(max(by_size, parallelism(spark)), max(1, table.num_rows)))


# --- data both ways ------------------------------------------------------------------------


def to_arrow(df: Any) -> pa.Table:
    """A DataFrame's rows as a pyarrow Table (streamed as Arrow record batches)."""
    require_pyspark()
    table = df.toArrow()
    if isinstance(table, pa.RecordBatch):  # pragma: no cover - not seen on 4.x
        table = pa.Table.from_batches([table])
    return table


def from_arrow(spark: Any, table: pa.Table, partitions: int | None = None) -> Any:
    """A DataFrame holding ``table``, in ``partitions`` partitions (default
    :func:`partitions_for`).  Arrow types Spark lacks (unsigned integers) are widened."""
    require_pyspark()
    table = _spark_compatible(table)
    n = partitions or partitions_for(spark, table)
    if is_connect(spark):  # the client ships the table as one local relation
        df = spark.createDataFrame(table)
        return df.repartition(n) if n > 1 else df
    key = "spark.sql.execution.arrow.maxRecordsPerBatch"
    old = spark.conf.get(key, None)
    spark.conf.set(key, str(max(1, math.ceil(table.num_rows / n))))
    try:
        return spark.createDataFrame(table)
    finally:
        if old is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, old)


def _spark_compatible(table: pa.Table) -> pa.Table:
    fields = []
    changed = False
    for f in table.schema:
        t = f.type
        if pa.types.is_unsigned_integer(t):
            t, changed = pa.int64(), True
        elif pa.types.is_large_string(t):
            t, changed = pa.string(), True
        elif pa.types.is_dictionary(t):
            t, changed = t.value_type, True
        fields.append(pa.field(f.name, t, f.nullable))
    return table.cast(pa.schema(fields)) if changed else table


def spark_type_of(arrow_type: pa.DataType) -> Any:
    """The Spark SQL type for an Arrow type."""
    require_pyspark()
    from pyspark.sql.pandas.types import from_arrow_type

    if arrow_type == pa.uint64():
        arrow_type = pa.decimal128(20, 0)
    elif pa.types.is_unsigned_integer(arrow_type):
        arrow_type = pa.int64()
    return from_arrow_type(arrow_type)


def spark_schema(table_schema: pa.Schema) -> Any:
    """The Spark StructType for an Arrow schema (unsigned integers widened)."""
    require_pyspark()
    from pyspark.sql.types import StructField, StructType

    return StructType([StructField(f.name, spark_type_of(f.type), f.nullable)
                       for f in table_schema])


def arrow_schema_of(df: Any) -> pa.Schema:
    """A DataFrame's schema as an Arrow schema (no data moves)."""
    require_pyspark()
    from pyspark.sql.pandas.types import to_arrow_schema

    return to_arrow_schema(df.schema)


def map_in_arrow(df: Any, fn: Callable[[Iterator[pa.RecordBatch]], Iterator[pa.RecordBatch]],
                 schema: Any) -> Any:
    """``df.mapInArrow(fn, schema)``: ``fn`` runs on the executors over Arrow batches."""
    return df.mapInArrow(fn, schema)


def local_checkpoint(df: Any) -> Any:
    """Cut the lineage of ``df`` eagerly (steady cost per round, unlike cache/unpersist)."""
    return df.localCheckpoint(eager=True)


def disable_constraint_propagation(spark: Any) -> None:
    """Turn off Catalyst's constraint propagation on ``spark`` (a session setting).

    Its rewrite of a Union's constraints fails with ``NoSuchElementException: key not
    found: c0#..`` when the union's branches are self-joins of one checkpointed frame (a
    recursive copy rule such as ``e(x) :- e(x), e(x)`` beside another rule for ``e``), and on
    the long plans of seminaive rounds it only infers filters the compiled rules already
    state.  Every frame the runner returns is evaluated under the session, so the setting
    stays off rather than being restored after :meth:`SparkRunner.materialise`."""
    spark.conf.set("spark.sql.constraintPropagation.enabled", "false")


def broadcast(df: Any) -> Any:
    """Hint that ``df`` is small enough to be broadcast to every executor."""
    from pyspark.sql import functions as F

    return F.broadcast(df)


def foreach_batch(stream: Any, fn: Callable[[Any, int], None]) -> Any:
    """``stream.writeStream.foreachBatch(fn)``: a DataStreamWriter calling ``fn`` per
    micro-batch with (DataFrame, batch id)."""
    return stream.writeStream.foreachBatch(fn)


def row_count(df: Any) -> int:
    """``df.count()`` as an int."""
    return int(df.count())


__all__ = ["SparkUnavailable", "require_pyspark", "is_connect", "is_dataframe", "local_session",
           "session", "shipping_key", "add_py_file", "cancel_jobs",
           "parallelism", "partitions_for", "to_arrow", "from_arrow", "spark_type_of",
           "spark_schema", "arrow_schema_of", "map_in_arrow", "local_checkpoint", "disable_constraint_propagation",
           "broadcast", "foreach_batch", "row_count", "session_of"]

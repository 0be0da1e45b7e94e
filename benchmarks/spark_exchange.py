"""Spark exchange throughput: rows per second each way between Arrow and Spark, and into
and out of the engine (issue 5, part 7).

    python -m benchmarks.spark_exchange [--rows 10000000] [--master local[2]]
                                        [--out benchmarks/results/spark_exchange.jsonl]

One JSON line per measurement: ``direction``, ``rows``, ``columns``, ``bytes`` (Arrow
size), ``seconds``, ``rows_per_s``, ``mb_per_s``, and the CPU seconds spent in this Python
process and in the JVM (and its Python workers) during the measurement: comparing the
two with the wall time shows what bounds each direction.

- ``arrow->spark``: ``from_arrow`` (createDataFrame of a pyarrow Table, one partition per
  core) then an eager local checkpoint, so the rows really are in Spark's block store;
  ``arrow->spark (10k batches)`` does the same with Spark's default of one partition per
  10,000 rows, the configuration the adapter avoids;
- ``spark->arrow``: ``DataFrame.toArrow()`` of the checkpointed DataFrame;
- ``spark->engine`` / ``engine->spark``: ``Reasoner.load_spark`` (toArrow, encoding,
  adding the facts) and ``Reasoner.to_spark`` plus a checkpoint;
- ``parquet (spark write, engine read)``: the file hand-off instead of the driver.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa


def _cpu(proc: Any) -> tuple[float, float]:
    """(CPU seconds of this process, CPU seconds of its children: the JVM and workers)."""
    mine = proc.cpu_times()
    kids = 0.0
    for c in proc.children(recursive=True):
        try:
            t = c.cpu_times()
            kids += t.user + t.system
        except Exception:  # noqa: BLE001 - a worker that just exited
            pass
    return mine.user + mine.system, kids


def measure(label: str, fn: Any, rows: int, cols: int, nbytes: int, emit: Any) -> Any:
    import psutil

    proc = psutil.Process()
    py0, jvm0 = _cpu(proc)
    t0 = time.perf_counter()
    out = fn()
    secs = time.perf_counter() - t0
    py1, jvm1 = _cpu(proc)
    emit({"benchmark": "spark-exchange", "direction": label, "rows": rows, "columns": cols,
          "bytes": nbytes, "seconds": round(secs, 3), "rows_per_s": round(rows / secs),
          "mb_per_s": round(nbytes / secs / 1e6, 1), "python_cpu_s": round(py1 - py0, 2),
          "jvm_cpu_s": round(jvm1 - jvm0, 2)})
    return out


def run(rows: int, master: str, emit: Any, default_batches: bool = True) -> None:
    from gpu_engine.host.spark import adapter as sa

    from gpu_engine import Reasoner

    spark = sa.local_session(master, app="gpu-engine-bench-exchange")
    emit({"benchmark": "spark-exchange", "direction": "session", "master": master,
          "spark": spark.version, "parallelism": sa.parallelism(spark)})
    warm = pa.table({"a": np.arange(200_000), "b": np.arange(200_000), "c": np.arange(200_000)})
    for _ in range(2):  # JIT warm-up of the JVM's Arrow paths, untimed
        sa.to_arrow(sa.local_checkpoint(sa.from_arrow(spark, warm)))
    rng = np.random.default_rng(0)
    table = pa.table({"a": rng.integers(0, 2**31 - 1, rows), "b": rng.integers(0, 2**31 - 1, rows),
                      "c": np.arange(rows, dtype=np.int64)})
    nb, k = table.nbytes, table.num_columns
    df = measure("arrow->spark", lambda: sa.local_checkpoint(sa.from_arrow(spark, table)),
                 rows, k, nb, emit)
    if default_batches:
        def default() -> Any:
            spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "10000")
            try:
                return sa.local_checkpoint(spark.createDataFrame(table))
            finally:
                spark.conf.set("spark.sql.execution.arrow.maxRecordsPerBatch", "1000000")
        measure("arrow->spark (10k batches)", default, rows, k, nb, emit)
    back = measure("spark->arrow", lambda: sa.to_arrow(df), rows, k, nb, emit)
    assert back.num_rows == rows
    prog = (".decl e(a:number, b:number, c:number)\n.decl q(a:number, b:number, c:number)\n"
            "q(a, b, c) :- e(a, b, c).\n")
    r = Reasoner(prog, device="cpu")
    e_df = df.selectExpr("cast(a as int) a", "cast(b as int) b", "cast(c as int) c")
    measure("spark->engine", lambda: r.load_spark("e", e_df), rows, k, nb, emit)
    r.materialise()
    out = measure("engine->spark", lambda: sa.local_checkpoint(r.to_spark("q", spark)),
                  rows, k, rows * k * 4, emit)
    assert out.count() == r.relation_sizes()["q"]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "e.parquet"
        measure("parquet write (spark)", lambda: e_df.write.parquet(str(path)), rows, k, nb, emit)
        from gpu_engine.host.parquet_io import read_parquet_facts

        r2 = Reasoner(prog, device="cpu")
        measure("parquet read (engine)",
                lambda: read_parquet_facts(path, r2.program.relations["e"], r2.symbols),
                rows, k, nb, emit)
    spark.stop()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--no-default-batches", action="store_true",
                    help="skip the measurement with Spark's default 10k-row batches")
    ap.add_argument("--out", type=Path, help="append the JSON lines to this file too")
    args = ap.parse_args(argv)

    def emit(rec: dict[str, Any]) -> None:
        line = json.dumps(rec)
        print(line, flush=True)
        if args.out:
            args.out.parent.mkdir(parents=True, exist_ok=True)
            with args.out.open("a") as f:
                f.write(line + "\n")

    run(args.rows, args.master, emit, not args.no_default_batches)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""A Structured Streaming job that keeps a materialisation up to date.

    python examples/spark_streaming.py [--master local[2]] [--workdir DIR]

A store is created from initial ``edge`` facts (``save_store``, as ``gpu-engine run
--store`` does).  Change files (``x, y, op`` with ``op`` = ``+`` or ``-``) then arrive in
a directory; a Spark file stream hands each micro-batch to ``StreamingUpdateSink``, which
applies it as one incremental update (DRed^c) of the store and rewrites the output
relations that changed as Parquet.  Replayed micro-batches are skipped (the store records
the last batch id it committed).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

PROGRAM = """
.decl edge(x:number, y:number)
.decl reach(x:number, y:number)
.decl cycle(x:number)
reach(x, y) :- edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).
cycle(x) :- reach(x, x).
.output reach
.output cycle
"""

BATCHES = [  # (x, y, op) change sets, one file each
    [(3, 4, "+"), (4, 5, "+")],
    [(5, 1, "+")],  # closes a cycle 1 -> ... -> 5 -> 1
    [(2, 3, "-"), (9, 9, "+")],  # breaks it; a self-loop elsewhere
]


def run(spark: Any, workdir: Path, batches: list[list[tuple[int, int, str]]] = BATCHES
        ) -> dict[str, Any]:
    """Create the store, stream the change files through the sink; returns what happened."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq
    from gpu_engine.host.spark.exchange import StreamingUpdateSink
    from gpu_engine.host.store import open_store, save_store
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    from gpu_engine import Reasoner

    store, incoming, out = workdir / "store", workdir / "incoming", workdir / "out"
    incoming.mkdir(parents=True, exist_ok=True)
    r = Reasoner(PROGRAM, counting=True)
    r.add_facts("edge", np.array([[1, 2], [2, 3]]))
    save_store(r, store)

    schema = StructType([StructField("x", IntegerType()), StructField("y", IntegerType()),
                         StructField("op", StringType())])
    sink = StreamingUpdateSink(store, "edge", op_column="op", output_dir=out)
    for k, changes in enumerate(batches):
        xs, ys, ops = zip(*changes)
        pq.write_table(pa.table({"x": pa.array(xs, pa.int32()), "y": pa.array(ys, pa.int32()),
                                 "op": list(ops)}), incoming / f"changes-{k:04d}.parquet")
        query = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
                 .parquet(str(incoming)).writeStream.foreachBatch(sink)
                 .option("checkpointLocation", str(workdir / "checkpoint"))
                 .trigger(availableNow=True).start())
        query.awaitTermination()
        if query.exception() is not None:
            raise RuntimeError(str(query.exception()))
        sink.flush()  # the sink coalesces in the background: wait until it is committed
    final = open_store(store)
    return {"history": sink.history, "reach": final.relation_sizes()["reach"],
            "cycle": sorted(final.relation("cycle").column(0).to_pylist()),
            "written": sorted(p.name for p in out.iterdir())}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--workdir", type=Path)
    args = ap.parse_args(argv)
    from gpu_engine.host.spark.adapter import local_session

    spark = local_session(args.master, app="gpu-engine-streaming-example")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        res = run(spark, workdir)
    for h in res["history"]:
        print(f"batch {h['batch']}: +{h.get('inserted', 0)} -{h.get('deleted', 0)} explicit, "
              f"changed outputs {h.get('changed')}")
    print(f"reach: {res['reach']} facts; on a cycle: {res['cycle']}; written: {res['written']}")
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

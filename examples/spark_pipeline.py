"""A Spark pipeline around the engine: Parquet in, materialise, Parquet out, Spark SQL.

    python examples/spark_pipeline.py [--master local[2]] [--nodes 2000] [--edges 8000]
                                      [--workdir DIR] [--backend local|spark]

1. An upstream Spark job writes a random DAG of ``edge(x, y)`` facts as Parquet.
2. Spark reads the edges back; the engine loads them as Arrow batches (``load_spark``),
   computes the reachability closure and the nodes that reach a hub (GPU when present),
3. hands the results back as DataFrames (``to_spark``) that Spark writes as Parquet,
4. and Spark SQL queries the written results.

With ``--backend spark`` the fixpoint itself runs as Spark DataFrame operations
(``Reasoner(..., backend="spark")``) instead of in the local columnar engine.
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
.decl hub(x:number)
.decl feeds_hub(x:number, h:number)
reach(x, y) :- edge(x, y).
reach(x, z) :- reach(x, y), edge(y, z).
hub(x) :- edge(x, _), x % 100 = 0.
feeds_hub(x, h) :- reach(x, h), hub(h).
.input edge(IO=parquet)
.output reach(IO=parquet)
.output feeds_hub(IO=parquet)
"""


def run(spark: Any, workdir: Path, nodes: int = 2000, edges: int = 8000,
        backend: str = "local") -> dict[str, Any]:
    """The whole pipeline; returns the counts and the SQL answer (used by the tests)."""
    from pyspark.sql import functions as F

    from gpu_engine import Reasoner

    src = workdir / "edge.parquet"
    # 1. upstream job: a random DAG (x < y), written by Spark as a Parquet dataset
    raw = (spark.range(edges)
           .select((F.rand(1) * (nodes - 1)).cast("int").alias("a"),
                   (F.rand(2) * (nodes - 1)).cast("int").alias("b"))
           .where("a != b")
           .select(F.least("a", "b").alias("x"), F.greatest("a", "b").alias("y"))
           .distinct())
    raw.write.mode("overwrite").parquet(str(src))

    # 2. read with Spark, materialise with the engine
    edge_df = spark.read.parquet(str(src))
    kwargs = {"backend": "spark", "spark": spark} if backend == "spark" else {}
    r = Reasoner(PROGRAM, **kwargs)
    r.load_spark("edge", edge_df)
    stats = r.materialise()

    # 3. results back to Spark, written as Parquet
    outputs = r.outputs_to_spark(spark)
    for name, df in outputs.items():
        df.write.mode("overwrite").parquet(str(workdir / f"{name}.parquet"))

    # 4. Spark SQL over the written results
    spark.read.parquet(str(workdir / "reach.parquet")).createOrReplaceTempView("reach")
    spark.read.parquet(str(workdir / "feeds_hub.parquet")).createOrReplaceTempView("feeds_hub")
    top = spark.sql("""
        SELECT x, count(*) AS reachable FROM reach GROUP BY x
        ORDER BY reachable DESC, x LIMIT 5""").toArrow()
    hubs = spark.sql("SELECT count(DISTINCT x) AS n FROM feeds_hub").toArrow()
    return {"edges": edge_df.count(), "facts": r.relation_sizes(),
            "seconds": getattr(stats, "seconds", None),
            "top": list(zip(top.column("x").to_pylist(), top.column("reachable").to_pylist())),
            "feeding_a_hub": hubs.column("n")[0].as_py()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--nodes", type=int, default=2000)
    ap.add_argument("--edges", type=int, default=8000)
    ap.add_argument("--workdir", type=Path)
    ap.add_argument("--backend", choices=["local", "spark"], default="local")
    args = ap.parse_args(argv)
    from gpu_engine.host.spark.adapter import local_session

    spark = local_session(args.master, app="gpu-engine-example")
    with tempfile.TemporaryDirectory() as tmp:
        workdir = args.workdir or Path(tmp)
        workdir.mkdir(parents=True, exist_ok=True)
        res = run(spark, workdir, args.nodes, args.edges, args.backend)
    print(f"{res['edges']} edges -> {res['facts']['reach']} reach facts, "
          f"{res['feeding_a_hub']} nodes feed a hub")
    print("most reaching nodes:", ", ".join(f"{x} ({n})" for x, n in res["top"]))
    spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

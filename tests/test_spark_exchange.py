"""Spark exchange (issue 5, parts 1, 2 and 4): DataFrames in and out through Arrow,
schema errors, Parquet hand-off between Spark and the CLI, updates from DataFrames and a
Structured Streaming micro-batch sink.  Judges: the local engine on the same facts
(rematerialisation from scratch) and the data itself (exact equality)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from gpu_engine.host.cli import main as cli_main
from gpu_engine.host.io import FactsError
from gpu_engine.host.spark import adapter as sa
from gpu_engine.host.spark.exchange import StreamingUpdateSink
from gpu_engine.host.store import open_store, read_meta

from gpu_engine import Reasoner

pytestmark = pytest.mark.spark

TYPES = """.decl e(a:number, u:unsigned, f:float, s:symbol)
.decl p(a:number, u:unsigned, f:float, s:symbol)
p(a, u, f, s) :- e(a, u, f, s).
.input e
.output p
"""

TC = """.decl edge(x:number, y:number)
.decl path(x:number, y:number)
.decl far(x:symbol)
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
far(cat("n", to_string(x))) :- path(x, y), y > x + 2.
.input edge
.output path
.output far
"""


def rows(table: pa.Table) -> list[tuple]:
    return sorted(zip(*(table.column(i).to_pylist() for i in range(table.num_columns))))


def typed_table() -> pa.Table:
    return pa.table({
        "a": pa.array([-2**31, 2**31 - 1, 0, 7], pa.int32()),
        "u": pa.array([0, 2**32 - 1, 5, 7], pa.int64()),
        "f": pa.array([1.5, float("inf"), -3.25, 1e-3], pa.float32()),
        "s": pa.array(["x", "ü→ \t tab", "", "a,b\"c"], pa.string()),
    })


def test_round_trip_every_attribute_type(spark) -> None:
    """number, unsigned, float and symbol values go in and come out unchanged, with the
    documented Spark types."""
    from pyspark.sql.types import FloatType, IntegerType, LongType, StringType

    src = typed_table()
    r = Reasoner(TYPES, device="cpu")
    assert r.load_spark("e", spark.createDataFrame(src)) == src.num_rows
    out = r.to_spark("p", spark)
    assert [f.dataType for f in out.schema.fields] == [IntegerType(), LongType(), FloatType(),
                                                        StringType()]
    assert out.columns == ["a", "u", "f", "s"]
    assert rows(sa.to_arrow(out)) == rows(src)
    # back in again: a second reasoner reads what the first wrote
    r2 = Reasoner(TYPES, device="cpu")
    r2.load_spark("e", out)
    assert rows(r2.relation("p")) == rows(r.relation("p"))


def test_wider_integer_and_double_columns_are_accepted_and_range_checked(spark) -> None:
    from pyspark.sql import functions as F

    r = Reasoner(TYPES, device="cpu")
    df = spark.createDataFrame(typed_table()).select(
        F.col("a").cast("long").alias("a"), F.col("u"), F.col("f").cast("double").alias("f"),
        F.col("s"), F.lit(1).alias("ignored"))
    assert r.load_spark("e", df) == 4
    too_big = df.withColumn("a", F.col("a") + F.lit(2**31))
    with pytest.raises(FactsError, match="out of range for number"):
        r.load_spark("e", too_big)


def test_schema_errors_leave_the_materialisation_intact(spark) -> None:
    from pyspark.sql import functions as F

    r = Reasoner(TYPES, device="cpu")
    df = spark.createDataFrame(typed_table())
    r.load_spark("e", df.limit(2))
    before = rows(r.relation("p"))
    cases = [
        (df.drop("s"), r"no column 's' for attribute 4 of e\(a:number"),
        (df.withColumn("a", F.col("s")), "column 'a' has type string.*declared number"),
        (df.withColumn("s", F.col("a")), "column 's' has type int32.*declared symbol"),
        (df.withColumn("u", F.when(F.col("a") > 0, F.col("u"))), "column 'u' of e has 2 null"),
        (df.withColumn("u", F.col("u") - F.lit(10)), "out of range for unsigned"),
    ]
    for bad, message in cases:
        with pytest.raises(FactsError, match=message):
            r.load_spark("e", bad)
        with pytest.raises(FactsError, match=message):
            r.update_from_spark(insert={"e": bad})
        assert rows(r.relation("p")) == before
    with pytest.raises(FactsError, match="expected a Spark DataFrame"):
        r.load_spark_inputs({"e": typed_table()})
    with pytest.raises(Exception, match="unknown relation 'nope'"):
        r.load_spark_inputs({"nope": df})


def test_a_million_rows_each_way_exactly(spark) -> None:
    """>= 1M facts with a symbol column in and out through Arrow batches, compared
    exactly with the source data."""
    n = 1_000_000
    rng = np.random.default_rng(7)
    a = rng.integers(-2**31, 2**31, n, dtype=np.int64).astype(np.int32)
    words = np.array([f"w{i}" for i in range(5000)])
    s = words[rng.integers(0, len(words), n)]
    src = pa.table({"x": pa.array(a), "s": pa.array(s, pa.string())})
    prog = ".decl e(x:number, s:symbol)\n.decl q(s:symbol, x:number)\nq(s, x) :- e(x, s).\n"
    r = Reasoner(prog, device="cpu")
    df = sa.from_arrow(spark, src)
    assert df.rdd.getNumPartitions() >= 2  # one per core at least, not one per 10k rows
    assert r.load_spark("e", df) == len(set(zip(a.tolist(), s.tolist())))
    back = sa.to_arrow(r.to_spark("q", spark))
    got = np.rec.fromarrays([back.column("x").to_numpy(),
                             back.column("s").to_numpy(zero_copy_only=False)])
    want = np.unique(np.rec.fromarrays([a, s]))
    assert back.num_rows == len(want)
    assert np.array_equal(np.sort(got, order=("f0", "f1")), np.sort(want, order=("f0", "f1")))


def test_bulk_inputs_and_outputs(spark) -> None:
    r = Reasoner(TC, device="cpu")
    edges = spark.createDataFrame(pa.table({"x": pa.array([1, 2, 3, 4], pa.int32()),
                                            "y": pa.array([2, 3, 4, 5], pa.int32())}))
    assert r.load_spark_inputs({"edge": edges}) == {"edge": 4}
    outs = r.outputs_to_spark(spark)
    assert sorted(outs) == ["far", "path"]
    local = Reasoner(TC, device="cpu")
    local.add_facts("edge", np.array([[1, 2], [2, 3], [3, 4], [4, 5]]))
    for name, df in outs.items():
        assert rows(sa.to_arrow(df)) == rows(local.relation(name))
    assert rows(sa.to_arrow(outs["far"])) == [("n1",), ("n2",)]


def test_nullary_relation_as_holds_column(spark) -> None:
    prog = ".decl a(x:number)\n.decl ok()\nok() :- a(3).\n"
    r = Reasoner(prog, device="cpu")
    r.load_spark("a", spark.createDataFrame(pa.table({"x": pa.array([3], pa.int32())})))
    assert sa.to_arrow(r.to_spark("ok", spark)).to_pydict() == {"holds": [True]}
    r2 = Reasoner(prog.replace("ok() :- a(3).", ""), device="cpu")
    r2.load_spark("ok", r.to_spark("ok", spark))
    assert r2.relation_sizes()["ok"] == 1


def test_update_from_spark_matches_rematerialisation(spark) -> None:
    rng = np.random.default_rng(3)
    edges = np.unique(rng.integers(0, 40, (120, 2)), axis=0)
    r = Reasoner(TC, device="cpu")
    r.add_facts("edge", edges)
    r.materialise()
    ins = np.unique(rng.integers(0, 40, (15, 2)), axis=0)
    dele = edges[rng.choice(len(edges), 20, replace=False)]

    def frame(a: np.ndarray):
        return spark.createDataFrame(pa.table({"x": pa.array(a[:, 0], pa.int32()),
                                               "y": pa.array(a[:, 1], pa.int32())}))

    stats = r.update_from_spark(insert={"edge": frame(ins)}, delete={"edge": frame(dele)})
    judge = Reasoner(TC, device="cpu")
    # Reasoner.update applies E := (E \ E-) ∪ E+ (an inserted-and-deleted fact stays)
    final = ({tuple(e) for e in edges.tolist()} - {tuple(e) for e in dele.tolist()}) | {
        tuple(e) for e in ins.tolist()}
    judge.add_facts("edge", np.array(sorted(final)))
    for name in ("edge", "path", "far"):
        assert rows(r.relation(name)) == rows(judge.relation(name)), name
    assert stats.inserted + stats.deleted > 0


# --- Parquet hand-off ----------------------------------------------------------------------


def test_spark_writes_parquet_cli_reads_it_and_spark_reads_the_output(spark, tmp_path: Path
                                                                      ) -> None:
    facts, out = tmp_path / "facts", tmp_path / "out"
    edges = pa.table({"x": pa.array([1, 2, 3, 10], pa.int32()),
                      "y": pa.array([2, 3, 4, 11], pa.int32())})
    sa.from_arrow(spark, edges, partitions=3).write.parquet(str(facts / "edge.parquet"))
    prog = tmp_path / "tc.dl"
    prog.write_text(TC)
    assert cli_main(["run", str(prog), "-F", str(facts), "-D", str(out), "--format", "parquet",
                     "--quiet", "--device", "cpu"]) == 0
    assert (out / "path.parquet" / "_SUCCESS").exists()
    got = spark.read.parquet(str(out / "path.parquet"))
    local = Reasoner(TC, device="cpu")
    local.add_facts("edge", edges)
    assert rows(sa.to_arrow(got)) == rows(local.relation("path"))
    got.createOrReplaceTempView("path_out")
    n = spark.sql("SELECT count(*) AS n FROM path_out WHERE x = 1").toArrow()
    assert n.column("n").to_pylist() == [3]


def test_streaming_micro_batches_update_a_store(spark, tmp_path: Path) -> None:
    """A file stream of edge changes applied by foreachBatch: each micro-batch is one
    update of the store; the store then equals a rematerialisation, the changed outputs
    are written, and a replayed batch id is skipped."""
    from pyspark.sql.types import IntegerType, StringType, StructField, StructType

    store, facts, out, incoming = (tmp_path / d for d in ("store", "facts", "out", "in"))
    facts.mkdir()
    (facts / "edge.facts").write_text("1\t2\n2\t3\n")
    prog = tmp_path / "tc.dl"
    prog.write_text(TC)
    assert cli_main(["run", str(prog), "-F", str(facts), "-D", str(tmp_path / "o0"),
                     "--store", str(store), "--quiet", "--device", "cpu"]) == 0
    incoming.mkdir()

    def batch_file(k: int, xs: list[int], ys: list[int], ops: list[str]) -> None:
        pa.parquet.write_table(pa.table({"x": pa.array(xs, pa.int32()),
                                         "y": pa.array(ys, pa.int32()),
                                         "op": pa.array(ops, pa.string())}),
                               incoming / f"batch{k}.parquet")

    import pyarrow.parquet  # noqa: F401 - pa.parquet above

    batch_file(0, [3, 4], [4, 5], ["+", "insert"])
    schema = StructType([StructField("x", IntegerType()), StructField("y", IntegerType()),
                         StructField("op", StringType())])
    sink = StreamingUpdateSink(store, "edge", op_column="op", output_dir=out, device="cpu")

    def run_stream() -> None:
        q = (spark.readStream.schema(schema).option("maxFilesPerTrigger", 1)
             .parquet(str(incoming)).writeStream.foreachBatch(sink)
             .option("checkpointLocation", str(tmp_path / "chk")).trigger(availableNow=True)
             .start())
        q.awaitTermination(120)
        assert q.exception() is None
        sink.flush(120)  # coalesce=True: wait until the accepted batches are committed

    run_stream()
    batch_file(1, [2, 9], [3, 9], ["-", "+"])
    run_stream()  # the same checkpoint: only the new file, as batch 1
    assert [h["batch"] for h in sink.history] == [0, 1]
    r = open_store(store, device="cpu")
    judge = Reasoner(TC, device="cpu")
    judge.add_facts("edge", np.array([[1, 2], [3, 4], [4, 5], [9, 9]]))
    for name in ("edge", "path", "far"):
        assert rows(r.relation(name)) == rows(judge.relation(name)), name
    assert read_meta(store)["extra"]["stream_batch"] == 1
    written = pa.parquet.read_table(out / "path")
    assert rows(written) == rows(judge.relation("path"))
    # a replay of batch 1 (after a crash between commit and Spark's own checkpoint) is skipped
    assert sink.apply(pa.table({"x": pa.array([7], pa.int32()), "y": pa.array([8], pa.int32()),
                                "op": ["+"]}), 1) is None
    # a bad micro-batch raises and leaves the store at its last committed version
    with pytest.raises(FactsError, match="row 0: operation 'upsert'"):
        sink.apply(pa.table({"x": pa.array([7], pa.int32()), "y": pa.array([8], pa.int32()),
                             "op": ["upsert"]}), 2)
    assert rows(open_store(store, device="cpu").relation("path")) == rows(judge.relation("path"))


CONNECT_SCRIPT = r"""
import json, sys
import pyarrow as pa
from pyspark.sql import SparkSession
from gpu_engine import Reasoner
from gpu_engine.host.spark import adapter as sa

spark = SparkSession.builder.remote("local[2]").getOrCreate()
assert sa.is_connect(spark)
prog = '''.decl e(a:number, u:unsigned, f:float, s:symbol)
.decl p(a:number, u:unsigned, f:float, s:symbol)
p(a, u, f, s) :- e(a, u, f, s).'''
src = pa.table({"a": pa.array([-5, 7], pa.int32()), "u": pa.array([2**32 - 1, 0], pa.int64()),
                "f": pa.array([0.5, -2.0], pa.float32()), "s": ["x", "ü"]})
r = Reasoner(prog, device="cpu")
n = r.load_spark("e", spark.createDataFrame(src))
out = sa.to_arrow(sa.local_checkpoint(r.to_spark("p", spark)))
try:
    r.load_spark("e", spark.createDataFrame(src).drop("s"))
    err = None
except Exception as exc:
    err = str(exc)
print(json.dumps({"n": n, "rows": sorted(map(list, zip(*out.to_pydict().values()))),
                  "types": [str(t) for t in out.schema.types], "error": err}))
spark.stop()
"""


def test_spark_connect_session(tmp_path: Path) -> None:
    """The same exchange through a Spark Connect session (a local Connect server in its
    own JVM, so it runs in a subprocess beside the test session)."""
    import json
    import os
    import subprocess
    import sys

    from conftest import spark_missing

    if spark_missing():
        pytest.skip(spark_missing())
    pytest.importorskip("grpc", reason="Spark Connect needs pyspark[connect]")
    root = Path(__file__).resolve().parents[1]
    # SPARK_TESTING: the local Connect server binds an ephemeral port and the client asks
    # it which (PySpark's own way to run Connect tests in parallel, SPARK-42272), instead
    # of the default port 15002, which another Connect server still shutting down holds
    env = {**os.environ, "PYTHONPATH": str(root), "PYSPARK_PYTHON": sys.executable,
           "SPARK_TESTING": "1"}
    proc = subprocess.run([sys.executable, "-c", CONNECT_SCRIPT], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    res = json.loads(proc.stdout.strip().splitlines()[-1])
    assert res["n"] == 2
    assert res["rows"] == [[-5, 4294967295, 0.5, "x"], [7, 0, -2.0, "ü"]]
    assert res["types"] == ["int32", "int64", "float", "string"]
    assert "no column 's' for attribute 4" in res["error"]


def test_round_trip_with_64_bit_words(spark) -> None:
    """With 64-bit words: number ↔ LongType, unsigned ↔ DecimalType(20, 0), float ↔
    DoubleType, values at the 64-bit limits unchanged both ways."""
    from pyspark.sql.types import DecimalType, DoubleType, LongType, StringType

    src = pa.table({"a": pa.array([-2**63, 2**63 - 1], pa.int64()),
                    "u": pa.array([0, 2**64 - 1], pa.uint64()),
                    "f": pa.array([0.1, 1e300], pa.float64()), "s": ["x", "y"]})
    r = Reasoner(TYPES, device="cpu", word_size=64)
    assert r.load_spark("e", spark.createDataFrame(src.cast(pa.schema([
        ("a", pa.int64()), ("u", pa.decimal128(20, 0)), ("f", pa.float64()),
        ("s", pa.string())])))) == 2
    out = r.to_spark("p", spark)
    assert [f.dataType for f in out.schema.fields] == [LongType(), DecimalType(20, 0),
                                                        DoubleType(), StringType()]
    back = sa.to_arrow(out)
    assert rows(back.set_column(1, "u", back.column("u").cast(pa.uint64()))) == rows(src)

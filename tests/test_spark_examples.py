"""The Spark examples run end to end, and their answers agree with the local engine run
on the same facts (read back from the Parquet the example's Spark job wrote)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest

from gpu_engine import Reasoner

pytestmark = pytest.mark.spark
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def load(name: str):
    spec = importlib.util.spec_from_file_location(name, EXAMPLES / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod


@pytest.mark.parametrize("backend", ["local", "spark"])
def test_pipeline_example(spark, tmp_path: Path, backend: str) -> None:
    ex = load("spark_pipeline")
    res = ex.run(spark, tmp_path, nodes=300, edges=900, backend=backend)
    edges = pq.read_table(tmp_path / "edge.parquet")
    judge = Reasoner(ex.PROGRAM, device="cpu")
    judge.add_facts("edge", edges.select(["x", "y"]))
    assert res["edges"] == edges.num_rows > 0
    assert res["facts"] == judge.relation_sizes()
    reach = judge.relation("reach").to_pandas()
    counts = reach.groupby("x").size().reset_index(name="n")
    counts = counts.sort_values(["n", "x"], ascending=[False, True]).head(5)
    assert res["top"] == list(zip(counts["x"].tolist(), counts["n"].tolist()))
    assert res["feeding_a_hub"] == judge.relation("feeds_hub").column("x").unique().__len__()


def test_streaming_example(spark, tmp_path: Path) -> None:
    ex = load("spark_streaming")
    res = ex.run(spark, tmp_path)
    assert [h["batch"] for h in res["history"]] == [0, 1, 2]
    judge = Reasoner(ex.PROGRAM, device="cpu")
    judge.add_facts("edge", np.array([[1, 2], [3, 4], [4, 5], [5, 1], [9, 9]]))
    assert res["reach"] == judge.relation_sizes()["reach"]
    assert res["cycle"] == sorted(judge.relation("cycle").column(0).to_pylist()) == [9]
    assert res["written"] == ["cycle", "reach"]
    # batch 1 closed the cycle 1 -> 2 -> 3 -> 4 -> 5 -> 1 and changed both outputs
    assert res["history"][1]["changed"] == ["reach", "cycle"]

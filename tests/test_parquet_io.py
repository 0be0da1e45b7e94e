"""Parquet in and out without Spark: ``.input``/``.output`` with ``IO=parquet``, the CLI's
``--format parquet`` for run, update and export, Spark-style dataset directories (part
files, ``_SUCCESS``, hidden files, ``key=value`` partitions), and clear errors that leave a
store untouched.  The judge is the same program run on the same facts from text files."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest
from gpu_engine.host.cli import main as cli_main
from gpu_engine.host.io import FactsError
from gpu_engine.host.parquet_io import write_parquet_dataset
from gpu_engine.host.store import open_store

from gpu_engine import Reasoner

PROG = """.decl edge(x:number, y:number, w:symbol)
.decl path(x:number, y:number)
.decl label(w:symbol, n:unsigned)
path(x, y) :- edge(x, y, _).
path(x, z) :- path(x, y), edge(y, z, _).
label(w, as(x, unsigned)) :- edge(x, _, w), x >= 0.
.input edge(IO=parquet)
.output path(IO=parquet)
.output label
"""

EDGES = [(1, 2, "a"), (2, 3, "b"), (3, 4, "a"), (7, 8, "zé")]


def table(rows: list[tuple]) -> pa.Table:
    x, y, w = zip(*rows)
    return pa.table({"x": pa.array(x, pa.int32()), "y": pa.array(y, pa.int64()),
                     "w": pa.array(w, pa.string())})


def judge(rows: list[tuple]) -> Reasoner:
    r = Reasoner(PROG, device="cpu")
    r.add_facts("edge", table(rows))
    return r


def sorted_rows(t: pa.Table) -> list[tuple]:
    return sorted(zip(*(c.to_pylist() for c in t.columns)))


def test_input_file_and_output_directory(tmp_path: Path) -> None:
    facts, out = tmp_path / "facts", tmp_path / "out"
    facts.mkdir()
    pq.write_table(table(EDGES), facts / "edge.parquet")
    prog = tmp_path / "p.dl"
    prog.write_text(PROG)
    assert cli_main(["run", str(prog), "-F", str(facts), "-D", str(out), "--quiet",
                     "--device", "cpu"]) == 0
    got = ds.dataset(out / "path.parquet", format="parquet").to_table()
    assert got.schema.names == ["x", "y"]
    assert sorted_rows(got) == sorted_rows(judge(EDGES).relation("path"))
    assert (out / "path.parquet" / "_SUCCESS").exists()
    assert (out / "label.csv").read_text() == "a\t1\na\t3\nb\t2\nzé\t7\n"


def test_spark_style_partitioned_directory_and_format_flag(tmp_path: Path) -> None:
    """A directory partitioned by ``w=...`` with side files Spark leaves; ``--format
    parquet`` makes every directive without IO read and write Parquet."""
    facts, out = tmp_path / "facts", tmp_path / "out"
    d = facts / "edge.parquet"
    ds.write_dataset(table(EDGES), d, format="parquet", partitioning=["w"],
                     partitioning_flavor="hive")
    (d / "_SUCCESS").write_bytes(b"")
    (d / ".part-0.crc").write_bytes(b"\x00junk")
    prog = tmp_path / "p.dl"
    prog.write_text(PROG.replace("(IO=parquet)", ""))
    assert cli_main(["run", str(prog), "-F", str(facts), "-D", str(out), "--quiet",
                     "--device", "cpu", "--format", "parquet"]) == 0
    want = judge(EDGES)
    for name in ("path", "label"):
        got = ds.dataset(out / f"{name}.parquet", format="parquet").to_table()
        assert sorted_rows(got) == sorted_rows(want.relation(name).cast(got.schema)), name
    label = pq.read_table(out / "label.parquet")
    assert label.schema.field("n").type == pa.int64()  # unsigned, widened as Spark reads it


def test_errors_name_the_file_and_column(tmp_path: Path) -> None:
    r = Reasoner(PROG, device="cpu")
    f = tmp_path / "edge.parquet"
    pq.write_table(table(EDGES).drop_columns(["w"]), f)
    with pytest.raises(FactsError, match=r"edge.parquet: no column 'w' for attribute 3"):
        r.load_inputs(tmp_path)
    pq.write_table(table(EDGES).set_column(0, "x", pa.array(["1", "2", "3", "4"])), f)
    with pytest.raises(FactsError, match="column 'x' has type string.*declared number"):
        r.load_inputs(tmp_path)
    pq.write_table(table(EDGES).set_column(1, "y", pa.array([1, None, 3, 4], pa.int64())), f)
    with pytest.raises(FactsError, match="column 'y' of edge has 1 null values \\(first at row 1"):
        r.load_inputs(tmp_path)
    with pytest.raises(FactsError, match="cannot open Parquet data"):
        r.load_inputs(tmp_path / "nowhere")
    assert r.relation_sizes()["edge"] == 0


def test_update_and_export_with_parquet(tmp_path: Path) -> None:
    facts, store, ins, dele, out = (tmp_path / n for n in ("f", "s", "ins", "del", "out"))
    for d in (facts, ins, dele):
        d.mkdir()
    pq.write_table(table(EDGES), facts / "edge.parquet")
    prog = tmp_path / "p.dl"
    prog.write_text(PROG)
    assert cli_main(["run", str(prog), "-F", str(facts), "-D", str(tmp_path / "o"), "--quiet",
                     "--device", "cpu", "--store", str(store)]) == 0
    pq.write_table(table([(4, 5, "c")]), ins / "edge.parquet")
    pq.write_table(table([(2, 3, "b")]), dele / "edge.parquet")
    assert cli_main(["update", str(store), "--insert", str(ins), "--delete", str(dele),
                     "--quiet", "--device", "cpu"]) == 0
    final = [(1, 2, "a"), (3, 4, "a"), (7, 8, "zé"), (4, 5, "c")]
    r = open_store(store, device="cpu")
    assert sorted_rows(r.relation("path")) == sorted_rows(judge(final).relation("path"))
    # a broken update file: clear error, store unchanged
    pq.write_table(table([(4, 5, "c")]).drop_columns(["y"]), ins / "edge.parquet")
    assert cli_main(["update", str(store), "--insert", str(ins), "--quiet",
                     "--device", "cpu"]) != 0
    assert sorted_rows(open_store(store, device="cpu").relation("path")) == sorted_rows(
        judge(final).relation("path"))
    assert cli_main(["export", str(store), "-D", str(out), "--format", "parquet"]) == 0
    assert sorted_rows(pq.read_table(out / "path.parquet")) == sorted_rows(
        judge(final).relation("path"))


def test_dataset_replacement_is_whole(tmp_path: Path) -> None:
    """Writing over a dataset replaces all of it: no part file of the old one survives."""
    d = tmp_path / "r.parquet"
    big = pa.table({"a": np.arange(10)})
    write_parquet_dataset(big, d)
    (d / "part-stale.parquet").write_bytes(b"stale")
    write_parquet_dataset(pa.table({"a": np.arange(3)}), d)
    assert sorted(p.name for p in d.iterdir()) == ["_SUCCESS", "part-0.parquet"]
    assert pq.read_table(d).column("a").to_pylist() == [0, 1, 2]
    write_parquet_dataset(pa.table({"a": pa.array([], pa.int64())}), d)
    assert pq.read_table(d).num_rows == 0 and pq.read_table(d).schema.names == ["a"]

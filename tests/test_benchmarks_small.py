"""Smoke test of the issue 11 item 7 benchmarks on tiny sizes: the chain benchmark, the
small-update suite (with the no-op update) and whole-process materialisation against a peer,
and their reports. No timing assertions: only that they run and say what they should."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import chain
from benchmarks import incremental as inc
from benchmarks import run as bench_run
from benchmarks.report import main as report_main
from benchmarks.report_incremental import main as report_incremental_main


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]


def test_chain_program_text() -> None:
    assert "x < 7." in chain.program_text("chain", 7)
    if (chain.CASE_DIR / chain.CASE_FILE).exists():
        text = chain.program_text("body3", 7)
        assert "x < 7" in text and "1000000" not in text


def test_chain_runs(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    out = tmp_path / "chain.jsonl"
    chain.main(["--sizes", "50", "--programs", "chain", "--no-case", "--peers", "duckdb",
                "--timeout", "300", "--out", str(out)])
    capsys.readouterr()
    recs = {r["engine"]: r for r in _lines(out)}
    ours = recs["gpu-engine"]
    assert ours["status"] == "ok", ours
    assert ours["rounds"] >= 50 and ours["facts"] >= 51
    assert ours["seconds_per_round"] > 0 and ours["process_seconds"] >= ours["seconds"]
    assert ours["engine_path"].startswith(str(chain.REPO_ROOT))
    peer = recs["duckdb"]
    assert peer["status"] in ("ok", "skipped")
    if peer["status"] == "ok":
        assert peer["facts"] == 51
    report_main([str(out), "--out", str(tmp_path / "rep")])
    capsys.readouterr()
    md = (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")
    assert "## Chain" in md and (tmp_path / "rep" / "chain.png").exists()


def test_chain_timeout(tmp_path: Path) -> None:
    prog = tmp_path / "c.dl"
    prog.write_text(chain.program_text("chain", 10), encoding="utf-8")
    rec = chain.measure_engine(prog, tmp_path, "cpu", timeout=0.05)
    assert rec["status"] == "timeout" and rec["lower_bound"]


def test_small_suite(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    st = inc.Settings(small=10, repeats=2, mat_repeats=1, in_process=True, warmup=False,
                      algorithms=("remat", "dred", "dredc", "bf"), mat_modes=("remat",),
                      large=False, noop=True)
    out = tmp_path / "small.jsonl"
    inc.run_suite([inc.dag_case(40, 90)], st, out)
    capsys.readouterr()
    recs = _lines(out)
    ops = {(r["algorithm"], r["operation"]): r for r in recs}
    assert not any(r["operation"] == "large_delete" for r in recs)
    for alg in ("remat", "dred", "dredc", "bf"):
        for op in ("small_delete", "small_insert", "noop_delete"):
            r = ops[(alg, op)]
            assert r["status"] == "ok" and r["matches_remat"], r
            assert r["repeats"] == 2
            assert r["seconds_min"] <= r["seconds_median"] <= r["seconds_max"]
            if alg != "remat":
                assert r["ratio_to_remat"] > 0
        noop = ops[(alg, "noop_delete")]
        assert noop["affected_facts"] == 0 and noop["deleted"] == 0
        assert ops[(alg, "small_delete")]["affected_facts"] >= 10
    report_incremental_main([str(out), "--out", str(tmp_path / "rep")])
    capsys.readouterr()
    md = (tmp_path / "rep" / "incremental.md").read_text(encoding="utf-8")
    assert "## Small updates" in md and "Time per affected fact" in md
    assert (tmp_path / "rep" / "incremental_small_updates.png").exists()


def test_absent_facts_are_absent() -> None:
    import pyarrow as pa

    t = pa.table({"s": ["a", "b", "c"], "o": ["x", "y", "z"]})
    got = inc.absent_facts(t, 2)
    assert got.num_rows == 2 and not set(got.column(0).to_pylist()) & {"a", "b", "c"}
    n = pa.table({"x": pa.array([1, 5, 9], pa.int64()), "y": pa.array([2, 6, 10], pa.int64())})
    assert min(inc.absent_facts(n, 3).column(0).to_pylist()) > 9


def test_whole_process(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    case = bench_run._process(bench_run._dag("tc-linear", 60, 150))
    out = tmp_path / "process.jsonl"
    bench_run.run_suite([case], "cpu", ["duckdb", "souffle"], 300.0, out)
    capsys.readouterr()
    recs = {r["engine"]: r for r in _lines(out)}
    ours = recs["gpu-engine"]
    assert ours["status"] == "ok" and ours["count_ok"] and ours["whole_process"], ours
    assert ours["materialise_seconds"] > 0
    assert recs["duckdb"]["status"] in ("ok", "skipped")
    if recs["duckdb"]["status"] == "ok":
        assert recs["duckdb"]["count_ok"]
    assert recs["souffle"]["status"] in ("ok", "skipped")
    report_main([str(out), "--out", str(tmp_path / "rep")])
    capsys.readouterr()
    assert "(whole process)" in (tmp_path / "rep" / "report.md").read_text(encoding="utf-8")


def test_count_only() -> None:
    text = bench_run.count_only(".decl e(x:number)\n.output p\n", "e")
    assert ".printsize p" in text and ".output" not in text and ".input e" in text

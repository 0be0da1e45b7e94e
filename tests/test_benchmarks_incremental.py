"""Smoke test of the incremental-maintenance benchmark runner and its report (tiny sizes)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from benchmarks import incremental as inc
from benchmarks.generators import example1, sspe, transitive_closure_size
from benchmarks.report_incremental import fit_exponent
from benchmarks.report_incremental import main as report_main

CASES = [inc.dag_case(30, 60), inc.sspe_case(30, 80, max_length=3),
         inc.example1_case(30), inc.example1_case(90)]


def _settings(**kw: Any) -> inc.Settings:
    return inc.Settings(small=12, repeats=2, mat_repeats=1, in_process=True, **kw)


def _run(tmp_path: Path, cases: list[inc.Case], st: inc.Settings) -> list[dict[str, Any]]:
    out = tmp_path / "incr.jsonl"
    inc.run_suite(cases, st, out)
    return [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]


def test_generators() -> None:
    e = example1(4)
    assert e.shape == (8, 2) and e[:4, 1].tolist() == [0] * 4 and e[4:, 1].tolist() == [5, 6, 7, 8]
    b = sspe(50, 200, max_length=4)
    assert b.shape == (200, 3) and (b[:, 0] < b[:, 1]).all()
    assert b[:, 2].min() >= 1 and b[:, 2].max() <= 4


def test_runner_lines_and_cross_checks(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    recs = _run(tmp_path, CASES, _settings())
    capsys.readouterr()
    for case in CASES:
        mine = [r for r in recs if (r["benchmark"], r["size"]) == (case.benchmark, case.size)]
        mat = {r["algorithm"]: r for r in mine if r["operation"] == "materialise"}
        assert set(mat) == {"remat", "remat1c", "remat2c"}
        assert all(r["status"] == "ok" and r["seconds"] >= 0 for r in mat.values())
        assert len({r["facts"] for r in mat.values()}) == 1
        if case.benchmark == "DAG-R":
            ds = case.dataset
            from benchmarks.generators import dag_r

            oracle = transitive_closure_size(dag_r(ds["n"], ds["m"], 0), ds["n"])
            assert all(r["expected_facts"] == oracle and r["count_ok"] for r in mat.values())
        for alg in inc.ALGORITHMS:
            for op in inc.OPERATIONS:
                [r] = [r for r in mine if r["algorithm"] == alg and r["operation"] == op]
                assert r["status"] in ("ok", "error", "skipped", "timeout"), r
                if alg == "counting" and case.benchmark != "Example1":
                    assert r["status"] == "skipped"  # recursive programs
                if r["status"] == "ok":
                    assert r["matches_remat"] is True, r
                    assert len(r["seconds_repeats"]) == r["repeats"]
                    for f in ("overdeleted", "rederived", "added", "derivations", "backward"):
                        assert f in r
                else:
                    assert r.get("error") or r.get("reason")
    large = [r for r in recs if r["benchmark"] == "Example1" and r["operation"] == "large_delete"]
    assert {r["batch_facts"] for r in large} == {30, 90}  # every R(a_i, c_i)


def test_cross_check_detects_a_wrong_update(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture) -> None:
    from gpu_engine.stats import UpdateStats

    def no_op(self: Any, insert: Any = None, delete: Any = None) -> tuple[float, Any]:
        return 0.001, UpdateStats(algorithm=self.algorithm, device="cpu")

    monkeypatch.setattr(inc._Updater, "__call__", no_op)
    recs = _run(tmp_path, [inc.example1_case(30)], _settings(algorithms=("dredc",)))
    capsys.readouterr()
    got = {r["operation"]: r for r in recs if r["algorithm"] == "dredc"}
    assert got["small_delete"]["matches_remat"] is False  # nothing was deleted
    assert got["small_delete"]["facts"] == 30 * 5 + 1
    assert got["small_delete"]["expected_facts"] < got["small_delete"]["facts"]
    assert got["small_insert"]["matches_remat"] is True  # the original state
    assert got["large_delete"]["matches_remat"] is False
    assert got["large_delete"]["expected_facts"] == 30 + 1  # R(a_i, b) and S(b, b)


def test_report(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    recs = _run(tmp_path, [inc.example1_case(30), inc.example1_case(90)],
                _settings(algorithms=("remat", "dredc")))
    recs.append({"benchmark": "Example1", "size": "n=270", "algorithm": "dred",
                 "operation": "large_delete", "status": "ok", "seconds": 0.9, "repeats": 1})
    path = tmp_path / "r.jsonl"
    path.write_text("\n".join(map(json.dumps, recs)), encoding="utf-8")
    assert report_main([str(path), "--out", str(tmp_path / "rep")]) == 0
    capsys.readouterr()
    md = (tmp_path / "rep" / "incremental.md").read_text(encoding="utf-8")
    assert "Materialisation cost" in md and "Example 1" in md and "exponent" in md
    assert (tmp_path / "rep" / "incremental_example1.png").stat().st_size > 0
    assert fit_exponent([10, 100, 1000], [1, 100, 10_000]) == pytest.approx(2.0)

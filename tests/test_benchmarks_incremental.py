"""Smoke test of the incremental-maintenance benchmark runner and its report (tiny sizes)."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from benchmarks import incremental as inc
from benchmarks.generators import (
    example1,
    related_places,
    related_places_counts,
    sspe,
    transitive_closure_size,
)
from benchmarks.report_incremental import fit_exponent, ratio_text
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
        assert set(mat) == set(inc.MATERIALISE_MODES)
        for mode in ("mat_mod", "mat_mod_nc"):  # no TC/STC module in these programs
            assert mat.pop(mode)["status"] == "skipped"
        assert all(r["status"] == "ok" and r["seconds"] >= 0 for r in mat.values())
        assert all(r["modules_setting"] == "off" and r["modules"] == [] for r in mat.values())
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
                if alg in inc.MODULAR:
                    assert r["status"] == "skipped"  # no TC/STC module
                if r["status"] == "ok":
                    assert r["matches_remat"] is True, r
                    assert len(r["seconds_repeats"]) == r["repeats"]
                    for f in ("overdeleted", "rederived", "added", "derivations", "backward"):
                        assert f in r
                else:
                    assert r.get("error") or r.get("reason")
    large = [r for r in recs if r["benchmark"] == "Example1" and r["operation"] == "large_delete"
             and r["status"] != "skipped"]
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


# --------------------------------------------------------------------------- paper 002


MODULE_CASES = [inc.dag_nonlinear_case(200, 600), inc.clique_case((8, 12, 20), 4)]


def test_related_places_generator() -> None:
    d = related_places((5, 9, 30), degree=4, place_fraction=0.5, isolated=7, seed=3)
    assert (d.link[:, 0] != d.link[:, 1]).all()
    assert len(np.unique(np.sort(d.link, axis=1), axis=0)) == len(d.link)  # one per edge
    assert np.bincount(d.component[d.component >= 0]).tolist() == [5, 9, 30]
    assert (d.component[d.link[:, 0]] == d.component[d.link[:, 1]]).all()
    c = related_places_counts(d.link, d.place)
    assert c["related"] == 5 ** 2 + 9 ** 2 + 30 ** 2  # each component is connected
    assert c["TOTAL"] == c["related"] + c["relatedToPlace"] + c["standalone"]


def test_modules_cases(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    st = _settings(algorithms=inc.MODULE_ALGORITHMS)
    recs = _run(tmp_path, MODULE_CASES, st)
    capsys.readouterr()
    for case, module in zip(MODULE_CASES, ("tc(path)", "stc(related)")):
        mine = [r for r in recs if (r["benchmark"], r["size"]) == (case.benchmark, case.size)]
        mat = {r["algorithm"]: r for r in mine if r["operation"] == "materialise"}
        assert len({r["facts"] for r in mat.values()}) == 1
        for mode in ("remat", "remat2c", "mat_mod", "mat_mod_nc"):
            assert mat[mode]["status"] == "ok" and mat[mode]["count_ok"] is True, mat[mode]
        for mode in ("mat_mod", "mat_mod_nc"):
            assert mat[mode]["modules"] == [module] and mat[mode]["modules_setting"] == "auto"
            assert mat[mode]["tc_modules"] + mat[mode]["stc_modules"] == 1
            assert mat[mode]["rule_modules"][module] >= 1
        assert mat["remat"]["modules"] == [] and mat["remat"]["rule_modules"]["seminaive"] >= 1
        assert mat["mat_mod"]["derivations"] < mat["remat"]["derivations"]
        for alg in inc.MODULE_ALGORITHMS:
            for op in inc.OPERATIONS:
                [r] = [r for r in mine if r["algorithm"] == alg and r["operation"] == op]
                assert r["status"] == "ok" and r["matches_remat"] is True, r
                assert r["modules"] == ([module] if alg in inc.MODULAR else []), r
                assert r["modules_setting"] == ("auto" if alg in inc.MODULAR else "off")
                assert r["update_algorithm"] == inc.update_algorithm(alg)[0]
    assert not [r for r in recs if r["algorithm"] not in inc.MODULE_ALGORITHMS
                and r["operation"] != "materialise"]
    path = tmp_path / "m.jsonl"
    path.write_text("\n".join(map(json.dumps, recs)), encoding="utf-8")
    assert report_main([str(path), "--out", str(tmp_path / "rep")]) == 0
    capsys.readouterr()
    md = (tmp_path / "rep" / "incremental.md").read_text(encoding="utf-8")
    assert "paper 002 Table 1" in md and "paper 002 Table 2" in md and "stc(related)" in md
    assert (tmp_path / "rep" / "incremental_modules.png").stat().st_size > 0


def test_timeout_is_a_lower_bound(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                  capsys: pytest.CaptureFixture) -> None:
    """An update stopped by the timeout reports how long it ran, and the report prints the
    time and the ratios built on it as bounds."""
    real = inc._Updater.__call__

    def slow(self: Any, insert: Any = None, delete: Any = None) -> tuple[float, Any]:
        if self.algorithm == "dredc" and self.r.engine.modules == "off" and delete is not None \
                and len(delete) > inc.WARMUP_FACTS:
            time.sleep(0.05)
            raise inc.Interrupted()  # what SIGTERM raises in a child job
        return real(self, insert, delete)

    monkeypatch.setattr(inc._Updater, "__call__", slow)
    recs = _run(tmp_path, MODULE_CASES[1:], _settings(algorithms=("dredc", "dredc_mod"),
                                                       mat_modes=("remat", "mat_mod")))
    capsys.readouterr()
    got = {(r["algorithm"], r["operation"]): r for r in recs}
    timed_out = got[("dredc", "small_delete")]
    assert timed_out["status"] == "timeout" and timed_out["lower_bound"] is True
    assert timed_out["seconds"] >= 0.05
    assert got[("dredc", "small_insert")]["status"] == "timeout"  # never started
    assert got[("dredc", "small_insert")].get("seconds") is None
    assert got[("dredc", "large_delete")]["lower_bound"] is True
    assert got[("dredc_mod", "small_delete")]["status"] == "ok"
    ratio = ratio_text(timed_out, got[("dredc_mod", "small_delete")], "×")
    assert ratio.startswith("≥ ") and ratio.endswith("×")
    assert ratio_text(got[("dredc_mod", "small_delete")], timed_out).startswith("≤ ")
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(map(json.dumps, recs)), encoding="utf-8")
    assert report_main([str(path), "--out", str(tmp_path / "rep")]) == 0
    capsys.readouterr()
    md = (tmp_path / "rep" / "incremental.md").read_text(encoding="utf-8")
    table2 = md[md.index("paper 002 Table 2"):]
    assert "| ≥ " in table2 and "≥ " + ratio.removeprefix("≥ ") in table2


def test_plain_mat_timeout_stops_dredc(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                       capsys: pytest.CaptureFixture) -> None:
    """When plain Mat timed out, DRed^c (whose set-up is plain Mat) is not started."""
    real = inc.materialise_job

    def mat(case: inc.Case, st: inc.Settings, mode: str, emit: Any, cache: Any = None) -> None:
        if mode != "remat":
            return real(case, st, mode, emit, cache)
        emit({**inc._base(case, st), "algorithm": mode, "operation": "materialise",
              "status": "timeout", "seconds": 7.0, "lower_bound": True})

    monkeypatch.setattr(inc, "materialise_job", mat)
    recs = _run(tmp_path, MODULE_CASES[1:], _settings(algorithms=("dredc", "dredc_mod"),
                                                       mat_modes=("remat", "mat_mod")))
    capsys.readouterr()
    got = {(r["algorithm"], r["operation"]): r for r in recs}
    for op in inc.OPERATIONS:
        assert got[("dredc", op)]["status"] == "timeout"
        assert "plain Mat did not finish" in got[("dredc", op)]["error"]
        assert got[("dredc_mod", op)]["status"] == "ok"


def test_job_result_missing_operations() -> None:
    res = inc.JobResult(why="timeout: no result within 5 s (timed part)",
                        last_started=("large_delete", 100.0), stopped_at=107.5)
    rec = res.missing({"operation": "large_delete"}, "large_delete")
    assert rec["status"] == "timeout" and rec["seconds"] == 7.5 and rec["lower_bound"]
    other = res.missing({"operation": "small_insert"}, "small_insert")
    assert other["status"] == "timeout" and "seconds" not in other
    err = inc.JobResult(why="child exited 1: boom").missing({}, "small_delete")
    assert err["status"] == "error"


def test_peer_report_with_modules(tmp_path: Path) -> None:
    from benchmarks import report

    base = {"benchmark": "tc-nonlinear", "size": "DAG-R n=10000 m=100000", "facts": 22_229_333,
            "expected_facts": 22_229_333}
    recs = [{**base, "engine": "gpu-engine", "status": "timeout", "facts": None,
             "materialise_seconds": 1795.0, "lower_bound": True},
            {**base, "engine": "gpu-engine-mod", "status": "ok", "materialise_seconds": 14.0,
             "count_ok": True, "mat_over_mat_mod": 1795.0 / 14.0,
             "mat_over_mat_mod_lower_bound": True, "ratio_to_fastest_peer": 0.1,
             "fastest_peer": "clingo", "modules": ["tc(path)"]},
            {**base, "engine": "clingo", "status": "ok", "materialise_seconds": 140.0,
             "count_ok": True}]
    md = report.render_markdown(recs)
    header = next(line for line in md.splitlines() if line.startswith("| benchmark / size"))
    assert header.split(" | ")[2:4] == ["gpu-engine", "gpu-engine-mod"]
    assert "≥ 1795.0" in md and "≥ 128.21×" in md and "0.10 (vs clingo)" in md
    report.render_plot(recs, tmp_path / "r.png")
    assert (tmp_path / "r.png").stat().st_size > 0

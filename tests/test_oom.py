"""Out of device memory (issue 12 item 2): retries with smaller join chunks, then the CPU
path, with the result of an unconstrained run and the state never left half-changed.

No GPU here: faults are injected (``GPU_ENGINE_FAKE_OOM``, ``kernels/oom.py``) into the
NumPy backend, which then stands in for the device, so the real retry and fallback code
runs; on a GPU the same hook counts CuPy's allocations (``make faults-gpu`` also limits the
memory pool)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from gpu_engine.host.cli import main
from gpu_engine.kernels import join as J
from gpu_engine.kernels.backend import Backend, get_backend
from gpu_engine.kernels.oom import (
    DeviceOutOfMemory,
    FaultPlan,
    InjectedDeviceOOM,
    is_device_oom,
)

from gpu_engine import Reasoner

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # benchmarks.campaigns (the store checks)
    sys.path.insert(0, str(ROOT))

PROGRAM = """
.decl e(x: number, y: number)
.decl p(x: number, y: number)
.decl q(x: number)
.decl r(x: number, n: number)
p(x, y) :- e(x, y).
p(x, z) :- p(x, y), e(y, z).
q(x) :- p(x, y), y > 40, !e(x, _).
r(x, c) :- q(x), c = count : { p(x, _) }.
"""
EDGES = np.array([[i, i + 1] for i in range(40)] + [[i, i + 7] for i in range(0, 30, 3)])


@pytest.fixture
def small_device(monkeypatch: pytest.MonkeyPatch) -> Any:
    """Small join chunks and floor, no small-delta path: a few rows exercise the chunking."""
    monkeypatch.setenv("GPU_ENGINE_JOIN_CHUNK_ROWS", "64")
    monkeypatch.setenv("GPU_ENGINE_OOM_FLOOR_ROWS", "4")
    monkeypatch.setenv("GPU_ENGINE_SMALL_PATH", "0")

    def set_faults(spec: str | None) -> None:
        if spec:
            monkeypatch.setenv("GPU_ENGINE_FAKE_OOM", spec)
        else:
            monkeypatch.delenv("GPU_ENGINE_FAKE_OOM", raising=False)
    return set_faults


def materialised(counting: bool = True) -> Reasoner:
    r = Reasoner(PROGRAM, device="cpu", counting=counting)
    r.add_facts("e", EDGES)
    r.materialise()
    return r


def same_state(a: Reasoner, b: Reasoner) -> None:
    assert bool(a.engine.counters) == bool(b.engine.counters)
    for name in ("e", "p", "q", "r"):
        assert a.relation(name).equals(b.relation(name)), name
        assert not a.engine.counters or all(np.array_equal(x, y) for x, y in zip(a.engine.counter_arrays(name),
                                                         b.engine.counter_arrays(name))), name


# --- the hook and the classification ------------------------------------------------------


def test_fault_plan_parse_and_events() -> None:
    plan = FaultPlan.parse("join=2, repeat=2,rows=100")
    assert (plan.join_at, plan.repeat, plan.max_rows) == (2, 2, 100)
    plan.event(10, join=True)
    for _ in range(2):
        with pytest.raises(InjectedDeviceOOM, match="join chunk"):
            plan.event(10, join=True)
    plan.event(10, join=True)  # repeat=2: two faults, then none
    with pytest.raises(InjectedDeviceOOM, match="101 rows"):
        plan.event(101, join=True)
    plan.event(101, join=False)  # rows=M limits join chunks only
    for bad in ("joins=1", "join=x", "join=-1"):
        with pytest.raises(ValueError, match="GPU_ENGINE_FAKE_OOM"):
            FaultPlan.parse(bad)


def test_device_oom_is_recognised_by_class_and_code() -> None:
    """CuPy's and Numba's errors, recognised without importing either (class names and
    modules as the libraries define them); NumPy's MemoryError is host memory."""
    def fake(name: str, module: str, base: type, **attrs: Any) -> BaseException:
        cls = type(name, (base,), {"__module__": module})
        exc = cls("cudaErrorMemoryAllocation: out of memory" if "Runtime" in name else "x")
        for k, v in attrs.items():
            setattr(exc, k, v)
        return exc

    assert is_device_oom(fake("OutOfMemoryError", "cupy.cuda.memory", MemoryError))
    assert is_device_oom(fake("CUDARuntimeError", "cupy_backends.cuda.api.runtime",
                              RuntimeError, status=2))
    assert is_device_oom(fake("CudaAPIError", "numba.cuda.cudadrv.driver", Exception, code=2))
    assert not is_device_oom(fake("CudaAPIError", "numba.cuda.cudadrv.driver", Exception,
                                  code=700))
    assert is_device_oom(DeviceOutOfMemory("x")) and is_device_oom(InjectedDeviceOOM("x"))
    assert not is_device_oom(MemoryError("Unable to allocate 8.00 GiB"))
    assert is_device_oom(MemoryError("std::bad_alloc: cudaErrorMemoryAllocation: out of memory"))


def test_scan_of_one_probe_row_is_chunked() -> None:
    """A join whose single probe row matches a whole relation is split into ranges."""
    be = Backend("cpu", np, join_chunk_rows=7)
    lo, counts = np.array([5], dtype=np.int64), np.array([30], dtype=np.int64)
    chunks = list(J.join_chunks(be, lo, counts))
    assert [len(p) for p, _ in chunks] == [7, 7, 7, 7, 2]
    pi, bpos = J.expand(be, lo, counts)
    assert np.array_equal(np.concatenate([b for _, b in chunks]), bpos)
    assert np.array_equal(np.concatenate([p for p, _ in chunks]), pi)


def test_env_plan_makes_the_cpu_backend_a_device(small_device: Any) -> None:
    small_device("join=1")
    be = get_backend("cpu")
    assert be.is_device and be.faults is not None and not be.is_gpu
    small_device(None)
    assert not get_backend("cpu").is_device


# --- materialisation -----------------------------------------------------------------------


def test_retry_with_smaller_chunks_cures_a_passing_fault(small_device: Any,
                                                         capsys: pytest.CaptureFixture) -> None:
    small_device(None)
    want = materialised()
    small_device("join=5")
    r = materialised()
    assert r.stats.oom_retries == 1 and r.stats.fallback == ""
    assert r.device == "cpu" and r.engine.be.faults is not None  # still "on the device"
    assert r.engine.be.join_chunk_rows == 32  # halved, and kept
    same_state(r, want)
    assert "warning" not in capsys.readouterr().err


def test_memory_limit_is_met_by_smaller_chunks(small_device: Any) -> None:
    """rows=M: a device that holds join chunks of at most M rows; halving gets there."""
    small_device(None)
    want = materialised()
    small_device("rows=20")
    r = materialised()
    st = r.stats
    assert st.oom_retries >= 1 and st.fallback == "", st.fallback
    assert r.engine.be.join_chunk_rows <= 32
    same_state(r, want)


@pytest.mark.parametrize("spec", ["join=3,repeat=0", "join=9,repeat=0", "alloc=6",
                                  "alloc=14,repeat=0", "rows=3"])
def test_fallback_to_the_cpu_gives_the_same_result(small_device: Any, spec: str,
                                                   capsys: pytest.CaptureFixture) -> None:
    small_device(None)
    want = materialised()
    small_device(spec)
    r = materialised()
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and err[0].startswith("warning: out of device memory in "), err
    assert err[0].endswith("continuing on the CPU")
    assert r.stats.fallback and r.stats.fallback in err[0]
    assert r.engine.be.faults is None and not r.engine.be.is_device  # on the CPU now
    same_state(r, want)
    # the engine keeps working on the CPU: an update, then again equal to a fresh run
    st = r.update(insert={"e": np.array([[50, 0]])}, delete={"e": np.array([[3, 4]])})
    assert st.fallback == ""
    small_device(None)
    fresh = Reasoner(PROGRAM, device="cpu", counting=True)
    fresh.add_facts("e", np.concatenate([EDGES[(EDGES != [3, 4]).any(axis=1)], [[50, 0]]]))
    fresh.materialise()
    same_state(r, fresh)


def test_fallback_keeps_autoinc_numbering(small_device: Any) -> None:
    """A stratum redone on the CPU numbers its derivations as the unconstrained run."""
    prog = (".decl e(x: number, y: number)\n.decl t(x: number, y: number, i: number)\n"
            "t(x, z, autoinc()) :- e(x, y), e(y, z).\n")
    facts = np.array([[i % 9, (i * 5) % 9] for i in range(40)])

    def run() -> Any:
        r = Reasoner(prog, device="cpu")
        r.add_facts("e", facts)
        st = r.materialise()
        return r.relation("t"), st

    small_device(None)
    want, _ = run()
    for spec in ("join=2", "join=2,repeat=0"):
        small_device(spec)
        got, st = run()
        assert got.equals(want), spec
        assert st.oom_retries or st.fallback


def test_fallback_while_loading_facts(small_device: Any, capsys: pytest.CaptureFixture) -> None:
    small_device(None)
    want = materialised()
    small_device("alloc=1")
    r = materialised()
    assert "loading e" in capsys.readouterr().err
    same_state(r, want)


# --- updates -------------------------------------------------------------------------------


@pytest.mark.parametrize("algorithm", ["dredc", "bfc", "remat"])
def test_update_is_redone_on_the_cpu(small_device: Any, algorithm: str,
                                     capsys: pytest.CaptureFixture) -> None:
    small_device(None)
    ins, dele = np.array([[45, 1], [2, 60]]), np.array([[10, 11], [3, 10]])
    want = materialised()
    want.update(insert={"e": ins}, delete={"e": dele}, algorithm=algorithm)
    small_device("join=4000")  # no fault during the materialisation
    r = materialised()
    assert not r.stats.fallback
    plan = r.engine.be.faults
    plan.join_at, plan.repeat = plan.joins + 3, 0  # every join of the update fails
    st = r.update(insert={"e": ins}, delete={"e": dele}, algorithm=algorithm)
    assert st.fallback.startswith(f"out of device memory in the {algorithm} update")
    assert st.device == "cpu" and r.device == "cpu"
    assert capsys.readouterr().err.count("warning: out of device memory") == 1
    same_state(r, want)


# --- the command line ----------------------------------------------------------------------


def _cli(tmp: Path, name: str, *args: str) -> tuple[int, str, dict[str, bytes]]:
    import contextlib
    import io

    err = io.StringIO()
    out = tmp / f"out_{name}"
    with contextlib.redirect_stderr(err):
        rc = main([*args, "-D", str(out), "--device", "cpu", "--quiet"])
    files = {p.name: p.read_bytes() for p in out.iterdir()} if out.is_dir() else {}
    return rc, err.getvalue(), files


def test_cli_run_and_update_fall_back(small_device: Any, tmp_path: Path) -> None:
    prog = tmp_path / "p.dl"
    prog.write_text(PROGRAM.replace(".decl e(x: number, y: number)",
                                    ".decl e(x: number, y: number)\n.input e")
                    + ".output p\n.output r\n")
    facts, ins = tmp_path / "facts", tmp_path / "ins"
    facts.mkdir()
    ins.mkdir()
    (facts / "e.facts").write_text("".join(f"{a}\t{b}\n" for a, b in EDGES))
    (ins / "e.facts").write_text("45\t1\n2\t60\n")
    small_device(None)
    rc, err, want = _cli(tmp_path, "ref", "run", str(prog), "-F", str(facts), "--store",
                         str(tmp_path / "ref"))
    assert rc == 0 and not err
    rc, _, want_upd = _cli(tmp_path, "ref_upd", "update", str(tmp_path / "ref"), "--insert",
                           str(ins))
    assert rc == 0
    small_device("join=3,repeat=0")
    stats = tmp_path / "stats.json"
    rc, err, got = _cli(tmp_path, "got", "run", str(prog), "-F", str(facts), "--store",
                        str(tmp_path / "db"), "--stats", "--stats-json", str(stats))
    assert rc == 0 and got == want, err
    assert err.count("warning: out of device memory") == 1 and "fallback: out of" in err
    assert json.loads(stats.read_text())["fallback"].startswith("out of device memory")
    rc, err, got = _cli(tmp_path, "got_upd", "update", str(tmp_path / "db"), "--insert",
                        str(ins), "--stats")
    assert rc == 0 and got == want_upd, err
    assert "fallback: out of device memory in the dredc update" in err
    from benchmarks.campaigns.faults import same, stored_state

    assert same(stored_state(tmp_path / "db"), stored_state(tmp_path / "ref"))


def test_cli_host_out_of_memory_after_fallback_is_one_line(
        small_device: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """If the CPU runs out too: the one-line error naming stratum and rule, nothing written."""
    from gpu_engine import fallback

    class HostFull(Backend):
        def charge(self, rows: int, join: bool = False) -> None:
            if join:
                raise MemoryError("Unable to allocate 8.00 GiB for an array with shape "
                                  "(1073741824,) and data type int64")

    monkeypatch.setattr(fallback, "cpu_fallback",
                        lambda be: HostFull("cpu", np, be.join_chunk_rows))
    prog = tmp_path / "p.dl"
    prog.write_text(PROGRAM + "e(1, 2). e(2, 3).\n.output p\n")
    small_device("join=1,repeat=0")
    out = tmp_path / "out_x"
    out.mkdir()
    (out / "p.csv").write_text("old\n")
    rc, err, files = _cli(tmp_path, "x", "run", str(prog))
    lines = [ln for ln in err.splitlines() if not ln.startswith("warning: ")]
    assert rc == 1 and len(lines) == 1, err
    assert lines[0].startswith("gpu-engine: error: out of memory: stratum ")
    assert ", rule p(x, y) :- e(x, y). at " in lines[0] and "Unable to allocate" in lines[0]
    assert files == {"p.csv": b"old\n"}


def test_store_that_does_not_fit_loads_on_the_cpu(small_device: Any, tmp_path: Path) -> None:
    """Opening a store (export, update) whose relations do not fit on the device."""
    from gpu_engine.host.store import open_store, save_store

    from benchmarks.campaigns.faults import same, stored_state

    small_device(None)
    r = materialised()
    save_store(r, tmp_path / "db")
    want = stored_state(tmp_path / "db")
    small_device("alloc=1")
    import contextlib
    import io

    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        got = open_store(tmp_path / "db", device="cpu")
    assert "in loading the store" in err.getvalue() and got.device == "cpu"
    assert got.engine.be.faults is None
    st = got.update(insert={"e": np.array([[45, 1]])})
    assert st.fallback.startswith("out of device memory in loading the store")
    small_device(None)
    r.update(insert={"e": np.array([[45, 1]])})
    same_state(got, r)
    assert same(stored_state(tmp_path / "db"), want)

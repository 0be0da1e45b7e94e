"""``make faults-gpu``: out of device memory at random points of ``run`` and ``update``.

Issue 12 item 3(d).  Each trial runs one operation in this process with the device made to
run out of memory somewhere, and checks that it completes with the result of the
unconstrained run, having said so in one ``warning:`` line when it left the device:

- **with a GPU** (CuPy finds one; ``--device gpu``): the memory pool's limit
  (``cupy.get_default_memory_pool().set_limit(size=...)``) is set to a random fraction
  (2-100 %) of the pool's high-water mark in an unconstrained run of the same operation, so
  CuPy raises ``OutOfMemoryError`` wherever the engine then allocates; one trial in four
  instead injects a fault at a random join chunk (below);
- **without one** (``--device cpu``, the default here): ``GPU_ENGINE_FAKE_OOM`` (see
  ``gpu_engine/kernels/oom.py``) raises a device OOM at the K-th join chunk or K-th large
  allocation (K uniform over the operation's count, measured by a calibration run), once
  or from then on (``repeat=0``), or for every join chunk above M rows; the NumPy backend
  then stands in for the device, so the real retry and fallback code runs.  Join chunks
  start small (64 to 4,096 rows, floor 4-64) so the few thousand facts of a trial are
  chunked and retried as a large input would be on a GPU; the small-delta path is off in
  half the trials.

Operations (in turn): ``run --store`` (a transitive closure with a comparison, or a
non-linear one with an aggregate and a negation, with TC modules or without), ``update``
of a copy of the stored S0 (insertions and deletions: S1, the default algorithm or one of
``dred``, ``bfc``, ``remat``), and the Python API (materialise, then update).  Checked:
exit 0 with no traceback and at most one ``warning: out of ... memory`` line (and none
without a fallback), every output file equal to the unconstrained run's, the store equal
(E, I, counters of every relation) to S0 or S1 materialised from scratch, the statistics'
``fallback`` matching the warning.  Counted: trials, faults injected (the plan or the limit
hit), cured by smaller chunks (retries, no fallback), fallbacks to the CPU, failures.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import numpy as np

from .common import Campaign, cli_args, run_cli, snapshot
from .faults import engine_state, graph_and_update, same, stored_state, write_edges

TC = """\
.decl edge(x: number, y: number)
.input edge
.decl path(x: number, y: number)
.output path
.decl big(x: number)
.output big
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
big(x) :- path(x, y), y > 100.
"""
NONLINEAR = """\
.decl edge(x: number, y: number)
.input edge
.decl reach(x: number, y: number)
.output reach
.decl hub(x: number, n: number)
.output hub
.decl lone(x: number)
.output lone
reach(x, y) :- edge(x, y).
reach(x, z) :- reach(x, y), reach(y, z).
hub(x, n) :- reach(x, _), n = count : { reach(x, _) }, n > 40.
lone(x) :- edge(x, _), !reach(_, x).
"""
PROGRAMS = {"tc": TC, "nonlinear": NONLINEAR}
OPS = ("run", "update", "api")
ALGORITHMS = (None, None, "dred", "bfc", "remat2c")
OOM_LINE = "warning: out of "


def without_counters(state: dict[str, Any]) -> dict[str, Any]:
    return {n: (e, i, ()) for n, (e, i, _) in state.items()}


def same_facts(got: dict[str, Any], want: dict[str, Any]) -> bool:
    """Equal E and I, and equal counters where ``got`` kept them."""
    if got is None:
        return False
    if all(len(c) == 0 for _, _, c in got.values()):
        want = without_counters(want)
    return same(got, want)


def gpu_ready() -> bool:
    from gpu_engine.kernels.backend import gpu_available

    return gpu_available()


class World:
    """The programs, facts, template stores and every expected result."""

    def __init__(self, root: Path, size: int) -> None:
        from gpu_engine.host.reasoner import Reasoner

        rng = np.random.default_rng(20_261_124)
        comps = max(2, size)
        edges, ins, dele = graph_and_update(rng, comps, 24, comps, 30)
        self.root = root
        self.f0 = write_edges(root / "f0", edges)
        self.ins, self.dele = write_edges(root / "ins", ins), write_edges(root / "del", dele)
        self.edges = {"S0": edges, "S1": (edges | ins) - dele}
        self.arrays = {k: np.array(sorted(v)) for k, v in self.edges.items()}
        self.ins_rows, self.del_rows = np.array(sorted(ins)), np.array(sorted(dele))
        self.states: dict[tuple[str, str, str], Any] = {}
        self.outputs: dict[tuple[str, str], dict[str, bytes]] = {}
        self.progs: dict[str, Path] = {}
        self.stores: dict[tuple[str, str], Path] = {}
        for name, text in PROGRAMS.items():
            prog = root / f"{name}.dl"
            prog.write_text(text)
            self.progs[name] = prog
            outs = [ln.split()[1] for ln in text.splitlines() if ln.startswith(".output")]
            for key, e in self.arrays.items():
                for modules in ("auto", "off"):  # (modular strata keep no c_r)
                    r = Reasoner(text, device="cpu", counting=True, modules=modules)
                    r.add_facts("edge", e)
                    r.materialise()
                    self.states[name, key, modules] = engine_state(r.engine)
                self.outputs[name, key] = {f"{o}.csv": r.render(o, "\t").encode() for o in outs}
            for modules in ("auto", "off"):
                store = root / f"store_{name}_{modules}"
                res = run_cli(["run", str(prog), "-F", str(self.f0), "-D", str(root / "o"),
                               "--store", str(store), "--device", "cpu", "--quiet",
                               "--modules", modules], timeout=600)
                if res.rc != 0:
                    raise RuntimeError(f"template store: {res.stderr}{res.traceback}")
                self.stores[name, modules] = store
        self.calls: dict[Any, tuple[int, int]] = {}
        self.peaks: dict[Any, int] = {}


def _env(updates: dict[str, str | None]) -> dict[str, str | None]:
    """Set environment variables; returns the previous values."""
    old = {k: os.environ.get(k) for k in updates}
    for k, v in updates.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    return old


class Trial:
    def __init__(self, c: Campaign, s: int, what: str) -> None:
        self.c, self.s, self.what = c, s, what
        self.ok = True

    def fail(self, kind: str, detail: str) -> None:
        self.ok = False
        self.c.fail(kind, self.s, detail, self.what)


def _op_args(w: World, op: str, prog: str, modules: str, alg: str | None, d: Path,
             device: str) -> list[str]:
    if op == "run":
        return ["run", str(w.progs[prog]), "-F", str(w.f0), "-D", str(d / "out"), "--store",
                str(d / "store"), "--device", device, "--quiet", "--modules", modules,
                "--stats-json", str(d / "stats.json")]
    shutil.copytree(w.stores[prog, modules], d / "store")
    (d / "store" / "LOCK").unlink(missing_ok=True)
    args = ["update", str(d / "store"), "--insert", str(w.ins), "--delete", str(w.dele),
            "-D", str(d / "out"), "--device", device, "--quiet",
            "--stats-json", str(d / "stats.json")]
    return args + (["--algorithm", alg] if alg else [])


def _api(w: World, prog: str, modules: str, alg: str | None, device: str) -> tuple[Any, ...]:
    from gpu_engine.host.reasoner import Reasoner

    r = Reasoner(PROGRAMS[prog], device=device, counting=True, modules=modules)
    r.add_facts("edge", w.arrays["S0"])
    m = r.materialise()
    s0 = engine_state(r.engine)
    u = r.update(insert={"edge": w.ins_rows}, delete={"edge": w.del_rows}, algorithm=alg)
    return r, m, s0, u


def one_trial(c: Campaign, w: World, s: int, rng: random.Random, d: Path, device: str,
              gpu: bool) -> None:
    from gpu_engine.kernels import oom

    op = OPS[s % len(OPS)]
    prog = rng.choice(sorted(PROGRAMS))
    modules = rng.choice(["auto", "off"])
    alg = rng.choice(ALGORITHMS) if op != "run" else None
    env = {"GPU_ENGINE_SMALL_PATH": rng.choice(["0", "1"]),
           "GPU_ENGINE_HOST_UPDATES": "0", oom.ENV: None}
    if not gpu:
        env["GPU_ENGINE_JOIN_CHUNK_ROWS"] = str(rng.choice([64, 256, 1024, 4096]))
        env[oom.FLOOR_ENV] = str(rng.choice([4, 16, 64]))
    # the counts of join chunks and allocations depend on the chunk size and the path
    key = (op, prog, modules, alg, env["GPU_ENGINE_SMALL_PATH"],
           env.get("GPU_ENGINE_JOIN_CHUNK_ROWS"))
    old = _env(env)
    pool = None
    try:
        if key not in w.calls or (gpu and key not in w.peaks):  # calibration: the counts
            os.environ[oom.ENV] = "join=1000000000"
            if gpu:
                import cupy

                pool = cupy.get_default_memory_pool()
                pool.free_all_blocks()
            _run(w, op, prog, modules, alg, d / "cal", device)
            plan = oom.last_plan()
            w.calls[key] = (plan.joins, plan.allocs) if plan else (0, 0)
            if gpu:
                w.peaks[key] = int(pool.total_bytes())
            shutil.rmtree(d / "cal", ignore_errors=True)
        joins, allocs = w.calls[key]
        mode = "limit" if gpu and rng.random() < 0.75 else "inject"
        if mode == "limit":
            import cupy

            pool = cupy.get_default_memory_pool()
            pool.free_all_blocks()
            frac = rng.uniform(0.02, 1.0)
            pool.set_limit(size=max(1 << 20, int(frac * w.peaks[key])))
            fault = f"pool limit {frac:.0%} of {w.peaks[key]:,} bytes"
        else:
            kind = rng.choice(["join", "join", "alloc", "rows"] if not gpu else ["join"])
            if kind == "rows":
                spec = f"rows={rng.choice([8, 24, 48, 100])}"
            else:
                n = joins if kind == "join" else allocs
                spec = f"{kind}={rng.randint(1, max(1, n))}"
                if rng.random() < 0.5:
                    spec += ",repeat=0"
            os.environ[oom.ENV] = spec
            fault = f"{oom.ENV}={spec}"
        what = (f"{op} {prog} modules={modules} algorithm={alg or 'default'} with {fault} "
                f"({', '.join(f'{k}={v}' for k, v in env.items() if v)}); "
                f"python -m benchmarks.campaigns.gpu_oom --seed {s} --n 1 --device {device}")
        t = Trial(c, s, what)
        try:
            res = _run(w, op, prog, modules, alg, d, device)
        except Exception:  # noqa: BLE001 - the API raised: the finding
            t.fail("exception", traceback.format_exc())
            return
        finally:
            if pool is not None:
                pool.set_limit(size=0)
            os.environ.pop(oom.ENV, None)  # the checks load stores without faults
        plan = oom.last_plan() if mode == "inject" else None
        fired = bool(plan and plan.fired) if mode == "inject" else None
        _check(t, w, op, prog, modules, res, d)
        c.count("trials")
        c.count(f"trials_{op}")
        stats = res.get("stats") or {}
        retries, fallback = stats.get("oom_retries", 0), stats.get("fallback", "")
        if fired or retries or fallback:
            c.count("faults")
            c.count(f"faults_{mode}")
        elif fired is False or mode == "limit":
            c.count("not_injected")
        if fallback:
            c.count("fallbacks")
        elif retries:
            c.count("cured_by_smaller_chunks")
        c.count("intact" if t.ok else "not_intact")
        if fallback and len(c.extra.setdefault("sample_warnings", [])) < 5:
            c.extra["sample_warnings"].append(fallback[:300])
    finally:
        _env(old)


def _run(w: World, op: str, prog: str, modules: str, alg: str | None, d: Path,
         device: str) -> dict[str, Any]:
    """One operation; what it produced (exit status, stderr, outputs, stats)."""
    import contextlib
    import io
    import json

    d.mkdir(parents=True, exist_ok=True)
    if op == "api":
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            r, m, s0, u = _api(w, prog, modules, alg, device)
        return {"rc": 0, "stderr": err.getvalue(), "s0": s0, "s1": engine_state(r.engine),
                "stats": {"oom_retries": m.oom_retries + u.oom_retries,
                          "fallback": m.fallback or u.fallback}}
    args = _op_args(w, op, prog, modules, alg, d, device)
    res = run_cli(args, timeout=600)
    stats = json.loads((d / "stats.json").read_text()) if (d / "stats.json").exists() else {}
    return {"rc": res.rc, "stderr": res.stderr, "traceback": res.traceback,
            "timeout": res.timeout, "stats": stats, "args": args}


def _check(t: Trial, w: World, op: str, prog: str, modules: str, res: dict[str, Any],
           d: Path) -> None:
    err = res["stderr"]
    oom_lines = [ln for ln in err.splitlines() if ln.startswith(OOM_LINE)]
    other = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(OOM_LINE)]
    fallback = (res.get("stats") or {}).get("fallback", "")
    if res.get("traceback"):
        t.fail("traceback", res["traceback"])
        return
    if res.get("timeout"):
        t.fail("timeout", "no result after 600 s")
        return
    if res["rc"] != 0:
        t.fail("error", f"exit {res['rc']}: {err}")
        return
    if other:
        t.fail("stderr", err)
    if len(oom_lines) > 1 or bool(oom_lines) != bool(fallback):
        t.fail("warning", f"{len(oom_lines)} warning lines, stats fallback {fallback!r}:\n{err}")
    if op == "api":
        if not same_facts(res["s0"], w.states[prog, "S0", modules]):
            t.fail("wrong", "materialisation differs from the unconstrained run")
        if not same_facts(res["s1"], w.states[prog, "S1", modules]):
            t.fail("wrong", "update result differs from the unconstrained run")
        return
    key = "S0" if op == "run" else "S1"
    if snapshot(d / "out") != w.outputs[prog, key]:
        t.fail("wrong", "output files differ from the unconstrained run's")
    try:
        got = stored_state(d / "store")
    except Exception:  # noqa: BLE001 - a store that does not load is the finding
        t.fail("store_broken", traceback.format_exc())
        return
    if not same_facts(got, w.states[prog, key, modules]):
        t.fail("store_wrong", f"the store differs from {key} materialised from scratch")


def run(n: int, seed: int = 0, out: str | None = None, size: int = 6,
        device: str | None = None) -> dict[str, Any]:
    """``n`` trials from ``seed``; returns the JSON line."""
    gpu = gpu_ready() if device is None else device == "gpu"
    device = "gpu" if gpu else "cpu"
    c = Campaign("faults-gpu", seed, n, extra={
        "device": device, "mode": "pool limit + injected" if gpu else "injected (no GPU)",
        "components": size})
    with tempfile.TemporaryDirectory(prefix="faults-gpu-") as tmp:
        root = Path(tmp)
        w = World(root / "world", size)
        for s in range(seed, seed + n):
            d = root / f"trial{s}"
            try:
                one_trial(c, w, s, random.Random(s), d, device, gpu)
            except Exception:  # noqa: BLE001 - a bug of the campaign itself
                c.fail("campaign_error", s, traceback.format_exc(),
                       f"python -m benchmarks.campaigns.gpu_oom --seed {s} --n 1")
            finally:
                shutil.rmtree(d, ignore_errors=True)
    return c.write(out)


def main(argv: list[str] | None = None) -> int:
    args = cli_args(argv, "gpu_oom", 240, "faults_gpu.jsonl")
    dev = args.device if "--device" in (argv if argv is not None else sys.argv) else None
    line = run(args.n, args.seed, args.out, device=dev)
    return 1 if line["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())

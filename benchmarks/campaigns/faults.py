"""``make faults``: fault injection during ``run --store``, ``update`` and ``export``.

Every operation runs as a subprocess (``python -m gpu_engine.host.cli``, CPU).  The data: a
transitive closure over random strongly connected graphs, stored by ``run --store`` (state
S0); update A (insert edges linking components, delete some edges) leads to S1; update C
(other new edges) to S_C, and A and C together to S_AC.  Every expected state is
materialised from scratch in this process (E, I and the derivation counters of every
relation, and the exported ``.csv`` text).  Trial ``i`` (seed ``s = seed + i``) injects one
fault, chosen in turn:

- ``kill_update`` / ``kill_run`` / ``kill_export``: SIGKILL after a random delay (two trials
  in three uniform over a calibrated unkilled run, one in three inside the commit window:
  from the appearance of the new ``.partial`` version to the exit);
- ``enospc``: the store (or output folder) on a small tmpfs (``mount -t tmpfs -o size=``,
  as root) whose free space is cut to a random fraction of what the operation needs with a
  ballast file; where mounting is not allowed, ``RLIMIT_FSIZE`` in the child (EFBIG, with
  SIGXFSZ ignored) instead (the JSON line says which);
- ``eio``: ``EIO`` injected at a random write-side file operation on the store or output
  folder (``faultchild``; the count comes from a calibration run);
- ``readonly``: at a random moment the store or output folder becomes unwritable: either
  ``chmod a-w`` while the child runs without ``CAP_DAC_OVERRIDE`` (``setpriv``), so it gets
  EACCES, or a read-only bind mount (EROFS);
- ``concurrent``: two writers at once (updates A and C: both must land, S_AC), or an update
  beside an ``export`` (the export writes S0's or S1's output, whole).

After each trial the store must load and equal the old or the new state (or, for a fresh
``run --store``, be absent or S0), every output file must be the old file or the complete
new one, and a failing child must exit with a one-line error, never a traceback.  Counted:
trials, faults injected (the fault hit a running operation), stores intact, failures.
"""

from __future__ import annotations

import contextlib
import os
import random
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np

from .common import ROOT, Campaign, cli_args, snapshot

KINDS = ("kill_update", "kill_run", "kill_export", "enospc", "eio", "readonly", "concurrent")
PROGRAM = """\
.decl edge(x: number, y: number)
.input edge
.decl path(x: number, y: number)
.output path
.decl big(x: number)
.output big
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
big(x) :- path(x, y), y > 500.
"""
OLD = b"OLD\tcontents\n"


def random_graph(rng: np.random.Generator, components: int, size: int) -> set[tuple[int, int]]:
    """Disjoint strongly connected random graphs (a cycle plus random edges each)."""
    edges: set[tuple[int, int]] = set()
    for c in range(components):
        nodes = rng.permutation(size) + c * size
        edges.update(zip(nodes.tolist(), np.roll(nodes, 1).tolist()))
        edges.update(zip((rng.integers(0, size, size) + c * size).tolist(),
                         (rng.integers(0, size, size) + c * size).tolist()))
    return edges


Edges = set[tuple[int, int]]


def graph_and_update(rng: np.random.Generator, components: int, size: int, cross: int,
                     delete_every: int) -> tuple[Edges, Edges, Edges]:
    """:func:`random_graph` plus an update on it: ``cross`` random edges between components
    (those not already present) to insert, and every ``delete_every``-th edge to delete."""
    edges = random_graph(rng, components, size)
    ins = {(int(rng.integers(0, components)) * size, int(rng.integers(0, components)) * size + 1)
           for _ in range(cross)}
    return edges, ins - edges, set(sorted(edges)[::delete_every])


def write_edges(d: Path, edges: set[tuple[int, int]]) -> Path:
    d.mkdir(parents=True, exist_ok=True)
    (d / "edge.facts").write_text("".join(f"{a}\t{b}\n" for a, b in sorted(edges)))
    return d


State = dict[str, Any]


def engine_state(engine: Any) -> State:
    """E, I and the derivation counters (when both kinds are kept; else ``()``) of every
    relation, as host arrays (also used by ``tests/test_crash.py`` and ``gpu_oom``)."""
    both = engine.counting >= 2 and bool(engine.counters)
    return {name: (engine.explicit_columns(name), engine.columns(name),
                   engine.counter_arrays(name) if both else ())
            for name in engine.program.relations}


def same(a: State | None, b: State | None) -> bool:
    if a is None or b is None:
        return a is b

    def flat(s: State) -> list[np.ndarray]:
        return [np.asarray(c) for name in sorted(s) for part in s[name] for c in part]

    fa, fb = flat(a), flat(b)
    return len(fa) == len(fb) and all(np.array_equal(x, y) for x, y in zip(fa, fb, strict=True))


def stored_state(store: Path) -> State | None:
    """The store's state (None: no committed version); raises when it does not load."""
    from gpu_engine.host.store import current_version, open_store

    if current_version(store) is None:
        return None
    return engine_state(open_store(store, device="cpu").engine)


class Setup:
    """The graph, the fact folders, the template store and every expected state."""

    def __init__(self, root: Path, size: int) -> None:
        from gpu_engine.host.cli import main
        from gpu_engine.host.reasoner import Reasoner

        rng = np.random.default_rng(20_261_124)
        comps = max(2, size)
        edges, x, y = graph_and_update(rng, comps, 30, 2 * comps, 40)
        z = {(c * 30 + 2, ((c + 1) % comps) * 30 + 3) for c in range(0, comps, 3)} - edges - x
        root.mkdir(parents=True, exist_ok=True)
        self.root = root
        self.prog = root / "tc.dl"
        self.prog.write_text(PROGRAM)
        self.f0 = write_edges(root / "f0", edges)
        self.ins_a, self.del_a = write_edges(root / "insA", x), write_edges(root / "delA", y)
        self.ins_c = write_edges(root / "insC", z)
        self.store0 = root / "store0"
        args = ["run", str(self.prog), "-F", str(self.f0), "-D", str(root / "out0"),
                "--store", str(self.store0), "--device", "cpu", "--quiet"]
        if main(args) != 0:
            raise RuntimeError("setting up the store failed")
        self.states: dict[str, State] = {}
        self.outputs: dict[str, dict[str, bytes]] = {}
        for key, e in (("S0", edges), ("S1", (edges | x) - y), ("SC", edges | z),
                       ("SAC", ((edges | x) - y) | z)):
            r = Reasoner(PROGRAM, device="cpu", counting=True)
            r.add_facts("edge", np.array(sorted(e)))
            r.materialise()
            self.states[key] = engine_state(r.engine)
            self.outputs[key] = {f"{n}.csv": r.render(n, "\t").encode()
                                 for n in ("path", "big")}
        if not same(stored_state(self.store0), self.states["S0"]):
            raise RuntimeError("the stored S0 differs from a materialisation from scratch")
        if snapshot(root / "out0") != self.outputs["S0"]:
            raise RuntimeError("run -D wrote other text than Reasoner.render")
        self.env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONDONTWRITEBYTECODE": "1"}
        self.timing: dict[str, float] = {}
        self.calls: dict[str, int] = {}

    def update_a(self, store: Path, out: Path | None = None) -> list[str]:
        args = ["update", str(store), "--insert", str(self.ins_a), "--delete", str(self.del_a),
                "--device", "cpu", "--quiet"]
        return args + (["-D", str(out)] if out else [])

    def update_c(self, store: Path) -> list[str]:
        return ["update", str(store), "--insert", str(self.ins_c), "--device", "cpu", "--quiet"]

    def run_store(self, store: Path, out: Path) -> list[str]:
        return ["run", str(self.prog), "-F", str(self.f0), "-D", str(out), "--store",
                str(store), "--device", "cpu", "--quiet"]

    def export(self, store: Path, out: Path) -> list[str]:
        return ["export", str(store), "-D", str(out), "--device", "cpu"]


def cli_cmd(args: list[str]) -> list[str]:
    return [sys.executable, "-m", "gpu_engine.host.cli", *args]


def start(setup: Setup, cmd: list[str], err: Path, **kw: Any) -> subprocess.Popen[bytes]:
    with open(err, "wb") as f:
        return subprocess.Popen(cmd, cwd=setup.root, env=kw.pop("env", setup.env),
                                stdout=subprocess.DEVNULL, stderr=f, **kw)


def error_problem(rc: int, err: str) -> str | None:
    """Why a child's exit breaks the rules (a traceback or an unclear error)."""
    if "Traceback (most recent call last)" in err:
        return "traceback"
    lines = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("note:",
                                                                               "warning:"))]
    if rc > 0 and len(lines) != 1:
        return f"{len(lines)}-line error"
    return None


def copy_store(setup: Setup, dest: Path) -> Path:
    shutil.copytree(setup.store0, dest)
    (dest / "LOCK").unlink(missing_ok=True)
    return dest


def old_outputs(d: Path) -> None:
    d.mkdir(parents=True, exist_ok=True)
    for name in ("path.csv", "big.csv"):
        (d / name).write_bytes(OLD)


class Trial:
    """The checks after one fault."""

    def __init__(self, c: Campaign, s: int, kind: str, repro: str) -> None:
        self.c, self.s, self.kind, self.repro = c, s, kind, repro
        self.ok = True

    def fail(self, what: str, detail: str) -> None:
        self.ok = False
        self.c.fail(what, self.s, detail, self.repro, fault=self.kind)

    def store(self, store: Path, allowed: dict[str, State | None]) -> str | None:
        """The store loads and equals one of ``allowed``; returns which."""
        try:
            got = stored_state(store)
        except Exception:  # noqa: BLE001 - a store that does not load is the finding
            self.fail("store_broken", f"the store does not load:\n{traceback.format_exc()}")
            return None
        for name, st in allowed.items():
            if same(got, st):
                return name
        self.fail("store_wrong", f"the store equals none of {sorted(allowed)}")
        return None

    def outputs(self, out: Path, allowed: dict[str, dict[str, bytes]]) -> None:
        """Every output file is the old one or the complete new one."""
        snap = snapshot(out)
        for name in ("path.csv", "big.csv"):
            ok = {OLD} | {o[name] for o in allowed.values()}
            if snap.get(name) not in ok:
                self.fail("partial_output", f"{name} is neither old nor complete "
                          f"({len(snap.get(name) or b'')} bytes)")
        extra = sorted(set(snap) - {"path.csv", "big.csv"})
        if extra:
            self.c.count("output_leftovers")  # temporary files a killed writer left

    def child(self, rc: int, err: str) -> None:
        problem = error_problem(rc, err)
        if problem:
            self.fail("traceback" if problem == "traceback" else "unclear_error",
                      f"exit {rc}: {problem}\n{err[-3000:]}")


# --- the kinds -----------------------------------------------------------------------------


def calibrate(setup: Setup, key: str, make: Any, d: Path) -> tuple[float, float]:
    """Seconds of an unkilled run and when its new ``.partial`` version appeared."""
    if key in setup.timing:
        return setup.timing[key], setup.timing[key + "_partial"]
    store, out = make(d / "cal")
    t0 = time.monotonic()
    proc = start(setup, cli_cmd(setup.args(key, store, out)), d / "cal.err")
    t_partial = None
    while proc.poll() is None:
        if t_partial is None and store.is_dir() and any(
                p.name.endswith(".partial") for p in store.iterdir()):
            t_partial = time.monotonic() - t0
        time.sleep(0.002)
    total = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"calibration of {key} failed: {(d / 'cal.err').read_text()}")
    setup.timing[key], setup.timing[key + "_partial"] = total, t_partial or 0.8 * total
    shutil.rmtree(d / "cal", ignore_errors=True)
    return setup.timing[key], setup.timing[key + "_partial"]


def _op(setup: Setup, op: str, d: Path) -> tuple[Path, Path]:
    """A fresh store (a copy of S0, or none for ``run``) and an output folder with old files."""
    d.mkdir(parents=True, exist_ok=True)
    store = d / "store"
    if op != "run":
        copy_store(setup, store)
    old_outputs(d / "out")
    return store, d / "out"


def _args(setup: Setup, op: str, store: Path, out: Path) -> list[str]:
    if op == "update":
        return setup.update_a(store, out)
    if op == "run":
        return setup.run_store(store, out)
    return setup.export(store, out)


Setup.args = _args  # type: ignore[attr-defined]

# what each operation may leave: store states and output versions
ALLOWED = {"update": ({"old": "S0", "new": "S1"}, ("S1",)),
           "run": ({"absent": None, "new": "S0"}, ("S0",)),
           "export": ({"old": "S0"}, ("S0",))}


def check_op(t: Trial, setup: Setup, op: str, store: Path, out: Path) -> None:
    states, outs = ALLOWED[op]
    allowed = {k: (setup.states[v] if v else None) for k, v in states.items()}
    which = t.store(store, allowed)
    if which:
        t.c.count(f"store_{which}")
    t.outputs(out, {k: setup.outputs[k] for k in outs})


def trial_kill(c: Campaign, setup: Setup, s: int, rng: random.Random, d: Path, op: str) -> None:
    total, t_partial = calibrate(setup, op, lambda p: _op(setup, op, p), d)
    store, out = _op(setup, op, d / "t")
    in_commit = s % 3 == 2 and op != "export"
    t = Trial(c, s, f"kill_{op}", f"SIGKILL {'in the commit' if in_commit else 'at random'}"
              f" of: gpu-engine {' '.join(setup.args(op, store, out))}")
    t0 = time.monotonic()
    proc = start(setup, cli_cmd(setup.args(op, store, out)), d / "err")
    if in_commit:
        while proc.poll() is None and not (store.is_dir() and any(
                p.name.endswith(".partial") for p in store.iterdir())):
            time.sleep(0.0005)
        time.sleep(rng.uniform(0, max(total - t_partial, 0.005)))
    else:
        time.sleep(max(0.0, rng.uniform(0, total) - (time.monotonic() - t0)))
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    c.count("trials")
    if proc.returncode == -signal.SIGKILL:
        c.count("faults")
        c.count(f"faults_kill_{op}")
    else:
        c.count("not_injected")
        t.child(proc.returncode, (d / "err").read_text(errors="replace"))
    check_op(t, setup, op, store, out)
    c.count("intact" if t.ok else "not_intact")


@contextlib.contextmanager
def tmpfs(path: Path, size_mb: int) -> Iterator[bool]:
    """A tmpfs at ``path`` when this process may mount one (yields whether it did)."""
    path.mkdir(parents=True, exist_ok=True)
    ok = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(path)],
                        capture_output=True).returncode == 0
    try:
        yield ok
    finally:
        if ok:
            subprocess.run(["umount", "-l", str(path)], capture_output=True)


def _dir_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def trial_enospc(c: Campaign, setup: Setup, s: int, rng: random.Random, d: Path) -> None:
    op = rng.choice(["update", "update", "run", "export"])
    fs = setup.tmpfs
    need = _dir_bytes(setup.store0) + 2 * sum(len(v) for v in setup.outputs["S1"].values())
    budget = int(rng.uniform(0.0, 1.3) * need)
    env, preexec = setup.env, None
    if fs is not None:
        for p in fs.iterdir():
            shutil.rmtree(p) if p.is_dir() else p.unlink()
        base = fs / "t"
        store, out = _op(setup, op, base)
        free = os.statvfs(fs).f_bavail * os.statvfs(fs).f_frsize
        ballast = max(0, free - budget)
        if ballast:
            fd = os.open(fs / "ballast", os.O_WRONLY | os.O_CREAT)
            try:
                os.posix_fallocate(fd, 0, ballast)
            except OSError:
                pass
            finally:
                os.close(fd)
        how = f"tmpfs with {budget} bytes free"
    else:
        store, out = _op(setup, op, d / "t")
        limit = max(1, budget // 8)

        def preexec() -> None:
            signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
            resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        how = f"RLIMIT_FSIZE {limit} bytes"
    args = setup.args(op, store, out)
    t = Trial(c, s, "enospc", f"{how}: gpu-engine {' '.join(args)}")
    proc = start(setup, cli_cmd(args), d / "err", env=env, preexec_fn=preexec)
    rc = proc.wait()
    err = (d / "err").read_text(errors="replace")
    c.count("trials")
    if rc != 0:
        c.count("faults")
        c.count("faults_enospc")
    else:
        c.count("not_injected")
    t.child(rc, err)
    check_op(t, setup, op, store, out)
    c.count("intact" if t.ok else "not_intact")


def trial_eio(c: Campaign, setup: Setup, s: int, rng: random.Random, d: Path) -> None:
    op = rng.choice(["update", "update", "run", "export"])
    key = f"eio_{op}"
    if key not in setup.calls:
        store, out = _op(setup, op, d / "cal")
        env = {**setup.env, "FAULTCHILD_DIRS": f"{store}:{out}",
               "FAULTCHILD_COUNT": str(d / "count")}
        cmd = [sys.executable, "-m", "benchmarks.campaigns.faultchild", "0",
               *setup.args(op, store, out)]
        if start(setup, cmd, d / "err", env=env).wait() != 0:
            raise RuntimeError(f"EIO calibration failed: {(d / 'err').read_text()}")
        setup.calls[key] = int((d / "count").read_text())
        shutil.rmtree(d / "cal")
    k = rng.randint(1, setup.calls[key])
    store, out = _op(setup, op, d / "t")
    env = {**setup.env, "FAULTCHILD_DIRS": f"{store}:{out}"}
    cmd = [sys.executable, "-m", "benchmarks.campaigns.faultchild", str(k),
           *setup.args(op, store, out)]
    t = Trial(c, s, "eio", f"EIO at write operation {k}/{setup.calls[key]}: "
              f"python -m benchmarks.campaigns.faultchild {k} {' '.join(cmd[4:])}")
    rc = start(setup, cmd, d / "err", env=env).wait()
    c.count("trials")
    c.count("faults" if rc != 0 else "not_injected")
    if rc != 0:
        c.count("faults_eio")
    t.child(rc, (d / "err").read_text(errors="replace"))
    check_op(t, setup, op, store, out)
    c.count("intact" if t.ok else "not_intact")


def trial_readonly(c: Campaign, setup: Setup, s: int, rng: random.Random, d: Path) -> None:
    op = rng.choice(["update", "update", "run", "export"])
    total, _ = calibrate(setup, op, lambda p: _op(setup, op, p), d)
    store, out = _op(setup, op, d / "t")
    store.mkdir(exist_ok=True)
    target = rng.choice([store, out] if op != "export" else [out])
    mode = "chmod" if s % 2 else "ro-mount"
    plain = cli_cmd(setup.args(op, store, out))
    # root ignores permission bits unless the child runs without CAP_DAC_OVERRIDE
    unprivileged = (["setpriv", "--bounding-set=-dac_override,-dac_read_search,-fowner",
                     *plain] if os.geteuid() == 0 and shutil.which("setpriv") else plain)
    cmd, mounted = unprivileged, False
    if mode == "ro-mount":
        mounted = os.geteuid() == 0 and subprocess.run(
            ["mount", "--bind", str(target), str(target)], capture_output=True).returncode == 0
        if mounted:
            cmd = plain
        else:
            mode = "chmod"
    t = Trial(c, s, "readonly", f"{target.name} made read-only ({mode}) during: "
              f"gpu-engine {' '.join(setup.args(op, store, out))}")
    delay = rng.uniform(0, total)
    t0 = time.monotonic()
    proc = start(setup, cmd, d / "err")
    time.sleep(max(0.0, delay - (time.monotonic() - t0)))
    running = proc.poll() is None
    if mode == "chmod":
        for p in [target, *target.rglob("*")]:
            if p.is_dir():
                p.chmod(0o555)
    else:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(target)], capture_output=True)
    rc = proc.wait()
    if mode == "chmod":
        for p in [target, *target.rglob("*")]:
            if p.is_dir():
                p.chmod(0o755)
    elif mounted:
        subprocess.run(["umount", str(target)], capture_output=True)
    c.count("trials")
    if running and rc != 0:
        c.count("faults")
        c.count(f"faults_readonly_{mode}")
    else:
        c.count("not_injected")
    t.child(rc, (d / "err").read_text(errors="replace"))
    check_op(t, setup, op, store, out)
    c.count("intact" if t.ok else "not_intact")


def trial_concurrent(c: Campaign, setup: Setup, s: int, rng: random.Random, d: Path) -> None:
    store, out = _op(setup, "update", d / "t")
    c.count("trials")
    if s % 2 == 0:  # two writers: both updates must land
        t = Trial(c, s, "concurrent", "two writers: gpu-engine "
                  f"{' '.join(setup.update_a(store))} & gpu-engine "
                  f"{' '.join(setup.update_c(store))}")
        p1 = start(setup, cli_cmd(setup.update_a(store)), d / "err1")
        time.sleep(rng.uniform(0, 0.5))
        p2 = start(setup, cli_cmd(setup.update_c(store)), d / "err2")
        rc1, rc2 = p1.wait(), p2.wait()
        t.child(rc1, (d / "err1").read_text(errors="replace"))
        t.child(rc2, (d / "err2").read_text(errors="replace"))
        allowed = {"both": setup.states["SAC"]}
        if rc1 != 0:
            allowed["C only"] = setup.states["SC"]
        if rc2 != 0:
            allowed["A only"] = setup.states["S1"]
        if rc1 and rc2:
            allowed["neither"] = setup.states["S0"]
        which = t.store(store, allowed)
        if which:
            c.count(f"concurrent_{which.replace(' ', '_')}")
    else:  # a writer beside a reader
        t = Trial(c, s, "concurrent", "writer and reader: gpu-engine "
                  f"{' '.join(setup.update_a(store))} & gpu-engine "
                  f"{' '.join(setup.export(store, out))}")
        p1 = start(setup, cli_cmd(setup.update_a(store)), d / "err1")
        time.sleep(rng.uniform(0, 1.5))
        p2 = start(setup, cli_cmd(setup.export(store, out)), d / "err2")
        rc1, rc2 = p1.wait(), p2.wait()
        t.child(rc1, (d / "err1").read_text(errors="replace"))
        t.child(rc2, (d / "err2").read_text(errors="replace"))
        if rc1 != 0 or rc2 != 0:
            t.fail("concurrent_failed", f"exits {rc1}, {rc2}")
        which = t.store(store, {"new": setup.states["S1"]})
        t.outputs(out, {"S0": setup.outputs["S0"], "S1": setup.outputs["S1"]})
        if which:
            c.count("concurrent_reader")
    c.count("faults")
    c.count("faults_concurrent")
    c.count("intact" if t.ok else "not_intact")


def run(n: int, seed: int = 0, out: str | None = None, size: int = 30,
        kinds: tuple[str, ...] = KINDS) -> dict[str, Any]:
    """Run ``n`` fault trials from ``seed`` (kinds in turn); returns the JSON line."""
    c = Campaign("faults", seed, n, extra={"kinds": list(kinds), "components": size})
    with tempfile.TemporaryDirectory(prefix="faults-") as tmp:
        root = Path(tmp)
        setup = Setup(root / "setup", size)
        with tmpfs(root / "tmpfs", 256) as mounted:
            setup.tmpfs = (root / "tmpfs") if mounted else None  # type: ignore[attr-defined]
            c.extra["enospc_by"] = "tmpfs" if mounted else "RLIMIT_FSIZE (EFBIG)"
            for s in range(seed, seed + n):
                kind = kinds[s % len(kinds)]
                d = root / f"trial{s}"
                d.mkdir()
                rng = random.Random(s)
                try:
                    if kind.startswith("kill_"):
                        trial_kill(c, setup, s, rng, d, kind[5:])
                    else:
                        globals()[f"trial_{kind}"](c, setup, s, rng, d)
                except Exception:  # noqa: BLE001 - a bug of the campaign itself
                    c.fail("campaign_error", s, traceback.format_exc(),
                           f"python -m benchmarks.campaigns.faults --seed {s} --n 1")
                finally:
                    shutil.rmtree(d, ignore_errors=True)
        c.extra["calibration_seconds"] = {k: round(v, 3) for k, v in setup.timing.items()}
    return c.write(out)


def main(argv: list[str] | None = None) -> int:
    args = cli_args(argv, "faults", 210, "faults.jsonl")
    line = run(args.n, args.seed, args.out)
    return 1 if line["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())

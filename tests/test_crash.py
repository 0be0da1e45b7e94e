"""Crash safety of the store: ``gpu-engine update`` killed with SIGKILL at random moments.

A transitive closure over a random graph (strongly connected components, about 150,000
path facts) is stored; updates A (insert X, delete Y) and B (insert Y, delete X), with the
default algorithm (DRed^c), flip the store between two states S0 and S1.  Each trial starts
the update that leaves the current state in a subprocess and kills it: two trials in three
after a delay drawn uniformly over the measured duration of an unkilled run, one at a random
moment between the appearance of the new version's directory and the measured exit (the
commit and the removal of the old version).  After every kill the store must load and equal
either the old or the new state, exactly (E, I and the counters of every relation).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from gpu_engine.host.cli import main
from gpu_engine.host.reasoner import Reasoner
from gpu_engine.host.store import current_version

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

# the store checks are the fault campaign's (benchmarks/campaigns/faults.py)
from benchmarks.campaigns.faults import (  # noqa: E402
    engine_state,
    random_graph,
    same,
    write_edges,
)
from benchmarks.campaigns.faults import stored_state as state  # noqa: E402

# SIGKILLed updates per run (CRASH_KILLS: more for a campaign; 25 keep `make test` short
# and still kill inside the commit several times)
KILLS = int(os.environ.get("CRASH_KILLS", "25"))
PROGRAM = """
.decl edge(x: number, y: number)
.input edge
.decl path(x: number, y: number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""


def entries(store: Path) -> set[tuple[str, int]]:
    """The store's entries with their inode numbers (a rewritten entry gets a new one)."""
    with os.scandir(store) as it:  # inodes from the directory entries: no stat races
        return {(e.name, e.inode()) for e in it if e.name != "LOCK"}


def test_update_killed_at_random_moments(tmp_path: Path) -> None:
    rng = np.random.default_rng(20_240_613)
    edges = random_graph(rng, components=100, size=38)
    cross = {(int(rng.integers(0, 100)) * 38, int(rng.integers(0, 100)) * 38 + 1)
             for _ in range(40)}
    x = cross - edges  # new edges linking components: many new path facts
    y = set(sorted(edges)[::50])  # existing edges to delete
    prog = tmp_path / "tc.dl"
    prog.write_text(PROGRAM)
    store = tmp_path / "store"
    assert main(["run", str(prog), "-F", str(write_edges(tmp_path / "f0", edges)), "-D",
                 str(tmp_path / "out"), "--store", str(store), "--device", "cpu"]) == 0
    updates = []  # update k leads from state k to state 1 - k
    for k, (ins, dele) in enumerate(((x, y), (y, x))):
        updates.append([sys.executable, "-m", "gpu_engine.host.cli", "update", str(store), "--insert",
                        str(write_edges(tmp_path / f"ins{k}", ins)), "--delete",
                        str(write_edges(tmp_path / f"del{k}", dele)), "--device", "cpu",
                        "--quiet"])  # the default algorithm: DRed^c, which keeps counters
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    log = tmp_path / "stderr.txt"

    def start(k: int) -> subprocess.Popen[bytes]:
        with open(log, "wb") as err:
            return subprocess.Popen(updates[k], cwd=ROOT, env=env, stdout=subprocess.DEVNULL,
                                    stderr=err)

    states = [state(store)]
    # calibration: one unkilled run, timing when the commit starts and ends
    t0 = time.monotonic()
    proc, before = start(0), current_version(store)
    t_partial = t_commit = None
    while proc.poll() is None:
        now = time.monotonic() - t0
        if t_partial is None and any(p.name.endswith(".partial") for p in store.iterdir()):
            t_partial = now
        if t_commit is None and current_version(store) != before:
            t_commit = now
        time.sleep(0.001)
    t_exit = t_run = time.monotonic() - t0
    assert proc.returncode == 0, log.read_text()
    states.append(state(store))
    assert not same(states[0], states[1])
    fresh = Reasoner(PROGRAM, device="cpu", counting=True)
    fresh.add_facts("edge", np.array(sorted((edges | x) - y)))
    fresh.materialise()
    assert same(states[1], engine_state(fresh.engine))
    t_partial = t_partial if t_partial is not None else 0.8 * t_exit
    t_commit = t_commit if t_commit is not None else t_exit
    window = max(t_exit - t_partial, 0.005)

    cur, kills, finished, outcomes, during_commit = 1, 0, 0, {"old": 0, "new": 0}, 0
    started = time.monotonic()
    trial = 0
    while kills < KILLS:
        trial += 1
        before = entries(store)
        t0 = time.monotonic()
        proc = start(cur)
        if trial % 3:  # a delay over the whole run
            time.sleep(max(0.0, rng.uniform(0, t_exit) - (time.monotonic() - t0)))
        else:  # a random moment inside the commit
            while proc.poll() is None and not any(name.endswith(".partial")
                                                  for name, _ in entries(store) - before):
                time.sleep(0.0005)
            time.sleep(rng.uniform(0, window))  # from the new directory to the exit
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed = proc.returncode == -signal.SIGKILL
        if killed:
            kills += 1
            during_commit += entries(store) != before  # it had begun writing
        else:
            assert proc.returncode == 0, log.read_text()
            finished += 1
            t_exit *= 0.95  # runs got faster than the calibration run (a shared machine)
        now = state(store)  # must load
        if same(now, states[cur]):
            assert killed, f"trial {trial}: a finished update left the old state"
            outcomes["old"] += 1
        else:
            assert same(now, states[1 - cur]), f"trial {trial}: neither old nor new state"
            outcomes["new"] += killed
            cur = 1 - cur
    elapsed = time.monotonic() - started
    print(f"\ncrash test: {kills}/{kills} SIGKILLed updates left a loadable store equal to "
          f"the old or the new state (old {outcomes['old']}, new {outcomes['new']}; "
          f"{during_commit} killed while writing the store; {finished} runs finished "
          f"first); "
          f"unkilled run {t_run:.2f} s, commit {t_partial:.2f}-{t_commit:.2f} s; "
          f"{elapsed:.0f} s")
    assert outcomes["old"] >= 1 and outcomes["new"] >= 1
    assert during_commit >= 1
    # the next update cleans whatever the kills left behind
    proc = start(cur)
    assert proc.wait() == 0, log.read_text()
    assert same(state(store), states[1 - cur])
    assert sorted(p.name for p in store.iterdir()) == ["CURRENT", "LOCK",
                                                       current_version(store)]

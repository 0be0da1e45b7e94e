"""Several ``gpu-engine update`` processes at once on one store (issue 17): the lock holder
composes every spooled update and commits them as one version that records their names;
processes killed before the commit leave the store and the spool as before."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gpu_engine.host.cli import main
from gpu_engine.host.store import current_version, open_store, read_meta, store_lock

ROOT = Path(__file__).resolve().parents[1]
PROGRAM = """.decl edge(x:number, y:number)
.input edge
.decl path(x:number, y:number)
.output path
path(x, y) :- edge(x, y).
path(x, z) :- path(x, y), edge(y, z).
"""


def _dir(d: Path, files: dict[str, str]) -> Path:
    d.mkdir(parents=True)
    for name, text in files.items():
        (d / name).write_text(text)
    return d


def _store(tmp_path: Path) -> Path:
    prog = tmp_path / "p.dl"
    prog.write_text(PROGRAM)
    facts = _dir(tmp_path / "f", {"edge.facts": "".join(f"{i}\t{i + 1}\n" for i in range(5))})
    store = tmp_path / "s"
    assert main(["run", str(prog), "-F", str(facts), "-D", str(tmp_path / "o"),
                 "--store", str(store)]) == 0
    return store


def _update(store: Path, *args: str | Path, stats: Path | None = None) -> subprocess.Popen:
    cmd = [sys.executable, "-m", "gpu_engine.host.cli", "update", str(store), "--quiet",
           *map(str, args)]
    if stats is not None:
        cmd += ["--stats-json", str(stats)]
    return subprocess.Popen(cmd, cwd=ROOT, stderr=subprocess.PIPE)


def _wait_entries(store: Path, n: int) -> None:
    for _ in range(600):
        spool = store / ".spool"
        if spool.is_dir() and len([p for p in spool.iterdir()
                                   if not p.name.startswith(".")]) >= n:
            return
        time.sleep(0.05)
    raise AssertionError("the updates were not spooled")


def test_concurrent_updates_are_composed_into_one_commit(tmp_path: Path) -> None:
    store = _store(tmp_path)
    # U0 adds 5->6 and 6->7, U1 deletes 6->7 again (cancels), U2 deletes 0->1, U3 adds 9->10
    dirs = [
        ("--insert", _dir(tmp_path / "i0", {"edge.facts": "5\t6\n6\t7\n"})),
        ("--delete", _dir(tmp_path / "d1", {"edge.facts": "6\t7\n"})),
        ("--delete", _dir(tmp_path / "d2", {"edge.facts": "0\t1\n"})),
        ("--insert", _dir(tmp_path / "i3", {"edge.facts": "9\t10\n"})),
    ]
    procs = []
    with store_lock(store):  # hold the lock until all four are spooled
        for k, (flag, d) in enumerate(dirs):
            procs.append(_update(store, flag, d, stats=tmp_path / f"st{k}.json"))
            _wait_entries(store, k + 1)  # arrival order = spool order
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err.decode()
    assert current_version(store) == "v00000002"  # one commit for all four
    meta = read_meta(store)
    assert len(meta["extra"]["fdu_applied"]) == 4
    r = open_store(store, device="cpu")
    edges = {tuple(x.values()) for x in r.relation("edge").to_pylist()}
    assert edges == {(1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (9, 10)}
    stats = [json.loads((tmp_path / f"st{k}.json").read_text()) for k in range(4)]
    assert all(s["composed"] == 4 for s in stats)
    assert not (store / ".spool").exists()


def test_killed_update_is_not_applied(tmp_path: Path) -> None:
    """A process killed while waiting for the lock: its spooled update is discarded by the
    next lock holder (it never reported success); the store is the old one."""
    store = _store(tmp_path)
    ins = _dir(tmp_path / "i", {"edge.facts": "7\t8\n"})
    ins2 = _dir(tmp_path / "i2", {"edge.facts": "8\t9\n"})
    with store_lock(store):
        p = _update(store, "--insert", ins)
        _wait_entries(store, 1)
        p.send_signal(signal.SIGKILL)
        p.wait()
    assert current_version(store) == "v00000001"
    q = _update(store, "--insert", ins2)
    _, err = q.communicate(timeout=120)
    assert q.returncode == 0, err.decode()
    edges = {tuple(x.values()) for x in open_store(store, device="cpu")
             .relation("edge").to_pylist()}
    assert (8, 9) in edges and (7, 8) not in edges
    assert sorted(p.name for p in store.iterdir()) == ["CURRENT", "LOCK", "v00000002"]


def test_streaming_sink_coalesces_micro_batches(tmp_path: Path) -> None:
    """coalesce=True: batches are accepted at once, composed in the background and
    committed with all their ids; the result equals applying them one by one."""
    import numpy as np
    import pyarrow as pa
    from gpu_engine.host.reasoner import Reasoner
    from gpu_engine.host.spark.exchange import StreamingUpdateSink

    store = _store(tmp_path)
    sink = StreamingUpdateSink(store, "edge", op_column="op", device="cpu")
    judge = Reasoner(PROGRAM, device="cpu")
    judge.add_facts("edge", np.array([[i, i + 1] for i in range(5)]))
    judge.materialise()
    rng = np.random.default_rng(0)
    live: list[tuple[int, int]] = []
    for b in range(30):
        xs = [(int(x), int(x) + 1) for x in rng.integers(10, 60, 4)]
        ops = ["+"] * len(xs)
        if live:  # churn: remove facts added a few batches ago
            xs += live[:2]
            ops += ["-"] * len(live[:2])
            live = live[2:]
        live += xs[:4]
        t = pa.table({"x": pa.array([a for a, _ in xs], pa.int32()),
                      "y": pa.array([c for _, c in xs], pa.int32()), "op": ops})
        assert sink.apply(t, b) is None
        ins = np.array([p for p, o in zip(xs, ops) if o == "+"]).reshape(-1, 2)
        dele = np.array([p for p, o in zip(xs, ops) if o == "-"]).reshape(-1, 2)
        judge.update(insert={"edge": ins}, delete={"edge": dele} if len(dele) else None)
    sink.flush(120)
    assert sorted(h["batch"] for h in sink.history) == list(range(30))
    meta = read_meta(store)
    assert meta["extra"]["stream_batch"] == 29
    r = open_store(store, device="cpu")
    for name in ("edge", "path"):
        assert r.relation(name).equals(judge.relation(name)), name
    assert sink.apply(pa.table({"x": pa.array([1], pa.int32()), "y": pa.array([1], pa.int32()),
                                "op": ["+"]}), 3) is None  # a replay: skipped
    assert sink.history[-1] == {"batch": 3, "skipped": True}
    import pytest
    from gpu_engine.host.io import FactsError

    with pytest.raises(FactsError, match="operation 'upsert'"):
        sink.apply(pa.table({"x": pa.array([7], pa.int32()), "y": pa.array([8], pa.int32()),
                             "op": ["upsert"]}), 31)
    assert not (store / ".stream").exists() or not list((store / ".stream").iterdir())


@pytest.mark.parametrize("fdu", ["wait", "interleave"])
def test_lock_holder_killed_during_a_composed_update(tmp_path: Path, fdu: str) -> None:
    """Two spooled updates; the process that takes the lock is killed at once (kill -9):
    the other one finishes and the store holds base + B, or base + A + B when A's composed
    commit got through, never a partial state (also when arrivals join the running update,
    ``--fdu interleave``)."""
    store = _store(tmp_path)
    a = _dir(tmp_path / "a", {"edge.facts": "5\t6\n"})
    b = _dir(tmp_path / "b", {"edge.facts": "6\t7\n"})
    with store_lock(store):
        pa_ = _update(store, "--insert", a, "--fdu", fdu)
        _wait_entries(store, 1)
        pb = _update(store, "--insert", b, "--fdu", fdu)
        _wait_entries(store, 2)
    time.sleep(0.3)
    pa_.send_signal(signal.SIGKILL)
    pa_.wait()
    _, err = pb.communicate(timeout=120)
    assert pb.returncode == 0, err.decode()
    edges = {tuple(x.values()) for x in open_store(store, device="cpu")
             .relation("edge").to_pylist()}
    base = {(i, i + 1) for i in range(5)}
    assert edges in (base | {(6, 7)}, base | {(5, 6), (6, 7)})
    paths = {tuple(x.values()) for x in open_store(store, device="cpu")
             .relation("path").to_pylist()}
    assert ((0, 7) in paths) == ((5, 6) in edges)
    # no pending entry is left (at most A's result file, when B applied A's update and A
    # was killed before reading it: the next lock holder removes it)
    spool = store / ".spool"
    assert not spool.exists() or not [p for p in spool.iterdir() if p.is_dir()]


def _applied_order(store: Path) -> list[str]:
    """Spool entry names in commit order (every version's ``fdu_applied``)."""
    out: list[str] = []
    for v in sorted(p for p in store.iterdir() if p.name.startswith("v")):
        out += json.loads((v / "meta.json").read_text()).get("extra", {}).get(
            "fdu_applied", [])
    return out


@pytest.mark.parametrize("fdu", ["interleave"])  # the others: the in-process test below
def test_concurrent_processes_with_fdu_policy(tmp_path: Path, fdu: str) -> None:
    """Six ``gpu-engine update --fdu POLICY`` processes started at once on one store; the
    first inserts a long chain (many rounds) so that the others arrive during its update.
    The final store equals applying the updates one by one in the order the commits
    record."""
    import numpy as np
    from gpu_engine.host.reasoner import Reasoner

    store = _store(tmp_path)
    ups: list[tuple[str, list[tuple[int, int]]]] = [
        ("--insert", [(i, i + 1) for i in range(5, 40)]),
        ("--delete", [(2, 3)]),
        ("--insert", [(2, 3), (50, 51)]),
        ("--delete", [(30, 31), (0, 1)]),
        ("--insert", [(51, 52), (0, 1)]),
        ("--delete", [(50, 51)]),
    ]
    procs = {}
    for k, (flag, rows) in enumerate(ups):
        d = _dir(tmp_path / f"u{k}", {"edge.facts": "".join(f"{a}\t{b}\n" for a, b in rows)})
        p = _update(store, flag, d, "--fdu", fdu, "--algorithm", "dredc",
                    stats=tmp_path / f"st{k}.json")
        procs[p.pid] = (k, p)
        if k == 0:
            time.sleep(0.05)
    for _, p in procs.values():
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()
    order = [procs[int(name.split("-")[1])][0] for name in _applied_order(store)]
    assert sorted(order) == list(range(len(ups)))
    judge = Reasoner(PROGRAM, device="cpu")
    judge.add_facts("edge", np.array([[i, i + 1] for i in range(5)]))
    judge.materialise()
    for k in order:
        flag, rows = ups[k]
        arr = np.array(rows)
        judge.update(**{flag[2:]: {"edge": arr}})
    r = open_store(store, device="cpu")
    for name in ("edge", "path"):
        assert r.relation(name).equals(judge.relation(name)), (name, order)
    stats = [json.loads((tmp_path / f"st{k}.json").read_text()) for k in range(len(ups))]
    assert all(s["composed"] >= 1 for s in stats)


@pytest.mark.parametrize("fdu", ["inject", "restart", "interleave"])
def test_spool_entries_join_the_running_update(tmp_path: Path, fdu: str) -> None:
    """In-process: entries spooled at the running update's first boundaries join it by
    the policy (injected, restarted or interleaved); one commit; equal to one by one."""
    import numpy as np
    from gpu_engine.host import update_spool as spool
    from gpu_engine.host.cli import _read_update_facts
    from gpu_engine.host.reasoner import Reasoner
    from gpu_engine.host.store import save_store

    store = _store(tmp_path)
    chain = _dir(tmp_path / "c", {"edge.facts": "".join(f"{i}\t{i + 1}\n" for i in range(5, 30))})
    later = [(_dir(tmp_path / "l0", {"edge.facts": "40\t41\n"}), None),
             (None, _dir(tmp_path / "l1", {"edge.facts": "1\t2\n"})),
             (_dir(tmp_path / "l2", {"edge.facts": "41\t42\n"}), None)]
    own = spool.spool_update(store, str(chain), None, {"algorithm": "dredc"})

    def arrivals() -> None:
        if later:
            i, d = later.pop(0)
            spool.spool_update(store, i and str(i), d and str(d), {"algorithm": "dredc"})
            time.sleep(spool.POLL_SECONDS)

    r = open_store(store, device="cpu")
    with store_lock(store):
        stats, applied = spool.apply_spool(
            r, store, own, lambda rr, d, fmt: _read_update_facts(rr, str(d), fmt),
            (str(chain), None), policy=fdu, arrivals=arrivals)
        save_store(r, store, extra={"fdu_applied": applied})
        spool.finish_all(r, store, own)
    assert len(applied) == 4 and current_version(store) == "v00000002"
    if fdu == "inject":
        assert stats.injected >= 1
    elif fdu == "restart":
        assert stats.aborted >= 1 and stats.composed >= 2
    else:
        assert stats.interleaved >= 1
    judge = Reasoner(PROGRAM, device="cpu")
    judge.add_facts("edge", np.array([[i, i + 1] for i in range(30) if i != 1]
                                     + [[40, 41], [41, 42]]))
    judge.materialise()
    r2 = open_store(store, device="cpu")
    for name in ("edge", "path"):
        assert r2.relation(name).equals(judge.relation(name)), name
    # no entry is left; the results of the other entries wait for their processes
    assert not [p for p in (store / ".spool").iterdir() if p.is_dir()]

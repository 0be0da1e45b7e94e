"""Streaming updates (issue 17, paper 004): micro-batches arriving faster than they are served.

    python -m benchmarks.streaming [--case dag|lubm|all] [--batches 200] [--size 100]
                                   [--churn 0.3] [--speedup 4] [--repeats 3]
                                   [--device cpu|gpu|auto] [--modes sequential,wait,...]
                                   [--gc-freeze] [--quiet] [--out FILE]

A stream of ``--batches`` micro-batches of ``--size`` edits each over the case's EDB
relation: a share ``--churn`` of every batch removes facts the stream added within the last
five batches; the rest are half insertions (from a held-out tenth of the data set, so
insertions are realistic facts) and half deletions of facts of the initial E.

Every repeat runs, from the same saved materialisation:

* ``sequential``: every batch is one ``Reasoner.update``, strictly one after another; its
  mean service time sets this repeat's arrival interval (``service / --speedup``), and
  its delays are simulated from the measured service times (``unloaded_sim_*``: the same
  at half the service rate).
* ``unloaded``: the queue (``wait``) with arrivals at *half* the sequential service rate:
  the measured delay of the stream without overload (``unloaded+freeze_gc=1`` as well
  when a mode freezes the collector; each mode is compared with the one of its setting).
* each mode (a queue policy with options, ``policy+key=value+...``): a feeder thread
  submits the batches with ``Reasoner.submit`` every arrival interval; delay =
  ``visible_at - submitted_at``.  Modes run in an order rotated per repeat.

A mode's line: throughput against sequential, p50/p99 delay, ``p99_over_unloaded_p99``,
``busy_fraction`` (share of the stream's time spent applying updates: near 1 the queue is
at capacity), ``per_batch_update_s``, and for the slowest 1 % of the batches their own
update's time, the time waiting, the garbage collection inside their window, how many
batches their update composed and how many attempts it aborted.  After the repeats, one
``"summary"`` line per mode gives the medians.  The relation sizes are compared with the
sequential run (``matches_sequential``); a last line checks that a queue that cancels
itself runs no round.
"""

from __future__ import annotations

import argparse
import gc
import json
import platform
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

REPO_ROOT = Path(__file__).resolve().parents[1]
MODES = ("sequential", "wait", "inject", "restart",
         "interleave+interleave_seconds=service+interleave_fallback=wait",
         "wait+freeze_gc=1", "inject+admit_seconds=service+freeze_gc=1",
         "restart+admit_seconds=service+freeze_gc=1",
         "interleave+admit_seconds=service+interleave_fallback=wait+freeze_gc=1")
# a mode is a queue policy, optionally with options: "wait+max_batches=4",
# "inject+admit_seconds=service" ("service": the measured mean service time), "freeze_gc=1"


def load_case(name: str, dag: tuple[int, int] = (10_000, 100_000)
              ) -> tuple[str, str, pa.Table, str]:
    """(program text, EDB relation, its data, label)."""
    from benchmarks import generators as gen
    from benchmarks import programs as progs

    if name == "dag":
        prog = progs.GRAPH_PROGRAMS["tc-linear"]
        e = gen.dag_r(dag[0], dag[1], 0)
        return (prog.text, prog.edb, pa.table({"x": e[:, 0], "y": e[:, 1]}),
                f"DAG-R n={dag[0]} m={dag[1]}")
    if name == "lubm":
        from benchmarks.incremental import _read_lubm
        from benchmarks.run import lubm_data_path

        prog = progs.lubm_program("LUBM_L")
        return prog.text, prog.edb, _read_lubm(lubm_data_path(10), None), "LUBM(10) LUBM_L"
    raise ValueError(f"unknown case {name!r}")


def make_stream(n_rows: int, batches: int, size: int, churn: float, seed: int = 0
                ) -> tuple[np.ndarray, list[tuple[np.ndarray, np.ndarray]]]:
    """Row indices: the initial E and per batch (inserted, deleted)."""
    rng = np.random.default_rng(seed)
    perm = rng.permutation(n_rows)
    pool, base = list(perm[: n_rows // 10]), perm[n_rows // 10:]
    base_left = list(rng.permutation(base))
    recent: list[list[int]] = []  # facts the stream added, per batch (last five)
    deleted: list[int] = []
    out = []
    for _ in range(batches):
        k_churn = int(round(size * churn))
        gone: list[int] = []
        for lst in recent:  # oldest first
            while lst and len(gone) < k_churn:
                gone.append(lst.pop(0))
        k_ins = (size - len(gone)) // 2
        ins = [pool.pop() if pool else deleted.pop(0) for _ in range(k_ins)]
        old = [base_left.pop() for _ in range(size - len(gone) - len(ins))]
        deleted += old  # deleted initial facts come back when the pool runs out
        dele = gone + old
        recent.append(list(ins))
        recent = recent[-5:]
        out.append((np.array(ins, dtype=np.int64), np.array(dele, dtype=np.int64)))
    return base, out


def _final(base: np.ndarray, stream: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
    """The row indices of E after the whole stream (applied in order)."""
    e = set(base.tolist())
    for ins, dele in stream:
        e -= set(dele.tolist()) - set(ins.tolist())
        e |= set(ins.tolist())
    return np.array(sorted(e), dtype=np.int64)


def _sizes(r: Any) -> dict[str, int]:
    return r.relation_sizes()


def run_case(name: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    from gpu_engine.host.reasoner import Reasoner
    from gpu_engine.host.store import open_store, save_store

    text, edb, data, label = load_case(name, (args.dag_n, args.dag_m))
    base, stream = make_stream(data.num_rows, args.batches, args.size, args.churn)
    batches = [(data.take(pa.array(i)), data.take(pa.array(d))) for i, d in stream]
    tmp = Path(tempfile.mkdtemp(prefix="gpu-engine-streaming-"))
    t0 = time.perf_counter()
    r = Reasoner(text, device=args.device, counting=True)
    r.add_facts(edb, data.take(pa.array(np.sort(base))))
    r.materialise()
    mat_s = time.perf_counter() - t0
    save_store(r, tmp / "store")
    common = {"benchmark": "streaming", "case": label, "batches": args.batches,
              "batch_size": args.size, "churn": args.churn, "device": r.device,
              "host": platform.node(), "materialise_s": round(mat_s, 3),
              "repeats": args.repeats, "speedup": args.speedup}
    lines: list[dict[str, Any]] = []
    want: dict[str, int] | None = None
    gap = None
    warm = data.take(pa.array(stream[0][0][:1]))
    modes = [m for m in args.modes if m != "sequential"]
    # the unloaded reference of each mode is measured with the same collector setting
    unloaded_modes = ["unloaded"] + (["unloaded+freeze_gc=1"]
                                     if any("freeze_gc" in m for m in modes) else [])
    for rep in range(args.repeats):
        seq: dict[str, Any] | None = None
        unloaded: dict[str, dict[str, Any]] = {}
        # sequential first (its mean service sets this repeat's arrival rate), then the
        # measured unloaded run, then each mode, in an order rotated per repeat (drift in
        # the machine's load spreads over all modes)
        order = ["sequential", *unloaded_modes, *(modes[rep % len(modes):]
                                                  + modes[: rep % len(modes)])]
        for mode in order:
            r = open_store(tmp / "store", device=args.device)
            r.update(insert={edb: warm})  # untimed: the first commit copies mapped counters
            r.update(delete={edb: warm})
            if args.gc_freeze:
                gc.collect()
                gc.freeze()
            if mode == "sequential":
                line, r, times = _sequential(r, text, edb, data, base, stream, batches, args)
                gap = line["service_s"] / args.speedup  # this repeat's service rate
                want = _sizes(r)
                line.update(arrival_interval_s=round(gap, 4),
                            **_delays("delay", _served_one_by_one(times, gap)),
                            **_delays("unloaded_sim_delay", _served_one_by_one(
                                times, args.speedup * gap * 2)))
                seq = line
            else:
                assert seq is not None and gap is not None
                # "unloaded": the same stream served by the queue (wait) with arrivals at
                # half the service rate: what a batch's delay is without overload
                policy, options = _mode_options(mode.replace("unloaded", "wait"),
                                                seq["service_s"])
                mgap = args.speedup * gap * 2 if mode.startswith("unloaded") else gap
                line = _queued(r, edb, batches, mgap, policy, options)
                line["matches_sequential"] = _sizes(r) == want
                line["throughput_vs_sequential"] = round(
                    line["throughput_batches_per_s"] / seq["throughput_batches_per_s"], 2)
                line["p99_over_service"] = round(line["delay_p99_s"] / seq["service_s"], 2)
                if mode.startswith("unloaded"):
                    unloaded[mode] = line
                else:
                    ref = unloaded["unloaded+freeze_gc=1" if "freeze_gc" in mode
                                   else "unloaded"]
                    line["p99_over_unloaded_p99"] = round(
                        line["delay_p99_s"] / ref["delay_p99_s"], 2)
            if args.gc_freeze:
                gc.unfreeze()
            line = {**common, "mode": mode, "repeat": rep, **line}
            lines.append(line)
            _emit(line, args.out, args.quiet)
    for mode in ["sequential", *unloaded_modes, *modes]:  # medians over the repeats
        mine = [x for x in lines if x["mode"] == mode]
        med = {k: round(float(np.median([x[k] for x in mine])), 4) for k in mine[0]
               if k not in common and k not in ("repeat", "mode")
               and isinstance(mine[0][k], (int, float)) and not isinstance(mine[0][k], bool)}
        line = {**common, "mode": mode, "summary": "median over repeats", **med,
                "matches_sequential": all(x["matches_sequential"] for x in mine)}
        lines.append(line)
        _emit(line, args.out)
    # a queue that cancels itself runs no round
    r = open_store(tmp / "store", device=args.device)
    q = r.update_queue(policy="wait", background=False)
    ins = batches[0][0]
    q.submit({edb: r._encode(edb, ins)})
    q.submit({}, {edb: r._encode(edb, ins)})
    st = q.drain()
    line = {**common, "mode": "cancelling", "updates_run": len(st), "composed": st[0].composed,
            "rounds": st[0].rounds, "derivations": st[0].derivations,
            "no_round": st[0].rounds == 0 and st[0].derivations == 0}
    lines.append(line)
    _emit(line, args.out)
    return lines


def _delays(prefix: str, delays: list[float]) -> dict[str, float]:
    return {f"{prefix}_p50_s": round(float(np.percentile(delays, 50)), 4),
            f"{prefix}_p99_s": round(float(np.percentile(delays, 99)), 4)}


def _sequential(r: Any, text: str, edb: str, data: pa.Table, base: np.ndarray,
                stream: list[tuple[np.ndarray, np.ndarray]],
                batches: list[tuple[pa.Table, pa.Table]], args: argparse.Namespace
                ) -> tuple[dict[str, Any], Any, list[float]]:
    """Every batch one ``Reasoner.update``, strictly one after another."""
    from gpu_engine.host.reasoner import Reasoner

    times = []
    for ins, dele in batches[: args.sequential_sample or None]:
        t = time.perf_counter()
        r.update(insert={edb: ins}, delete={edb: dele})
        times.append(time.perf_counter() - t)
    service = float(np.mean(times))
    measured = len(times)
    if measured < len(batches):  # the rest at the mean service time; the judge: a fresh run
        times += [service] * (len(batches) - len(times))
        r = Reasoner(text, device=args.device)
        r.add_facts(edb, data.take(pa.array(np.sort(_final(base, stream)))))
        r.materialise()
    line = {"seconds": round(sum(times), 3),
            "throughput_batches_per_s": round(len(times) / sum(times), 2),
            "service_s": round(service, 4),
            "service_p99_s": round(float(np.percentile(times, 99)), 4),
            "service_max_s": round(float(max(times)), 4),
            "service_p99_over_mean": round(float(np.percentile(times, 99)) / service, 2),
            "updates_run": len(times), "matches_sequential": True,
            "sequential_measured_batches": measured}
    return line, r, times


def _queued(r: Any, edb: str, batches: list[tuple[pa.Table, pa.Table]], gap: float,
            policy: str, options: dict[str, Any]) -> dict[str, Any]:
    """Submit the batches every ``gap`` seconds to a queue with ``policy``; the delays
    (arrival to visible) and where they go."""
    q = r.update_queue(policy=policy, **options)
    handles: list[Any] = []
    pauses: list[tuple[float, float]] = []
    mark: dict[str, float] = {}

    def on_gc(phase: str, _info: dict[str, Any]) -> None:
        if phase == "start":
            mark["t"] = time.perf_counter()
        elif "t" in mark:
            pauses.append((mark.pop("t"), time.perf_counter()))

    gc.callbacks.append(on_gc)
    try:
        start = time.perf_counter()
        th = threading.Thread(target=_feed, args=(r, edb, batches, start, gap, handles))
        th.start()
        th.join()
        for h in handles:
            h.wait()
    finally:
        gc.callbacks.remove(on_gc)
    end = max(h.visible_at for h in handles)
    delays = [h.delay for h in handles]
    # where the delay goes: the update that applied a batch (its own service, shared with
    # the batches composed into it) and the rest (waiting behind the update in progress,
    # and attempts aborted); garbage collection inside a batch's window
    own = [min(h.stats.seconds, h.delay) for h in handles]
    waiting = [d - o for d, o in zip(delays, own)]
    gcs = [sum(max(0.0, min(b, h.visible_at) - max(a, h.submitted_at)) for a, b in pauses)
           for h in handles]
    worst = np.argsort(delays)[-max(1, len(delays) // 100):]  # the slowest 1 %
    hist = q.history
    q.close()
    upd = [s.seconds for s in hist]
    return {"seconds": round(end - start, 3),
            "throughput_batches_per_s": round(len(batches) / (end - start), 2),
            "arrival_interval_s": round(gap, 4),
            **_delays("delay", delays),
            "own_update_mean_s": round(float(np.mean(own)), 4),
            "waiting_mean_s": round(float(np.mean(waiting)), 4),
            "slowest_1pct_own_s": round(float(np.mean([own[i] for i in worst])), 4),
            "slowest_1pct_waiting_s": round(float(np.mean([waiting[i] for i in worst])), 4),
            "slowest_1pct_gc_s": round(float(np.mean([gcs[i] for i in worst])), 4),
            "slowest_1pct_composed": round(float(np.mean(
                [handles[i].stats.composed for i in worst])), 1),
            "slowest_1pct_aborted": round(float(np.mean(
                [handles[i].stats.aborted for i in worst])), 1),
            "gc_s": round(sum(b - a for a, b in pauses), 4),
            # the share of the stream's time the queue was applying an update: near 1 the
            # queue is saturated and delays are set by capacity, not by the policy
            "busy_fraction": round(sum(upd) / (end - start), 3),
            "per_batch_update_s": round(sum(upd) / len(batches), 4),
            "updates_run": len(hist),
            "composed": sum(s.composed for s in hist),
            "injected": sum(s.injected for s in hist),
            "aborted": sum(s.aborted for s in hist),
            "rounds": sum(s.rounds for s in hist),
            "update_s_p50": round(float(np.percentile(upd, 50)), 4),
            "update_s_p90": round(float(np.percentile(upd, 90)), 4),
            "update_s_max": round(float(max(upd)), 4),
            "composed_max": max(s.composed for s in hist),
            "interleaved": sum(s.interleaved for s in hist)}


def _served_one_by_one(times: list[float], gap: float) -> list[float]:
    """Arrival-to-visible delays of strictly sequential service, arrivals every ``gap``."""
    finish, delays = 0.0, []
    for i, s in enumerate(times):
        finish = max(finish, i * gap) + s
        delays.append(finish - i * gap)
    return delays


def _mode_options(mode: str, service: float) -> tuple[str, dict[str, Any]]:
    """``policy+key=value+...`` → (policy, options); ``service`` stands for the measured
    mean service time of one batch."""
    policy, *opts = mode.split("+")
    options: dict[str, Any] = {}
    for o in opts:
        k, v = o.split("=")
        options[k] = (service if v == "service" else v if v.isalpha()
                      else float(v) if "." in v else int(v))
    return policy, options


def _feed(r: Any, edb: str, batches: list[tuple[pa.Table, pa.Table]], start: float,
          gap: float, handles: list[Any]) -> None:
    """Submit batch ``i`` at ``start + i * gap``."""
    for i, (ins, dele) in enumerate(batches):
        delay = start + i * gap - time.perf_counter()
        if delay > 0:
            time.sleep(delay)
        handles.append(r.submit(insert={edb: ins}, delete={edb: dele}))


def _emit(line: dict[str, Any], out: str | None, quiet: bool = False) -> None:
    text = json.dumps(line)
    if not quiet:
        print(text, flush=True)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        with open(out, "a", encoding="utf-8") as f:
            f.write(text + "\n")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks.streaming")
    p.add_argument("--case", choices=["dag", "lubm", "all"], default="all")
    p.add_argument("--batches", type=int, default=200)
    p.add_argument("--size", type=int, default=100)
    p.add_argument("--churn", type=float, default=0.3)
    p.add_argument("--speedup", type=float, default=4.0,
                   help="arrival rate as a multiple of the sequential service rate")
    p.add_argument("--device", default="cpu", choices=["cpu", "gpu", "auto"])
    p.add_argument("--dag-n", type=int, default=10_000)
    p.add_argument("--dag-m", type=int, default=100_000)
    p.add_argument("--sequential-sample", type=int, default=0,
                   help="time only the first K batches sequentially (the rest at their mean; "
                        "the final state is then judged by a fresh materialisation)")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--repeats", type=int, default=3,
                   help="runs of every mode; summary lines give the medians")
    p.add_argument("--gc-freeze", action="store_true",
                   help="gc.freeze() the loaded engine before each mode (long-lived objects "
                        "leave the collector's generations)")
    p.add_argument("--quiet", action="store_true", help="print only the summary lines")
    p.add_argument("--out", default=str(REPO_ROOT / "benchmarks" / "results" / "streaming.jsonl"))
    args = p.parse_args(argv)
    args.modes = [m for m in args.modes.split(",") if m]
    for name in (["dag", "lubm"] if args.case == "all" else [args.case]):
        run_case(name, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

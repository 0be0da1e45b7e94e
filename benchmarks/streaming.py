"""Streaming updates (issue 17, paper 004): micro-batches arriving faster than they are served.

    python -m benchmarks.streaming [--case dag|lubm|all] [--batches 200] [--size 100]
                                   [--churn 0.3] [--speedup 4] [--device cpu|gpu|auto]
                                   [--modes sequential,wait,inject,restart] [--out FILE]

A stream of ``--batches`` micro-batches of ``--size`` edits each over the case's EDB
relation: a share ``--churn`` of every batch removes facts the stream added within the last
five batches; the rest are half insertions (from a held-out tenth of the data set, so
insertions are realistic facts) and half deletions of facts of the initial E.

* ``sequential``: every batch is one ``Reasoner.update``, strictly one after another (the
  measured service times give the mean service time of one batch, ``service_s``).  Arrival
  to visible is simulated from the measured service times with the same arrivals as below.
* ``wait``, ``inject``, ``restart``: the same batches are submitted by a feeder thread with
  ``Reasoner.submit`` at a rate ``--speedup`` times the sequential service rate; the update
  queue (``host/update_queue.py``) composes what is pending (``wait``), also injects
  insertions into a running insertion phase (``inject``) or aborts on deletions
  (``restart``).  Delay = ``visible_at - submitted_at`` of each handle.

Each mode starts from the same materialisation (saved once to a temporary store) and ends
with the relation sizes compared with the sequential run (``matches_sequential``).  A last
line checks that a queue that cancels itself (a batch inserted and deleted while another
update runs) runs no round.  One JSON line per case and mode.
"""

from __future__ import annotations

import argparse
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
         "interleave+interleave_seconds=service+interleave_fallback=wait")
# a mode is a queue policy, optionally with options: "wait+max_batches=4",
# "interleave+interleave_seconds=service" ("service": the measured mean service time)


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
              "host": platform.node(), "materialise_s": round(mat_s, 3)}
    lines: list[dict[str, Any]] = []
    want: dict[str, int] | None = None
    service = None
    warm = data.take(pa.array(stream[0][0][:1]))
    for mode in args.modes:
        r = open_store(tmp / "store", device=args.device)
        r.update(insert={edb: warm})  # untimed: the first commit copies mapped counters
        r.update(delete={edb: warm})
        if mode == "sequential":
            times = []
            for ins, dele in batches[: args.sequential_sample or None]:
                t = time.perf_counter()
                r.update(insert={edb: ins}, delete={edb: dele})
                times.append(time.perf_counter() - t)
            service = float(np.mean(times))
            sampled = len(times) < len(batches)
            if sampled:  # the rest at the mean service time; the judge: a fresh run on E_n
                times += [service] * (len(batches) - len(times))
                r = Reasoner(text, device=args.device)
                r.add_facts(edb, data.take(pa.array(np.sort(_final(base, stream)))))
                r.materialise()
            gap = service / args.speedup
            delays = _served_one_by_one(times, gap)
            unloaded = _served_one_by_one(times, 2 * service)  # arrivals at half the rate
            want = _sizes(r)
            line = {**common, "mode": mode, "seconds": round(sum(times), 3),
                    "throughput_batches_per_s": round(len(times) / sum(times), 2),
                    "service_s": round(service, 4),
                    "service_p99_s": round(float(np.percentile(times, 99)), 4),
                    "service_max_s": round(float(max(times)), 4),
                    "delay_p50_s": round(float(np.percentile(delays, 50)), 4),
                    "delay_p99_s": round(float(np.percentile(delays, 99)), 4),
                    # the same service times with arrivals at half the service rate (no
                    # overload): a lower bound for any scheduler's p99 on this stream
                    "unloaded_delay_p99_s": round(float(np.percentile(unloaded, 99)), 4),
                    "service_p99_over_mean": round(float(np.percentile(times, 99)) / service,
                                                   2),
                    "updates_run": len(times), "matches_sequential": True,
                    "sequential_measured_batches": args.sequential_sample or len(times)}
        else:
            if service is None:
                raise SystemExit("run the sequential mode first (it sets the arrival rate)")
            policy, options = _mode_options(mode, service)
            q = r.update_queue(policy=policy, **options)
            gap = service / args.speedup
            handles: list[Any] = []
            start = time.perf_counter()
            th = threading.Thread(target=_feed, args=(r, edb, batches, start, gap, handles))
            th.start()
            th.join()
            for h in handles:
                h.wait()
            end = max(h.visible_at for h in handles)
            delays = [h.delay for h in handles]
            # where the delay goes: the update that applied a batch (its own service,
            # shared with the batches composed into it) and the rest (waiting behind the
            # update in progress, and attempts aborted)
            own = [min(h.stats.seconds, h.delay) for h in handles]
            waiting = [d - o for d, o in zip(delays, own)]
            worst = np.argsort(delays)[-max(1, len(delays) // 100):]  # the slowest 1 %
            hist = q.history
            q.close()
            got = _sizes(r)
            line = {**common, "mode": mode, "seconds": round(end - start, 3),
                    "throughput_batches_per_s": round(len(batches) / (end - start), 2),
                    "arrival_interval_s": round(gap, 4),
                    "delay_p50_s": round(float(np.percentile(delays, 50)), 4),
                    "delay_p99_s": round(float(np.percentile(delays, 99)), 4),
                    "own_update_mean_s": round(float(np.mean(own)), 4),
                    "waiting_mean_s": round(float(np.mean(waiting)), 4),
                    "slowest_1pct_own_s": round(float(np.mean([own[i] for i in worst])), 4),
                    "slowest_1pct_waiting_s": round(float(np.mean([waiting[i] for i in worst])),
                                                    4),
                    "updates_run": len(hist),
                    "composed": sum(s.composed for s in hist),
                    "injected": sum(s.injected for s in hist),
                    "aborted": sum(s.aborted for s in hist),
                    "rounds": sum(s.rounds for s in hist),
                    "update_s_p50": round(float(np.percentile([s.seconds for s in hist], 50)), 4),
                    "update_s_p90": round(float(np.percentile([s.seconds for s in hist], 90)),
                                          4),
                    "update_s_max": round(float(max(s.seconds for s in hist)), 4),
                    "composed_max": max(s.composed for s in hist),
                    "interleaved": sum(s.interleaved for s in hist),
                    "matches_sequential": got == want}
            seq = next(x for x in lines if x["mode"] == "sequential")
            line["throughput_vs_sequential"] = round(
                line["throughput_batches_per_s"] / seq["throughput_batches_per_s"], 2)
            line["p99_over_service"] = round(line["delay_p99_s"] / seq["service_s"], 2)
            line["p99_over_service_p99"] = round(line["delay_p99_s"] / seq["service_p99_s"], 2)
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


def _emit(line: dict[str, Any], out: str | None) -> None:
    text = json.dumps(line)
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
    p.add_argument("--out", default=str(REPO_ROOT / "benchmarks" / "results" / "streaming.jsonl"))
    args = p.parse_args(argv)
    args.modes = [m for m in args.modes.split(",") if m]
    for name in (["dag", "lubm"] if args.case == "all" else [args.case]):
        run_case(name, args)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

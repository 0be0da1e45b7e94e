"""The Spark backend against the local engine: one JSON line per measurement.

    python -m benchmarks.spark_backend [--only dag,lubm1,lubm10] [--out FILE.jsonl]
                                       [--timeout S] [--master local[2]] [--dag N,M]
                                       [--driver-memory 6g]

Cases: DAG-R (default 10k nodes, 100k edges) linear transitive closure, and LUBM(1) /
LUBM(10) with the LUBM_L rules.  Each case runs the local engine (CPU) and the Spark
backend (one session for the run) with ``decompose`` off and auto (``local_finish_rows=0``:
no local finish) and the hybrid (default threshold, decompose off).  Every line carries
``facts`` (IDB facts, the input relation excluded), ``count_ok`` (equal to the local
engine's per relation, or to the DAG-R oracle), ``rounds`` (Spark rounds), the paths taken,
and ``ratio`` (seconds over the local engine's).  A measurement that runs past
``--timeout`` is stopped (its Spark jobs cancelled) and recorded with status ``timeout``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
from gpu_engine.host.spark.adapter import cancel_jobs

REPO_ROOT = Path(__file__).resolve().parents[1]

VARIANTS: list[tuple[str, dict[str, Any]]] = [
    ("decompose-off", {"decompose": "off", "local_finish_rows": 0}),
    ("decompose-auto", {"decompose": "auto", "local_finish_rows": 0}),
    ("hybrid", {"decompose": "off"}),
]



class CaseTimeout(Exception):
    pass


@contextmanager
def deadline(seconds: float, on_timeout: Callable[[], None]) -> Iterator[None]:
    """Raise CaseTimeout in this (main) thread after ``seconds``."""

    def fire(_sig: int, _frame: Any) -> None:
        on_timeout()
        raise CaseTimeout(f"no result within {seconds:g} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def dag_workload(n: int, m: int) -> tuple[str, str, dict[str, pa.Table], str, int]:
    from benchmarks.generators import dag_r, transitive_closure_size
    from benchmarks.programs import TC_LINEAR

    edges = dag_r(n, m, 0)
    table = pa.table({"x": pa.array(edges[:, 0].astype(np.int32)),
                      "y": pa.array(edges[:, 1].astype(np.int32))})
    return "DAG-R", f"n={n} m={m}", {"edge": table}, TC_LINEAR.text, \
        transitive_closure_size(edges, n)


def lubm_workload(univ: int) -> tuple[str, str, dict[str, pa.Table], str, int]:
    from gpu_engine.host.ntriples import read_ntriples

    from benchmarks.programs import lubm_program
    from benchmarks.run import lubm_data_path

    triples = read_ntriples(lubm_data_path(univ))
    triples = triples.rename_columns(["s", "p", "o"])
    return "LUBM_L", f"LUBM({univ})", {"TE": triples}, lubm_program("LUBM_L").text, -1


def run_local(text: str, facts: dict[str, pa.Table]) -> tuple[float, dict[str, int]]:
    from gpu_engine import Reasoner

    r = Reasoner(text, device="cpu")
    for name, table in facts.items():
        r.add_facts(name, table)
    t0 = time.perf_counter()
    r.materialise()
    return time.perf_counter() - t0, r.relation_sizes()


def run_spark(spark: Any, text: str, facts: dict[str, pa.Table],
              kw: dict[str, Any]) -> tuple[float, dict[str, int], dict[str, Any]]:
    from gpu_engine.host.lang.parser import parse_program
    from gpu_engine.host.spark.adapter import from_arrow, local_checkpoint
    from gpu_engine.host.spark.backend import SparkRunner

    program = parse_program(text, "<bench>").program
    frames = {n: local_checkpoint(from_arrow(spark, t)) for n, t in facts.items()}
    runner = SparkRunner(program, spark, device="cpu", **kw)
    t0 = time.perf_counter()
    runner.materialise(frames)
    seconds = time.perf_counter() - t0
    return seconds, runner.stats["sizes"], runner.stats


def measure_case(spark: Any, workload: tuple, timeout: float, out: Any) -> None:
    bench, size, facts, text, oracle = workload
    edb = set(facts)

    def emit(rec: dict[str, Any]) -> None:
        line = json.dumps({"benchmark": bench, "size": size, **rec})
        print(line, flush=True)
        if out is not None:
            out.write(line + "\n")
            out.flush()

    base: dict[str, Any] = {"backend": "local", "path": "local-cpu"}
    expected: dict[str, int] | None = None
    local_s = None
    try:
        with deadline(timeout, lambda: None):
            local_s, expected = run_local(text, facts)
        idb = sum(n for r, n in expected.items() if r not in edb)
        emit({**base, "status": "ok", "seconds": local_s, "facts": idb, "rounds": None,
              "count_ok": oracle < 0 or idb == oracle, "ratio": 1.0})
    except CaseTimeout as exc:
        emit({**base, "status": "timeout", "reason": str(exc), "seconds": timeout})
    for label, kw in VARIANTS:
        rec: dict[str, Any] = {"backend": "spark", "path": label,
                               "master": spark.conf.get("spark.master", "?")}
        fired: list[bool] = []
        try:
            with deadline(timeout, lambda f=fired: (f.append(True), cancel_jobs(spark))):
                seconds, sizes, stats = run_spark(spark, text, facts, kw)
        except Exception as exc:  # noqa: BLE001 - recorded, the next variant runs
            if fired or isinstance(exc, CaseTimeout):  # py4j wraps the interrupted call
                emit({**rec, "status": "timeout", "reason": f"no result within {timeout:g} s",
                      "seconds": timeout})
            else:
                emit({**rec, "status": "error", "error": f"{type(exc).__name__}: {exc}"[:500]})
            continue
        idb = sum(n for r, n in sizes.items() if r not in edb)
        ok = (sizes == expected) if expected is not None else (oracle < 0 or idb == oracle)
        paths = sorted({s["path"] for s in stats["strata"]})
        emit({**rec, "status": "ok", "seconds": seconds, "facts": idb,
              "rounds": sum(s["rounds"] for s in stats["strata"]), "paths": paths,
              "count_ok": ok, "ratio": seconds / local_s if local_s else None})


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default="dag,lubm1,lubm10",
                    help="comma-separated cases: dag, lubm1, lubm10")
    ap.add_argument("--out", type=Path, default=None, help="append JSON lines here")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per measurement")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--dag", default="10000,100000", help="DAG-R nodes,edges")
    ap.add_argument("--driver-memory", default="6g",
                    help="JVM heap of the local session (the default 1g runs out on DAG-R)")
    args = ap.parse_args(argv)
    from gpu_engine.host.spark.adapter import local_session

    spark = local_session(args.master, app="gpu-engine-bench", shuffle_partitions=4,
                          conf={"spark.driver.memory": args.driver_memory})
    n, m = (int(x) for x in args.dag.split(","))
    makers = {"dag": lambda: dag_workload(n, m), "lubm1": lambda: lubm_workload(1),
              "lubm10": lambda: lubm_workload(10)}
    out = args.out.open("a", encoding="utf-8") if args.out else None
    try:
        for name in args.only.split(","):
            if name not in makers:
                print(f"unknown case {name!r}; expected one of {sorted(makers)}",
                      file=sys.stderr)
                return 2
            measure_case(spark, makers[name](), args.timeout, out)
    finally:
        if out is not None:
            out.close()
        spark.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Chain benchmark (issue 11, item 7): rounds per second when every round has a one-fact delta.

    python -m benchmarks.chain [--sizes 1000,10000,100000,1000000] [--programs chain,body3]
                               [--case] [--peers duckdb,souffle] [--device cpu|gpu|auto]
                               [--timeout S] [--out FILE.jsonl]

A long chain of seminaive rounds, each deriving one new fact, measures the fixed cost of a
round (planning, kernel launches, delta bookkeeping) rather than the cost of the data: a
round that touches one fact should cost what it touches. Programs (``N`` is the bound):

* ``chain``: ``n(0).  n(x + 1) :- n(x), x < N.`` -- N rounds, one fact each;
* ``body3``: Soufflé's ``example/independent_body3`` with its bound 1000000 replaced by N
  (``a(x) :- b(x), c(y), d(y).  b(x + 1) :- a(x), x < N.`` plus two short chains ``c``, ``d``)
  -- about 2N rounds of the mutually recursive stratum ``{a, b}``, one fact per round.

``--case`` also runs the conformance case itself
(``shared/conformance/souffle/example__independent_body3``, N = 10^6) and checks its output
against Soufflé's ``query.csv``. Every measurement is a whole ``gpu-engine run FILE.dl -F DIR
-D OUT --stats-json S`` process (``python -m gpu_engine.host.cli``, so the engine imported is the
one on ``PYTHONPATH`` / beside this file), in its own child process with a per-measurement
``--timeout`` (default 600 s: a run that does not finish is ``status: timeout`` with
``process_seconds`` a lower bound). Fields: ``program``, ``n``, ``engine``, ``device``,
``status``, ``rounds`` (seminaive iterations summed over the recursive strata, from the
statistics), ``seconds`` (the engine's materialisation time, start-up and loading excluded),
``seconds_per_round``, ``rounds_per_second``, ``chain_rounds`` / ``chain_seconds`` (the
longest stratum alone), ``process_seconds`` (the whole process: interpreter start-up, imports,
JIT compilation, parsing, writing the output), ``facts``, ``derivations``,
``peak_memory_bytes`` (the child's ``ru_maxrss``) and ``engine_path`` (which ``gpu_engine`` was
imported). Peers run the same program as a whole process: Soufflé's interpreter (``souffle -F
-D``, when a ``souffle`` binary is on ``PATH``) and, for ``chain`` only, DuckDB's recursive CTE
(``WITH RECURSIVE n(x) AS (SELECT 0 UNION SELECT x + 1 FROM n WHERE x < N)``) in a fresh
Python process; their ``seconds`` is the query (DuckDB) or the whole run (Soufflé).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED = REPO_ROOT.parent / "shared"
CASE_DIR = SHARED / "conformance" / "souffle" / "example__independent_body3"
CASE_FILE = "independent_body3.dl"
SIZES = (1_000, 10_000, 100_000, 1_000_000)
PROGRAMS = ("chain", "body3")
PEERS = ("duckdb", "souffle")

CHAIN = """\
.decl n(x:number)
.printsize n
n(0).
n(x + 1) :- n(x), x < {n}.
"""


def program_text(program: str, n: int) -> str:
    """The program with bound ``n``: ``chain``, or ``body3`` (the conformance case's text with
    its bound 1000000 replaced by ``n``)."""
    if program == "chain":
        return CHAIN.format(n=n)
    if program == "body3":
        text = (CASE_DIR / CASE_FILE).read_text(encoding="utf-8")
        if "x < 1000000" not in text:
            raise ValueError(f"{CASE_DIR / CASE_FILE}: bound 1000000 not found")
        return text.replace("x < 1000000", f"x < {n}")
    raise ValueError(f"unknown chain program {program!r}")


def _memory_limit(gib: float | None) -> int | None:
    if gib == 0:
        return None
    if gib:
        return int(gib * 2**30)
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4)
    except (ValueError, OSError, AttributeError):
        return None


def run_process(cmd: list[str], timeout: float, cwd: Path, env: dict[str, str] | None = None,
                memory_limit: int | None = None) -> dict[str, Any]:
    """Run ``cmd`` as a child process with a wall-clock ``timeout`` (then SIGKILL); its exit
    code, wall seconds, peak RSS (``ru_maxrss`` of that child alone) and output tails."""
    with tempfile.TemporaryDirectory(prefix="chain-proc-") as tmp:
        out_p, err_p = Path(tmp) / "stdout", Path(tmp) / "stderr"
        with out_p.open("wb") as out, err_p.open("wb") as err:
            def set_limit() -> None:
                if memory_limit:
                    resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

            t0 = time.perf_counter()
            proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=out, stderr=err,
                                    preexec_fn=set_limit)
            killed = threading.Event()

            def kill() -> None:
                killed.set()
                proc.kill()

            timer = threading.Timer(timeout, kill)
            timer.start()
            try:
                _, status, usage = os.wait4(proc.pid, 0)
            finally:
                timer.cancel()
            seconds = time.perf_counter() - t0
            proc.returncode = os.waitstatus_to_exitcode(status)
        return {"returncode": proc.returncode, "process_seconds": seconds,
                "timed_out": killed.is_set(), "peak_memory_bytes": usage.ru_maxrss * 1024,
                "stdout": out_p.read_text(encoding="utf-8", errors="replace")[-4000:],
                "stderr": err_p.read_text(encoding="utf-8", errors="replace")[-2000:]}


def engine_env() -> dict[str, str]:
    """The child's environment: this checkout first on ``PYTHONPATH``."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


def _timeout_record(rec: dict[str, Any], res: dict[str, Any], timeout: float) -> dict[str, Any]:
    return {**rec, "status": "timeout", "lower_bound": True,
            "process_seconds": res["process_seconds"],
            "reason": f"no result within {timeout:g} s"}


def measure_engine(prog: Path, facts: Path, device: str, timeout: float,
                   memory_limit: int | None = None) -> dict[str, Any]:
    """One whole ``gpu-engine run`` of ``prog``; the record (without program / n)."""
    rec: dict[str, Any] = {"engine": "gpu-engine", "device": device}
    with tempfile.TemporaryDirectory(prefix="chain-out-") as tmp:
        out_dir, stats_p = Path(tmp) / "out", Path(tmp) / "stats.json"
        out_dir.mkdir()
        cmd = [sys.executable, "-c",
               "import sys, gpu_engine; from gpu_engine.host.cli import main; "
               "print('ENGINE_PATH', gpu_engine.__file__, file=sys.stderr); "
               "sys.exit(main(sys.argv[1:]))",
               "run", str(prog), "-F", str(facts), "-D", str(out_dir), "--device", device,
               "--quiet", "--stats-json", str(stats_p)]
        res = run_process(cmd, timeout, REPO_ROOT, engine_env(), memory_limit)
        for line in res["stderr"].splitlines():
            if line.startswith("ENGINE_PATH "):
                rec["engine_path"] = line.split(" ", 1)[1]
        if res["timed_out"]:
            return _timeout_record(rec, res, timeout)
        if res["returncode"] != 0 or not stats_p.exists():
            return {**rec, "status": "error", "process_seconds": res["process_seconds"],
                    "reason": f"exit {res['returncode']}: {res['stderr'].strip()[-600:]}"}
        stats = json.loads(stats_p.read_text(encoding="utf-8"))
        outputs = {p.stem: p.read_text(encoding="utf-8").splitlines()
                   for p in out_dir.glob("*.csv")}
    rec["outputs"] = {k: len(v) for k, v in outputs.items()}
    rec["_output_lines"] = outputs
    rec.update(_from_stats(stats))
    rec.update(status="ok", process_seconds=res["process_seconds"],
               peak_memory_bytes=res["peak_memory_bytes"])
    return rec


def _from_stats(stats: dict[str, Any]) -> dict[str, Any]:
    """Rounds and times from ``--stats-json``: rounds summed over the recursive strata, and
    the longest stratum (the chain) alone."""
    rec_strata = [s for s in stats.get("strata", []) if s.get("recursive")]
    rounds = int(sum(s.get("iterations", 0) for s in rec_strata))
    longest = max(rec_strata, key=lambda s: s.get("iterations", 0), default=None)
    seconds = float(stats["seconds"])
    out: dict[str, Any] = {
        "device": stats.get("device"), "rounds": rounds, "seconds": seconds,
        "seconds_per_round": seconds / rounds if rounds else None,
        "rounds_per_second": rounds / seconds if seconds > 0 else None,
        "total_seconds": stats.get("total_seconds"), "facts": stats.get("facts"),
        "derivations": stats.get("derivations")}
    if longest is not None:
        out.update(chain_rounds=int(longest.get("iterations", 0)),
                   chain_seconds=float(longest.get("seconds", 0.0)),
                   chain_relations=longest.get("relations"),
                   small_rounds=longest.get("small_rounds"))
    return out


DUCKDB_SCRIPT = """\
import sys, time, duckdb
n = int(sys.argv[1])
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
t0 = time.perf_counter()
c = con.execute("WITH RECURSIVE n(x) AS (SELECT 0 UNION SELECT x + 1 FROM n WHERE x < ?) "
                "SELECT count(*) FROM n", [n]).fetchall()[0][0]
print("RESULT", c, time.perf_counter() - t0, duckdb.__version__)
"""


def measure_peer(peer: str, program: str, n: int, prog: Path, facts: Path, timeout: float,
                 memory_limit: int | None = None) -> dict[str, Any]:
    """One whole-process peer run (skipped when the peer is missing or cannot express it)."""
    rec: dict[str, Any] = {"engine": peer, "device": "cpu"}
    if peer == "duckdb":
        if program != "chain":
            return {**rec, "status": "skipped",
                    "reason": "DuckDB: only the single-relation chain is written as a CTE"}
        try:
            import duckdb  # noqa: F401
        except ImportError:
            return {**rec, "status": "skipped", "reason": "duckdb is not installed"}
        res = run_process([sys.executable, "-c", DUCKDB_SCRIPT, str(n)], timeout, REPO_ROOT,
                          None, memory_limit)
        if res["timed_out"]:
            return _timeout_record(rec, res, timeout)
        line = next((x for x in res["stdout"].splitlines() if x.startswith("RESULT ")), None)
        if res["returncode"] != 0 or line is None:
            return {**rec, "status": "error", "reason": res["stderr"].strip()[-600:]}
        _, count, secs, version = line.split()
        return {**rec, "status": "ok", "rounds": n + 1, "seconds": float(secs),
                "seconds_per_round": float(secs) / (n + 1),
                "rounds_per_second": (n + 1) / float(secs) if float(secs) > 0 else None,
                "facts": int(count), "process_seconds": res["process_seconds"],
                "peak_memory_bytes": res["peak_memory_bytes"], "version": version,
                "note": "rounds = recursion depth n + 1; seconds = the query alone"}
    if peer == "souffle":
        if shutil.which("souffle") is None:
            return {**rec, "status": "skipped", "reason": "no souffle binary on PATH"}
        with tempfile.TemporaryDirectory(prefix="chain-souffle-") as tmp:
            res = run_process(["souffle", "-F", str(facts), "-D", tmp, str(prog)], timeout,
                              REPO_ROOT, None, memory_limit)
            outputs = {p.stem: p.read_text(encoding="utf-8").splitlines()
                       for p in Path(tmp).glob("*.csv")}
        if res["timed_out"]:
            return _timeout_record(rec, res, timeout)
        if res["returncode"] != 0:
            return {**rec, "status": "error", "reason": res["stderr"].strip()[-600:]}
        return {**rec, "status": "ok", "seconds": res["process_seconds"],
                "process_seconds": res["process_seconds"],
                "peak_memory_bytes": res["peak_memory_bytes"], "_output_lines": outputs,
                "outputs": {k: len(v) for k, v in outputs.items()},
                "note": "seconds = the whole souffle interpreter run"}
    return {**rec, "status": "skipped", "reason": f"unknown peer {peer!r}"}


def _expected_case_outputs() -> dict[str, list[str]]:
    return {p.stem: p.read_text(encoding="utf-8").splitlines() for p in CASE_DIR.glob("*.csv")}


def run(sizes: list[int], programs: list[str], case: bool, peers: list[str], device: str,
        timeout: float, out_file: Path | None, memory_limit: int | None = None
        ) -> list[dict[str, Any]]:
    """Run every (program, n) and the conformance case; print and return the records."""
    records: list[dict[str, Any]] = []
    fh = out_file.open("a", encoding="utf-8") if out_file else None
    jobs: list[tuple[str, int | None]] = [(p, n) for p in programs for n in sizes]
    if case:
        jobs.append(("independent_body3", None))
    try:
        with tempfile.TemporaryDirectory(prefix="chain-") as tmp:
            facts = Path(tmp) / "facts"
            facts.mkdir()
            for program, n in jobs:
                if program == "independent_body3":
                    if not (CASE_DIR / CASE_FILE).exists():
                        rec = {"benchmark": "chain", "program": program, "n": 1_000_000,
                               "engine": "gpu-engine", "status": "skipped",
                               "reason": f"{CASE_DIR} not found"}
                        _emit(rec, records, fh)
                        continue
                    prog, n, facts_dir = CASE_DIR / CASE_FILE, 1_000_000, CASE_DIR / "facts"
                    if not facts_dir.is_dir():
                        facts_dir = facts
                    expected = _expected_case_outputs()
                else:
                    prog = Path(tmp) / f"{program}_{n}.dl"
                    prog.write_text(program_text(program, n), encoding="utf-8")
                    facts_dir, expected = facts, None
                for engine in ["gpu-engine", *peers]:
                    _log(f"{program} n={n} {engine} ...")
                    if engine == "gpu-engine":
                        rec = measure_engine(prog, facts_dir, device, timeout, memory_limit)
                    else:
                        rec = measure_peer(engine, "chain" if program == "chain" else "body3",
                                           n, prog, facts_dir, timeout, memory_limit)
                    lines = rec.pop("_output_lines", None)
                    if expected is not None and lines is not None:
                        rec["output_ok"] = all(sorted(lines.get(k, [])) == sorted(v)
                                               for k, v in expected.items())
                    rec = {"benchmark": "chain", "program": program, "n": n, **rec}
                    _log(f"  {rec['status']}: " + (
                        f"{rec.get('rounds')} rounds in {rec.get('seconds', 0):.3f}s "
                        f"(process {rec.get('process_seconds', 0):.1f}s)"
                        if rec["status"] == "ok" else str(rec.get("reason"))[:200]))
                    _emit(rec, records, fh)
    finally:
        if fh:
            fh.close()
    return records


def _emit(rec: dict[str, Any], records: list[dict[str, Any]], fh: Any) -> None:
    line = json.dumps(rec)
    print(line, flush=True)
    if fh:
        fh.write(line + "\n")
        fh.flush()
    records.append(rec)


def _log(msg: str) -> None:
    print(f"[chain] {msg}", file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description="chain benchmark: rounds with one-fact deltas")
    ap.add_argument("--sizes", default=",".join(str(n) for n in SIZES),
                    help="comma-separated bounds N (default 10^3..10^6)")
    ap.add_argument("--programs", default=",".join(PROGRAMS),
                    help="comma-separated subset of " + ",".join(PROGRAMS))
    ap.add_argument("--case", action=argparse.BooleanOptionalAction, default=True,
                    help="also run the conformance case independent_body3 itself (N = 10^6)")
    ap.add_argument("--peers", default=",".join(PEERS),
                    help="comma-separated peers (duckdb,souffle); '' for none")
    ap.add_argument("--device", choices=["auto", "cpu", "gpu"], default="cpu")
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per measurement")
    ap.add_argument("--memory-limit", type=float, default=None,
                    help="GiB of address space per measurement (default 3/4 of the memory)")
    ap.add_argument("--out", type=Path, help="append the JSON lines to this file too")
    args = ap.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",") if s.strip()]
    programs = [p.strip() for p in args.programs.split(",") if p.strip()]
    bad = [p for p in programs if p not in PROGRAMS]
    if bad:
        ap.error(f"unknown programs: {bad}")
    peers = [p.strip() for p in args.peers.split(",") if p.strip()]
    bad = [p for p in peers if p not in PEERS]
    if bad:
        ap.error(f"unknown peers: {bad}")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
    run(sizes, programs, args.case, peers, args.device, args.timeout, args.out,
        _memory_limit(args.memory_limit))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

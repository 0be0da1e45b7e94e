"""Run the benchmarks: gpu-engine and its peers side by side, one JSON line per measurement.

    python -m benchmarks.run [--suite quick|full|modules] [--device cpu|gpu|auto]
                             [--out FILE.jsonl] [--peers duckdb,clingo,nemo,souffle]
                             [--only NAME] [--timeout S]

Each measurement (one engine on one benchmark) runs in a fresh child process, so that its
peak memory is its own and a runaway peer can be stopped by ``--timeout`` (a timed-out
measurement records how long it had run as a lower bound). gpu-engine runs with
``modules="off"`` (plain seminaive evaluation, "Mat"); on the cases of the ``modules`` suite
it runs a second time as ``gpu-engine-mod`` with ``modules="auto"`` (the TC/STC modules of
paper 002, "Mat-Mod"). Once every
engine has run on a benchmark, the lines for that benchmark are printed with the expected
fact count, ``count_ok`` and the ratio of each engine's materialisation time to the
fastest peer's. ``facts`` always counts the facts of the program's output (IDB) relations
only, never the input relation, so that every engine and the reference counts agree on
what is counted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parents[1]
SHARED_LUBM = REPO_ROOT.parent / "shared" / "bench-data" / "lubm"
EXAMPLES_LUBM = REPO_ROOT / "examples" / "lubm"
ENGINE = "gpu-engine"
ENGINE_MOD = "gpu-engine-mod"  # gpu-engine with the TC/STC modules of paper 002
OURS = {ENGINE: "off", ENGINE_MOD: "auto"}  # engine label -> Reasoner(modules=...)
DEFAULT_PEERS = ("duckdb", "clingo", "nemo", "souffle")


@dataclass(frozen=True)
class Case:
    """One benchmark: a program on a data set, with peers that are known not to fit it."""

    benchmark: str
    size: str
    dataset: dict[str, Any]
    peer_limits: dict[str, str] = field(default_factory=dict)
    modules: bool = False  # also measure gpu-engine-mod (modules="auto")
    whole_process: bool = False  # time whole processes (start-up, loading, count only)

    @property
    def name(self) -> str:
        """``benchmark@size``, used by ``--only``."""
        return f"{self.benchmark}@{self.size}"


def _dag(benchmark: str, n: int, m: int, limits: dict[str, str] | None = None,
         modules: bool = False) -> Case:
    return Case(benchmark, f"DAG-R n={n} m={m}", {"kind": "dag-r", "n": n, "m": m, "seed": 0},
                limits or {}, modules)


def _lubm(rule_set: str, univ: int, limits: dict[str, str] | None = None,
          modules: bool = False) -> Case:
    return Case(rule_set, f"LUBM({univ})", {"kind": "lubm", "universities": univ},
                limits or {}, modules)


def _process(case: Case) -> Case:
    """The same case measured as whole processes (see :func:`run_whole_process`)."""
    return Case(case.benchmark, case.size, case.dataset, case.peer_limits, case.modules,
                whole_process=True)


QUICK: list[Case] = [
    _dag("tc-linear", 10_000, 100_000),
    _dag("tc-nonlinear", 2_000, 10_000),
    _dag("sg", 1_000, 5_000),
    _lubm("LUBM_L", 1),
    _lubm("LUBM_LE", 1),
    _lubm("LUBM_U", 1),
    _lubm("LUBM_L", 10),
]
FULL: list[Case] = QUICK + [
    _lubm("LUBM_L", 50, {"clingo": "LUBM(50) is too large for clingo's grounder in memory"}),
]
MODULES: list[Case] = [  # paper 002 §7: Mat (gpu-engine) and Mat-Mod (gpu-engine-mod) vs peers
    _dag("tc-nonlinear", 10_000, 100_000, modules=True),
    _dag("tc-nonlinear", 2_000, 10_000, modules=True),
    _lubm("LUBM_LE", 1, modules=True),
]
PROCESS: list[Case] = [  # issue 11 item 7: whole processes, as a user times `gpu-engine run`
    _process(_dag("tc-linear", 2_000, 10_000)),
    _process(_dag("tc-linear", 10_000, 100_000)),
    _process(_lubm("LUBM_L", 10)),
    _process(_lubm("LUBM_L", 50, {"clingo": "LUBM(50) is too large for clingo's grounder"})),
]
SUITES = {"quick": QUICK, "full": FULL, "modules": MODULES, "process": PROCESS}
SUITE_PEERS = {"process": ("duckdb", "souffle")}  # peers that can run as a whole process
SUITE_TIMEOUTS = {"modules": 1800.0}  # seconds per measurement; others: 900


# --------------------------------------------------------------------------- data


def lubm_data_path(universities: int) -> Path:
    """The N-Triples file of LUBM(N): the repo's copy for N = 1, else shared/."""
    local = EXAMPLES_LUBM / f"lubm{universities}.nt.gz"
    if local.exists():
        return local
    return SHARED_LUBM / f"lubm{universities}.nt.gz"


def expected_lubm_counts(rule_set: str, universities: int) -> dict[str, int] | None:
    """Per-predicate reference counts (and ``TOTAL``) from shared/, or ``None``."""
    path = SHARED_LUBM / "expected" / f"{rule_set}.lubm{universities}.counts.tsv"
    if not path.exists():
        return None
    counts = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        parts = line.split("\t")
        counts[parts[0]] = int(parts[1])
    return counts


def _peak_rss_bytes() -> int:
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    kids = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024
    return max(own, kids)


# --------------------------------------------------------------------------- child side


def run_measurement(spec: dict[str, Any]) -> dict[str, Any]:
    """Run one engine on one benchmark in this process; return the measurement dict."""
    from benchmarks.generators import dag_r
    from benchmarks.lubm_rules import parse_dlog, rule_set_path
    from benchmarks.peers import Workload, run_peer
    from benchmarks.programs import GRAPH_PROGRAMS, lubm_program

    ds = spec["dataset"]
    engine = spec["engine"]
    out: dict[str, Any] = {"status": "ok"}
    t0 = time.perf_counter()
    spec = {**spec, "t_start": t0}
    if ds["kind"] == "dag-r":
        prog = GRAPH_PROGRAMS[spec["benchmark"]]
        edges = dag_r(ds["n"], ds["m"], ds.get("seed", 0))
        data: Any = edges
        workload = Workload(program=prog.name, outputs=prog.outputs, edges=edges,
                            souffle_text=prog.text, edb=prog.edb)
    else:
        from gpu_engine.host.ntriples import read_ntriples

        prog = lubm_program(spec["benchmark"])
        nt_path = lubm_data_path(ds["universities"])
        if not nt_path.exists():
            return {"status": "skipped", "reason": f"{nt_path} not found"}
        data = read_ntriples(nt_path)
        dlog_path = rule_set_path(spec["benchmark"])
        dlog = None
        if dlog_path.exists():
            dlog = parse_dlog(dlog_path.read_text(encoding="utf-8"), spec["benchmark"])
        workload = Workload(program=prog.name, outputs=prog.outputs, triples=data,
                            nt_path=nt_path, dlog=dlog, souffle_text=prog.text, edb=prog.edb)
        out["input_facts"] = data.num_rows
    out["read_seconds"] = time.perf_counter() - t0

    started = spec.get("started_file")
    if spec.get("whole_process"):
        return run_whole_process(spec, prog, workload, out)
    if engine in OURS:
        from gpu_engine import Reasoner

        t1 = time.perf_counter()
        r = Reasoner(prog.text, device=spec["device"], modules=OURS[engine])
        t_compiled = time.perf_counter()
        r.add_facts(prog.edb, data)
        t2 = time.perf_counter()
        if started:
            Path(started).write_text(str(time.time()), encoding="utf-8")
        stats = r.materialise()
        t3 = time.perf_counter()
        sizes = r.relation_sizes()
        d = stats.to_dict()
        per_rel = {rel: int(sizes[rel]) for rel in prog.outputs}
        out.update(
            device=r.device,
            load_seconds=t2 - t1,
            compile_seconds=t_compiled - t1,
            materialise_seconds=t3 - t2,
            engine_seconds=d.get("seconds"),
            facts=sum(per_rel.values()),
            engine_total_facts=d.get("facts"),
            derivations=d.get("derivations"),
            per_relation=per_rel,
            modules_setting=OURS[engine],
            modules=sorted({ru.module for st in stats.strata for ru in st.rules
                            if ru.module.startswith(("tc(", "stc("))}),
        )
        gpu_peak = d.get("peak_device_bytes")
        if r.device == "gpu" and not gpu_peak:
            try:
                import cupy

                gpu_peak = int(cupy.get_default_memory_pool().total_bytes())
            except Exception:  # noqa: BLE001 - best effort only
                gpu_peak = None
        out["gpu_peak_memory_bytes"] = gpu_peak if r.device == "gpu" else None
    else:
        if ds["kind"] == "lubm" and workload.dlog is None:
            return {"status": "skipped", "reason": "the .dlog rule file is not available"}
        if started:  # a peer's lower bound on timeout includes its load step
            Path(started).write_text(str(time.time()), encoding="utf-8")
        res = run_peer(engine, workload)
        if res.skipped:
            return {"status": "skipped", "reason": res.skipped}
        out.update(
            device="cpu",
            load_seconds=res.load_seconds,
            materialise_seconds=res.materialise_seconds,
            facts=res.facts,
            derivations=None,
            per_relation=res.per_relation,
            **{k: v for k, v in res.extra.items()},
        )
    out["peak_memory_bytes"] = _peak_rss_bytes()
    return out


def _printsizes(text: str) -> dict[str, int]:
    """``.printsize`` lines (``relation<TAB>count``) of a CLI's standard output."""
    sizes = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            sizes[parts[0]] = int(parts[1])
    return sizes


def count_only(text: str, edb: str) -> str:
    """The program with every ``.output R`` turned into ``.printsize R`` (the run prints the
    counts instead of writing the relations) and ``.input EDB`` present."""
    import re

    text = re.sub(r"^\.output(\s+)", r".printsize\1", text, flags=re.M)
    if not re.search(rf"^\.input\s+{edb}\b", text, re.M):
        text += f"\n.input {edb}\n"
    return text


DUCKDB_PROCESS_SCRIPT = """\
import sys, duckdb
con = duckdb.connect()
con.execute("SET enable_progress_bar = false")
con.execute("CREATE TABLE edge AS SELECT * FROM read_csv(?, delim='\\t', header=false, "
            "columns={'x': 'BIGINT', 'y': 'BIGINT'})", [sys.argv[1]])
n = con.execute("SELECT count(*) FROM (" + sys.argv[2] + ")").fetchall()[0][0]
print("path", n)
"""


def run_whole_process(spec: dict[str, Any], prog: Any, workload: Any,
                      out: dict[str, Any]) -> dict[str, Any]:
    """Time one engine as a whole process, as a user would time ``gpu-engine run``:
    interpreter start-up, imports, reading the input files, materialising and printing the
    output counts (``.printsize``, count only). The input files (``edge.facts`` /
    ``TE.facts``, tab-separated) are written first, untimed. gpu-engine: ``python -m
    gpu_engine.host.cli run P.dl -F DIR -D OUT --modules off|auto``; duckdb: a fresh Python
    process that reads the file with ``read_csv`` and counts the recursive CTE; souffle:
    ``souffle -F DIR -D OUT P.dl`` (interpreter)."""
    import pyarrow as pa

    from benchmarks.chain import engine_env, run_process
    from benchmarks.peers import _DUCKDB_SQL, unsupported, write_tsv

    engine = spec["engine"]
    is_lubm = spec["dataset"]["kind"] == "lubm"
    if engine not in OURS:
        why = (unsupported(engine, prog.name, is_lubm)
               or (None if engine in ("duckdb", "souffle")
                   else f"{engine} is not measured as a whole process"))
        if why:
            return {"status": "skipped", "reason": why}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench-process-") as tmp:
        facts, out_dir = Path(tmp) / "facts", Path(tmp) / "out"
        facts.mkdir()
        out_dir.mkdir()
        table = (workload.triples if is_lubm
                 else pa.table({"x": workload.edges[:, 0], "y": workload.edges[:, 1]}))
        write_tsv(table, facts / f"{prog.edb}.facts")
        del table
        workload.triples = workload.edges = None
        prog_path = Path(tmp) / "program.dl"
        prog_path.write_text(count_only(prog.text, prog.edb), encoding="utf-8")
        out["write_facts_seconds"] = time.perf_counter() - started
        # the parent stops this child at spec["timeout"]: stop the grandchild first
        spent = time.perf_counter() - spec.get("t_start", time.perf_counter())
        timeout = max(1.0, float(spec.get("timeout", 900.0)) - spent - 15.0)
        env = None
        if engine in OURS:
            device = spec["device"]
            cmd = [sys.executable, "-m", "gpu_engine.host.cli", "run", str(prog_path),
                   "-F", str(facts), "-D", str(out_dir), "--device", device, "--quiet",
                   "--modules", OURS[engine], "--stats-json", str(Path(tmp) / "stats.json")]
            env = engine_env()
        elif engine == "duckdb":
            cmd = [sys.executable, "-c", DUCKDB_PROCESS_SCRIPT,
                   str(facts / f"{prog.edb}.facts"), _DUCKDB_SQL[prog.name][1]]
        else:
            cmd = ["souffle", "-F", str(facts), "-D", str(out_dir), str(prog_path)]
        if spec.get("started_file"):
            Path(spec["started_file"]).write_text(str(time.time()), encoding="utf-8")
        res = run_process(cmd, timeout, REPO_ROOT, env)
        stats_p = Path(tmp) / "stats.json"
        stats = json.loads(stats_p.read_text(encoding="utf-8")) if stats_p.exists() else {}
    if res["timed_out"]:
        return {**out, "status": "timeout", "reason": f"no result within {timeout:g} s",
                "materialise_seconds": res["process_seconds"], "lower_bound": True}
    if res["returncode"] != 0:
        return {**out, "status": "error",
                "reason": f"exit {res['returncode']}: {res['stderr'].strip()[-600:]}"}
    sizes = _printsizes(res["stdout"])
    per_rel = {rel: sizes.get(rel, 0) for rel in prog.outputs}
    out.update(device=stats.get("device", "cpu"), load_seconds=None,
               materialise_seconds=res["process_seconds"], facts=sum(per_rel.values()),
               per_relation=per_rel, derivations=stats.get("derivations"),
               engine_seconds=stats.get("seconds"), engine_total_facts=stats.get("facts"),
               peak_memory_bytes=res["peak_memory_bytes"], whole_process=True,
               note="materialise_seconds = the whole process (start-up, reading the input "
                    "files, materialising, printing the counts)")
    if engine in OURS:
        out["modules_setting"] = OURS[engine]
    return out


def _child_main(spec_json: str, out_path: str) -> int:
    spec = json.loads(spec_json)
    try:
        result = run_measurement(spec)
    except Exception as exc:  # noqa: BLE001 - reported as a measurement with status error
        import traceback

        result = {"status": "error", "reason": f"{type(exc).__name__}: {exc}",
                  "traceback": traceback.format_exc()[-2000:]}
    Path(out_path).write_text(json.dumps(result), encoding="utf-8")
    return 0


# --------------------------------------------------------------------------- parent side


def measure(spec: dict[str, Any], timeout: float, in_process: bool = False,
            memory_limit: int | None = None) -> dict[str, Any]:
    """Run one measurement in a child process (or here with ``in_process``).

    On a timeout, ``materialise_seconds`` is how long the materialisation had run when the
    child was stopped (a lower bound, ``lower_bound: true``); ``memory_limit`` bytes of
    address space are the child's limit (CPU runs only: CUDA reserves far more)."""
    if in_process:
        try:
            return run_measurement(spec)
        except Exception as exc:  # noqa: BLE001
            return {"status": "error", "reason": f"{type(exc).__name__}: {exc}"}
    with tempfile.TemporaryDirectory(prefix="bench-") as tmp:
        out_path = Path(tmp) / "result.json"
        started = Path(tmp) / "started"
        spec = {**spec, "started_file": str(started)}
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        cmd = [sys.executable, "-m", "benchmarks.run", "--child", json.dumps(spec), str(out_path)]

        def set_limit() -> None:
            if memory_limit:
                resource.setrlimit(resource.RLIMIT_AS, (memory_limit, memory_limit))

        try:
            proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, timeout=timeout,
                                  capture_output=True, text=True, preexec_fn=set_limit)
        except subprocess.TimeoutExpired:
            out: dict[str, Any] = {"status": "timeout",
                                   "reason": f"no result within {timeout:g} s"}
            if started.exists():
                out["materialise_seconds"] = time.time() - float(started.read_text())
                out["lower_bound"] = True
            return out
        if not out_path.exists():
            tail = (proc.stderr or proc.stdout or "").strip()[-600:]
            return {"status": "error", "reason": f"child exited {proc.returncode}: {tail}"}
        return json.loads(out_path.read_text(encoding="utf-8"))


def _expected(case: Case, results: dict[str, dict[str, Any]]) -> tuple[int | None, str | None,
                                                                         dict[str, int] | None]:
    ds = case.dataset
    if ds["kind"] == "lubm":
        counts = expected_lubm_counts(case.benchmark, ds["universities"])
        if counts is not None:
            return counts["TOTAL"], "reference counts (clingo) in shared/bench-data", counts
    elif case.benchmark in ("tc-linear", "tc-nonlinear"):
        from benchmarks.generators import dag_r, transitive_closure_size

        edges = dag_r(ds["n"], ds["m"], ds.get("seed", 0))
        return transitive_closure_size(edges, ds["n"]), "bitset transitive-closure oracle", None
    peer_counts = {e: r["facts"] for e, r in results.items()
                   if e not in OURS and r.get("status") == "ok"}
    if peer_counts and len(set(peer_counts.values())) == 1:
        return next(iter(peer_counts.values())), "peers (" + ", ".join(peer_counts) + ")", None
    return None, None, None


def finish_case(case: Case, results: dict[str, dict[str, Any]]) -> list[dict[str, Any]]:
    """Turn the raw results of one benchmark into output records (expected, ok, ratios)."""
    expected, source, per_pred = _expected(case, results)
    ok_peers = {e: r for e, r in results.items() if e not in OURS and r.get("status") == "ok"
                and r.get("materialise_seconds") is not None
                and (expected is None or r.get("facts") == expected)}
    fastest = min(ok_peers, key=lambda e: ok_peers[e]["materialise_seconds"]) if ok_peers else None
    records = []
    for engine, r in results.items():
        rec: dict[str, Any] = {
            "benchmark": case.benchmark,
            "size": case.size,
            "engine": engine,
            "device": r.get("device"),
            "status": r.get("status"),
            "load_seconds": r.get("load_seconds"),
            "materialise_seconds": r.get("materialise_seconds"),
            "facts": r.get("facts"),
            "derivations": r.get("derivations"),
            "peak_memory_bytes": r.get("peak_memory_bytes"),
            "gpu_peak_memory_bytes": r.get("gpu_peak_memory_bytes"),
            "expected_facts": expected,
            "count_ok": (r.get("facts") == expected) if (expected is not None
                                                         and r.get("status") == "ok") else None,
        }
        if r.get("status") == "ok":
            rec["read_seconds"] = r.get("read_seconds")
            if fastest is not None and ok_peers[fastest]["materialise_seconds"] > 0:
                rec["fastest_peer"] = fastest
                rec["ratio_to_fastest_peer"] = (r["materialise_seconds"]
                                                / ok_peers[fastest]["materialise_seconds"])
            if engine in OURS:
                rec["engine_seconds"] = r.get("engine_seconds")
                rec["compile_seconds"] = r.get("compile_seconds")
                rec["engine_total_facts"] = r.get("engine_total_facts")
                # Agreement with each peer (DAG-R and SG: our count against each peer's).
                rec["agrees_with"] = {e: p.get("facts") == r.get("facts")
                                      for e, p in results.items()
                                      if e not in OURS and p.get("status") == "ok"}
            if engine == ENGINE_MOD:  # Mat / Mat-Mod, a lower bound when Mat timed out
                mat = results.get(ENGINE) or {}
                if mat.get("materialise_seconds") and r.get("materialise_seconds"):
                    rec["mat_over_mat_mod"] = (mat["materialise_seconds"]
                                               / r["materialise_seconds"])
                    if mat.get("lower_bound"):
                        rec["mat_over_mat_mod_lower_bound"] = True
            if per_pred is not None and r.get("per_relation"):
                bad = {p: [n, per_pred.get(p)] for p, n in r["per_relation"].items()
                       if per_pred.get(p) != n}
                if bad:
                    rec["count_mismatches"] = bad
            for k in ("input_facts", "note", "version", "modules_setting", "modules",
                      "whole_process", "engine_seconds", "write_facts_seconds"):
                if k in r:
                    rec[k] = r[k]
        else:
            rec["reason"] = r.get("reason")
            if r.get("lower_bound"):
                rec["lower_bound"] = True
            if r.get("traceback"):
                rec["traceback"] = r["traceback"]
        if source:
            rec["expected_source"] = source
        if case.whole_process:
            rec["whole_process"] = True
        records.append(rec)
    return records


def peer_missing(engine: str) -> str | None:
    """Why a peer cannot run here (not installed), or ``None``."""
    if engine in OURS:
        return None
    from benchmarks.peers import PEERS

    return PEERS[engine][0]() if engine in PEERS else f"unknown peer {engine!r}"


def peer_unsupported(engine: str, case: Case) -> str | None:
    """Why a peer cannot express this case's program, or ``None``."""
    if engine in OURS:
        return None
    from benchmarks.peers import unsupported

    return unsupported(engine, case.benchmark, case.dataset["kind"] == "lubm")


def run_suite(cases: list[Case], device: str, peers: list[str], timeout: float,
              out_file: Path | None, in_process: bool = False,
              memory_limit: int | None = None) -> list[dict[str, Any]]:
    """Run every case with gpu-engine (and gpu-engine-mod where the case asks for it) and
    the peers; print and return the records."""
    all_records = []
    fh = out_file.open("a", encoding="utf-8") if out_file else None
    try:
        for case in cases:
            results: dict[str, dict[str, Any]] = {}
            for engine in [ENGINE, *([ENGINE_MOD] if case.modules else []), *peers]:
                if engine in case.peer_limits:
                    results[engine] = {"status": "skipped", "reason": case.peer_limits[engine]}
                    continue
                missing = peer_missing(engine) or peer_unsupported(engine, case)
                if missing:
                    results[engine] = {"status": "skipped", "reason": missing}
                    continue
                spec = {"benchmark": case.benchmark, "dataset": case.dataset,
                        "engine": engine, "device": device, "timeout": timeout,
                        "whole_process": case.whole_process}
                print(f"[bench] {case.name} {engine} ...", file=sys.stderr, flush=True)
                t0 = time.perf_counter()
                limit = memory_limit if engine not in OURS or device == "cpu" else None
                results[engine] = measure(spec, timeout, in_process, limit)
                print(f"[bench]   {results[engine].get('status')} in "
                      f"{time.perf_counter() - t0:.1f}s", file=sys.stderr, flush=True)
            for rec in finish_case(case, results):
                line = json.dumps(rec)
                print(line, flush=True)
                if fh:
                    fh.write(line + "\n")
                    fh.flush()
                all_records.append(rec)
    finally:
        if fh:
            fh.close()
    return all_records


def memory_limit_bytes(gib: float | None) -> int | None:
    """``--memory-limit`` in bytes: by default 3/4 of the physical memory; 0: none."""
    if gib == 0:
        return None
    if gib:
        return int(gib * 2**30)
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4)
    except (ValueError, OSError, AttributeError):
        return None


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _child_main(argv[1], argv[2])
    ap = argparse.ArgumentParser(description="gpu-engine benchmarks with peer engines")
    ap.add_argument("--suite", choices=sorted(SUITES), default="quick")
    ap.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    ap.add_argument("--out", type=Path, help="append the JSON lines to this file too")
    ap.add_argument("--peers", default=None,
                    help="comma-separated peers (duckdb,clingo,nemo,souffle; suite process: "
                         "duckdb,souffle); '' for none")
    ap.add_argument("--only", action="append", default=[],
                    help="run only cases whose 'benchmark@size' contains this (repeatable)")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per measurement (default 900; suite modules 1800)")
    ap.add_argument("--memory-limit", type=float, default=None,
                    help="GiB of address space per measurement on the CPU (default: 3/4 of "
                         "the physical memory; 0: no limit)")
    ap.add_argument("--in-process", action="store_true",
                    help="run measurements in this process (peak memory is then cumulative)")
    args = ap.parse_args(argv)
    peers_arg = (args.peers if args.peers is not None
                 else ",".join(SUITE_PEERS.get(args.suite, DEFAULT_PEERS)))
    peers = [p.strip() for p in peers_arg.split(",") if p.strip()]
    unknown = [p for p in peers if p not in DEFAULT_PEERS]
    if unknown:
        ap.error(f"unknown peers: {unknown}")
    cases = SUITES[args.suite]
    if args.only:
        cases = [c for c in cases if any(o in c.name for o in args.only)]
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
    timeout = args.timeout if args.timeout is not None else SUITE_TIMEOUTS.get(args.suite, 900.0)
    records = run_suite(cases, args.device, peers, timeout, args.out, args.in_process,
                        memory_limit_bytes(args.memory_limit))
    bad = [r for r in records if r["engine"] in OURS and r.get("count_ok") is False]
    for r in bad:
        print(f"[bench] COUNT MISMATCH {r['benchmark']} {r['size']}: {r['facts']} facts, "
              f"expected {r['expected_facts']}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

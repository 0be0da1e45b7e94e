"""Benchmarks of incremental maintenance (paper 000 §6, paper 002 §7): one JSON line each.

    python -m benchmarks.incremental [--suite quick|full] [--device cpu|gpu|auto]
                                     [--algorithms remat,dred,...] [--only NAME]
                                     [--out FILE.jsonl] [--timeout S] [--in-process]

Per benchmark, a *prepare* job times ``materialise()`` with ``counting=False`` (Remat),
``counting=1`` (Remat-1C) and ``counting=2`` (Remat-2C), checks the reference counts
where they exist, and computes the fact count of a from-scratch rematerialisation for
every explicit set the updates produce (the originals minus each small deletion, minus
the large deletion). Then two jobs per algorithm (small updates; the large deletion)
each materialise with ``counting=True``, make an untimed warm-up update of a few facts
and measure, on that reasoner:

* ``small_delete``: delete ``--small`` (1,000) random explicit facts, ``--repeats`` (10)
  times, each a fresh sample from the original state, and ``small_insert``: reinsert them
  (which restores the original state);
* ``large_delete``: delete ``--large-fraction`` (25 %) of the explicit facts at once (on
  Example 1: every ``R(a_i, c_i)``, the deletion of paper 000).

After each update the number of facts is compared with the from-scratch count
(``matches_remat``). Each job runs in its own child process; past ``--timeout`` it gets
SIGTERM and reports the repeats it finished (the rest is ``status: timeout``). An
algorithm the engine does not support yet is recorded with ``status: error``; Counting
is skipped on recursive programs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
ALGORITHMS = ("remat", "remat1c", "remat2c", "dred", "counting", "dredc", "bf", "bfc")
MATERIALISE_MODES = (("remat", False), ("remat1c", 1), ("remat2c", 2))
OPERATIONS = ("small_delete", "small_insert", "large_delete")
WARMUP_FACTS = 10  # facts deleted and reinserted, untimed, before the timed updates
KILL_GRACE = 30.0  # seconds a timed-out child gets to report before it is killed
STAT_FIELDS = ("deleted", "inserted", "overdeleted", "rederived", "added", "derivations",
               "backward")


@dataclass(frozen=True)
class Case:
    """One benchmark: a data set (``dataset["kind"]``) with the program that goes with it."""

    benchmark: str
    size: str
    dataset: dict[str, Any]
    large: str = "random"  # "random": a random fraction of E; "example1": every R(a_i, c_i)

    @property
    def name(self) -> str:
        """``benchmark@size``, matched by ``--only``."""
        return f"{self.benchmark}@{self.size}"


@dataclass
class Settings:
    """What each benchmark measures."""

    device: str = "cpu"
    algorithms: tuple[str, ...] = ALGORITHMS
    small: int = 1000
    repeats: int = 10
    large_fraction: float = 0.25
    seed: int = 0
    repeat_budget: float = 120.0  # stop repeating an operation once it has taken this long
    mat_repeats: int = 3  # timed materialisations per counting mode
    warmup: bool = True  # one untimed materialisation / small update first (JIT, caches)
    timeout: float = 900.0  # per child job
    in_process: bool = False


def dag_case(n: int, m: int) -> Case:
    """Linear transitive closure on DAG-R."""
    return Case("DAG-R", f"n={n} m={m}", {"kind": "dag-r", "n": n, "m": m, "seed": 0})


def sspe_case(n: int, m: int, max_length: int = 10, source: int = 0) -> Case:
    """SSPE: path lengths from one source of a DAG-R with edge lengths 1..max_length."""
    return Case("SSPE", f"n={n} m={m}", {"kind": "sspe", "n": n, "m": m, "seed": 0,
                                         "max_length": max_length, "source": source})


def example1_case(n: int) -> Case:
    """Paper 000, Example 1 with ``n`` constants ``a_i``."""
    return Case("Example1", f"n={n}", {"kind": "example1", "n": n}, large="example1")


def lubm_case(univ: int, rule_set: str = "LUBM_L") -> Case:
    """A LUBM rule set on LUBM(univ)."""
    return Case(rule_set, f"LUBM({univ})", {"kind": "lubm", "universities": univ,
                                            "rule_set": rule_set})


QUICK: list[Case] = [
    dag_case(2_000, 10_000),
    sspe_case(10_000, 100_000),
    *(example1_case(n) for n in (1_000, 3_000, 10_000)),
    lubm_case(1),
]
FULL: list[Case] = [
    dag_case(10_000, 100_000),
    sspe_case(100_000, 1_000_000),
    *(example1_case(n) for n in (1_000, 3_000, 10_000, 30_000, 100_000)),
    lubm_case(1),
    lubm_case(10),
]
SUITES = {"quick": QUICK, "full": FULL}
SUITE_LIMITS = {"quick": (30.0, 150.0), "full": (300.0, 1800.0)}  # (repeat budget, timeout) s


# --------------------------------------------------------------------------- data


@dataclass
class Workload:
    """A loaded benchmark: program text, its EDB relation, outputs and the input data."""

    text: str
    edb: str
    outputs: tuple[str, ...]
    data: Any
    expected: dict[str, int] | None = None
    expected_source: str | None = None
    read_seconds: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)


def load_workload(case: Case, cache_dir: Path | None = None) -> Workload:
    """Generate or read the case's data (LUBM triples are cached in ``cache_dir``)."""
    from benchmarks import generators as gen
    from benchmarks import programs as progs

    ds = case.dataset
    t0 = time.perf_counter()
    kind = ds["kind"]
    if kind == "dag-r":
        prog = progs.TC_LINEAR
        data: Any = gen.dag_r(ds["n"], ds["m"], ds.get("seed", 0))
    elif kind == "sspe":
        prog = progs.sspe_program(ds.get("source", 0))
        data = gen.sspe(ds["n"], ds["m"], ds.get("max_length", 10), ds.get("seed", 0))
    elif kind == "example1":
        prog = progs.EXAMPLE1
        data = gen.example1(ds["n"])
    elif kind == "lubm":
        from benchmarks.run import expected_lubm_counts, lubm_data_path

        prog = progs.lubm_program(ds.get("rule_set", "LUBM_L"))
        data = _read_lubm(lubm_data_path(ds["universities"]), cache_dir)
        wl = Workload(prog.text, prog.edb, prog.outputs, data)
        wl.expected = expected_lubm_counts(prog.name, ds["universities"])
        wl.expected_source = "reference counts (clingo) in shared/bench-data"
        wl.read_seconds = time.perf_counter() - t0
        return wl
    else:
        raise ValueError(f"unknown data set kind {kind!r}")
    wl = Workload(prog.text, prog.edb, prog.outputs, data)
    if kind == "dag-r":
        wl.expected = {"TOTAL": gen.transitive_closure_size(data, ds["n"])}
        wl.expected_source = "bitset transitive-closure oracle"
    wl.read_seconds = time.perf_counter() - t0
    return wl


def _read_lubm(path: Path, cache_dir: Path | None) -> Any:
    import pyarrow as pa
    import pyarrow.feather as feather

    cached = cache_dir / "lubm.arrow" if cache_dir else None
    if cached is not None and cached.exists():
        return feather.read_table(cached)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found")
    from host.ntriples import read_ntriples

    table: pa.Table = read_ntriples(path)
    if cached is not None:
        feather.write_feather(table, cached)
    return table


def deletion_sets(n_explicit: int, case: Case, st: Settings, explicit: Any = None,
                  warmup: bool = False) -> tuple[list[np.ndarray], np.ndarray]:
    """Row indices into E (sorted as ``Reasoner.explicit`` returns it): the small
    deletions (one per repeat) and the large one; with ``warmup``, one more small
    deletion (for an untimed warm-up) and no large one. Deterministic in ``st.seed``."""
    rng = np.random.default_rng(st.seed)
    k = min(st.small, n_explicit)
    small = [np.sort(rng.choice(n_explicit, size=k, replace=False)) for _ in range(st.repeats)]
    if warmup:
        return [np.sort(rng.choice(n_explicit, size=k, replace=False))], np.empty(0, np.int64)
    if case.large == "example1":
        # E sorted by (x, y): R(a_i, b) = (i, 0) then R(a_i, c_i) = (i, n + i) for each i.
        y = np.asarray(explicit.column(1).to_numpy(zero_copy_only=False))
        large = np.flatnonzero(y != 0)
    else:
        large = np.sort(rng.choice(n_explicit, size=int(n_explicit * st.large_fraction),
                                   replace=False))
    return small, large


def _without(table: Any, idx: np.ndarray) -> Any:
    import pyarrow as pa

    mask = np.ones(table.num_rows, dtype=bool)
    mask[idx] = False
    return table.filter(pa.array(mask))


# --------------------------------------------------------------------------- measuring


def _reset_peak() -> None:
    """Reset the kernel's peak-RSS mark of this process (Linux); no-op elsewhere."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
    except OSError:
        pass


def _peak_rss() -> int:
    """Peak RSS since the last :func:`_reset_peak` (VmHWM), else of the process."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _rss() -> int:
    import psutil

    return int(psutil.Process().memory_info().rss)


def _facts(r: Any) -> int:
    return int(sum(r.relation_sizes().values()))


def _new_reasoner(wl: Workload, device: str, counting: Any, data: Any = None) -> Any:
    from gpu_engine import Reasoner

    r = Reasoner(wl.text, device=device, counting=counting)
    r.add_facts(wl.edb, wl.data if data is None else data)
    return r


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


def prepare(case: Case, st: Settings, emit: Callable[[dict[str, Any]], None],
            cache_dir: Path | None = None) -> dict[str, Any]:
    """Materialisation cost lines (Remat, Remat-1C, Remat-2C) and the reference counts."""
    wl = load_workload(case, cache_dir)
    base = _base(case, st)
    info: dict[str, Any] = {"read_seconds": wl.read_seconds}
    if st.warmup:
        try:
            _new_reasoner(wl, st.device, False).materialise()
        except Exception:  # noqa: BLE001 - the timed runs below report the error
            pass
    for alg, counting in MATERIALISE_MODES:
        rec = {**base, "algorithm": alg, "operation": "materialise", "counting": counting}
        try:
            _reset_peak()
            times = []
            for _ in range(max(1, st.mat_repeats)):
                r = _new_reasoner(wl, st.device, counting)
                t0 = time.perf_counter()
                stats = r.materialise()
                times.append(time.perf_counter() - t0)
            sizes = r.relation_sizes()
            out_facts = int(sum(sizes[o] for o in wl.outputs))
            rec.update(status="ok", device=r.device, seconds=float(np.mean(times)),
                       seconds_repeats=times, seconds_min=min(times),
                       engine_seconds=stats.seconds, facts=int(sum(sizes.values())),
                       output_facts=out_facts, derivations=int(stats.derivations),
                       input_facts=int(sizes[wl.edb]), read_seconds=wl.read_seconds,
                       counting_mode=_counting_mode(r), **_memory(r))
            if wl.expected is not None:
                rec["expected_facts"] = wl.expected["TOTAL"]
                rec["expected_source"] = wl.expected_source
                rec["count_ok"] = out_facts == wl.expected["TOTAL"]
                bad = {o: [int(sizes[o]), wl.expected.get(o)] for o in wl.outputs
                       if o in wl.expected and wl.expected[o] != sizes[o]}
                if bad:
                    rec["count_mismatches"] = bad
            info["recursive"] = any(s.recursive for s in r.engine.strata)
            if "full" not in info:
                info["full"] = rec["facts"]
                explicit = r.explicit(wl.edb)
            del r
        except Exception as exc:  # noqa: BLE001 - recorded, the other modes still run
            rec.update(status="error", error=_error(exc))
        emit(rec)
    if "full" not in info:
        return info
    small, large = deletion_sets(explicit.num_rows, case, st, explicit)
    t0 = time.perf_counter()
    info["small"] = [_facts_from_scratch(wl, st.device, _without(explicit, s)) for s in small]
    info["large"] = _facts_from_scratch(wl, st.device, _without(explicit, large))
    info["reference_seconds"] = time.perf_counter() - t0
    return info


def _facts_from_scratch(wl: Workload, device: str, data: Any) -> int:
    r = _new_reasoner(wl, device, False, data)
    r.materialise()
    return _facts(r)


def _counting_mode(r: Any) -> Any:
    mode = getattr(r.engine, "counting", None)
    return mode if isinstance(mode, (bool, int, str)) or mode is None else str(mode)


def _memory(r: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"peak_rss_bytes": _peak_rss(), "rss_bytes": _rss()}
    if getattr(r, "device", "cpu") == "gpu":
        try:
            out["gpu_peak_memory_bytes"] = int(r.backend.peak_memory_bytes())
        except Exception:  # noqa: BLE001 - best effort
            out["gpu_peak_memory_bytes"] = None
    return out


def _base(case: Case, st: Settings) -> dict[str, Any]:
    return {"benchmark": case.benchmark, "size": case.size, "device": st.device}


class _Updater:
    """Runs one encoded update on a reasoner and times it (encoding is not timed)."""

    def __init__(self, r: Any, edb: str, algorithm: str) -> None:
        self.r, self.edb, self.algorithm = r, edb, algorithm

    def __call__(self, insert: Any = None, delete: Any = None) -> tuple[float, Any]:
        r = self.r
        enc = getattr(r, "_encode", None)
        ins = {self.edb: insert} if insert is not None else {}
        dele = {self.edb: delete} if delete is not None else {}
        if enc is not None and hasattr(r, "update_encoded"):
            ins_e = {k: enc(k, v) for k, v in ins.items()}
            del_e = {k: enc(k, v) for k, v in dele.items()}
            t0 = time.perf_counter()
            stats = r.update_encoded(ins_e, del_e, self.algorithm)
        else:
            t0 = time.perf_counter()
            stats = r.update(insert=ins, delete=dele, algorithm=self.algorithm)
        return time.perf_counter() - t0, stats


def _stats_dict(stats: Any) -> dict[str, Any]:
    d = stats.to_dict() if hasattr(stats, "to_dict") else asdict(stats)
    d.pop("strata", None)
    return d


def _summarise(rec: dict[str, Any], times: list[float], stats: list[dict[str, Any]],
               facts: list[int], refs: list[int]) -> dict[str, Any]:
    rec["seconds"] = float(np.mean(times)) if times else None
    rec["seconds_repeats"] = times
    rec["repeats"] = len(times)
    rec["engine_seconds"] = (float(np.mean([s.get("seconds", 0.0) for s in stats]))
                             if stats else None)
    for f in STAT_FIELDS:
        vals = [s.get(f) for s in stats if s.get(f) is not None]
        mean = float(np.mean(vals)) if vals else None
        rec[f] = int(mean) if mean is not None and mean.is_integer() else mean
    if stats and stats[-1].get("note"):
        rec["note"] = stats[-1]["note"]
    rec["facts"] = facts[-1] if facts else None
    rec["facts_repeats"] = facts
    rec["expected_facts"] = refs[-1] if refs else None
    if len(refs) > 1:
        rec["expected_facts_repeats"] = refs
    rec["matches_remat"] = bool(facts) and all(a == b for a, b in zip(facts, refs))
    if len(stats) > 1:
        rec["stats_repeats"] = stats
    return rec


def run_algorithm(case: Case, st: Settings, algorithm: str, refs: dict[str, Any],
                  emit: Callable[[dict[str, Any]], None], cache_dir: Path | None = None,
                  part: str = "all") -> None:
    """Materialise with counters, then the small deletions/insertions (``part`` "small"),
    the large deletion ("large") or both ("all")."""
    wl = load_workload(case, cache_dir)
    base = {**_base(case, st), "algorithm": algorithm}
    r = _new_reasoner(wl, st.device, True)
    r.materialise()
    explicit = r.explicit(wl.edb)
    small, large = deletion_sets(explicit.num_rows, case, st, explicit)
    upd = _Updater(r, wl.edb, algorithm)
    full = refs["full"]
    if st.warmup:
        # Untimed delete + reinsert of a few facts that are not a timed sample (JIT, caches).
        try:
            warm = deletion_sets(explicit.num_rows, case, st, warmup=True)[0][0]
            batch = explicit.take(warm[:WARMUP_FACTS])
            upd(delete=batch)
            upd(insert=batch)
        except Exception:  # noqa: BLE001 - the timed runs below report the error
            pass
        if _facts(r) != full:
            r = _new_reasoner(wl, st.device, True)
            r.materialise()
            upd = _Updater(r, wl.edb, algorithm)

    recs = {op: {**base, "operation": op, "status": "ok", "device": r.device} for op in OPERATIONS}
    acc: dict[str, tuple[list[float], list[dict], list[int], list[int]]] = {
        op: ([], [], [], []) for op in OPERATIONS}
    peaks = {op: 0 for op in OPERATIONS}
    failed: str | None = None
    interrupted: str | None = None
    rebuilt = 0
    started = time.perf_counter()
    op = "small_delete"
    if part == "large":
        small = []
    try:
        for k, idx in enumerate(small):
            batch = explicit.take(idx)
            for op, kwargs, ref in (("small_delete", {"delete": batch}, refs["small"][k]),
                                    ("small_insert", {"insert": batch}, full)):
                _reset_peak()
                try:
                    secs, stats = upd(**kwargs)
                except Exception as exc:  # noqa: BLE001 - unsupported algorithm: record, go on
                    failed = _error(exc)
                    break
                peaks[op] = max(peaks[op], _peak_rss())
                times, sts, facts, rfs = acc[op]
                times.append(secs)
                sts.append(_stats_dict(stats))
                facts.append(_facts(r))
                rfs.append(ref)
            if failed:
                break
            if acc["small_insert"][2][-1] != full:
                # The algorithm got it wrong: start the next repeat from a correct state.
                r = _new_reasoner(wl, st.device, True)
                r.materialise()
                upd = _Updater(r, wl.edb, algorithm)
                rebuilt += 1
            if time.perf_counter() - started > st.repeat_budget:
                break
    except Interrupted:
        interrupted = f"timeout during {op} (repeat {len(acc[op][0]) + 1})"
    for op in ("small_delete", "small_insert") if part != "large" else ():
        rec = recs[op]
        rec["batch_facts"] = int(min(st.small, explicit.num_rows))
        rec["requested_repeats"] = st.repeats
        if failed and not acc[op][0]:
            emit({**rec, "status": "error", "error": failed})
            continue
        if interrupted and not acc[op][0]:
            emit({**rec, "status": "timeout", "error": interrupted})
            continue
        if interrupted:
            rec["interrupted"] = interrupted
        _summarise(rec, *acc[op])
        rec["peak_rss_bytes"] = peaks[op] or None
        rec["rss_bytes"] = _rss()
        if rebuilt:
            rec["rebuilt_after_mismatch"] = rebuilt
        if failed:
            rec["error"] = failed
        emit(rec)

    if part == "small":
        return
    rec = recs["large_delete"]
    rec["batch_facts"] = int(len(large))
    rec["deletion"] = ("every R(a_i, c_i)" if case.large == "example1"
                       else f"{st.large_fraction:.0%} of E at random")
    if interrupted:
        emit({**rec, "status": "timeout", "error": f"not run: {interrupted}"})
        return
    _reset_peak()
    try:
        secs, stats = upd(delete=explicit.take(large))
        _summarise(rec, [secs], [_stats_dict(stats)], [_facts(r)], [refs["large"]])
        rec.update(_memory(r))
    except Interrupted:
        rec.update(status="timeout", error="timeout during large_delete")
    except Exception as exc:  # noqa: BLE001
        rec.update(status="error", error=_error(exc))
    emit(rec)


# --------------------------------------------------------------------------- processes


class Interrupted(BaseException):
    """Raised in a child job by SIGTERM (the parent's timeout), so it can report what it did."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Interrupted()


def _child_main(spec_json: str, out_path: str) -> int:
    spec = json.loads(spec_json)
    case = Case(**spec["case"])
    st = Settings(**spec["settings"])
    cache = Path(spec["cache_dir"]) if spec.get("cache_dir") else None
    signal.signal(signal.SIGTERM, _on_sigterm)
    with open(out_path, "a", encoding="utf-8") as fh:
        def emit(rec: dict[str, Any]) -> None:
            fh.write(json.dumps(rec) + "\n")
            fh.flush()

        try:
            if spec["job"] == "prepare":
                info = prepare(case, st, emit, cache)
                emit({"_info": info})
            else:
                run_algorithm(case, st, spec["algorithm"], spec["refs"], emit, cache,
                              spec.get("part", "all"))
        except Interrupted:
            emit({"_error": f"timeout: no result within {st.timeout:g} s"})
        except Exception as exc:  # noqa: BLE001 - reported by the parent
            import traceback

            emit({"_error": _error(exc), "_traceback": traceback.format_exc()[-2000:]})
    return 0


def _job(spec: dict[str, Any], st: Settings) -> tuple[list[dict[str, Any]], str | None]:
    """Run one job (child process, or here); its records and why it stopped early, if so."""
    lines: list[dict[str, Any]] = []
    if st.in_process:
        case = Case(**spec["case"])
        cache = Path(spec["cache_dir"]) if spec.get("cache_dir") else None
        try:
            if spec["job"] == "prepare":
                lines.append({"_info": prepare(case, st, lines.append, cache)})
            else:
                run_algorithm(case, st, spec["algorithm"], spec["refs"], lines.append, cache,
                              spec.get("part", "all"))
        except Exception as exc:  # noqa: BLE001
            return lines, _error(exc)
        return lines, None
    with tempfile.TemporaryDirectory(prefix="incr-") as tmp:
        out_path = Path(tmp) / "lines.jsonl"
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
        cmd = [sys.executable, "-m", "benchmarks.incremental", "--child", json.dumps(spec),
               str(out_path)]
        why = None
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            _, err = proc.communicate(timeout=st.timeout)
            if proc.returncode != 0:
                why = f"child exited {proc.returncode}: " + (err or "").strip()[-600:]
        except subprocess.TimeoutExpired:
            why = f"timeout: no result within {st.timeout:g} s"
            proc.terminate()  # the child reports what it finished (see Interrupted)
            try:
                proc.communicate(timeout=KILL_GRACE)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
        if out_path.exists():
            for line in out_path.read_text(encoding="utf-8").splitlines():
                if line.strip():
                    lines.append(json.loads(line))
    errs = [x for x in lines if "_error" in x]
    if errs and why is None:
        why = errs[0]["_error"]
    return [x for x in lines if "_error" not in x], why


def run_case(case: Case, st: Settings, emit: Callable[[dict[str, Any]], None],
             cache_dir: Path | None) -> None:
    """Prepare one benchmark, then run every algorithm on it; emit the records."""
    base = _base(case, st)
    spec: dict[str, Any] = {"job": "prepare", "case": asdict(case), "settings": asdict(st),
                            "cache_dir": str(cache_dir) if cache_dir else None}
    _log(f"{case.name}: materialise (Remat, Remat-1C, Remat-2C) and reference counts")
    lines, why = _job(spec, st)
    info: dict[str, Any] = {}
    for x in lines:
        if "_info" in x:
            info = x["_info"]
        else:
            emit(x)
    if "reference_seconds" in info:
        _log(f"{case.name}: reference counts in {info['reference_seconds']:.1f}s")
    if "full" not in info or "small" not in info:
        reason = why or "materialisation failed"
        for alg in st.algorithms:
            for op in OPERATIONS:
                emit({**base, "algorithm": alg, "operation": op, "status": "error",
                      "error": f"not run: {reason}"})
        return
    for alg in st.algorithms:
        if alg == "counting" and info.get("recursive"):
            for op in OPERATIONS:
                emit({**base, "algorithm": alg, "operation": op, "status": "skipped",
                      "reason": "Counting is not correct on recursive programs"})
            continue
        for part, ops in (("small", OPERATIONS[:2]), ("large", OPERATIONS[2:])):
            _log(f"{case.name}: {alg} ({part})")
            t0 = time.perf_counter()
            lines, why = _job({**spec, "job": "algorithm", "algorithm": alg, "refs": info,
                               "part": part}, st)
            done = set()
            for x in lines:
                emit(x)
                done.add(x.get("operation"))
            for op in ops:
                if op not in done:
                    emit({**base, "algorithm": alg, "operation": op,
                          "status": "timeout" if why and why.startswith("timeout") else "error",
                          "error": why or "no result"})
            _log(f"{case.name}: {alg} ({part}) done in {time.perf_counter() - t0:.1f}s"
                 + (f" ({why[:120]})" if why else ""))


def _log(msg: str) -> None:
    print(f"[incremental] {msg}", file=sys.stderr, flush=True)


def run_suite(cases: list[Case], st: Settings, out_file: Path | None) -> list[dict[str, Any]]:
    """Run the cases; print each record as a JSON line (and append it to ``out_file``)."""
    records: list[dict[str, Any]] = []
    fh = out_file.open("a", encoding="utf-8") if out_file else None

    def emit(rec: dict[str, Any]) -> None:
        line = json.dumps(rec)
        print(line, flush=True)
        if fh:
            fh.write(line + "\n")
            fh.flush()
        records.append(rec)

    try:
        for case in cases:
            with tempfile.TemporaryDirectory(prefix="incr-cache-") as cache:
                run_case(case, st, emit, Path(cache))
    finally:
        if fh:
            fh.close()
    return records


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        return _child_main(argv[1], argv[2])
    ap = argparse.ArgumentParser(description="incremental-maintenance benchmarks")
    ap.add_argument("--suite", choices=sorted(SUITES), default="quick")
    ap.add_argument("--device", choices=["auto", "cpu", "gpu"], default="cpu")
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS),
                    help="comma-separated subset of " + ",".join(ALGORITHMS))
    ap.add_argument("--only", action="append", default=[],
                    help="run only cases whose 'benchmark@size' contains this (repeatable)")
    ap.add_argument("--out", type=Path, help="append the JSON lines to this file too")
    ap.add_argument("--small", type=int, default=1000, help="facts per small deletion")
    ap.add_argument("--repeats", type=int, default=10, help="small deletions per algorithm")
    ap.add_argument("--large-fraction", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat-budget", type=float, default=None,
                    help="stop repeating small deletions after this many seconds "
                         "(default: quick 30, full 300)")
    ap.add_argument("--mat-repeats", type=int, default=3,
                    help="timed materialisations per counting mode")
    ap.add_argument("--no-warmup", action="store_true",
                    help="no untimed materialisation / small update before the timed ones")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per child job (default: quick 150, full 1800)")
    ap.add_argument("--in-process", action="store_true", help="run the jobs in this process")
    args = ap.parse_args(argv)
    algs = tuple(a.strip() for a in args.algorithms.split(",") if a.strip())
    unknown = [a for a in algs if a not in ALGORITHMS]
    if unknown:
        ap.error(f"unknown algorithms: {unknown}")
    budget, timeout = SUITE_LIMITS[args.suite]
    if args.repeat_budget is not None:
        budget = args.repeat_budget
    if args.timeout is not None:
        timeout = args.timeout
    cases = SUITES[args.suite]
    if args.only:
        names = {c.name for c in cases}
        cases = [c for c in cases
                 if any(o == c.name if o in names else o in c.name for o in args.only)]
    st = Settings(device=args.device, algorithms=algs, small=args.small, repeats=args.repeats,
                  large_fraction=args.large_fraction, seed=args.seed,
                  repeat_budget=budget, mat_repeats=args.mat_repeats,
                  warmup=not args.no_warmup, timeout=timeout,
                  in_process=args.in_process)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
    records = run_suite(cases, st, args.out)
    bad = [r for r in records if r.get("matches_remat") is False or r.get("count_ok") is False]
    for r in bad:
        print(f"[incremental] COUNT MISMATCH {r['benchmark']} {r['size']} {r['algorithm']} "
              f"{r['operation']}: {r.get('facts')} facts, expected {r.get('expected_facts')}",
              file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

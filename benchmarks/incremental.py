"""Benchmarks of incremental maintenance (paper 000 §6, paper 002 §7): one JSON line each.

    python -m benchmarks.incremental [--suite quick|full|modules] [--device cpu|gpu|auto]
                                     [--algorithms remat,dred,...] [--only NAME]
                                     [--out FILE.jsonl] [--timeout S] [--in-process]

Per benchmark, one child job per *materialisation mode* times ``materialise()``: Remat
(``counting=False``), Remat-1C (``counting=1``), Remat-2C (``counting=2``), all with
``modules="off"``, and Mat-Mod (``modules="auto"``, the TC/STC modules of paper 002) with
the counters DRed^c-MOD needs (``counting=2``) and without counters. A *reference* job
computes the fact count of a from-scratch materialisation of every explicit set the
updates produce (the originals minus each small deletion, minus the large deletion): by
an oracle on DAG-R (bitset transitive closure) and on the clique benchmark (connected
components), otherwise by ``materialise()`` with ``modules="off"``. Then two jobs per
algorithm (small updates; the large deletion) each materialise with ``counting=True``, make
an untimed warm-up update of a few facts and measure, on that reasoner:

* ``small_delete``: delete ``--small`` (1,000) random explicit facts, ``--repeats`` (10)
  times, each a fresh sample from the original state, and ``small_insert``: reinsert them
  (which restores the original state);
* ``large_delete``: delete ``--large-fraction`` (25 %) of the explicit facts at once (on
  Example 1: every ``R(a_i, c_i)``, the deletion of paper 000).

Every algorithm of paper 000 runs with ``modules="off"``; ``mat_mod`` (rematerialise with
modules, Remat-2C's counters) and ``dredc_mod`` (DRed^c-MOD, paper 002 Algorithm 3) run with
``modules="auto"``, on programs that have a TC/STC module. After each update the number of
facts is compared with the from-scratch count (``matches_remat``). Each job runs in its own
child process; ``--timeout`` bounds its timed part and, separately, its set-up (loading,
initial materialisation, warm-up). Past it the child gets SIGTERM and reports the repeats
it finished; an operation with none is ``status: timeout`` with ``seconds`` the time it had
run (a lower bound, ``lower_bound: true``). An algorithm the engine does not support yet is
recorded with ``status: error``; Counting is skipped on recursive programs.
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
# auto: the default algorithm (DRed^c or Counting) with its time budget (it rematerialises
# past it: gpu_engine.maintenance.DEFAULT_TIME)
ALGORITHMS = ("remat", "remat1c", "remat2c", "mat_mod", "dred", "counting", "dredc",
              "dredc_mod", "bf", "bfc", "auto")
# algorithms run with modules="auto", and the Reasoner.update algorithm each one is
MODULAR = {"mat_mod": "remat2c", "dredc_mod": "dredc"}
REMATERIALISING = ("remat", "remat1c", "remat2c", "mat_mod")  # ignore the state they start from
# materialisation modes: (counting, modules)
MATERIALISE_MODES: dict[str, tuple[bool | int, str]] = {
    "remat": (False, "off"), "remat1c": (1, "off"), "remat2c": (2, "off"),
    "mat_mod": (2, "auto"), "mat_mod_nc": (False, "auto")}
MODULE_ALGORITHMS = ("remat", "mat_mod", "dredc", "dredc_mod")  # paper 002 §7
PLAIN_HEAVY = ("remat", "remat1c", "remat2c", "dredc")  # without modules: many minutes
OPERATIONS = ("small_delete", "small_insert", "large_delete")
# every operation a run may measure: the no-op update only in suite "small"
ALL_OPERATIONS = (*OPERATIONS, "noop_delete")
WARMUP_FACTS = 10  # facts deleted and reinserted, untimed, before the timed updates
KILL_GRACE = 30.0  # seconds a timed-out child gets to report before it is killed
STAT_FIELDS = ("deleted", "inserted", "overdeleted", "rederived", "added", "derivations",
               "backward")


def update_algorithm(algorithm: str) -> tuple[str, str]:
    """The ``Reasoner.update`` algorithm and the ``modules`` setting of a benchmark algorithm."""
    return (MODULAR[algorithm], "auto") if algorithm in MODULAR else (algorithm, "off")


def setup_modules(case: Case, algorithm: str) -> str:
    """The ``modules`` setting of an algorithm job's initial materialisation: the
    algorithm's own, except that a rematerialising algorithm ignores the state it starts
    from, so on a case where it is heavy it starts from Mat-Mod rather than plain Mat."""
    heavy = algorithm in case.heavy and algorithm in REMATERIALISING
    return "auto" if heavy else update_algorithm(algorithm)[1]


@dataclass(frozen=True)
class Case:
    """One benchmark: a data set (``dataset["kind"]``) with the program that goes with it."""

    benchmark: str
    size: str
    dataset: dict[str, Any]
    large: str = "random"  # "random": a random fraction of E; "example1": every R(a_i, c_i)
    algorithms: tuple[str, ...] | None = None  # None: every algorithm of the settings
    # materialisation modes / algorithms that take many minutes here: no warm-up, one timed
    # run, and a rematerialising algorithm starts from a Mat-Mod materialisation
    heavy: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        """``benchmark@size``, matched by ``--only``."""
        return f"{self.benchmark}@{self.size}"


@dataclass
class Settings:
    """What each benchmark measures."""

    device: str = "cpu"
    algorithms: tuple[str, ...] = ALGORITHMS
    mat_modes: tuple[str, ...] = tuple(MATERIALISE_MODES)
    small: int = 1000
    repeats: int = 10
    large_fraction: float = 0.25
    seed: int = 0
    repeat_budget: float = 120.0  # stop repeating an operation once it has taken this long
    mat_repeats: int = 3  # timed materialisations per counting mode
    warmup: bool = True  # one untimed materialisation / small update first (JIT, caches)
    timeout: float = 900.0  # per child job: its timed part, and separately its set-up
    in_process: bool = False
    memory_limit: float | None = None  # bytes of address space per child job (CPU only)
    large: bool = True  # measure the large deletion (suite "small": no)
    noop: bool = False  # measure the no-op update: deleting --small facts that are absent


def dag_case(n: int, m: int) -> Case:
    """Linear transitive closure on DAG-R."""
    return Case("DAG-R", f"n={n} m={m}", {"kind": "dag-r", "n": n, "m": m, "seed": 0})


def dag_nonlinear_case(n: int, m: int, heavy: tuple[str, ...] = ()) -> Case:
    """Non-linear transitive closure on DAG-R (a TC module, paper 002)."""
    return Case("DAG-R-nonlinear", f"n={n} m={m}",
                {"kind": "dag-r", "n": n, "m": m, "seed": 0, "program": "tc-nonlinear"},
                algorithms=MODULE_ALGORITHMS, heavy=heavy)


def clique_case(sizes: tuple[int, ...], degree: float, heavy: tuple[str, ...] = ()) -> Case:
    """Cliques of ``related`` places (an STC module, paper 002): ``generators.related_places``."""
    return Case("Clique", f"k={len(sizes)} n={sum(sizes)} d={degree:g}",
                {"kind": "clique", "sizes": list(sizes), "degree": degree, "seed": 0},
                algorithms=MODULE_ALGORITHMS, heavy=heavy)


def sspe_case(n: int, m: int, max_length: int = 10, source: int = 0) -> Case:
    """SSPE: path lengths from one source of a DAG-R with edge lengths 1..max_length."""
    return Case("SSPE", f"n={n} m={m}", {"kind": "sspe", "n": n, "m": m, "seed": 0,
                                         "max_length": max_length, "source": source})


def example1_case(n: int) -> Case:
    """Paper 000, Example 1 with ``n`` constants ``a_i``."""
    return Case("Example1", f"n={n}", {"kind": "example1", "n": n}, large="example1")


def lubm_case(univ: int, rule_set: str = "LUBM_L",
              algorithms: tuple[str, ...] | None = None) -> Case:
    """A LUBM rule set on LUBM(univ)."""
    return Case(rule_set, f"LUBM({univ})", {"kind": "lubm", "universities": univ,
                                            "rule_set": rule_set}, algorithms=algorithms)


# Clique component sizes: quick (1,040 vertices, 0.15 M related facts), medium (1,900
# vertices, 0.39 M facts, 8.8e7 rule instances without modules: plain Mat takes seconds and
# ~4 GB) and large (7,100 vertices, 11.9 M facts: Mat-Mod takes seconds, plain Mat would
# consider 2.4e10 rule instances).
CLIQUE_QUICK = (60, 80, 100, 120, 140, 160, 180, 200)
CLIQUE_MEDIUM = tuple(range(100, 300, 20))
CLIQUE_LARGE = (300, 500, 800, 1200, 1800, 2500)

QUICK: list[Case] = [
    dag_case(2_000, 10_000),
    sspe_case(10_000, 100_000),
    *(example1_case(n) for n in (1_000, 3_000, 10_000)),
    lubm_case(1),
    dag_nonlinear_case(2_000, 10_000),
    clique_case(CLIQUE_QUICK, 12),
    lubm_case(1, "LUBM_LE", MODULE_ALGORITHMS),
]
FULL: list[Case] = [
    dag_case(10_000, 100_000),
    sspe_case(100_000, 1_000_000),
    *(example1_case(n) for n in (1_000, 3_000, 10_000, 30_000, 100_000)),
    lubm_case(1),
    lubm_case(10),
]
MODULES: list[Case] = [  # paper 002 §7: Mat vs Mat-Mod, DRed^c vs DRed^c-Mod
    dag_nonlinear_case(10_000, 100_000, heavy=PLAIN_HEAVY),
    clique_case(CLIQUE_MEDIUM, 10),
    clique_case(CLIQUE_LARGE, 6, heavy=PLAIN_HEAVY),
    lubm_case(1, "LUBM_LE", MODULE_ALGORITHMS),
    lubm_case(10, "LUBM_LE", MODULE_ALGORITHMS),
]
SMALL_ALGORITHMS = ("remat", "dred", "counting", "dredc", "bf", "bfc", "mat_mod", "dredc_mod",
                    "auto")
SMALL: list[Case] = [  # issue 11 item 7: small changes cost what they touch
    *(lubm_case(u, rs, SMALL_ALGORITHMS) for u in (10, 50)
      for rs in ("LUBM_L", "LUBM_LE", "LUBM_U")),
    dag_case(2_000, 10_000),
    dag_case(10_000, 100_000),
    sspe_case(10_000, 100_000),
    sspe_case(100_000, 1_000_000),
]
SUITES = {"quick": QUICK, "full": FULL, "modules": MODULES, "small": SMALL}
SUITE_LIMITS = {"quick": (30.0, 150.0), "full": (300.0, 1800.0),  # (repeat budget, timeout) s
                "modules": (300.0, 1800.0), "small": (300.0, 900.0)}
SUITE_MAT_MODES = {"modules": ("remat", "mat_mod", "mat_mod_nc"), "small": ("remat",)}
SUITE_ALGORITHMS = {"small": SMALL_ALGORITHMS}


# --------------------------------------------------------------------------- data


@dataclass
class Workload:
    """A loaded benchmark: program text, its EDB relation (the one updated), outputs and the
    input data; ``more_facts``: explicit facts of other relations, never updated."""

    text: str
    edb: str
    outputs: tuple[str, ...]
    data: Any
    expected: dict[str, int] | None = None
    expected_source: str | None = None
    read_seconds: float = 0.0
    more_facts: dict[str, Any] = field(default_factory=dict)


def load_workload(case: Case, cache_dir: Path | None = None) -> Workload:
    """Generate or read the case's data (LUBM triples are cached in ``cache_dir``)."""
    from benchmarks import generators as gen
    from benchmarks import programs as progs

    ds = case.dataset
    t0 = time.perf_counter()
    kind = ds["kind"]
    more: dict[str, Any] = {}
    if kind == "dag-r":
        prog = progs.GRAPH_PROGRAMS[ds.get("program", "tc-linear")]
        data: Any = gen.dag_r(ds["n"], ds["m"], ds.get("seed", 0))
    elif kind == "clique":
        prog = progs.RELATED_PLACES
        rp = gen.related_places(tuple(ds["sizes"]), ds["degree"], seed=ds.get("seed", 0))
        data, more = rp.link, {"place": rp.place}
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
    wl = Workload(prog.text, prog.edb, prog.outputs, data, more_facts=more)
    if kind == "dag-r":
        wl.expected = {"TOTAL": gen.transitive_closure_size(data, ds["n"])}
        wl.expected_source = "bitset transitive-closure oracle"
    elif kind == "clique":
        wl.expected = gen.related_places_counts(data, more["place"])
        wl.expected_source = "connected-components oracle (SciPy)"
    wl.read_seconds = time.perf_counter() - t0
    return wl


def oracle_facts(case: Case, wl: Workload) -> Callable[[Any], int] | None:
    """All facts (explicit and derived) of a from-scratch materialisation of the given EDB
    facts (a table as ``Reasoner.explicit`` returns it), computed without the engine; None
    when the case has no oracle."""
    from benchmarks import generators as gen

    kind = case.dataset["kind"]
    if kind == "dag-r":
        n = case.dataset["n"]
        return lambda t: t.num_rows + gen.transitive_closure_size(_as_array(t), n)
    if kind == "clique":
        place = wl.more_facts["place"]
        return lambda t: (t.num_rows + len(place)
                          + gen.related_places_counts(_as_array(t), place)["TOTAL"])
    return None


def _as_array(table: Any) -> np.ndarray:
    """A numeric table as an ``(n, arity)`` int64 array."""
    cols = [np.asarray(c.to_numpy(zero_copy_only=False), dtype=np.int64) for c in table.columns]
    return np.stack(cols, axis=1) if cols else np.empty((table.num_rows, 0), dtype=np.int64)


def _read_lubm(path: Path, cache_dir: Path | None) -> Any:
    import pyarrow as pa
    import pyarrow.feather as feather

    cached = cache_dir / "lubm.arrow" if cache_dir else None
    if cached is not None and cached.exists():
        return feather.read_table(cached)
    if not path.exists():
        raise FileNotFoundError(f"{path} not found")
    from gpu_engine.host.ntriples import read_ntriples

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


def absent_facts(explicit: Any, k: int, seed: int = 0) -> Any:
    """``k`` facts of E's relation that are not in E (the no-op update deletes them): rows
    of E with the first column moved out of its range (numbers: above the maximum;
    symbols: a prefix no IRI has)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    k = min(k, explicit.num_rows)
    rng = np.random.default_rng(seed + 7)
    rows = explicit.take(np.sort(rng.choice(explicit.num_rows, size=k, replace=False)))
    col = rows.column(0)
    if pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
        top = pc.max(explicit.column(0)).as_py()
        new = pa.array(np.arange(k, dtype=np.int64) + int(top) + 1).cast(col.type)
    else:
        new = pa.array([f"absent:noop/{i}" for i in range(k)], type=col.type)
    return rows.set_column(0, rows.schema.field(0), new)


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


def _new_reasoner(wl: Workload, device: str, counting: Any, data: Any = None,
                  modules: str = "off") -> Any:
    from gpu_engine import Reasoner

    r = Reasoner(wl.text, device=device, counting=counting, modules=modules)
    r.add_facts(wl.edb, wl.data if data is None else data)
    for rel, rows in wl.more_facts.items():
        r.add_facts(rel, rows)
    return r


def _error(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"[:500]


Emit = Callable[[dict[str, Any]], None]


def _mark(emit: Emit, what: str) -> None:
    """Progress line for the parent: ``setup`` done, or an operation started (wall time)."""
    emit({"_mark": what, "at": time.time()})


def program_modules(r: Any) -> list[str]:
    """The TC/STC modules the reasoner's ``modules`` setting gives its program."""
    return sorted({m for m in r.engine.module_names().values() if m.startswith(("tc(", "stc("))})


def rule_summary(stats: Any) -> dict[str, Any]:
    """Paper 002 Table 1's program columns from MaterialisationStats: strata with rules,
    non-recursive and recursive rules, TC and STC modules, and rules per module kind."""
    rules = [ru for st in stats.strata for ru in st.rules]
    per: dict[str, int] = {}
    for ru in rules:
        per[ru.module] = per.get(ru.module, 0) + 1
    used = sorted(m for m in per if m.startswith(("tc(", "stc(")))
    return {"strata": len(stats.strata),
            "nonrecursive_rules": per.get("nonrecursive", 0),
            "recursive_rules": len(rules) - per.get("nonrecursive", 0),
            "tc_modules": sum(m.startswith("tc(") for m in used),
            "stc_modules": sum(m.startswith("stc(") for m in used),
            "modules": used, "rule_modules": per}


def materialise_job(case: Case, st: Settings, mode: str, emit: Emit,
                    cache_dir: Path | None = None) -> None:
    """Time ``materialise()`` in one mode (MATERIALISE_MODES) and check its counts."""
    wl = load_workload(case, cache_dir)
    counting, modules = MATERIALISE_MODES[mode]
    heavy = mode in case.heavy
    rec = {**_base(case, st), "algorithm": mode, "operation": "materialise",
           "counting": counting, "modules_setting": modules}
    if st.warmup and not heavy:
        try:
            _new_reasoner(wl, st.device, counting, modules=modules).materialise()
        except Exception:  # noqa: BLE001 - the timed runs below report the error
            pass
    _mark(emit, "setup")
    times: list[float] = []
    done: tuple[Any, Any] | None = None  # the last finished (reasoner, stats)
    t0 = time.perf_counter()
    try:
        _reset_peak()
        for _ in range(1 if heavy else max(1, st.mat_repeats)):
            r = _new_reasoner(wl, st.device, counting, modules=modules)
            _mark(emit, "materialise")
            t0 = time.perf_counter()
            stats = r.materialise()
            times.append(time.perf_counter() - t0)
            done = (r, stats)
            if sum(times) > st.repeat_budget:
                break
    except Interrupted:
        if done is None:
            emit({**rec, "status": "timeout", "seconds": time.perf_counter() - t0,
                  "lower_bound": True, "error": f"stopped after {st.timeout:g} s"})
            return
        rec["interrupted"] = f"timeout during repeat {len(times) + 1}"
    except Exception as exc:  # noqa: BLE001 - recorded
        emit({**rec, "status": "error", "error": _error(exc)})
        return
    assert done is not None
    r, stats = done
    sizes = r.relation_sizes()
    out_facts = int(sum(sizes[o] for o in wl.outputs))
    rec.update(status="ok", device=r.device, seconds=float(np.mean(times)),
               seconds_repeats=times, seconds_min=min(times), repeats=len(times),
               requested_repeats=1 if heavy else max(1, st.mat_repeats),
               engine_seconds=stats.seconds, facts=int(sum(sizes.values())),
               output_facts=out_facts, derivations=int(stats.derivations),
               input_facts=int(sizes[wl.edb]),
               explicit_facts=int(sum(r.explicit(n).num_rows
                                      for n in (wl.edb, *wl.more_facts))),
               read_seconds=wl.read_seconds, counting_mode=_counting_mode(r),
               **rule_summary(stats), **_memory(r))
    if wl.expected is not None:
        rec["expected_facts"] = wl.expected["TOTAL"]
        rec["expected_source"] = wl.expected_source
        rec["count_ok"] = out_facts == wl.expected["TOTAL"]
        bad = {o: [int(sizes[o]), wl.expected.get(o)] for o in wl.outputs
               if o in wl.expected and wl.expected[o] != sizes[o]}
        if bad:
            rec["count_mismatches"] = bad
    emit(rec)


def reference_job(case: Case, st: Settings, cache_dir: Path | None = None) -> dict[str, Any]:
    """The deletions' from-scratch fact counts (an oracle where the case has one, else
    ``materialise()`` with ``modules="off"``) and what the program is like."""
    wl = load_workload(case, cache_dir)
    r = _new_reasoner(wl, st.device, False, modules="auto")
    info: dict[str, Any] = {"read_seconds": wl.read_seconds,
                            "recursive": any(s.recursive for s in r.engine.strata),
                            "modules": program_modules(r)}
    explicit = r.explicit(wl.edb)
    del r
    small, large = deletion_sets(explicit.num_rows, case, st, explicit)
    count = oracle_facts(case, wl)
    info["reference"] = "oracle" if count is not None else "materialise(modules='off')"
    if count is None:
        def count(t: Any) -> int:
            return _facts_from_scratch(wl, st.device, t)
    t0 = time.perf_counter()
    info["full"] = count(explicit)
    info["small"] = [count(_without(explicit, s)) for s in small]
    info["large"] = count(_without(explicit, large)) if st.large else None
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


def affected(stats: dict[str, Any], before: int, after: int) -> int:
    """Facts the update affected: ``UpdateStats.affected`` where the engine reports it (facts
    whose membership or counters changed), else the membership change ``|after - before|``
    (exact for deletion-only / insertion-only updates of programs without negation)."""
    if stats.get("affected") is not None:
        return int(stats["affected"])
    return abs(int(after) - int(before))


def _summarise(rec: dict[str, Any], times: list[float], stats: list[dict[str, Any]],
               facts: list[int], refs: list[int],
               touched: list[int] | None = None) -> dict[str, Any]:
    rec["seconds"] = float(np.mean(times)) if times else None
    rec["seconds_repeats"] = times
    rec["repeats"] = len(times)
    if times:
        q25, med, q75 = (float(x) for x in np.percentile(times, [25, 50, 75]))
        rec.update(seconds_median=med, seconds_min=float(min(times)),
                   seconds_max=float(max(times)), seconds_q25=q25, seconds_q75=q75)
    rec["engine_seconds"] = (float(np.mean([s.get("seconds", 0.0) for s in stats]))
                             if stats else None)
    for f in STAT_FIELDS:
        vals = [s.get(f) for s in stats if s.get(f) is not None]
        mean = float(np.mean(vals)) if vals else None
        rec[f] = int(mean) if mean is not None and mean.is_integer() else mean
    if stats and stats[-1].get("note"):
        rec["note"] = stats[-1]["note"]
    rec["modules"] = sorted({m for s in stats for m in s.get("modules") or ()})
    rec["facts"] = facts[-1] if facts else None
    rec["facts_repeats"] = facts
    rec["expected_facts"] = refs[-1] if refs else None
    if len(refs) > 1:
        rec["expected_facts_repeats"] = refs
    rec["matches_remat"] = bool(facts) and all(a == b for a, b in zip(facts, refs))
    if len(stats) > 1:
        rec["stats_repeats"] = stats
    if touched:
        rec["affected_facts"] = float(np.mean(touched))
        rec["affected_repeats"] = touched
        rec["affected_source"] = ("UpdateStats.affected" if stats and "affected" in stats[0]
                                  else "membership change |facts after - facts before|")
        total = sum(touched)
        rec["seconds_per_affected_fact"] = (float(sum(times[:len(touched)])) / total
                                            if total else None)
    return rec


def run_algorithm(case: Case, st: Settings, algorithm: str, refs: dict[str, Any],
                  emit: Emit, cache_dir: Path | None = None, part: str = "all") -> None:
    """Materialise with counters, then the small deletions/insertions (``part`` "small"),
    the large deletion ("large") or both ("all")."""
    wl = load_workload(case, cache_dir)
    engine_alg, modules = update_algorithm(algorithm)
    heavy = algorithm in case.heavy
    start_modules = setup_modules(case, algorithm)

    def fresh() -> tuple[Any, _Updater]:
        r = _new_reasoner(wl, st.device, True, modules=start_modules)
        r.materialise()
        if start_modules != modules:
            r.engine.set_modules(modules)
        return r, _Updater(r, wl.edb, engine_alg)

    base = {**_base(case, st), "algorithm": algorithm, "update_algorithm": engine_alg,
            "modules_setting": modules}
    r, upd = fresh()
    plan = program_modules(r) if modules == "auto" else []
    explicit = r.explicit(wl.edb)
    small, large = deletion_sets(explicit.num_rows, case, st, explicit)
    full = refs["full"]
    if st.warmup and not heavy:
        # Untimed delete + reinsert of a few facts that are not a timed sample (JIT, caches).
        try:
            warm = deletion_sets(explicit.num_rows, case, st, warmup=True)[0][0]
            batch = explicit.take(warm[:WARMUP_FACTS])
            upd(delete=batch)
            upd(insert=batch)
        except Exception:  # noqa: BLE001 - the timed runs below report the error
            pass
        if _facts(r) != full:
            r, upd = fresh()
    _mark(emit, "setup")

    current: dict[str, Any] = {"op": None, "t0": 0.0}

    def timed(op: str, **kwargs: Any) -> tuple[float, Any]:
        _mark(emit, op)
        current.update(op=op, t0=time.perf_counter())
        out = upd(**kwargs)
        current["op"] = None
        return out

    def stopped(rec: dict[str, Any], op: str, why: str) -> dict[str, Any]:
        """A timed-out operation with no finished repeat: its seconds are a lower bound."""
        if current["op"] == op:
            return {**rec, "status": "timeout", "seconds": time.perf_counter() - current["t0"],
                    "lower_bound": True, "error": why}
        return {**rec, "status": "timeout", "error": f"not run: {why}"}

    def used(rec: dict[str, Any]) -> None:
        # UpdateStats.modules names the modules DRed^c-MOD used; a rematerialisation with
        # modules="auto" uses the program's modules (Mat-Mod)
        if not rec.get("modules") and algorithm in REMATERIALISING:
            rec["modules"] = plan

    recs = {op: {**base, "operation": op, "status": "ok", "device": r.device} for op in ALL_OPERATIONS}
    acc: dict[str, tuple[list[float], list[dict], list[int], list[int], list[int]]] = {
        op: ([], [], [], [], []) for op in ALL_OPERATIONS}
    peaks = {op: 0 for op in ALL_OPERATIONS}
    failed: str | None = None
    interrupted: str | None = None
    rebuilt = 0
    started = time.perf_counter()
    op = "small_delete"
    if part == "large":
        small = []
    noop_ops = ("noop_delete",) if st.noop and part != "large" else ()
    try:
        for k, idx in enumerate(small):
            batch = explicit.take(idx)
            for op, kwargs, ref in (("small_delete", {"delete": batch}, refs["small"][k]),
                                    ("small_insert", {"insert": batch}, full)):
                _reset_peak()
                before = _facts(r)
                try:
                    secs, stats = timed(op, **kwargs)
                except Exception as exc:  # noqa: BLE001 - unsupported algorithm: record, go on
                    failed = _error(exc)
                    break
                peaks[op] = max(peaks[op], _peak_rss())
                times, sts, facts, rfs, touched = acc[op]
                times.append(secs)
                sts.append(_stats_dict(stats))
                facts.append(_facts(r))
                rfs.append(ref)
                touched.append(affected(sts[-1], before, facts[-1]))
            if failed:
                break
            if acc["small_insert"][2][-1] != full:
                # The algorithm got it wrong: start the next repeat from a correct state.
                r, upd = fresh()
                rebuilt += 1
            if time.perf_counter() - started > st.repeat_budget:
                break
        # the no-op update: delete facts that are not in E (as many as a small deletion)
        started = time.perf_counter()
        for k in range(len(small) if noop_ops and not failed else 0):
            op = "noop_delete"
            batch = absent_facts(explicit, st.small, st.seed + k)
            _reset_peak()
            before = _facts(r)
            try:
                secs, stats = timed(op, delete=batch)
            except Exception as exc:  # noqa: BLE001 - recorded
                failed = _error(exc)
                break
            peaks[op] = max(peaks[op], _peak_rss())
            times, sts, facts, rfs, touched = acc[op]
            times.append(secs)
            sts.append(_stats_dict(stats))
            facts.append(_facts(r))
            rfs.append(full)
            touched.append(affected(sts[-1], before, facts[-1]))
            if time.perf_counter() - started > st.repeat_budget:
                break
    except Interrupted:
        interrupted = f"timeout during {op} (repeat {len(acc[op][0]) + 1})"
    for op in ("small_delete", "small_insert", *noop_ops) if part != "large" else ():
        rec = recs[op]
        rec["batch_facts"] = int(min(st.small, explicit.num_rows))
        rec["requested_repeats"] = st.repeats
        if failed and not acc[op][0]:
            emit({**rec, "status": "error", "error": failed})
            continue
        if interrupted and not acc[op][0]:
            emit(stopped(rec, op, interrupted))
            continue
        if interrupted:
            rec["interrupted"] = interrupted
        _summarise(rec, *acc[op])
        used(rec)
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
        before = _facts(r)
        secs, stats = timed("large_delete", delete=explicit.take(large))
        sd = _stats_dict(stats)
        after = _facts(r)
        _summarise(rec, [secs], [sd], [after], [refs["large"]], [affected(sd, before, after)])
        used(rec)
        rec.update(_memory(r))
    except Interrupted:
        rec = stopped(rec, "large_delete", "timeout during large_delete")
    except Exception as exc:  # noqa: BLE001
        rec.update(status="error", error=_error(exc))
    emit(rec)


# --------------------------------------------------------------------------- processes


class Interrupted(BaseException):
    """Raised in a child job by SIGTERM (the parent's timeout), so it can report what it did."""


def _on_sigterm(signum: int, frame: Any) -> None:
    raise Interrupted()


def _run_spec(spec: dict[str, Any], st: Settings, emit: Emit) -> None:
    """Run one job (``prepare`` is the reference job) and emit its lines."""
    case = Case(**spec["case"])
    cache = Path(spec["cache_dir"]) if spec.get("cache_dir") else None
    if spec["job"] == "reference":
        emit({"_info": reference_job(case, st, cache)})
    elif spec["job"] == "materialise":
        materialise_job(case, st, spec["mode"], emit, cache)
    else:
        run_algorithm(case, st, spec["algorithm"], spec["refs"], emit, cache,
                      spec.get("part", "all"))


def _child_main(spec_json: str, out_path: str) -> int:
    spec = json.loads(spec_json)
    st = Settings(**spec["settings"])
    signal.signal(signal.SIGTERM, _on_sigterm)
    with open(out_path, "a", encoding="utf-8") as fh:
        def emit(rec: dict[str, Any]) -> None:
            fh.write(json.dumps(rec) + "\n")
            fh.flush()

        try:
            _run_spec(spec, st, emit)
        except Interrupted:
            emit({"_error": f"timeout: no result within {st.timeout:g} s"})
        except Exception as exc:  # noqa: BLE001 - reported by the parent
            import traceback

            emit({"_error": _error(exc), "_traceback": traceback.format_exc()[-2000:]})
    return 0


@dataclass
class JobResult:
    """What a job reported: its records, its ``_info``, why it stopped early (if it did),
    the operation it had started last (with the wall time) and when it was stopped."""

    records: list[dict[str, Any]] = field(default_factory=list)
    info: dict[str, Any] | None = None
    why: str | None = None
    last_started: tuple[str, float] | None = None
    stopped_at: float | None = None

    def missing(self, rec: dict[str, Any], op: str) -> dict[str, Any]:
        """The record of an operation the job did not report (timeout or error)."""
        why = self.why or "no result"
        if not why.startswith("timeout"):
            return {**rec, "status": "error", "error": why}
        if self.last_started and self.last_started[0] == op and self.stopped_at:
            return {**rec, "status": "timeout", "lower_bound": True, "error": why,
                    "seconds": self.stopped_at - self.last_started[1]}
        return {**rec, "status": "timeout", "error": f"not run: {why}"}


def _memory_limit(st: Settings) -> int | None:
    """Address-space limit of a child job in bytes: ``--memory-limit``, or by default 3/4 of
    the physical memory, on the CPU only (CUDA reserves far more address space)."""
    if st.device != "cpu" or st.memory_limit == 0:
        return None
    if st.memory_limit:
        return int(st.memory_limit)
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") * 3 // 4)
    except (ValueError, OSError, AttributeError):
        return None


def _job(spec: dict[str, Any], st: Settings) -> JobResult:
    """Run one job in a child process (or here, with ``--in-process``).

    The child gets ``st.timeout`` seconds for its set-up and, once it reports the set-up
    done, ``st.timeout`` more for its timed part; then SIGTERM (it reports what it finished)
    and, ``KILL_GRACE`` seconds later, SIGKILL."""
    lines: list[dict[str, Any]] = []
    res = JobResult()
    if st.in_process:
        try:
            _run_spec(spec, st, lines.append)
        except Exception as exc:  # noqa: BLE001
            res.why = _error(exc)
    else:
        with tempfile.TemporaryDirectory(prefix="incr-") as tmp:
            out_path = Path(tmp) / "lines.jsonl"
            log_path = Path(tmp) / "stderr.txt"
            res.why, res.stopped_at = _supervise(spec, st, out_path, log_path)
            if out_path.exists():
                for line in out_path.read_text(encoding="utf-8").splitlines():
                    if line.strip():
                        lines.append(json.loads(line))
    for x in lines:
        if "_info" in x:
            res.info = x["_info"]
        elif "_mark" in x:
            if x["_mark"] != "setup":
                res.last_started = (x["_mark"], float(x["at"]))
        elif "_error" in x:
            res.why = res.why or x["_error"]
        else:
            res.records.append(x)
    return res


def _supervise(spec: dict[str, Any], st: Settings, out_path: Path,
               log_path: Path) -> tuple[str | None, float | None]:
    """Start the child and wait for it (deadlines as in :func:`_job`); why it stopped early
    and when it was stopped, if it was."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    cmd = [sys.executable, "-m", "benchmarks.incremental", "--child", json.dumps(spec),
           str(out_path)]
    limit = _memory_limit(st)

    def set_limit() -> None:
        if limit:
            resource.setrlimit(resource.RLIMIT_AS, (limit, limit))

    with log_path.open("w", encoding="utf-8") as log:
        proc = subprocess.Popen(cmd, cwd=REPO_ROOT, env=env, stdout=subprocess.DEVNULL,
                                stderr=log, preexec_fn=set_limit)
        deadline = time.monotonic() + st.timeout
        setup_seen = False
        while True:
            try:
                proc.wait(timeout=max(0.05, min(2.0, deadline - time.monotonic())))
                break
            except subprocess.TimeoutExpired:
                pass
            if not setup_seen and out_path.exists() and '"_mark": "setup"' in \
                    out_path.read_text(encoding="utf-8"):
                setup_seen = True
                deadline = time.monotonic() + st.timeout
            if time.monotonic() >= deadline:
                stopped_at = time.time()
                proc.terminate()  # the child reports what it finished (see Interrupted)
                try:
                    proc.wait(timeout=KILL_GRACE)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
                phase = "timed part" if setup_seen else "set-up"
                return f"timeout: no result within {st.timeout:g} s ({phase})", stopped_at
    if proc.returncode != 0:
        err = log_path.read_text(encoding="utf-8", errors="replace").strip()[-600:]
        return f"child exited {proc.returncode}: {err}", None
    return None, None


def measured_operations(st: Settings) -> tuple[str, ...]:
    """The update operations a run measures."""
    return (("small_delete", "small_insert") + (("large_delete",) if st.large else ())
            + (("noop_delete",) if st.noop else ()))


def run_case(case: Case, st: Settings, emit: Emit, cache_dir: Path | None) -> None:
    """Materialise in every mode, compute the reference counts, then run every algorithm
    on the case; emit the records."""
    base = _base(case, st)
    measured = measured_operations(st)
    spec: dict[str, Any] = {"case": asdict(case), "settings": asdict(st),
                            "cache_dir": str(cache_dir) if cache_dir else None}
    _log(f"{case.name}: reference counts")
    ref = _job({**spec, "job": "reference"}, st)
    info = ref.info or {}
    if "reference_seconds" in info:
        _log(f"{case.name}: reference counts ({info['reference']}) in "
             f"{info['reference_seconds']:.1f}s; modules: {', '.join(info['modules']) or 'none'}")
    plain_mat: dict[str, Any] = {}  # the Remat line: its timeout also stops DRed^c's set-up
    remat_times: dict[str, float] = {}  # operation -> Remat's median seconds in this run
    for mode in st.mat_modes:
        rec = {**base, "algorithm": mode, "operation": "materialise",
               "counting": MATERIALISE_MODES[mode][0],
               "modules_setting": MATERIALISE_MODES[mode][1]}
        if MATERIALISE_MODES[mode][1] == "auto" and info and not info.get("modules"):
            emit({**rec, "status": "skipped", "reason": "no TC/STC module in this program"})
            continue
        _log(f"{case.name}: materialise ({mode})")
        t0 = time.perf_counter()
        res = _job({**spec, "job": "materialise", "mode": mode}, st)
        lines = res.records or [res.missing(rec, "materialise")]
        for x in lines:
            emit(x)
        if mode == "remat":
            plain_mat = lines[-1]
        _log(f"{case.name}: materialise ({mode}) done in {time.perf_counter() - t0:.1f}s"
             + (f" ({res.why[:120]})" if res.why else ""))
    if "full" not in info or "small" not in info:
        reason = ref.why or "reference counts failed"
        for alg in _algorithms(case, st):
            for op in measured:
                emit({**base, "algorithm": alg, "operation": op, "status": "error",
                      "error": f"not run: {reason}"})
        return
    for alg in _algorithms(case, st):
        skip = None
        if alg == "counting" and info.get("recursive"):
            skip = "Counting is not correct on recursive programs"
        elif alg in MODULAR and not info.get("modules"):
            skip = f"no TC/STC module in this program ({alg} would be {MODULAR[alg]})"
        if skip:
            for op in measured:
                emit({**base, "algorithm": alg, "operation": op, "status": "skipped",
                      "reason": skip})
            continue
        engine_alg, modules = update_algorithm(alg)
        if setup_modules(case, alg) == "off" and _lower_bound(plain_mat):
            # its set-up is a plain materialisation with counters: it cannot finish either
            why = (f"not run: its set-up materialises with modules=\"off\" and counters, "
                   f"and plain Mat did not finish within {st.timeout:g} s")
            _log(f"{case.name}: {alg} {why}")
            for op in measured:
                emit({**base, "algorithm": alg, "operation": op, "status": "timeout",
                      "update_algorithm": engine_alg, "modules_setting": modules,
                      "error": why})
            continue
        parts = [("small", ("small_delete", "small_insert")
                  + (("noop_delete",) if st.noop else ()))]
        if st.large:
            parts.append(("large", ("large_delete",)))
        for part, ops in parts:
            _log(f"{case.name}: {alg} ({part})")
            t0 = time.perf_counter()
            res = _job({**spec, "job": "algorithm", "algorithm": alg, "refs": info,
                        "part": part}, st)
            done = set()
            for x in res.records:
                _ratio_to_remat(x, remat_times)
                emit(x)
                done.add(x.get("operation"))
            for op in ops:
                if op not in done:
                    emit(res.missing({**base, "algorithm": alg, "operation": op,
                                      "update_algorithm": engine_alg,
                                      "modules_setting": modules}, op))
            _log(f"{case.name}: {alg} ({part}) done in {time.perf_counter() - t0:.1f}s"
                 + (f" ({res.why[:120]})" if res.why else ""))


def _ratio_to_remat(rec: dict[str, Any], remat: dict[str, float]) -> None:
    """Record Remat's median time (the ``remat`` lines come first) and add to every other
    algorithm's line ``ratio_to_remat`` = its median / Remat's, from the same run."""
    secs = rec.get("seconds_median")
    if rec.get("status") != "ok" or secs is None:
        return
    op = rec.get("operation")
    if rec.get("algorithm") == "remat":
        remat[op] = secs
    elif remat.get(op):
        rec["ratio_to_remat"] = secs / remat[op]


def _lower_bound(rec: dict[str, Any]) -> bool:
    return rec.get("status") == "timeout" and rec.get("seconds") is not None


def _algorithms(case: Case, st: Settings) -> list[str]:
    return [a for a in st.algorithms if case.algorithms is None or a in case.algorithms]


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
    ap.add_argument("--algorithms", default=None,
                    help="comma-separated subset of " + ",".join(ALGORITHMS)
                         + " (default: all; suite small: " + ",".join(SMALL_ALGORITHMS)
                         + "; a case may run fewer)")
    ap.add_argument("--mat-modes", default=None,
                    help="materialisation modes, comma-separated subset of "
                         + ",".join(MATERIALISE_MODES) + " (default: all; suite modules: "
                         + ",".join(SUITE_MAT_MODES["modules"]) + ")")
    ap.add_argument("--only", action="append", default=[],
                    help="run only cases whose 'benchmark@size' contains this (repeatable)")
    ap.add_argument("--out", type=Path, help="append the JSON lines to this file too")
    ap.add_argument("--small", type=int, default=1000, help="facts per small deletion")
    ap.add_argument("--repeats", type=int, default=10, help="small deletions per algorithm")
    ap.add_argument("--large-fraction", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--repeat-budget", type=float, default=None,
                    help="stop repeating small deletions / materialisations after this many "
                         "seconds (default: quick 30, full and modules 300)")
    ap.add_argument("--mat-repeats", type=int, default=3,
                    help="timed materialisations per mode")
    ap.add_argument("--no-warmup", action="store_true",
                    help="no untimed materialisation / small update before the timed ones")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per child job for its timed part, and again for its "
                         "set-up (default: quick 150, full and modules 1800)")
    ap.add_argument("--memory-limit", type=float, default=None,
                    help="GiB of address space per child job on the CPU (default: 3/4 of "
                         "the physical memory; 0: no limit)")
    ap.add_argument("--in-process", action="store_true", help="run the jobs in this process")
    args = ap.parse_args(argv)
    algs = (tuple(a.strip() for a in args.algorithms.split(",") if a.strip())
            if args.algorithms is not None else SUITE_ALGORITHMS.get(args.suite, ALGORITHMS))
    unknown = [a for a in algs if a not in ALGORITHMS]
    if unknown:
        ap.error(f"unknown algorithms: {unknown}")
    modes = (tuple(m.strip() for m in args.mat_modes.split(",") if m.strip())
             if args.mat_modes is not None
             else SUITE_MAT_MODES.get(args.suite, tuple(MATERIALISE_MODES)))
    unknown = [m for m in modes if m not in MATERIALISE_MODES]
    if unknown:
        ap.error(f"unknown materialisation modes: {unknown}")
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
    memory = None if args.memory_limit is None else args.memory_limit * 2**30
    st = Settings(device=args.device, algorithms=algs, mat_modes=modes, small=args.small,
                  repeats=args.repeats, large_fraction=args.large_fraction, seed=args.seed,
                  repeat_budget=budget, mat_repeats=args.mat_repeats,
                  warmup=not args.no_warmup, timeout=timeout,
                  in_process=args.in_process, memory_limit=memory,
                  large=args.suite != "small", noop=args.suite == "small")
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

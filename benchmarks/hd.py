"""Hypertree decompositions (paper 003 §5): standard, decomposed and combined side by side.

    python -m benchmarks.hd [--only pc|lubm|exp] [--pc 300,1000] [--lubm 10] [--exp 300x300]
                            [--modes off,auto,auto-nokeep] [--repeat N] [--device cpu]
                            [--timeout S] [--out FILE.jsonl]

* ``pc``: the paper's running example scaled (n = k): ``PC(x,y) :- CW(x,z1), CA(x,z2),
  PC(z1,y), PC(z2,y)`` with CW(a_i, b_ik+j), CA(a_i, c_ik+j), PC(b.., d_j), PC(c.., d_j).
  Every order of two-at-a-time joins builds min(n·k², 2n²k) rows; the decomposition
  {CW, PC}{CA, PC} needs n·k.  Materialisation only.
* ``lubm``: LUBM(univ) with LUBM_L (``L``) and LUBM_L plus the 16 cyclic rules of
  :data:`CYCLIC_RULES` (``L+C``, modelled on the paper's haveSameAdvisor four-cycle):
  materialisation (with the counters updates need), 1,000 random triples deleted then
  reinserted, 25 % of the triples deleted (DRed^c, or DRed^c-MOD where paper-002 modules
  apply: LUBM_L's transitive subOrganizationOf).
* ``exp``: paper 003's Exp reconstructed (:data:`EXP_PROGRAM`, brief §2.3 P4): expression
  trees × assignments, three recursive nine-atom cyclic value rules; materialisation and
  the same updates as ``lubm`` on the leaf values.

Modes: ``off`` (standard: two relations joined at a time), ``all`` (decomposed: every rule
with two or more atoms), ``auto`` (combined: cyclic rules only); ``-nokeep`` / ``-keep``
after a mode: bags recomputed per evaluation / kept in materialisation too
(``GPU_ENGINE_HD_KEEP``; by default they are kept in updates only).
Each (case, mode) runs in its own
child process (``peak_rss_bytes`` is its own); ``peak_rows`` is the largest binding
table or bag any rule evaluation built; ``<op>_cyclic_seconds`` the seconds spent
evaluating the program's cyclic rules (``RuleEvaluator.rule_seconds``, whatever the mode:
their own share of the operation, ratio ``<op>_cyclic_off_over_<mode>``).  One JSON line per measurement; the last line of a
case holds the ratios ``off / mode`` of every operation.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

REPO_ROOT = Path(__file__).resolve().parents[1]
LUBM_DIR = REPO_ROOT.parent / "shared" / "bench-data" / "lubm"

PC_PROGRAM = """
.decl CW(x:number, y:number)
.decl CA(x:number, y:number)
.decl PC(x:number, y:number)
.output PC
PC(x,y) :- CW(x,z1), CA(x,z2), PC(z1,y), PC(z2,y).
"""

# 16 cyclic rules over LUBM_L's relations (RP5 hasAlumnus, RP45 advisor, RP47
# publicationAuthor, RP39 teacherOf, RP68 takesCourse, RP32 teachingAssistantOf, RP37
# memberOf, RP19 worksFor, RP53 doctoralDegreeFrom, RP56 undergraduateDegreeFrom, RP1
# mastersDegreeFrom, RP44 subOrganizationOf, RP20 headOf, RP12 member)
CYCLIC_RULES = """
.decl C1(a:symbol, b:symbol)
C1(p1, p2) :- RP5(o, p1), RP45(p1, ad), RP5(o, p2), RP45(p2, ad).
.decl C2(a:symbol, b:symbol)
C2(s, a) :- RP45(s, a), RP47(p, a), RP47(p, s).
.decl C3(a:symbol, b:symbol)
C3(s, p) :- RP45(s, p), RP39(p, c), RP68(s, c).
.decl C4(a:symbol)
C4(t) :- RP32(t, c), RP68(s, c), RP37(t, d), RP37(s, d).
.decl C5(a:symbol, b:symbol)
C5(p1, p2) :- RP19(p1, d), RP19(p2, d), RP53(p1, u), RP53(p2, u).
.decl C6(a:symbol, b:symbol)
C6(s, u) :- RP37(s, d), RP44(d, u), RP56(s, u).
.decl C7(a:symbol, b:symbol)
C7(p, s) :- RP20(p, d), RP19(q, d), RP45(s, q), RP37(s, d).
.decl C8(a:symbol)
C8(a1) :- RP47(p, a1), RP47(p, a2), RP37(a1, d), RP37(a2, d), a1 != a2.
.decl C9(a:symbol, b:symbol)
C9(s, p) :- RP68(s, c), RP39(p, c), RP37(s, d), RP19(p, d).
.decl C10(a:symbol, b:symbol)
C10(s, p) :- RP45(s, p), RP39(p, c), RP68(s, c), RP37(s, d), RP19(p, d).
.decl C11(a:symbol, b:symbol)
C11(x, y) :- RP45(x, z1), RP19(z1, y), RP37(x, z2), RP44(z2, y).
.decl C12(a:symbol, b:symbol)
C12(s, p) :- RP56(s, u), RP1(p, u), RP45(s, p).
.decl C13(a:symbol, b:symbol)
C13(s, p) :- RP53(p, u), RP56(s, u), RP45(s, p).
.decl C14(a:symbol, b:symbol)
C14(s1, s2) :- RP45(s1, a), RP45(s2, a), RP47(p, s1), RP47(p, s2).
.decl C15(a:symbol, b:symbol)
C15(d, s) :- RP12(d, s), RP37(t, d), RP32(t, c), RP68(s, c).
.decl C16(a:symbol, b:symbol)
C16(x, y) :- RP68(x, c), RP68(y, c), RP45(x, a), RP45(y, a), x != y.
"""


def pc_facts(n: int, k: int) -> dict[str, np.ndarray]:
    """Paper 003 §3 with ids: a_i = i, b_m = 10⁷ + m, c_m = 2·10⁷ + m, d_j = 3·10⁷ + j."""
    i = np.repeat(np.arange(n, dtype=np.int64), k)
    j = np.tile(np.arange(1, k + 1, dtype=np.int64), n)
    m = i * k + j
    b, c, d = 10**7 + m, 2 * 10**7 + m, 3 * 10**7 + j
    cw = np.concatenate([np.stack([i, b], 1), [[n, 2]]])
    ca = np.concatenate([np.stack([i, c], 1), [[n, 3]]])
    pc = np.concatenate([np.stack([b, d], 1), np.stack([c, d], 1)])
    return {"CW": cw, "CA": ca, "PC": pc}


def _mode(spec: dict[str, Any]) -> str:
    """``auto-nokeep`` / ``auto-keep``: ``auto`` with bags never / always kept
    (``GPU_ENGINE_HD_KEEP`` 0 / 1; plain ``auto``: kept in updates only)."""
    return str(spec["mode"]).split("-")[0]


def _peak_rss() -> int:
    """Peak resident memory since the last :func:`_reset_peak` (VmHWM; else since start)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _reset_peak() -> None:
    """Start the peak-memory count afresh (after the warm-up), where Linux allows it."""
    import gc

    from gpu_engine.kernels import cpu_memory

    gc.collect()
    cpu_memory.release_freed_memory()  # the warm-up's heap goes back to the system
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


def _materialise(r: Any) -> tuple[float, Any, float]:
    """Seconds, statistics and the cyclic rules' own seconds of a materialisation."""
    from gpu_engine.decomposition import is_cyclic

    ev = r.engine.evaluator
    ev.peak_rows = 0
    ev.rule_seconds = {}
    t0 = time.perf_counter()
    stats = r.materialise()
    secs = time.perf_counter() - t0
    cyclic = {x.head.relation for x in r.engine.rules if is_cyclic(x)}
    share = sum(v for k, v in ev.rule_seconds.items() if k in cyclic)
    ev.rule_seconds = None
    return secs, stats, share


def _warm_up(device: str) -> None:
    """Load the kernels a large run uses (Numba's parallel kernels start at 2^21 rows):
    a decomposed PC materialisation at n = k = 1,500, untimed, in every child alike."""
    from gpu_engine import Reasoner

    r = Reasoner(PC_PROGRAM, device=device, decompose="auto")
    for name, rows in pc_facts(1500, 1500).items():
        r.add_facts(name, rows)
    r.materialise()
    del r
    _reset_peak()


def pc_job(spec: dict[str, Any]) -> dict[str, Any]:
    from gpu_engine import Reasoner

    n, k = spec["n"], spec["k"]
    if spec.get("warm", True):
        _warm_up(spec["device"])
    r = Reasoner(PC_PROGRAM, device=spec["device"], decompose=_mode(spec))
    for name, rows in pc_facts(n, k).items():
        r.add_facts(name, rows)
    secs, stats, _ = _materialise(r)
    return {"materialise_seconds": secs, "facts": r.engine.size("PC"),
            "derivations": stats.derivations, "peak_rows": r.engine.evaluator.peak_rows,
            "peak_rows_over_nk": r.engine.evaluator.peak_rows / (n * k),
            "peak_rss_bytes": _peak_rss()}


def lubm_job(spec: dict[str, Any]) -> dict[str, Any]:
    import pyarrow as pa
    from gpu_engine.host.ntriples import read_ntriples

    from gpu_engine import Reasoner

    text = (REPO_ROOT / "examples" / "lubm" / "LUBM_L.dl").read_text()
    if spec["rules"] == "L+C":
        text += CYCLIC_RULES + "".join(f".output C{i}\n" for i in range(1, 17))
    if spec.get("warm", True):
        _warm_up(spec["device"])
    t0 = time.perf_counter()
    data: pa.Table = read_ntriples(LUBM_DIR / f"lubm{spec['univ']}.nt.gz")
    out: dict[str, Any] = {"read_seconds": time.perf_counter() - t0, "triples": data.num_rows}
    r = Reasoner(text, device=spec["device"], counting=True, decompose=_mode(spec))
    r.add_facts("TE", data)
    secs, stats, share = _materialise(r)
    names = [n for n in r.engine.program.relations if not n.startswith("@")]
    facts = lambda: sum(r.engine.size(n) for n in names)  # noqa: E731
    out.update(materialise_seconds=secs, materialise_cyclic_seconds=share, facts=facts(), derivations=stats.derivations,
               peak_rows=r.engine.evaluator.peak_rows,
               decomposed=sorted({rs.module for s in stats.strata for rs in s.rules
                                  if "hd " in rs.module}))
    cyc = {n: r.engine.size(n) for n in names if n.startswith("C")}
    if cyc:
        out["cyclic_facts"] = cyc
    _updates(r, out, facts, "TE", lambda rows: data.take(rows), data.num_rows)
    return out


def _updates(r: Any, out: dict[str, Any], facts: Any, name: str, take: Any, n: int) -> None:
    """1,000 random explicit facts deleted then inserted again, then 25 % deleted."""
    from gpu_engine.decomposition import is_cyclic

    cyclic = {x.head.relation for x in r.engine.rules if is_cyclic(x)}
    ev = r.engine.evaluator

    def share(op: str) -> None:  # the cyclic rules' own seconds (whatever their mode)
        out[f"{op}_cyclic_seconds"] = sum(v for k, v in ev.rule_seconds.items() if k in cyclic)
        ev.rule_seconds = None

    rng = np.random.default_rng(0)
    small = take(rng.choice(n, 1000, replace=False))
    for op, kw in (("small_delete", {"delete": {name: small}}),
                   ("small_insert", {"insert": {name: small}})):
        r.engine.evaluator.peak_rows = 0
        ev.rule_seconds = {}
        t0 = time.perf_counter()
        st = r.update(**kw)
        out[f"{op}_seconds"] = time.perf_counter() - t0
        share(op)
        out[f"{op}_facts"] = facts()
        out[f"{op}_algorithm"] = st.algorithm + ("-mod" if st.modules else "")
    large = take(rng.choice(n, n // 4, replace=False))
    r.engine.evaluator.peak_rows = 0
    ev.rule_seconds = {}
    t0 = time.perf_counter()
    r.update(delete={name: large})
    out["large_delete_seconds"] = time.perf_counter() - t0
    share("large_delete")
    out["large_delete_peak_rows"] = r.engine.evaluator.peak_rows
    out["large_delete_facts"] = facts()
    out["peak_rss_bytes"] = _peak_rss()


# paper 003's Exp, reconstructed (brief §2.3 P4): full binary expression trees of depth 5
# (node 1 the root, node m's children 2m and 2m+1; 31 operators, 32 leaves), one value
# per leaf and assignment s; three recursive value rules (+, −, ×) of nine body atoms
# (the operator, the two children, their values, typing atoms), cyclic through
# n - l - s - r - n.  Values are kept below 10,007 (the product is taken modulo it).
EXP_PROGRAM = """
.decl op(n:number, o:number)
.decl left(n:number, l:number)
.decl right(n:number, r:number)
.decl inner(n:number)
.decl node(n:number)
.decl asg(s:number)
.decl val(n:number, s:number, v:number)
.output val
val(n, s, v1 + v2) :- op(n, 0), inner(n), left(n, l), node(l), val(l, s, v1),
    right(n, r), node(r), val(r, s, v2), asg(s).
val(n, s, v1 - v2) :- op(n, 1), inner(n), left(n, l), node(l), val(l, s, v1),
    right(n, r), node(r), val(r, s, v2), asg(s).
val(n, s, (v1 * v2) % 10007) :- op(n, 2), inner(n), left(n, l), node(l), val(l, s, v1),
    right(n, r), node(r), val(r, s, v2), asg(s).
"""


def exp_facts(exprs: int, assigns: int, depth: int = 5) -> dict[str, np.ndarray]:
    """``exprs`` trees × ``assigns`` assignments of leaf values in 0..9 (seed 0)."""
    rng = np.random.default_rng(0)
    size = 1 << (depth + 1)  # node ids e·size + m, m = 1 .. 2^(depth+1) − 1
    e = np.arange(exprs, dtype=np.int64)[:, None] * size
    inner = (e + np.arange(1, 1 << depth)[None, :]).ravel()
    leaves = (e + np.arange(1 << depth, size)[None, :]).ravel()
    loc = inner % size
    s = np.arange(assigns, dtype=np.int64)
    val = np.stack([np.repeat(leaves, assigns), np.tile(s, len(leaves)),
                    rng.integers(0, 10, len(leaves) * assigns)], 1)
    return {"op": np.stack([inner, rng.integers(0, 3, len(inner))], 1),
            "left": np.stack([inner, inner - loc + 2 * loc], 1),
            "right": np.stack([inner, inner - loc + 2 * loc + 1], 1),
            "inner": inner[:, None], "node": np.concatenate([inner, leaves])[:, None],
            "asg": s[:, None], "val": val}


def exp_job(spec: dict[str, Any]) -> dict[str, Any]:
    from gpu_engine import Reasoner

    if spec.get("warm", True):
        _warm_up(spec["device"])
    data = exp_facts(spec["exprs"], spec["assigns"])
    r = Reasoner(EXP_PROGRAM, device=spec["device"], counting=True,
                 decompose=_mode(spec))
    for name, rows in data.items():
        r.add_facts(name, rows)
    secs, stats, share = _materialise(r)
    facts = lambda: r.engine.size("val")  # noqa: E731
    out: dict[str, Any] = {"explicit": sum(len(v) for v in data.values()),
                           "materialise_seconds": secs, "materialise_cyclic_seconds": share, "facts": facts(),
                           "derivations": stats.derivations,
                           "peak_rows": r.engine.evaluator.peak_rows,
                           "decomposed": sorted({rs.module for s in stats.strata
                                                 for rs in s.rules if "hd " in rs.module})}
    vals = data["val"]
    _updates(r, out, facts, "val", lambda rows: vals[rows], len(vals))
    return out


def _child(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.hd", "--job", json.dumps(spec)]
    keep = {"nokeep": "0", "keep": "1"}.get(str(spec["mode"]).partition("-")[2], "update")
    env = dict(os.environ, GPU_ENGINE_HD_KEEP=keep)
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=REPO_ROOT,
                           env=env)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "seconds": time.perf_counter() - t0, "lower_bound": True}
    if p.returncode != 0:
        return {"status": "error", "reason": p.stderr.strip().splitlines()[-1:]}
    return {"status": "ok", **json.loads(p.stdout.strip().splitlines()[-1])}


OPS = ("materialise", "small_delete", "small_insert", "large_delete")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--job")
    ap.add_argument("--only", choices=["pc", "lubm", "exp"])
    ap.add_argument("--pc", default="300,1000")
    ap.add_argument("--lubm", default="10")
    ap.add_argument("--rules", default="L,L+C")
    ap.add_argument("--exp", default="300x300", help="expressions x assignments, comma list")
    ap.add_argument("--modes", default="off,auto,all")
    ap.add_argument("--repeat", type=int, default=1, help="runs per mode, alternating; "
                    "ratios from each operation's fastest run")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out", default="benchmarks/results/hd.jsonl")
    a = ap.parse_args(argv)
    if a.job:
        spec = json.loads(a.job)
        job = {"pc": pc_job, "lubm": lubm_job, "exp": exp_job}[spec["kind"]]
        print(json.dumps(job(spec)))
        return 0
    cases: list[dict[str, Any]] = []
    if a.only in (None, "pc"):
        cases += [{"kind": "pc", "n": int(n), "k": int(n)} for n in a.pc.split(",") if n]
    if a.only in (None, "lubm"):
        cases += [{"kind": "lubm", "univ": int(u), "rules": rs}
                  for u in a.lubm.split(",") if u for rs in a.rules.split(",")]
    if a.only in (None, "exp"):
        cases += [{"kind": "exp", "exprs": int(x.split("x")[0]),
                   "assigns": int(x.split("x")[1])} for x in a.exp.split(",") if x]
    Path(a.out).parent.mkdir(parents=True, exist_ok=True)
    modes = a.modes.split(",")
    for case in cases:
        runs: dict[str, list[dict[str, Any]]] = {}
        for rep in range(a.repeat):
            for mode in modes:
                if case["kind"] == "pc" and mode.startswith("all"):
                    continue  # one rule: all = auto
                if mode == "off" and rep and runs["off"][0]["status"] == "timeout":
                    continue
                spec = {**case, "mode": mode, "device": a.device}
                rec = {"benchmark": "hd", **spec, "run": rep, **_child(spec, a.timeout),
                       "when": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
                runs.setdefault(mode, []).append(rec)
                _emit(a.out, rec)
        recs = {m: _fastest(rs) for m, rs in runs.items()}
        base = recs.get("off")
        if base is None:
            continue
        ratio: dict[str, Any] = {"benchmark": "hd-ratios", **case, "runs": a.repeat}
        for mode, rec in recs.items():
            if mode == "off":
                continue
            for op in OPS:
                b = base.get(f"{op}_seconds", base.get("seconds") if op == "materialise"
                             and base["status"] == "timeout" else None)
                m = rec.get(f"{op}_seconds")
                if b and m:
                    ratio[f"{op}_off_over_{mode}"] = round(b / m, 3)
                    if base["status"] == "timeout":
                        ratio[f"{op}_lower_bound"] = True
                b, m = base.get(f"{op}_cyclic_seconds"), rec.get(f"{op}_cyclic_seconds")
                if b and m:  # the cyclic rules' own share of the operation
                    ratio[f"{op}_cyclic_off_over_{mode}"] = round(b / m, 3)
            if base.get("peak_rss_bytes") and rec.get("peak_rss_bytes"):
                ratio[f"memory_{mode}_over_off"] = round(rec["peak_rss_bytes"]
                                                         / base["peak_rss_bytes"], 3)
            for key in ("facts", "large_delete_facts", "small_insert_facts"):
                if key in base and key in rec:
                    ratio[f"{key}_agree_{mode}"] = base[key] == rec[key]
        _emit(a.out, ratio)
    return 0


def _fastest(recs: list[dict[str, Any]]) -> dict[str, Any]:
    """One record per mode: each operation's fastest run, the largest peak memory."""
    ok = [r for r in recs if r.get("status") == "ok"] or recs
    out = dict(ok[0])
    for key in out:
        if key.endswith("_seconds"):
            out[key] = min(r[key] for r in ok if key in r)
    if "peak_rss_bytes" in out:
        out["peak_rss_bytes"] = max(r["peak_rss_bytes"] for r in ok if "peak_rss_bytes" in r)
    return out


def _emit(path: str, rec: dict[str, Any]) -> None:
    line = json.dumps(rec)
    print(line, flush=True)
    with open(path, "a") as f:
        f.write(line + "\n")


if __name__ == "__main__":
    sys.exit(main())

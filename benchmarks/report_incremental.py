"""Summarise incremental-maintenance JSON lines (``benchmarks.incremental``) as Markdown + PNG.

    python -m benchmarks.report_incremental results.jsonl [more.jsonl ...] --out DIR

Writes ``DIR/incremental.md``: the materialisation cost of the counters (Remat, Remat-1C,
Remat-2C; cf. paper 000 Table 2's last columns), Mat against Mat-Mod and DRed^c against
DRed^c-Mod (the TC/STC modules; cf. paper 002 Tables 1 and 2), one table per update
operation (rows: benchmarks, columns: algorithms, plus the ratios Remat/DRed^c,
DRed/DRed^c, B/F/B/F^c, DRed^c/DRed^c-Mod; cf. paper 000 Table 1), the Example 1 scaling
table with the exponent of a least-squares fit of log t against log n per algorithm, the
work each algorithm did (UpdateStats), and every error. ``DIR/incremental_example1.png``
plots the Example 1 scaling (log-log), ``DIR/incremental_small_delete.png`` the
small-deletion times per benchmark and algorithm and ``DIR/incremental_modules.png`` the
paper 002 comparison. A timeout that reports how long the operation had run is a lower
bound: its cell reads ``≥ t`` and ratios built on it ``≥ r`` (or ``≤ r``). When a
measurement was taken more than once, the last one counts.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.report import load_records

ALGORITHMS = ("remat", "remat1c", "remat2c", "mat_mod", "mat_mod_nc", "dred", "counting",
              "dredc", "dredc_mod", "bf", "bfc")
LABELS = {"remat": "Remat", "remat1c": "Remat-1C", "remat2c": "Remat-2C", "mat_mod": "Mat-Mod",
          "mat_mod_nc": "Mat-Mod (no counters)", "dred": "DRed", "counting": "Counting",
          "dredc": "DRed^c", "dredc_mod": "DRed^c-Mod", "bf": "B/F", "bfc": "B/F^c"}
OPERATIONS = {"small_delete": "Small deletion (seconds, mean of the repeats)",
              "small_insert": "Small insertion: reinserting the deleted facts (seconds, mean)",
              "large_delete": "Large deletion (seconds)",
              "noop_delete": "No-op update: deleting 1,000 absent facts (seconds, mean)"}
COMBINED = ("small_delete", "small_insert", "large_delete")  # the overview's cells
SMALL_OPS = {"small_delete": "Small deletion (1,000 facts)",
             "small_insert": "Small insertion (1,000 facts)",
             "noop_delete": "No-op update (deleting 1,000 absent facts)"}
RATIOS = (("remat", "dredc"), ("dred", "dredc"), ("bf", "bfc"), ("remat", "bfc"),
          ("dredc", "dredc_mod"), ("remat", "mat_mod"))
EXAMPLE1 = "Example1"

Key = tuple[str, str, str, str]  # benchmark, size, algorithm, operation


def latest(records: list[dict[str, Any]]) -> tuple[list[tuple[str, str]], list[str],
                                                     dict[Key, dict[str, Any]]]:
    """Cases in first-seen order, algorithms present (canonical order), last record per key."""
    cases: list[tuple[str, str]] = []
    table: dict[Key, dict[str, Any]] = {}
    for rec in records:
        if "operation" not in rec or "algorithm" not in rec:
            continue
        case = (str(rec.get("benchmark")), str(rec.get("size")))
        if case not in cases:
            cases.append(case)
        table[(*case, str(rec["algorithm"]), str(rec["operation"]))] = rec
    present = {k[2] for k in table}
    algs = [a for a in ALGORITHMS if a in present] + sorted(present - set(ALGORITHMS))
    return cases, algs, table


def _fmt_s(x: Any) -> str:
    if x is None:
        return ""
    x = float(x)
    if x < 0.01:
        return f"{x * 1000:.2f} ms"
    return f"{x:.3f}" if x < 10 else f"{x:,.1f}"


def _fmt_ratio(x: float) -> str:
    return f"{x:.2f}" if 0.1 <= x < 100 else f"{x:.2g}" if x < 0.1 else f"{x:,.0f}"


def _fmt_int(x: Any) -> str:
    return "" if x is None else f"{int(round(float(x))):,}"


def _ok(rec: dict[str, Any] | None) -> bool:
    return bool(rec) and rec.get("status", "ok") == "ok" and rec.get("seconds") is not None


def _lower(rec: dict[str, Any] | None) -> bool:
    """A timeout whose ``seconds`` is how long the operation ran: a lower bound."""
    return rec is not None and rec.get("status") == "timeout" and rec.get("seconds") is not None


def _time(rec: dict[str, Any] | None) -> tuple[float, bool] | None:
    """(seconds, is a lower bound), or None when there is no time."""
    if _ok(rec) or _lower(rec):
        assert rec is not None
        return float(rec["seconds"]), _lower(rec)
    return None


def ratio_text(a: dict[str, Any] | None, b: dict[str, Any] | None, suffix: str = "") -> str:
    """a's time / b's time; ``≥ r`` when only a's is a lower bound, ``≤ r`` when only b's;
    empty when either is missing or both are bounds."""
    ta, tb = _time(a), _time(b)
    if ta is None or tb is None or tb[0] <= 0 or (ta[1] and tb[1]):
        return ""
    prefix = "≥ " if ta[1] else "≤ " if tb[1] else ""
    return prefix + _fmt_ratio(ta[0] / tb[0]) + suffix


def _oom(rec: dict[str, Any]) -> bool:
    return "MemoryError" in str(rec.get("error") or "")


def _cell(rec: dict[str, Any] | None) -> str:
    if rec is None:
        return ""
    if _lower(rec):
        return "≥ " + _fmt_s(rec["seconds"])
    if not _ok(rec):
        if _oom(rec):
            return "OOM"
        return {"skipped": "–", "timeout": "timeout"}.get(str(rec.get("status")), "error")
    mark = " ✗" if rec.get("matches_remat") is False or rec.get("count_ok") is False else ""
    if rec.get("repeats", 1) < (rec.get("requested_repeats") or 1):
        mark = f" ({rec['repeats']}×)" + mark
    return _fmt_s(rec["seconds"]) + mark


def _case_label(case: tuple[str, str]) -> str:
    return f"{case[0]} {case[1]}"


def _row(cells: list[str]) -> str:
    return "| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |"


def _align(n_left: int, n_right: int) -> str:
    return "|" + "|".join(["---"] * n_left + ["---:"] * n_right) + "|"


def materialise_table(cases: list[tuple[str, str]], table: dict[Key, dict[str, Any]]) -> list[str]:
    """Remat / Remat-1C / Remat-2C seconds and the counters' overhead."""
    out = ["## Materialisation cost of the counters", "",
           "Time of `materialise()` from scratch with `counting=False` (Remat), `counting=1` "
           "(non-recursive counter only, Remat-1C) and `counting=2` (both counters, Remat-2C); "
           "overhead relative to Remat. `count` checks the result against the reference counts "
           "(LUBM: clingo's model; DAG-R: a bitset transitive-closure oracle).", "",
           _row(["benchmark", "facts", "derivations", "Remat s", "Remat-1C s", "+%",
                 "Remat-2C s", "+%", "count"]),
           _align(1, 8)]
    for case in cases:
        recs = [table.get((*case, a, "materialise")) for a in ("remat", "remat1c", "remat2c")]
        if not any(recs):
            continue
        base = recs[0]["seconds"] if _ok(recs[0]) else None
        facts = next((r.get("facts") for r in recs if _ok(r)), None)
        derivs = next((r.get("derivations") for r in recs if _ok(r)), None)
        cells = [_case_label(case), _fmt_int(facts), _fmt_int(derivs), _cell(recs[0])]
        for r in recs[1:]:
            cells.append(_cell(r))
            cells.append(f"{100 * (r['seconds'] / base - 1):+.0f}" if _ok(r) and base else "")
        oks = [r.get("count_ok") for r in recs if r and r.get("count_ok") is not None]
        cells.append("" if not oks else ("yes" if all(oks) else "**NO**"))
        out.append(_row(cells))
    out.append("")
    return out


def operation_table(op: str, cases: list[tuple[str, str]], algs: list[str],
                    table: dict[Key, dict[str, Any]]) -> list[str]:
    """One row per benchmark, one column per algorithm, then the ratios."""
    algs = [a for a in algs if any(table.get((*c, a, op)) for c in cases)]
    ratios = [(a, b) for a, b in RATIOS if a in algs and b in algs]
    out = [f"### {OPERATIONS[op]}", "",
           _row(["benchmark", "|E⁻|" if op != "small_insert" else "|E⁺|",
                 *(LABELS.get(a, a) for a in algs),
                 *(f"{LABELS[a]}/{LABELS[b]}" for a, b in ratios)]),
           _align(1, 1 + len(algs) + len(ratios))]
    for case in cases:
        recs = {a: table.get((*case, a, op)) for a in algs}
        if not any(recs.values()):
            continue
        batch = next((r.get("batch_facts") for r in recs.values() if r), None)
        cells = [_case_label(case), _fmt_int(batch), *(_cell(recs[a]) for a in algs)]
        cells += [ratio_text(recs[a], recs[b]) for a, b in ratios]
        out.append(_row(cells))
    out.append("")
    return out


def combined_table(cases: list[tuple[str, str]], algs: list[str],
                   table: dict[Key, dict[str, Any]]) -> list[str]:
    """Paper-style overview: each cell is small deletion / small insertion / large deletion."""
    algs = [a for a in algs if any(table.get((*c, a, op)) for c in cases for op in COMBINED)]
    out = ["## Overview", "",
           "Seconds per cell: small deletion / small insertion / large deletion (✗: the fact "
           "count after the update differs from a from-scratch rematerialisation; – skipped; "
           "(k×): mean of only k repeats, the time budget ran out; ≥ t: stopped by the "
           "timeout after t seconds; timeout: stopped before it started; OOM: out of memory).",
           "", _row(["benchmark", *(LABELS.get(a, a) for a in algs)]), _align(1, len(algs))]
    for case in cases:
        if not any(table.get((*case, a, op)) for a in algs for op in COMBINED):
            continue
        cells = [_case_label(case)]
        for a in algs:
            parts = [_cell(table.get((*case, a, op))) for op in COMBINED]
            cells.append(" / ".join(p or "·" for p in parts))
        out.append(_row(cells))
    out.append("")
    return out


def _n_of(size: str) -> int | None:
    m = re.search(r"n=(\d+)", size)
    return int(m.group(1)) if m else None


def fit_exponent(ns: list[float], ts: list[float]) -> float | None:
    """Least-squares slope of log t against log n (None with fewer than two points)."""
    pts = [(n, t) for n, t in zip(ns, ts) if n and t and n > 0 and t > 0]
    if len({n for n, _ in pts}) < 2:
        return None
    x = np.log([n for n, _ in pts])
    y = np.log([t for _, t in pts])
    return float(np.polyfit(x, y, 1)[0])


def example1_series(table: dict[Key, dict[str, Any]], algs: list[str],
                    op: str = "large_delete") -> dict[str, list[tuple[int, float]]]:
    """Per algorithm, the (n, seconds) points of Example 1's ``op``, sorted by n."""
    series: dict[str, list[tuple[int, float]]] = {}
    for (bench, size, alg, o), rec in table.items():
        if bench != EXAMPLE1 or o != op or not _ok(rec):
            continue
        n = _n_of(size)
        if n is not None:
            series.setdefault(alg, []).append((n, float(rec["seconds"])))
    return {a: sorted(series[a]) for a in algs if a in series}


def example1_table(table: dict[Key, dict[str, Any]], algs: list[str]) -> list[str]:
    """Seconds of deleting every R(a_i, c_i) per n, and the fitted exponent per algorithm."""
    series = example1_series(table, algs)
    if not series:
        return []
    ns = sorted({n for pts in series.values() for n, _ in pts})
    cols = [a for a in algs if a in series]
    out = ["## Example 1 (paper 000): deleting every R(a_i, c_i)", "",
           "`S(y1, y2) :- R(x, y1), R(x, y2).` on E = {R(a_i, b), R(a_i, c_i) | 1 ≤ i ≤ n}; "
           "seconds to delete all R(a_i, c_i) (half of E). The last row is the exponent k of "
           "a least-squares fit t ≈ c·n^k (log t against log n) over the sizes that finished "
           "(a timeout is left out of the fit, so it understates the growth), then the slope "
           "between the two largest finished sizes (fixed costs flatten the fit at small n). "
           "One-step rederivation makes DRed about quadratic, while DRed^c and Counting need "
           "no backward evaluation.", "",
           _row(["n", *(LABELS.get(a, a) for a in cols)]), _align(1, len(cols))]
    for n in ns:
        cells = [f"{n:,}"]
        for a in cols:
            rec = table.get((EXAMPLE1, f"n={n}", a, "large_delete"))
            cells.append(_cell(rec))
        out.append(_row(cells))
    exps = [fit_exponent([n for n, _ in series[a]], [t for _, t in series[a]]) for a in cols]
    out.append(_row(["**exponent**", *("" if e is None else f"**{e:.2f}**" for e in exps)]))
    tail = [fit_exponent([n for n, _ in series[a][-2:]], [t for _, t in series[a][-2:]])
            for a in cols]
    out.append(_row(["exponent, two largest n", *("" if e is None else f"{e:.2f}"
                                                    for e in tail)]))
    out.append("")
    return out


def work_table(op: str, cases: list[tuple[str, str]], algs: list[str],
               table: dict[Key, dict[str, Any]]) -> list[str]:
    """What each algorithm did (UpdateStats means): overdeleted, rederived, added, ..."""
    fields = ("overdeleted", "rederived", "added", "derivations", "backward")
    out = [f"### Work per update: {op.replace('_', ' ')} (UpdateStats, mean of the repeats)",
           "", _row(["benchmark", "algorithm", *fields, "facts after", "= remat",
                     "peak RSS MiB", "modules"]),
           _align(2, len(fields) + 3) + "---|"]
    for case in cases:
        for a in algs:
            rec = table.get((*case, a, op))
            if not _ok(rec):
                continue
            assert rec is not None
            peak = rec.get("peak_rss_bytes")
            out.append(_row([_case_label(case), LABELS.get(a, a),
                             *(_fmt_int(rec.get(f)) for f in fields), _fmt_int(rec.get("facts")),
                             {True: "yes", False: "**NO**", None: ""}[rec.get("matches_remat")],
                             "" if not peak else f"{peak / 2**20:,.0f}",
                             ", ".join(rec.get("modules") or [])]))
    out.append("")
    return out


# --------------------------------------------------------------------------- paper 002


def _modular_cases(cases: list[tuple[str, str]],
                   table: dict[Key, dict[str, Any]]) -> list[tuple[str, str]]:
    """Cases with a Mat-Mod or DRed^c-Mod measurement that is not skipped."""
    return [c for c in cases if any(
        (rec := table.get((*c, a, op))) and rec.get("status") != "skipped"
        for a in ("mat_mod", "mat_mod_nc", "dredc_mod")
        for op in ("materialise", *OPERATIONS))]


def modules_materialise_table(cases: list[tuple[str, str]],
                              table: dict[Key, dict[str, Any]]) -> list[str]:
    """Paper 002 Table 1: the program's shape, then Mat-Mod and Mat seconds and the ratio."""
    cases = _modular_cases(cases, table)
    if not cases:
        return []
    out = ["### Materialisation: Mat against Mat-Mod (cf. paper 002 Table 1)", "",
           "|E|: explicit facts; |I|: all facts of the materialisation; S: strata with rules; "
           "|Π_nr|, |Π_r|: non-recursive and recursive rules; |TC|, |STC|: transitivity and "
           "symmetric-transitivity modules. Mat: `materialise()` with `modules=\"off\"`, no "
           "counters (Remat); Mat-Mod: `modules=\"auto\"` with the counters DRed^c-Mod needs "
           "(`counting=2`; recursive counters are not kept in modular strata); Mat-Mod (nc): "
           "without counters. Seconds: mean of the timed runs; ≥ t: stopped by the timeout. "
           "count: the output facts against the oracle / reference counts (where there are "
           "none: whether Mat and Mat-Mod agree).",
           "", _row(["benchmark", "|E|", "|I|", "S", "|Π_nr|", "|Π_r|", "|TC|", "|STC|",
                     "Mat-Mod s", "Mat s", "Mat/Mat-Mod", "Mat-Mod (nc) s", "Mat/Mat-Mod (nc)",
                     "modules", "count"]),
           _align(1, 12) + "---|:-:|"]
    for case in cases:
        mod, mat = table.get((*case, "mat_mod", "materialise")), table.get(
            (*case, "remat", "materialise"))
        nc = table.get((*case, "mat_mod_nc", "materialise"))
        shape = next((r for r in (mod, nc, mat) if _ok(r)), None) or {}
        recs = [r for r in (mat, mod, nc) if r]
        oks = [r.get("count_ok") for r in recs if r.get("count_ok") is not None]
        facts = {r.get("facts") for r in recs if _ok(r)}
        count = "" if not oks else ("yes" if all(oks) else "**NO**")
        if len(facts) > 1:
            count = "**Mat ≠ Mat-Mod**"
        elif not oks and _ok(mat) and _ok(mod):
            count = "Mat = Mat-Mod"  # no reference counts: the two agree
        out.append(_row([_case_label(case), _fmt_int(shape.get("explicit_facts")),
                         _fmt_int(shape.get("facts")),
                         *(_fmt_int(shape.get(k)) for k in ("strata", "nonrecursive_rules",
                                                            "recursive_rules", "tc_modules",
                                                            "stc_modules")),
                         _cell(mod), _cell(mat), ratio_text(mat, mod, "×"), _cell(nc),
                         ratio_text(mat, nc, "×"), ", ".join(shape.get("modules") or []),
                         count]))
    out.append("")
    return out


def modules_update_table(cases: list[tuple[str, str]],
                         table: dict[Key, dict[str, Any]]) -> list[str]:
    """Paper 002 Table 2: DRed^c-Mod against DRed^c per operation, with the ratios; then
    the rematerialisations (Mat-Mod against Mat) on the same updates."""
    cases = _modular_cases(cases, table)
    if not cases:
        return []
    out = ["### Incremental maintenance: DRed^c against DRed^c-Mod (cf. paper 002 Table 2)", "",
           "Seconds (small: mean over the repeats of 1,000 random explicit facts each; large: "
           "25 % of E), and DRed^c / DRed^c-Mod (above 1: the modules are faster). ≥ t: "
           "stopped by the timeout after t seconds, so the ratio is a lower bound.", "",
           _row(["benchmark", "small del. DRed^c-Mod", "DRed^c", "ratio",
                 "small ins. DRed^c-Mod", "DRed^c", "ratio",
                 "large del. DRed^c-Mod", "DRed^c", "ratio", "modules used"]),
           _align(1, 9) + "---|"]
    for case in cases:
        cells = [_case_label(case)]
        used: set[str] = set()
        for op in OPERATIONS:
            mod, plain = table.get((*case, "dredc_mod", op)), table.get((*case, "dredc", op))
            cells += [_cell(mod), _cell(plain), ratio_text(plain, mod, "×")]
            used |= set((mod or {}).get("modules") or [])
        out.append(_row([*cells, ", ".join(sorted(used))]))
    out += ["", "Rematerialisation on the same updates (Mat: Remat, no counters; Mat-Mod: with "
            "modules and counters, as after `materialise`):", "",
            _row(["benchmark", "small del. Mat-Mod", "Mat", "ratio", "small ins. Mat-Mod",
                  "Mat", "ratio", "large del. Mat-Mod", "Mat", "ratio"]), _align(1, 9)]
    for case in cases:
        cells = [_case_label(case)]
        for op in OPERATIONS:
            mod, plain = table.get((*case, "mat_mod", op)), table.get((*case, "remat", op))
            cells += [_cell(mod), _cell(plain), ratio_text(plain, mod, "×")]
        out.append(_row(cells))
    out.append("")
    return out


def problems(table: dict[Key, dict[str, Any]]) -> list[str]:
    """Count mismatches, then errors/timeouts/skips grouped by message."""
    out = ["## Correctness and errors", ""]
    bad = [r for r in table.values()
           if r.get("matches_remat") is False or r.get("count_ok") is False]
    checked = sum(1 for r in table.values() if r.get("matches_remat") is not None
                  or r.get("count_ok") is not None)
    out.append(f"{checked} measurements checked against a from-scratch rematerialisation or "
               f"reference counts; {len(bad)} mismatches.")
    out.append("")
    for r in bad:
        out.append(f"- **mismatch** {r['benchmark']} {r['size']} {r['algorithm']} "
                   f"{r['operation']}: {r.get('facts_repeats') or r.get('facts')} facts, "
                   f"expected {r.get('expected_facts_repeats') or r.get('expected_facts')}")
    groups: dict[str, list[str]] = {}
    for r in table.values():
        if r.get("status", "ok") == "ok" and not r.get("error"):
            continue
        msg = f"{r.get('status')}: {r.get('error') or r.get('reason') or ''}"[:300]
        groups.setdefault(msg, []).append(f"{r['benchmark']} {r['size']} "
                                          f"{r['algorithm']}/{r['operation']}")
    for msg, where in groups.items():
        shown = ", ".join(where[:6]) + (f" and {len(where) - 6} more" if len(where) > 6 else "")
        out.append(f"- `{msg}` ({len(where)}): {shown}")
    out.append("")
    return out


def _median(rec: dict[str, Any] | None) -> float | None:
    if not _ok(rec):
        return None
    assert rec is not None
    med = rec.get("seconds_median")
    return float(med) if med is not None else float(rec["seconds"])


def _small_cell(rec: dict[str, Any] | None, remat: dict[str, Any] | None) -> str:
    """``median [min–max] ×ratio-to-Remat`` (the ratio of medians, same run)."""
    if rec is None or not _ok(rec):
        return _cell(rec)
    med = _median(rec)
    lo, hi = rec.get("seconds_min"), rec.get("seconds_max")
    text = _fmt_s(med)
    if lo is not None and hi is not None and rec.get("repeats", 1) > 1:
        text += f" [{_fmt_s(lo)}–{_fmt_s(hi)}]"
    ratio = rec.get("ratio_to_remat")
    rmed = _median(remat)
    if ratio is None and rmed and rec.get("algorithm") != "remat" and med is not None:
        ratio = med / rmed
    if ratio is not None:
        text += f" ×{_fmt_ratio(float(ratio))}"
    if rec.get("matches_remat") is False:
        text += " ✗"
    if rec.get("repeats", 1) < (rec.get("requested_repeats") or 1):
        text += f" ({rec['repeats']}×)"
    return text


def small_cases(cases: list[tuple[str, str]], table: dict[Key, dict[str, Any]]
                ) -> list[tuple[str, str]]:
    """Cases measured by the small-update suite (they have a no-op update line)."""
    return [c for c in cases if any(k[:2] == c and k[3] == "noop_delete" for k in table)]


def small_updates_section(cases: list[tuple[str, str]], algs: list[str],
                          table: dict[Key, dict[str, Any]]) -> list[str]:
    """Issue 11 item 7: per operation, median [min–max] and ×Remat; then time per affected
    fact."""
    cases = small_cases(cases, table)
    if not cases:
        return []
    out = ["## Small updates: small changes cost what they touch (issue 11, item 7)", "",
           "Per cell: median seconds of the repeats [fastest–slowest] and ×r = median / "
           "Remat's median from the same run (below 1: faster than rematerialising). Small "
           "deletion: 1,000 random explicit facts, each repeat from the original state; "
           "insertion: reinserting them; no-op: deleting 1,000 facts that are not in E (the "
           "state does not change, so the ideal cost is ~0). ✗: fact count differs from the "
           "from-scratch count; –: skipped (Counting on recursive programs; the modular "
           "variants on programs without a TC/STC module).", ""]
    for op, title in SMALL_OPS.items():
        algs_op = [a for a in algs if any(table.get((*c, a, op)) for c in cases)]
        if not algs_op:
            continue
        out += [f"### {title}", "", _row(["benchmark", *(LABELS.get(a, a) for a in algs_op)]),
                _align(1, len(algs_op))]
        for c in cases:
            remat = table.get((*c, "remat", op))
            out.append(_row([_case_label(c), *(_small_cell(table.get((*c, a, op)), remat)
                                               for a in algs_op)]))
        out.append("")
    out += ["### Time per affected fact", "",
            "Microseconds per affected fact = Σ seconds / Σ affected facts over the repeats "
            "(deletion / insertion); affected facts: `UpdateStats.affected` where the engine "
            "reports it, else the change in the number of facts (for these negation-free "
            "programs, the facts whose membership changed; facts whose counters changed but "
            "that stay are not counted). The first column gives the affected facts (mean per "
            "repeat).", ""]
    algs_aff = [a for a in algs if any(table.get((*c, a, "small_delete")) for c in cases)]
    out += [_row(["benchmark", "affected (del / ins)", *(LABELS.get(a, a) for a in algs_aff)]),
            _align(1, 1 + len(algs_aff))]
    for c in cases:
        recs = {op: {a: table.get((*c, a, op)) for a in algs_aff}
                for op in ("small_delete", "small_insert")}
        aff = [next((r.get("affected_facts") for r in recs[op].values()
                     if _ok(r) and r.get("affected_facts") is not None), None)
               for op in recs]
        cells = [_case_label(c), " / ".join(_fmt_int(x) or "·" for x in aff)]
        for a in algs_aff:
            parts = []
            for op in recs:
                r = recs[op][a]
                v = r.get("seconds_per_affected_fact") if _ok(r) else None
                parts.append("·" if v is None else f"{v * 1e6:.3g}")
            cells.append(" / ".join(parts))
        out.append(_row(cells))
    out.append("")
    return out


def render_markdown(records: list[dict[str, Any]]) -> str:
    """The whole report."""
    cases, algs, table = latest(records)
    devices = sorted({str(r.get("device")) for r in table.values() if r.get("device")})
    out = ["# Incremental maintenance benchmarks", "",
           f"Device: {', '.join(devices) or '?'}. Small deletion: random explicit facts "
           "(1,000 unless the record says otherwise; `|E⁻|`), each repeat from the original "
           "state; small insertion: reinserting them; large deletion: 25 % of E at random (on "
           "Example 1: every R(a_i, c_i)). Algorithms: Remat (rematerialise), Remat-1C/-2C "
           "(rematerialise keeping one/two counters), DRed, Counting (non-recursive programs "
           "only), DRed^c, B/F, B/F^c (paper 000), all with `modules=\"off\"`; Mat-Mod "
           "(rematerialise with the TC/STC modules of paper 002) and DRed^c-Mod (paper 002 "
           "Algorithm 3), with `modules=\"auto\"`.", ""]
    out += small_updates_section(cases, algs, table)
    out += combined_table(cases, algs, table)
    mods = modules_materialise_table(cases, table) + modules_update_table(cases, table)
    if mods:
        out += ["## Modular reasoning: TC and STC modules (paper 002 §7)", "", *mods]
    out += materialise_table(cases, table)
    out += ["## Updates", ""]
    for op in OPERATIONS:
        out += operation_table(op, cases, algs, table)
    out += example1_table(table, algs)
    out += ["## Work", ""]
    for op in ("small_delete", "large_delete"):
        out += work_table(op, cases, algs, table)
    out += problems(table)
    return "\n".join(out)


def _plt() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_example1(table: dict[Key, dict[str, Any]], algs: list[str], path: Path) -> bool:
    """Log-log plot of Example 1 deletion time against n, with fitted exponents."""
    series = example1_series(table, algs)
    if not series:
        return False
    plt = _plt()
    fig, ax = plt.subplots(figsize=(8.0, 4.5))
    for a, pts in series.items():
        ns, ts = [n for n, _ in pts], [t for _, t in pts]
        k = fit_exponent(ns, ts)
        label = LABELS.get(a, a) + ("" if k is None else f" (n^{k:.2f})")
        ax.plot(ns, ts, marker="o", label=label)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n")
    ax.set_ylabel("seconds to delete every R(a_i, c_i)")
    ax.set_title("Example 1 (paper 000): scaling")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def plot_small_delete(cases: list[tuple[str, str]], algs: list[str],
                      table: dict[Key, dict[str, Any]], path: Path) -> bool:
    """Grouped bars (log scale): small-deletion seconds per benchmark and algorithm."""
    def has(c: tuple[str, str], a: str) -> bool:
        return _time(table.get((*c, a, "small_delete"))) is not None

    cases = [c for c in cases if any(has(c, a) for a in algs)]
    algs = [a for a in algs if any(has(c, a) for c in cases)]
    if not cases:
        return False
    plt = _plt()
    fig, ax = plt.subplots(figsize=(max(6.5, 1.4 * len(cases) + 2), 4.5))
    _bars(ax, cases, algs, lambda c, a: table.get((*c, a, "small_delete")))
    ax.set_xticklabels([f"{b}\n{s}" for b, s in cases], fontsize=7)
    ax.set_title("Small deletion: mean time per algorithm (hatched: lower bound, timeout)")
    ax.legend(fontsize=7, ncol=max(1, math.ceil(len(algs) / 4)))
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def plot_small_updates(cases: list[tuple[str, str]], algs: list[str],
                       table: dict[Key, dict[str, Any]], path: Path) -> bool:
    """Issue 11 item 7: one panel per small operation (median, whiskers fastest–slowest,
    log scale) and one of the time per affected fact (small deletion)."""
    cases = small_cases(cases, table)
    if not cases:
        return False
    plt = _plt()
    panels = [*SMALL_OPS.items(), ("per_fact", "Small deletion: µs per affected fact")]
    fig, axes = plt.subplots(2, 2, figsize=(max(9.0, 1.8 * len(cases) + 4), 8.0))
    for ax, (op, title) in zip(axes.flat, panels):
        src = "small_delete" if op == "per_fact" else op
        series = [a for a in algs if any(_ok(table.get((*c, a, src))) for c in cases)]
        width = 0.8 / max(1, len(series))
        for i, a in enumerate(series):
            xs, ys, lo, hi = [], [], [], []
            for j, c in enumerate(cases):
                r = table.get((*c, a, src))
                if not _ok(r):
                    continue
                assert r is not None
                if op == "per_fact":
                    v = r.get("seconds_per_affected_fact")
                    if v is None:
                        continue
                    y, y0, y1 = v * 1e6, v * 1e6, v * 1e6
                else:
                    y = _median(r) or 0.0
                    y0, y1 = r.get("seconds_min", y), r.get("seconds_max", y)
                xs.append(j + (i - (len(series) - 1) / 2) * width)
                ys.append(max(y, 1e-6))
                lo.append(max(y - y0, 0.0))
                hi.append(max(y1 - y, 0.0))
            if xs:
                ax.bar(xs, ys, width=width, label=LABELS.get(a, a), color=_colour(a),
                       yerr=[lo, hi], capsize=1.5, error_kw={"elinewidth": 0.6})
        ax.set_yscale("log")
        ax.set_ylabel("µs per affected fact" if op == "per_fact" else "seconds (log scale)")
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels([f"{b}\n{s}" for b, s in cases], fontsize=6)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=6, ncol=2)
    fig.suptitle("Small updates (median; whiskers: fastest–slowest repeat)", fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _colour(alg: str) -> str:
    """The same colour for an algorithm in every plot (Matplotlib's cycle C0-C9)."""
    i = ALGORITHMS.index(alg) if alg in ALGORITHMS else len(ALGORITHMS)
    return f"C{i % 10}" if i < 10 else "0.4"


def _bars(ax: Any, cases: list[Any], series: list[str],
          rec_of: Any, labels: dict[str, str] = LABELS) -> None:
    """Grouped bars (log scale), one group per case and one bar per series; a lower bound
    (timeout) is hatched."""
    width = 0.8 / max(1, len(series))
    for i, a in enumerate(series):
        xs, ys, lower = [], [], []
        for j, c in enumerate(cases):
            t = _time(rec_of(c, a))
            if t is not None:
                xs.append(j + (i - (len(series) - 1) / 2) * width)
                ys.append(max(t[0], 1e-5))
                lower.append(t[1])
        if xs:
            bars = ax.bar(xs, ys, width=width, label=labels.get(a, a), color=_colour(a))
            for bar, lb in zip(bars, lower):
                if lb:
                    bar.set_hatch("//")
                    bar.set_alpha(0.6)
    ax.set_yscale("log")
    ax.set_ylabel("seconds (log scale)")
    ax.set_xticks(range(len(cases)))


def plot_modules(cases: list[tuple[str, str]], table: dict[Key, dict[str, Any]],
                 path: Path) -> bool:
    """Paper 002's comparison as four panels of grouped bars (log scale): materialisation
    (Mat, Mat-Mod), small deletion, small insertion and large deletion (DRed^c,
    DRed^c-Mod, Mat, Mat-Mod); lower bounds hatched."""
    cases = _modular_cases(cases, table)
    if not cases:
        return False
    plt = _plt()
    panels = [("materialise", "Materialisation", ("remat", "mat_mod", "mat_mod_nc"))] + [
        (op, title, ("dredc", "dredc_mod", "remat", "mat_mod"))
        for op, title in (("small_delete", "Small deletion"), ("small_insert", "Small insertion"),
                          ("large_delete", "Large deletion (25 %)"))]
    labels = {**LABELS, "remat": "Mat"}
    fig, axes = plt.subplots(2, 2, figsize=(max(9.0, 2.2 * len(cases) + 4), 7.5))
    for ax, (op, title, series) in zip(axes.flat, panels):
        def rec_of(c: tuple[str, str], a: str, op: str = op) -> dict[str, Any] | None:
            return table.get((*c, a, op))

        _bars(ax, cases, list(series), rec_of, labels)
        ax.set_xticklabels([f"{b}\n{s}" for b, s in cases], fontsize=6)
        ax.set_title(title, fontsize=9)
        ax.legend(fontsize=6)
    fig.suptitle("Paper 002: Mat vs Mat-Mod, DRed^c vs DRed^c-Mod (hatched: lower bound)",
                 fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description="Markdown report and PNG plots from "
                                             "benchmarks.incremental JSON lines")
    ap.add_argument("results", nargs="+", type=Path)
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results"), help="output folder")
    args = ap.parse_args(argv)
    records = load_records(args.results)
    if not records:
        ap.error("no JSON records found")
    args.out.mkdir(parents=True, exist_ok=True)
    md = args.out / "incremental.md"
    md.write_text(render_markdown(records), encoding="utf-8")
    cases, algs, table = latest(records)
    written = [md]
    p1 = args.out / "incremental_example1.png"
    if plot_example1(table, algs, p1):
        written.append(p1)
    p2 = args.out / "incremental_small_delete.png"
    if plot_small_delete(cases, algs, table, p2):
        written.append(p2)
    p3 = args.out / "incremental_modules.png"
    if plot_modules(cases, table, p3):
        written.append(p3)
    p4 = args.out / "incremental_small_updates.png"
    if plot_small_updates(cases, algs, table, p4):
        written.append(p4)
    print("wrote " + ", ".join(map(str, written)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Summarise incremental-maintenance JSON lines (``benchmarks.incremental``) as Markdown + PNG.

    python -m benchmarks.report_incremental results.jsonl [more.jsonl ...] --out DIR

Writes ``DIR/incremental.md``: the materialisation cost of the counters (Remat, Remat-1C,
Remat-2C; cf. paper 000 Table 2's last columns), one table per update operation (rows:
benchmarks, columns: algorithms, plus the ratios Remat/DRed^c, DRed/DRed^c and B/F/B/F^c;
cf. paper 000 Table 1), the Example 1 scaling table with the exponent of a least-squares
fit of log t against log n per algorithm, the work each algorithm did (UpdateStats), and
every error. ``DIR/incremental_example1.png`` plots the Example 1 scaling (log-log) and
``DIR/incremental_small_delete.png`` the small-deletion times per benchmark and algorithm.
When a measurement was taken more than once, the last one counts.
"""

from __future__ import annotations

import argparse
import math
import re
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.report import load_records

ALGORITHMS = ("remat", "remat1c", "remat2c", "dred", "counting", "dredc", "bf", "bfc")
LABELS = {"remat": "Remat", "remat1c": "Remat-1C", "remat2c": "Remat-2C", "dred": "DRed",
          "counting": "Counting", "dredc": "DRed^c", "bf": "B/F", "bfc": "B/F^c"}
OPERATIONS = {"small_delete": "Small deletion (seconds, mean of the repeats)",
              "small_insert": "Small insertion: reinserting the deleted facts (seconds, mean)",
              "large_delete": "Large deletion (seconds)"}
RATIOS = (("remat", "dredc"), ("dred", "dredc"), ("bf", "bfc"), ("remat", "bfc"))
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


def _cell(rec: dict[str, Any] | None) -> str:
    if rec is None:
        return ""
    if not _ok(rec):
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
        for a, b in ratios:
            ra, rb = recs[a], recs[b]
            cells.append(_fmt_ratio(ra["seconds"] / rb["seconds"])
                         if _ok(ra) and _ok(rb) and rb["seconds"] > 0 else "")
        out.append(_row(cells))
    out.append("")
    return out


def combined_table(cases: list[tuple[str, str]], algs: list[str],
                   table: dict[Key, dict[str, Any]]) -> list[str]:
    """Paper-style overview: each cell is small deletion / small insertion / large deletion."""
    algs = [a for a in algs if any(table.get((*c, a, op)) for c in cases for op in OPERATIONS)]
    out = ["## Overview", "",
           "Seconds per cell: small deletion / small insertion / large deletion (✗: the fact "
           "count after the update differs from a from-scratch rematerialisation; – skipped; "
           "(k×): mean of only k repeats, the time budget ran out; timeout: none finished).",
           "", _row(["benchmark", *(LABELS.get(a, a) for a in algs)]), _align(1, len(algs))]
    for case in cases:
        if not any(table.get((*case, a, op)) for a in algs for op in OPERATIONS):
            continue
        cells = [_case_label(case)]
        for a in algs:
            parts = [_cell(table.get((*case, a, op))) for op in OPERATIONS]
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
                     "peak RSS MiB"]),
           _align(2, len(fields) + 3)]
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
                             "" if not peak else f"{peak / 2**20:,.0f}"]))
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
           "only), DRed^c, B/F, B/F^c (paper 000).", ""]
    out += combined_table(cases, algs, table)
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
    cases = [c for c in cases if any(_ok(table.get((*c, a, "small_delete"))) for a in algs)]
    algs = [a for a in algs if any(_ok(table.get((*c, a, "small_delete"))) for c in cases)]
    if not cases:
        return False
    plt = _plt()
    width = 0.8 / max(1, len(algs))
    fig, ax = plt.subplots(figsize=(max(6.5, 1.4 * len(cases) + 2), 4.5))
    for i, a in enumerate(algs):
        xs, ys = [], []
        for j, c in enumerate(cases):
            rec = table.get((*c, a, "small_delete"))
            if _ok(rec):
                assert rec is not None
                xs.append(j + (i - (len(algs) - 1) / 2) * width)
                ys.append(max(float(rec["seconds"]), 1e-5))
        if xs:
            ax.bar(xs, ys, width=width, label=LABELS.get(a, a))
    ax.set_yscale("log")
    ax.set_ylabel("seconds (log scale)")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([f"{b}\n{s}" for b, s in cases], fontsize=7)
    ax.set_title("Small deletion: mean time per algorithm")
    ax.legend(fontsize=7, ncol=max(1, math.ceil(len(algs) / 4)))
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
    print("wrote " + ", ".join(map(str, written)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

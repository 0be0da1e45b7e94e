"""Summarise benchmark JSON lines as a Markdown table and a PNG plot.

    python -m benchmarks.report results.jsonl [more.jsonl ...] --out DIR

Writes ``DIR/report.md`` (one wide table benchmark x engine with materialisation times
and the ratio gpu-engine / fastest peer, then every measurement in detail) and
``DIR/report.png`` (materialisation time per benchmark and engine, log scale). Where
gpu-engine also ran with the TC/STC modules (``gpu-engine-mod``, suite ``modules``), the
table adds its ratio to the fastest peer and Mat / Mat-Mod (gpu-engine / gpu-engine-mod).
A timeout that recorded how long it had run is a lower bound (``≥ t``). When a benchmark
was measured more than once, the last measurement of each engine counts.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

ENGINE = "gpu-engine"
ENGINE_MOD = "gpu-engine-mod"  # gpu-engine with modules="auto" (paper 002's Mat-Mod)
OURS = (ENGINE, ENGINE_MOD)


def load_records(paths: list[Path]) -> list[dict[str, Any]]:
    """Read JSON lines, skipping blank and non-JSON lines."""
    records = []
    for path in paths:
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if not line.startswith("{"):
                continue
            try:
                records.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return records


def _key(rec: dict[str, Any]) -> str:
    whole = " (whole process)" if rec.get("whole_process") else ""
    return f"{rec.get('benchmark')} / {rec.get('size')}{whole}"


def is_chain(rec: dict[str, Any]) -> bool:
    """A line of ``benchmarks.chain``."""
    return rec.get("benchmark") == "chain"


def chain_section(records: list[dict[str, Any]]) -> list[str]:
    """The chain benchmark: per (program, N) and engine, rounds, seconds, µs per round."""
    recs = [r for r in records if is_chain(r)]
    if not recs:
        return []
    table: dict[tuple[str, int, str], dict[str, Any]] = {}
    rows: list[tuple[str, int]] = []
    engines: list[str] = []
    for r in recs:
        key = (str(r.get("program")), int(r.get("n") or 0))
        if key not in rows:
            rows.append(key)
        eng = str(r.get("engine"))
        if eng not in engines:
            engines.append(eng)
        table[(*key, eng)] = r
    engines = [e for e in engines if any(table.get((*k, e), {}).get("status") == "ok"
                                         for k in rows)] or engines[:1]
    out = ["## Chain: rounds with one-fact deltas (issue 11, item 7)", "",
           "Per engine: seconds (gpu-engine: its materialisation, from `--stats-json`; DuckDB: "
           "the query; Soufflé: its whole run), µs per round and, in parentheses, the whole "
           "process (start-up, imports, JIT, parsing). `chain`: `n(x + 1) :- n(x), x < N` "
           "(N rounds); `body3`: Soufflé's independent_body3 with bound N (≈ 2N rounds); "
           "`independent_body3`: the conformance case itself (N = 10^6; ok = output equals "
           "Soufflé's). ≥ t: stopped by the timeout.", ""]
    header = ["program", "N", "rounds"]
    for e in engines:
        header += [f"{e} s", f"{e} µs/round", f"{e} rounds/s"]
    out += ["| " + " | ".join(header) + " |", "|" + "|".join(["---"] + ["---:"] * (
        len(header) - 1)) + "|"]
    for prog, n in rows:
        first = next((table[(prog, n, e)] for e in engines
                      if table.get((prog, n, e), {}).get("rounds")), {})
        cells = [prog + (" (output ok)" if first.get("output_ok") else
                         " (**output differs**)" if first.get("output_ok") is False else ""),
                 f"{n:,}", _fmt_int(first.get("rounds"))]
        for e in engines:
            r = table.get((prog, n, e))
            if r is None:
                cells += ["", "", ""]
            elif r.get("status") == "timeout":
                cells += [f"≥ {_fmt_s(r.get('process_seconds'))} (process)", "", ""]
            elif r.get("status") != "ok":
                cells += [str(r.get("status")), "", ""]
            else:
                spr, rps = r.get("seconds_per_round"), r.get("rounds_per_second")
                cells += [f"{_fmt_s(r.get('seconds'))} ({_fmt_s(r.get('process_seconds'))})",
                          "" if spr is None else f"{spr * 1e6:.3g}",
                          "" if rps is None else f"{rps:,.0f}"]
        out.append("| " + " | ".join(cells) + " |")
    out.append("")
    fits = chain_fits(recs)
    if fits:
        out += ["Least-squares fit `seconds = fixed + per_round × rounds` over the sizes N "
                "(the fixed part is start-up inside the engine: JIT, planning, the first "
                "rounds; the slope is the marginal cost of a round):", "",
                "| program | engine | fixed s | µs per round (marginal) | sizes |",
                "|---|---|---:|---:|---:|"]
        for (prog, eng), (a, b, k) in fits.items():
            out.append(f"| {prog} | {eng} | {a:.3f} | {b * 1e6:.3g} | {k} |")
        out.append("")
    return out


def chain_fits(recs: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[float, float, int]]:
    """Per (program, engine) with at least two sizes: (fixed seconds, seconds per round,
    number of sizes) of a least-squares line through (rounds, seconds)."""
    import numpy as np

    pts: dict[tuple[str, str], dict[int, tuple[float, float]]] = {}
    for r in recs:
        if r.get("status") == "ok" and r.get("rounds") and r.get("seconds") is not None \
                and r.get("program") != "independent_body3":
            pts.setdefault((str(r["program"]), str(r["engine"])), {})[int(r["n"])] = (
                float(r["rounds"]), float(r["seconds"]))
    fits = {}
    for key, by_n in pts.items():
        if len(by_n) < 2:
            continue
        x = np.array([v[0] for v in by_n.values()])
        y = np.array([v[1] for v in by_n.values()])
        b, a = np.polyfit(x, y, 1)
        fits[key] = (float(a), float(b), len(by_n))
    return fits


def render_chain_plot(records: list[dict[str, Any]], path: Path) -> bool:
    """µs per round against rounds (log-log), one line per program and engine."""
    recs = [r for r in records if is_chain(r) and r.get("status") == "ok"
            and r.get("seconds_per_round") and r.get("rounds")
            and r.get("program") != "independent_body3"]
    if not recs:
        return False
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for r in recs:
        series.setdefault((str(r["program"]), str(r["engine"])), []).append(
            (int(r["rounds"]), float(r["seconds_per_round"]) * 1e6))
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for (prog, eng), pts in sorted(series.items()):
        pts.sort()
        ax.plot([x for x, _ in pts], [y for _, y in pts], marker="o", label=f"{prog} / {eng}")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("rounds")
    ax.set_ylabel("µs per round (log scale)")
    ax.set_title("Chain: one-fact deltas, time per round")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def _latest(records: list[dict[str, Any]]) -> tuple[list[str], list[str], dict]:
    cases: list[str] = []
    engines: list[str] = []
    table: dict[tuple[str, str], dict[str, Any]] = {}
    for rec in records:
        case, eng = _key(rec), str(rec.get("engine"))
        if case not in cases:
            cases.append(case)
        if eng not in engines:
            engines.append(eng)
        table[(case, eng)] = rec
    ours = [e for e in OURS if e in engines]
    return cases, ours + [e for e in engines if e not in OURS], table


def _fmt_s(x: Any) -> str:
    if x is None:
        return ""
    x = float(x)
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _fmt_int(x: Any) -> str:
    return "" if x is None else f"{int(x):,}"


def _lower(rec: dict[str, Any] | None) -> bool:
    """A timeout that recorded how long it had run: ``materialise_seconds`` is a lower bound."""
    return (rec is not None and rec.get("status") == "timeout"
            and bool(rec.get("materialise_seconds")))


def _cell(rec: dict[str, Any] | None) -> str:
    if rec is None:
        return ""
    status = rec.get("status", "ok")
    if _lower(rec):
        return "≥ " + _fmt_s(rec.get("materialise_seconds"))
    if status != "ok":
        return status
    mark = "" if rec.get("count_ok") in (True, None) else " ✗"
    return _fmt_s(rec.get("materialise_seconds")) + mark


def _ratio_cell(rec: dict[str, Any] | None) -> str:
    """This engine's time / the fastest peer's, with the peer's name."""
    if rec is None or rec.get("ratio_to_fastest_peer") is None:
        return ""
    return f"{rec['ratio_to_fastest_peer']:.2f} (vs {rec.get('fastest_peer')})"


def render_markdown(records: list[dict[str, Any]]) -> str:
    """Markdown report: summary table (times, ratio) and detailed measurements."""
    chain = chain_section(records)
    records = [r for r in records if not is_chain(r)]
    if not records:
        return "\n".join(["# Benchmark results", "", *chain])
    cases, engines, table = _latest(records)
    out = ["# Benchmark results", "", *chain]
    out.append("Materialisation time in seconds (✗: fact count differs from the expected one; "
               "≥ t: stopped by the timeout after t seconds; `skipped`/`timeout`/`error`: see "
               "details). Ratio = gpu-engine time / fastest peer's time (below 1: gpu-engine "
               "is faster). gpu-engine runs with `modules=\"off\"` (Mat); gpu-engine-mod with "
               "the TC/STC modules of paper 002 (`modules=\"auto\"`, Mat-Mod). Rows marked "
               "*(whole process)* (`run.py --suite process`) time each engine as a whole "
               "process, as a user times `gpu-engine run`: start-up, reading the input "
               "files, materialising and printing the counts.")
    out.append("")
    mod = ENGINE_MOD in engines
    header = ["benchmark / size", "facts", *engines, "ratio",
              *(["ratio (mod)", "Mat/Mat-Mod"] if mod else []), "count ok"]
    out.append("| " + " | ".join(header) + " |")
    out.append("|" + "|".join(["---", "---:"] + ["---:"] * len(engines) + ["---:"]
                              + (["---:", "---:"] if mod else []) + [":---:"]) + "|")
    for case in cases:
        facts = next((r.get("facts") for e in engines if (r := table.get((case, e)))
                      and r.get("facts") is not None), None)
        oks = [r.get("count_ok") for e in OURS if (r := table.get((case, e)))
               and r.get("count_ok") is not None]
        ok = None if not oks else all(oks)
        row = [case, _fmt_int(facts), *[_cell(table.get((case, e))) for e in engines],
               _ratio_cell(table.get((case, ENGINE)))]
        if mod:
            mine = table.get((case, ENGINE_MOD)) or {}
            speedup = mine.get("mat_over_mat_mod")
            row += [_ratio_cell(mine), "" if speedup is None else
                    ("≥ " if mine.get("mat_over_mat_mod_lower_bound") else "")
                    + f"{speedup:.2f}×"]
        row.append({True: "yes", False: "**NO**", None: ""}[ok])
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    out.append("## Measurements")
    out.append("")
    cols = ["benchmark", "size", "engine", "device", "status", "load s", "materialise s",
            "facts", "expected", "ok", "derivations", "peak RSS MiB", "GPU peak MiB", "note"]
    out.append("| " + " | ".join(cols) + " |")
    out.append("|" + "|".join(["---"] * len(cols)) + "|")
    for rec in records:
        def mib(x: Any) -> str:
            return "" if x is None else f"{x / 2**20:,.0f}"

        note = rec.get("reason") or rec.get("note") or ""
        if rec.get("count_mismatches"):
            note = f"mismatches: {json.dumps(rec['count_mismatches'])[:200]}"
        row = [str(rec.get("benchmark")), str(rec.get("size")), str(rec.get("engine")),
               str(rec.get("device") or ""), str(rec.get("status", "ok")),
               _fmt_s(rec.get("load_seconds")),
               ("≥ " if _lower(rec) else "") + _fmt_s(rec.get("materialise_seconds")),
               _fmt_int(rec.get("facts")), _fmt_int(rec.get("expected_facts")),
               {True: "yes", False: "**NO**", None: ""}[rec.get("count_ok")],
               _fmt_int(rec.get("derivations")), mib(rec.get("peak_memory_bytes")),
               mib(rec.get("gpu_peak_memory_bytes")), note.replace("|", "\\|")]
        out.append("| " + " | ".join(row) + " |")
    out.append("")
    return "\n".join(out)


def render_plot(records: list[dict[str, Any]], path: Path) -> None:
    """Grouped bar chart of materialisation time (log scale) per benchmark and engine."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cases, engines, table = _latest(records)
    def timed(rec: dict[str, Any] | None) -> bool:
        return rec is not None and bool(rec.get("materialise_seconds")) and (
            rec.get("status", "ok") == "ok" or _lower(rec))

    engines = [e for e in engines if any(timed(table.get((c, e))) for c in cases)]
    width = 0.8 / max(1, len(engines))
    fig, ax = plt.subplots(figsize=(max(6.0, 1.6 * len(cases) + 2), 4.5))
    for i, eng in enumerate(engines):
        xs, ys, lower = [], [], []
        for j, case in enumerate(cases):
            rec = table.get((case, eng))
            if timed(rec):
                assert rec is not None
                xs.append(j + (i - (len(engines) - 1) / 2) * width)
                ys.append(max(float(rec["materialise_seconds"]), 1e-4))
                lower.append(_lower(rec))
        if xs:
            bars = ax.bar(xs, ys, width=width, label=eng)
            for bar, lb in zip(bars, lower):
                if lb:  # a lower bound (timeout)
                    bar.set_hatch("//")
                    bar.set_alpha(0.6)
    ax.set_yscale("log")
    ax.set_ylabel("materialisation time (s, log scale)")
    ax.set_xticks(range(len(cases)))
    ax.set_xticklabels([c.replace(" / ", "\n") for c in cases], fontsize=8)
    ax.legend(fontsize=8)
    ax.set_title("gpu-engine and peers (hatched: lower bound, timeout)")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    ap = argparse.ArgumentParser(description="Markdown table and PNG plot from benchmark JSONL")
    ap.add_argument("results", nargs="+", type=Path, help="JSON-lines files from benchmarks.run")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results"), help="output folder")
    args = ap.parse_args(argv)
    records = load_records(args.results)
    if not records:
        ap.error("no JSON records found")
    args.out.mkdir(parents=True, exist_ok=True)
    md = args.out / "report.md"
    md.write_text(render_markdown(records), encoding="utf-8")
    written = [md]
    if render_chain_plot(records, args.out / "chain.png"):
        written.append(args.out / "chain.png")
    others = [r for r in records if not is_chain(r)]
    if others:
        png = args.out / "report.png"
        render_plot(others, png)
        written.append(png)
    print("wrote " + ", ".join(map(str, written)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``python -m gpu_engine.host.demo`` (``make demo``): materialise LUBM(1) with the LUBM_L rules.

Loads ``examples/lubm/lubm1.nt.gz`` with the N-Triples reader, materialises
``examples/lubm/LUBM_L.dl`` (GPU when one is usable, else CPU), prints timings and the
largest derived relations, and checks the total against the reference count 121,512
(computed with clingo; see ``shared/bench-data/lubm/README.md``). Exit status 1 when the
count differs.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
# the source tree's examples/, or the copy an installed wheel holds (gpu_engine/examples)
EXAMPLE_DIR = next((d for d in (REPO_ROOT / "examples" / "lubm",
                                REPO_ROOT / "gpu_engine" / "examples" / "lubm") if d.is_dir()),
                   REPO_ROOT / "examples" / "lubm")
DATA = EXAMPLE_DIR / "lubm1.nt.gz"
PROGRAM = EXAMPLE_DIR / "LUBM_L.dl"
EXPECTED_TOTAL = 121_512  # IDB facts of LUBM_L on LUBM(1), reference computed with clingo 5.8.3
TOP = 10


def relation_labels(program_text: str) -> dict[str, str]:
    """``RPn`` -> short class/property name, from the ``// <IRI>`` comments of the .decl lines."""
    labels = {}
    for m in re.finditer(r"^\.decl\s+(\w+)\([^)]*\)\s*//\s*<[^>#]*#?([^>]*)>", program_text, re.M):
        labels[m.group(1)] = m.group(2)
    return labels


def main(argv: list[str] | None = None) -> int:
    """Run the demo; return 0 when the fact count matches the reference."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    args = ap.parse_args(argv)

    from gpu_engine.host.ntriples import read_ntriples

    from gpu_engine import Reasoner

    text = PROGRAM.read_text(encoding="utf-8")
    t0 = time.perf_counter()
    triples = read_ntriples(DATA)
    t1 = time.perf_counter()
    reasoner = Reasoner(text, device=args.device)
    reasoner.add_facts("TE", triples)
    t2 = time.perf_counter()
    stats = reasoner.materialise()
    t3 = time.perf_counter()
    sizes = reasoner.relation_sizes()
    derived = {name: n for name, n in sizes.items() if name != "TE"}
    total = sum(derived.values())
    derivations = stats.to_dict().get("derivations")
    labels = relation_labels(text)
    top = sorted(derived.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP]
    ok = total == EXPECTED_TOTAL

    rows = [
        ("device", reasoner.device),
        ("input", f"{DATA.relative_to(REPO_ROOT)}: {triples.num_rows:,} triples"),
        ("program", f"{PROGRAM.relative_to(REPO_ROOT)}: {len(derived)} IDB relations"),
        ("load (N-Triples)", f"{t1 - t0:.3f} s"),
        ("encode (parse + dictionary)", f"{t2 - t1:.3f} s"),
        ("materialise", f"{t3 - t2:.3f} s"),
    ]
    if derivations is not None:
        rows.append(("rule derivations", f"{derivations:,}"))
    verdict = (f"{total:,} IDB facts: matches the reference {EXPECTED_TOTAL:,}" if ok else
               f"{total:,} IDB facts: DIFFERS from the reference {EXPECTED_TOTAL:,}")

    if sys.stdout.isatty():
        from rich.console import Console
        from rich.table import Table

        console = Console(highlight=False)
        console.print("[bold]gpu-engine demo[/bold]: LUBM(1) with the LUBM_L rules")
        summary = Table(show_header=False, box=None)
        for k, v in rows:
            summary.add_row(k, v)
        console.print(summary)
        table = Table(title=f"largest derived relations (top {TOP})")
        table.add_column("relation")
        table.add_column("class / property")
        table.add_column("facts", justify="right")
        for name, n in top:
            table.add_row(name, labels.get(name, ""), f"{n:,}")
        table.add_row("[bold]total[/bold]", "", f"[bold]{total:,}[/bold]")
        console.print(table)
        console.print(f"[green]✓ {verdict}[/green]" if ok else f"[red]✗ {verdict}[/red]")
    else:
        print("gpu-engine demo: LUBM(1) with the LUBM_L rules")
        for k, v in rows:
            print(f"  {k:<28} {v}")
        print(f"largest derived relations (top {TOP}):")
        for name, n in top:
            print(f"  {name:<6} {labels.get(name, ''):<24} {n:>10,}")
        print(f"  {'total':<31} {total:>10,}")
        print(("OK: " if ok else "MISMATCH: ") + verdict)
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())

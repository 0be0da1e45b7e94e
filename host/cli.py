"""Command line: ``gpu-engine run PROGRAM.dl -F FACTS -D OUT`` (like ``souffle -F -D``)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from gpu_engine.ir import ProgramError

from .io import write_text_atomic


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpu-engine",
                                description="GPU-accelerated columnar Datalog engine")
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="materialise a program and write its .output relations")
    run.add_argument("program", help="Datalog program (.dl, Soufflé syntax)")
    run.add_argument("-F", "--facts", default=".", help="directory of .input fact files")
    run.add_argument("-D", "--output", default=".",
                     help="directory for .output relations ('-' prints them)")
    run.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    run.add_argument("--stats", action="store_true",
                     help="print time, iterations, facts and derivations per stratum and rule")
    run.add_argument("--stats-json", metavar="FILE", help="write the statistics as JSON")
    run.add_argument("--quiet", action="store_true", help="no progress display")
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
    except ProgramError as exc:
        print(f"{exc}" if exc.loc else f"gpu-engine: error: {exc}", file=sys.stderr)
        return 1
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"gpu-engine: error: {exc}", file=sys.stderr)
        return 1
    return 2


def _run(args: argparse.Namespace) -> int:
    from .reasoner import Reasoner

    t0 = time.perf_counter()
    progress = _Progress(enabled=not args.quiet and sys.stderr.isatty())
    with progress:
        r = Reasoner(Path(args.program), device=args.device, progress=progress.hook)
        for note in r.notes:
            print(f"note: {note}", file=sys.stderr)
        progress.status("loading facts")
        r.load_inputs(args.facts)
        progress.status("materialising")
        stats = r.materialise()
        # render everything before writing anything, so an error writes no output
        outputs: list[tuple[str, str, str]] = []
        for d in r.parsed.directives:
            if d.kind == "output":
                io = d.params.get("IO", "file")
                delim = d.params.get("delimiter", "\t").encode().decode("unicode_escape")
                fname = d.params.get("filename", f"{d.relation}.csv")
                dest = "-" if (io == "stdout" or args.output == "-") else fname
                outputs.append((d.relation, dest, r.render(d.relation, delim)))
        sizes = [(d.relation, r.engine.size(d.relation))
                 for d in r.parsed.directives if d.kind == "printsize"]
    out_dir = Path(args.output)
    if args.output != "-" and any(dest != "-" for _, dest, _ in outputs):
        out_dir.mkdir(parents=True, exist_ok=True)
    for rel, dest, text in outputs:
        if dest == "-":
            sys.stdout.write(f"---------------\n{rel}\n===============\n{text}"
                             "===============\n")
        else:
            path = Path(dest) if Path(dest).is_absolute() else out_dir / dest
            write_text_atomic(path, text)
    for rel, n in sizes:
        print(f"{rel}\t{n}")
    total = time.perf_counter() - t0
    if args.stats:
        _print_stats(stats, r.load_seconds, total)
    if args.stats_json:
        d = stats.to_dict()
        d.update(load_seconds=r.load_seconds, total_seconds=total, program=args.program)
        Path(args.stats_json).write_text(json.dumps(d, indent=2))
    return 0


def _print_stats(stats: Any, load_s: float, total_s: float) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(file=sys.stderr, highlight=False)
    t = Table(title=f"materialisation on {stats.device}: {stats.facts:,} facts, "
              f"{stats.derivations:,} derivations, {stats.seconds:.3f} s "
              f"(load {load_s:.3f} s, total {total_s:.3f} s)")
    for col in ("stratum / rule", "time s", "iterations", "facts", "derivations"):
        t.add_column(col, justify="left" if col.startswith("stratum") else "right")
    for s in stats.strata:
        kind = "recursive" if s.recursive else "non-recursive"
        t.add_row(f"[bold]stratum {s.index}[/] {','.join(s.relations)} ({kind})",
                  f"{s.seconds:.4f}", str(s.iterations), f"{s.facts:,}", f"{s.derivations:,}")
        for r in s.rules:
            t.add_row(f"  {r.loc.line}: {r.rule}", f"{r.seconds:.4f}", str(r.evaluations),
                      "", f"{r.derivations:,}")
    console.print(t)


class _Progress:
    """A rich status line on a terminal; silent otherwise."""

    def __init__(self, enabled: bool) -> None:
        self.enabled = enabled
        self._status: Any = None

    def __enter__(self) -> _Progress:
        if self.enabled:
            from rich.console import Console

            self._status = Console(file=sys.stderr).status("parsing")
            self._status.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._status is not None:
            self._status.__exit__(*exc)

    def status(self, text: str) -> None:
        if self._status is not None:
            self._status.update(text)

    def hook(self, what: str, a: int, b: int) -> None:
        if self._status is None:
            return
        if what == "stratum":
            self._status.update(f"materialising: stratum {a + 1}/{b}")
        else:
            self._status.update(f"materialising: stratum {b}, iteration {a}")


if __name__ == "__main__":
    sys.exit(main())

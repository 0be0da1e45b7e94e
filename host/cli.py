"""Command line: ``gpu-engine run PROGRAM.dl -F FACTS -D OUT`` (like ``souffle -F -D``), and
``export`` / ``update`` of a persistent store written by ``run --store``."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from gpu_engine.ir import ProgramError

from .io import read_facts, write_text_atomic

if TYPE_CHECKING:
    from .reasoner import Reasoner

ALGORITHMS = ("remat", "remat1c", "remat2c", "dred", "counting", "dredc", "bf", "bfc")


FORMAT_HELP = ("default IO of .input/.output directives that name none: 'file' (Soufflé's "
               "tab-separated <rel>.facts / <rel>.csv) or 'parquet' (<rel>.parquet, a file or a "
               "directory as Spark writes it)")


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
    run.add_argument("--modules", choices=["auto", "off"], default="auto",
                     help="transitive / symmetric-transitive closure modules where rules "
                          "match (paper 002; default auto) or plain seminaive evaluation")
    run.add_argument("--format", choices=["file", "parquet"], default="file", help=FORMAT_HELP)
    run.add_argument("--backend", choices=["local", "spark"], default="local",
                     help="'local': the columnar engine on this machine (GPU or CPU); "
                          "'spark': facts and fixpoint as Spark DataFrame operations")
    run.add_argument("--master", default="local[*]",
                     help="Spark master for --backend spark (local[N], spark://host:port, "
                          "yarn, k8s://..., or sc://host for Spark Connect)")
    run.add_argument("--spark-conf", action="append", default=[], metavar="KEY=VALUE",
                     help="a Spark setting for --backend spark (repeatable), e.g. "
                          "spark.driver.memory=8g")
    run.add_argument("--store", metavar="STORE_DIR",
                     help="also commit the program, dictionary, facts, materialisation and "
                          "derivation counters to this store (for export and update)")
    exp = sub.add_parser("export", help="write the .output relations of a store")
    exp.add_argument("store", metavar="STORE_DIR")
    exp.add_argument("-D", "--output", default=".",
                     help="directory for .output relations ('-' prints them)")
    exp.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    exp.add_argument("--format", choices=["file", "parquet"], default="file", help=FORMAT_HELP)
    upd = sub.add_parser("update", help="insert and delete explicit facts of a store and "
                                        "maintain its materialisation incrementally")
    upd.add_argument("store", metavar="STORE_DIR")
    upd.add_argument("--insert", metavar="FACTS_DIR",
                     help="directory of fact files to insert (named like the -F inputs)")
    upd.add_argument("--delete", metavar="FACTS_DIR",
                     help="directory of fact files to delete (named like the -F inputs)")
    upd.add_argument("--algorithm", choices=ALGORITHMS,
                     help="maintenance algorithm (default: Counting when no stratum is "
                          "recursive, otherwise DRed^c)")
    upd.add_argument("--modules", choices=["auto", "off"],
                     help="DRed^c with TC/STC modules (DRed^c-MOD, paper 002) or without; "
                          "default: the store's setting")
    upd.add_argument("-D", "--output", help="also write the .output relations here "
                                            "('-' prints them)")
    upd.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    upd.add_argument("--format", choices=["file", "parquet"], default="file", help=FORMAT_HELP)
    upd.add_argument("--stats", action="store_true", help="print the update statistics")
    upd.add_argument("--stats-json", metavar="FILE", help="write the statistics as JSON")
    upd.add_argument("--quiet", action="store_true", help="no progress display")
    exl = sub.add_parser("explain", help="why a fact of a store holds: a proof tree of "
                                         "minimal height down to explicit facts")
    exl.add_argument("store", metavar="STORE_DIR")
    exl.add_argument("fact", help="the fact, e.g. 'path(1, 5)' or 'name(\"text\")'")
    exl.add_argument("--json", action="store_true", help="print the proof as JSON")
    exl.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    from .query_cli import add_query_parser

    add_query_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "run":
            return _run(args)
        if args.command == "export":
            return _export(args)
        if args.command == "update":
            return _update(args)
        if args.command == "explain":
            return _explain(args)
        if args.command == "query":
            from .query_cli import query_command

            return query_command(args)
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
    kwargs: dict[str, Any] = {}
    if args.backend == "spark":
        if args.store:
            raise ProgramError("--store needs the local backend (the Spark backend keeps no "
                               "derivation counters)")
        from .spark.adapter import session

        conf = dict(kv.split("=", 1) for kv in args.spark_conf if "=" in kv)
        bad = [kv for kv in args.spark_conf if "=" not in kv]
        if bad:
            raise ProgramError(f"--spark-conf expects KEY=VALUE, got {bad[0]!r}")
        kwargs = {"backend": "spark", "spark": session(args.master, conf=conf)}
    with progress:
        r = Reasoner(Path(args.program), device=args.device, progress=progress.hook,
                     counting=bool(args.store), modules=args.modules, **kwargs)
        for note in r.notes:
            print(f"note: {note}", file=sys.stderr)
        progress.status("loading facts")
        r.load_inputs(args.facts, default_io=args.format)
        progress.status("materialising")
        stats = r.materialise()
        # render everything before writing anything, so an error writes no output
        outputs = _render_outputs(r, args.output, args.format)
        if args.store:
            from .store import save_store

            progress.status("saving the store")
            save_store(r, args.store)
    _write_outputs(outputs, args.output)
    total = time.perf_counter() - t0
    if args.stats:
        _print_stats(stats, r.load_seconds, total)
    if args.stats_json:
        d = stats.to_dict()
        d.update(load_seconds=r.load_seconds, total_seconds=total, program=args.program)
        Path(args.stats_json).write_text(json.dumps(d, indent=2))
    return 0


Outputs = tuple[list[tuple[str, str, "str | pa.Table"]], list[tuple[str, int]]]


def _render_outputs(r: Reasoner, output: str, default_io: str = "file") -> Outputs:
    """The ``.output`` relations as (relation, destination, text or Arrow table for
    ``IO=parquet``), and the ``.printsize`` sizes; ``output == "-"`` sends every relation
    to stdout as text."""
    from .io import portable_table

    outputs: list[tuple[str, str, str | pa.Table]] = []
    for d in r.parsed.directives:
        if d.kind == "output":
            io = d.params.get("IO", default_io)
            if io not in ("file", "stdout", "parquet"):
                raise ProgramError(f"unsupported IO={io!r} for .output {d.relation} "
                                   "(file, stdout or parquet)", d.loc)
            if io == "parquet" and output != "-":
                fname = d.params.get("filename", f"{d.relation}.parquet")
                if r.device == "spark":  # written by Spark itself, not via the driver
                    outputs.append((d.relation, fname, r.to_spark(d.relation)))
                    continue
                outputs.append((d.relation, fname, portable_table(
                    r.relation(d.relation), r.program.relations[d.relation].arity)))
                continue
            delim = d.params.get("delimiter", "\t").encode().decode("unicode_escape")
            fname = d.params.get("filename", f"{d.relation}.csv")
            dest = "-" if (io == "stdout" or output == "-") else fname
            outputs.append((d.relation, dest, r.render(d.relation, delim)))
    wanted = [d.relation for d in r.parsed.directives if d.kind == "printsize"]
    known = r.relation_sizes() if wanted else {}
    sizes = [(name, known[name]) for name in wanted]
    return outputs, sizes


def _write_outputs(rendered: Outputs, output: str) -> None:
    """Write what :func:`_render_outputs` rendered (files atomically) and print sizes."""
    from .parquet_io import write_parquet_dataset

    outputs, sizes = rendered
    out_dir = Path(output)
    if output != "-" and any(dest != "-" for _, dest, _ in outputs):
        out_dir.mkdir(parents=True, exist_ok=True)
    for rel, dest, data in outputs:
        if dest == "-":
            sys.stdout.write(f"---------------\n{rel}\n===============\n{data}"
                             "===============\n")
            continue
        path = Path(dest) if Path(dest).is_absolute() else out_dir / dest
        if isinstance(data, pa.Table):
            write_parquet_dataset(data, path)
        elif isinstance(data, str):
            write_text_atomic(path, data)
        else:  # a Spark DataFrame (the Spark backend): Spark's own commit protocol
            data.write.mode("overwrite").parquet(str(path))
    for rel, n in sizes:
        print(f"{rel}\t{n}")


def _export(args: argparse.Namespace) -> int:
    """``export STORE -D OUT``: the store's ``.output`` relations, as ``run`` writes them."""
    from .store import open_store

    r = open_store(args.store, device=args.device)
    _write_outputs(_render_outputs(r, args.output, args.format), args.output)
    return 0


def _explain(args: argparse.Namespace) -> int:
    """``explain STORE FACT``: the proof tree (exit 0), or that the fact does not hold
    (exit 1)."""
    from .store import open_store

    r = open_store(args.store, device=args.device)
    proof = r.explain(args.fact)
    if args.json:
        print(json.dumps(proof.to_dict() if proof is not None else
                         {"fact": args.fact.strip(), "kind": "does not hold"}, indent=1))
    elif proof is None:
        print(f"{args.fact.strip()} does not hold")
    else:
        print(proof.text())
    return 0 if proof is not None else 1


def _update(args: argparse.Namespace) -> int:
    """``update STORE --insert DIR --delete DIR``: maintain, commit, then write outputs.

    Any error before the commit leaves the store exactly as it was."""
    from .store import StoreError, current_version, open_store, save_store, store_lock

    if current_version(args.store) is None:  # never create a lock file in a non-store
        raise StoreError(f"store {args.store} does not exist or has no committed version")
    t0 = time.perf_counter()
    progress = _Progress(enabled=not args.quiet and sys.stderr.isatty())
    with progress, store_lock(args.store):  # load-update-commit runs alone on the store
        progress.status("loading the store")
        r = open_store(args.store, device=args.device)
        if args.modules and args.modules != r.engine.modules:
            r.engine.set_modules(args.modules)
        progress.status("reading facts")
        insert = _read_update_facts(r, args.insert, args.format) if args.insert else {}
        delete = _read_update_facts(r, args.delete, args.format) if args.delete else {}
        progress.status("updating")
        stats = r.update_encoded(insert, delete, args.algorithm)
        outputs = _render_outputs(r, args.output, args.format) if args.output else None
        progress.status("committing")
        save_store(r, args.store)
    if outputs is not None:
        _write_outputs(outputs, args.output)
    total = time.perf_counter() - t0
    if args.stats:
        _print_update_stats(stats, total)
    if args.stats_json:
        d = stats.to_dict()
        d.update(total_seconds=total, store=args.store)
        Path(args.stats_json).write_text(json.dumps(d, indent=2))
    return 0


def _read_update_facts(r: Reasoner, facts_dir: str, default_io: str = "file"
                       ) -> dict[str, tuple[tuple[np.ndarray, ...], int]]:
    """Read the fact files of an update directory, encoded with the store's dictionary.

    ``.input`` relations use their directive's IO, filename and delimiter (an absolute
    filename is looked up by its base name in ``facts_dir``); every other relation reads
    ``<rel>.facts`` (tab-separated) or, with ``default_io == "parquet"``,
    ``<rel>.parquet``.  A missing file means no facts.
    """
    from .parquet_io import read_parquet_facts

    d = Path(facts_dir)
    if not d.is_dir():
        raise FileNotFoundError(f"{facts_dir}: no such fact directory")
    default_ext = ".parquet" if default_io == "parquet" else ".facts"
    sources: dict[str, list[tuple[str, str | None]]] = {}  # file, delimiter (None: parquet)
    for dr in r.parsed.directives:
        if dr.kind == "input":
            io = dr.params.get("IO", default_io)
            ext = ".parquet" if io == "parquet" else ".facts"
            fname = Path(dr.params.get("filename", f"{dr.relation}{ext}")).name
            delim = None if io == "parquet" else dr.params.get("delimiter", "\t")
            if delim is not None and "\\" in delim:
                delim = delim.encode().decode("unicode_escape")
            sources.setdefault(dr.relation, []).append((fname, delim))
    for name in r.program.relations:
        sources.setdefault(name, [(f"{name}{default_ext}",
                                   None if default_io == "parquet" else "\t")])
    read = {f for files in sources.values() for f, _ in files}
    for p in sorted([*d.glob("*.facts"), *d.glob("*.parquet")]):
        if p.name not in read:
            print(f"note: ignoring {p} (no relation reads it)", file=sys.stderr)
    facts: dict[str, tuple[tuple[np.ndarray, ...], int]] = {}
    for name, files in sources.items():
        rel = r.program.relations[name]
        parts: list[tuple[tuple[np.ndarray, ...], int]] = []
        for f, delim in files:
            if not (d / f).exists():
                continue
            if delim is None:
                parts.append(read_parquet_facts(d / f, rel, r.symbols))
            else:
                cols = read_facts(d / f, rel, r.symbols, delim)
                parts.append((tuple(cols), len(cols[0]) if cols else 0))
        if not parts:
            continue
        n = sum(k for _, k in parts)
        if rel.arity == 0:
            facts[name] = ((), min(n, 1))
        else:
            facts[name] = (tuple(np.concatenate([p[i] for p, _ in parts])
                                 for i in range(rel.arity)), n)
    return facts


def _stats_console() -> Any:
    """A console on stderr; when stderr is not a terminal (a file, a pipe, CI logs) tables
    are not wrapped to 80 columns: each row stays one line, for grep and diff."""
    from rich.console import Console

    wide = None if sys.stderr.isatty() else 100_000
    return Console(file=sys.stderr, highlight=False, width=wide)


def _print_stats(stats: Any, load_s: float, total_s: float) -> None:
    from rich.table import Table

    console = _stats_console()
    t = Table(title=f"materialisation on {stats.device}: {stats.facts:,} facts, "
              f"{stats.derivations:,} derivations, {stats.seconds:.3f} s "
              f"(load {load_s:.3f} s, total {total_s:.3f} s)")
    for col in ("stratum / rule", "module", "time s", "iterations", "facts", "derivations"):
        t.add_column(col, justify="left" if col in ("stratum / rule", "module") else "right")
    for s in stats.strata:
        kind = "recursive" if s.recursive else "non-recursive"
        t.add_row(f"[bold]stratum {s.index}[/] {','.join(s.relations)} ({kind})", "",
                  f"{s.seconds:.4f}", str(s.iterations), f"{s.facts:,}", f"{s.derivations:,}")
        for r in s.rules:
            t.add_row(f"  {r.loc.line}: {r.rule}", r.module, f"{r.seconds:.4f}",
                      str(r.evaluations),
                      "", f"{r.derivations:,}")
    console.print(t)


def _print_update_stats(stats: Any, total_s: float) -> None:
    from rich.table import Table

    console = _stats_console()
    t = Table(title=f"update with {stats.algorithm} on {stats.device}: "
              f"{stats.seconds:.3f} s (total {total_s:.3f} s)")
    t.add_column("")
    t.add_column("", justify="right")
    for key in ("deleted", "inserted", "overdeleted", "rederived", "added", "facts",
                "derivations"):
        t.add_row(key, f"{getattr(stats, key):,}")
    if stats.modules:
        t.add_row("modules", ", ".join(stats.modules))
    if stats.note:
        t.add_row("note", stats.note)
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

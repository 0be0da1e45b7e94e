"""Command line: ``gpu-engine run PROGRAM.dl -F FACTS -D OUT`` (like ``souffle -F -D``), and
``export`` / ``update`` of a persistent store written by ``run --store``."""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from gpu_engine.ir import Location, ProgramError

from .cli_souffle import add_souffle_options, add_version, program_source, set_threads
from .io import read_facts, write_text_atomic

if TYPE_CHECKING:
    from .reasoner import Reasoner

ALGORITHMS = ("remat", "remat1c", "remat2c", "dred", "counting", "dredc", "bf", "bfc",
              "auto", "dred_eq", "bf_eq")  # the last three: equality (DRed≈, B/F≈)


FORMAT_HELP = ("default IO of .input/.output directives that name none: 'file' (Soufflé's "
               "tab-separated <rel>.facts / <rel>.csv) or 'parquet' (<rel>.parquet, a file or a "
               "directory as Spark writes it)")


NO_EXPAND_HELP = ("with an equality relation: write the rewritten rows (one per combination "
                  "of classes) and the classes as <rel>.classes (representative, member) "
                  "instead of the expansion")


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="gpu-engine",
                                description="GPU-accelerated columnar Datalog engine")
    add_version(p)
    sub = p.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="materialise a program and write its .output relations")
    run.add_argument("program", nargs="?",
                     help="Datalog program (.dl, Soufflé syntax); optional with --rules")
    run.add_argument("--rules", metavar="NAME",
                     help="run a rule set shipped with the package: owl2rl (OWL 2 RL/RDF "
                          "compiled against the --rdf ontology, owl:sameAs by rewriting), "
                          "owl2rl-generic (the rules over one triple relation), "
                          "owl2rl-spelled, owl2rl-eq")
    run.add_argument("--rdf", action="append", default=[], metavar="FILE",
                     help="RDF data (N-Triples, Turtle, N-Quads, TriG, RDF/XML; .gz too) for "
                          "the triple relation (repeatable)")
    run.add_argument("--rdf-relation", default="triple", metavar="REL",
                     help="relation that --rdf files fill (default: triple)")
    run.add_argument("--rdf-format", choices=["nt", "ttl"], default="nt",
                     help="format of IO=rdf outputs that name none (default nt: N-Triples)")
    run.add_argument("-F", "--facts", default=".", help="directory of .input fact files")
    run.add_argument("-D", "--output", default=".",
                     help="directory for .output relations ('-' prints each once, with a "
                          "header line of its attribute names, as Soufflé's -D-)")
    run.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    run.add_argument("--stats", action="store_true",
                     help="print time, iterations, facts and derivations per stratum and rule")
    run.add_argument("--stats-json", metavar="FILE", help="write the statistics as JSON")
    run.add_argument("-p", "--profile", metavar="FILE",
                     help="write the run's profile as JSON: per stratum and rule times, "
                          "rounds, derivations, relation sizes, phase times (Soufflé's -p)")
    run.add_argument("--quiet", action="store_true", help="no progress display")
    run.add_argument("--modules", choices=["auto", "off"], default="auto",
                     help="transitive / symmetric-transitive closure modules where rules "
                          "match (paper 002; default auto) or plain seminaive evaluation")
    run.add_argument("--decompose", choices=["auto", "all", "off"], default=None,
                     help="hypertree decompositions (paper 003): 'auto' (default) for rules "
                          "with a cyclic body, 'all' for every rule with two or more atoms, "
                          "'off'")
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
    run.add_argument("--word-size", type=int, choices=[32, 64], default=32,
                     help="bits of number, unsigned and float values: 32 (Soufflé's default "
                          "build) or 64 (its 64-bit build); a store keeps it")
    run.add_argument("--store", metavar="STORE_DIR",
                     help="also commit the program, dictionary, facts, materialisation and "
                          "derivation counters to this store (for export and update)")
    run.add_argument("--rewrite-equality", action="store_true",
                     help="a relation whose equality axioms the rules spell out "
                          "(symmetry, transitivity, replacement) is rewritten with "
                          "representatives instead (Mat≈)")
    run.add_argument("--no-expand", action="store_true", help=NO_EXPAND_HELP)
    run.add_argument("--force", action="store_true",
                     help="with --store: replace an existing store (refused without it)")
    add_souffle_options(run)  # -I, -M, --no-preprocessor, -j, -w, --version; refused ones
    exp = sub.add_parser("export", help="write the .output relations of a store")
    exp.add_argument("store", metavar="STORE_DIR")
    exp.add_argument("-D", "--output", default=".",
                     help="directory for .output relations ('-' prints each once, with a "
                          "header line of its attribute names, as Soufflé's -D-)")
    exp.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    exp.add_argument("--format", choices=["file", "parquet"], default="file", help=FORMAT_HELP)
    exp.add_argument("--no-expand", action="store_true", help=NO_EXPAND_HELP)
    upd = sub.add_parser("update", help="insert and delete explicit facts of a store and "
                                        "maintain its materialisation incrementally")
    upd.add_argument("store", metavar="STORE_DIR")
    upd.add_argument("--insert", metavar="FACTS_DIR",
                     help="directory of fact files to insert (named like the -F inputs)")
    upd.add_argument("--delete", metavar="FACTS_DIR",
                     help="directory of fact files to delete (named like the -F inputs)")
    upd.add_argument("--algorithm", choices=ALGORITHMS,
                     help="maintenance algorithm (default: Counting when no stratum is "
                          "recursive, otherwise DRed^c, which rematerialises a deletion "
                          "whose overdeletion passes 0.35 of the last materialisation's "
                          "time; with an equality relation: auto, "
                          "DRed≈ with a fallback to Remat≈)")
    upd.add_argument("--modules", choices=["auto", "off"],
                     help="DRed^c with TC/STC modules (DRed^c-MOD, paper 002) or without; "
                          "default: the store's setting")
    upd.add_argument("--decompose", choices=["auto", "all", "off", "replan"],
                     help="hypertree decompositions (paper 003); 'replan' chooses them again "
                          "over the current facts; default: the store's setting")
    upd.add_argument("-D", "--output", help="also write the .output relations here "
                                            "('-' prints them)")
    upd.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    upd.add_argument("--format", choices=["file", "parquet"], default="file", help=FORMAT_HELP)
    upd.add_argument("--no-expand", action="store_true", help=NO_EXPAND_HELP)
    upd.add_argument("--fdu", choices=["wait", "inject", "restart", "interleave"],
                     default="wait",
                     help="updates of other processes spooled while this one runs (paper 004): "
                          "'wait' for the next commit (default), or join the running update "
                          "('inject' insertions, 'restart' it, 'interleave' deletions too); "
                          "all are committed as one version")
    upd.add_argument("--stats", action="store_true", help="print the update statistics")
    upd.add_argument("--stats-json", metavar="FILE", help="write the statistics as JSON")
    upd.add_argument("-p", "--profile", metavar="FILE",
                     help="write the update's profile as JSON (statistics, relation sizes, "
                          "phase times)")
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
        if getattr(args, "stats_json", None):  # before any output is written
            _check_writable(Path(args.stats_json), "--stats-json")
        if getattr(args, "profile", None):
            _check_writable(Path(args.profile), "--profile")
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
    except MemoryError as exc:
        print(f"gpu-engine: error: {out_of_memory_message(exc)}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        print("gpu-engine: interrupted (no output or store was changed by the unfinished "
              "step)", file=sys.stderr)
        return 130
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"gpu-engine: error: {exc}", file=sys.stderr)
        return 1
    return 2


def out_of_memory_message(exc: BaseException) -> str:
    """One line for a ``MemoryError``: where (the engine adds the stratum and rule, see
    :class:`gpu_engine.engine.OutOfMemory`) and the size NumPy could not allocate."""
    text = str(exc).strip() or "no detail"
    return f"out of memory: {text}"


def _check_writable(path: Path, what: str) -> None:
    """Refuse a file path that cannot be written, before anything is written."""
    if path.is_dir():
        raise OSError(f"{what} {path}: is a directory")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise OSError(f"{what} {path}: directory {parent} does not exist")
    if not os.access(parent, os.W_OK) or (path.exists() and not os.access(path, os.W_OK)):
        raise OSError(f"{what} {path}: not writable")


def _run(args: argparse.Namespace) -> int:
    from .reasoner import Reasoner

    t0 = time.perf_counter()
    owl_compiled = False  # --rules owl2rl: compiled against the --rdf ontology (owl2rl/compiler)
    if args.rules:
        from .owl2rl import is_compiled, rule_set

        if args.program:
            raise ProgramError("give a program or --rules, not both")
        owl_compiled = (is_compiled(args.rules) and bool(args.rdf) and args.backend != "spark"
                        and not args.store and args.rdf_relation == "triple")
        args.program = str(rule_set(args.rules))
    elif not args.program:
        raise ProgramError("run needs a program (or --rules NAME)")
    if args.store and not args.force:
        _refuse_existing_store(Path(args.store))
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
        if args.decompose not in (None, "off"):
            raise ProgramError("--decompose needs the local backend (the Spark backend "
                               "joins two relations at a time)")
    elif args.decompose:
        kwargs["decompose"] = args.decompose
    with progress:
        set_threads(args.jobs)
        def make(program: Any) -> Reasoner:
            return Reasoner(program, device=args.device, progress=progress.hook,
                            counting="auto" if args.store else False, modules=args.modules,
                            libraries=args.libraries or ("functors",),
                            library_dirs=args.library_dir or (".",),
                            **kwargs,
                            **({"rewrite_equality": True} if args.rewrite_equality else {}))

        if owl_compiled:
            from .owl2rl import compiler

            progress.status("compiling the ontology")
            prep = compiler.prepare(args.rdf, args.device, factory=make)
            r = prep.reasoner
        else:
            r = make(program_source(args))
        r.expand = not args.no_expand
        for note in [] if args.no_warn else r.notes:
            print(f"note: {note}", file=sys.stderr)
        progress.status("loading facts")
        marks = {"start": time.perf_counter()}
        if args.rdf and not owl_compiled:
            r.load_rdf(args.rdf, args.rdf_relation)
        r.load_inputs(args.facts, default_io=args.format)
        marks["load"] = time.perf_counter()
        progress.status("materialising")
        if owl_compiled:
            prep = compiler.materialise(prep, args.rdf, args.device, factory=make)
            r = prep.reasoner
            r.expand = not args.no_expand
            stats = r.stats
            if prep.note and not args.no_warn:
                print(f"note: {prep.note}", file=sys.stderr)
        else:
            stats = r.materialise()
        marks["materialise"] = time.perf_counter()
        # render everything before writing anything, so an error writes no output
        outputs = _render_outputs(r, args.output, args.format, args.rdf_format)
        marks["render"] = time.perf_counter()
        if args.store:
            from .store import save_store

            progress.status("saving the store")
            save_store(r, args.store)
        marks["store"] = time.perf_counter()
    _write_outputs(outputs, args.output)
    total = time.perf_counter() - t0
    if args.profile:
        from .profile import profile, write_profile

        write_profile(args.profile, profile(
            "run", r, {"total": total, "load": marks["load"] - marks["start"],
                       "materialise": marks["materialise"] - marks["load"],
                       "outputs": marks["render"] - marks["materialise"] + (
                           time.perf_counter() - marks["store"]),
                       "store": marks["store"] - marks["render"]},
            program=args.program, materialisation=stats.to_dict(),
            relations=r.relation_sizes()))
    if args.stats:
        _print_stats(stats, r.load_seconds, total)
    if args.stats_json:
        d = stats.to_dict()
        d.update(load_seconds=r.load_seconds, total_seconds=total, program=args.program)
        write_text_atomic(Path(args.stats_json), json.dumps(d, indent=2))
    return 0


def _refuse_existing_store(d: Path) -> None:
    """``run --store`` over an existing store (or any non-empty directory) needs
    ``--force``: it would replace what is there."""
    from .store import StoreError, current_version

    if d.exists() and not d.is_dir():
        raise StoreError(f"--store {d}: exists and is not a directory")
    if d.is_dir() and any(p.name != "LOCK" for p in d.iterdir()):
        what = "a store" if current_version(d) is not None else "a non-empty directory"
        raise StoreError(f"--store {d}: {what} already exists there; use --force to "
                         "replace it, or 'update' to change it")


Outputs = tuple[list[tuple[str, str, Any, "str | None"]], list[tuple[str, int]]]


def _render_outputs(r: Reasoner, output: str, default_io: str = "file",
                    rdf_format: str = "nt") -> Outputs:
    """The ``.output`` relations as (relation, destination, data, header line): data is
    the file's bytes (text, gzip with ``compress=true``), text for stdout, or an Arrow
    table (a Spark DataFrame on the Spark backend) for ``IO=parquet``; and the
    ``.printsize`` sizes.  ``output == "-"`` sends every output directive to stdout
    under a header line (Soufflé's ``-D-``, ``IODefaults``: ``IO=stdout`` and
    ``headers=true`` replace the directive's own, its delimiter, ``rfc4180`` and
    ``attributeNames`` stay, a relation with two directives prints twice; ``IO=rdf``
    keeps its format)."""
    from .io import encode_output, header_line, portable_table
    from .io_params import io_options

    outputs: list[tuple[str, str, Any, str | None]] = []
    databases: dict[str, Any] = {}  # IO=sqlite: one SqliteOutput per database
    for d in r.parsed.directives:
        if d.kind == "output" and output == "-" and d.params.get("IO") != "rdf":
            opts = replace(io_options(d), headers=True, compress=False)
            outputs.append((d.relation, "-", r.render(d.relation, opts.delimiter,
                                                      options=opts),
                            header_line(r.program.relations[d.relation], opts)))
            continue
        if d.kind == "output":
            io = d.params.get("IO", default_io)
            if io not in ("file", "stdout", "parquet", "json", "jsonfile", "sqlite", "rdf"):
                raise ProgramError(f"unsupported IO={io!r} for .output {d.relation} "
                                   "(file, stdout, parquet, jsonfile, json, sqlite or rdf)", d.loc)
            if io in ("json", "jsonfile", "sqlite"):
                _render_other(r, d, io, output, outputs, databases)
                continue
            opts = io_options(d)
            if io == "parquet" and output != "-":
                fname = d.params.get("filename", f"{d.relation}.parquet")
                if r.device == "spark":  # written by Spark itself, not via the driver
                    outputs.append((d.relation, fname, r.to_spark(d.relation), None))
                    continue
                outputs.append((d.relation, fname, portable_table(
                    r.relation(d.relation), r.program.relations[d.relation].arity), None))
                continue
            if io == "rdf":  # N-Triples / Turtle (host/rdf.py)
                from .rdf import rdf_output

                fname, data = rdf_output(r, d.relation, d.params, rdf_format)
                dest = "-" if output == "-" else fname
                outputs.append((d.relation, dest, data.decode() if dest == "-" else data, None))
                continue
            fname = d.params.get("filename", f"{d.relation}.csv")
            dest = "-" if (io == "stdout" or output == "-") else fname
            text = r.render(d.relation, opts.delimiter, options=opts)
            header = header_line(r.program.relations[d.relation], opts)
            if dest == "-":
                outputs.append((d.relation, dest, text, header))
            else:
                full = text if header is None else f"{header}\n{text}"
                outputs.append((d.relation, dest, encode_output(full, opts), None))
    for db, sq in databases.items():
        if sq.db.startswith(("file:", ":memory:")):
            outputs.append((sq.tables[0][0], "-sqlite", sq, None))  # SQLite opens the URI
        else:
            path = Path(db) if Path(db).is_absolute() else Path(output) / db
            outputs.append((sq.tables[0][0], db, sq.build(path), None))
    if r.program.equality is not None and not getattr(r, "expand", True):
        from .equality import classes_output

        outputs.append(classes_output(r, output))
    wanted = [d.relation for d in r.parsed.directives if d.kind == "printsize"]
    known = r.relation_sizes() if wanted else {}
    sizes = [(name, known[name]) for name in wanted]
    return outputs, sizes


def _render_other(r: Reasoner, d: Any, io: str, output: str,
                  outputs: list[tuple[str, str, Any, str | None]], databases: dict[str, Any]
                  ) -> None:
    """JSON (``host.json_io``) and SQLite (``host.sqlite_io``) outputs of directive ``d``:
    ``IO=json`` goes to stdout as it is (destination ``-raw``)."""
    rel = r.program.relations[d.relation]
    cols = r.engine.columns(d.relation)
    n = r.engine.size(d.relation)
    if io == "sqlite":
        from .sqlite_io import SqliteOutput, check_sqlite_relation, database_name, resolve

        check_sqlite_relation(rel, d.loc)
        if output == "-":
            raise ProgramError(f"IO=sqlite for .output {d.relation} needs an output "
                               "directory (-D DIR), not -D-", d.loc)
        db = database_name(d)
        target = resolve(db, output) if db.startswith(("file:", ":memory:")) else db
        sq = databases.setdefault(target, SqliteOutput(target, symbols=r.symbols))
        sq.add(d.params.get("name", d.relation), rel, tuple(cols), n)
        return
    from .json_io import check_json_relation, render_json

    check_json_relation(rel, d.loc)
    host_cols = tuple(np.asarray(c) for c in cols)
    text = render_json(host_cols, rel, r.symbols, n, d.params.get("format", "list") == "object")
    if io == "json" or output == "-":
        outputs.append((d.relation, "-raw", text, None))
    else:
        name = d.params.get("name", d.relation)
        outputs.append((d.relation, d.params.get("filename", f"{name}.json"),
                        text.encode("utf-8"), None))


def _special(path: Path) -> bool:
    """Whether ``path`` exists and is not a regular file or directory (a device, a FIFO):
    such an output is written into, as Soufflé does, not replaced by a rename."""
    import stat

    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def _write_outputs(rendered: Outputs, output: str) -> None:
    """Write what :func:`_render_outputs` rendered and print sizes.

    Every file and Parquet directory is first written beside its destination; only when
    all were written are they renamed into place, so an error (or Ctrl-C) while writing
    leaves the old outputs and no temporary file.  Spark DataFrames (the Spark backend)
    are written last, by Spark's own commit protocol."""
    import shutil

    from .io import stage_file
    from .parquet_io import commit_parquet_dataset, stage_parquet_dataset

    outputs, sizes = rendered
    out_dir = Path(output)
    if output != "-" and any(dest != "-" for _, dest, _, _ in outputs):
        out_dir.mkdir(parents=True, exist_ok=True)
    staged: list[tuple[Path, Path, bool]] = []  # (temporary, destination, is a directory)
    specials: list[tuple[Path, bytes]] = []
    spark_frames: list[tuple[Path, Any]] = []
    try:
        for _rel, dest, data, _ in outputs:
            if dest in ("-", "-raw", "-sqlite"):
                continue
            path = Path(dest) if Path(dest).is_absolute() else out_dir / dest
            if path.is_dir() and not isinstance(data, pa.Table):
                raise OSError(f"cannot write output {path}: it is a directory")
            if isinstance(data, pa.Table):
                staged.append((stage_parquet_dataset(data, path), path, True))
            elif isinstance(data, bytes) and _special(path):
                specials.append((path, data))  # a device or FIFO: written into, never replaced
            elif isinstance(data, bytes):
                staged.append((stage_file(path, data), path, False))
            else:
                spark_frames.append((path, data))
        while staged:  # all written: rename into place
            tmp, path, is_dir = staged[0]
            if is_dir:
                commit_parquet_dataset(tmp, path)
            else:
                os.replace(tmp, path)
            staged.pop(0)
        for path, data in specials:  # after the files: a device write cannot be undone
            with open(path, "wb") as f:
                f.write(data)
        for _rel, dest, data, _ in outputs:  # SQLite databases named by a URI
            if dest == "-sqlite":
                data.write_uri()
    finally:
        for tmp, _, is_dir in staged:
            if is_dir:
                shutil.rmtree(tmp, ignore_errors=True)
            else:
                tmp.unlink(missing_ok=True)
    for rel, dest, data, header in outputs:
        if dest == "-raw":  # IO=json: the JSON text as it is
            sys.stdout.write(data)
        elif dest == "-":
            head = "" if header is None else f"{header}\n"
            sys.stdout.write(f"---------------\n{rel}\n{head}===============\n{data}"
                             "===============\n")
    for path, frame in spark_frames:  # a Spark DataFrame: Spark's own commit protocol
        frame.write.mode("overwrite").parquet(str(path))
    for rel, n in sizes:
        print(f"{rel}\t{n}")


def _export(args: argparse.Namespace) -> int:
    """``export STORE -D OUT``: the store's ``.output`` relations, as ``run`` writes them."""
    from .store import open_store

    r = open_store(args.store, device=args.device)
    r.expand = not args.no_expand
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

    The update is spooled first (``host/update_spool.py``); the process holding the store's
    lock composes every spooled update and commits them as one version, so updates from
    several processes at once cost one maintenance.  Any error before the commit leaves
    the store exactly as it was."""
    from . import update_spool as spool
    from .store import StoreError, current_version, open_store, read_meta, save_store, store_lock

    if current_version(args.store) is None:  # never create a lock file in a non-store
        raise StoreError(f"store {args.store} does not exist or has no committed version")
    t0 = time.perf_counter()
    progress = _Progress(enabled=not args.quiet and sys.stderr.isatty())
    entry = spool.spool_update(args.store, args.insert, args.delete,
                               {"algorithm": args.algorithm, "modules": args.modules,
                                "format": args.format})
    outputs = None
    try:
        with progress, store_lock(args.store):  # load-update-commit runs alone on the store
            spool.settle(args.store, read_meta(args.store).get("extra", {})
                         .get("fdu_applied", []))
            stats = spool.take_result(args.store, entry)  # another process applied it
            if stats is None:
                progress.status("loading the store")
                r = open_store(args.store, device=args.device)
                r.expand = not args.no_expand
                if args.modules and args.modules != r.engine.modules:
                    r.engine.set_modules(args.modules)
                if args.decompose == "replan":
                    r.engine.hd.replan()
                elif args.decompose:
                    r.engine.hd.set_mode(args.decompose)
                marks = {"load_store": time.perf_counter()}
                progress.status("updating")  # reads, composes and applies every spooled update
                stats, applied = spool.apply_spool(
                    r, args.store, entry, lambda rr, d, fmt: _read_update_facts(rr, str(d), fmt),
                    (args.insert, args.delete), policy=args.fdu)
                marks["read_facts"] = marks["update"] = time.perf_counter()  # reading included
                outputs = _render_outputs(r, args.output, args.format) if args.output else None
                marks["render"] = time.perf_counter()
                progress.status("committing")
                save_store(r, args.store, extra={"fdu_applied": applied})
                marks["commit"] = time.perf_counter()
                spool.finish_all(r, args.store, entry)
            else:
                r = open_store(args.store, device=args.device) if (
                    args.output or args.profile) else None
                if r is not None:
                    r.expand = not args.no_expand
                marks = dict.fromkeys(("load_store", "read_facts", "update", "render",
                                       "commit"), time.perf_counter())
                if args.output:
                    outputs = _render_outputs(r, args.output, args.format)
    except BaseException:
        spool.withdraw(args.store, entry)
        raise
    if outputs is not None:
        _write_outputs(outputs, args.output)
    total = time.perf_counter() - t0
    if args.profile:
        from .profile import profile, write_profile

        write_profile(args.profile, profile(
            "update", r, {"total": total, "load_store": marks["load_store"] - t0,
                          "read_facts": marks["read_facts"] - marks["load_store"],
                          "update": marks["update"] - marks["read_facts"],
                          "outputs": marks["render"] - marks["update"] + (
                              time.perf_counter() - marks["commit"]),
                          "commit": marks["commit"] - marks["render"]},
            store=args.store, update=stats.to_dict(), relations=r.relation_sizes()))
    if args.stats:
        _print_update_stats(stats, total)
    if args.stats_json:
        d = stats.to_dict()
        d.update(total_seconds=total, store=args.store)
        write_text_atomic(Path(args.stats_json), json.dumps(d, indent=2))
    return 0


def _read_update_facts(r: Reasoner, facts_dir: str, default_io: str = "file"
                       ) -> dict[str, tuple[tuple[np.ndarray, ...], int]]:
    """Read the fact files of an update directory, encoded with the store's dictionary.

    ``.input`` relations use their directive's IO, filename and delimiter (an absolute
    filename is looked up by its base name in ``facts_dir``); every other relation reads
    ``<rel>.facts`` (tab-separated) or, with ``default_io == "parquet"``,
    ``<rel>.parquet``.  A missing file means no facts; a file no relation reads is an
    error (nothing is committed).
    """
    from .io import FactsError
    from .io_params import IOOptions, io_options
    from .parquet_io import read_parquet_facts

    d = Path(facts_dir)
    if not d.is_dir():
        raise FileNotFoundError(f"{facts_dir}: no such fact directory")
    default_ext = ".parquet" if default_io == "parquet" else ".facts"
    sources: dict[str, list[tuple[str, IOOptions | None]]] = {}  # file, options (None: parquet)
    for dr in r.parsed.directives:
        if dr.kind == "input":
            io = dr.params.get("IO", default_io)
            if io not in ("file", "parquet"):
                raise ProgramError(f"update fact directories hold .facts or .parquet files; "
                                   f".input {dr.relation} reads IO={io}", dr.loc)
            ext = ".parquet" if io == "parquet" else ".facts"
            fname = Path(dr.params.get("filename", f"{dr.relation}{ext}")).name
            sources.setdefault(dr.relation, []).append(
                (fname, None if io == "parquet" else io_options(dr)))
    for name in r.program.relations:
        sources.setdefault(name, [(f"{name}{default_ext}",
                                   None if default_io == "parquet" else IOOptions())])
    read = {f for files in sources.values() for f, _ in files}
    unread = [p for p in sorted(d.iterdir()) if p.name not in read
              and not p.name.startswith(".") and (p.is_file() or p.suffix == ".parquet")]
    if unread:  # a misnamed file would otherwise commit an update that changes nothing
        raise FactsError(f"no relation reads {unread[0].name} (update files are named "
                         f"<relation>{default_ext} or after an .input directive's filename; "
                         f"relations: {', '.join(sorted(r.program.relations))})",
                         Location(str(unread[0]), 0, 0))
    facts: dict[str, tuple[tuple[np.ndarray, ...], int]] = {}
    for name, files in sources.items():
        rel = r.program.relations[name]
        parts: list[tuple[tuple[np.ndarray, ...], int]] = []
        for f, opts in files:
            if not (d / f).exists():
                continue
            if opts is None:
                parts.append(read_parquet_facts(d / f, rel, r.symbols))
            else:
                cols = read_facts(d / f, rel, r.symbols, options=opts)
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
    _print_oom(console, stats)
    eq = getattr(stats, "equality", None)
    if eq:
        console.print(
            f"equality {eq['relation']} (rewriting): {eq['classes']:,} classes of two or more "
            f"members (largest {eq['largest_class']:,}), {eq['merged_constants']:,} constants "
            f"merged in {eq['merge_rounds']} merge rounds; {stats.facts:,} rewritten facts "
            f"stand for {eq['expanded_facts']:,}")


def _print_oom(console: Any, stats: Any) -> None:
    """What a device out-of-memory changed: retries with smaller join chunks, the CPU path."""
    if stats.oom_retries:
        console.print(f"device out of memory: {stats.oom_retries} rule evaluation(s) retried "
                      "with smaller join chunks")
    if stats.fallback:
        console.print(f"fallback: {stats.fallback}")


def _print_update_stats(stats: Any, total_s: float) -> None:
    from rich.table import Table

    console = _stats_console()
    t = Table(title=f"update with {stats.algorithm} on {stats.device}: "
              f"{stats.seconds:.3f} s (total {total_s:.3f} s)")
    t.add_column("")
    t.add_column("", justify="right")
    for key in ("deleted", "inserted", "overdeleted", "rederived", "added", "facts",
                "derivations", "rounds", "composed", "injected", "aborted", "restarted",
                "interleaved"):
        t.add_row(key, f"{getattr(stats, key):,}")
    if stats.checked:  # B/F≈: checked, proved, disproved (re-added = added)
        for key in ("checked", "proved", "disproved"):
            t.add_row(key, f"{getattr(stats, key):,}")
    if stats.modules:
        t.add_row("modules", ", ".join(stats.modules))
    if stats.note:
        t.add_row("note", stats.note)
    for why in getattr(stats, "refused", []):  # arrivals that could not join (--fdu)
        t.add_row("refused", why)
    console.print(t)
    _print_oom(console, stats)


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

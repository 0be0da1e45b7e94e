"""``gpu-engine query STORE 'path(1, X), edge(X, Y)'``: answer a query over a store."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

FORMATS = ("tsv", "csv", "json")


def add_query_parser(sub: Any) -> None:
    """Add the ``query`` subcommand to the CLI's subparsers."""
    q = sub.add_parser(
        "query", help="answer a query (a rule body) over the materialisation of a store",
        description="Answer a query over a store's materialisation without changing it: a "
                    "rule body of atoms (any relation of the program; constants, variables, "
                    "_ and functor expressions as arguments), negated atoms (!edge(X, 3)), "
                    "comparisons (X < 5, X != Y) and ';' between alternatives. One output "
                    "column per named variable, in order of first appearance; distinct rows, "
                    "sorted. A query without named variables prints true or false.")
    q.add_argument("store", metavar="STORE_DIR")
    q.add_argument("query", metavar="QUERY", help="e.g. 'path(1, X), edge(X, Y), X < Y'")
    q.add_argument("--format", choices=FORMATS, default="tsv",
                   help="output format: tsv (default; values as Soufflé prints them), csv, "
                        "or json (an array of objects, one per row)")
    q.add_argument("--header", action="store_true",
                   help="print a header line of variable names first (tsv, csv)")
    q.add_argument("--limit", type=int, metavar="N", help="print at most N rows")
    q.add_argument("--device", choices=["auto", "cpu", "gpu"], default="auto")
    q.add_argument("--stats", action="store_true",
                   help="print the time to load the store and to answer the query")
    q.add_argument("-p", "--profile", metavar="FILE",
                   help="write the times and the row count as JSON (see host/profile.py)")


def query_command(args: argparse.Namespace) -> int:
    """Run ``gpu-engine query`` (errors propagate to the CLI's handler)."""
    from .query import answer, format_result
    from .store import open_store

    if args.limit is not None and args.limit < 0:
        raise ValueError(f"--limit must be at least 0, not {args.limit}")
    t0 = time.perf_counter()
    r = open_store(args.store, device=args.device)
    t1 = time.perf_counter()
    result = answer(r, args.query, args.limit)
    t2 = time.perf_counter()
    text = format_result(result, args.format, args.header)
    t3 = time.perf_counter()
    sys.stdout.write(text)
    if args.profile:
        from .profile import profile, write_profile

        write_profile(args.profile, profile(
            "query", r, {"total": time.perf_counter() - t0, "load_store": t1 - t0,
                         "answer": t2 - t1, "format": t3 - t2},
            store=args.store, query={"text": args.query, "rows": result.table.num_rows}))
    if args.stats:
        print(f"store loaded in {t1 - t0:.3f} s; query answered in {t2 - t1:.4f} s "
              f"({result.table.num_rows:,} rows, formatted in {t3 - t2:.4f} s) on "
              f"{r.device}", file=sys.stderr)
    return 0

"""Expansion throughput of rewritten rows (Mat≈ answers): before / after in one run.

``python -m benchmarks.equality_expand [--rows N] [--device cpu] [--repeat 3] [--out FILE]``
prints one JSON line per case and method (``make bench-eq-expand``).  Cases: 1, 2 and 3
domain columns (plus one non-domain column) over classes of a few members, and one large
class (4,000 members) read by a 1-column relation; each expands to about ``--rows``
output rows.  Methods: ``pairwise`` (the former implementation: position by position
through the join expansion, then a sort-deduplicate), ``sorted`` (the columnar expansion
with the rank sort: what ``Reasoner.relation`` returns), ``chunks`` (columnar, unsorted,
in chunks: what ``host.equality.expanded_batches`` streams).  The best of ``--repeat``
runs, methods interleaved; rows/s is output rows per second.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np
from gpu_engine.kernels.backend import get_backend

from gpu_engine.equality_expand import class_index, expand_chunks, expand_pairwise, expand_sorted
from gpu_engine.rowset import RowSet

CASES = (("1-column", 1, 10), ("2-column", 2, 4), ("3-column", 3, 3),
         ("large-class", 1, 4000))


def data(be, k: int, cls: int, rows: int, seed: int = 0):
    """(ρ, rewritten columns): classes of ``cls`` members over 2M ids, rewritten rows with
    ``k`` domain columns and one column of 1,000 values, expanding to about ``rows``."""
    rng = np.random.default_rng(seed)
    n_ids = max(2_000_000, 4 * cls)
    rho = (np.arange(n_ids, dtype=np.int64) // cls) * cls
    reps = np.arange(0, n_ids, cls, dtype=np.int64)
    n_in = max(1, rows // cls ** k)
    if cls > 1000:  # a large class: every row reads it
        cols = (np.zeros(n_in, dtype=np.int64), np.arange(n_in, dtype=np.int64))
    else:
        cols = tuple(rng.choice(reps, n_in) for _ in range(k)) + (
            rng.integers(0, 1000, n_in),)
    rs = RowSet.from_columns(be, tuple(be.asarray(c) for c in cols), len(cols))
    return be.asarray(rho), rs.cols


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=None)
    args = ap.parse_args(argv)
    be = get_backend(args.device)
    methods = {"pairwise": lambda *a: expand_pairwise(*a),
               "sorted": lambda *a: expand_sorted(*a),
               "chunks": lambda *a: [c[0] for c in expand_chunks(*a)]}
    lines = []
    for name, k, cls in CASES:
        rho, cols = data(be, k, cls, args.rows)
        index = class_index(be, rho)
        pos = tuple(range(k))
        best: dict[str, float] = {}
        n_out: dict[str, int] = {}
        for rep in range(args.repeat + 1):  # the first round warms up (compiled kernels)
            for m, fn in methods.items():
                be.synchronize() if hasattr(be, "synchronize") else None
                t = time.perf_counter()
                out = fn(be, cols, pos, *index)
                if hasattr(be, "synchronize"):
                    be.synchronize()
                dt = time.perf_counter() - t
                n_out[m] = sum(len(c) for c in out) if m == "chunks" else len(out[0])
                if rep:
                    best[m] = min(best.get(m, dt), dt)
        assert len(set(n_out.values())) == 1, n_out
        for m in methods:
            line = {"bench": "equality_expand", "case": name, "domain_columns": k,
                    "class_size": cls, "rows_in": int(len(cols[0])), "rows_out": n_out[m],
                    "method": m, "device": be.name if hasattr(be, "name") else args.device,
                    "seconds": round(best[m], 4),
                    "rows_per_second": round(n_out[m] / best[m]),
                    "speedup_vs_pairwise": round(best["pairwise"] / best[m], 2),
                    "machine": platform.node()}
            lines.append(line)
            print(json.dumps(line), flush=True)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a", encoding="utf-8") as f:
            for line in lines:
                f.write(json.dumps(line) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

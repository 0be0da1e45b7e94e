"""Equality by rewriting (Mat≈) against the same program with equality spelled out as rules.

``python -m benchmarks.equality [--sizes 300,1000,4000] [--device cpu] [--out FILE]``
prints one JSON line per measurement (``make bench-eq``).  The synthetic data set has one
class of ``n`` members (``m0..m{n-1}``, all sharing a key, merged by the
inverse-functional rule ``same(x, y) :- key(x, k), key(y, k)``) and ``B`` = 20 background
entities that each know one member; rules read the merged constants (a join through
``knows``, a rule constant ``"m{n-1}"`` that normalises to ``m0``, a self-join of
``attr``).  ``rewriting``: the program declares ``same`` an ``equality``;
``spelled-out``: ``same`` is a plain relation and the rules spell out reflexivity,
symmetry, transitivity and replacement in every symbol column (the engine's STC module
closes symmetry and transitivity by connected components; replacement costs |R| · n per
column); ``spelled-out-nomod``: the same with ``modules="off"`` (plain seminaive
evaluation, as paper 001's axiomatised runs: transitivity alone costs n³).  Both count the same expanded facts (``facts_expanded``), which is checked.
Each measurement runs in a fresh process (peak RSS is its own), with ``--timeout``,
after a warm-up run with 10 members (imports, compiled kernels).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

BACKGROUND = 20

RULES = """
.decl key(x: symbol, k: symbol)
.decl attr(x: symbol, v: symbol)
.decl knows(x: symbol, y: symbol)
.decl same(x: symbol, y: symbol){qualifier}
.decl fan(x: symbol, v: symbol)
.decl star(x: symbol)
.decl pair(v: symbol, w: symbol)
same(x, y) :- key(x, k), key(y, k).
fan(x, v) :- knows(x, y), attr(y, v).
star(x) :- knows(x, "m{last}").
pair(v, w) :- attr(x, v), attr(x, w).
"""

COLUMNS = {"key": 2, "attr": 2, "knows": 2, "same": 2, "fan": 2, "star": 1, "pair": 2}


def axioms() -> str:
    """Reflexivity, symmetry, transitivity and replacement for every symbol column."""
    lines = ["same(y, x) :- same(x, y).", "same(x, z) :- same(x, y), same(y, z)."]
    for rel, arity in COLUMNS.items():
        args = [f"c{i}" for i in range(arity)]
        for p in range(arity):
            lines.append(f"same({args[p]}, {args[p]}) :- {rel}({', '.join(args)}).")
            if rel != "same":
                moved = ["n" if i == p else a for i, a in enumerate(args)]
                lines.append(f"{rel}({', '.join(moved)}) :- {rel}({', '.join(args)}), "
                             f"same({args[p]}, n).")
    return "\n".join(lines) + "\n"


def program(n: int, mode: str) -> str:
    """The program text of ``mode`` (``rewriting`` or ``spelled-out``) for ``n`` members."""
    text = RULES.replace("{last}", str(n - 1))
    if mode == "rewriting":
        return text.replace("{qualifier}", " equality")
    return text.replace("{qualifier}", "") + axioms()


def facts(n: int) -> dict[str, list[tuple[str, str]]]:
    members = [f"m{i}" for i in range(n)]
    back = [f"b{j}" for j in range(BACKGROUND)]
    return {
        "key": [(m, "K") for m in members] + [(b, f"k{b}") for b in back],
        "attr": [(m, f"v{i % 4}") for i, m in enumerate(members)]
                + [(b, f"v{j % 4}") for j, b in enumerate(back)],
        "knows": [(b, members[(j * 7) % n]) for j, b in enumerate(back)],
    }


def measure(n: int, mode: str, device: str, warm: bool = True) -> dict:
    """One materialisation (in this process; ``warm``: after one of 10 members, so that
    imports and compiled kernels are not counted)."""
    import numpy as np

    from gpu_engine import Reasoner

    if warm:
        measure(10, mode, device, warm=False)
    r = Reasoner(program(n, mode.replace("-nomod", "")), device=device,
                 modules="off" if mode.endswith("-nomod") else "auto")
    for rel, rows in facts(n).items():
        r.add_facts(rel, np.array(rows))
    t0 = time.perf_counter()
    st = r.materialise()
    seconds = time.perf_counter() - t0
    sizes = r.relation_sizes()
    out = {"benchmark": "equality-class", "members": n, "mode": mode, "device": r.device,
           "seconds": round(seconds, 4), "derivations": st.derivations,
           "facts_stored": st.facts, "facts_expanded": sum(sizes.values()),
           "peak_memory_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
           "peak_device_bytes": st.peak_device_bytes}
    if st.equality is not None:
        out["merge_rounds"] = st.equality["merge_rounds"]
        t1 = time.perf_counter()  # answers: the expansion of every relation (output-bound)
        rows = sum(len(r.engine.expanded_columns(name)[0]) for name in COLUMNS)
        out["expand_seconds"] = round(time.perf_counter() - t1, 4)
        out["expand_rows_per_second"] = round(rows / max(out["expand_seconds"], 1e-9))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="300,1000,4000")
    ap.add_argument("--modes", default="rewriting,spelled-out,spelled-out-nomod")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--timeout", type=float, default=900)
    ap.add_argument("--out")
    ap.add_argument("--one", nargs=2, metavar=("N", "MODE"), help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one:
        print(json.dumps(measure(int(args.one[0]), args.one[1], args.device)))
        return 0
    lines = []
    for n in (int(x) for x in args.sizes.split(",")):
        got = {}
        for mode in args.modes.split(","):
            cmd = [sys.executable, "-m", "benchmarks.equality", "--one", str(n), mode,
                   "--device", args.device]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=args.timeout,
                                   check=False)
                line = (json.loads(p.stdout.strip().splitlines()[-1]) if p.returncode == 0
                        else {"benchmark": "equality-class", "members": n, "mode": mode,
                              "status": "error", "stderr": p.stderr[-2000:]})
            except subprocess.TimeoutExpired:
                line = {"benchmark": "equality-class", "members": n, "mode": mode,
                        "status": f"timeout after {args.timeout:.0f} s"}
            got[mode] = line
            lines.append(line)
            print(json.dumps(line), flush=True)
        a = got.get("rewriting", {})
        for other in ("spelled-out", "spelled-out-nomod"):
            b = got.get(other, {})
            if "seconds" not in a or "seconds" not in b:
                continue
            ratio = {"benchmark": "equality-class", "members": n, "mode": f"ratio {other}",
                     "time_ratio": round(b["seconds"] / max(a["seconds"], 1e-9), 1),
                     "derivation_ratio": round(b["derivations"] / max(a["derivations"], 1), 1),
                     "memory_ratio": round(b["peak_memory_bytes"]
                                           / max(a["peak_memory_bytes"], 1), 2),
                     "same_answers": a["facts_expanded"] == b["facts_expanded"]}
            lines.append(ratio)
            print(json.dumps(ratio), flush=True)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a", encoding="utf-8") as f:
            f.writelines(json.dumps(x) + "\n" for x in lines)
    return 0


if __name__ == "__main__":
    sys.exit(main())

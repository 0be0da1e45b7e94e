"""The cost of declaring equality when there is none: LUBM(k) under LUBM_L, as written and
with ``.decl same(x: symbol, y: symbol) equality`` added (no fact, no rule uses it: every
symbol column is in its domain, so the equality engine runs, with one merge step that finds
nothing and the reflexive closure at the end). Issue 13 asks for at most 1.1x.

```sh
python -m benchmarks.eq_overhead --size 10 --repeat 3 --out benchmarks/results/eq_overhead.jsonl
```

Each run is a fresh process (``--job``); the two variants alternate so that the load of a
shared machine falls on both alike; the ratio is taken over the best of each (wall and CPU
seconds of ``materialise``; CPU seconds are the steadier figure on a loaded machine).
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LUBM = ROOT.parent / "shared" / "bench-data" / "lubm"
DECL = "\n.decl same(x: symbol, y: symbol) equality\n"


def job(spec: dict[str, Any]) -> dict[str, Any]:
    from gpu_engine.host.ntriples import read_ntriples

    from gpu_engine import Reasoner

    text = (ROOT / "examples" / "lubm" / "LUBM_L.dl").read_text()
    if spec["variant"] == "declared":
        text += DECL
    data = read_ntriples(LUBM / f"lubm{spec['size']}.nt.gz")
    r = Reasoner(text, device=spec["device"])
    r.add_facts("TE", data)
    w, c = time.perf_counter(), time.process_time()
    st = r.materialise()
    w, c = time.perf_counter() - w, time.process_time() - c
    facts = sum(n for rel, n in r.relation_sizes().items() if rel != "same")
    return {"materialise_seconds": w, "materialise_cpu_seconds": c, "facts": facts,
            "derivations": st.derivations, "engine": type(r.engine).__name__}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--size", type=int, default=10)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--job", help=argparse.SUPPRESS)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.job:
        print(json.dumps(job(json.loads(args.job))))
        return 0
    runs: dict[str, list[dict[str, Any]]] = {"plain": [], "declared": []}
    warm = {"variant": "plain", "size": 1, "device": args.device}
    subprocess.run([sys.executable, "-m", "benchmarks.eq_overhead", "--job", json.dumps(warm)],
                   cwd=ROOT, capture_output=True, check=True)  # compiled kernels cached
    for _ in range(args.repeat):
        for variant in runs:
            spec = {"variant": variant, "size": args.size, "device": args.device}
            p = subprocess.run([sys.executable, "-m", "benchmarks.eq_overhead", "--job",
                                json.dumps(spec)], cwd=ROOT, capture_output=True, text=True,
                               check=True)
            runs[variant].append(json.loads(p.stdout.strip().splitlines()[-1]))
    best = {v: {k: min(r[k] for r in rs) for k in ("materialise_seconds",
                                                  "materialise_cpu_seconds")}
            for v, rs in runs.items()}
    rec = {"benchmark": "eq-overhead", "size": f"LUBM({args.size}) LUBM_L",
           "host": platform.node(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "runs": runs, "best": best,
           "same_facts": len({r["facts"] for rs in runs.values() for r in rs}) == 1,  # but same
           "ratio_wall": best["declared"]["materialise_seconds"]
           / best["plain"]["materialise_seconds"],
           "ratio_cpu": best["declared"]["materialise_cpu_seconds"]
           / best["plain"]["materialise_cpu_seconds"]}
    line = json.dumps(rec)
    print(line)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(line + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Claros- and DBpedia-style equality on generated data: the RDFox/VLog rule sets
``Claros_L``, ``Claros_LE`` and ``DBpedia_L`` (``../shared/bench-data/rdfox-aaai2016-rules``)
spell ``owl:sameAs`` out as rules (symmetry, transitivity and replacement in every position,
no reflexivity); Mat≈ (``rewrite_equality=True``, the CLI's ``--rewrite-equality``) turns
those axioms into an ``equality`` relation. Paper 001 Table 1 compares the two by time and
derivations; so does this benchmark, on data generated over the rule sets' own predicates
(the real data sets are not distributed with the rules).

```sh
python -m benchmarks.rdfox_eq --rules Claros_L --triples 20000 --classes 306,40,12x20 \\
    --out benchmarks/results/rdfox_eq.jsonl
```

Data (:func:`generate`, seeded): ``--individuals`` IRIs; every class the rules load from
``rdf:type`` gets members, every property edges, drawn uniformly (``--triples`` in all, and
``--member-facts`` more per member of a sameAs class); then
``owl:sameAs`` classes of the sizes ``--classes`` (``306`` as Claros' largest class, ``12x20``
for twelve classes of 20) as chains over distinct individuals, so that the members' facts
are copied to one another. Both runs must reach the same expanded facts (checked:
``same_facts``); ``ratio_time`` and ``ratio_derivations`` are spelled-out / Mat≈. Each run is
a fresh process with a time limit (``--timeout``) and its own peak memory.
"""

from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
RULES = ROOT.parent / "shared" / "bench-data" / "rdfox-aaai2016-rules"
SAME_AS = "<http://www.w3.org/2002/07/owl#sameAs>"
RDF_TYPE = "<http://www.w3.org/1999/02/22-rdf-syntax-ns#type>"


def rule_text(name: str) -> tuple[str, dict[str, str], dict[str, int]]:
    """(Soufflé text, predicate -> IRI it is loaded from, predicate -> arity) of a rule set."""
    from benchmarks.lubm_rules import parse_dlog, to_souffle

    path = RULES / f"{name}.dlog"
    prog = parse_dlog(path.read_text(encoding="utf-8"), name=name)
    return to_souffle(prog), dict(prog.loaded_from), dict(prog.arity)


def parse_classes(spec: str) -> list[int]:
    """``306,40,12x20`` -> [306, 40, 20, 20, ... (twelve)]."""
    out: list[int] = []
    for part in filter(None, spec.split(",")):
        if "x" in part:
            k, n = part.split("x")
            out += [int(n)] * int(k)
        else:
            out.append(int(part))
    return out


def generate(name: str, triples: int, individuals: int, classes: list[int],
             seed: int = 0, member_facts: int = 3) -> list[tuple[str, str, str]]:
    """Triples over the rule set's loaded classes and properties, plus owl:sameAs chains.

    ``triples`` facts with subjects and objects drawn uniformly from ``individuals`` IRIs
    (a pool large against ``triples`` keeps the rule sets' functional-property rules from
    merging much by chance), then ``member_facts`` more facts with each member of an
    ``owl:sameAs`` class as subject, so that replacement has something to copy."""
    _, loaded, arity = rule_text(name)
    rng = np.random.default_rng(seed)
    ind = [f"<http://example.org/{name}/i{i}>" for i in range(individuals)]
    kinds = [(p, iri) for p, iri in sorted(loaded.items()) if iri != SAME_AS]
    out: list[tuple[str, str, str]] = []
    members = rng.permutation(individuals)
    groups: list[list[int]] = []
    at = 0
    for size in classes:
        groups.append(members[at:at + size].tolist())
        at += size
        if len(groups[-1]) < size:
            raise ValueError(f"--individuals {individuals} is too few for classes {classes}")
    in_class = [m for g in groups for m in g]
    n = triples + member_facts * len(in_class)
    picks = rng.integers(0, len(kinds), n)
    subj = np.concatenate([rng.integers(0, individuals, triples),
                           np.repeat(np.array(in_class, dtype=np.int64), member_facts)])
    obj = rng.integers(0, individuals, n)
    for k, s, o in zip(picks.tolist(), subj.tolist(), obj.tolist()):
        pred, iri = kinds[k]
        if arity[pred] == 1:
            out.append((ind[s], RDF_TYPE, iri))
        else:
            out.append((ind[s], iri, ind[o]))
    for group in groups:
        out += [(ind[a], SAME_AS, ind[b]) for a, b in zip(group, group[1:])]
    return sorted(set(out))


def job(spec: dict[str, Any]) -> dict[str, Any]:
    import pyarrow as pa

    from gpu_engine import Reasoner

    text, _, _ = rule_text(spec["rules"])
    data = generate(spec["rules"], spec["triples"], spec["individuals"],
                    parse_classes(spec["classes"]), spec["seed"], spec["member_facts"])
    table = pa.table({"s": [t[0] for t in data], "p": [t[1] for t in data],
                      "o": [t[2] for t in data]})
    t0 = time.perf_counter()
    r = Reasoner(text, device=spec["device"],
                 rewrite_equality=spec["mode"] == "rewriting")
    r.add_facts("TE", table)
    t1 = time.perf_counter()
    c1 = time.process_time()
    st = r.materialise()
    t2 = time.perf_counter()
    c2 = time.process_time()
    sizes = r.relation_sizes()  # expanded under Mat≈
    d = st.to_dict()
    return {"input_triples": len(data), "setup_seconds": t1 - t0,
            "materialise_seconds": t2 - t1, "materialise_cpu_seconds": c2 - c1,
            "derivations": d.get("derivations"), "facts_expanded": sum(sizes.values()),
            "facts_stored": sum(r.engine.size(n) for n in sizes),
            "equality": d.get("equality"), "device": r.device,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024}


def _run(spec: dict[str, Any], timeout: float) -> dict[str, Any]:
    cmd = [sys.executable, "-m", "benchmarks.rdfox_eq", "--job", json.dumps(spec)]
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return {"status": "timeout", "wall_seconds": time.perf_counter() - t0,
                "lower_bound": True}
    if p.returncode != 0:
        return {"status": "error", "error": p.stderr.strip().splitlines()[-1:]}
    return {"status": "ok", **json.loads(p.stdout.strip().splitlines()[-1])}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rules", default="Claros_L", help="Claros_L, Claros_LE, DBpedia_L")
    ap.add_argument("--triples", type=int, default=20000)
    ap.add_argument("--individuals", type=int, default=50000)
    ap.add_argument("--member-facts", type=int, default=3)
    ap.add_argument("--classes", default="306,40,12x20")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--modes", default="rewriting,spelled-out")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--job", help=argparse.SUPPRESS)
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.job:
        print(json.dumps(job(json.loads(args.job))))
        return 0
    base = {"benchmark": "rdfox-eq", "rules": args.rules, "triples": args.triples,
            "individuals": args.individuals, "classes": args.classes, "seed": args.seed,
            "member_facts": args.member_facts,
            "host": platform.node(), "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
    recs = {}
    for mode in args.modes.split(","):
        spec = {"rules": args.rules, "triples": args.triples, "individuals": args.individuals,
                "classes": args.classes, "seed": args.seed, "device": args.device,
                "mode": mode, "member_facts": args.member_facts}
        recs[mode] = {**base, "mode": mode, **_run(spec, args.timeout)}
    rw, sp = recs.get("rewriting"), recs.get("spelled-out")
    if rw and sp and rw["status"] == sp["status"] == "ok":
        for rec in (rw, sp):
            rec["same_facts"] = rw["facts_expanded"] == sp["facts_expanded"]
        sp["ratio_time"] = sp["materialise_seconds"] / rw["materialise_seconds"]
        sp["ratio_cpu"] = sp["materialise_cpu_seconds"] / rw["materialise_cpu_seconds"]
        sp["ratio_derivations"] = sp["derivations"] / max(rw["derivations"], 1)
    lines = [json.dumps(r) for r in recs.values()]
    print("\n".join(lines))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a", encoding="utf-8") as f:
            f.write("".join(line + "\n" for line in lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

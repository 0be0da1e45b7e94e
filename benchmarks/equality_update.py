"""Deletions with equality by rewriting: B/F≈, DRed≈ (and auto) against Remat≈ (paper 001
Table 1 shape, brief §1.5 P3/P4).

``python -m benchmarks.equality_update [--entities 60000] [--deletions 100,1000,25%]
[--device cpu] [--out FILE]`` prints one JSON line per measurement.

The synthetic data set (``sameas``): ``entities`` individuals; classes of Zipf-distributed
sizes up to ``max_class`` (300) cover ``merged`` (30 %) of them, merged by the
inverse-functional rule ``same(x, y) :- key(x, k), key(y, k)`` (the others have keys of
their own); every individual has one ``attr`` and two ``knows`` edges to random
individuals; rules read the merged constants: ``fan(x, v) :- knows(x, y), attr(y, v)``,
``reach(x, v) :- fan(x, v), attr(x, v)``, ``star(x) :- knows(x, c)`` with ``c`` a member
of the largest class (a rule constant normalised to its representative).

Deletions are random explicit facts of every relation (keys among them, so classes
split).  For each size the same deletion runs on two copies of the same materialised
state, one per algorithm (``bf_eq``, ``dred_eq``, ``auto``) and one with ``remat``; the
rewritten rows and ρ are compared (same answer), and the line reports seconds, the ratio,
and the counts (overdeleted = doubtful for B/F≈, rederived, added, instances checked
backwards, DRed≈'s exploded classes, B/F≈'s checked, proved, disproved and re-added).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np

RULES = """
.decl key(x: symbol, k: symbol)
.decl attr(x: symbol, v: symbol)
.decl knows(x: symbol, y: symbol)
.decl same(x: symbol, y: symbol) equality
.decl fan(x: symbol, v: symbol)
.decl reach(x: symbol, v: symbol)
.decl star(x: symbol)
same(x, y) :- key(x, k), key(y, k).
fan(x, v) :- knows(x, y), attr(y, v).
reach(x, v) :- fan(x, v), attr(x, v).
star(x) :- knows(x, "{const}").
"""


def sameas(entities: int, max_class: int = 300, merged: float = 0.3, values: int = 50,
           seed: int = 0) -> tuple[str, dict[str, np.ndarray]]:
    """(program text, explicit facts as string arrays)."""
    rng = np.random.default_rng(seed)
    names = np.array([f"e{i}" for i in range(entities)], dtype=object)
    sizes: list[int] = []
    budget = int(entities * merged)
    while budget > 1:
        s = int(min(max_class, budget, max(2, rng.zipf(1.6))))
        sizes.append(s)
        budget -= s
    sizes[0] = min(max_class, max(sizes[0], max_class if budget >= 0 else sizes[0]))
    keys = np.array([f"k{i}" for i in range(entities)], dtype=object)
    perm = rng.permutation(entities)
    at = 0
    for c, s in enumerate(sorted(sizes, reverse=True)):
        keys[perm[at:at + s]] = f"K{c}"
        at += s
    biggest = names[perm[max(sizes) - 1]]
    attr_v = np.array([f"v{i}" for i in rng.integers(0, values, entities)], dtype=object)
    src = np.repeat(np.arange(entities), 2)
    dst = rng.integers(0, entities, len(src))
    facts = {
        "key": np.stack([names, keys], axis=1),
        "attr": np.stack([names, attr_v], axis=1),
        "knows": np.stack([names[src], names[dst]], axis=1),
    }
    return RULES.replace("{const}", str(biggest)), facts


EMAIL = "<http://swat.cse.lehigh.edu/onto/univ-bench.owl#emailAddress>"


def lubm_dup(universities: int = 1, dup: float = 0.1, seed: int = 0
             ) -> tuple[str, dict[str, np.ndarray]]:
    """LUBM(k) with the LUBM_L rules, ``dup`` of the individuals with an e-mail address
    copied under an alias IRI (every triple with them as subject), and the
    inverse-functional rule on ``emailAddress`` (OWL 2 RL prp-ifp) deriving ``sameAs``,
    declared ``equality`` over every symbol column (brief §1.5 ``lubm_dup``)."""
    from gpu_engine.host.ntriples import read_ntriples

    from benchmarks.programs import lubm_program
    from benchmarks.run import lubm_data_path

    t = read_ntriples(lubm_data_path(universities))
    s_, p_, o_ = (np.array(t.column(c).to_pylist(), dtype=object) for c in ("s", "p", "o"))
    rng = np.random.default_rng(seed)
    people = np.unique(s_[p_ == EMAIL])
    chosen = people[rng.random(len(people)) < dup]
    sel = np.isin(s_, chosen)
    alias = np.array([x[:-1] + "_dup>" for x in s_[sel]], dtype=object)
    te = np.concatenate([np.stack([s_, p_, o_], axis=1),
                         np.stack([alias, p_[sel], o_[sel]], axis=1)])
    text = (lubm_program("LUBM_L").text
            + "\n.decl sameAs(x: symbol, y: symbol) equality\n"
            + f'sameAs(x, y) :- TE(x, "{EMAIL}", e), TE(y, "{EMAIL}", e).\n')
    return text, {"TE": te}


def _state(text: str, facts: dict[str, np.ndarray], device: str) -> object:
    from gpu_engine import Reasoner

    r = Reasoner(text, device=device)
    for rel, rows in facts.items():
        r.add_facts(rel, rows)
    r.materialise()
    return r


def _same(a: object, b: object) -> bool:
    for n in a.program.relations:  # type: ignore[attr-defined]
        ca, cb = a.engine.columns(n), b.engine.columns(n)  # type: ignore[attr-defined]
        if any(not np.array_equal(x, y) for x, y in zip(ca, cb)):
            return False
    ra, rb = a.engine.rho(), b.engine.rho()  # type: ignore[attr-defined]
    m = min(len(ra), len(rb))
    return bool(np.array_equal(np.asarray(ra[:m]), np.asarray(rb[:m])))


def _pick(facts: dict[str, np.ndarray], k: int, seed: int) -> dict[str, np.ndarray]:
    """``k`` random explicit facts (of the relations in ``facts``)."""
    rng = np.random.default_rng(seed)
    sizes = {n: len(v) for n, v in facts.items()}
    total = sum(sizes.values())
    idx = np.sort(rng.choice(total, size=k, replace=False))
    out, at = {}, 0
    for n, v in facts.items():
        sel = idx[(idx >= at) & (idx < at + len(v))] - at
        if len(sel):
            out[n] = v[sel]
        at += len(v)
    return out


def measure(text: str, facts: dict[str, np.ndarray], k: int, device: str,
            algorithms: list[str], seed: int, keys: bool = True,
            dataset: str = "sameas", warmup: bool = False) -> list[dict]:
    """One deletion of ``k`` random explicit facts (``keys``: key facts among them, so
    classes split; otherwise only attr/knows facts) by Remat≈ and ``algorithms``;
    ``warmup``: each state first applies another deletion of ``k`` facts with the same
    algorithm, untimed (join indexes built, as in a store that has been updated)."""
    if keys:
        pool = facts
    elif "TE" in facts:  # lubm_dup: no e-mail triples (no class splits)
        te = facts["TE"]
        pool = {"TE": te[te[:, 1] != EMAIL]}
    else:
        pool = {n: v for n, v in facts.items() if n != "key"}
    dele = _pick(pool, k, seed)
    if warmup:
        pre = _pick(pool, 2 * k, seed + 7919)
        first = {n: v for n, v in pre.items()}
        keep = {n: {tuple(x) for x in v} for n, v in dele.items()}
        first = {n: np.array([x for x in v if tuple(x) not in keep.get(n, ())],
                             dtype=object)[:k] for n, v in first.items()}
        first = {n: v for n, v in first.items() if len(v)}
    base = _state(text, facts, device)
    n_e = sum(len(v) for v in facts.values())
    lines = []
    results = {}
    for alg in ["remat", *algorithms]:
        r = base if alg == "remat" else _state(text, facts, device)
        if warmup:
            r.update(delete=first, algorithm=alg)  # type: ignore[attr-defined]
        t0 = time.perf_counter()
        st = r.update(delete=dele, algorithm=alg)  # type: ignore[attr-defined]
        seconds = time.perf_counter() - t0
        results[alg] = (r, seconds)
        m = re.search(r"exploded ([\d,]+) classes \(([\d,]+) members\)", st.note)
        lines.append({"benchmark": "equality-update", "dataset": dataset, "warmup": warmup,
                      "deleting": "any" if keys else "no-key",
                      "explicit": n_e, "deleted": k, "algorithm": alg, "ran": st.algorithm,
                      "device": r.device, "seconds": round(seconds, 4),  # type: ignore[attr-defined]
                      "overdeleted": st.overdeleted, "rederived": st.rederived,
                      "added": st.added, "checked_backwards": st.backward,
                      "checked": st.checked, "proved": st.proved,
                      "disproved": st.disproved, "readded": st.added if st.checked else 0,
                      "exploded_classes": int(m.group(1).replace(",", "")) if m else 0,
                      "exploded_members": int(m.group(2).replace(",", "")) if m else 0,
                      "facts": st.facts, "note": st.note})
    remat_r, remat_s = results["remat"]
    for line in lines:
        line["speedup_vs_remat"] = round(remat_s / max(line["seconds"], 1e-9), 1)
        if line["algorithm"] != "remat":
            line["same_as_remat"] = _same(results[line["algorithm"]][0], remat_r)
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=["sameas", "lubm_dup"], default="sameas")
    ap.add_argument("--entities", type=int, default=60000, help="sameas: individuals")
    ap.add_argument("--universities", type=int, default=1, help="lubm_dup: LUBM(k)")
    ap.add_argument("--dup", type=float, default=0.1, help="lubm_dup: share duplicated")
    ap.add_argument("--deletions", default="100,1000,25%")
    ap.add_argument("--algorithms", default="bf_eq,dred_eq,auto")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--deleting", default="any,no-key",
                    help="any: random explicit facts; no-key: no key/e-mail facts")
    ap.add_argument("--warmup", action="store_true",
                    help="time a second deletion on each state (indexes built)")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.dataset == "sameas":
        text, facts = sameas(args.entities, seed=args.seed)
    else:
        text, facts = lubm_dup(args.universities, args.dup, args.seed)
    _state(text, {n: v[:50] for n, v in facts.items()}, args.device)  # warm-up
    n_e = sum(len(v) for v in facts.values())
    out = []
    for d in args.deletions.split(","):
        k = int(n_e * float(d[:-1]) / 100) if d.endswith("%") else int(d)
        for which in args.deleting.split(","):
            for line in measure(text, facts, k, args.device, args.algorithms.split(","),
                                args.seed + k, keys=which == "any",
                                dataset=args.dataset, warmup=args.warmup):
                print(json.dumps(line), flush=True)
                out.append(line)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a", encoding="utf-8") as f:
            f.writelines(json.dumps(x) + "\n" for x in out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

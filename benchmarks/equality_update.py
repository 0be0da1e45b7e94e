"""Deletions with equality by rewriting: B/F≈, DRed≈ (and auto) against Remat≈ (paper 001
Table 1 shape, brief §1.5 P3/P4).

``python -m benchmarks.equality_update [--dataset sameas|lubm_dup|owl2rl_dup]
[--entities 60000] [--universities 1] [--deletions 100,1000,25%] [--samples 3] [--table]
[--device cpu] [--out FILE]`` prints one JSON line per algorithm and deletion (the median
of ``--samples`` random deletions, each algorithm on a fresh state, Remat≈ and the others
alternately, with the load average) and, with ``--table``, a Markdown table in the shape
of paper 001 Table 1.

The synthetic data set (``sameas``): ``entities`` individuals; classes of Zipf-distributed
sizes up to ``max_class`` (300) cover ``merged`` (30 %) of them, merged by the
inverse-functional rule ``same(x, y) :- key(x, k), key(y, k)`` (the others have keys of
their own); every individual has one ``attr`` and two ``knows`` edges to random
individuals; rules read the merged constants: ``fan(x, v) :- knows(x, y), attr(y, v)``,
``reach(x, v) :- fan(x, v), attr(x, v)``, ``star(x) :- knows(x, c)`` with ``c`` a member
of the largest class (a rule constant normalised to its representative).

``lubm_dup``: LUBM(k) under LUBM_L with duplicated individuals made equal by an
inverse-functional e-mail rule; ``owl2rl_dup``: the same duplicates stated equal by
``owl:sameAs`` triples, under the shipped OWL 2 RL rules with equality (``owl2rl-eq``).

Deletions are random explicit facts of every relation (keys among them, so classes
split).  For each size the same deletion runs on two copies of the same materialised
state, one per algorithm (``bf_eq``, ``dred_eq``, ``auto``) and one with ``remat``; the
rewritten rows and ρ are compared (same answer), and the line reports seconds, the ratio,
and the counts (overdeleted = doubtful for B/F≈, rederived, added, instances checked
backwards, DRed≈'s exploded classes and the classes it split and the members that left
them, B/F≈'s checked, proved, disproved and re-added).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
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


def _isin(values: np.ndarray, chosen: np.ndarray) -> np.ndarray:
    """``np.isin`` for arrays of strings, by a hash set (pyarrow's): NumPy compares object
    arrays pairwise, which took 186 s for LUBM(10)'s 1.4 M subjects against 10,815 IRIs."""
    import pyarrow as pa
    import pyarrow.compute as pc

    got = pc.is_in(pa.array(values, type=pa.string()), value_set=pa.array(chosen, pa.string()))
    return got.to_numpy(zero_copy_only=False)


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
    sel = _isin(s_, chosen)
    alias = np.array([x[:-1] + "_dup>" for x in s_[sel]], dtype=object)
    te = np.concatenate([np.stack([s_, p_, o_], axis=1),
                         np.stack([alias, p_[sel], o_[sel]], axis=1)])
    text = (lubm_program("LUBM_L").text
            + "\n.decl sameAs(x: symbol, y: symbol) equality\n"
            + f'sameAs(x, y) :- TE(x, "{EMAIL}", e), TE(y, "{EMAIL}", e).\n')
    return text, {"TE": te}


SAME_AS = "<http://www.w3.org/2002/07/owl#sameAs>"


def owl2rl_dup(universities: int = 1, dup: float = 0.1, seed: int = 0
               ) -> tuple[object, dict[str, np.ndarray]]:
    """LUBM(k) and its ontology (``univ-bench.nt``) under the shipped OWL 2 RL rule set
    with equality by rewriting (``host/owl2rl/owl2rl-eq.dl``, ``sameAs`` declared
    ``equality``): ``dup`` of the individuals with an e-mail address copied under an alias
    IRI (every triple with them as subject) and stated equal by an ``owl:sameAs`` triple
    (paper 001's setting: equalities from the data, the OWL 2 RL rules)."""
    from gpu_engine.host.ntriples import read_ntriples
    from gpu_engine.host.owl2rl import rule_set

    from benchmarks.run import SHARED_LUBM, lubm_data_path

    cols = []
    for path in (lubm_data_path(universities), SHARED_LUBM / "univ-bench.nt"):
        t = read_ntriples(path)
        cols.append([np.array(t.column(c).to_pylist(), dtype=object) for c in "spo"])
    s_, p_, o_ = (np.concatenate([c[i] for c in cols]) for i in range(3))
    rng = np.random.default_rng(seed)
    people = np.unique(s_[p_ == EMAIL])
    chosen = people[rng.random(len(people)) < dup]
    sel = _isin(s_, chosen)
    alias = np.array([x[:-1] + "_dup>" for x in s_[sel]], dtype=object)
    same = np.stack([np.array([x[:-1] + "_dup>" for x in chosen], dtype=object),
                     np.full(len(chosen), SAME_AS, dtype=object), chosen], axis=1)
    triples = np.concatenate([np.stack([s_, p_, o_], axis=1),
                              np.stack([alias, p_[sel], o_[sel]], axis=1), same])
    return rule_set("owl2rl-eq"), {"triple": triples}


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
    host = a.engine.be.to_host  # type: ignore[attr-defined]
    ra, rb = host(a.engine.rho()), host(b.engine.rho())  # type: ignore[attr-defined]
    m = min(len(ra), len(rb))
    return bool(np.array_equal(ra[:m], rb[:m]))


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


COUNTS = ("overdeleted", "rederived", "added", "checked_backwards", "checked", "proved",
          "disproved", "readded", "exploded_classes", "exploded_members", "split_classes",
          "left_members", "facts")


def _pool(facts: dict[str, np.ndarray], keys: bool) -> dict[str, np.ndarray]:
    if keys:
        return facts
    if "TE" in facts:  # lubm_dup: no e-mail triples (no class splits)
        te = facts["TE"]
        return {"TE": te[te[:, 1] != EMAIL]}
    if "triple" in facts:  # owl2rl_dup: no owl:sameAs triples
        t = facts["triple"]
        return {"triple": t[t[:, 1] != SAME_AS]}
    return {n: v for n, v in facts.items() if n != "key"}


def _one(text: str, facts: dict[str, np.ndarray], dele: dict[str, np.ndarray], alg: str,
         device: str, first: dict[str, np.ndarray] | None) -> tuple[object, float, dict]:
    """One timed deletion by ``alg`` on a fresh materialised state (``first``: an
    untimed deletion before it, so join indexes exist)."""
    r = _state(text, facts, device)
    if first:
        r.update(delete=first, algorithm=alg)  # type: ignore[attr-defined]
    gc.collect()  # the garbage of building the state is not the update's
    t0 = time.perf_counter()
    st = r.update(delete=dele, algorithm=alg)  # type: ignore[attr-defined]
    seconds = time.perf_counter() - t0
    m = re.search(r"exploded ([\d,]+) classes \(([\d,]+) members\)", st.note)
    s = re.search(r"([\d,]+) classes split off ([\d,]+) members", st.note)
    counts = {"overdeleted": st.overdeleted, "rederived": st.rederived, "added": st.added,
              "checked_backwards": st.backward, "checked": st.checked, "proved": st.proved,
              "disproved": st.disproved, "readded": st.added if st.checked else 0,
              "exploded_classes": int(m.group(1).replace(",", "")) if m else 0,
              "exploded_members": int(m.group(2).replace(",", "")) if m else 0,
              "split_classes": int(s.group(1).replace(",", "")) if s else 0,
              "left_members": int(s.group(2).replace(",", "")) if s else 0,
              "facts": st.facts}
    return r, seconds, {"ran": st.algorithm, "note": st.note, **counts}


def measure(text: str, facts: dict[str, np.ndarray], k: int, device: str,
            algorithms: list[str], seed: int, keys: bool = True,
            dataset: str = "sameas", warmup: bool = False, samples: int = 1) -> list[dict]:
    """Deletions of ``k`` random explicit facts (``keys``: key facts among them, so
    classes split; otherwise no key/e-mail facts) by Remat≈ and ``algorithms``, each on
    a fresh copy of the materialised state, Remat≈ and the others alternately, for
    ``samples`` different random deletions; one line per algorithm with the median
    seconds (every sample's too), the ratio of Remat≈'s median to it, the median counts
    and whether every sample's result equals Remat≈'s.  ``warmup``: each state first
    applies another deletion of ``k`` facts with the same algorithm, untimed (join
    indexes built, as in a store that has been updated)."""
    pool = _pool(facts, keys)
    n_e = sum(len(v) for v in facts.values())
    runs: dict[str, list[tuple[float, dict]]] = {a: [] for a in ["remat", *algorithms]}
    same = {a: True for a in algorithms}
    for i in range(samples):
        dele = _pick(pool, k, seed + 1009 * i)
        first = None
        if warmup:
            pre = _pick(pool, 2 * k, seed + 1009 * i + 7919)
            keep = {n: {tuple(x) for x in v} for n, v in dele.items()}
            first = {n: np.array([x for x in v if tuple(x) not in keep.get(n, ())],
                                 dtype=object)[:k] for n, v in pre.items()}
            first = {n: v for n, v in first.items() if len(v)}
        remat_r, secs, info = _one(text, facts, dele, "remat", device, first)
        runs["remat"].append((secs, info))
        for alg in algorithms:
            r, secs, info = _one(text, facts, dele, alg, device, first)
            runs[alg].append((secs, info))
            same[alg] = same[alg] and _same(r, remat_r)
            del r
        del remat_r
    remat_med = float(np.median([s for s, _ in runs["remat"]]))
    lines = []
    for alg, got in runs.items():
        med = float(np.median([s for s, _ in got]))
        line = {"benchmark": "equality-update", "dataset": dataset, "warmup": warmup,
                "deleting": "any" if keys else "no-key", "explicit": n_e, "deleted": k,
                "algorithm": alg, "ran": ",".join(sorted({i["ran"] for _, i in got})),
                "device": device, "samples": samples, "seconds": round(med, 4),
                "seconds_all": [round(s, 4) for s, _ in got],
                "speedup_vs_remat": round(remat_med / max(med, 1e-9), 2),
                "load_avg": round(os.getloadavg()[0], 2),
                **{c: int(np.median([i[c] for _, i in got])) for c in COUNTS},
                "note": got[len(got) // 2][1]["note"]}
        if alg != "remat":
            line["same_as_remat"] = same[alg]
        lines.append(line)
    return lines


def table(lines: list[dict]) -> str:
    """The lines as a Markdown table in the shape of paper 001 Table 1: per data set,
    deletion kind and size, the median seconds of each algorithm with its ratio to
    Remat≈ (and, for B/F≈, the counts checked / proved / disproved / re-added)."""
    algs = [a for a in ("remat", "bf_eq", "dred_eq", "auto")
            if any(x["algorithm"] == a for x in lines)]
    head = ["data set", "deleting", "|E⁻|", *(a for a in algs)]
    if "bf_eq" in algs:
        head.append("B/F≈ checked / proved / disproved / re-added")
    if "auto" in algs:
        head.append("auto ran")
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]

    def keyf(x: dict) -> tuple:
        return x["dataset"], x["deleting"], x["deleted"]

    for key in dict.fromkeys(keyf(x) for x in lines):
        row = {x["algorithm"]: x for x in lines if keyf(x) == key}
        cells = [key[0], key[1], f"{key[2]:,}"]
        for a in algs:
            x = row.get(a)
            cells.append("" if x is None else f"{x['seconds']:.3f} s" if a == "remat"
                         else f"{x['seconds']:.3f} s ({x['speedup_vs_remat']}×)")
        if "bf_eq" in algs:
            b = row.get("bf_eq")
            cells.append("" if b is None else
                         f"{b['checked']:,} / {b['proved']:,} / {b['disproved']:,} / "
                         f"{b['readded']:,}")
        if "auto" in algs:
            cells.append(row["auto"]["ran"] if "auto" in row else "")
        out.append("| " + " | ".join(cells) + " |")
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", choices=["sameas", "lubm_dup", "owl2rl_dup"],
                    default="sameas")
    ap.add_argument("--entities", type=int, default=60000, help="sameas: individuals")
    ap.add_argument("--universities", type=int, default=1, help="lubm_dup: LUBM(k)")
    ap.add_argument("--dup", type=float, default=0.1, help="lubm_dup: share duplicated")
    ap.add_argument("--deletions", default="100,1000,25%")
    ap.add_argument("--algorithms", default="bf_eq,dred_eq,auto")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--deleting", default="any,no-key",
                    help="any: random explicit facts; no-key: no key, e-mail or owl:sameAs facts")
    ap.add_argument("--warmup", action="store_true",
                    help="time a second deletion on each state (indexes built)")
    ap.add_argument("--samples", type=int, default=3,
                    help="random deletions per size (medians reported)")
    ap.add_argument("--table", action="store_true", help="print a Markdown table at the end")
    ap.add_argument("--out")
    args = ap.parse_args(argv)
    if args.dataset == "sameas":
        text, facts = sameas(args.entities, seed=args.seed)
    elif args.dataset == "lubm_dup":
        text, facts = lubm_dup(args.universities, args.dup, args.seed)
    else:
        text, facts = owl2rl_dup(args.universities, args.dup, args.seed)  # type: ignore[assignment]
    for alg in ("remat", *args.algorithms.split(",")):  # warm-up: imports, first calls
        small = {n: v[:200] for n, v in facts.items()}
        _state(text, small, args.device).update(  # type: ignore[attr-defined]
            delete=_pick(_pool(small, True), 5, 1), algorithm=alg)
    n_e = sum(len(v) for v in facts.values())
    out = []
    for d in args.deletions.split(","):
        k = int(n_e * float(d[:-1]) / 100) if d.endswith("%") else int(d)
        for which in args.deleting.split(","):
            for line in measure(text, facts, k, args.device, args.algorithms.split(","),
                                args.seed + k, keys=which == "any",
                                dataset=args.dataset, warmup=args.warmup,
                                samples=args.samples):
                print(json.dumps(line), flush=True)
                out.append(line)
    if args.table:
        print(table(out))
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a", encoding="utf-8") as f:
            f.writelines(json.dumps(x) + "\n" for x in out)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Random update sequences on generated equality programs (tests/eq_generators.py),
judged after every step (brief §1.5 J4): the maintained state must equal a fresh Remat≈
on the current explicit facts (rewritten rows under the min-id representative policy,
the classes) and, expanded, the reference evaluation (tests/reference.py) of the program
with equality spelled out as rules.

Steps delete explicit facts (equalities among them, so classes split), insert random
facts, re-insert deleted ones, make derived facts explicit and delete them again, and
mix insertions with deletions.  ``python tests/eq_update_fuzz.py --sequences 1000`` (or
``make fuzz-eq-update``) writes one JSON line per sequence and a summary.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

import pyarrow as pa

sys.path.insert(0, str(Path(__file__).parent))

import reference  # noqa: E402
from eq_generators import _value, equality_program  # noqa: E402

from gpu_engine import Reasoner  # noqa: E402

FACT_LINE = re.compile(r"^\w+\(.*\)\.$")
PATHS = ("bf_eq", "dred_eq", "auto", "remat")

Row = tuple
Facts = dict[str, set[Row]]


def _rows(r: Reasoner, name: str, expand: bool) -> set[Row]:
    return {tuple(x.values()) for x in r.relation(name, expand=expand).to_pylist()}


def _classes(r: Reasoner) -> set[Row]:
    return {tuple(x.values()) for x in r.equivalence_classes().to_pylist()}


def _table(rows: set[Row]) -> pa.Table:
    """Rows as a positional table (mixed symbol/number columns keep their types)."""
    rows_l = sorted(rows, key=str)
    return pa.table({f"c{i}": [r[i] for r in rows_l] for i in range(len(rows_l[0]))})


def _fresh(rules_text: str, facts: Facts, symbols: object = None, device: str = "cpu"
           ) -> Reasoner:
    """Remat≈ of the facts (sharing ``symbols``: the same ids, so the same min-id
    representatives)."""
    r = Reasoner(rules_text, device=device, symbols=symbols)  # type: ignore[arg-type]
    for name, rows in facts.items():
        if rows:
            r.add_facts(name, _table(rows))
    r.materialise()
    return r


def _step(rng: random.Random, kinds: dict[str, tuple[str, ...]], facts: Facts,
          deleted: list[tuple[str, Row]], some: Reasoner) -> tuple[Facts, Facts]:
    """One random update: (insert, delete)."""
    ins: Facts = {n: set() for n in kinds}
    dele: Facts = {n: set() for n in kinds}
    current = sorted(((n, row) for n, rows in facts.items() for row in rows), key=str)
    op = rng.choice(("delete", "delete", "delete_eq", "insert", "reinsert", "derived",
                     "mixed"))
    if op in ("delete", "mixed") and current:
        for n, row in rng.sample(current, k=min(len(current), rng.randint(1, 3))):
            dele[n].add(row)
    if op == "delete_eq":
        eqs = [(n, row) for n, row in current if n == "same"]
        pick = eqs or current
        if pick:
            n, row = rng.choice(pick)
            dele[n].add(row)
    if op in ("insert", "mixed"):
        for _ in range(rng.randint(1, 3)):
            n = rng.choice(list(kinds))
            ins[n].add(tuple(_value(rng, k) for k in kinds[n]))
    if op == "reinsert" and deleted:
        for n, row in rng.sample(deleted, k=min(len(deleted), rng.randint(1, 2))):
            ins[n].add(row)
    if op == "derived":  # make a derived (expanded) fact explicit; deleted by a later step
        n = rng.choice(list(kinds))
        rows = sorted(_rows(some, n, True), key=str)
        if rows:
            ins[n].add(rng.choice(rows))
    return ins, dele


def run_sequence(seed: int, steps: int = 6, paths_run: tuple[str, ...] = PATHS,
                 layered: bool = False, device: str = "cpu") -> dict:
    """One sequence on the update paths ``paths_run`` (maintained on ``device``; the
    judges on the CPU); returns its record (``disagreements`` lists what differed)."""
    case = equality_program(seed, layered)
    rng = random.Random(seed * 7919 + 1)
    lines = case.text.splitlines()
    rules_text = "\n".join(x for x in lines if not FACT_LINE.match(x) or ":-" in x) + "\n"
    facts: Facts = {n: set() for n in case.kinds}
    for n, rows in case.spelled.inline_facts.items():
        facts[n] = {tuple(r) for r in rows}
    spelled = replace(case.spelled, inline_facts={})
    paths = {p: _fresh(rules_text, facts, device=device) for p in paths_run}
    some = paths["remat"] if "remat" in paths else next(iter(paths.values()))
    record: dict = {"seed": seed, "steps": 0, "disagreements": [], "paths": {},
                    "exploded": 0, "split": 0, "normal_form_dred": 0, "kept_by_strata": 0}
    deleted: list[tuple[str, Row]] = []
    for step in range(steps):
        ins, dele = _step(rng, case.kinds, facts, deleted, some)
        for n, rows in dele.items():
            deleted.extend((n, r) for r in sorted(rows, key=str))  # seeds reproducible
        for p, r in paths.items():
            st = r.update(insert={n: _table(v) for n, v in ins.items() if v},
                          delete={n: _table(v) for n, v in dele.items() if v},
                          algorithm=p)
            record["paths"][st.algorithm] = record["paths"].get(st.algorithm, 0) + 1
            m = re.search(r"([\d,]+) constants left a split class", st.note)
            if "exploded" in st.note or (m and m.group(1) != "0"):  # DRed≈ or B/F≈
                record["exploded"] += 1
            if st.note.startswith("DRed≈ in normal form"):  # gpu_engine.equality_dred
                record["normal_form_dred"] += 1
            if "split off" in st.note:  # DRed≈ split off a class's leavers only
                record["split"] += 1
            if "renamed after a member" in st.note:  # ... its representative among them
                record["renamed"] = record.get("renamed", 0) + 1
            if "kept out of D" in st.note:  # DRed≈'s overdeletion by strata kept facts
                record["kept_by_strata"] += 1
        for n in case.kinds:
            facts[n] = (facts[n] - dele[n]) | ins[n]
        record["steps"] = step + 1
        want = reference.evaluate(replace(spelled, facts={n: sorted(v, key=str)
                                                          for n, v in facts.items() if v}))
        for p, r in paths.items():
            fresh = _fresh(rules_text, facts, r.symbols)
            for n in case.kinds:
                if _rows(r, n, False) != _rows(fresh, n, False):
                    record["disagreements"].append(f"step {step} {p} {n}: rewritten ≠ Remat≈")
                if _rows(r, n, True) != want[n]:
                    record["disagreements"].append(f"step {step} {p} {n}: expanded ≠ reference")
            if _classes(r) != _classes(fresh):
                record["disagreements"].append(f"step {step} {p}: classes ≠ Remat≈")
        if record["disagreements"]:
            break
    return record


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--sequences", type=int, default=1000)
    ap.add_argument("--start", type=int, default=0)
    ap.add_argument("--steps", type=int, default=6)
    ap.add_argument("--paths", default=",".join(PATHS),
                    help="update paths to run and judge (default: all)")
    ap.add_argument("--layered", action="store_true",
                    help="add relations above the equality's strata (eq_generators)")
    ap.add_argument("--out", default="benchmarks/results/fuzz_eq_update.jsonl")
    ap.add_argument("--device", default="cpu", choices=("cpu", "gpu"),
                    help="where the maintained reasoners run (the judges: the CPU)")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    bad = 0
    paths: dict[str, int] = {}
    exploded = split = normal = kept = renamed = 0
    with out.open("w") as f:
        for seed in range(args.start, args.start + args.sequences):
            rec = run_sequence(seed, args.steps, tuple(args.paths.split(",")), args.layered,
                               args.device)
            for k, v in rec["paths"].items():
                paths[k] = paths.get(k, 0) + v
            exploded += rec["exploded"]
            split += rec["split"]
            normal += rec["normal_form_dred"]
            kept += rec["kept_by_strata"]
            renamed += rec.get("renamed", 0)
            bad += bool(rec["disagreements"])
            if rec["disagreements"]:
                print(f"seed {seed}: {rec['disagreements'][:3]}", flush=True)
            f.write(json.dumps(rec) + "\n")
        summary = {"summary": True, "sequences": args.sequences, "steps": args.steps,
                   "start": args.start, "paths": args.paths, "layered": args.layered,
                   "disagreeing_sequences": bad, "updates_by_path": paths,
                   "updates_that_split_classes": exploded,
                   "dred_updates_that_split_off_leavers": split,
                   "dred_updates_that_renamed_a_class": renamed,
                   "dred_in_normal_form": normal,
                   "dred_kept_by_strata": kept,
                   "seconds": round(time.perf_counter() - t0, 1)}
        f.write(json.dumps(summary) + "\n")
    print(json.dumps(summary))
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())

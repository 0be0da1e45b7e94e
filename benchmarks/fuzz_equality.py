"""``make fuzz-eq``: generated equality programs, Mat≈ against the spelled-out program.

Case ``i`` is ``tests/eq_generators.equality_program(seed + i)``: a program with
``.decl same(x: D, y: D) equality`` whose rules derive equalities (classes that merge over
several rounds, constants in rules and facts, unmerged symbols flowing into merged
columns, a second symbol type and numbers).  The expanded answers of every relation are
compared with ``tests/reference.py`` on the same program with equality spelled out as
rules (reflexivity, symmetry, transitivity, replacement in every merged column), and the
count of the expansion (computed without expanding) with the reference's size.  Every fifth
case (seed ≡ 1 mod 5) also materialises part of the facts and inserts the others by an
update, which must continue Mat≈ and give the same answers.  Every
tenth case also runs the spelled-out program on the engine and checks that Mat≈ considers
no more rule instances (paper 001 Theorem 1.2).

Prints and appends one JSON line: cases, disagreements (with seeds), refusals, seconds.
Reproduce a case with ``--seed S --n 1``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))


def check(seed: int, device: str = "cpu") -> str | None:
    """None when case ``seed`` agrees with the spelled-out reference, else the problem."""
    import reference
    from eq_generators import equality_program, spelled_text

    from gpu_engine import Reasoner

    case = equality_program(seed)
    r = Reasoner(case.text, device=device)
    st = r.materialise()
    want = reference.evaluate(case.spelled)
    for name in case.kinds:
        got = {tuple(x.values()) for x in r.relation(name).to_pylist()}
        if got != want[name]:
            return (f"{name}: missing {sorted(want[name] - got)[:8]}, "
                    f"extra {sorted(got - want[name])[:8]}")
    total = sum(len(v) for v in want.values())
    if st.equality["expanded_facts"] != total:
        return f"expansion count {st.equality['expanded_facts']} != {total}"
    if seed % 5 == 1:  # insertions continue Mat≈: some facts first, the others inserted
        problem = check_insertions(case, want, device)
        if problem is not None:
            return problem
    if seed % 10 == 0:
        s = Reasoner(spelled_text(case), device=device)
        sst = s.materialise()
        if st.derivations > sst.derivations:
            return f"Mat≈ derivations {st.derivations} > spelled-out {sst.derivations}"
    return None


def check_insertions(case: object, want: dict, device: str) -> str | None:
    """Materialise a random part of the facts, insert the rest by an update (which must
    continue Mat≈), compare with the reference."""
    from eq_generators import insert_the_rest

    r, st = insert_the_rest(case, case.seed, 1, device)  # type: ignore[arg-type, attr-defined]
    if st.algorithm != "mat≈":
        return f"insertions ran {st.algorithm}, not mat≈"
    for name in case.kinds:  # type: ignore[attr-defined]
        got = {tuple(x.values()) for x in r.relation(name).to_pylist()}
        if got != want[name]:
            return (f"after inserting: {name}: missing {sorted(want[name] - got)[:8]}, "
                    f"extra {sorted(got - want[name])[:8]}")
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--out", help="append the JSON line to this file")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    failures = []
    refused = 0
    from gpu_engine.ir import ProgramError

    for seed in range(args.seed, args.seed + args.n):
        try:
            problem = check(seed, args.device)
        except ProgramError as exc:  # the generator keeps to what rewriting covers
            refused += 1
            problem = f"refused: {exc}"
        except Exception:  # noqa: BLE001 (a traceback is a failure to report)
            problem = traceback.format_exc(limit=3)
        if problem is not None:
            failures.append({"seed": seed, "problem": problem})
    line = {"campaign": "fuzz-eq", "cases": args.n, "first_seed": args.seed,
            "device": args.device, "disagreements": len(failures), "refused": refused,
            "seconds": round(time.perf_counter() - t0, 1), "failures": failures[:50]}
    text = json.dumps(line)
    print(text)
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a", encoding="utf-8") as f:
            f.write(text + "\n")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

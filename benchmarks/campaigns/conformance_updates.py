"""Soufflé's own programs under updates: every maintenance algorithm against Remat.

Each case of ``../shared/conformance`` (programs and facts Soufflé's test suite ships) is
materialised, a few of its explicit facts (from its fact files or the program) are
deleted, and inserted again, by each maintenance algorithm; after each update every
relation must equal what rematerialisation gives (Remat on the same change).  Programs an
algorithm does not maintain (Counting on recursion, ...) are counted, not failed; a case
that takes longer than ``--timeout`` seconds is counted as slow.  Case ``i`` of a run is
``cases[(seed + i) % len(cases)]``; the facts to delete are drawn from the seed.

``python -m benchmarks.campaigns.conformance_updates --n 330`` (``make
fuzz-conformance-updates``) runs every case once.
"""

from __future__ import annotations

import random
import sys
import tempfile
from pathlib import Path
from typing import Any

from .common import Campaign, CaseTimeout, cli_args, time_limit

CONFORMANCE = Path(__file__).resolve().parents[3] / "shared" / "conformance"
SUITES = ("souffle", "souffle-eqrel", "wider-souffle")
DELETIONS = 3  # explicit facts deleted (then inserted again) per case
TIMEOUT = 30.0  # seconds per case


def cases() -> list[Path]:
    """The case folders, in a fixed order."""
    return sorted(p for s in SUITES if (CONFORMANCE / s).is_dir()
                  for p in (CONFORMANCE / s).iterdir() if p.is_dir())


def _program(case: Path) -> Path | None:
    """The case's program: ``<test>.dl`` (a case folder may hold included files too)."""
    test = case.name.split("__", 1)[-1].split("__")[0]
    progs = sorted(case.glob("*.dl"))
    return next((p for p in progs if p.stem == test), progs[0] if progs else None)


def check_case(case: Path, seed: int, algorithms: tuple[str, ...], c: Campaign) -> list[str]:
    """Disagreements of ``algorithms`` with Remat on one case (counts go to ``c``)."""
    from gpu_engine.host.reasoner import Reasoner

    prog = _program(case)
    if prog is None:
        return []
    facts = case / "facts"
    empty = Path(tempfile.mkdtemp()) if not facts.is_dir() else None

    def build() -> Reasoner:
        r = Reasoner(prog, device="cpu")
        r.load_inputs(facts if empty is None else empty)
        r.materialise()
        return r

    try:
        base = build()
    except CaseTimeout:
        raise
    except Exception:  # noqa: BLE001 - a case we refuse (checked by the conformance tests)
        c.count("refused")
        return []
    c.count("built")
    rels = [n for n in base.program.relations if not n.startswith("@")]
    pool = [(n, i) for n in rels for i in range(_explicit_rows(base, n))]
    if not pool:
        c.count("no_explicit_facts")
        return []
    rng = random.Random(seed)
    picked: dict[str, list[int]] = {}
    for n, i in rng.sample(pool, min(DELETIONS, len(pool))):
        picked.setdefault(n, []).append(i)
    change = {n: base.explicit(n).take(ix) for n, ix in picked.items()}
    want = build()
    want.update(delete=change, algorithm="remat")
    after = {n: want.relation(n) for n in rels}
    before = {n: base.relation(n) for n in rels}
    problems = []
    for alg in algorithms:
        r = build()
        try:
            r.update(delete=change, algorithm=alg)
        except ValueError as exc:  # the algorithm does not maintain this program
            c.count("not_maintained")
            if "only" not in str(exc) and "cannot" not in str(exc):
                problems.append(f"{alg}: {exc}")
            continue
        c.count("updates")
        problems += [f"{alg}, deletion: {n} differs from Remat" for n in rels
                     if not r.relation(n).equals(after[n])]
        r.update(insert=change, algorithm=alg)
        c.count("updates")
        problems += [f"{alg}, re-insertion: {n} differs from the start" for n in rels
                     if not r.relation(n).equals(before[n])]
    return problems


def _explicit_rows(r: Any, name: str) -> int:
    t = r.explicit(name)
    return 0 if t.column_names == ["holds"] else t.num_rows


def run(n: int, seed: int = 0, out: str | None = None,
        algorithms: tuple[str, ...] | None = None, timeout: float = TIMEOUT) -> dict[str, Any]:
    """Check ``n`` cases from ``seed``; returns (and appends to ``out``) the JSON line."""
    from gpu_engine.maintenance import ALGORITHMS

    algs = algorithms or tuple(a for a in ALGORITHMS if a != "remat")
    every = cases()
    c = Campaign("fuzz-conformance-updates", seed, n, extra={"algorithms": list(algs)})
    for s in range(seed, seed + n if every else seed):  # (no ../shared: nothing to run)
        case = every[s % len(every)]
        repro = (f"python -m benchmarks.campaigns.conformance_updates --seed {s} --n 1  "
                 f"# {case.parent.name}/{case.name}")
        try:
            with time_limit(timeout, case.name):
                c.judge(s, repro, check_case, case, s, algs, c, passes=(CaseTimeout,))
        except CaseTimeout:
            c.count("slow")
    return c.write(out)


def main(argv: list[str] | None = None) -> int:
    args = cli_args(argv, "conformance_updates", len(cases()), "fuzz_conformance_updates.jsonl")
    line = run(args.n, args.seed, args.out)
    return 1 if line["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())

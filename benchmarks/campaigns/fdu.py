"""Fully dynamic updates (issue 17): N injection schedules against sequential application.

Each seed draws a case of ``tests/fdu_harness.py`` (a generated program, 3-10 updates, an
algorithm of the eight, modules on or off, a queue policy and an arrival schedule) and
checks that the queued run equals strictly sequential application and a fresh
materialisation (relations, explicit facts, counters).  A case that does not finish in
``CASE_SECONDS`` counts as non-terminating.  One JSON line: cases, boundaries seen,
updates composed / injected, attempts aborted, interleaving steps, cases with aggregate
relations or TC/STC modules, refusals by kind (``refused_aggregate``: a finished aggregate
stratum, ``refused_TC_STC``: a finished module, ``refused_negates``, ...), failures with
reproducers.  ``FDU_POLICIES`` (a comma list, e.g. ``interleave``) restricts the queue
policies drawn (``make fuzz-fdu-interleave``); ``FDU_FAMILY=modules`` draws only TC/STC-shaped
programs run by DRed^c with modules on.
"""

from __future__ import annotations

import os
import sys
import traceback
from typing import Any

from .common import Campaign, CaseTimeout, DrawRejected, cli_args, draw, time_limit

CASE_SECONDS = 120.0
REFUSAL_KINDS = ("done or an aggregate", "TC/STC module", "aggregate", "subsumption", "negates",
                 "deletes")


def run(n: int, seed: int = 0, out: str | None = None) -> dict[str, Any]:
    """Run ``n`` schedules from ``seed``; returns (and appends to ``out``) the JSON line."""
    from fdu_harness import POLICIES, cases, check
    from generators import AGG_NAMES

    policies = tuple(p for p in os.environ.get("FDU_POLICIES", "").split(",") if p) or POLICIES
    family = os.environ.get("FDU_FAMILY", "")  # "modules": TC/STC programs, DRed^c-MOD
    c = Campaign(("fuzz-fdu" if policies == POLICIES else f"fuzz-fdu[{','.join(policies)}]")
                 + (f"[{family}]" if family else ""),
                 seed, n)
    for s in range(seed, seed + n):
        try:
            case = draw(cases(policies=policies, family=family), s)
        except DrawRejected:
            c.count("rejected_draws")
            continue
        env = ("" if policies == POLICIES else f"FDU_POLICIES={','.join(policies)} ") + (
            f"FDU_FAMILY={family} " if family else "")
        repro = f"{env}python -m benchmarks.campaigns.fdu --seed {s} --n 1\n{case.describe()}"
        try:
            with time_limit(CASE_SECONDS):
                outcome = check(case)
        except CaseTimeout as e:
            c.fail("no_termination", s, str(e), repro)
            continue
        except Exception:  # noqa: BLE001 - the campaign records it
            c.fail("traceback", s, traceback.format_exc(), repro)
            continue
        if outcome is None:
            c.count("refused_by_algorithm")
            continue
        c.count("schedules")
        c.count(f"algorithm_{case.algorithm}")
        c.count(f"policy_{case.policy}")
        c.count("updates", len(case.updates))
        c.count("boundaries", outcome.boundaries)
        c.count("composed", outcome.composed)
        c.count("injected", outcome.injected)
        c.count("aborted", outcome.aborted)
        c.count("interleaved", outcome.interleaved)
        c.count("with_aggregates", any(r.name in AGG_NAMES for r in case.program.relations))
        c.count("with_tc_stc_modules", outcome.modules)
        for why in outcome.refused:  # by the kind of stratum or change that refused
            kind = next((k for k in REFUSAL_KINDS if k in why), "other")
            c.count(f"refused_{kind.split()[0].replace('/', '_')}")
        if outcome.problems:
            c.fail("wrong", s, "\n".join(outcome.problems), repro)
    return c.write(out)


def main(argv: list[str] | None = None) -> int:
    args = cli_args(argv, "fdu", 1000, "fuzz_fdu.jsonl")
    line = run(args.n, args.seed, args.out)
    return 1 if line["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""``make fuzz-aggregates``: random update sequences on generated aggregate programs, every
maintenance algorithm against rematerialisation.

Case ``i`` draws (``common.draw``, seed ``seed + i``) a program from
``generators.aggregate_programs()`` (count/sum/min/max relations over a generated program,
correlated by an atom, a comparison or not at all, some read again by a last rule) and a
sequence of three updates (``generators.updates``: insertions, deletions, both; explicit,
derived and absent facts).  The sequence is applied under each algorithm of
``maintenance.ALGORITHMS`` to its own ``Reasoner(counting=True)``; after every update the
relations, the explicit facts and the counters the algorithm maintains (c_nr and c_r, or c_nr
only) must equal those of a Reasoner materialised from scratch on the updated facts (the
counters recomputed).  Counting on a recursive program must be refused, leaving the state
unchanged.  Programs whose reference materialisation exceeds 3,000 tuples are skipped.

Failures: ``disagreement`` (with the algorithm, the step and the difference), ``traceback``.
Reproduce one with ``python -m benchmarks.campaigns.aggregates --seed S --n 1``.
"""

from __future__ import annotations

import sys
from typing import Any

from .common import Campaign, DrawRejected, cli_args, draw

STEPS = 3
FULL_COUNTERS = {"remat2c", "dredc", "counting"}  # c_nr and c_r maintained
NR_COUNTERS = {"remat1c", "bfc"}  # c_nr only


def sequence_for(seed: int) -> tuple[Any, list[Any]]:
    """The program and update sequence of seed ``seed`` (updates drawn against the
    reference's explicit and derived facts after each previous update)."""
    from generators import aggregate_programs, updated_facts, updates
    from reference import LimitExceeded, derivation_counts, evaluate, explicit_facts
    from test_update import derived_facts, with_facts

    program = draw(aggregate_programs(), seed)
    explicit = explicit_facts(program)
    sequence = []
    for step in range(STEPS):
        try:
            expected = evaluate(with_facts(program, explicit), max_tuples=3000)
        except LimitExceeded:
            raise DrawRejected("large") from None
        counts = derivation_counts(with_facts(program, explicit), expected)
        update = draw(updates(program, explicit, derived_facts(counts, explicit)),
                      seed * 16 + step + 1)
        sequence.append(update)
        explicit = updated_facts(explicit, update)
    try:
        evaluate(with_facts(program, explicit), max_tuples=3000)
    except LimitExceeded:
        raise DrawRejected("large") from None
    return program, sequence


def _state(r: Any, program: Any, counters: str) -> dict[str, Any]:
    """Relations, explicit facts and counters (``full``, ``nr`` or ``none``) of ``r``."""
    from test_update import counters_of, explicit_of, relations_of

    out: dict[str, Any] = {"relations": relations_of(r, program),
                           "explicit": explicit_of(r, program)}
    if counters != "none":
        modular = r.engine.modular_relations()
        table = {}
        for rel in program.relations:
            if rel.eqrel:
                continue
            got = counters_of(r, rel)
            if counters == "nr" or rel.name in modular:
                got = {row: (nr, 0) for row, (nr, _) in got.items()}
            table[rel.name] = got
        out["counters"] = table
    return out


def _difference(want: dict[str, Any], got: dict[str, Any]) -> str:
    lines = []
    for part in want:
        for name in want[part]:
            a, b = want[part][name], got[part].get(name)
            if a != b:
                lines.append(f"{part} {name}: expected {sorted(a.items() if isinstance(a, dict) else a, key=repr)[:10]}"
                             f", got {sorted(b.items() if isinstance(b, dict) else b or (), key=repr)[:10]}")
    return "\n".join(lines)


def check_sequence(program: Any, sequence: list[Any], device: str = "cpu") -> list[str]:
    """Disagreements of every algorithm with rematerialisation along ``sequence``."""
    from generators import engine_facts, render_program, updated_facts
    from reference import explicit_facts, has_recursive_rule
    from test_update import engine_update, fresh_reasoner

    from gpu_engine import Reasoner
    from gpu_engine.maintenance import ALGORITHMS

    recursive = has_recursive_rule(program)
    eqrel = any(rel.eqrel for rel in program.relations)
    # the judge: a fresh counted materialisation after each step
    explicit = explicit_facts(program)
    fresh_states = []
    for update in sequence:
        explicit = updated_facts(explicit, update)
        fresh = fresh_reasoner(program, explicit, device)
        fresh_states.append({k: _state(fresh, program, k) for k in ("full", "nr")})
    problems = []
    for algorithm in ALGORITHMS:
        r = Reasoner(render_program(program), device=device, counting=True)
        for name, facts in engine_facts(program).items():
            r.add_facts(name, facts)
        r.materialise()
        kind = "full" if algorithm in FULL_COUNTERS else "nr" if algorithm in NR_COUNTERS else "none"
        for step, update in enumerate(sequence):
            insert, delete = engine_update(update, program)
            if algorithm == "counting" and (recursive or eqrel):
                before = _state(r, program, "none")
                try:
                    r.update(insert=insert, delete=delete, algorithm=algorithm)
                except (ValueError, RuntimeError) as exc:
                    if "recurs" not in str(exc).lower():
                        raise
                    if _state(r, program, "none") != before:
                        problems.append(f"counting: refused update {step + 1} changed the state")
                    break
                problems.append(f"counting: recursive program not refused at step {step + 1}")
                break
            r.update(insert=insert, delete=delete, algorithm=algorithm)
            want = fresh_states[step]["full" if kind == "none" else kind]
            got = _state(r, program, kind)
            if kind == "none":
                want = {k: v for k, v in want.items() if k != "counters"}
            if got != want:
                problems.append(f"{algorithm}, after update {step + 1} "
                                f"({update.describe()}):\n{_difference(want, got)}")
                break
    return problems


def run(n: int, seed: int = 0, device: str = "cpu", out: str | None = None) -> dict[str, Any]:
    """Run ``n`` sequences from ``seed``; returns (and appends to ``out``) the JSON line."""
    from generators import Agg, describe

    c = Campaign("fuzz-aggregates", seed, n, extra={"device": device, "steps": STEPS})
    for s in range(seed, seed + n):
        try:
            program, sequence = sequence_for(s)
        except DrawRejected:
            c.count("rejected_draws")
            continue
        c.count("sequences")
        if any(isinstance(lit, Agg) for rule in program.rules for lit in rule.body):
            c.count("with_aggregates")
        repro = f"python -m benchmarks.campaigns.aggregates --seed {s} --n 1\n{describe(program)}"
        c.judge(s, repro, check_sequence, program, sequence, device)
    return c.write(out)


def main(argv: list[str] | None = None) -> int:
    args = cli_args(argv, "aggregates", 1000, "fuzz_aggregates.jsonl")
    line = run(args.n, args.seed, args.device, args.out)
    return 1 if line["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())

"""``make fuzz-programs``: generated programs against the naive reference evaluator.

Case ``i`` draws one program from seed ``seed + i`` (``common.draw``: hypothesis's random
provider over ``random.Random(seed + i)``, so the same seed gives the same program under
``make`` and under pytest): four in five from ``generators.programs()``, one in five from
``generators.arithmetic_programs`` (deep C-style integer arithmetic, half of them with values
near the 32-bit limits).  Every relation is compared with ``reference.evaluate``: through the
Python API (facts as numpy / Arrow / pandas, as the generator chose) for every case, and
also through the in-process CLI (fact files in, ``.csv`` files out) for every fifth.
Programs whose reference materialisation exceeds 3,000 tuples are skipped (counted).

Failures: ``wrong`` (a relation differs: program, facts and the difference), ``traceback``
(an exception). Reproduce one with ``python -m benchmarks.campaigns.programs --seed S --n 1``.
"""

from __future__ import annotations

import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

from .common import Campaign, DrawRejected, cli_args, draw, run_cli

MAX_TUPLES = 3000
CLI_EVERY = 5


def program_for(seed: int) -> Any:
    """The program of seed ``seed``."""
    from generators import arithmetic_programs, programs

    if seed % 5 == 4:
        return draw(arithmetic_programs(wide=seed % 10 == 9), seed)
    return draw(programs(), seed)


def _rows(table: Any, arity: int) -> list[tuple[Any, ...]]:
    if arity == 0:
        return [()] * table.num_rows
    return list(zip(*(table.column(i).to_pylist() for i in range(arity)), strict=True))


def _diff(name: str, expected: set[Any], got: set[Any]) -> str:
    missing = sorted(expected - got, key=repr)[:12]
    extra = sorted(got - expected, key=repr)[:12]
    return f"{name}: missing {missing}, extra {extra}"


def check_api(program: Any, expected: dict[str, set[Any]], device: str) -> list[str]:
    """Problems of the Python API's materialisation against ``expected``."""
    from generators import engine_facts, render_program

    from gpu_engine import Reasoner

    r = Reasoner(render_program(program), device=device)
    for name, data in engine_facts(program).items():
        r.add_facts(name, data)
    r.materialise()
    problems = []
    for rel in program.relations:
        rows = _rows(r.relation(rel.name), rel.arity)
        got = set(rows)
        if len(rows) != len(got):
            problems.append(f"{rel.name}: {len(rows) - len(got)} duplicate rows")
        if got != expected[rel.name]:
            problems.append(_diff(rel.name, expected[rel.name], got))
    return problems


def check_cli(program: Any, expected: dict[str, set[Any]], device: str) -> list[str]:
    """Problems of ``gpu-engine run -F -D`` (fact files in, .csv out) against ``expected``."""
    from generators import parse_output_lines, render_program, write_fact_files

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "prog.dl").write_text(render_program(program, inputs=True), encoding="utf-8")
        write_fact_files(program, root / "facts")
        res = run_cli(["run", str(root / "prog.dl"), "-F", str(root / "facts"), "-D",
                       str(root / "out"), "--device", device, "--quiet"], timeout=120)
        if res.traceback:
            raise RuntimeError(res.traceback)
        if res.rc != 0:
            return [f"exit {res.rc}: {res.stderr.strip()}"]
        problems = []
        for rel in program.relations:
            path = root / "out" / f"{rel.name}.csv"
            if not path.exists():
                problems.append(f"{rel.name}.csv not written")
                continue
            lines = path.read_text(encoding="utf-8").splitlines()
            got = parse_output_lines(rel, lines)
            if len(lines) != len(got):
                problems.append(f"{rel.name}.csv: {len(lines) - len(got)} duplicate lines")
            if got != expected[rel.name]:
                problems.append(_diff(rel.name, expected[rel.name], got))
        return problems


def run(n: int, seed: int = 0, device: str = "cpu", out: str | None = None) -> dict[str, Any]:
    """Run ``n`` programs from ``seed``; returns (and appends to ``out``) the JSON line."""
    from generators import describe
    from reference import LimitExceeded, evaluate

    c = Campaign("fuzz-programs", seed, n, extra={"device": device})
    for s in range(seed, seed + n):
        try:
            program = program_for(s)
        except DrawRejected:
            c.count("rejected_draws")
            continue
        try:
            expected = evaluate(program, max_tuples=MAX_TUPLES)
        except LimitExceeded:
            c.count("skipped_large")
            continue
        c.count("programs")
        repro = f"python -m benchmarks.campaigns.programs --seed {s} --n 1\n{describe(program)}"
        for mode, check in (("api", check_api), ("cli", check_cli)):
            if mode == "cli" and s % CLI_EVERY:
                continue
            c.count(f"{mode}_runs")
            try:
                problems = check(program, expected, device)
            except Exception:  # noqa: BLE001 - the campaign records it
                c.fail("traceback", s, traceback.format_exc(), repro, mode=mode)
                continue
            if problems:
                c.fail("wrong", s, "\n".join(problems), repro, mode=mode)
    return c.write(out)


def main(argv: list[str] | None = None) -> int:
    args = cli_args(argv, "programs", 10_000, "fuzz_programs.jsonl")
    line = run(args.n, args.seed, args.device, args.out)
    return 1 if line["failures"] else 0


if __name__ == "__main__":
    sys.exit(main())

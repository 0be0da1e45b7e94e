"""Property tests: on generated programs and facts the engine equals the reference evaluator.

Every relation of every generated program is compared, on every available device, once through
the Python API (facts as numpy / pyarrow / pandas) and, for fewer examples, through the CLI
(facts as files, results as files). A failure prints the program text and the facts.
``make fuzz`` runs many more examples (``FUZZ_EXAMPLES``).
"""

from __future__ import annotations

import contextlib
import io
import tempfile
from pathlib import Path

import pyarrow as pa
from generators import (
    Program,
    Relation,
    Row,
    arithmetic_programs,
    describe,
    engine_facts,
    parse_output_lines,
    programs,
    render_program,
    write_fact_files,
)
from hypothesis import given, note, reject, settings
from hypothesis import strategies as st
from reference import LimitExceeded, evaluate

MAX_TUPLES = 3000  # programs whose materialisation is larger are discarded (keeps CI fast)


def _expected(program: Program) -> dict[str, set[Row]]:
    """The reference materialisation, or reject the example when it is too large."""
    try:
        return evaluate(program, max_tuples=MAX_TUPLES)
    except LimitExceeded:
        reject()


def table_rows(table: pa.Table, rel: Relation) -> list[Row]:
    """Rows of an engine result table (a nullary relation is one row per fact: 0 or 1)."""
    if rel.arity == 0:
        return [()] * table.num_rows
    return list(zip(*(table.column(i).to_pylist() for i in range(rel.arity)), strict=True))


def _diff(name: str, expected: set[Row], got: set[Row]) -> str:
    missing = sorted(expected - got, key=repr)
    extra = sorted(got - expected, key=repr)
    return f"{name}: missing {missing[:12]}{'...' if len(missing) > 12 else ''}, " + (
        f"extra {extra[:12]}{'...' if len(extra) > 12 else ''}"
    )


def check_api(program: Program, device: str) -> None:
    """Reasoner(...).add_facts/materialise/relation equals the reference for every relation."""
    from gpu_engine import Reasoner

    expected = _expected(program)
    note(describe(program))
    reasoner = Reasoner(render_program(program), device=device)
    for name, data in engine_facts(program).items():
        reasoner.add_facts(name, data)
    reasoner.materialise()
    problems: list[str] = []
    for rel in program.relations:
        table = reasoner.relation(rel.name)
        if rel.arity and table.column_names != rel.attrs:
            problems.append(f"{rel.name}: columns {table.column_names} != {rel.attrs}")
        rows = table_rows(table, rel)
        got = set(rows)
        if len(rows) != len(got):
            problems.append(f"{rel.name}: {len(rows) - len(got)} duplicate rows")
        if got != expected[rel.name]:
            problems.append(_diff(rel.name, expected[rel.name], got))
    assert not problems, f"device={device}\n{describe(program)}" + "\n".join(problems)


@given(program=programs())
def test_engine_matches_reference(program: Program, device: str) -> None:
    """Random stratified programs: every relation equals the reference's."""
    check_api(program, device)


@settings(max_examples=max(20, settings.default.max_examples // 3))
@given(program=st.one_of(arithmetic_programs(), arithmetic_programs(wide=True)))
def test_arithmetic_matches_reference(program: Program, device: str) -> None:
    """Deep integer expressions (C-style / and %, ^) in heads, comparisons and bindings;
    with values near the 32-bit limits, results wrap around."""
    check_api(program, device)


@settings(max_examples=max(10, settings.default.max_examples // 5))
@given(program=programs())
def test_cli_matches_reference(program: Program, device: str) -> None:
    """``gpu-engine run -F -D`` with fact files writes the reference's tuples to every .csv."""
    from gpu_engine.host.cli import main

    expected = _expected(program)
    text = render_program(program, inputs=True)
    note(text)
    note(describe(program))
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "prog.dl").write_text(text, encoding="utf-8")
        write_fact_files(program, root / "facts")
        stderr = io.StringIO()
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            rc = main(
                ["run", str(root / "prog.dl"), "-F", str(root / "facts"), "-D", str(root / "out")]
                + ["--device", device, "--quiet"]
            )
        assert rc == 0, f"exit {rc}: {stderr.getvalue()}\n{text}"
        problems: list[str] = []
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
        assert not problems, f"device={device}\n{text}" + "\n".join(problems)

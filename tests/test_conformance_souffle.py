"""Soufflé's own test cases (``../shared/conformance``, see its README) through our CLI.

For every case folder ``<category>__<test>[__<variant>]`` under ``souffle/`` and
``souffle-eqrel/``: run ``gpu-engine run <test>.dl -F <case>/facts -D <out>`` in-process and
require, for every expected ``<Rel>.csv``, that the produced file holds the same set of lines
(order-insensitive; line terminators stripped, nothing else). A case that Soufflé rejects (its
``.err`` reports an error and there is no ``.csv``) must make our CLI exit nonzero.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import souffle_cases
from souffle_cases import lines

SUITES = ("souffle", "souffle-eqrel")


def _shared_dir() -> Path | None:
    """Same lookup as the ``shared_dir`` fixture in conftest.py (needed at collection time)."""
    sibling = Path(__file__).resolve().parents[2] / "shared"
    if sibling.is_dir():
        return sibling
    env = os.environ.get("GPU_ENGINE_SHARED")
    return Path(env) if env and Path(env).is_dir() else None


SHARED = _shared_dir()
if SHARED is None or not (SHARED / "conformance").is_dir():
    pytest.skip(
        "Soufflé conformance cases not found: expected ../shared/conformance next to the "
        "repository root (or set GPU_ENGINE_SHARED)",
        allow_module_level=True,
    )
assert SHARED is not None

CASES = [
    case
    for suite in SUITES
    if (SHARED / "conformance" / suite).is_dir()
    for case in sorted((SHARED / "conformance" / suite).iterdir())
    if case.is_dir() and any(case.glob("*.dl"))
]


def _souffle_rejects(case: Path) -> bool:
    """Soufflé reported an error (not just warnings) and produced no output."""
    errors = [
        line
        for err in case.glob("*.err")
        for line in lines(err)
        if line.startswith("Error") or ": error" in line.lower()
    ]
    return bool(errors) and not any(case.glob("*.csv"))


def run_cli(program: Path, facts: Path, out: Path, device: str) -> tuple[int, str, str]:
    """Run ``gpu-engine run`` in-process; returns (exit status, stdout, stderr)."""
    return souffle_cases.run_cli(
        ["run", str(program), "-F", str(facts), "-D", str(out), "--device", device, "--quiet"]
    )


def test_cases_found(shared_dir: Path) -> None:
    """The shared folder really holds cases (guards against a silently empty parametrisation)."""
    assert all(case.is_relative_to(shared_dir) for case in CASES)
    assert {c.parent.name for c in CASES} == set(SUITES)


@pytest.mark.parametrize("case", CASES, ids=[f"{c.parent.name}/{c.name}" for c in CASES])
def test_souffle_case(case: Path, device: str, tmp_path: Path) -> None:
    """The produced ``<Rel>.csv`` files hold the same lines as Soufflé's."""
    (program,) = sorted(case.glob("*.dl"))
    facts = case / "facts" if (case / "facts").is_dir() else tmp_path / "no-facts"
    facts.mkdir(exist_ok=True)
    out = tmp_path / "out"
    rc, stdout, stderr = run_cli(program, facts, out, device)
    if _souffle_rejects(case):
        assert rc != 0, f"Soufflé rejects {program.name}, we accepted it\n{stderr}"
        return
    assert rc == 0, f"exit status {rc}\n{stderr}"
    problems: list[str] = []
    for expected_file in sorted(case.glob("*.csv")):
        produced = out / expected_file.name
        if not produced.exists():
            problems.append(f"{expected_file.name}: not written")
            continue
        want, got = lines(expected_file), lines(produced)
        if set(want) != set(got):
            missing = sorted(set(want) - set(got))
            extra = sorted(set(got) - set(want))
            problems.append(
                f"{expected_file.name}: {len(set(want))} expected lines, {len(set(got))} produced; "
                f"missing {missing[:8]}{'...' if len(missing) > 8 else ''}, "
                f"extra {extra[:8]}{'...' if len(extra) > 8 else ''}"
            )
    assert not problems, "\n".join(problems) + (f"\nstderr:\n{stderr}" if stderr else "")

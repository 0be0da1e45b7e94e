"""The datalog-conformance package's core Datalog cases, through its own runner.

Every core case (a ``program`` case outside the package's ``defeasible/`` suites) is one test
id, ``<suite>/<file>::<case>``, run on each device with ``YamlTestRunner`` and the adapter in
dc_adapter.py. Cases that expect an error pass only if the engine itself rejects the program.
The same cases also judge the reference evaluator (test_reference_on_conformance_cases).

The YAML is read with libyaml when available (the bundled files hold about 2 million facts);
cases are built lazily, one file at a time.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import pytest
import yaml
from datalog_conformance import YamlTestRunner
from datalog_conformance.plugin import _load_multi_case_file, get_tests_dir
from datalog_conformance.schema import TestCase as DCTestCase
from dc_adapter import GpuEngineEvaluator, program_key, translate
from reference import evaluate

ROOT = get_tests_dir()
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

# The suite contradicts itself: nemo_negation (verified with Nemo) expects variables that occur
# only in a negated atom to be existential, review_v2 expects the same shape to be rejected.
# The adapter translates the Nemo reading (see dc_adapter.existential_negation).
CONTRADICTED = {
    "unsafe_negation_variable_only_in_negative_literal": (
        "contradicts nemo_negation_*: the adapter reads variables that occur only in a "
        "negated atom as existential (Nemo), so this program is accepted"
    ),
}
# The naive reference needs about ten minutes for this one (deep recursion, 52k facts).
REFERENCE_TOO_SLOW = {"souffle_hmmer_CPtrLoad", "souffle_hmmer_CPtrStore"}


@functools.cache
def _raw(path: Path) -> Any:
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER)


@functools.cache
def load_cases(path: Path) -> tuple[DCTestCase, ...]:
    """The validated cases of one YAML file (as the package's plugin builds them)."""
    raw = _raw(path)
    if isinstance(raw, dict) and "tests" in raw:
        return tuple(_load_multi_case_file(raw, path))
    return (DCTestCase.from_dict(raw),)


def _core_files() -> list[Path]:
    return [
        p for p in sorted(ROOT.rglob("*.yaml")) if "defeasible" not in p.relative_to(ROOT).parts
    ]


def _case_names(path: Path) -> list[str]:
    """Names of the ``program`` cases in one file, without building them."""
    raw = _raw(path)
    entries = raw["tests"] if isinstance(raw, dict) and "tests" in raw else [raw]
    return [e["name"] for e in entries if isinstance(e, dict) and "program" in e]


CASES: list[tuple[Path, str]] = [(p, n) for p in _core_files() for n in _case_names(p)]


def _params() -> list[Any]:
    params = []
    for path, name in CASES:
        marks = []
        if name in CONTRADICTED:
            marks.append(pytest.mark.xfail(reason=CONTRADICTED[name], strict=True))
        case_id = f"{path.relative_to(ROOT).with_suffix('').as_posix()}::{name}"
        params.append(pytest.param(path, name, marks=marks, id=case_id))
    return params


def get_case(path: Path, name: str) -> DCTestCase:
    """One case by file and name."""
    (case,) = [c for c in load_cases(path) if c.name == name]
    return case


def test_core_cases_found() -> None:
    """The package ships its core suites (basic, recursion, negation, errors)."""
    suites = {p.relative_to(ROOT).parts[0] for p, _ in CASES}
    assert {"basic", "recursion", "negation", "errors"} <= suites
    assert len(CASES) >= 100


@pytest.mark.parametrize(("path", "name"), _params())
def test_datalog_conformance(path: Path, name: str, device: str) -> None:
    """The package's runner accepts the engine's model (or its rejection) for this case."""
    case = get_case(path, name)
    if case.skip:
        pytest.skip(case.skip)
    YamlTestRunner(GpuEngineEvaluator(device)).run_test_case(case)


_REFERENCE_CACHE: dict[str, dict[str, set[tuple[Any, ...]]]] = {}


@pytest.mark.parametrize(
    ("path", "name"),
    [
        p
        for p in _params()
        if p.values[1] not in REFERENCE_TOO_SLOW and p.values[1] not in CONTRADICTED
    ],
)
def test_reference_on_conformance_cases(path: Path, name: str) -> None:
    """The reference evaluator (and the adapter's translation) meets the same expectations."""
    case = get_case(path, name)
    assert case.program is not None
    program = translate(case.program)
    if case.expect_error is not None:
        with pytest.raises(ValueError):  # NotStratifiable, UnsafeRule, ArityMismatch
            evaluate(program)
        return
    key = program_key(case.program)
    if key not in _REFERENCE_CACHE:
        _REFERENCE_CACHE[key] = evaluate(program)
    db = _REFERENCE_CACHE[key]
    assert isinstance(case.expect, dict)
    for rel, rows in case.expect.items():
        assert set(rows) == db.get(rel, set()), rel

"""The wider set of Soufflé's own cases (``../shared/conformance/wider-souffle``, see its README).

Each case runs ``gpu-engine run <test>.dl -F <case>/facts -D <out>`` in-process with the
arguments Soufflé's harness used (``cases.tsv``; a ``-L`` functor library is not available, so
it is dropped and the program must be refused). Its outcome must be what
``conformance_wider.tsv`` records:

* ``pass``: every expected ``<Rel>.csv`` holds the same set of lines as ours, and where Soufflé's
  stdout (``<test>.out``) is part of the expected output, the same sorted lines as our stdout;
* ``refused``: a nonzero exit with a ``file:line:col`` error (a feature we lack), or a pass
  (a case may start passing before the table is updated); never a wrong answer;
* ``wrong``: a known wrong answer (``xfail``, listed so that it is visible, to be fixed);
* ``slow``: skipped (for example a case that needs the magic-set transformation to finish).

``python -m pytest tests/test_conformance_wider.py --wider-report`` is not needed to count: the
table itself holds the pass count the README quotes.
"""

from __future__ import annotations

import csv
import os
import re
from pathlib import Path

import pytest
import souffle_cases
from conftest import locate_shared_dir
from souffle_cases import lines

SHARED = locate_shared_dir()
WIDER = SHARED / "conformance" / "wider-souffle" if SHARED is not None else None
if WIDER is None or not (WIDER / "cases.tsv").is_file():
    pytest.skip("wider-souffle cases not found next to the repository", allow_module_level=True)
assert WIDER is not None

EXPECTED_FILE = Path(__file__).with_name("conformance_wider.tsv")
TIMEOUT = float(os.environ.get("GPU_ENGINE_WIDER_TIMEOUT", "120"))
LOCATION = re.compile(r"\S+:\d+:\d+: ")


def _expected() -> dict[str, tuple[str, str]]:
    with EXPECTED_FILE.open(encoding="utf-8") as f:
        rows = csv.reader((line for line in f if not line.startswith("#")), delimiter="\t")
        return {r[0]: (r[1], r[2] if len(r) > 2 else "") for r in rows if r}


def _cases() -> list[dict[str, str]]:
    with (WIDER / "cases.tsv").open(encoding="utf-8") as f:
        return list(csv.DictReader(f, delimiter="\t"))


CASES = _cases()
EXPECTED = _expected()


def _params() -> list[object]:
    out = []
    for row in CASES:
        status, note = EXPECTED.get(row["case"], ("refused", ""))
        marks = []
        if status == "wrong":
            marks.append(pytest.mark.xfail(reason=f"known wrong answer: {note}", strict=False))
        elif status == "slow":
            marks.append(pytest.mark.skip(reason=f"slow: {note}"))
        out.append(pytest.param(row, status, id=row["case"], marks=marks))
    return out


def test_every_case_has_an_expectation() -> None:
    assert {r["case"] for r in CASES} == set(EXPECTED), "conformance_wider.tsv is out of date"
    assert set(s for s, _ in EXPECTED.values()) <= {"pass", "refused", "wrong", "slow"}


def _program(case: Path, name: str) -> Path:
    test = name.split("__")[1]
    program = case / f"{test}.dl"
    return program if program.exists() else sorted(case.glob("*.dl"))[0]


def _arguments(row: dict[str, str], case: Path, out: Path, device: str) -> list[str]:
    args = ["run", str(_program(case, row["case"])), "--device", device, "--quiet"]
    # functor libraries (``-L<...>``) are not part of the snapshot: dropped
    given = re.sub(r"-L<[^>]*>", "", row["souffle_args"]).split()
    i = 0
    while i < len(given):
        arg = given[i]
        if arg in ("-D", "-F", "-I"):
            value = given[i + 1]
            if arg == "-D":
                args += ["-D", "-" if value == "-" else str(out)]
            else:
                args += [arg, str(case / value)]
            i += 2
            continue
        args.append(arg)
        i += 1
    if not (case / "facts").is_dir():
        (out.parent / "no-facts").mkdir(exist_ok=True)
        args[args.index("-F") + 1] = str(out.parent / "no-facts")
    return args


def _sqlite_dump(db: Path, script: Path) -> list[str]:
    """The lines the ``sqlite3`` shell prints for ``script`` over ``db`` (list mode:
    values joined by ``|``, NULL empty), as Soufflé's harness dumps a sqlite output."""
    import sqlite3

    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        out = []
        for stmt in script.read_text(encoding="utf-8").split(";"):
            if stmt.strip():
                for row in con.execute(stmt):
                    out.append("|".join("" if v is None else str(v) for v in row))
        return out
    finally:
        con.close()


def _problems(case: Path, out: Path, stdout: str) -> list[str]:
    problems = []
    # ``<X>.sqlite.output.script``: the harness dumps our ``<X>.sqlite.output`` with it and
    # compares the sorted lines with ``<X>.sqlite.output.sorted.expected`` (and the
    # snapshot's ``<X>.csv`` holds the same dump)
    for script in sorted(case.glob("*.sqlite.output.script")):
        stem = script.name[: -len(".sqlite.output.script")]
        db = out / f"{stem}.sqlite.output"
        if not db.exists():
            problems.append(f"{db.name}: not written")
            continue
        dump = sorted(_sqlite_dump(db, script))
        want = case / f"{stem}.sqlite.output.sorted.expected"
        if want.exists() and sorted(lines(want)) != dump:
            problems.append(f"{db.name}: dump {dump[:5]}, expected {sorted(lines(want))[:5]}")
        if (case / f"{stem}.csv").exists():
            (out / f"{stem}.csv").write_text("".join(f"{x}\n" for x in dump), encoding="utf-8")
    for expected_file in sorted(case.glob("*.csv")):
        produced = out / expected_file.name
        if not produced.exists():
            problems.append(f"{expected_file.name}: not written")
            continue
        want, got = set(lines(expected_file)), set(lines(produced))
        if want != got:
            problems.append(
                f"{expected_file.name}: missing {sorted(want - got)[:5]}, "
                f"extra {sorted(got - want)[:5]}"
            )
    for out_file in case.glob("*.out"):
        want_lines = sorted(line for line in lines(out_file) if line.strip())
        if want_lines:
            got_lines = sorted(line for line in stdout.splitlines() if line.strip())
            if want_lines != got_lines:
                problems.append(f"stdout: expected {want_lines[:5]}, got {got_lines[:5]}")
    return problems


@pytest.mark.parametrize(("row", "status"), _params())
def test_wider_case(row: dict[str, str], status: str, device: str, tmp_path: Path) -> None:
    case = WIDER / row["case"]
    out = tmp_path / "out"
    out.mkdir()
    rc, stdout, stderr = souffle_cases.run_cli(_arguments(row, case, out, device), TIMEOUT)
    assert "Traceback" not in stderr, stderr
    if rc != 0:
        assert status != "pass", f"exit status {rc}\n{stderr}"
        assert LOCATION.search(stderr), f"refused without file:line:col\n{stderr}"
        return
    problems = _problems(case, out, stdout)
    assert not problems, "wrong answer:\n" + "\n".join(problems) + f"\nstderr:\n{stderr}"

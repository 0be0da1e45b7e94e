"""Shared pieces of the campaigns: seeded hypothesis draws, the in-process CLI judge,
directory snapshots (partial-write checks) and the JSON result line."""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import sys
import time
import traceback
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
TESTS_DIR = ROOT / "tests"
RESULTS_DIR = ROOT / "benchmarks" / "results"
if str(TESTS_DIR) not in sys.path:  # generators.py and reference.py import each other by name
    sys.path.insert(0, str(TESTS_DIR))

from time_limits import CaseTimeout, time_limit, timeout_in  # noqa: E402 - one helper for tests and campaigns

# --- seeded draws from hypothesis strategies ------------------------------------------------


def _provider() -> type:
    """Hypothesis's own random provider without the "local constants" it mixes in (those
    depend on which modules happen to be imported, so a seed would draw a different case
    under pytest than under ``make``)."""
    from hypothesis.internal.conjecture.providers import HypothesisProvider
    from hypothesis.internal.constants_ast import Constants

    class SeededProvider(HypothesisProvider):
        @cached_property
        def _local_constants(self) -> Constants:  # type: ignore[override]
            return Constants()

    return SeededProvider


class DrawRejected(Exception):
    """The strategy rejected the draw (a filter or ``assume`` failed)."""


def draw(strategy: Any, seed: int) -> Any:
    """Draw one example of ``strategy`` reproducibly from ``seed``.

    ``strategy.example()`` is not reproducible and ``@given`` starts from minimal examples,
    so this drives hypothesis's random provider directly: a ``ConjectureData`` over
    ``random.Random(seed)`` inside a build context.
    """
    from hypothesis.control import BuildContext
    from hypothesis.errors import StopTest, UnsatisfiedAssumption
    from hypothesis.internal.conjecture.data import ConjectureData

    data = ConjectureData(random=random.Random(seed), provider=_provider())
    try:
        with BuildContext(data, is_final=False, wrapped_test=None):
            return data.draw(strategy)
    except (StopTest, UnsatisfiedAssumption) as exc:
        raise DrawRejected(type(exc).__name__) from None


# --- running the CLI in-process --------------------------------------------------------------


@dataclass
class CliResult:
    """What one in-process ``gpu-engine`` call did."""

    rc: int
    stdout: str
    stderr: str
    traceback: str | None = None  # an exception escaped main(), or "Traceback" on stderr
    timeout: bool = False
    stats: bool = False  # --stats was given: its table goes to stderr before any error

    def problem(self) -> str | None:
        """Why this outcome breaks the rules (None: a success or a clear error)."""
        if self.timeout:
            return None
        if self.traceback:
            return "traceback"
        if self.rc == 0:
            return None
        # "\n" only: str.splitlines also breaks at \x1c-\x1e, \x85 and \u2028, which a
        # message may quote from the input
        lines = [ln for ln in self.stderr.split("\n") if ln.strip() and
                 not ln.startswith("note: ") and not ln.startswith("warning: ")]
        if not lines and not self.stdout.strip():  # explain: "... does not hold", exit 1
            return "silent failure (nonzero exit, no message)"
        if self.rc == 2 and any(ln.startswith("usage:") for ln in lines):
            return None  # argparse: usage lines and one "gpu-engine ...: error: ..." line
        if len(lines) > 1 and not self.stats:  # --stats prints its table on stderr
            return f"{len(lines)}-line error"
        return None


def run_cli(args: list[str], timeout: float = 20.0) -> CliResult:
    """``gpu_engine.host.cli.main(args)`` with stdout/stderr captured and a time limit."""
    from gpu_engine.host.cli import main

    out, err = io.StringIO(), io.StringIO()
    rc, tb, timed_out = 0, None, False
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            with time_limit(timeout):
                rc = int(main(args) or 0)
        except SystemExit as exc:  # argparse
            rc = exc.code if isinstance(exc.code, int) else 1
        except CaseTimeout:
            timed_out, rc = True, -1
        except KeyboardInterrupt:
            raise
        except BaseException as exc:  # noqa: BLE001 - exactly what the campaign looks for
            if timeout_in(exc) is not None:  # (a limit that fired inside compiled code)
                timed_out, rc = True, -1
            else:
                tb, rc = traceback.format_exc(), -2
    stderr = err.getvalue()
    if tb is None and "Traceback (most recent call last)" in stderr:
        tb = stderr
    return CliResult(rc, out.getvalue(), stderr, tb, timed_out, "--stats" in args)


# --- directory snapshots ----------------------------------------------------------------------


def snapshot(d: Path) -> dict[str, bytes]:
    """Every regular file under ``d`` (relative path -> contents); {} when absent."""
    if not d.exists():
        return {}
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def temp_leftovers(d: Path) -> list[str]:
    """Names under ``d`` that look like an unfinished write (hidden or ``.tmp``/``.partial``)."""
    if not d.exists():
        return []
    return sorted(str(p.relative_to(d)) for p in d.rglob("*")
                  if p.name.startswith(".") or ".tmp" in p.name or p.name.endswith(".partial"))


# --- results ----------------------------------------------------------------------------------


def _clip(text: str, limit: int) -> str:
    """``text`` shortened in the middle to at most about ``limit`` characters."""
    if len(text) <= limit:
        return text
    return text[: limit // 2] + f"\n[... {len(text) - limit} characters ...]\n" + text[-limit // 2:]


@dataclass
class Campaign:
    """Counts and failures of one campaign run; ``line()`` is its JSON result line."""

    name: str
    seed: int
    n: int
    counts: dict[str, int] = field(default_factory=dict)
    failures: list[dict[str, Any]] = field(default_factory=list)
    known: list[dict[str, Any]] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)
    started: float = field(default_factory=time.time)

    def count(self, key: str, k: int = 1) -> None:
        self.counts[key] = self.counts.get(key, 0) + k

    def fail(self, kind: str, seed: int, detail: str, reproducer: str, **more: Any) -> None:
        """Record a failure, or a known one when :mod:`known` lists it."""
        from .known import known_bug

        case = {"kind": kind, "seed": seed, "detail": _clip(detail, 4000),
                "reproducer": _clip(reproducer, 6000), **more}
        bug = known_bug(self.name, kind, detail + "\n" + reproducer)
        if bug:
            case["known_bug"] = bug
            self.known.append(case)
            self.count("known_" + kind)
        else:
            self.failures.append(case)
            self.count(kind)

    def judge(self, seed: int, reproducer: str, check: Any, *args: Any,
              passes: tuple[type[BaseException], ...] = ()) -> None:
        """Run ``check(*args)`` (the problems it finds, as lines); record what it raised
        as a ``traceback`` failure (but for ``passes``, raised on) and its problems as a
        ``disagreement``."""
        try:
            problems = check(*args)
        except passes:
            raise
        except Exception as exc:  # noqa: BLE001 - the campaign records it
            timeout = timeout_in(exc)  # a time limit that fired inside compiled code
            if timeout is not None and isinstance(timeout, passes):
                raise timeout from None
            self.fail("traceback", seed, traceback.format_exc(), reproducer)
            return
        if problems:
            self.fail("disagreement", seed, "\n".join(problems), reproducer)

    def line(self) -> dict[str, Any]:
        return {"campaign": self.name, "seed": self.seed, "n": self.n,
                "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started)),
                "seconds": round(time.time() - self.started, 2), "counts": self.counts,
                "failures": self.failures, "known_failures": self.known, **self.extra}

    def write(self, out: str | os.PathLike[str] | None) -> dict[str, Any]:
        """Append the JSON line to ``out`` (when given) and print a one-line summary."""
        line = self.line()
        if out:
            path = Path(out)
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as f:
                f.write(json.dumps(line) + "\n")
        print(f"{self.name}: seed {self.seed}, n {self.n}, {line['seconds']} s, "
              f"counts {json.dumps(self.counts, sort_keys=True)}, "
              f"{len(self.failures)} failures, {len(self.known)} known", file=sys.stderr)
        return line


def cli_args(argv: list[str] | None, name: str, default_n: int, default_out: str) -> Any:
    """The shared command line of a campaign module: --n, --seed, --out."""
    import argparse

    p = argparse.ArgumentParser(prog=f"python -m benchmarks.campaigns.{name}")
    p.add_argument("--n", type=int, default=int(os.environ.get("N") or default_n),
                   help="number of cases (env N)")
    p.add_argument("--seed", type=int, default=int(os.environ.get("SEED") or 0),
                   help="first seed: case i uses seed+i (env SEED)")
    p.add_argument("--out", default=str(RESULTS_DIR / default_out),
                   help="JSON lines file to append the result to")
    p.add_argument("--device", default="cpu", choices=["cpu", "gpu"])
    return p.parse_args(argv)

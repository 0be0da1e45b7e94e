"""Running Soufflé's own test cases (``../shared/conformance``) through our CLI, in-process.

Shared by ``test_conformance_souffle.py`` (the supported subset) and
``test_conformance_wider.py`` (the wider set, whose cases need further features).
"""

from __future__ import annotations

import contextlib
import io
import os
import signal
import threading
from collections.abc import Iterator
from pathlib import Path

# Seconds one case may take before it counts as a failure (0 disables the limit).
CASE_TIMEOUT = float(os.environ.get("GPU_ENGINE_CASE_TIMEOUT", "600"))


def lines(path: Path) -> list[str]:
    """The lines of a Soufflé output file, without line terminators."""
    return path.read_text(encoding="utf-8").splitlines()


class CaseTimeout(Exception):
    """A case ran longer than its time limit."""


@contextlib.contextmanager
def time_limit(seconds: float) -> Iterator[None]:
    """Raise ``CaseTimeout`` in the main thread after ``seconds`` (POSIX; else no limit)."""
    usable = seconds > 0 and hasattr(signal, "SIGALRM")
    if not usable or threading.current_thread() is not threading.main_thread():
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise CaseTimeout(f"no result after {seconds:g} s (GPU_ENGINE_CASE_TIMEOUT)")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run_cli(args: list[str], timeout: float = CASE_TIMEOUT) -> tuple[int, str, str]:
    """Run ``gpu-engine ARGS`` in-process; returns (exit status, stdout, stderr)."""
    from gpu_engine.host.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        time_limit(timeout),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        try:
            rc = main(args)
        except SystemExit as exc:  # argparse errors
            rc = exc.code if isinstance(exc.code, int) else 1
    return int(rc or 0), stdout.getvalue(), stderr.getvalue()

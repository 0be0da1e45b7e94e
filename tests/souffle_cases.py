"""Running Soufflé's own test cases (``../shared/conformance``) through our CLI, in-process.

Shared by ``test_conformance_souffle.py`` (the supported subset) and
``test_conformance_wider.py`` (the wider set, whose cases need further features).
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

from time_limits import CaseTimeout, time_limit

__all__ = ["CASE_TIMEOUT", "CaseTimeout", "lines", "run_cli", "time_limit"]

# Seconds one case may take before it counts as a failure (0 disables the limit).
CASE_TIMEOUT = float(os.environ.get("GPU_ENGINE_CASE_TIMEOUT", "600"))


def lines(path: Path) -> list[str]:
    """The lines of a Soufflé output file, without line terminators."""
    return path.read_text(encoding="utf-8").splitlines()


def run_cli(args: list[str], timeout: float = CASE_TIMEOUT) -> tuple[int, str, str]:
    """Run ``gpu-engine ARGS`` in-process; returns (exit status, stdout, stderr)."""
    from gpu_engine.host.cli import main

    stdout, stderr = io.StringIO(), io.StringIO()
    with (
        time_limit(timeout, "GPU_ENGINE_CASE_TIMEOUT"),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        try:
            rc = main(args)
        except SystemExit as exc:  # argparse errors
            rc = exc.code if isinstance(exc.code, int) else 1
    return int(rc or 0), stdout.getvalue(), stderr.getvalue()

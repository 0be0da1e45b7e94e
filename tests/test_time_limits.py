"""The shared time limit (``tests/time_limits.py``): limits nest without cancelling or
extending one another, and nothing is left armed."""

from __future__ import annotations

import signal
import time

import pytest
from time_limits import CaseTimeout, time_limit


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def _clean() -> None:
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    assert signal.getsignal(signal.SIGALRM) in (signal.SIG_DFL, None)


def test_limit_fires_and_leaves_nothing_armed() -> None:
    _clean()
    with pytest.raises(CaseTimeout, match="0.05 s"):
        with time_limit(0.05):
            _spin(2)
    _clean()
    with time_limit(5):
        pass
    _clean()


def test_inner_limit_does_not_cancel_the_outer_one() -> None:
    """The bug of the former helpers: an inner limit's exit disarmed the outer timer, so a
    hang after it was never interrupted."""
    t0 = time.monotonic()
    with pytest.raises(CaseTimeout, match="0.3 s"):
        with time_limit(0.3):
            with time_limit(5):  # ends long before it expires
                _spin(0.05)
            _spin(5)  # the outer limit must still fire
    assert time.monotonic() - t0 < 2
    _clean()


def test_inner_limit_does_not_extend_the_outer_one() -> None:
    t0 = time.monotonic()
    with pytest.raises(CaseTimeout):
        with time_limit(0.2):
            try:
                with time_limit(30):
                    _spin(5)  # the outer's 0.2 s applies inside too
            except CaseTimeout:
                pass  # an inner caller that takes the timeout as its own ...
            _spin(5)  # ... still leaves the outer limit to fire, at once
    assert time.monotonic() - t0 < 2
    _clean()


def test_campaigns_and_conformance_share_it() -> None:
    import sys
    from pathlib import Path

    import souffle_cases

    root = str(Path(__file__).resolve().parents[1])
    if root not in sys.path:
        sys.path.append(root)

    from benchmarks.campaigns import common

    assert souffle_cases.time_limit is common.time_limit is time_limit
    assert souffle_cases.CaseTimeout is common.CaseTimeout is CaseTimeout


def test_a_time_limit_inside_the_store_lock_leaves_no_lock_behind(
        tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A limit that fires just as the writer lock is taken must not leave it held by a lost
    descriptor: every later writer (another process, or this one) would wait for ever."""
    import fcntl
    import os

    from gpu_engine.host import store

    real = fcntl.flock

    def flock_then_expire(fd: int, op: int) -> None:
        real(fd, op)
        raise CaseTimeout("fired right after flock")

    monkeypatch.setattr(store.fcntl, "flock", flock_then_expire)
    with pytest.raises(CaseTimeout):
        with store.store_lock(tmp_path):
            pass
    monkeypatch.undo()
    fd = os.open(tmp_path / "LOCK", os.O_RDWR)
    try:
        real(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # BlockingIOError if the lock leaked
    finally:
        os.close(fd)
    with store.store_lock(tmp_path):  # and this process takes it again
        pass

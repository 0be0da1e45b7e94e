"""One time limit for in-process cases (conformance tests and the campaigns).

:func:`time_limit` raises :class:`CaseTimeout` in the main thread when a case runs too long
(``SIGALRM`` through ``setitimer``; elsewhere, or off the main thread, no limit).  It is
a ``BaseException``: nothing in the engine catches it on the way (an ``except Exception``
that swallowed it would let the case run on with no alarm left: a hang).

Limits nest: an inner limit never cancels or extends an outer one.  The outer timer's
remaining time is read when the inner one starts (the earlier of the two is armed) and
re-armed, less the time spent, when it ends (at once if that is past); the outer handler is
put back before the outer timer runs again.
"""

from __future__ import annotations

import contextlib
import signal
import threading
import time
from collections.abc import Iterator

MIN_REARM = 1e-3  # seconds: an outer limit that is already past fires this soon


class CaseTimeout(BaseException):
    """A case ran past its time limit."""


@contextlib.contextmanager
def time_limit(seconds: float, what: str = "") -> Iterator[None]:
    """Raise :class:`CaseTimeout` in the main thread after ``seconds`` (0: no limit)."""
    usable = (seconds > 0 and hasattr(signal, "SIGALRM")
              and threading.current_thread() is threading.main_thread())
    if not usable:
        yield
        return

    def expire(signum: int, frame: object) -> None:
        raise CaseTimeout(f"no result after {seconds:g} s{' (' + what + ')' if what else ''}")

    start = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expire)
    outer_left, _ = signal.setitimer(signal.ITIMER_REAL, 0)  # read (and stop) an outer one
    signal.setitimer(signal.ITIMER_REAL, min(seconds, outer_left) if outer_left else seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer_left:
            left = outer_left - (time.monotonic() - start)
            signal.setitimer(signal.ITIMER_REAL, max(left, MIN_REARM))


def timeout_in(exc: BaseException) -> CaseTimeout | None:
    """The :class:`CaseTimeout` in ``exc``'s chain of causes, if any: a limit that fires
    inside compiled code (Numba's loader, say) comes back as a ``SystemError`` caused by
    it, which is still the case running too long, not a failure of the case."""
    seen: set[int] = set()
    e: BaseException | None = exc
    while e is not None and id(e) not in seen:
        if isinstance(e, CaseTimeout):
            return e
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return None

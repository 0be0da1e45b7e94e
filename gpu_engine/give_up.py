"""What an update remembers after its incremental algorithm gave up (ran past its time
budget and rematerialised): the next deletions at least as large rematerialise at once.

Used by the default algorithm's budget (``maintenance``: DRed^c or DRed) and by ``auto``
with equality (``equality_maintenance``: DRed≈ or B/F≈).  Each give-up in a row doubles how
many deletions skip the attempt (``first``, then twice that, up to :data:`MAX_SKIP`); an
attempt that runs to its end forgets it (the caller sets the record to ``None``).  A
stream of deletions that always give up then costs about one rematerialisation each, not
an attempt plus a rematerialisation every other one: LUBM(10) LUBM_LE on the H200, 1,000
deletions, the default algorithm took 0.36 s against Remat's 0.14 s with one skip after
each give-up (stop 47).  A skipped deletion that would have run to its end costs one
rematerialisation instead of the update: the bound the budget already gives.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

MAX_SKIP = 8  # at most this many deletions rematerialise at once before the next attempt


@dataclass(frozen=True)
class GaveUp:
    """``what`` gave up on a deletion of ``size`` explicit facts; the next ``skip``
    deletions at least as large rematerialise at once; ``streak`` give-ups in a row."""

    what: str
    size: int
    skip: int
    streak: int = 1

    def note(self) -> str:
        """Why a deletion rematerialises at once (before ``skip`` counts it)."""
        return (f"gave up on a deletion of {self.size:,} facts lately ({self.skip} more as "
                "large before it tries again)")


def after_give_up(prev: GaveUp | None, what: str, size: int, first: int) -> GaveUp:
    """The record after ``what`` gave up on ``size`` facts (``prev``: the record before)."""
    streak = prev.streak + 1 if prev is not None and prev.what == what else 1
    return GaveUp(what, size, min(MAX_SKIP, first << (streak - 1)), streak)


def skips(rec: GaveUp | None, what: str, deleted: int) -> tuple[bool, GaveUp | None]:
    """Whether ``what``'s attempt at a deletion of ``deleted`` facts is skipped (the update
    rematerialises at once), and the record after it.  Smaller deletions, insertions and
    other algorithms try; once the skips are spent the next one tries, and the record
    stays, so that its give-up lengthens the streak."""
    if rec is None or not deleted or deleted < rec.size or rec.what != what or not rec.skip:
        return False, rec
    return True, replace(rec, skip=rec.skip - 1)

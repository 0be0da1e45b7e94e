"""A relation as a few disjoint sorted runs (a log-structured merge of deltas).

Seminaive evaluation adds a delta to every recursive relation in every round.  Merging
each delta into one sorted array copies the whole relation per round (quadratic for
long chains of small deltas); instead a delta becomes a new run and the smallest runs
are merged while a run is not at least ``FACTOR`` times larger than the next one, so a
relation of n rows has O(log n) runs and every row is copied O(log n) times.  Runs are
immutable, so their join indexes stay cached from round to round.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kernels.backend import Backend

from .rowset import RowSet

FACTOR = 4
SMALL = 1024  # runs below this size are merged eagerly


@dataclass(frozen=True)
class RunSet:
    be: Backend
    arity: int
    runs: tuple[RowSet, ...]

    @staticmethod
    def empty(be: Backend, arity: int) -> RunSet:
        return RunSet(be, arity, ())

    @staticmethod
    def of(rs: RowSet) -> RunSet:
        return RunSet(rs.be, rs.arity, (rs,) if len(rs) else ())

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", sum(r.n for r in self.runs))

    def __len__(self) -> int:
        return self.n  # type: ignore[attr-defined]

    def contains(self, cols: tuple[Any, ...], n: int) -> Any:
        """Mask: which of the given rows are in the relation."""
        xp = self.be.xp
        mask = xp.zeros(n, dtype=bool)
        for r in self.runs:
            mask |= r.contains(cols) if self.arity else xp.full(n, bool(len(r)), dtype=bool)
        return mask

    def new_rows(self, d: RowSet) -> RowSet:
        """The rows of the sorted set ``d`` that are not in the relation.

        Runs whose first-column range does not overlap ``d``'s are skipped (a check on
        cached host integers), which keeps chains of small, growing deltas cheap.
        """
        if not self.runs or len(d) == 0:
            return d
        if self.arity == 0:
            return d.select(~self.contains(d.cols, len(d)))
        lo, hi = d.first_column_range()
        mask = None
        for r in self.runs:
            rlo, rhi = r.first_column_range()
            if rhi < lo or rlo > hi:
                continue
            m = r.contains(d.cols, rows_sorted=True)
            mask = m if mask is None else (mask | m)
        return d if mask is None else d.select(~mask)

    def append(self, d: RowSet) -> RunSet:
        """Add a run of rows disjoint from the relation, then restore the size invariant."""
        if len(d) == 0:
            return self
        runs = list(self.runs) + [d]
        while len(runs) > 1 and (len(runs[-2]) < FACTOR * len(runs[-1])
                                 or len(runs[-2]) < SMALL):
            last = runs.pop()
            runs[-1] = runs[-1].merge(last)
        return RunSet(self.be, self.arity, tuple(runs))

    def compact(self) -> RowSet:
        """All rows as one sorted run."""
        if not self.runs:
            return RowSet.empty(self.be, self.arity)
        out = self.runs[0]
        for r in self.runs[1:]:
            out = out.merge(r)
        return out

    def compacted(self) -> RunSet:
        return self if len(self.runs) <= 1 else RunSet.of(self.compact())

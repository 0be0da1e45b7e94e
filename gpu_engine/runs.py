"""A relation as a few disjoint sorted runs (a log-structured merge of deltas).

Seminaive evaluation adds a delta to every recursive relation in every round.  Merging
each delta into one sorted array copies the whole relation per round (quadratic for
long chains of small deltas); instead a delta becomes a new run and the smallest runs
are merged while a run is not at least ``FACTOR`` times larger than the next one, so a
relation of n rows has O(log n) runs and every row is copied O(log n) times.  Runs are
immutable, so their join indexes stay cached from round to round.

A committed relation may also hold tombstones (``dead``): row sets of facts deleted from
its runs, which stay in place until enough changes have accumulated to make a rewrite
cheap per change (:meth:`RunSet.worth_compacting`).  An update then costs what it
changes: deleting facts adds a tombstone set, adding facts adds a small run (a deleted
fact that comes back leaves its tombstone set), and the large runs keep their rows,
their positions (so counters aligned with them are updated in place) and their cached
join indexes.  Readers treat a tombstone set as an excluded set of a view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_engine.kernels import cpu_small as small
from gpu_engine.kernels import keys as K
from gpu_engine.kernels.backend import Backend

from .rowset import RowSet

FACTOR = 4
SMALL = 1024  # runs below this size are merged eagerly
COMPACT_SHARE = 8  # rewrite a relation once tombstones and small runs pass 1/8 of it
MAX_RUNS = 16


@dataclass(frozen=True)
class RunSet:
    be: Backend
    arity: int
    runs: tuple[RowSet, ...]
    dead: tuple[RowSet, ...] = ()  # disjoint row sets of deleted rows of the runs

    @staticmethod
    def empty(be: Backend, arity: int) -> RunSet:
        return RunSet(be, arity, ())

    @staticmethod
    def of(rs: RowSet) -> RunSet:
        return RunSet(rs.be, rs.arity, (rs,) if len(rs) else ())

    def __post_init__(self) -> None:
        object.__setattr__(self, "n", sum(r.n for r in self.runs)
                           - sum(d.n for d in self.dead))

    def __len__(self) -> int:
        return self.n  # type: ignore[attr-defined]

    def contains(self, cols: tuple[Any, ...], n: int) -> Any:
        """Mask: which of the given rows are in the relation.  The rows' column ranges
        are read once for every run and tombstone set, and a run or tombstone set whose
        first column's range (cached) misses the rows' is skipped."""
        xp = self.be.xp
        if not self.arity or not n or len(self.runs) + len(self.dead) < 2 or small.use(
                self.be, n):  # (compiled tests of a few rows cost less than the ranges)
            mask = xp.zeros(n, dtype=bool)
            for r in self.runs:
                mask |= r.contains(cols) if self.arity else xp.full(n, bool(len(r)),
                                                                    dtype=bool)
            if self.dead:
                mask &= ~self._in_dead(cols, n)
            return mask
        ranges = K.column_ranges(self.be, cols)
        lo, hi = ranges[0][0], ranges[1][0]
        mask = None
        for r in self.runs:
            rlo, rhi = r.first_column_range()
            if rhi >= lo and rlo <= hi:
                m = r.contains(cols, ranges=ranges)
                mask = m if mask is None else (mask | m)
        if mask is None:
            return xp.zeros(n, dtype=bool)
        for d in self.dead:
            dlo, dhi = d.first_column_range()
            if dhi >= lo and dlo <= hi:
                mask &= ~d.contains(cols, ranges=ranges)
        return mask

    def has(self, rows: RowSet) -> Any:
        """Mask over ``rows`` (same arity): which are in the relation."""
        return self.contains(rows.cols, len(rows))

    def _in_dead(self, cols: tuple[Any, ...], n: int) -> Any:
        xp = self.be.xp
        out = xp.zeros(n, dtype=bool)
        for d in self.dead:
            out |= d.contains(cols) if self.arity else xp.full(n, bool(len(d)), dtype=bool)
        return out

    def rows_with(self, pos: tuple[int, ...], values: Any, n_ids: int | None = None,
                  flag: Any | None = None) -> RowSet:
        """The live rows with one of ``values`` (sorted, distinct ids) in a column of
        ``pos``, as one sorted run: per run and column through the run's join index on
        the column (:meth:`RowSet.positions_with`; cached on the run, which keeps it
        across updates; the first column's costs no sort), so the cost follows the rows
        found.  With ``n_ids`` (the columns hold dictionary ids below it) or ``flag`` (a
        mask over the ids, true at ``values``) a later column without a cached index is
        read by the flag instead of being sorted (or skipped by the run's bitset of the
        column's values)."""
        if flag is None and n_ids is not None and len(values):
            flag = self.be.xp.zeros(max(n_ids, int(values[-1]) + 1), dtype=bool)
            flag[values] = True
        parts = [run.take(at) for run, at in self.positions_with(pos, values, flag)]
        if not parts:
            return RowSet.empty(self.be, self.arity)
        out = parts[0]
        for x in parts[1:]:
            out = out.merge(x)
        if self.dead and len(out):
            out = out.select(~self._in_dead(out.cols, len(out)))
        return out

    def positions_with(self, pos: tuple[int, ...], values: Any, flag: Any | None = None
                       ) -> list[tuple[RowSet, Any]]:
        """Per run with a hit, the sorted positions of its rows (tombstoned ones included)
        with one of ``values`` (sorted, distinct) in a column of ``pos``
        (:meth:`RowSet.positions_with`; ``flag``: a mask over the ids, true at
        ``values``, read along a later column without a cached index)."""
        xp = self.be.xp
        if not len(values) or not pos:
            return []
        out = []
        for run in self.runs:
            hits = [run.positions_with(p, values, flag) for p in pos]
            at = hits[0] if len(hits) == 1 else xp.unique(xp.concatenate(hits))
            if len(at):
                out.append((run, at))
        return out

    def new_rows(self, d: RowSet) -> RowSet:
        """The rows of the sorted set ``d`` that are not in the relation.

        Runs whose first-column range does not overlap ``d``'s are skipped (a check on
        cached host integers), which keeps chains of small, growing deltas cheap.
        """
        if not self.runs or len(d) == 0:
            return d
        if self.arity == 0 or self.dead:
            return d.select(~self.contains(d.cols, len(d)))
        lo, hi = d.first_column_range()
        mask = None
        for r in self.runs:
            rlo, rhi = r.first_column_range()
            if rhi < lo or rlo > hi:
                continue
            m = r.has(d)
            mask = m if mask is None else (mask | m)
        return d if mask is None else d.select(~mask)

    def append(self, d: RowSet) -> RunSet:
        """Add a run of rows disjoint from the relation, then restore the size invariant.
        Rows of ``d`` under a tombstone come back in place (their tombstone is lifted)."""
        if len(d) == 0:
            return self
        dead = self.dead
        if dead:
            back = self._in_dead(d.cols, len(d))
            if bool(back.any()):
                dead = self._lift(d.select(back))
                d = d.select(~back)
                if len(d) == 0:
                    return RunSet(self.be, self.arity, self.runs, dead)
        runs = list(self.runs) + [d]
        while len(runs) > 1 and (len(runs[-2]) < FACTOR * len(runs[-1])
                                 or len(runs[-2]) < SMALL):
            last = runs.pop()
            runs[-1] = runs[-1].merge(last)
        return RunSet(self.be, self.arity, tuple(runs), dead)

    def _lift(self, back: RowSet) -> tuple[RowSet, ...]:
        """The tombstone sets without the rows of ``back``."""
        if self.arity == 0:
            return ()
        out = []
        for x in self.dead:  # (found by probing x with the few rows of back)
            hit = x.has(back) if len(x) else None
            if hit is not None and bool(hit.any()):
                if int(hit.sum()) == len(x):
                    continue  # every row of x comes back
                keep = self.be.xp.ones(len(x), dtype=bool)
                keep[x.positions_of(back.select(hit))] = False
                x = x.select(keep)
            if len(x):
                out.append(x)
        return tuple(out)

    def without(self, rows: RowSet) -> RunSet:
        """The relation without ``rows`` (live rows of it): a tombstone set, no copy."""
        if len(rows) == 0:
            return self
        dead = [*self.dead, rows]
        # few tombstone sets, merged as the runs are (small ones at once): every reader
        # tests its rows against each
        while len(dead) > 1 and (len(dead[-2]) < FACTOR * len(dead[-1])
                                 or len(dead[-2]) < SMALL):
            last = dead.pop()
            dead[-1] = dead[-1].merge(last)
        return RunSet(self.be, self.arity, self.runs, tuple(dead))

    def worth_compacting(self) -> bool:
        """Whether tombstones and small runs have grown enough (an eighth of the largest
        run) that rewriting the relation as one run costs O(1) per change."""
        if not self.dead and len(self.runs) <= 1:
            return False
        big = max((len(r) for r in self.runs), default=0)
        small = sum(len(r) for r in self.runs) - big + sum(len(x) for x in self.dead)
        return COMPACT_SHARE * small > big or len(self.runs) > MAX_RUNS

    def compact(self) -> RowSet:
        """All rows as one sorted run."""
        if not self.runs:
            return RowSet.empty(self.be, self.arity)
        out = self.runs[0]
        for r in self.runs[1:]:
            out = out.merge(r)
        for x in self.dead:
            out = out.minus(x) if self.arity else RowSet.empty(self.be, 0)
        return out

    def compacted(self) -> RunSet:
        if len(self.runs) <= 1 and not self.dead:
            return self
        return RunSet.of(self.compact())

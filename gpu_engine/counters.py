"""Derivation counters (c_nr, c_r of paper 000 §4) aligned with a relation's runs.

A relation is a :class:`~gpu_engine.runs.RunSet`: a few sorted runs, possibly with
tombstones.  Its counters are one array per run, aligned with the run's rows (the entries
of tombstoned rows are meaningless), so that an update changes counters in place at the
positions it touches and adds arrays for the runs it adds: it never copies the counters
of a large run.  :func:`append_counted` adds a run the way :meth:`RunSet.append` does
(lifting tombstones of facts that come back, merging runs to keep their sizes
geometric) and moves the counters along; :func:`compacted` rewrites a relation and its
counters as one run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_engine.kernels.backend import INDEX, Backend

from . import runs as R
from .rowset import RowSet
from .runs import RunSet


@dataclass
class Counters:
    """``c_nr`` and ``c_r``: one array per run of the relation, aligned with its rows."""

    nonrec: tuple[Any, ...]
    rec: tuple[Any, ...]

    @staticmethod
    def single(nonrec: Any, rec: Any) -> Counters:
        """Counters of a relation held as one run (``RunSet.of``: none when empty)."""
        if len(nonrec) == 0:
            return Counters((), ())
        return Counters((nonrec,), (rec,))

    def without_rec(self, be: Backend) -> Counters:
        """The same ``c_nr`` with every ``c_r`` zero."""
        return Counters(self.nonrec, tuple(be.xp.zeros_like(a) for a in self.nonrec))


def locate(rs: RunSet, rows: RowSet) -> list[tuple[int, Any, Any]]:
    """Where rows of ``rs``'s runs lie: (run index, indexes into ``rows``, positions in the
    run) for every run holding some of them."""
    xp = rs.be.xp
    out = []
    if len(rows) == 0:
        return out
    if rs.arity == 0:
        return [(0, xp.zeros(len(rows), dtype=INDEX), xp.zeros(len(rows), dtype=INDEX))] \
            if rs.runs else []
    left = None
    for i, run in enumerate(rs.runs):
        if len(rs.runs) == 1:
            idx = xp.arange(len(rows), dtype=INDEX)
            sub = rows
        else:
            m = run.has(rows)
            if left is not None:
                m &= left
            idx = xp.flatnonzero(m).astype(INDEX)
            if len(idx) == 0:
                continue
            left = ~m if left is None else left & ~m
            sub = rows if len(idx) == len(rows) else rows.select(m)
        out.append((i, idx, run.positions_of(sub)))
    return out


def gather(parts: tuple[Any, ...], located: list[tuple[int, Any, Any]], n: int,
           be: Backend) -> Any:
    """The counters at the places :func:`locate` found for ``n`` rows."""
    out = be.xp.zeros(n, dtype=INDEX)
    for i, idx, pos in located:
        out[idx] = parts[i][pos]
    return out


def add_at(rs: RunSet, parts: tuple[Any, ...], rows: RowSet, deltas: Any,
           located: list[tuple[int, Any, Any]] | None = None) -> tuple[Any, ...]:
    """``parts += deltas`` at the positions of ``rows`` (rows of ``rs``'s runs, live or
    under a tombstone; ``located``: where they lie, when known), in place (an array that
    is not writeable, e.g. mapped from a store, is copied first)."""
    out = list(parts)
    for i, idx, pos in located if located is not None else locate(rs, rows):
        out[i] = _writeable(out[i])
        out[i][pos] += deltas[idx]
    return tuple(out)


def set_at(rs: RunSet, parts: list[Any], rows: RowSet, vals: Any,
           located: list[tuple[int, Any, Any]] | None = None) -> None:
    """``parts[i] := vals`` at the positions of ``rows`` (rows of the runs; ``located``:
    where they lie, when known), in place."""
    if located is None:
        located = locate(RunSet(rs.be, rs.arity, rs.runs), rows)
    for i, idx, pos in located:
        parts[i] = _writeable(parts[i])
        parts[i][pos] = vals[idx]


def _writeable(a: Any) -> Any:
    writeable = getattr(getattr(a, "flags", None), "writeable", True)  # (CuPy: no such flag)
    return a if writeable else a.copy()


def append_counted(rs: RunSet, c: Counters, d: RowSet, nr: Any, r: Any
                   ) -> tuple[RunSet, Counters]:
    """``rs`` plus the rows ``d`` (not live in ``rs``) with counters ``nr``/``r``, and the
    counters of the result.  Rows under a tombstone come back in place (their counters
    are overwritten there); the others form a new run, merged with the smaller runs as
    :meth:`RunSet.append` does, the counters moved along."""
    be, xp = rs.be, rs.be.xp
    nonrec, rec = list(c.nonrec), list(c.rec)
    if len(d) and rs.dead:
        back = rs._in_dead(d.cols, len(d))
        every = bool(back.all())  # (a re-insertion: no selections)
        if every or bool(back.any()):
            b, nb, rb = (d, nr, r) if every else (d.select(back), nr[back], r[back])
            at = locate(RunSet(be, rs.arity, rs.runs), b)  # (tombstoned rows: in the runs)
            set_at(rs, nonrec, b, nb, at)
            set_at(rs, rec, b, rb, at)
            rs = RunSet(be, rs.arity, rs.runs, rs._lift(b))
            if every:
                return rs, Counters(tuple(nonrec), tuple(rec))
            keep = ~back
            d, nr, r = d.select(keep), nr[keep], r[keep]
    if len(d) == 0:
        return rs, Counters(tuple(nonrec), tuple(rec))
    runs = list(rs.runs) + [d]
    nonrec.append(nr)
    rec.append(r)
    while len(runs) > 1 and (len(runs[-2]) < R.FACTOR * len(runs[-1])
                             or len(runs[-2]) < R.SMALL):
        last, prev = runs.pop(), runs[-1]
        merged = prev.merge(last)
        pa, pb = _merge_positions(merged, prev, last)
        for parts in (nonrec, rec):
            lv, pv = parts.pop(), parts[-1]
            out = xp.zeros(len(merged), dtype=INDEX)
            out[pa] = pv
            out[pb] = lv
            parts[-1] = out
        runs[-1] = merged
    return RunSet(be, rs.arity, tuple(runs), rs.dead), Counters(tuple(nonrec), tuple(rec))


def _merge_positions(merged: RowSet, a: RowSet, b: RowSet) -> tuple[Any, Any]:
    xp = merged.be.xp
    if merged.arity == 0:
        z = xp.zeros(len(a), dtype=INDEX)
        return z, xp.zeros(len(b), dtype=INDEX)
    return merged.positions(a.cols), merged.positions(b.cols)


def compacted(rs: RunSet, c: Counters) -> tuple[RunSet, Counters]:
    """The relation as one run of its live rows, with its counters."""
    if len(rs.runs) <= 1 and not rs.dead:
        return rs, c
    be, xp = rs.be, rs.be.xp
    final = rs.compact()
    nr = xp.zeros(len(final), dtype=INDEX)
    r = xp.zeros(len(final), dtype=INDEX)
    if len(final):
        for run, pn, pr in zip(rs.runs, c.nonrec, c.rec):
            if len(run) == 0:
                continue
            if rs.dead:
                live = ~RunSet(be, rs.arity, (), rs.dead)._in_dead(run.cols, len(run))
                if not bool(live.all()):
                    run, pn, pr = run.select(live), pn[live], pr[live]
                if len(run) == 0:
                    continue
            pos = final.positions(run.cols) if rs.arity else xp.zeros(len(run), dtype=INDEX)
            nr[pos] = pn
            r[pos] = pr
    return RunSet.of(final), Counters.single(nr, r)


def flat(rs: RunSet, c: Counters) -> tuple[RowSet, Any, Any]:
    """The live rows as one sorted run and their counters (copies)."""
    one, cc = compacted(rs, c)
    row = one.runs[0] if one.runs else RowSet.empty(rs.be, rs.arity)
    if not one.runs:
        z = rs.be.xp.zeros(0, dtype=INDEX)
        return row, z, z
    return row, cc.nonrec[0].copy(), cc.rec[0].copy()

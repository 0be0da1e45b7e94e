"""Absorbing a round's derivations through a bitmap of the relation (:mod:`kernels.dense_seen`).

``Engine._absorb`` turns a round's head rows into Δ, the distinct rows not yet in the
relation: sort, deduplicate, test against every run (``RowSet.from_columns``,
``RunSet.new_rows``).  For a large round of a relation whose key space is small, this
keeps one bitmap per relation that mirrors it, and finds Δ by one test-and-set pass over
the derivations; only Δ is sorted.  The result is the same row set either way.

A bitmap is valid for one value of the relation: the :class:`RunSet` it was built from
or brought up to date with (``mirrors``, compared by identity; run sets are immutable).
Anything else that changes the relation (a rewrite by equality, a tombstone, a choice
that drops rows, a restore after a failed update) leaves the store holding another
object, and the bitmap is rebuilt or not used.  Rows that fall outside the bitmap's
key space rebuild it over the larger box (with a spare bit per column, so a growing
domain rebuilds it O(log) times).  The bitmaps are a cache of the store, dropped
at the end of every stratum (:meth:`DenseAbsorb.clear`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_engine.kernels import cpu_numba
from gpu_engine.kernels import dense_seen as bits_k
from gpu_engine.kernels import keys as K
from gpu_engine.kernels import sets as S
from gpu_engine.kernels.backend import Backend

from .rowset import RowSet
from .runs import RunSet

MIN_ROWS = 1 << 17  # a round of fewer derivations sorts them (no bitmap to zero)


@dataclass
class SeenBits:
    """The keys of one relation's rows under ``spec``, one bit each."""

    mirrors: RunSet  # the relation's value these bits hold
    spec: K.KeySpec
    bits: Any


class DenseAbsorb:
    """Bitmaps of the relations that large rounds add to, by relation name."""

    def __init__(self, be: Backend) -> None:
        self.be = be
        self.sets: dict[str, SeenBits] = {}

    def clear(self) -> None:
        self.sets.clear()

    def new_rows(self, name: str, cur: RunSet, cols: tuple[Any, ...], n: int) -> RowSet | None:
        """The distinct rows of ``cols`` (``n`` rows) not in ``cur``, sorted, with their
        bits set (call :meth:`appended` once ``cur`` holds them); None when the bitmap
        path does not serve (the caller sorts instead)."""
        be = self.be
        if (be.is_gpu or cur.arity < 2 or cur.dead or n < MIN_ROWS or not bits_k.AVAILABLE
                or not cpu_numba.use(be, n)):
            return None
        seen = self.sets.get(name)
        mins, maxs = K.column_ranges(be, cols)
        if seen is None or seen.mirrors is not cur or not seen.spec.covers(mins, maxs):
            seen = self._build(name, cur, mins, maxs, n, grow=seen is not None
                               and seen.mirrors is cur)
            if seen is None:
                return None
        keys = bits_k.first_new(seen.bits, cols, seen.spec)
        if not len(keys):
            return RowSet.empty(be, cur.arity)
        keys = S.sort_values(be, keys, overwrite=True)
        return RowSet(be, None, keys, seen.spec, len(keys))

    def appended(self, name: str, before: RunSet, after: RunSet, new: RowSet,
                 marked: bool) -> None:
        """The relation went from ``before`` to ``after`` by adding ``new`` (``marked``:
        found by :meth:`new_rows`, its bits set): a bitmap of ``before`` follows, else
        it is dropped."""
        seen = self.sets.get(name)
        if seen is None:
            return
        if seen.mirrors is not before:
            del self.sets[name]
            return
        if len(new) and not marked:
            if new.spec is None or not seen.spec.covers(*bits_k.field_ranges(new.keys,
                                                                             new.spec)):
                del self.sets[name]
                return
            bits_k.mark_keys(seen.bits, new.keys, new.spec, seen.spec)
        seen.mirrors = after

    def _build(self, name: str, cur: RunSet, mins: list[int], maxs: list[int], n: int,
               grow: bool) -> SeenBits | None:
        """A bitmap of ``cur`` over a box that holds its rows and ``[mins, maxs]``
        (``grow``: the previous box was too small; every column gets a spare bit)."""
        self.sets.pop(name, None)

        def box(lo: list[int], hi: list[int], headroom: int = 0) -> K.KeySpec | None:
            spec = K.make_spec(lo, hi, headroom=headroom)
            return spec if spec is not None and bits_k.fits(spec, len(cur) + n) else None

        lo, hi = list(mins), list(maxs)
        for run in cur.runs:  # a box too large already: no pass over the relation
            a, b = run.first_column_range()
            lo[0], hi[0] = min(lo[0], a), max(hi[0], b)
        if box(lo, hi) is None or any(run.spec is None for run in cur.runs):
            return None
        for run in cur.runs:
            rlo, rhi = bits_k.field_ranges(run.keys, run.spec)
            lo = [min(a, b) for a, b in zip(lo, rlo)]
            hi = [max(a, b) for a, b in zip(hi, rhi)]
        spec = box(lo, hi, headroom=1 if grow else 0)
        if spec is None:
            return None
        bits = bits_k.empty(spec)
        for run in cur.runs:
            bits_k.mark_keys(bits, run.keys, run.spec, spec)
        seen = self.sets[name] = SeenBits(cur, spec, bits)
        return seen

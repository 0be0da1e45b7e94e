"""F^π ∩ E′: the explicit facts (as written) whose π-image is one of given normal facts.

Paper 001 reads E through π: a normal fact F is explicit when some written fact of E′
normalises to it (Algorithm 5 line 40; DRed's "F ∈ E \\ E⁻" in normal form).  The test
never normalises all of E′: it costs the members of the classes of the facts asked about
(the brief's E_norm, §1.4), through three cases chosen per call:

* every class of every fact is a singleton: F^π = {F}, one membership test;
* the members of the classes make at most :data:`EXPAND_MIN` rows: F is expanded to
  them and each is tested;
* otherwise the join index of E′'s runs on one domain column (cached on the runs, which
  E′ shares with E across updates) is probed with the members of the classes of that
  column, and the rows found are kept when their π-image is among the facts.

Used by B/F≈ (:mod:`gpu_engine.equality_bf`, line 40) and by the DRed of deletions that
reach no equality (:mod:`gpu_engine.equality_dred`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from gpu_engine.kernels.backend import INDEX
from gpu_engine.kernels.join import expand, probe
from gpu_engine.kernels.keys import pack_probe
from gpu_engine.kernels.sets import unique_keys

from .rowset import RowSet, union_rows
from .runs import RunSet

# F expanded to the members of its classes when that makes at most this many rows, else
# E′ is probed through an index on one domain column
EXPAND_MIN = 4096


@dataclass
class Classes:
    """ρ and its class index (:meth:`gpu_engine.equality.EqualityEngine.class_index`):
    ``members`` sorted by representative, ``offsets`` and ``sizes`` indexed by
    representative id."""

    rho: Any
    members: Any
    offsets: Any
    sizes: Any


def gather(cols: tuple[Any, ...], pos: tuple[int, ...], arr: Any) -> tuple[Any, ...]:
    """``cols`` with the columns at ``pos`` mapped through ``arr``."""
    return tuple(arr[c] if i in pos else c for i, c in enumerate(cols))


def members_in(be: Any, e: RunSet, rows: RowSet, pos: tuple[int, ...], cl: Classes
               ) -> RowSet | None:
    """F^π ∩ E′ for the π-normal facts F of ``rows`` (``pos``: the relation's domain
    columns); None when E′ is empty."""
    if not len(e):
        return None
    xp = be.xp
    total = len(rows)
    if pos:
        prod = xp.ones(len(rows), dtype=INDEX)
        for p in pos:
            prod = prod * cl.sizes[rows.cols[p]]
        total = int(prod.sum())
    if total == len(rows):  # F^π = {F}
        return rows.select(e.contains(rows.cols, len(rows)))
    if total <= EXPAND_MIN:
        cols = list(rows.cols)
        for p in pos:
            v = cols[p]
            idx, at = expand(be, cl.offsets[v], cl.sizes[v])
            cols = [c[idx] for c in cols]
            cols[p] = cl.members[at]
        hit = xp.flatnonzero(e.contains(tuple(cols), total))
        return RowSet.from_columns(be, tuple(c[hit] for c in cols), rows.arity,
                                   n_rows=len(hit))
    return _by_index(be, e, rows, pos, cl)


def _by_index(be: Any, e: RunSet, rows: RowSet, pos: tuple[int, ...], cl: Classes
              ) -> RowSet:
    """F^π ∩ E′ through the join index of E′'s runs on the domain column whose classes
    have the fewest members (an index on a later column not built yet counts a sort)."""
    best: tuple[int, int, Any] | None = None
    for p in pos:
        v = unique_keys(be, rows.cols[p])
        cost = int(cl.sizes[v].sum())
        if p and any(((p,), (), ()) not in run._indexes for run in e.runs):
            cost += len(e) // 4
        if best is None or cost < best[0]:
            best = (cost, p, v)
    assert best is not None
    _, p, v = best
    _, at = expand(be, cl.offsets[v], cl.sizes[v])
    m = cl.members[at]
    parts = []
    for run in e.runs:
        ji = run.index((p,))
        if ji.spec is None or ji.sorted_keys is None:  # ranked index: scan the run
            cand = run.cols
        else:
            lo, cnt = probe(be, pack_probe(be, (m,), ji.spec), ji.sorted_keys)
            _, got = expand(be, lo, cnt)
            rid = ji.rows[got]
            cand = tuple(c[rid] for c in run.cols)
        if not len(cand[0]):
            continue
        hit = be.xp.flatnonzero(rows.contains(gather(cand, pos, cl.rho)))
        if len(hit):
            parts.append(RowSet.from_columns(be, tuple(c[hit] for c in cand), rows.arity,
                                             n_rows=len(hit)))
    g = union_rows(be, rows.arity, parts)
    if e.dead and len(g):
        g = g.select(~e._in_dead(g.cols, len(g)))
    return g


class ExplicitImage:
    """π(E′) of one relation as a membership test (``has``), without normalising E′:
    what DRed's rederivation asks of E (:func:`gpu_engine.forward_algorithms._dred_rederive`)
    when the relation holds rewritten facts."""

    def __init__(self, be: Any, e: RunSet, pos: tuple[int, ...], cl: Classes) -> None:
        self.be, self.e, self.pos, self.cl = be, e, pos, cl

    def has(self, rows: RowSet) -> Any:
        """Mask over the π-normal facts ``rows``: whether each is in π(E′)."""
        xp = self.be.xp
        if not len(rows):
            return xp.zeros(0, dtype=bool)
        got = members_in(self.be, self.e, rows, self.pos, self.cl)
        if got is None or not len(got):
            return xp.zeros(len(rows), dtype=bool)
        img = RowSet.from_columns(self.be, gather(got.cols, self.pos, self.cl.rho),
                                  rows.arity)
        return img.has(rows)

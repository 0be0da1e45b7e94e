"""How often each dictionary id occurs in the domain columns of a rewritten store.

Deleting facts deletes the reflexive row ``c≈c`` of a closure (axiom ≈4) for the
constants that occur in no domain column any more.  Proving that a constant is absent
means reading every domain column, so the counts are kept on the engine with the store
they count (a snapshot of its dict: stores change in place) and carried from one update
to the next by what each update removed and added (DRed≈'s insertion also by the rows
its merges rewrote: ``EqualityEngine.merge_removed``): a stream of deletions pays for
what it removes.  The equality relation itself is not counted (its rows are the closure
rows in question).  Used by DRed in normal form (:mod:`gpu_engine.equality_dred`) and by
DRed≈ (:func:`gpu_engine.equality_maintenance.dred_eq`).
"""

from __future__ import annotations

from typing import Any

from .runs import RunSet


def counted(engine: Any) -> dict[str, tuple[int, ...]]:
    """The relations and columns counted: the domain columns of every relation but the
    equality relation."""
    eq = engine.equality
    return {n: tuple(p) for n, p in eq.domain.items() if p and n != eq.relation}


def kept(engine: Any, store: dict[str, RunSet]) -> Any | None:
    """The counts kept on the engine when they were left for ``store``, else None."""
    hit = engine.__dict__.get("_eq_occurrences")
    if hit is not None and all(hit[0].get(n) is store[n] for n in counted(engine)):
        return hit[1]
    return None


def occurrences(engine: Any, store: dict[str, RunSet]) -> Any:
    """The counts for the live rows of ``store``: those kept on the engine when they were
    left for this store, else one pass over its counted columns."""
    hit = kept(engine, store)
    xp = engine.be.xp
    size = len(engine.rho())
    if hit is not None:
        if len(hit) < size:  # ids given since, in no counted row (add_rows grows for those)
            hit = xp.concatenate([hit, xp.zeros(size - len(hit), dtype=hit.dtype)])
        return hit
    dom = counted(engine)
    counts = xp.zeros(size, dtype=xp.int64)
    for sets, sign in ((lambda rs: rs.runs, 1), (lambda rs: rs.dead, -1)):
        cols = [run.cols[p] for n, pos in dom.items() for run in sets(store[n]) for p in pos]
        cols = [c for c in cols if len(c)]
        if cols:
            counts += sign * xp.bincount(xp.concatenate(cols), minlength=size)[:size]
    return counts


def add_rows(engine: Any, counts: Any, rows: list[dict[str, Any]], sign: int) -> Any:
    """``counts`` with the occurrences of ``rows`` (dicts of row sets or run sets of rows
    per relation) added (``sign`` 1) or removed (-1) (:func:`add_values`)."""
    dom = counted(engine)
    cols = []
    for n, rs in ((n, rs) for part in rows for n, rs in part.items()):
        if n not in dom or not len(rs):
            continue
        runs = rs.runs if isinstance(rs, RunSet) else (rs,)
        cols += [run.cols[p] for run in runs for p in dom[n]]
        if isinstance(rs, RunSet):
            assert not rs.dead
    return add_values(engine, counts, cols, sign)


def add_values(engine: Any, counts: Any, cols: list[Any], sign: int) -> Any:
    """``counts`` with each id of the arrays ``cols`` added (``sign`` 1) or removed
    (-1) once per occurrence; a new array (``counts`` itself when there are none)."""
    xp = engine.be.xp
    cols = [c for c in cols if len(c)]
    if not cols:
        return counts
    size = len(counts)
    vals, k = xp.unique(xp.concatenate(cols), return_counts=True)
    top = int(vals[-1]) + 1
    out = (counts.copy() if top <= size else  # ids added since: the identity beyond
           xp.concatenate([counts, xp.zeros(top - size, dtype=counts.dtype)]))
    out[vals] += sign * k  # the ids the rows hold, not a pass over the dictionary
    return out


def remember(engine: Any, store: dict[str, RunSet], counts: Any) -> None:
    """Keep ``counts`` on the engine as those of ``store`` (installed on the engine)."""
    engine._eq_occurrences = (dict(store), counts)

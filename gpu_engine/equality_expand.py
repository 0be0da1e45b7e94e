"""Expanding rewritten rows into the product of their classes (answers of Mat≈).

A rewritten row ``(c1..ck)`` of a relation with domain positions ``P`` stands for every
row that replaces each ``c_p`` (p ∈ P) by a member of its class.  The class index is a
CSR built from ρ (:func:`class_index`: the members of each representative's class at
its offset, sorted, and its size; merged classes first, then the identity).  The
expansion is columnar, one pass per column:

* per input row the count ``Π_p size[c_p]`` (for chunking and counting only);
* positions from the slowest to the fastest: the partial rows are expanded by the class
  of their value at the position (:func:`kernels.join.expand`: repeat/cumsum, or one
  parallel pass on the CPU), carrying only the source row and the members chosen so
  far, so a k-position row costs O(k²) gathers of index arrays, not of every column;
* the other columns are gathered once through the final source-row index.

Rows are produced in chunks of a bounded number of output rows (:func:`expand_chunks`,
for streaming to Arrow without holding the whole expansion); :func:`expand_sorted`
concatenates them and sorts (expanded rows of distinct rewritten rows are distinct, so
no deduplication is needed).  :func:`expand_pairwise` is the former implementation
(position by position through :func:`kernels.join.expand`, then sort-deduplicate),
kept as the benchmark's "before" and the tests' cross-check.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from gpu_engine.kernels import sets as S
from gpu_engine.kernels.backend import INDEX, Backend
from gpu_engine.kernels.join import expand

from .rowset import RowSet

CHUNK_ROWS = 1 << 23  # output rows per chunk of expand_chunks


def class_index(be: Backend, rho: Any) -> tuple[Any, Any, Any]:
    """(members, offset of each id's class in ``members``, size of each id's class), the
    last two indexed by representative id (zero size for other ids): the members of the
    class of representative r are ``members[offsets[r]:offsets[r] + sizes[r]]``, sorted.

    The members of classes of two or more come first, sorted by representative (ties by
    id: a stable sort); then the identity, where each singleton's class is read at
    ``len(multi) + id`` (:func:`split_classes` leaves the old slots of split classes
    unread).  Only the merged members are sorted and moved: an update that
    changed ρ pays for the classes, not a scatter over the dictionary."""
    xp = be.xp
    n = len(rho)
    sizes = be.bincount(rho, n)
    multi = xp.flatnonzero(sizes[rho] > 1).astype(INDEX)
    k = len(multi)
    offsets = xp.arange(k, k + n, dtype=INDEX)
    if not k:
        return xp.arange(n, dtype=INDEX), offsets, sizes
    r = rho[multi].astype(INDEX, copy=False)
    order = xp.argsort(r) if be.is_gpu else S.argsort_keys(be, r)
    sm, r = multi[order], r[order]
    starts = xp.flatnonzero(xp.concatenate([xp.ones(1, dtype=bool), r[1:] != r[:-1]]))
    offsets[r[starts]] = starts.astype(INDEX)
    return xp.concatenate([sm, xp.arange(n, dtype=INDEX)]), offsets, sizes


def split_classes(be: Backend, index: tuple[Any, Any, Any], reps: Any,
                  in_place: bool = False) -> tuple[Any, Any, Any]:
    """The :func:`class_index` of ρ after the classes of ``reps`` (representatives of
    classes of two or more) became singletons, from the index of ρ: each of their
    members reads its own slot of the identity part, and their old slots in the merged
    part are left unread.  A scatter over the members split into copies of the offsets
    and sizes, or (``in_place``: the caller drops the old index) into them: no sort and
    no pass over ρ (DRed≈'s explosion)."""
    members, offsets, sizes = index
    k = len(members) - len(sizes)
    _, at = expand(be, offsets[reps], sizes[reps])
    ids = members[at]
    if not in_place:
        offsets, sizes = offsets.copy(), sizes.copy()
    offsets[ids] = k + ids
    sizes[ids] = 1
    return members, offsets, sizes


def shrink_classes(be: Backend, index: tuple[Any, Any, Any], reps: Any, gone: Any,
                   in_place: bool = False, anchors: Any | None = None
                   ) -> tuple[Any, Any, Any]:
    """The :func:`class_index` of ρ after the members flagged by ``gone`` (a mask over
    the ids) left the classes of ``reps`` to stand alone: each class's slice of
    ``members`` keeps its remaining members first, in order (a stable sort of the
    slices), and the leavers read their own slots of the identity part, as
    :func:`split_classes` does (DRed≈'s partial split).  The classes keep their
    representatives, or with ``anchors`` (one per class) are read at its anchor, the
    least of its remaining members (a representative that left)."""
    xp = be.xp
    members, offsets, sizes = index
    k = len(members) - len(sizes)
    which, at = expand(be, offsets[reps], sizes[reps])
    ids = members[at]
    out = gone[ids]
    key = ((which.astype(xp.int64) * 2 + out) << 32) | ids.astype(xp.int64)
    order = xp.argsort(key)  # by class, the remaining members first, each part by id
    if not in_place:
        members, offsets, sizes = members.copy(), offsets.copy(), sizes.copy()
    members[at] = ids[order]
    sizes[reps] = sizes[reps] - be.bincount(which[out], len(reps)).astype(
        sizes.dtype)
    if anchors is not None:
        moved = anchors != reps
        offsets[anchors[moved]] = offsets[reps[moved]]
        sizes[anchors[moved]] = sizes[reps[moved]]
    left = ids[out]
    offsets[left] = k + left
    sizes[left] = 1
    return members, offsets, sizes


def row_counts(be: Backend, cols: tuple[Any, ...], pos: tuple[int, ...], sizes: Any) -> Any:
    """Per rewritten row, the number of rows it stands for (Π of its classes' sizes)."""
    prod = sizes[cols[pos[0]]]
    for p in pos[1:]:
        prod = prod * sizes[cols[p]]
    return prod


def _chunk(be: Backend, cols: tuple[Any, ...], pos: tuple[int, ...], members: Any,
           offsets: Any, sizes: Any, counts: Any, total: int,
           pos_members: dict[int, Any] | None = None) -> tuple[Any, ...]:
    """The expansion of all of ``cols`` (``counts`` their row counts, ``total`` the sum),
    position by position from the slowest: each step expands the partial rows by the
    class of their value at that position (:func:`kernels.join.expand`), carrying only
    the source row and the members chosen so far; the other columns are gathered once
    at the end.  ``pos_members``: per position, the array read instead of ``members``."""
    del counts, total
    idx = None  # partial row -> source row (None: the identity)
    chosen: dict[int, Any] = {}
    for p in pos:
        v = cols[p] if idx is None else cols[p][idx]
        pi, at = expand(be, offsets[v], sizes[v])
        idx = pi if idx is None else idx[pi]
        for q in chosen:
            chosen[q] = chosen[q][pi]
        chosen[p] = (members if pos_members is None else pos_members[p])[at]
    return tuple(chosen[i] if i in chosen else c[idx] for i, c in enumerate(cols))


def expand_chunks(be: Backend, cols: tuple[Any, ...], pos: tuple[int, ...], members: Any,
                  offsets: Any, sizes: Any, chunk_rows: int = CHUNK_ROWS
                  ) -> Iterator[tuple[Any, ...]]:
    """The expansion of the rewritten rows ``cols`` (domain positions ``pos``) in chunks of
    about ``chunk_rows`` output rows (a single row larger than that is one chunk), in the
    order of the input rows; unsorted."""
    if not len(cols) or not len(cols[0]):
        return
    if not pos:
        yield tuple(cols)
        return
    counts = row_counts(be, cols, pos, sizes)
    ends = be.to_host(be.xp.cumsum(counts))
    total = int(ends[-1])
    if total <= chunk_rows:
        yield _chunk(be, cols, pos, members, offsets, sizes, None, total)
        return
    import numpy as np

    cuts = np.searchsorted(ends, np.arange(chunk_rows, total, chunk_rows), side="right")
    bounds = [0, *sorted(set(int(c) for c in cuts) - {0, len(ends)}), len(ends)]
    for a, b in zip(bounds, bounds[1:]):
        if b <= a:
            continue
        part = tuple(c[a:b] for c in cols)
        sub = int(ends[b - 1] - (ends[a - 1] if a else 0))
        yield _chunk(be, part, pos, members, offsets, sizes, counts[a:b], sub)


def expand_sorted(be: Backend, cols: tuple[Any, ...], pos: tuple[int, ...], members: Any,
                  offsets: Any, sizes: Any) -> tuple[Any, ...]:
    """The expansion as sorted device columns (rows of distinct rewritten rows are
    distinct, so this is a sort, not a deduplication).

    When the values pack into one 62-bit key as they are, the rows are expanded and
    value-sorted; otherwise the sort runs on dense ranks: each non-domain column is replaced by its rank among
    its distinct input values, and each domain position reads a copy of ``members``
    holding ranks among the members of the classes its input column mentions (a set
    found from the input, not the output), so the packed key of an expanded row usually
    fits 63 bits and the sort is one value sort; ranks are mapped back afterwards."""
    xp = be.xp
    if not len(cols) or not len(cols[0]):
        return tuple(xp.zeros(0, dtype=INDEX) for _ in cols)
    if not pos:
        return tuple(cols)
    ids = max(1, (len(members) - 1).bit_length())
    plain = 0
    for i, c in enumerate(cols):
        if i in pos:
            plain += ids
        else:
            lo, hi = (int(x) for x in be.to_host(xp.stack([c.min(), c.max()])))
            plain += max(1, (hi - lo).bit_length())
    if plain <= 62:  # the values pack into one key as they are: expand, then value sort
        out = next(expand_chunks(be, cols, pos, members, offsets, sizes, chunk_rows=1 << 62))
        if _is_sorted(be, out):  # e.g. one row, or classes in the rows' order: no sort
            return tuple(out)
        return RowSet.from_columns(be, tuple(out), len(out)).cols
    values: list[Any] = []
    rank_cols: list[Any] = []
    pos_members: dict[int, Any] = {}
    for i, c in enumerate(cols):
        if i in pos:
            reps = _distinct(xp, c)
            _, at = expand(be, offsets[reps], sizes[reps])
            vals = xp.sort(members[at])  # distinct: classes are disjoint
            table = xp.zeros(len(members), dtype=INDEX)
            table[vals] = xp.arange(len(vals), dtype=INDEX)
            pos_members[i] = table[members]
            values.append(vals)
            rank_cols.append(c)
        else:
            vals = _distinct(xp, c)
            values.append(vals)
            rank_cols.append(xp.searchsorted(vals, c).astype(INDEX, copy=False))
    widths = [max(1, (len(v) - 1).bit_length()) for v in values]
    mixed = tuple(c if i in pos else rank_cols[i] for i, c in enumerate(cols))
    ranked = _chunk(be, mixed, pos, members, offsets, sizes, None, 0, pos_members)
    if sum(widths) <= 62:  # one packed key: a value sort
        rs = RowSet.from_columns(be, ranked, len(ranked))
        return tuple(v[r] for v, r in zip(values, rs.cols))
    order = _lex_order(be, ranked, widths)
    return tuple(v[r[order]] for v, r in zip(values, ranked))


def _is_sorted(be: Backend, cols: tuple[Any, ...]) -> bool:
    """Whether the rows are in strictly increasing lexicographic order (one pass per
    column: row i < row i+1 iff the first column where they differ increases)."""
    xp = be.xp
    if len(cols[0]) < 2:
        return True
    undecided = xp.ones(len(cols[0]) - 1, dtype=bool)
    for c in cols:
        a, b = c[:-1], c[1:]
        if bool((undecided & (b < a)).any()):
            return False
        undecided &= a == b
    return not bool(undecided.any())


def _distinct(xp: Any, c: Any) -> Any:
    """The sorted distinct values of ``c`` (a value sort)."""
    v = xp.sort(c)
    if len(v) < 2:
        return v
    keep = xp.concatenate([xp.ones(1, dtype=bool), v[1:] != v[:-1]])
    return v[keep]


def _lex_order(be: Backend, ranks: tuple[Any, ...], widths: list[int]) -> Any:
    """The permutation sorting rows of dense rank columns lexicographically: columns are
    packed into keys of at most ``63 - log2(n)`` bits and sorted least significant key
    first, each pass a value sort of ``key << b | position`` (stable by construction)."""
    xp = be.xp
    n = len(ranks[0])
    ib = max(1, (n - 1).bit_length())
    room = 63 - ib
    if be.is_gpu or any(w > room for w in widths):
        return xp.lexsort(xp.stack(list(reversed(ranks))))
    keys: list[list[int]] = [[]]
    used = 0
    for i, w in enumerate(widths):
        if used + w > room:
            keys.append([])
            used = 0
        keys[-1].append(i)
        used += w
    order = xp.arange(n, dtype=INDEX)
    mask = (1 << ib) - 1
    for group in reversed(keys):
        key = xp.zeros(n, dtype=INDEX)
        for i in group:
            key <<= widths[i]
            key |= ranks[i][order]
        key <<= ib
        key |= xp.arange(n, dtype=INDEX)
        key = S.sort_values(be, key, overwrite=True)
        key &= mask
        order = order[key]
    return order


def expand_pairwise(be: Backend, cols: tuple[Any, ...], pos: tuple[int, ...], members: Any,
                    offsets: Any, sizes: Any) -> tuple[Any, ...]:
    """The former expansion: position by position (join expansion, then a gather of every
    column), then sort-deduplicate.  Kept as a reference."""
    out = list(cols)
    for p in pos:
        v = out[p]
        idx, at = expand(be, offsets[v], sizes[v])
        out = [c[idx] for c in out]
        out[p] = members[at]
    return RowSet.from_columns(be, tuple(out), len(out)).cols

"""Rows holding given values, found through column indexes (RunSet.rows_with), and the
class index of ρ, against plain-Python set semantics on every available backend."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_engine.kernels.backend import get_backend, gpu_available
from hypothesis import given, settings
from hypothesis import strategies as st

from gpu_engine.equality_expand import class_index, split_classes
from gpu_engine.rowset import RowSet
from gpu_engine.runs import RunSet

BACKENDS = ["cpu"] + (["gpu"] if gpu_available() else [])
PARAMS = [pytest.param(b, marks=pytest.mark.gpu) if b == "gpu" else b for b in BACKENDS]

row = st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 30))


def _rows(be, rows):
    xp = be.xp
    cols = tuple(xp.asarray(np.array([r[i] for r in rows], dtype=np.int64)) for i in range(3))
    return RowSet.from_columns(be, cols, 3)


def _set(be, rs):
    cols = [be.to_host(c).tolist() for c in rs.cols]
    return set(zip(*cols)) if cols else set()


@pytest.mark.parametrize("device", PARAMS)
@settings(max_examples=60, deadline=None)
@given(runs=st.lists(st.lists(row, max_size=25), min_size=1, max_size=4),
       dead=st.lists(row, max_size=10), values=st.sets(st.integers(0, 31), max_size=6),
       pos=st.sampled_from([(0,), (1,), (2,), (0, 2), (1, 2), (0, 1, 2)]),
       flag=st.booleans(), indexed=st.booleans())
def test_rows_with_is_a_filter(device, runs, dead, values, pos, flag, indexed):
    """Live rows (tombstones hidden) with a value in a column of ``pos``: through cached
    indexes, the first column's index, or a flag over the ids; one sorted run."""
    be = get_backend(device)
    rs = RunSet.empty(be, 3)
    seen: set = set()
    for r in runs:
        fresh = [x for x in dict.fromkeys(r) if x not in seen]
        seen.update(fresh)
        if fresh:
            rs = rs.append(_rows(be, fresh))
    gone = [x for x in dict.fromkeys(dead) if x in seen]
    if gone:
        rs = rs.without(_rows(be, gone))
    if indexed:  # later columns' indexes cached, as joins leave them
        for run in rs.runs:
            for p in (1, 2):
                run.index((p,))
    vals = be.xp.asarray(np.array(sorted(values), dtype=np.int64))
    got = rs.rows_with(pos, vals, 32 if flag else None)
    live = seen - set(gone)
    assert _set(be, got) == {x for x in live if any(x[p] in values for p in pos)}
    keys = be.to_host(got.keys).tolist()
    assert keys == sorted(set(keys))


@pytest.mark.parametrize("device", PARAMS)
@settings(max_examples=60, deadline=None)
@given(classes=st.lists(st.sets(st.integers(0, 60), min_size=1, max_size=8), max_size=8))
def test_class_index_reads_every_class(device, classes):
    """Per representative, its members (sorted) at its offset; sizes per id; the merged
    members first, sorted by representative (ties by id), then the identity."""
    be = get_backend(device)
    n = 61
    rho = list(range(n))
    taken: set = set()
    for c in classes:
        c = sorted(c - taken)
        taken.update(c)
        for m in c:
            rho[m] = c[0]
    members, offsets, sizes = class_index(be, be.xp.asarray(np.array(rho, dtype=np.int64)))
    members, offsets = be.to_host(members).tolist(), be.to_host(offsets).tolist()
    counts = [rho.count(i) for i in range(n)]
    assert be.to_host(sizes).tolist() == counts
    for r in range(n):
        got = members[offsets[r]:offsets[r] + counts[r]]
        assert got == [i for i in range(n) if rho[i] == r]
    merged = [i for i in range(n) if counts[rho[i]] > 1]
    assert members == sorted(merged, key=lambda i: (rho[i], i)) + list(range(n))


@pytest.mark.parametrize("device", PARAMS)
@settings(max_examples=60, deadline=None)
@given(steps=st.lists(st.tuples(st.booleans(), st.lists(row, max_size=20)), min_size=1,
                      max_size=8),
       probe=st.lists(row, min_size=1, max_size=30))
def test_contains_reads_runs_and_tombstones(device, steps, probe):
    """Membership over several runs and tombstone sets (deletions merged as runs are,
    re-added rows lifted), with run ranges skipped: set semantics."""
    be = get_backend(device)
    rs = RunSet.empty(be, 3)
    live: set = set()
    for add, rows in steps:
        rows = list(dict.fromkeys(rows))
        if add:
            fresh = [x for x in rows if x not in live]
            if fresh:
                rs = rs.append(_rows(be, fresh))
                live.update(fresh)
        else:
            gone = [x for x in rows if x in live]
            if gone:
                rs = rs.without(_rows(be, gone))
                live.difference_update(gone)
    assert len(rs) == len(live)
    cols = tuple(be.xp.asarray(np.array(c, dtype=np.int64)) for c in zip(*probe))
    got = be.to_host(rs.contains(cols, len(probe))).tolist()
    assert got == [x in live for x in probe]


@pytest.mark.parametrize("device", PARAMS)
@settings(max_examples=60, deadline=None)
@given(classes=st.lists(st.sets(st.integers(0, 60), min_size=2, max_size=8), max_size=8),
       pick=st.sets(st.integers(0, 7), max_size=8), in_place=st.booleans())
def test_split_classes_is_the_index_of_the_split(device, classes, pick, in_place):
    """The class index after some classes became singletons, built from the index
    before, reads every class of the new ρ (sizes per id, sorted members at offsets)."""
    be = get_backend(device)
    n = 61
    rho = np.arange(n, dtype=np.int64)
    taken: set = set()
    reps = []
    for c in classes:
        c = sorted(c - taken)
        if len(c) < 2:
            continue
        taken.update(c)
        rho[c] = c[0]
        reps.append(c[0])
    split = sorted({reps[i] for i in pick if i < len(reps)})
    after = rho.copy()
    for r in split:
        after[rho == r] = np.flatnonzero(rho == r)
    xp = be.xp
    index = class_index(be, xp.asarray(rho))
    for part in (split[::2], split[1::2]):  # twice: the first leaves unread slots
        index = split_classes(be, index, xp.asarray(np.array(part, dtype=np.int64)),
                              in_place=in_place)
    members, offsets, sizes = (be.to_host(a).tolist() for a in index)
    assert sizes == [int((after == i).sum()) for i in range(n)]
    for r in range(n):
        got = members[offsets[r]:offsets[r] + sizes[r]]
        assert got == np.flatnonzero(after == r).tolist()


@pytest.mark.parametrize("device", PARAMS)
def test_rows_with_skips_runs_by_bitset(device, monkeypatch):
    """Later columns read by a flag skip the runs whose bitset of the column's values
    holds none of the values looked for (cached on the run): the same rows."""
    import gpu_engine.rowset as rowset

    monkeypatch.setattr(rowset, "BITS_ROWS", 1)
    be = get_backend(device)
    rng = np.random.default_rng(5)
    for trial in range(40):
        rs = RunSet.empty(be, 3)
        seen: set = set()
        for _ in range(int(rng.integers(1, 4))):
            rows = [tuple(int(v) for v in rng.integers(0, 40, 3))
                    for _ in range(int(rng.integers(1, 30)))]
            fresh = [x for x in dict.fromkeys(rows) if x not in seen]
            seen.update(fresh)
            if fresh:
                rs = rs.append(_rows(be, fresh))
        gone = [x for x in seen if rng.random() < 0.2]
        if gone:
            rs = rs.without(_rows(be, gone))
        values = sorted({int(v) for v in rng.integers(0, 45, int(rng.integers(1, 4)))})
        vals = be.xp.asarray(np.array(values, dtype=np.int64))
        pos = [(1,), (2,), (1, 2), (0, 2)][trial % 4]
        for _ in range(2):  # bitsets built, then read
            got = rs.rows_with(pos, vals, 45)
            live = seen - set(gone)
            assert _set(be, got) == {x for x in live if any(x[p] in values for p in pos)}


@pytest.mark.parametrize("device", PARAMS)
def test_no_rows_to_find_reads_nothing_of_the_set(device, monkeypatch):
    """Positions, membership and counter look-ups of no rows are empty at once: before,
    an empty query whose (0, 0) ranges lay outside the set's key layout packed the whole
    set into a joint layout (a pass over a relation for each empty frontier of the TC
    module's overdeletion)."""
    from gpu_engine.kernels import keys as K

    from gpu_engine import counters

    be = get_backend(device)
    xp = be.xp
    big = RowSet.from_columns(be, (xp.arange(100, 200, dtype=np.int64),
                                   xp.arange(300, 400, dtype=np.int64)), 2)
    none = RowSet.empty(be, 2)

    def boom(*args, **kwargs):
        raise AssertionError("packed the whole set for no rows")

    monkeypatch.setattr(K, "joint_keys", boom)
    monkeypatch.setattr(K, "pack", boom)
    assert len(big.positions(none.cols)) == 0
    assert len(big.positions_of(none)) == 0
    assert len(big.contains(none.cols)) == 0
    assert counters.locate(RunSet.of(big), none) == []

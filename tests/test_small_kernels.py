"""The compiled kernels for small inputs (``kernels/cpu_small.py``) give the array
operations' results: kernel by kernel on random and edge-case inputs, and on generated
programs whose materialisations and updates (every algorithm, with equality too) are
judged by the reference evaluator with the kernels on."""

from __future__ import annotations

import os

import numpy as np
import pytest
from generators import describe, programs
from gpu_engine.kernels import cpu_small as small
from gpu_engine.kernels import join as J
from gpu_engine.kernels import keys as K
from gpu_engine.kernels import sets as S
from gpu_engine.kernels.backend import get_backend
from hypothesis import HealthCheck, given, note, reject, settings
from hypothesis import strategies as st
from reference import LimitExceeded, evaluate
from test_fuzz import MAX_TUPLES
from test_scan_index import _reasoner, check_updates

from gpu_engine.rowset import RowSet
from gpu_engine.runs import RunSet

pytestmark = pytest.mark.skipif(not small.AVAILABLE, reason="Numba is missing")


@pytest.fixture
def kernels_on(monkeypatch):
    monkeypatch.setattr(small, "_on", True)


def both(fn):
    """``fn()`` with the kernels off and on."""
    old = small._on
    try:
        small._on = False
        off = fn()
        small._on = True
        on = fn()
    finally:
        small._on = old
    return off, on


def _same(a, b) -> None:
    if isinstance(a, tuple | list):
        assert len(a) == len(b)
        for x, y in zip(a, b):
            _same(x, y)
    elif isinstance(a, np.ndarray):
        np.testing.assert_array_equal(a, b)
    else:
        assert a == b


@pytest.mark.parametrize("seed", range(12))
def test_kernels_equal_the_array_operations(seed: int) -> None:
    be = get_backend("cpu")
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 300))
    arity = int(rng.integers(1, 4))
    lo = int(rng.integers(-50, 50))
    span = int(rng.choice([3, 100, 1 << 20]))
    cols = tuple(rng.integers(lo, lo + span, n).astype(np.int64) for _ in range(arity))
    mins, maxs = K.column_ranges(be, cols)
    _same(*both(lambda: K.column_ranges(be, cols)))
    spec = K.make_spec(mins, maxs)
    if spec is None:
        return
    _same(*both(lambda: K.pack(be, cols, spec)))
    # probes partly outside the layout (below, above, far below: no wrap-around)
    probe = tuple(np.concatenate([c[: n // 2], rng.integers(lo - 5, lo + span + 5, 20),
                                  [np.iinfo(np.int64).min + 3, lo - 1]]).astype(np.int64)
                  for c in cols)
    _same(*both(lambda: K.pack_probe(be, probe, spec)))
    packed = K.pack(be, cols, spec)
    _same(*both(lambda: K.unpack(be, packed, spec)))
    # re-packing into a layout shifted and narrowed, so that some rows fall outside it
    lows = [m + int(rng.integers(-3, 4)) for m in mins]
    other = K.make_spec(lows, [max(lw, x - int(rng.integers(0, 2)) * (x - m) // 2)
                               for lw, m, x in zip(lows, mins, maxs)])
    if other is not None:
        _same(*both(lambda: K.repack_probe(be, packed, spec, other)))
        want = K.pack_probe(be, cols, other)
        _same(K.repack_probe(be, packed, spec, other), want)
    keys = np.unique(K.pack(be, cols, spec))
    needles = K.pack_probe(be, probe, spec)
    _same(*both(lambda: S.isin_sorted(be, needles, keys)))
    raw = K.pack(be, cols, spec)
    _same(*both(lambda: S.unique_keys(be, raw.copy())))
    _same(*both(lambda: S.unique_keys(be, raw.copy(), return_counts=True)))
    other = np.unique(rng.integers(lo, lo + span, int(rng.integers(1, 50))))
    a = np.unique(raw)
    b = other[~np.isin(other, a)] if seed % 2 else other  # disjoint, or with equal keys
    if len(b):
        _same(*both(lambda: S.merge_disjoint(be, a, (a, a * 3), b, (b, b * 3))))
        _same(*both(lambda: S.merge_disjoint(be, a, (a,), b, (b,))))
    rs = RowSet.from_columns(be, cols, arity)
    _same(*both(lambda: rs.contains(probe)))
    # the fused probe and expansion of a join: the pairs join_chunks gives, or (over the
    # budget) the first positions and counts of kernels.join.probe
    dup = np.sort(K.pack(be, cols, spec))  # keys with repeats
    lo_, cnt = J.probe(be, needles, dup)
    want = list(J.join_chunks(be, lo_, cnt, budget=1 << 30))
    pi, pos, done = small.probe_expand(needles, dup, 1 << 30)
    assert done
    _same((pi, pos), want[0] if want else (pi[:0], pos[:0]))
    if int(cnt.sum()) > 1:
        a_, b_, done = small.probe_expand(needles, dup, int(cnt.sum()) - 1)
        assert not done
        _same((a_, b_), (lo_, cnt))
    half = rs.select(np.arange(len(rs)) % 2 == 0)
    runs = RunSet.of(rs).without(half)
    _same(*both(lambda: runs.contains(probe, len(probe[0]))))


@pytest.mark.parametrize("seed", range(4))
def test_fenced_searches_equal_the_array_operations(seed: int) -> None:
    """Large runs are searched through a fence (every FENCE_STEP-th key): positions,
    membership and packed membership as NumPy gives them, for queries at block edges,
    between keys, below the first and past the last key, on a run whose size is not a
    multiple of the step."""
    be = get_backend("cpu")
    rng = np.random.default_rng(seed)
    n = small.FENCE_MIN + int(rng.integers(1, small.FENCE_STEP))
    keys = np.unique(rng.integers(0, 1 << 40, 2 * n))[:n].astype(np.int64) * 2
    fence = small.fence_of(keys)
    assert len(fence) == n // small.FENCE_STEP
    edges = np.arange(small.FENCE_STEP - 2, n, small.FENCE_STEP)
    at = np.sort(np.concatenate([edges[:200], edges[:200] + 1, edges[:200] + 2,
                                 rng.integers(0, n, 300), [0, n - 1]]))
    present = keys[at]
    assert (small.search(present, keys, fence) == np.searchsorted(keys, present)).all()
    queries = np.sort(np.concatenate([present, present + 1, present - 1,
                                      [keys[0] - 5, keys[-1] + 5]]))
    assert (small.isin(queries, keys, fence) == np.isin(queries, keys)).all()
    assert (small.search(queries, keys, fence) == np.searchsorted(keys, queries)).all()
    # a join probe into sorted keys with repeats (runs of up to 300 equal keys, across
    # block edges): the first position and the count of each probe key, as NumPy finds
    dup = np.sort(np.repeat(keys[: n // 8], rng.integers(1, 300, n // 8)))
    probe = np.concatenate([dup[rng.integers(0, len(dup), 400)], [dup[0] - 1, dup[-1] + 1],
                            dup[rng.integers(0, len(dup), 50)] + 1])
    lo = np.searchsorted(dup, probe)
    cnt = np.searchsorted(dup, probe, side="right") - lo
    a, b, done = small.probe_expand(probe, dup, 0, small.fence_of(dup))
    assert not done and (a == lo).all() and (b == cnt).all()
    pi, pos, done = small.probe_expand(probe, dup, int(cnt.sum()), small.fence_of(dup))
    assert done and (pi == np.repeat(np.arange(len(probe)), cnt)).all()
    assert (dup[pos] == probe[pi]).all()
    # a packed binary relation of that size: membership and positions of its rows
    cols = (keys >> 21, keys & ((1 << 21) - 1))
    rs = RowSet.from_columns(be, cols, 2)
    assert rs.n >= small.FENCE_MIN and rs.spec is not None
    probe = (np.concatenate([cols[0][:500], [3, 5]]),
             np.concatenate([cols[1][:500] + seed % 2, [7, 9]]))
    _same(*both(lambda: rs.contains(probe)))
    _same(*both(lambda: rs.positions((cols[0][:300], cols[1][:300]))))


@pytest.mark.parametrize("seed", range(4))
def test_rank_bitmaps_equal_the_array_operations(seed: int, kernels_on, monkeypatch) -> None:
    """A large run of one column is searched through its rank bitmap: positions and
    membership as NumPy gives them, at word edges, between ids, below the first and past
    the last; none for negative or sparse ids; a semi-join of a rule through it, with
    tombstones, equals the one through the fence."""
    import gpu_engine.rowset as rowset_module

    monkeypatch.setattr(rowset_module, "RANK_RENT", 1 << 30)  # built at the first look-up
    be = get_backend("cpu")
    rng = np.random.default_rng(seed)
    n = small.FENCE_MIN + int(rng.integers(1, 100))
    top = n * int(rng.integers(1, small.RANK_DENSITY))
    keys = np.unique(np.concatenate([rng.integers(0, top, 2 * n), [0, 63, 64, 127]]))
    keys = keys[:n].astype(np.int64)
    bitmap = small.rank_bitmap(keys)
    assert bitmap is not None
    queries = np.concatenate([keys[rng.integers(0, len(keys), 300)], [-3, -1, 0, 1, 62, 63,
                              64, 65, 127, 128, keys[-1], keys[-1] + 1, keys[-1] + 64,
                              1 << 40]]).astype(np.int64)
    queries = np.concatenate([queries, rng.integers(0, keys[-1] + 2, 300)])
    _same(small.rank_search(queries, bitmap, len(keys)), np.searchsorted(keys, queries))
    _same(small.rank_isin(queries, bitmap), np.isin(queries, keys))
    _same(small.rank_members(queries, bitmap), np.flatnonzero(np.isin(queries, keys)))
    assert small.rank_bitmap(np.array([-1, 5], dtype=np.int64)) is None
    assert small.rank_bitmap(np.array([3, 32], dtype=np.int64)) is None  # too sparse
    assert small.rank_bitmap(np.array([3, 31], dtype=np.int64)) is not None
    rs = RowSet.from_columns(be, (keys,), 1)
    present = keys[np.sort(rng.choice(len(keys), 200, replace=False))]
    _same(*both(lambda: rs.positions((present,))))
    _same(*both(lambda: rs.contains((queries,))))
    assert rs.rank_bitmap(len(rs)) is not None
    # H(X, Y) :- E(X, Y), C(Y). with C large: the few E rows probe C through its bitmap
    from gpu_engine import Reasoner

    r = Reasoner(".decl E(x: number, y: number)\n.decl C(x: number)\n"
                 ".decl H(x: number, y: number)\n.output H\nH(x, y) :- E(x, y), C(y).",
                 device="cpu")
    edges = np.stack([rng.integers(0, 50, 400), queries[:400] % (keys[-1] + 5)], axis=1)
    r.add_facts("E", np.abs(edges))
    r.add_facts("C", keys[:, None])
    r.materialise()
    gone = keys[rng.choice(len(keys), 50, replace=False)]
    r.update(delete={"C": gone[:, None]}, algorithm="dredc")
    r.update(insert={"E": np.array([[7, int(gone[0])], [8, int(keys[5])]])},
             algorithm="dredc")
    e = np.unique(np.vstack([np.abs(edges), [[7, int(gone[0])], [8, int(keys[5])]]]), axis=0)
    live = np.setdiff1d(keys, gone)
    want = {tuple(x) for x in e[np.isin(e[:, 1], live)].tolist()}
    h = r.relation("H")
    assert set(zip(h.column(0).to_pylist(), h.column(1).to_pylist())) == want
    c = r.engine.store["C"]
    assert c.dead and c.runs[0]._indexes.get("rank")  # the probes went through the bitmap


def test_value_bits_equal_packbits(kernels_on) -> None:
    be = get_backend("cpu")
    rng = np.random.default_rng(7)
    for top in (1, 8, 9, 1000, 1 << 16):
        col = rng.integers(0, top, 5000).astype(np.int64)
        present = np.zeros(int(col.max()) + 1, dtype=bool)
        present[col] = True
        bits, ok = small.value_bits(col, 16 * len(col))
        assert ok
        _same(bits, np.packbits(present))
    assert not small.value_bits(np.array([3, -1], dtype=np.int64), 100)[1]
    assert not small.value_bits(np.array([3, 100], dtype=np.int64), 100)[1]
    assert small.value_bits(np.array([3, 99], dtype=np.int64), 100)[1]
    # a run's bitset is the same with the kernels on and off
    cols = (rng.integers(0, 50_000, 8192).astype(np.int64),
            rng.integers(0, 9, 8192).astype(np.int64))
    runs = [RowSet.from_columns(be, cols, 2) for _ in range(2)]
    small._on = False
    want = [runs[0].value_bits(p) for p in (0, 1)]
    small._on = True
    _same([runs[1].value_bits(p) for p in (0, 1)], want)


def test_flagged_equals_the_array_passes(kernels_on) -> None:
    rng = np.random.default_rng(11)
    col = rng.integers(-5, 400, 20_000).astype(np.int64)
    for lo, m in ((0, 400), (0, 50), (100, 7), (-5, 3), (395, 20), (1000, 4)):
        flag = rng.random(m) < 0.3
        d = col - lo
        inside = (d >= 0) & (d < m)
        want = np.flatnonzero(inside & flag[np.clip(d, 0, m - 1)])
        _same(small.flagged(col, flag, lo), want)
    assert len(small.flagged(col[:0], np.ones(3, dtype=bool), 0)) == 0
    assert len(small.flagged(col, np.zeros(0, dtype=bool), 0)) == 0  # an empty flag
    sparse = np.zeros(405, dtype=bool)  # a few hits, in blocks far apart
    sparse[[col[7] + 5, col[19_999] + 5]] = True
    _same(small.flagged(col, sparse, -5), np.flatnonzero(sparse[col + 5]))
    # a run's rows with flagged values in a later column, and a scan through index_for,
    # are the same with the kernels on and off
    be = get_backend("cpu")
    cols = (rng.integers(0, 1 << 17, 1 << 17).astype(np.int64),
            rng.integers(0, 1 << 16, 1 << 17).astype(np.int64))
    vals = np.unique(rng.integers(0, 1 << 16, 9)).astype(np.int64)
    ids = np.zeros(1 << 17, dtype=bool)
    ids[vals] = True
    probe = [np.repeat(vals, 2)]
    got = []
    for on in (False, True):
        small._on = on
        run = RowSet.from_columns(be, cols, 2)
        idx = run.index_for((1,), (), (), probe, len(probe[0]))
        got.append((run.positions_with(1, vals, ids), idx.rows, idx.sorted_keys))
    for a, b in zip(*got):
        _same(a, b)


def test_wide_layouts_and_empty_inputs(kernels_on) -> None:
    be = get_backend("cpu")
    big = np.array([0, 1, 1 << 62, (1 << 63) - 1], dtype=np.int64)
    spec = K.make_spec([0], [(1 << 63) - 1])
    assert spec is not None and spec.widths == (63,)
    small._on = False
    want = K.pack_probe(be, (big,), spec)
    small._on = True
    _same(K.pack_probe(be, (big,), spec), want)
    _same(K.unpack(be, big, spec), (big,))  # a 63-bit field: its mask
    assert spec is not None
    narrow = K.make_spec([1], [1 << 40])
    assert narrow is not None
    small._on = False
    want = K.repack_probe(be, big, spec, narrow)
    small._on = True
    _same(K.repack_probe(be, big, spec, narrow), want)
    _same(want, np.array([-1, 0, -1, -1]))
    empty = np.zeros(0, dtype=np.int64)
    _same(K.unpack(be, empty, spec), (empty,))
    assert len(S.isin_sorted(be, empty, big)) == 0
    assert len(S.unique_keys(be, empty)) == 0
    assert K.column_ranges(be, (empty,)) == ([0], [0])


def test_kernels_come_on_for_large_or_long_work(monkeypatch) -> None:
    monkeypatch.setattr(small, "_on", False)
    monkeypatch.setattr(small, "_updates", 0)
    small.consider(10)
    assert not small._on
    small.consider(small.ENABLE_FACTS)
    assert small._on == (os.environ.get("GPU_ENGINE_SMALL_KERNELS", "1") != "0")
    monkeypatch.setattr(small, "_on", False)
    monkeypatch.setattr(small, "_updates", 0)
    for _ in range(small.ENABLE_UPDATES - 1):
        small.consider(10)
    assert not small._on
    small.consider(10)
    assert small._on == (os.environ.get("GPU_ENGINE_SMALL_KERNELS", "1") != "0")
    assert not small.use(get_backend("cpu"), small.MAX_ROWS + 1)


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=programs(), data=st.data())
def test_programs_with_small_kernels(program, data, kernels_on, monkeypatch) -> None:
    """Materialisation and updates by every algorithm, the kernels on, equal the
    reference."""
    try:
        evaluate(program, max_tuples=MAX_TUPLES)
    except LimitExceeded:
        reject()
    note(describe(program))
    monkeypatch.setitem(os.environ, "GPU_ENGINE_HOST_UPDATES", "0")
    if data.draw(st.booleans(), label="fences and rank bitmaps on small runs"):
        import gpu_engine.rowset as rowset_module

        monkeypatch.setattr(small, "FENCE_MIN", 2)
        monkeypatch.setattr(rowset_module, "RANK_RENT", 1 << 30)
    check_updates(_reasoner(program), program, data, ["dredc", "dred", "bfc", "bf", "remat"])


@pytest.mark.parametrize("seed", range(6))
def test_equality_updates_with_small_kernels(seed: int, kernels_on) -> None:
    """Random insertion/deletion sequences with equality (DRed≈, B/F≈, auto, Remat≈),
    the kernels on: every step equals a fresh Remat≈ and, expanded, the reference."""
    from eq_update_fuzz import run_sequence

    rec = run_sequence(140000 + seed, steps=5)
    assert rec["disagreements"] == [], rec

"""Kernels against plain-Python set semantics, on every available backend."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from gpu_engine.kernels import group, join, keys, sets
from gpu_engine.kernels.backend import get_backend, gpu_available
from hypothesis import given, settings
from hypothesis import strategies as st

BACKENDS = ["cpu"] + (["gpu"] if gpu_available() else [])
PARAMS = [pytest.param(b, marks=pytest.mark.gpu) if b == "gpu" else b for b in BACKENDS]

rows_strategy = st.lists(st.tuples(st.integers(-5, 5), st.integers(-5, 5)), max_size=40)


def _cols(be, rows, arity=2):
    arr = np.array(rows, dtype=np.int64).reshape(-1, arity)
    return [be.asarray(arr[:, i]) for i in range(arity)]


@pytest.mark.parametrize("device", PARAMS)
@settings(max_examples=60, deadline=None)
@given(left=rows_strategy, right=rows_strategy, budget=st.integers(1, 50))
def test_join_matches_nested_loops(device, left, right, budget):
    be = get_backend(device)
    lk, rk = keys.joint_keys(be, _cols(be, left)[:1], _cols(be, right)[:1])
    order = sets.argsort_keys(be, rk)
    lo, cnt = join.probe(be, lk, rk[order])
    lo2, cnt2 = join.probe(be, lk, rk[order], join.run_ends(be, rk[order]))
    assert be.to_host(cnt2).tolist() == be.to_host(cnt).tolist()
    nz = be.to_host(cnt) > 0
    off = join.dense_offsets(be, rk[order] + 10, 1000)  # shift: keys must be non-negative
    if off is not None:
        lo3, cnt3 = join.probe_dense(be, lk + 10, off)
        assert be.to_host(cnt3).tolist() == be.to_host(cnt).tolist()
        assert be.to_host(lo3)[nz].tolist() == be.to_host(lo)[nz].tolist()
    assert be.to_host(lo2)[nz].tolist() == be.to_host(lo)[nz].tolist()
    got = []
    for li, bpos in join.join_chunks(be, lo, cnt, budget=budget):
        ri = be.to_host(order[bpos])
        got += list(zip(be.to_host(li).tolist(), ri.tolist()))
    want = [(i, j) for i, a in enumerate(left) for j, b in enumerate(right) if a[0] == b[0]]
    assert sorted(got) == sorted(want)
    assert join.join_size(be, cnt) == len(want)


@pytest.mark.parametrize("device", PARAMS)
@settings(max_examples=60, deadline=None)
@given(a=rows_strategy, b=rows_strategy)
def test_joint_keys_preserve_row_order_and_equality(device, a, b):
    be = get_backend(device)
    if not a or not b:
        return
    ka, kb = keys.joint_keys(be, _cols(be, a), _cols(be, b))
    ka, kb = be.to_host(ka).tolist(), be.to_host(kb).tolist()
    pairs = list(zip(a + b, ka + kb))
    for (r1, k1), (r2, k2) in itertools.combinations(pairs, 2):
        assert (r1 < r2) == (k1 < k2) and (r1 == r2) == (k1 == k2)


@pytest.mark.parametrize("device", PARAMS)
def test_wide_values_take_the_ranked_path(device):
    be = get_backend(device)
    big = 1 << 40
    a = [(big, -big, 3), (-big, big, 1), (big, -big, 3), (0, 0, 0)]
    cols = [be.asarray(np.array([r[i] for r in a])) for i in range(3)]
    assert keys.make_spec(*keys.column_ranges(be, cols)) is None
    k = be.to_host(keys.row_keys(be, cols)).tolist()
    assert k[0] == k[2] and len(set(k)) == 3
    assert sorted(range(4), key=lambda i: k[i]) == sorted(range(4), key=lambda i: a[i])


@pytest.mark.parametrize("device", PARAMS)
@settings(max_examples=60, deadline=None)
@given(vals=st.lists(st.integers(-3, 3), max_size=30),
       weights=st.lists(st.integers(1, 4), min_size=30, max_size=30))
def test_group_count(device, vals, weights):
    be = get_backend(device)
    k = be.asarray(np.array(vals, dtype=np.int64))
    w = be.asarray(np.array(weights[: len(vals)], dtype=np.int64))
    uk, first, cnt = group.group_count(be, k)
    _, _, wsum = group.group_count(be, k, w)
    uk, cnt, wsum = (be.to_host(x).tolist() for x in (uk, cnt, wsum))
    assert uk == sorted(set(vals))
    assert cnt == [vals.count(v) for v in uk]
    assert wsum == [sum(wt for v2, wt in zip(vals, weights) if v2 == v) for v in uk]


@pytest.mark.parametrize("device", PARAMS)
@settings(max_examples=60, deadline=None)
@given(a=st.sets(st.integers(-50, 50), max_size=30), b=st.sets(st.integers(-50, 50), max_size=30))
def test_merge_disjoint_and_membership(device, a, b):
    be = get_backend(device)
    b = b - a
    ak = be.asarray(np.array(sorted(a), dtype=np.int64))
    bk = be.asarray(np.array(sorted(b), dtype=np.int64))
    mk, (mc,) = sets.merge_disjoint(be, ak, [ak * 2], bk, [bk * 2])
    assert be.to_host(mk).tolist() == sorted(a | b)
    assert be.to_host(mc).tolist() == [2 * v for v in sorted(a | b)]
    probe = be.asarray(np.arange(-60, 60, dtype=np.int64))
    mask = be.to_host(sets.isin_sorted(be, probe, ak)).tolist()
    assert mask == [v in a for v in range(-60, 60)]


@pytest.mark.parametrize("device", PARAMS)
def test_large_inputs_take_the_parallel_cpu_paths_with_the_same_results(device):
    be = get_backend(device)
    rng = np.random.default_rng(7)
    hay = np.unique(rng.integers(0, 1 << 22, 400_000))
    needles = np.unique(rng.integers(-10, (1 << 22) + 10, 300_000))
    got = be.to_host(sets.isin_sorted(be, be.asarray(needles), be.asarray(hay), True))
    assert (got == np.isin(needles, hay)).all()
    build = be.asarray(np.sort(rng.integers(0, 1000, 50_000)))
    probe_keys = be.asarray(rng.integers(0, 1000, 5_000))
    lo, cnt = join.probe(be, probe_keys, build)
    total = join.join_size(be, cnt)
    assert total >= 1 << 17
    pi, bpos = join.expand(be, lo, cnt)
    pk, bk = be.to_host(probe_keys), be.to_host(build)
    pi, bpos = be.to_host(pi), be.to_host(bpos)
    assert len(pi) == total and (pk[pi] == bk[bpos]).all()
    assert len(set(zip(pi.tolist(), bpos.tolist()))) == total

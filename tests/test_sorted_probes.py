"""Look-ups sorted first (kernels.sets.search / search_range): the same positions as
NumPy's searchsorted, for unsorted queries with duplicates, misses and sorted runs."""

import numpy as np
import pytest
from gpu_engine.kernels import join as J
from gpu_engine.kernels import sets as S
from gpu_engine.kernels.backend import get_backend


@pytest.fixture
def small_thresholds(monkeypatch):
    monkeypatch.setattr(S, "SORT_PROBES", 4)
    monkeypatch.setattr(S, "LARGE_KEYS", 8)


@pytest.mark.parametrize("seed", range(5))
def test_search_equals_searchsorted(small_thresholds, seed):
    be = get_backend("cpu")
    rng = np.random.default_rng(seed)
    keys = np.sort(rng.integers(0, 50, 40))  # duplicates among the keys
    q = rng.integers(-5, 60, 300)  # unsorted, duplicated, some outside the range
    assert S._probe_order(be, len(keys), q) is not None
    for side in ("left", "right"):
        assert np.array_equal(S.search(be, keys, q, side), np.searchsorted(keys, q, side))
    lo, hi = S.search_range(be, keys, q)
    assert np.array_equal(lo, np.searchsorted(keys, q, "left"))
    assert np.array_equal(hi, np.searchsorted(keys, q, "right"))
    assert np.array_equal(S.isin_sorted(be, q, keys), np.isin(q, keys))
    plo, cnt = J.probe(be, q, keys)
    assert np.array_equal(plo, lo) and np.array_equal(cnt, hi - lo)
    qs = np.sort(q)  # sorted queries take the plain search
    assert S._probe_order(be, len(keys), qs) is None
    assert np.array_equal(S.search(be, keys, qs), np.searchsorted(keys, qs))


def test_few_queries_or_keys_search_directly():
    be = get_backend("cpu")
    q = np.arange(10_000)[::-1].copy()
    assert S._probe_order(be, 1000, q) is None  # few keys
    assert S._probe_order(be, 1 << 20, q[:10]) is None  # few queries
    assert S._probe_order(be, 1 << 20, q) is not None


def _sorts_agree(be, keys):
    want = np.sort(keys)
    assert np.array_equal(S.sort_values(be, keys), want)
    assert np.array_equal(S.sort_values(be, keys.copy(), overwrite=True), want)
    sk, order = S.sort_with_order(be, keys)
    assert np.array_equal(sk, want)
    assert np.array_equal(order, np.argsort(keys, kind="stable"))
    uk, cnt = S.unique_keys(be, keys, return_counts=True)
    u, c = np.unique(keys, return_counts=True)
    assert np.array_equal(uk, u) and np.array_equal(cnt, c)


@pytest.mark.parametrize("seed", range(6))
def test_sort_values_on_nearly_sorted_keys(seed, monkeypatch):
    """Keys sorted, sorted but for a few (below the running maximum), unions of sorted
    parts, or not sorted: the same as NumPy's sort, in place or not; sort_with_order and
    unique_keys too."""
    monkeypatch.setattr(S, "NEARLY_MIN", 16)
    be = get_backend("cpu")
    rng = np.random.default_rng(seed)
    base = np.sort(rng.integers(0, 500, 2000))
    for moved in (0, 3, 60, 1500):
        keys = base.copy()
        at = rng.choice(len(keys), moved, replace=False)
        keys[at] = rng.integers(0, 600, moved)  # some above the others, duplicates
        _sorts_agree(be, keys)
    for parts in (2, 3, 7, 9):  # unions of sorted parts, duplicates across them
        _sorts_agree(be, np.concatenate([np.sort(rng.integers(0, 300, int(m)))
                                         for m in rng.integers(1, 400, parts)]))

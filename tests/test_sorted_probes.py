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

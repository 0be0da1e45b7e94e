"""The radix sort of int64 keys (``kernels/radix_sort.py``) sorts exactly as NumPy does:
serial and chunk-parallel passes, every key range (one value, digits skipped, the full
63 bits, and wider ranges that fall back to NumPy), in place or not; and the set
operations that sort through it (value sorts, stable argsorts, distinct keys) give the
array operations' results."""

from __future__ import annotations

import numpy as np
import pytest
from gpu_engine.kernels import cpu_numba
from gpu_engine.kernels import radix_sort as R
from gpu_engine.kernels import sets as S
from gpu_engine.kernels.backend import get_backend
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.skipif(not R.AVAILABLE, reason="Numba is missing")

I64 = st.integers(-(1 << 63), (1 << 63) - 1)


@pytest.fixture(params=["serial", "parallel"])
def passes(request, monkeypatch):
    """Both pass kinds on small inputs (the parallel one from 2 keys)."""
    if request.param == "parallel":
        monkeypatch.setattr(R, "PARALLEL_MIN", 2)
    return request.param


@pytest.fixture
def radix_on(monkeypatch):
    """The set operations sort through the radix sort from 64 keys."""
    monkeypatch.setattr(R, "MIN_ROWS", 64)
    monkeypatch.setattr(cpu_numba, "_warm", True)
    monkeypatch.delenv("GPU_ENGINE_RADIX_SORT", raising=False)


def _check(keys: np.ndarray) -> None:
    want = np.sort(keys)
    before = keys.copy()
    got = R.sort(keys)
    assert got.dtype == np.int64 and (got == want).all()
    assert (keys == before).all()  # not overwritten
    got = R.sort(keys.copy(), overwrite=True)
    assert (got == want).all()


@settings(max_examples=80, deadline=None)
@given(st.lists(I64, max_size=200) | st.lists(st.integers(-40, 40), max_size=300))
def test_sorts_like_numpy(keys):
    for pmin in (1 << 20, 2):
        old = R.PARALLEL_MIN
        R.PARALLEL_MIN = pmin
        try:
            _check(np.array(keys, dtype=np.int64))
        finally:
            R.PARALLEL_MIN = old


@pytest.mark.parametrize("lo, bits", [(0, 1), (-3, 5), (1 << 40, 11), (0, 12), (-(1 << 20), 22),
                                      (5, 33), (0, 62), (-(1 << 62), 63)])
def test_key_ranges(passes, lo, bits):
    rng = np.random.default_rng(bits)
    keys = lo + rng.integers(0, 1 << bits, 20_000, dtype=np.int64)
    _check(keys)
    _check(keys[:3])
    _check(np.full(1000, lo, dtype=np.int64))  # one value: no pass runs
    high = keys & ~np.int64((1 << min(bits, 11)) - 1)  # low digit constant: skipped
    _check(high)
    _check(np.sort(keys))
    _check(np.sort(keys)[::-1].copy())


def test_full_range_falls_back(passes):
    keys = np.array([(1 << 63) - 1, -(1 << 63), 0, 5, -7] * 300, dtype=np.int64)
    _check(keys)


def test_use(monkeypatch):
    be = get_backend("cpu")
    monkeypatch.setattr(cpu_numba, "_warm", True)
    assert R.use(be, 1 << 16) and not R.use(be, 100)
    monkeypatch.setenv("GPU_ENGINE_RADIX_SORT", "0")
    assert not R.use(be, 1 << 16)


def test_set_operations_through_the_radix_sort(radix_on):
    be = get_backend("cpu")
    rng = np.random.default_rng(3)
    for n, top in ((5_000, 50), (5_000, 1 << 40), (70_000, 1 << 17)):
        keys = rng.integers(0, top, n)
        assert (S.sort_values(be, keys.copy()) == np.sort(keys)).all()
        sk, order = S.sort_with_order(be, keys)
        assert (order == np.argsort(keys, kind="stable")).all()
        assert (sk == np.sort(keys)).all()
        uk, cnt = S.unique_keys(be, keys, return_counts=True)
        wu, wc = np.unique(keys, return_counts=True)
        assert (uk == wu).all() and (cnt == wc).all()
        nearly = np.sort(keys)
        nearly[::97] = rng.integers(0, top, len(nearly[::97]))  # a few out of place
        assert (S.sort_values(be, nearly.copy()) == np.sort(nearly)).all()


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-30, 30), min_size=1, max_size=300), st.integers(-(1 << 40), 1 << 40))
def test_counting_sort_is_the_stable_sort(keys, shift):
    keys = np.array(keys, dtype=np.int64) + shift
    lo, hi = int(keys.min()), int(keys.max())
    got, order = R.counting_sort_with_order(keys, lo, hi - lo + 1)
    want = np.argsort(keys, kind="stable")
    assert got.dtype == np.int64 and order.dtype == np.int64
    assert (order == want).all() and (got == keys[want]).all()


def test_dense_keys_take_the_counting_sort(radix_on, monkeypatch):
    be = get_backend("cpu")
    keys = np.random.default_rng(5).integers(7, 7 + 500, 400).astype(np.int64)
    assert R.dense(len(keys), 500) and not R.dense(len(keys), 801)
    calls = []
    real = R.counting_sort_with_order
    monkeypatch.setattr(R, "counting_sort_with_order",
                        lambda *a: calls.append(1) or real(*a))
    sk, order = S.sort_with_order(be, keys)
    assert calls and (order == np.argsort(keys, kind="stable")).all()
    assert (sk == np.sort(keys)).all()

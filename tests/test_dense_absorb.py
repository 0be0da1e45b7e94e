"""Absorbing derivations through a bitmap (kernels/dense_seen.py, gpu_engine/dense_absorb.py)
gives the rows the sorted path gives: kernels against Python sets, the cache against
``RunSet.new_rows``, and materialisations with the path forced against the reference."""

from __future__ import annotations

import contextlib

import numpy as np
import pytest
from generators import Program, describe, engine_facts, programs, render_program
from gpu_engine.kernels import cpu_numba
from gpu_engine.kernels import dense_seen as D
from gpu_engine.kernels import keys as K
from gpu_engine.kernels.backend import get_backend
from hypothesis import given, note, settings
from hypothesis import strategies as st
from reference import LimitExceeded, evaluate

from gpu_engine.dense_absorb import DenseAbsorb
from gpu_engine.rowset import RowSet
from gpu_engine.runs import RunSet

pytestmark = pytest.mark.skipif(not D.AVAILABLE, reason="needs Numba")


@contextlib.contextmanager
def forced(min_rows: int = 1):
    """The bitmap path (and the parallel kernels it runs with) for inputs of any size,
    over boxes of up to 2^16 keys a row."""
    import gpu_engine.dense_absorb as DA

    saved = (DA.MIN_ROWS, D.BITS_PER_ROW, cpu_numba.MIN_ROWS, cpu_numba.FIRST_USE_ROWS,
             cpu_numba.ELEMENTWISE_MIN_ROWS)
    DA.MIN_ROWS, D.BITS_PER_ROW = min_rows, 1 << 16
    cpu_numba.MIN_ROWS = cpu_numba.FIRST_USE_ROWS = cpu_numba.ELEMENTWISE_MIN_ROWS = 1
    try:
        yield
    finally:
        (DA.MIN_ROWS, D.BITS_PER_ROW, cpu_numba.MIN_ROWS, cpu_numba.FIRST_USE_ROWS,
         cpu_numba.ELEMENTWISE_MIN_ROWS) = saved


def _rows(rs: RowSet | RunSet) -> set[tuple[int, ...]]:
    if isinstance(rs, RunSet):
        return set().union(*(_rows(r) for r in rs.runs)) if rs.runs else set()
    return set(zip(*(c.tolist() for c in rs.cols)))


def test_first_new_is_a_test_and_set_in_input_order() -> None:
    rng = np.random.default_rng(3)
    cols = tuple(rng.integers(-7, 40, 5000).astype(np.int64) for _ in range(3))
    spec = K.make_spec([int(c.min()) for c in cols], [int(c.max()) for c in cols])
    assert spec is not None
    bits = D.empty(spec)
    old = {tuple(r) for r in zip(*(c[:300].tolist() for c in cols))}
    D.mark_keys(bits, K.pack(get_backend("cpu"), tuple(c[:300] for c in cols), spec),
                spec, spec)
    got = D.first_new(bits, cols, spec)
    seen, want = set(old), []
    for row in zip(*(c.tolist() for c in cols)):
        if row not in seen:
            seen.add(row)
            want.append(row)
    assert [tuple(r) for r in zip(*K.unpack(get_backend("cpu"), got, spec))] == want
    assert len(D.first_new(bits, cols, spec)) == 0  # every row is in the bitmap now
    assert len(D.first_new(bits, tuple(c[:0] for c in cols), spec)) == 0


def test_keys_of_another_layout_are_repacked_and_field_ranges_read_the_keys() -> None:
    be = get_backend("cpu")
    rng = np.random.default_rng(5)
    cols = (rng.integers(10, 60, 400).astype(np.int64), rng.integers(-3, 9, 400).astype(np.int64))
    src = K.make_spec([0, -10], [100, 20], headroom=1)
    dst = K.make_spec([5, -5], [70, 12])
    assert src is not None and dst is not None and src != dst
    keys = K.pack(be, cols, src)
    assert D.field_ranges(keys, src) == ([int(c.min()) for c in cols],
                                         [int(c.max()) for c in cols])
    bits = D.empty(dst)
    D.mark_keys(bits, keys, src, dst)
    probe = (np.arange(5, 71).repeat(18), np.tile(np.arange(-5, 13), 66))
    fresh = D.first_new(bits, probe, dst)
    new = {tuple(r) for r in zip(*K.unpack(be, fresh, dst))}
    every = set(zip(probe[0].tolist(), probe[1].tolist()))
    assert new == every - set(zip(cols[0].tolist(), cols[1].tolist()))


def test_fits_bounds_the_bitmap_by_rows_and_size() -> None:
    spec = K.make_spec([0, 0], [(1 << 10) - 1, (1 << 10) - 1])
    assert spec is not None
    assert D.fits(spec, 1 << 20) and not D.fits(spec, 100)
    big = K.make_spec([0, 0], [(1 << 20) - 1, (1 << 20) - 1])
    assert big is not None and not D.fits(big, 1 << 40)


def _runset(be, parts: list[np.ndarray]) -> RunSet:
    rs = RunSet.empty(be, 2)
    for p in parts:
        d = RowSet.from_columns(be, (p[:, 0].copy(), p[:, 1].copy()), 2)
        rs = rs.append(rs.new_rows(d))
    return rs


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 10_000), spread=st.integers(1, 300), rounds=st.integers(1, 5))
def test_the_cache_finds_the_rows_new_rows_finds(seed: int, spread: int, rounds: int) -> None:
    """Rounds of derivations (some outside the box so far, which rebuilds it) added to a
    relation of several runs: each Δ equals the sorted path's, and the bitmap follows
    the relation from round to round."""
    be = get_backend("cpu")
    rng = np.random.default_rng(seed)
    cur = _runset(be, [rng.integers(0, spread, (int(rng.integers(1, 400)), 2))
                       for _ in range(3)])
    dense = DenseAbsorb(be)
    with forced():
        for r in range(rounds):
            hi = spread * (r + 1) if r % 2 else spread
            rows = rng.integers(-r, hi, (int(rng.integers(0, 600)), 2)).astype(np.int64)
            cols = (rows[:, 0].copy(), rows[:, 1].copy())
            want = cur.new_rows(RowSet.from_columns(be, cols, 2)) if len(rows) else None
            got = dense.new_rows("p", cur, cols, len(rows))
            if not len(rows):
                continue
            assert got is not None
            assert _rows(got) == _rows(want)
            assert np.all(np.diff(got.keys) > 0)
            after = cur.append(got)
            dense.appended("p", cur, after, got, True)
            cur = after
            assert dense.sets["p"].mirrors is cur


def test_the_cache_follows_rows_added_by_the_sorted_path_and_drops_a_stale_bitmap() -> None:
    be = get_backend("cpu")
    cur = _runset(be, [np.array([[1, 2], [3, 4]])])
    dense = DenseAbsorb(be)
    with forced():
        got = dense.new_rows("p", cur, (np.array([1, 5, 5]), np.array([2, 6, 6])), 3)
        assert _rows(got) == {(5, 6)}
        after = cur.append(got)
        dense.appended("p", cur, after, got, True)
        # a small round took the sorted path: its rows are marked, the bitmap follows
        small = after.new_rows(RowSet.from_columns(be, (np.array([2]), np.array([3])), 2))
        after2 = after.append(small)
        dense.appended("p", after, after2, small, False)
        assert dense.sets["p"].mirrors is after2
        again = dense.new_rows("p", after2, (np.array([2, 1, 4]), np.array([3, 2, 4])), 3)
        assert _rows(again) == {(4, 4)}
        # the relation changed behind the cache's back: rebuilt from what the store holds
        other = _runset(be, [np.array([[4, 4]])])
        fresh = dense.new_rows("p", other, (np.array([2, 4]), np.array([3, 4])), 2)
        assert _rows(fresh) == {(2, 3)}
        # tombstones: not served
        dead = other.without(RowSet.from_columns(be, (np.array([4]), np.array([4])), 2))
        assert dense.new_rows("p", dead, (np.array([2]), np.array([3])), 1) is None
    assert dense.new_rows("p", other, (np.array([2]), np.array([3])), 1) is None  # too small


@settings(max_examples=60, deadline=None)
@given(program=programs())
def test_materialisation_through_bitmaps_equals_the_reference(program: Program) -> None:
    """Generated programs with every round absorbed through bitmaps (the small-delta
    path, which absorbs its rounds itself, off)."""
    from gpu_engine import Reasoner, small_rounds

    try:
        expected = evaluate(program, max_tuples=3000)
    except LimitExceeded:
        return
    note(describe(program))
    enter, small_rounds.ENTER_DELTA = small_rounds.ENTER_DELTA, 0
    try:
        with forced():
            reasoner = Reasoner(render_program(program), device="cpu")
            for name, data in engine_facts(program).items():
                reasoner.add_facts(name, data)
            reasoner.materialise()
    finally:
        small_rounds.ENTER_DELTA = enter
    for rel in program.relations:
        table = reasoner.relation(rel.name)
        rows = list(zip(*(table.column(i).to_pylist() for i in range(rel.arity)))) \
            if rel.arity else [()] * table.num_rows
        assert len(rows) == len(set(rows)), rel.name
        assert set(rows) == expected[rel.name], f"{rel.name}\n{describe(program)}"

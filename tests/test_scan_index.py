"""Joins that scan a large run's column for a few probed values instead of building its
join index (RowSet.index_for): the same matches as the index, and the same results for
generated programs and updates (judged by the reference evaluator)."""

from __future__ import annotations

import os

import numpy as np
import pytest
from generators import describe, engine_facts, programs, render_program
from gpu_engine.kernels import join as J
from gpu_engine.kernels import keys as K
from gpu_engine.kernels.backend import get_backend
from hypothesis import HealthCheck, given, note, reject, settings
from hypothesis import strategies as st
from reference import LimitExceeded, evaluate
from test_fuzz import MAX_TUPLES
from test_update import (
    check_state,
    draw_update,
    engine_update,
    explicit_facts,
    reference,
    updated_facts,
    with_facts,
)

import gpu_engine.rowset as RS
from gpu_engine.rowset import RowSet


def _matches(be, idx, probe):
    if idx.spec is None:
        pk, ik = K.joint_keys(be, [probe], list(idx.key_cols))
        lo, cnt = J.probe(be, pk, ik)
    else:
        lo, cnt = J.probe(be, K.pack_probe(be, [probe], idx.spec), idx.sorted_keys)
    pi, at = J.expand(be, lo, cnt)
    return sorted(zip(pi.tolist(), idx.rows[at].tolist()))


@pytest.mark.parametrize("seed", range(6))
def test_scanned_index_matches_the_index(seed, monkeypatch):
    monkeypatch.setattr(RS, "SCAN_ROWS", 1)
    monkeypatch.setattr(RS, "BITS_ROWS", 16)
    be = get_backend("cpu")
    rng = np.random.default_rng(seed)
    n = 3000
    lo = -40 if seed % 2 else 0  # negative numbers in the columns
    cols = tuple(rng.integers(lo, hi, n) for hi in (50, 300, 1 << 40))
    rs = RowSet.from_columns(be, cols, 3)
    for p in (1, 2):
        for k in (1, 5, 64):
            src = rs.cols[p][rng.integers(0, len(rs), k)]
            probe = np.concatenate([src, rng.integers(lo - 5, 400, k)])[:k]
            fresh = RowSet(be, rs.cols, rs.keys, rs.spec, rs.n)  # no cached index
            got = fresh.index_for((p,), (), (), [probe], len(probe))
            assert ((p,), (), ()) not in fresh._indexes  # scanned, not built
            assert _matches(be, got, probe) == _matches(be, rs.index((p,)), probe)
    fresh = RowSet(be, rs.cols, rs.keys, rs.spec, rs.n)
    for _ in range(RS.SCAN_BUDGET + 1):  # the scans add up: then the index is built
        fresh.index_for((1,), (), (), [rs.cols[1][:3]], 3)
    assert ((1,), (), ()) in fresh._indexes


def _reasoner(program):
    from gpu_engine import Reasoner

    r = Reasoner(render_program(program), device="cpu", counting=True, modules="off")
    for name, data in engine_facts(program).items():
        r.add_facts(name, data)
    r.materialise()
    return r


@settings(max_examples=30, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(program=programs(), data=st.data())
def test_programs_with_scanned_joins(program, data, monkeypatch) -> None:
    """Every join of at most SCAN_PROBES probe rows on a later column scans it (until
    the run's scan budget is spent): materialisation and updates by every algorithm
    equal the reference."""
    try:
        evaluate(program, max_tuples=MAX_TUPLES)
    except LimitExceeded:
        reject()
    note(describe(program))
    monkeypatch.setattr(RS, "SCAN_ROWS", 1)
    monkeypatch.setattr(RS, "BITS_ROWS", 4)
    monkeypatch.setitem(os.environ, "GPU_ENGINE_HOST_UPDATES", "0")
    check_updates(_reasoner(program), program, data, ["dredc", "dred", "bfc", "remat"])


def check_updates(r, program, data, algorithms: list[str]) -> None:
    """The materialisation of ``program`` in ``r``, then 1-3 random updates by drawn
    ``algorithms``, each equal to the reference evaluation."""
    explicit = explicit_facts(program)
    expected = reference(program)
    problems = check_state(r, program, explicit, expected, "dredc")
    assert not problems, "\n".join(problems)
    for step in range(data.draw(st.integers(1, 3), label="updates")):
        algorithm = data.draw(st.sampled_from(algorithms), label="algorithm")
        update = draw_update(data, program, explicit, expected)
        note(f"update {step + 1} ({algorithm}): {update.describe()}")
        insert, delete = engine_update(update, program)
        r.update(insert=insert, delete=delete, algorithm=algorithm)
        explicit = updated_facts(explicit, update)
        expected = reference(with_facts(program, explicit))
        problems = check_state(r, program, explicit, expected, algorithm)
        assert not problems, "\n".join(problems)


@pytest.mark.parametrize("seed", range(4))
def test_prefix_index_from_the_keys(seed):
    """An index on a prefix of the columns is the rows' keys shifted (no packing): the
    same matches as brute force, with and without constants, and CSR offsets equal to
    a binary search per value."""
    be = get_backend("cpu")
    rng = np.random.default_rng(seed)
    lo = -30 if seed % 2 else 0
    cols = tuple(rng.integers(lo, hi, 4000) for hi in (60, 200, 1 << 30))
    rs = RowSet.from_columns(be, cols, 3)
    c = [np.asarray(x) for x in rs.cols]
    for k in (1, 2, 3):
        for consts in ((), ((2, int(c[2][7])),), ((1, int(c[1][3])),)):
            idx = rs.index(tuple(range(k)), consts)
            assert idx.spec is not None and len(idx.spec.offsets) == k
            probe = [np.concatenate([x[rng.integers(0, len(rs), 40)],
                                     rng.integers(lo - 3, 70, 10)]) for x in c[:k]]
            lo_, cnt = J.probe(be, K.pack_probe(be, probe, idx.spec), idx.sorted_keys)
            pi, at = J.expand(be, lo_, cnt)
            got = sorted(zip(pi.tolist(), idx.rows[at].tolist()))
            ok = np.ones(len(rs), dtype=bool)
            for p, v in consts:
                ok &= c[p] == v
            want = sorted((i, int(r)) for i in range(len(probe[0]))
                          for r in np.flatnonzero(ok & np.all(
                              [c[j] == probe[j][i] for j in range(k)], axis=0)))
            assert got == want
            off = idx.offsets(be)
            if off is not None:
                keys = idx.sorted_keys
                assert (off == np.searchsorted(keys, np.arange(int(keys[-1]) + 2))).all()


def test_flag_reads_then_the_index(monkeypatch):
    """A later column looked up by a flag is read until the reads add up to
    SCAN_BUDGET runs, then indexed; values outside the column's range read nothing.
    The positions are the same either way."""
    monkeypatch.setattr(RS, "BITS_ROWS", 16)
    be = get_backend("cpu")
    rng = np.random.default_rng(9)
    cols = (rng.integers(0, 500, 5000), rng.integers(100, 400, 5000))
    rs = RowSet.from_columns(be, cols, 2)
    col = np.asarray(rs.cols[1])
    flag = np.zeros(4096, dtype=bool)
    outside = np.array([3, 3000], dtype=np.int64)  # outside the key layout's [100, 1123]
    flag[outside] = True
    assert len(rs.positions_with(1, outside, flag)) == 0
    assert ("scanned", ((1,), (), ())) not in rs._indexes  # the range answered
    vals = np.unique(col[[5, 77, 4000]])
    flag[:] = False
    flag[vals] = True
    want = np.flatnonzero(np.isin(col, vals))
    for i in range(RS.SCAN_BUDGET + 1):
        assert (rs.positions_with(1, vals, flag) == want).all()
        assert (((1,), (), ()) in rs._indexes) == (i >= RS.SCAN_BUDGET)
    assert ("bits", 1) not in rs._indexes  # every read found rows: no bitset
    # a read that finds none of the values builds the bitset at the next look-up, which
    # then answers without reading the column
    rs = RowSet.from_columns(be, (cols[0], 2 * cols[1]), 2)  # even values only
    absent = np.array([301, 503], dtype=np.int64)
    flag[:] = False
    flag[absent] = True
    assert len(rs.positions_with(1, absent, flag)) == 0
    assert ("bits", 1) not in rs._indexes and ("missed", 1) in rs._indexes
    assert len(rs.positions_with(1, absent, flag)) == 0
    assert ("bits", 1) in rs._indexes
    assert rs._indexes[("scanned", ((1,), (), ()))] == rs.n  # one read only

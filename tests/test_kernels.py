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


@pytest.fixture
def parallel_paths(monkeypatch):
    """The parallel CPU kernels serve inputs from 4,096 rows (tests stay small)."""
    from gpu_engine.kernels import cpu_numba

    monkeypatch.setattr(cpu_numba, "MIN_ROWS", 1 << 12)
    monkeypatch.setattr(cpu_numba, "ELEMENTWISE_MIN_ROWS", 1 << 12)
    monkeypatch.setattr(cpu_numba, "FIRST_USE_ROWS", 1 << 12)


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
def test_large_inputs_take_the_parallel_cpu_paths_with_the_same_results(device, parallel_paths):
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


@pytest.mark.parametrize("device", PARAMS)
def test_large_keys_merges_and_sorts_match_the_array_operations(device, parallel_paths):
    """The parallel CPU kernels (packing, merging, composite argsort) give exactly what
    the plain array operations give."""
    be = get_backend(device)
    rng = np.random.default_rng(11)
    n = 300_000
    c0, c1 = rng.integers(-5, 1000, n), rng.integers(7, 1 << 20, n)
    spec = keys.make_spec([int(c0.min()), int(c1.min())], [int(c0.max()), int(c1.max())])
    k = keys.pack(be, [be.asarray(c0), be.asarray(c1)], spec)
    want = ((c0 - spec.offsets[0]) << spec.shifts[0]) | ((c1 - spec.offsets[1]) << spec.shifts[1])
    assert (be.to_host(k) == want).all()
    u0, u1 = (be.to_host(c) for c in keys.unpack(be, k, spec))
    assert (u0 == c0).all() and (u1 == c1).all()
    # stable order of keys with many ties, and group counts through it
    dup = rng.integers(0, 5000, n)
    order = be.to_host(sets.argsort_keys(be, be.asarray(dup)))
    assert (order == np.argsort(dup, kind="stable")).all()
    uk, first, cnt = (be.to_host(x) for x in group.group_count(be, be.asarray(dup)))
    wu, wfirst, wcnt = np.unique(dup, return_index=True, return_counts=True)
    assert (uk == wu).all() and (first == wfirst).all() and (cnt == wcnt).all()
    sk, idx = (be.to_host(x) for x in sets.sort_unique(be, be.asarray(dup)))
    assert (sk == wu).all() and (dup[idx] == sk).all()
    # merge of disjoint sorted runs, with aligned columns and merge positions
    allk = np.unique(rng.integers(-(1 << 40), 1 << 40, 2 * n))
    take = rng.random(len(allk)) < 0.3
    a, b = allk[~take], allk[take]
    mk, (mc, mk2) = sets.merge_disjoint(be, be.asarray(a), [be.asarray(a * 3), be.asarray(a)],
                                        be.asarray(b), [be.asarray(b * 3), be.asarray(b)])
    assert (be.to_host(mk) == allk).all() and (be.to_host(mk2) == allk).all()
    assert (be.to_host(mc) == allk * 3).all()
    pa, pb = (be.to_host(x) for x in sets.merge_positions(be, be.asarray(a), be.asarray(b)))
    assert (pa == np.flatnonzero(~take)).all() and (pb == np.flatnonzero(take)).all()
    small = b[::100]  # a short run merged into a long one
    mk, _ = sets.merge_disjoint(be, be.asarray(a), (), be.asarray(small), ())
    assert (be.to_host(mk) == np.union1d(a, small)).all()


@pytest.mark.parametrize("locators, cached", [("UserProvidedCacheLocator", True),
                                              ("IPythonCacheLocator", False)])
def test_kernels_work_without_a_writable_numba_cache(locators, cached, tmp_path):
    """No cache locator for the package (read-only installation, no writable home):
    the kernels cache into a temporary directory, or, when even that is unusable, are
    compiled without a cache; importing and calling them works either way."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    env = {k: v for k, v in os.environ.items() if not k.startswith("NUMBA_")}
    env["NUMBA_CACHE_LOCATOR_CLASSES"] = locators  # only these are tried: none fits
    env["TMPDIR"] = str(tmp_path)
    code = (
        "import numpy as np, numba\n"
        "from gpu_engine.kernels import numba_cache, cpu_numba\n"
        "a, b = np.arange(0, 20, 2), np.arange(1, 21, 2)\n"
        "assert (cpu_numba.merge(a, b) == np.arange(20)).all()\n"
        "print(numba_cache.CACHE, numba.config.CACHE_DIR)\n"
    )
    root = Path(__file__).resolve().parent.parent
    res = subprocess.run([sys.executable, "-c", code], cwd=root, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr
    flag, cache_dir = res.stdout.split()
    assert flag == str(cached)
    assert cache_dir.startswith(str(tmp_path))


def test_freed_memory_policy_is_applied_once_and_can_be_turned_off():
    import os
    import subprocess
    import sys
    from pathlib import Path

    code = ("from gpu_engine.kernels import cpu_memory as m\n"
            "a = m.keep_freed_memory(); b = m.keep_freed_memory(); m.release_freed_memory()\n"
            "print(a, b)\n")
    root = Path(__file__).resolve().parent.parent
    outs = {}
    for flag in ("0", "1"):
        env = {**os.environ, "GPU_ENGINE_KEEP_FREED_MEMORY": flag}
        res = subprocess.run([sys.executable, "-c", code], cwd=root, env=env,
                             capture_output=True, text=True, timeout=120)
        assert res.returncode == 0, res.stderr
        outs[flag] = res.stdout.split()
    assert outs["0"] == ["False", "False"]
    on = outs["1"]
    assert on[0] == on[1]  # idempotent; True where the C library is glibc
    if sys.platform == "linux" and os.confstr("CS_GNU_LIBC_VERSION"):
        assert on[0] == "True"


def test_output_rows_render_the_same_in_parallel_pieces():
    """host.io.render_rows: Arrow's CSV writer in threads, byte-identical to joining the
    lines one by one (values with a delimiter, quote or line break keep the plain path)."""
    import pyarrow.compute as pc
    from gpu_engine.host import io
    from gpu_engine.host.dictionary import SymbolTable

    from gpu_engine.ir import Relation

    def plain(cols, rel, syms, delim):
        texts = [io.format_column(c, t, syms) for c, (_, t) in zip(cols, rel.attributes)]
        lines = texts[0] if len(texts) == 1 else pc.binary_join_element_wise(*texts, delim)
        return "\n".join(lines.to_pylist()) + "\n"

    syms = SymbolTable()
    words = syms.encode_many(["a", "", "x y", "ü", "a\tb", 'q"'])
    n = 3 * io.WRITE_CHUNK_ROWS + 5
    rng = np.random.default_rng(3)
    nums = rng.integers(-(1 << 31), 1 << 31, n)
    rel = Relation("r", (("x", "number"), ("s", "symbol"), ("u", "unsigned")))
    for pick, delim in ((words[:4], "\t"), (words, "\t"), (words[:4], ","), (words, ",")):
        cols = (nums, rng.choice(pick, n), rng.integers(0, 1 << 32, n))
        assert io.render_rows(cols, rel, syms, delim) == plain(cols, rel, syms, delim)
    small = (nums[:3],)
    assert io.render_rows(small, Relation("s", (("x", "number"),)), syms) == "".join(
        f"{v}\n" for v in nums[:3])


@pytest.mark.parametrize("device", PARAMS)
def test_repacked_keys_and_membership_with_no_match_keys(device, parallel_paths):
    """keys.repack_probe equals pack_probe of the unpacked columns; the parallel merge
    membership stays exact when sorted needles carry -1 (no match) keys."""
    be = get_backend(device)
    rng = np.random.default_rng(5)
    n = 400_000
    c0, c1 = np.sort(rng.integers(0, 3000, n)), rng.integers(-50, 5000, n)
    src = keys.make_spec([0, -50], [2999, 4999], headroom=1)
    dst = keys.make_spec([100, 0], [2500, 6000])  # narrower and wider than the values
    k = keys.pack(be, [be.asarray(c0), be.asarray(c1)], src)
    got = be.to_host(keys.repack_probe(be, k, src, dst))
    want = be.to_host(keys.pack_probe(be, keys.unpack(be, k, src), dst))
    assert (got == want).all() and (got == -1).any() and (got >= 0).any()
    hay = np.unique(rng.choice(want[want >= 0], n // 3))
    needles = np.unique(np.concatenate([want, rng.integers(0, int(want.max()), n)]))
    needles[rng.random(len(needles)) < 0.2] = -1  # sorted apart from the -1 keys
    mask = be.to_host(sets.isin_sorted(be, be.asarray(needles), be.asarray(hay), True))
    assert (mask == np.isin(needles, hay)).all()


@pytest.mark.parametrize("device", PARAMS)
def test_large_probes_match_the_array_operations(device, parallel_paths):
    be = get_backend(device)
    rng = np.random.default_rng(9)
    n = 300_000
    spec = keys.make_spec([0, 10], [999, 4000])
    c0, c1 = rng.integers(-20, 1100, n), rng.integers(0, 4100, n)
    got = be.to_host(keys.pack_probe(be, [be.asarray(c0), be.asarray(c1)], spec))
    ok = (c0 >= 0) & (c0 < (1 << spec.widths[0])) & (c1 >= 10)
    ok &= (c1 - 10) < (1 << spec.widths[1])
    want = np.where(ok, (c0 << spec.shifts[0]) | ((c1 - 10) << spec.shifts[1]), -1)
    assert (got == want).all()
    build = np.sort(rng.integers(0, 5000, 100_000))
    off = join.dense_offsets(be, be.asarray(build), 1 << 16)
    probe_keys = rng.integers(-100, 5200, n)
    lo, cnt = (be.to_host(x) for x in join.probe_dense(be, be.asarray(probe_keys), off))
    wlo = np.searchsorted(build, probe_keys)
    wcnt = np.searchsorted(build, probe_keys, side="right") - wlo
    wcnt[(probe_keys < 0) | (probe_keys > build[-1])] = 0
    assert (cnt == wcnt).all() and (lo[wcnt > 0] == wlo[wcnt > 0]).all()


@pytest.mark.parametrize("device", PARAMS)
def test_large_join_chunks_equal_one_expansion(device, parallel_paths):
    be = get_backend(device)
    rng = np.random.default_rng(13)
    build = be.asarray(np.sort(rng.integers(0, 2000, 60_000)))
    probe_keys = be.asarray(rng.integers(-5, 2005, 8_000))
    lo, cnt = join.probe(be, probe_keys, build)
    whole = [be.to_host(x) for x in join.expand(be, lo, cnt)]
    for budget in (None, 1 << 17):
        parts = list(join.join_chunks(be, lo, cnt, budget=budget))
        got = [np.concatenate([be.to_host(p[i]) for p in parts]) for i in (0, 1)]
        assert all((g == w).all() for g, w in zip(got, whole))


@pytest.mark.parametrize("device", PARAMS)
@pytest.mark.parametrize("n_probe", [40, 8_000])
def test_gather_chunks_equal_expansion_then_gathers(device, n_probe, parallel_paths):
    be = get_backend(device)
    rng = np.random.default_rng(17)
    build = np.sort(rng.integers(0, 2000, 60_000))
    rows = be.asarray(rng.permutation(len(build)))
    bcol = be.asarray(rng.integers(-9, 10**6, len(build)))
    probe_keys = rng.integers(-5, 2005, n_probe)
    pcols = [be.asarray(probe_keys * 3), be.asarray(rng.integers(0, 7, n_probe))]
    lo, cnt = join.probe(be, be.asarray(probe_keys), be.asarray(build))
    for budget in (None, 1 << 17, 1000):
        want = [(be.to_host(pi), be.to_host(bp))
                for pi, bp in join.join_chunks(be, lo, cnt, budget=budget)]
        for r, pc, bc in ((rows, pcols, [bcol]), (None, pcols[:1], []), (rows, [], [bcol])):
            got = list(join.gather_chunks(be, lo, cnt, r, pc, bc, budget=budget))
            assert len(got) == len(want)
            for (gp, gb, n), (pi, bp) in zip(got, want):
                assert n == len(pi)
                rr = bp if r is None else be.to_host(r)[bp]
                assert all((be.to_host(g) == be.to_host(c)[pi]).all() for g, c in zip(gp, pc))
                assert all((be.to_host(g) == be.to_host(c)[rr]).all() for g, c in zip(gb, bc))


@pytest.mark.parametrize("device", PARAMS)
def test_unique_keys_in_place_equals_a_copy(device):
    be = get_backend(device)
    vals = np.random.default_rng(2).integers(-40, 40, 500)
    want, wcnt = (be.to_host(x) for x in sets.unique_keys(be, be.asarray(vals), True))
    tmp = be.asarray(vals)
    got, cnt = (be.to_host(x) for x in sets.unique_keys(be, tmp, True, overwrite=True))
    assert (got == want).all() and (cnt == wcnt).all()
    assert (want == np.unique(vals)).all()


def test_kernels_take_read_only_and_strided_columns_beside_writable_ones(parallel_paths):
    """A tuple of columns that mixes a read-only array (a zero-copy Arrow view) or a
    strided column of a 2-D array with writable contiguous ones: the compiled kernels
    (parallel, small-input, bitmap) give the array operations' results."""
    from gpu_engine.kernels import cpu_small
    from gpu_engine.kernels import dense_seen as D
    from gpu_engine.kernels.numba_args import column_tuple

    be = get_backend("cpu")
    rng = np.random.default_rng(9)
    grid = rng.integers(0, 50, (6000, 2)).astype(np.int64)
    ro = grid[:, 0].copy()
    ro.flags.writeable = False
    for a, b in ((ro, grid[:, 1].copy()), (grid[:, 0], grid[:, 1].copy()), (ro, grid[:, 1])):
        spec = keys.make_spec([0, 0], [49, 49])
        want = (a.astype(np.int64) << spec.shifts[0]) | (b << spec.shifts[1])
        assert np.array_equal(keys.pack(be, (a, b), spec), want)
        assert np.array_equal(cpu_small.pack((a, b), spec), want)
        assert np.array_equal(keys.pack_probe(be, (a, b), spec), want)
        assert cpu_small.ranges((a, b)) == ([int(a.min()), int(b.min())],
                                            [int(a.max()), int(b.max())])
        assert cpu_small.contains_packed((a, b), spec, np.unique(want)).all()
        if D.AVAILABLE:
            got = D.first_new(D.empty(spec), (a, b), spec)
            assert np.array_equal(np.sort(got), np.unique(want))
    same = (grid[:, 0].copy(), grid[:, 1].copy())
    assert all(x is y for x, y in zip(column_tuple(same), same))  # no copies when uniform


def test_a_fact_file_of_symbols_and_numbers_loads_through_the_parallel_kernels(
        parallel_paths, tmp_path):
    """Arrow's number column is a read-only view, the symbol ids a writable array: the
    parallel packing of the loaded rows took the mixed tuple (it failed to compile for
    it, which crashed loading a file of over 2^21 such rows)."""
    from gpu_engine.host.cli import main

    (tmp_path / "f").mkdir()
    (tmp_path / "f" / "r.facts").write_text("".join(f"s{i % 100}\t{i}\n" for i in range(6000)))
    (tmp_path / "m.dl").write_text(".decl r(a: symbol, n: number)\n.input r\n"
                                   ".decl q(a: symbol, n: number)\nq(a, n) :- r(a, n), n < 10.\n"
                                   ".output q\n")
    rc = main(["run", str(tmp_path / "m.dl"), "-F", str(tmp_path / "f"), "-D",
               str(tmp_path / "o"), "--quiet", "--device", "cpu"])
    assert rc == 0
    assert len((tmp_path / "o" / "q.csv").read_text().splitlines()) == 10

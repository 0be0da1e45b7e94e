"""Kernel signatures for :mod:`kernels.precompile`: written by
``python -m gpu_engine.kernels.precompile --record`` from the Numba cache after
``make test`` (one line per signature: the types of its arguments)."""

SIGNATURES: dict[str, list[list[str]]] = {
    'cpu_numba._expand': [
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64[::1]', 'int64[::1]'],
    ],
    'cpu_numba._expand_gather': [
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64[::1]', 'bool', 'UniTuple(int64[::1], 1)', 'int64', 'UniTuple(int64[::1], 1)', 'int64', 'UniTuple(int64[::1], 1)', 'UniTuple(int64[::1], 1)', 'int64'],
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64[::1]', 'bool', 'UniTuple(int64[::1], 1)', 'int64', 'UniTuple(int64[::1], 2)', 'int64', 'UniTuple(int64[::1], 1)', 'UniTuple(int64[::1], 2)', 'int64'],
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64[::1]', 'bool', 'UniTuple(int64[::1], 1)', 'int64', 'UniTuple(int64[::1], 3)', 'int64', 'UniTuple(int64[::1], 1)', 'UniTuple(int64[::1], 3)', 'int64'],
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64[::1]', 'bool', 'UniTuple(int64[::1], 1)', 'int64', 'UniTuple(int64[::1], 5)', 'int64', 'UniTuple(int64[::1], 1)', 'UniTuple(int64[::1], 5)', 'int64'],
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64[::1]', 'bool', 'UniTuple(int64[::1], 2)', 'int64', 'UniTuple(int64[::1], 1)', 'int64', 'UniTuple(int64[::1], 2)', 'UniTuple(int64[::1], 1)', 'int64'],
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64[::1]', 'bool', 'UniTuple(int64[::1], 2)', 'int64', 'UniTuple(int64[::1], 2)', 'int64', 'UniTuple(int64[::1], 2)', 'UniTuple(int64[::1], 2)', 'int64'],
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64[::1]', 'bool', 'UniTuple(int64[::1], 3)', 'int64', 'UniTuple(int64[::1], 1)', 'int64', 'UniTuple(int64[::1], 3)', 'UniTuple(int64[::1], 1)', 'int64'],
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64[::1]', 'bool', 'UniTuple(int64[::1], 4)', 'int64', 'UniTuple(int64[::1], 4)', 'int64', 'UniTuple(int64[::1], 4)', 'UniTuple(int64[::1], 4)', 'int64'],
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64[::1]', 'bool', 'UniTuple(int64[::1], 5)', 'int64', 'UniTuple(int64[::1], 1)', 'int64', 'UniTuple(int64[::1], 5)', 'UniTuple(int64[::1], 1)', 'int64'],
    ],
    'cpu_numba._isin_sorted_merge': [
        ['int64[::1]', 'int64[::1]', 'bool[::1]', 'int64'],
    ],
    'cpu_numba._merge': [
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64'],
    ],
    'cpu_numba._merge_positions': [
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64'],
    ],
    'cpu_numba._pack': [
        ["UniTuple(Array(int64, 1, 'C', True, aligned=True), 2)", 'int64[::1]', 'int64[::1]', 'int64[::1]'],
        ['UniTuple(int64[::1], 1)', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
        ['UniTuple(int64[::1], 2)', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
        ['UniTuple(int64[::1], 3)', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
    ],
    'cpu_numba._pack_probe': [
        ["UniTuple(Array(int64, 1, 'C', True, aligned=True), 2)", 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
        ['UniTuple(int64[::1], 1)', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
        ['UniTuple(int64[::1], 2)', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
        ['UniTuple(int64[::1], 3)', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
    ],
    'cpu_numba._probe_dense': [
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
    ],
    'cpu_numba._repack': [
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
    ],
    'cpu_numba._scatter2': [
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
    ],
    'cpu_numba._sequential_sums': [
        ['float32[::1]', 'int64[::1]', 'int64[::1]', 'float32[::1]', 'float32[::1]', 'float32[::1]'],
        ['float64[::1]', 'int64[::1]', 'int64[::1]', 'float64[::1]', 'float64[::1]', 'float64[::1]'],
    ],
    'cpu_numba._split': [
        ['int64[::1]', 'int64[::1]', 'int64'],
    ],
    'cpu_numba._unpack': [
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'UniTuple(int64[::1], 2)'],
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'UniTuple(int64[::1], 3)'],
    ],
    'cpu_small._contains_packed': [
        ["UniTuple(Array(int64, 1, 'C', True, aligned=True), 2)", 'UniTuple(int64, 2)', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)', 'int64[::1]', 'int64[::1]'],
        ['UniTuple(int64[::1], 1)', 'UniTuple(int64, 1)', 'UniTuple(int64, 1)', 'UniTuple(int64, 1)', 'int64[::1]', 'int64[::1]'],
        ['UniTuple(int64[::1], 2)', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)', 'int64[::1]', 'int64[::1]'],
        ['UniTuple(int64[::1], 3)', 'UniTuple(int64, 3)', 'UniTuple(int64, 3)', 'UniTuple(int64, 3)', 'int64[::1]', 'int64[::1]'],
        ['UniTuple(int64[::1], 4)', 'UniTuple(int64, 4)', 'UniTuple(int64, 4)', 'UniTuple(int64, 4)', 'int64[::1]', 'int64[::1]'],
        ['UniTuple(int64[::1], 7)', 'UniTuple(int64, 7)', 'UniTuple(int64, 7)', 'UniTuple(int64, 7)', 'int64[::1]', 'int64[::1]'],
    ],
    'cpu_small._flagged': [
        ['int64[::1]', 'bool[::1]', 'int64'],
    ],
    'cpu_small._isin': [
        ['int64[::1]', 'int64[::1]', 'int64[::1]'],
    ],
    'cpu_small._merge': [
        ['int64[::1]', 'int64[::1]'],
    ],
    'cpu_small._pack': [
        ["UniTuple(Array(int64, 1, 'C', True, aligned=True), 2)", 'UniTuple(int64, 2)', 'UniTuple(int64, 2)'],
        ["UniTuple(Array(int64, 1, 'C', True, aligned=True), 4)", 'UniTuple(int64, 4)', 'UniTuple(int64, 4)'],
        ["UniTuple(Array(int64, 1, 'C', True, aligned=True), 7)", 'UniTuple(int64, 7)', 'UniTuple(int64, 7)'],
        ['UniTuple(int64[::1], 1)', 'UniTuple(int64, 1)', 'UniTuple(int64, 1)'],
        ['UniTuple(int64[::1], 2)', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)'],
        ['UniTuple(int64[::1], 3)', 'UniTuple(int64, 3)', 'UniTuple(int64, 3)'],
        ['UniTuple(int64[::1], 4)', 'UniTuple(int64, 4)', 'UniTuple(int64, 4)'],
        ['UniTuple(int64[::1], 5)', 'UniTuple(int64, 5)', 'UniTuple(int64, 5)'],
        ['UniTuple(int64[::1], 6)', 'UniTuple(int64, 6)', 'UniTuple(int64, 6)'],
        ['UniTuple(int64[::1], 7)', 'UniTuple(int64, 7)', 'UniTuple(int64, 7)'],
    ],
    'cpu_small._pack_probe': [
        ['UniTuple(int64[::1], 1)', 'UniTuple(int64, 1)', 'UniTuple(int64, 1)', 'UniTuple(int64, 1)'],
        ['UniTuple(int64[::1], 2)', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)'],
        ['UniTuple(int64[::1], 3)', 'UniTuple(int64, 3)', 'UniTuple(int64, 3)', 'UniTuple(int64, 3)'],
        ['UniTuple(int64[::1], 4)', 'UniTuple(int64, 4)', 'UniTuple(int64, 4)', 'UniTuple(int64, 4)'],
        ['UniTuple(int64[::1], 5)', 'UniTuple(int64, 5)', 'UniTuple(int64, 5)', 'UniTuple(int64, 5)'],
        ['UniTuple(int64[::1], 7)', 'UniTuple(int64, 7)', 'UniTuple(int64, 7)', 'UniTuple(int64, 7)'],
    ],
    'cpu_small._probe_expand': [
        ['int64[::1]', 'int64[::1]', 'int64', 'int64[::1]'],
    ],
    'cpu_small._ranges': [
        ["UniTuple(Array(int64, 1, 'C', True, aligned=True), 2)"],
        ["UniTuple(Array(int64, 1, 'C', True, aligned=True), 4)"],
        ["UniTuple(Array(int64, 1, 'C', True, aligned=True), 7)"],
        ['UniTuple(int64[::1], 1)'],
        ['UniTuple(int64[::1], 2)'],
        ['UniTuple(int64[::1], 3)'],
        ['UniTuple(int64[::1], 4)'],
        ['UniTuple(int64[::1], 5)'],
        ['UniTuple(int64[::1], 6)'],
        ['UniTuple(int64[::1], 7)'],
    ],
    'cpu_small._rank_bitmap': [
        ['int64[::1]', 'int64'],
    ],
    'cpu_small._rank_isin': [
        ['int64[::1]', 'uint64[::1]'],
    ],
    'cpu_small._rank_search': [
        ['int64[::1]', 'uint64[::1]', 'int64[::1]', 'int64'],
    ],
    'cpu_small._repack': [
        ['int64[::1]', 'UniTuple(int64, 1)', 'UniTuple(int64, 1)', 'UniTuple(int64, 1)', 'UniTuple(int64, 1)', 'UniTuple(int64, 1)', 'UniTuple(int64, 1)'],
        ['int64[::1]', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)'],
        ['int64[::1]', 'UniTuple(int64, 3)', 'UniTuple(int64, 3)', 'UniTuple(int64, 3)', 'UniTuple(int64, 3)', 'UniTuple(int64, 3)', 'UniTuple(int64, 3)'],
    ],
    'cpu_small._search': [
        ['int64[::1]', 'int64[::1]', 'int64[::1]'],
    ],
    'cpu_small._unique': [
        ['int64[::1]', 'bool'],
    ],
    'cpu_small._unpack': [
        ['int64[::1]', 'UniTuple(int64, 1)', 'UniTuple(int64, 1)', 'UniTuple(int64, 1)', 'UniTuple(int64[::1], 1)'],
        ['int64[::1]', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)', 'UniTuple(int64, 2)', 'UniTuple(int64[::1], 2)'],
        ['int64[::1]', 'UniTuple(int64, 3)', 'UniTuple(int64, 3)', 'UniTuple(int64, 3)', 'UniTuple(int64[::1], 3)'],
        ['int64[::1]', 'UniTuple(int64, 4)', 'UniTuple(int64, 4)', 'UniTuple(int64, 4)', 'UniTuple(int64[::1], 4)'],
        ['int64[::1]', 'UniTuple(int64, 5)', 'UniTuple(int64, 5)', 'UniTuple(int64, 5)', 'UniTuple(int64[::1], 5)'],
        ['int64[::1]', 'UniTuple(int64, 6)', 'UniTuple(int64, 6)', 'UniTuple(int64, 6)', 'UniTuple(int64[::1], 6)'],
        ['int64[::1]', 'UniTuple(int64, 7)', 'UniTuple(int64, 7)', 'UniTuple(int64, 7)', 'UniTuple(int64[::1], 7)'],
    ],
    'cpu_small._value_bits': [
        ['int64[::1]', 'int64'],
    ],
    'dense_seen._field_ranges': [
        ['int64[::1]', 'int64[::1]', 'int64[::1]'],
    ],
    'dense_seen._first_new': [
        ['uint64[::1]', "UniTuple(Array(int64, 1, 'C', True, aligned=True), 2)", 'int64[::1]', 'int64[::1]', 'int64[::1]'],
        ['uint64[::1]', 'UniTuple(int64[::1], 2)', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
        ['uint64[::1]', 'UniTuple(int64[::1], 3)', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
    ],
    'dense_seen._mark_keys': [
        ['uint64[::1]', 'int64[::1]'],
    ],
    'dense_seen._mark_repacked': [
        ['uint64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
    ],
    'radix_sort._chunk_histograms': [
        ['int64[::1]', 'int64', 'int64', 'int64', 'int64', 'int64'],
    ],
    'radix_sort._chunk_scatter': [
        ['int64[::1]', 'int64[::1]', 'int64[:, ::1]', 'int64', 'int64', 'int64', 'int64'],
    ],
    'radix_sort._chunk_starts': [
        ['int64[:, ::1]'],
    ],
    'radix_sort._counting': [
        ['int64[::1]', 'int64', 'int64'],
    ],
    'radix_sort._histograms': [
        ['int64[::1]', 'int64', 'int64', 'int64'],
    ],
    'radix_sort._scatter': [
        ['int64[::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64'],
    ],
    'radix_sort._starts': [
        ['int64[::1]'],
    ],
    'small_path._filters': [
        ['int64[::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[::1]', 'int64', 'int64', 'int64[::1]', 'int64[::1]', 'int64[::1]'],
    ],
    'small_path._variant': [
        ['int64[::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[:, ::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64'],
    ],
    'small_path.count_instances': [
        ['int64[::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[::1]', 'int64'],
    ],
    'small_path.hash_insert': [
        ['int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64', 'int64'],
    ],
    'small_path.rebuild_hashes': [
        ['int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64[::1]'],
    ],
    'small_path.run_rounds': [
        ['int64[::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[:, ::1]', 'int64[::1]', 'int64[:, ::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[:, ::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64[::1]', 'int64', 'int64', 'int64'],
    ],
}

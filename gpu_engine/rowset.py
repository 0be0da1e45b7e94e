"""Columnar relation storage: sorted, unique rows as int64 columns plus their row keys.

A :class:`RowSet` is immutable once built: evaluation creates new versions (``I``,
``I ∪ Δ``) and keeps the old one alive as long as a delta variant reads it.  Join
indexes (rows sorted by other column subsets) are cached per version.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from gpu_engine.kernels import cpu_small as small
from gpu_engine.kernels import keys as K
from gpu_engine.kernels import sets as S
from gpu_engine.kernels.backend import INDEX, Backend


@dataclass
class JoinIndex:
    """Rows of a RowSet filtered and sorted by key columns, ready for probing."""

    sorted_keys: Any  # packed key of each selected row, ascending
    rows: Any  # row ids into the RowSet, in key order
    spec: K.KeySpec | None  # packing of the key columns; None = zero key columns or ranked
    key_cols: tuple[Any, ...] | None = None  # ranked path: the sorted key columns
    _ends: Any = None
    _offsets: Any = False  # False: not computed yet; None: keys too sparse for CSR
    _fence: Any = None  # every FENCE_STEP-th sorted key (kernels.cpu_small), on first use

    def fence(self) -> Any:
        """The sorted keys' fence for compiled searches (``kernels.cpu_small``)."""
        if self._fence is None:
            self._fence = small.fence_of(self.sorted_keys)
        return self._fence

    def offsets(self, be: Backend) -> Any:
        """Direct-address (CSR) offsets when the packed keys are dense enough, else None."""
        if self._offsets is False:
            from gpu_engine.kernels.join import dense_offsets

            n = len(self.sorted_keys)
            self._offsets = dense_offsets(be, self.sorted_keys, max(4 * n, 1 << 16))
        return self._offsets

    def ends(self, be: Backend) -> Any:
        """End of each key's run of equal keys (computed once per index)."""
        if self._ends is None:
            from gpu_engine.kernels.join import run_ends

            self._ends = run_ends(be, self.sorted_keys)
        return self._ends


@dataclass
class RowSet:
    """Sorted unique rows.  ``keys`` sort like the rows under ``spec`` (None: arity <= 1)."""

    be: Backend
    cols_: tuple[Any, ...] | None  # None: unpacked from the keys on first use
    keys: Any
    spec: K.KeySpec | None
    n: int
    _indexes: dict[Any, JoinIndex] = field(default_factory=dict, repr=False)
    # copies of this immutable run on the other backend (host/device), by purpose
    _mirror: dict[Any, Any] = field(default_factory=dict, repr=False)

    @property
    def cols(self) -> tuple[Any, ...]:
        """The columns (for packed runs materialised lazily from the keys: a run that is
        only probed for membership never needs them)."""
        if self.cols_ is None:
            assert self.spec is not None
            self.cols_ = K.unpack(self.be, self.keys, self.spec)
        return self.cols_

    @property
    def arity(self) -> int:
        if self.cols_ is not None:
            return len(self.cols_)
        assert self.spec is not None
        return len(self.spec.offsets)

    def __len__(self) -> int:
        return self.n

    # --- construction ---------------------------------------------------------------

    @staticmethod
    def empty(be: Backend, arity: int) -> RowSet:
        z = be.xp.zeros(0, dtype=INDEX)
        return RowSet(be, tuple(z for _ in range(arity)), z, None, 0)

    @staticmethod
    def from_columns(be: Backend, cols: tuple[Any, ...], arity: int, n_rows: int | None = None,
                     return_counts: bool = False, weights: Any = None) -> Any:
        """Build from (unsorted, possibly duplicated) columns.

        With ``return_counts`` returns (RowSet, multiplicity of each of its rows); with
        ``weights`` the multiplicity of a row is the sum of its input rows' weights.
        ``n_rows`` counts the input rows of a nullary relation (it has no columns).
        """
        xp = be.xp
        if arity == 0:
            n = int(n_rows or 0) if weights is None else int(weights.sum())
            m = 1 if n > 0 else 0
            rs = RowSet(be, (), xp.zeros(m, dtype=INDEX), None, m)
            return (rs, xp.full(m, n, dtype=INDEX)) if return_counts else rs
        if weights is not None and return_counts and len(cols[0]):
            from gpu_engine.kernels.group import group_count

            spec = _spec_for(be, cols)
            keys = (cols[0] if arity == 1 else K.pack(be, cols, spec) if spec is not None
                    else K.rank_rows(be, cols))
            uk, first, cnt = group_count(be, keys, weights)
            if arity == 1 or spec is not None:
                ucols = (uk,) if arity == 1 else K.unpack(be, uk, spec)
            else:
                ucols = S.take_rows(cols, first)
            return RowSet(be, tuple(ucols), uk, spec, len(uk)), cnt
        n = len(cols[0])
        if n == 0:
            rs = RowSet.empty(be, arity)
            return (rs, xp.zeros(0, dtype=INDEX)) if return_counts else rs
        spec = _spec_for(be, cols)
        if arity == 1 or spec is not None:
            keys = cols[0] if arity == 1 else K.pack(be, cols, spec)
            res = S.unique_keys(be, keys, return_counts, overwrite=arity > 1)
            uk, cnt = res if return_counts else (res, None)
            ucols = (uk,) if arity == 1 else None  # packed: unpacked on first use
        else:  # ranked general path
            from gpu_engine.kernels.group import group_count

            uk, first, cnt = group_count(be, K.rank_rows(be, cols))
            ucols = S.take_rows(cols, first)
        rs = RowSet(be, None if ucols is None else tuple(ucols), uk, spec, len(uk))
        return (rs, cnt) if return_counts else rs

    def select(self, mask: Any) -> RowSet:
        """The rows where ``mask`` holds (still sorted)."""
        if self.arity == 0:
            keep = bool(self.n) and bool(mask[0]) if len(mask) else False
            return self if keep else RowSet.empty(self.be, 0)
        m = int(mask.sum())
        if m == self.n:
            return self
        cols = None if self.cols_ is None else tuple(c[mask] for c in self.cols_)
        return RowSet(self.be, cols, self.keys[mask], self.spec, m)

    def take(self, at: Any) -> RowSet:
        """The rows at the sorted, distinct positions ``at`` (still sorted)."""
        if self.arity == 0:
            return self if len(at) and self.n else RowSet.empty(self.be, 0)
        if len(at) == self.n:
            return self
        cols = None if self.cols_ is None else tuple(c[at] for c in self.cols_)
        return RowSet(self.be, cols, self.keys[at], self.spec, len(at))

    def positions_with(self, p: int, values: Any, flag: Any | None = None) -> Any:
        """Sorted positions of the rows whose column ``p`` holds one of ``values``
        (sorted, distinct): through the join index on the column (cached; the first
        column's costs no sort) when it exists or ``flag`` is None, else by ``flag`` (a
        mask over the dictionary, true at ``values``) gathered along the column, until
        such reads have read the run :data:`SCAN_BUDGET` times (:meth:`_scan_instead`);
        values outside the column's range, or missing from its bitset, read nothing."""
        from gpu_engine.kernels.join import expand, probe

        xp = self.be.xp
        ji = self._indexes.get(((p,), (), ()))
        if ji is None and p == 0 and self.n and (self.spec is not None or self.arity == 1):
            # the rows sort by their keys, the first column most significant: the rows
            # holding v are a range of keys (no index to build)
            if self.spec is None:
                lo = xp.searchsorted(self.keys, values, side="left")
                hi = xp.searchsorted(self.keys, values, side="right")
            else:
                sh, off, w = self.spec.shifts[0], self.spec.offsets[0], self.spec.widths[0]
                v = values[(values >= off) & (values - off < (1 << w))] - off
                lo = xp.searchsorted(self.keys, v << sh, side="left")
                hi = xp.searchsorted(self.keys, (v << sh) | ((1 << sh) - 1), side="right")
            return expand(self.be, lo.astype(INDEX), (hi - lo).astype(INDEX))[1]
        if ji is None and flag is not None and p:
            if len(values) <= BITS_VALUES and not self._may_hold(p, values):
                return xp.zeros(0, dtype=INDEX)
            if self._scan_instead(p):
                return self._read_flagged(p, flag)
        ji = self.index((p,))
        if ji.spec is None or ji.sorted_keys is None:  # ranked index: a pass
            return xp.flatnonzero(S.isin_sorted(self.be, self.cols[p], values)).astype(INDEX)
        lo, cnt = probe(self.be, K.pack_probe(self.be, (values,), ji.spec), ji.sorted_keys)
        _, at = expand(self.be, lo, cnt)
        got = ji.rows[at]
        if p:
            got = xp.sort(got)
        return got

    def value_bits(self, p: int) -> Any | None:
        """A bitset of the values of column ``p`` (``np.packbits`` order), built on first
        use and cached on the run; None for runs under :data:`BITS_ROWS` rows or whose
        bitset would take more than two bytes a row.  One pass, no sort: it answers
        whether a few values occur in the column, and how many distinct values it has."""
        key = ("bits", p)
        bits = self._indexes.get(key)
        if bits is None and self.n >= BITS_ROWS and small.on(self.be):
            bits, ok = small.value_bits(self.cols[p], 16 * self.n)  # one compiled pass
            bits = bits if ok else False
            self._indexes[key] = bits
        elif bits is None:
            xp = self.be.xp
            col = self.cols[p]
            top = int(col.max()) + 1 if self.n >= BITS_ROWS else 0
            if top <= 0 or top > 16 * self.n or int(col.min()) < 0:  # ids are not negative
                bits = False
            else:
                present = xp.zeros(top, dtype=bool)
                present[col] = True
                bits = xp.packbits(present)
            self._indexes[key] = bits
        return None if bits is False else bits

    def distinct_values(self, p: int) -> int | None:
        """The number of distinct values of column ``p`` from :meth:`value_bits` (cached
        beside it), or None where there is no bitset."""
        key = ("distinct", p)
        hit = self._indexes.get(key)
        if hit is None:
            bits = self.value_bits(p)
            hit = -1 if bits is None else int(self.be.xp.unpackbits(bits).sum())
            self._indexes[key] = hit
        return None if hit < 0 else hit

    def column_range(self, p: int) -> tuple[int, int]:
        """(min, max) of column ``p`` as host ints (one pass, cached; (0, -1) when
        empty)."""
        if p == 0 and self.n:
            return self.first_column_range()
        key = ("range", p)
        rng = self._indexes.get(key)
        if rng is None:
            if not self.n:
                rng = (0, -1)
            else:
                mins, maxs = K.column_ranges(self.be, (self.cols[p],))
                rng = (mins[0], maxs[0])
            self._indexes[key] = rng
        return rng

    def _scan_instead(self, p: int) -> bool:
        """Whether later column ``p`` is read (and the read counted) rather than
        indexed: until reads of it have read the run :data:`SCAN_BUDGET` times, then
        the index is built and kept (ski rental, shared by :meth:`positions_with` and
        :meth:`index_for`)."""
        sk = ("scanned", ((p,), (), ()))
        done = self._indexes.get(sk, 0)
        if done >= SCAN_BUDGET * self.n:
            return False
        self._indexes[sk] = done + self.n
        return True

    def _may_hold(self, p: int, values: Any) -> bool:
        """Whether column ``p`` may hold one of ``values`` (the column's range in the
        rows' key layout, which costs nothing, or its range; then :meth:`value_bits`;
        True where there is no bitset), so that a few values are looked for in a large
        run without reading the column.  The bitset, which costs about two reads of the
        column, is built once a read of it has found none of the values looked for (a
        column whose look-ups find rows never needs it)."""
        if self.n >= BITS_ROWS:
            if self.spec is not None:  # every value of the column fits its bit field
                lo = self.spec.offsets[p]
                hi = min(lo + (1 << self.spec.widths[p]) - 1, (1 << 63) - 1)
            else:
                lo, hi = self.column_range(p)
            if not bool(((values >= lo) & (values <= hi)).any()):
                return False
            if ("bits", p) not in self._indexes and ("missed", p) not in self._indexes:
                return True
        bits = self.value_bits(p)
        if bits is None:
            return True
        v = values[values < 8 * len(bits)]
        return bool(((bits[v >> 3] >> (7 - (v & 7))) & 1).any())

    def merge(self, other: RowSet) -> RowSet:
        """Union with a disjoint sorted row set, by a linear merge."""
        if other.n == 0:
            return self
        if self.n == 0:
            return other
        if self.arity == 0:
            return self
        me = self._covering(other.cols)
        if self.arity > 1 and me.spec is None:
            u, _, _ = self.add(other.cols)
            return u
        ok = other.keys if (self.arity == 1 or other.spec == me.spec) else _keys_with(
            self.be, other.cols, me.spec)
        if self.arity > 1:  # packed: merge the keys only; columns are unpacked on demand
            mk, _ = S.merge_disjoint(self.be, me.keys, (), ok, ())
            return RowSet(self.be, None, mk, me.spec, len(mk))
        mk, mcols = S.merge_disjoint(self.be, me.keys, me.cols, ok, other.cols)
        return RowSet(self.be, mcols, mk, me.spec, len(mk))

    # --- set operations -------------------------------------------------------------

    def add(self, cols: tuple[Any, ...], n_rows: int | None = None,
            return_counts: bool = False) -> tuple[RowSet, RowSet, Any]:
        """``self ∪ rows``; returns (union, Δ = distinct rows not in self, counts).

        With ``return_counts`` the third value is (positions of self's rows in the union
        or None when unchanged, positions of the distinct input rows in the union, their
        multiplicities), for counter maintenance.
        ``n_rows`` is needed only for nullary relations (no columns to count).
        """
        be, xp = self.be, self.be.xp
        arity = self.arity
        if arity == 0:
            n_in = int(n_rows or 0)
            if n_in == 0:
                return self, RowSet.empty(be, 0), None
            one = RowSet(be, (), xp.zeros(1, dtype=INDEX), None, 1)
            if self.n:
                counts = (None, xp.zeros(1, dtype=INDEX), xp.full(1, n_in, dtype=INDEX))
                return self, RowSet.empty(be, 0), counts
            counts = (xp.zeros(0, dtype=INDEX), xp.zeros(1, dtype=INDEX),
                      xp.full(1, n_in, dtype=INDEX))
            return one, one, counts
        if len(cols[0]) == 0:
            return self, RowSet.empty(be, arity), None
        me = self._covering(cols)
        if arity > 1 and me.spec is None:  # ranked (general) path
            ranks = K.rank_rows(be, [xp.concatenate([a, b]) for a, b in zip(me.cols, cols)])
            me = RowSet(be, me.cols, ranks[: me.n], None, me.n)
            keys = ranks[me.n:]
        else:
            keys = _keys_with(be, cols, me.spec)
        packed = arity == 1 or me.spec is not None
        if packed:  # value sort of the keys; the columns are unpacked from them
            res = S.unique_keys(be, keys, return_counts, overwrite=arity > 1)
            uk, cnt = res if return_counts else (res, None)
            first = None
        elif return_counts:
            from gpu_engine.kernels.group import group_count

            uk, first, cnt = group_count(be, keys)
        else:
            uk, first = S.sort_unique(be, keys)
            cnt = None
        new = ~S.isin_sorted(be, uk, me.keys)
        dk = uk[new]
        if first is None:
            dcols = (dk,) if arity == 1 else K.unpack(be, dk, me.spec)
        else:
            dcols = S.take_rows(cols, first[new])
        delta = RowSet(be, dcols, dk, me.spec, len(dk))
        if len(dk) == 0:
            union = me
        else:
            mk, mcols = S.merge_disjoint(be, me.keys, me.cols, dk, dcols)
            union = RowSet(be, mcols, mk, me.spec, len(mk))
        if not return_counts:
            return union, delta, None
        pos_old = S.merge_positions(be, me.keys, dk)[0] if len(dk) else None
        return union, delta, (pos_old, xp.searchsorted(union.keys, uk), cnt)

    def union(self, other: RowSet) -> tuple[RowSet, RowSet]:
        """``self ∪ other`` and the rows of other that were new."""
        u, d, _ = self.add(other.cols, n_rows=other.n)
        return u, d

    def minus(self, other: RowSet) -> RowSet:
        """Rows of self not in other."""
        if self.arity == 0:
            return self if (self.n and not other.n) else RowSet.empty(self.be, 0)
        if self.n == 0 or other.n == 0:
            return self
        a, b = K.joint_keys(self.be, self.cols, other.cols) if self.arity > 1 else (
            self.cols[0], other.cols[0])
        keep = ~S.isin_sorted(self.be, a, b)
        cols = S.take_rows(self.cols, keep)
        return RowSet(self.be, cols, self.keys[keep], self.spec, len(cols[0]))

    def contains(self, cols: tuple[Any, ...], rows_sorted: bool = False,
                 ranges: tuple[list[int], list[int]] | None = None) -> Any:
        """Mask: which of the given rows are in this set (``rows_sorted``: the rows come
        in lexicographic order, which allows a linear merge; ``ranges``: the columns'
        :func:`kernels.keys.column_ranges`, when the caller has them)."""
        xp = self.be.xp
        n = len(cols[0]) if cols else 0
        if self.arity == 0:
            return xp.full(n, bool(self.n), dtype=bool)
        if self.n == 0 or n == 0:
            return xp.zeros(n, dtype=bool)
        if self.arity == 1:
            return self._isin(cols[0], rows_sorted)
        if self.spec is not None:
            if small.use(self.be, n):
                return small.contains_packed(cols, self.spec, self.keys, self._fence())
            if self.spec.covers(*(ranges or K.column_ranges(self.be, cols))):
                # packing with a covering layout keeps sorted rows sorted
                return S.isin_sorted(self.be, K.pack(self.be, cols, self.spec), self.keys,
                                     rows_sorted)
            # rows outside the layout's ranges cannot be members: test the others only
            fits = xp.ones(n, dtype=bool)
            for c, off, w in zip(cols, self.spec.offsets, self.spec.widths):
                fits &= (c >= off) & (c - off >= 0) & (c - off < (1 << w))
            idx = xp.flatnonzero(fits)
            out = xp.zeros(n, dtype=bool)
            if len(idx):
                sub = tuple(c[idx] for c in cols)
                out[idx] = S.isin_sorted(self.be, K.pack(self.be, sub, self.spec), self.keys,
                                         rows_sorted)
            return out
        a, b = K.joint_keys(self.be, cols, self.cols)
        return S.isin_sorted(self.be, a, b)

    def has(self, rows: RowSet) -> Any:
        """Mask over ``rows`` (a row set of the same arity): which are in this set."""
        if self.arity == 0:
            return self.be.xp.full(len(rows), bool(self.n), dtype=bool)
        if self.arity > 1 and self.n and self.spec is not None and rows.spec is not None:
            # packed on both sides: re-key rows' keys (no columns needed); rows outside
            # this layout get key -1 and match nothing
            return self._isin(self._probe_keys(rows), True)
        return self.contains(rows.cols, rows_sorted=True)

    def has_value(self, pos: int, value: int) -> bool:
        """Whether some row has ``value`` in column ``pos`` (the column's distinct values
        are cached per run: routing a small delta to the rules it can match)."""
        key = ("values", pos)
        vals = self._indexes.get(key)
        if vals is None:
            vals = S.unique_keys(self.be, self.cols[pos])
            if len(vals) <= VALUE_SET:  # a delta is asked once per atom reading it
                vals = frozenset(self.be.to_host(vals).tolist())
            self._indexes[key] = vals
        if isinstance(vals, frozenset):
            return value in vals
        if len(vals) == 0:
            return False
        at = int(self.be.xp.searchsorted(vals, value))
        return at < len(vals) and int(vals[at]) == value

    def first_column_range(self) -> tuple[int, int]:
        """(min, max) of the first column as host ints (rows are sorted; cached)."""
        rng = self._indexes.get("range")
        if rng is None:
            ends = self.be.xp.asarray([0, self.n - 1])
            if self.cols_ is None and self.spec is not None:
                c = K.unpack(self.be, self.keys[ends], self.spec)[0]
            else:
                c = self.cols[0][ends]
            rng = tuple(int(v) for v in self.be.to_host(c))
            self._indexes["range"] = rng
        return rng

    def positions(self, cols: tuple[Any, ...]) -> Any:
        """Row positions of the given rows, all of which must be in this set."""
        xp = self.be.xp
        n = len(cols[0]) if cols else (1 if self.n else 0)
        if self.arity == 0 or n == 0:  # (no rows: no joint layout, no pass over this set)
            return xp.zeros(n, dtype=INDEX)
        if self.arity == 1:
            return self._search(cols[0])
        if self.spec is not None and self.spec.covers(*K.column_ranges(self.be, cols)):
            return self._search(K.pack(self.be, cols, self.spec))
        a, b = K.joint_keys(self.be, cols, self.cols)
        return S.search(self.be, b, a)

    def positions_of(self, rows: RowSet) -> Any:
        """Row positions of ``rows`` (a row set, all of whose rows are in this set):
        packed on both sides, the keys are re-keyed instead of packing columns."""
        if self.arity > 1 and self.spec is not None and rows.spec is not None and len(rows):
            return self._search(self._probe_keys(rows))
        return self.positions(rows.cols)

    def _probe_keys(self, rows: RowSet) -> Any:
        """The keys of ``rows`` (packed too) in this set's layout, -1 for rows outside it:
        their own keys when the layouts agree, else packed again (from their columns when
        they have them: one pass instead of unpacking the keys first)."""
        if rows.spec == self.spec:
            return rows.keys
        if rows.cols_ is not None and small.use(self.be, rows.n):
            return K.pack_probe(self.be, rows.cols_, self.spec)
        return K.repack_probe(self.be, rows.keys, rows.spec, self.spec)

    # --- searches of the keys (few queries on the CPU: through a fence) ------------------

    def _fence(self) -> Any:
        """Every ``FENCE_STEP``-th key (``kernels.cpu_small``; cached; none when small)."""
        f = self._indexes.get("fence")
        if f is None:
            f = self._indexes["fence"] = small.fence_of(self.keys)
        return f

    def rank_bitmap(self, queries: int) -> Any | None:
        """A large run of one column's rank bitmap (``kernels.cpu_small``: a bit per id
        and each word's first rank; cached), for ``queries`` look-ups by a caller that
        takes the compiled kernels; None: a small or sparse run, negative values, or a
        run that has not yet served a :data:`RANK_RENT`-th of its size in look-ups
        (building the bitmap reads the run once, about what that many searches through
        the fence cost): a run made by a round of a materialisation and probed once is
        searched, a committed run that small updates probe again and again gets its
        bitmap (ski rental)."""
        got = self._indexes.get("rank")
        if got is None:
            if not (self.arity == 1 and self.n >= small.FENCE_MIN):
                self._indexes["rank"] = False
                return None
            asked = self._indexes.get("rank_asked", 0) + queries
            if asked * RANK_RENT < self.n:
                self._indexes["rank_asked"] = asked
                return None
            got = small.rank_bitmap(self.keys)
            self._indexes["rank"] = False if got is None else got
        return None if got is False else got

    def _search(self, queries: Any) -> Any:
        """Positions of ``queries`` (keys of rows of this set) in :attr:`keys`."""
        if small.use(self.be, len(queries)):  # (a compiled loop: a small run, too)
            if self.arity == 1 and (rank := self.rank_bitmap(len(queries))) is not None:
                return small.rank_search(queries, rank, self.n)
            return small.search(queries, self.keys, self._fence())
        return S.search(self.be, self.keys, queries)

    def _isin(self, queries: Any, queries_sorted: bool = False) -> Any:
        """Mask: which ``queries`` occur in :attr:`keys`."""
        if len(queries) and small.use(self.be, len(queries)):
            if self.arity == 1 and (rank := self.rank_bitmap(len(queries))) is not None:
                return small.rank_isin(queries, rank)
            return small.isin(queries, self.keys, self._fence())
        return S.isin_sorted(self.be, queries, self.keys, queries_sorted)

    def _covering(self, cols: tuple[Any, ...]) -> RowSet:
        """This set re-keyed, if needed, so that its spec also covers ``cols``."""
        if self.arity == 1:
            return self
        mins, maxs = K.column_ranges(self.be, cols)
        if self.spec is not None and self.spec.covers(mins, maxs):
            return self
        if self.n:
            smin, smax = K.column_ranges(self.be, self.cols)
            mins = [min(a, b) for a, b in zip(mins, smin)]
            maxs = [max(a, b) for a, b in zip(maxs, smax)]
        spec = K.make_spec(mins, maxs, headroom=1)
        if spec is None:
            return RowSet(self.be, self.cols, self.keys, None, self.n)  # ranked path
        if self.cols_ is None and self.spec is not None:  # re-key without unpacking twice
            return RowSet(self.be, None, K.pack(self.be, self.cols, spec), spec, self.n)
        return RowSet(self.be, self.cols, K.pack(self.be, self.cols, spec), spec, self.n)

    # --- join indexes ---------------------------------------------------------------

    def index(self, key_pos: tuple[int, ...], consts: tuple[tuple[int, int], ...] = (),
              equal: tuple[tuple[int, int], ...] = ()) -> JoinIndex:
        """Rows with ``col[p] == v`` for consts and ``col[i] == col[j]`` for ``equal``,
        sorted by the columns ``key_pos`` (cached per version)."""
        ck = (key_pos, consts, equal)
        hit = self._indexes.get(ck)
        if hit is not None:
            return hit
        be, xp = self.be, self.be.xp
        rows = None
        if consts or equal:
            mask = xp.ones(self.n, dtype=bool)
            for p, v in consts:
                mask &= self.cols[p] == v
            for i, j in equal:
                mask &= self.cols[i] == self.cols[j]
            rows = xp.flatnonzero(mask).astype(INDEX)
        kcols = [c if rows is None else c[rows] for c in (self.cols[p] for p in key_pos)]
        nsel = self.n if rows is None else len(rows)
        if not key_pos:
            idx = JoinIndex(xp.zeros(nsel, dtype=INDEX),
                            rows if rows is not None else xp.arange(nsel, dtype=INDEX), None)
        elif key_pos == tuple(range(len(key_pos))) and self.spec is not None:
            # a prefix of the columns: the rows' keys, shifted, are its key in order (no
            # pass over the columns for their ranges, no packing)
            keys = self.keys if rows is None else self.keys[rows]
            shift = self.spec.shifts[len(key_pos) - 1]
            idx = JoinIndex(keys >> shift if shift else keys,
                            rows if rows is not None else xp.arange(nsel, dtype=INDEX),
                            self.spec.prefix(len(key_pos)))
        else:
            mins, maxs = K.column_ranges(be, kcols)
            spec = K.make_spec(mins, maxs)
            if spec is None:  # general path: the index keeps its key columns, ranked
                order = S.argsort_keys(be, K.rank_rows(be, kcols))
                base = rows if rows is not None else xp.arange(nsel, dtype=INDEX)
                idx = JoinIndex(None, base[order], None, tuple(c[order] for c in kcols))
                self._indexes[ck] = idx
                return idx
            kk = K.pack(be, kcols, spec)
            prefix = key_pos == tuple(range(len(key_pos)))
            if prefix:  # lexicographic order of the rows already sorts the prefix key
                order = None
            else:
                kk, order = S.sort_with_order(be, kk)
            base = rows if rows is not None else xp.arange(nsel, dtype=INDEX)
            idx = JoinIndex(kk, base if order is None else base[order], spec)
        self._indexes[ck] = idx
        return idx

    def index_for(self, key_pos: tuple[int, ...], consts: tuple[tuple[int, int], ...],
                  equal: tuple[tuple[int, int], ...], probe_cols: list[Any], n_probe: int
                  ) -> JoinIndex:
        """The join index :meth:`index` gives, or, for a few probe rows (at most
        :data:`SCAN_PROBES`) on one later column of a large run whose index is not built,
        an index of the rows holding the probed values only, found by a scan of the
        column: sorting the column costs a scan times its log, and a small update often
        probes it a few times only.  The scans are counted on the run; once they have
        read it :data:`SCAN_BUDGET` times, the full index is built and kept (ski rental:
        at most about twice the cost of building it at once)."""
        ck = (key_pos, consts, equal)
        hit = self._indexes.get(ck)
        if hit is not None:
            return hit
        if (len(key_pos) != 1 or key_pos == (0,) or consts or equal or n_probe > SCAN_PROBES
                or self.n < SCAN_ROWS or self.be.is_gpu):
            return self.index(key_pos, consts, equal)
        p = key_pos[0]
        if not self._scan_instead(p):
            return self.index(key_pos, consts, equal)
        be, xp = self.be, self.be.xp
        vals = S.unique_keys(be, probe_cols[0])
        spec = K.make_spec([int(vals[0])], [int(vals[-1])]) if len(vals) else None
        if spec is None:
            return self.index(key_pos, consts, equal)
        lo, hi = int(vals[0]), int(vals[-1])
        if lo >= 0 and not self._may_hold(p, vals):
            rows = xp.zeros(0, dtype=INDEX)
        elif hi - lo < 4 * self.n:  # a flag over the probed values' range
            flag = xp.zeros(hi - lo + 1, dtype=bool)
            flag[vals - lo] = True
            rows = self._read_flagged(p, flag, lo)
        else:
            rows = xp.flatnonzero(S.isin_sorted(be, self.cols[p], vals)).astype(INDEX)
            if not len(rows):
                self._indexes[("missed", p)] = True
        kk, order = S.sort_with_order(be, K.pack(be, [self.cols[p][rows]], spec))
        return JoinIndex(kk, rows[order], spec)

    def _read_flagged(self, p: int, flag: Any, lo: int = 0) -> Any:
        """Sorted positions of the rows whose column ``p`` holds a value ``v`` with
        ``flag[v - lo]``, by one read of the column; a read that finds none is noted,
        so that the column's bitset is built at the next look-up (:meth:`_may_hold`)."""
        xp, col = self.be.xp, self.cols[p]
        if small.on(self.be):  # one compiled pass
            got = small.flagged(col, flag, lo)
        else:
            top = len(flag) - 1
            d = xp.clip(col - lo, 0, top)
            got = xp.flatnonzero(flag[d] & (col >= lo) & (col <= lo + top)).astype(INDEX)
        if not len(got):
            self._indexes[("missed", p)] = True
        return got


SCAN_PROBES = 64  # index_for: at most this many probe rows ...
SCAN_ROWS = 1 << 16  # ... into a run of at least this many rows scan its column ...
SCAN_BUDGET = 8  # ... until the scans have read the run this many times

VALUE_SET = 1 << 12  # has_value keeps up to this many distinct values as a Python set
RANK_RENT = 64  # a run's rank bitmap is built once it has served a 64th of its size in look-ups
BITS_ROWS = 4096  # runs from this size keep a bitset per column looked up by few values
BITS_VALUES = 64  # ... when at most this many values are looked for


def union_rows(be: Backend, arity: int, parts: list[RowSet | tuple[Any, ...]]) -> RowSet:
    """The union of row sets, or of column tuples (arity ≥ 1; duplicates allowed), as one
    sorted run; a single row set is returned as it is."""
    parts = [p for p in parts if (len(p) if isinstance(p, RowSet) else len(p[0]))]
    if not parts:
        return RowSet.empty(be, arity)
    if (len(parts) == 1 and isinstance(parts[0], RowSet)) or arity == 0:
        return parts[0]  # type: ignore[return-value]
    cols = [p.cols if isinstance(p, RowSet) else p for p in parts]
    return RowSet.from_columns(be, tuple(be.xp.concatenate([c[i] for c in cols])
                                         for i in range(arity)), arity)


def _spec_for(be: Backend, cols: tuple[Any, ...]) -> K.KeySpec | None:
    if len(cols) <= 1:
        return None
    mins, maxs = K.column_ranges(be, cols)
    return K.make_spec(mins, maxs, headroom=1)  # None: ranked path


def _keys_with(be: Backend, cols: tuple[Any, ...], spec: K.KeySpec | None) -> Any:
    if len(cols) == 1:
        return cols[0]
    assert spec is not None
    return K.pack(be, cols, spec)

"""The record table: Soufflé records and ADT values as ids of hash-consed tuples.

One id space for every arity: record ``i`` has ``arity[i]`` fields stored at
``values[offset[i] : offset[i] + arity[i]]``.  Id 0 is ``nil`` (no fields; reading a
field of it is invalid).  Ids are assigned in first-seen order and never change, so a
stored materialisation stays valid as the table grows (like the symbol dictionary).
Packing looks up the distinct tuples of a batch only (``np.unique`` over the rows), so
Python work is per distinct record, never per row.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa


class RecordTable:
    """Implements ``gpu_engine.ir.RecordTable`` (``pack``, ``field``)."""

    def __init__(self) -> None:
        self._index: dict[tuple[int, ...], int] = {}
        self._arity = np.full(16, -1, dtype=np.int64)  # id 0 (nil) has no fields
        self._offset = np.zeros(16, dtype=np.int64)
        self._values = np.zeros(64, dtype=np.int64)
        self._n = 1
        self._nvals = 0

    def __len__(self) -> int:
        return self._n

    # --- building ----------------------------------------------------------------------

    def _append(self, rows: list[tuple[int, ...]]) -> list[int]:
        start = self._n
        need = start + len(rows)
        if need > len(self._arity):
            cap = max(need, 2 * len(self._arity))
            self._arity = np.concatenate([self._arity, np.full(cap - len(self._arity), -1,
                                                               dtype=np.int64)])
            self._offset = np.concatenate([self._offset,
                                           np.zeros(cap - len(self._offset), dtype=np.int64)])
        flat = [v for r in rows for v in r]
        nv = self._nvals + len(flat)
        if nv > len(self._values):
            cap = max(nv, 2 * len(self._values))
            self._values = np.concatenate([self._values,
                                           np.zeros(cap - len(self._values), dtype=np.int64)])
        arities = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        self._arity[start:need] = arities
        self._offset[start:need] = self._nvals + np.concatenate(
            [[0], np.cumsum(arities)[:-1]]).astype(np.int64)
        self._values[self._nvals:nv] = np.asarray(flat, dtype=np.int64)
        self._nvals = nv
        ids = list(range(start, need))
        self._index.update(zip(rows, ids))
        self._n = need
        return ids

    def pack_one(self, row: tuple[int, ...]) -> int:
        """The id of one tuple (a new id when it is new)."""
        rid = self._index.get(row)
        return rid if rid is not None else self._append([row])[0]

    def pack(self, cols: list[np.ndarray], n: int) -> np.ndarray:
        """Ids of the rows of ``cols`` (host int64 columns of length ``n``)."""
        if n == 0:
            return np.zeros(0, dtype=np.int64)
        if not cols:
            return np.full(n, self.pack_one(()), dtype=np.int64)
        stacked = np.stack([np.asarray(c, dtype=np.int64) for c in cols], axis=1)
        uniq, inverse = np.unique(stacked, axis=0, return_inverse=True)
        rows = [tuple(r) for r in uniq.tolist()]
        ids = np.array([self._index.get(r, -1) for r in rows], dtype=np.int64)
        new = np.flatnonzero(ids < 0)
        if len(new):
            ids[new] = self._append([rows[k] for k in new.tolist()])
        return ids[inverse.reshape(-1)]

    # --- reading -----------------------------------------------------------------------

    def field(self, ids: np.ndarray, index: int) -> tuple[np.ndarray, np.ndarray]:
        """Field ``index`` of each record and a validity mask (false for nil, for ids
        outside the table and for records with fewer fields)."""
        ids = np.asarray(ids, dtype=np.int64)
        inside = (ids >= 0) & (ids < self._n)
        safe = np.where(inside, ids, 0)
        ok = inside & (self._arity[safe] > index)
        pos = np.where(ok, self._offset[safe] + index, 0)
        vals = self._values[pos] if self._nvals else np.zeros(len(ids), dtype=np.int64)
        return np.where(ok, vals, 0), ok

    def unpack(self, rid: int) -> tuple[int, ...]:
        """The fields of one record (``()`` for nil)."""
        a = int(self._arity[rid])
        o = int(self._offset[rid])
        return tuple(int(x) for x in self._values[o:o + a]) if a > 0 else ()

    def arity(self, ids: np.ndarray) -> np.ndarray:
        """Number of fields of each record (-1 for nil)."""
        return self._arity[np.asarray(ids, dtype=np.int64)]

    # --- persistence ---------------------------------------------------------------------

    def truncate(self, n: int) -> None:
        """Forget the records with ids ``n`` and above (those a failed update added)."""
        n = max(n, 1)
        if n >= self._n:
            return
        self._index = {r: i for r, i in self._index.items() if i < n}
        self._nvals = int(self._offset[n])
        self._arity[n:] = -1
        self._n = n

    def to_arrow(self) -> pa.Array:
        """Records 1.. as a list array (record ``i`` is element ``i - 1``)."""
        offsets = np.concatenate([self._offset[1:self._n], [self._nvals]]).astype(np.int32)
        return pa.ListArray.from_arrays(pa.array(offsets),
                                        pa.array(self._values[:self._nvals]))

    @classmethod
    def from_arrow(cls, arr: pa.Array | pa.ChunkedArray) -> RecordTable:
        """Restore a table saved with :meth:`to_arrow`."""
        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        table = cls()
        rows = [tuple(int(v) for v in r) for r in arr.to_pylist()]
        if len(set(rows)) != len(rows):
            raise ValueError("record table: contains duplicate records")
        if rows:
            table._append(rows)
        return table

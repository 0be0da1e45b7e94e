"""Symbol dictionary: strings <-> dense integer ids, encoded in bulk with Arrow kernels.

Bulk encoding dictionary-encodes the batch (Arrow, in C++), looks its distinct values up
with ``pyarrow.compute.index_in`` and appends the unseen ones, so no Python loop runs
over the rows.  Ids are assigned in first-seen order and never change, so a stored
materialisation stays valid as the dictionary grows.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .records import RecordTable


class SymbolTable:
    """The dictionary of one reasoner (implements ``gpu_engine.ir.SymbolTable``)."""

    def __init__(self) -> None:
        # symbol -> id of every symbol with an id below ``_indexed``; completed on the first
        # look-up of a single symbol it does not hold (:meth:`_lookup`), so that a batch
        # load that looks up no single symbol never builds a Python dict of every symbol
        # (LUBM(50): 1.1 M symbols, 1.2 s).  ``_known``: symbols above it that
        # :meth:`encode_few` looked up (a program's constants).
        self._index: dict[str, int] = {}
        self._known: dict[str, int] = {}
        self._indexed = 0
        self._n = 0  # symbols in the dictionary (ids 0 .. _n - 1)
        self._chunks: list[pa.Array] = []
        self._values: pa.Array | None = pa.array([], type=pa.string())
        self._order: np.ndarray | None = None
        self.records = RecordTable()  # records and ADT values (``ir.RecordTable``)
        self.word_size = 32  # width of number/unsigned/float values (gpu_engine.values)

    @classmethod
    def from_values(cls, values: pa.Array | pa.ChunkedArray) -> SymbolTable:
        """Restore a table saved with :meth:`values`: symbol ``values[i]`` gets id ``i``."""
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if pa.types.is_large_string(values.type):
            values = values.cast(pa.string())
        if values.type != pa.string():
            raise ValueError(f"symbol table: expected strings, got {values.type}")
        if values.null_count:
            raise ValueError("symbol table: contains nulls")
        if len(values) and pc.count_distinct(values).as_py() != len(values):
            raise ValueError("symbol table: contains duplicate symbols")
        table = cls()
        table._n = len(values)
        table._chunks = [values] if len(values) else []
        table._values = values
        return table

    def __len__(self) -> int:
        return self._n

    def _lookup(self) -> dict[str, int]:
        """The symbol -> id dict of every symbol (completed here with the symbols bulk
        encoding added since the last look-up)."""
        if self._indexed < self._n:
            rest = self.values()[self._indexed:self._n]
            self._index.update(zip(rest.to_pylist(), range(self._indexed, self._n)))
            self._indexed = self._n
            self._known.clear()
        return self._index

    def truncate(self, n: int) -> None:
        """Forget the symbols with ids ``n`` and above (those a failed update added)."""
        if n >= self._n:
            return
        chunks = self._chunks if self._values is None else [self._values]
        if self._indexed > n:  # O(removed), not O(dictionary): no copy of the kept symbols
            start = 0
            for c in chunks:
                if start + len(c) > n and start < self._indexed:
                    for s in c[max(0, n - start):self._indexed - start].to_pylist():
                        del self._index[s]
                start += len(c)
            self._indexed = n
        self._known = {k: i for k, i in self._known.items() if i < n}
        kept = (chunks[0][:n] if chunks and len(chunks[0]) >= n
                else pa.concat_arrays(chunks)[:n])
        self._chunks = [kept] if n else []
        self._values = kept
        self._n = n
        self._order = None

    # --- encoding -------------------------------------------------------------------

    def find(self, symbol: str) -> int | None:
        """The id of ``symbol``, or ``None`` when it is not in the dictionary (no insert;
        a miss leaves the look-up dict complete)."""
        sid = self._index.get(symbol)
        if sid is None:
            sid = self._known.get(symbol)
        return sid if sid is not None else self._lookup().get(symbol)

    def encode(self, symbol: str) -> int:
        sid = self.find(symbol)
        if sid is None:  # find completed the dict: the new symbol extends it
            sid = self._n
            self._index[symbol] = sid
            self._n = self._indexed = sid + 1
            self._chunks.append(pa.array([symbol], type=pa.string()))
            self._values = None
            self._order = None
        return sid

    def encode_many(self, symbols: Any) -> np.ndarray:
        """Encode a list, NumPy array or Arrow (chunked) array of strings."""
        arr = symbols
        if isinstance(arr, pa.ChunkedArray):
            if arr.type != pa.string() or arr.null_count:
                arr = arr.combine_chunks()  # (converted below)
            else:  # encoded chunk by chunk: no copy of the text into one array
                return self._encode_distinct(*_chunked_codes(arr))
        if not isinstance(arr, pa.Array):
            arr = pa.array(np.asarray(arr, dtype=object).tolist(), type=pa.string())
        if arr.type != pa.string():
            if pa.types.is_dictionary(arr.type):
                arr = arr.cast(pa.dictionary(arr.type.index_type, pa.string()))
            arr = arr.cast(pa.string()) if not pa.types.is_dictionary(arr.type) else arr
        if arr.null_count:
            raise ValueError("symbol column contains nulls")
        enc = arr if pa.types.is_dictionary(arr.type) else arr.dictionary_encode()
        return self._encode_distinct(
            enc.dictionary, enc.indices.to_numpy(zero_copy_only=False).astype(np.int64))

    def encode_few(self, symbols: list[str]) -> np.ndarray:
        """Encode a few symbols (a program's constants) without completing the look-up
        dict: when most of the dictionary is not in it, one pass over the symbols probes
        a hash of the few, and the dict remembers them."""
        enc = pa.array(symbols, type=pa.string()).dictionary_encode()
        return self._encode_distinct(
            enc.dictionary, enc.indices.to_numpy(zero_copy_only=False).astype(np.int64),
            scan=True)

    def _encode_distinct(self, uniq: pa.Array, indices: np.ndarray, scan: bool = False
                         ) -> np.ndarray:
        """The ids of ``uniq[indices]`` (``uniq``: distinct strings), giving the next ids
        to the strings not in the dictionary (``scan``: :meth:`encode_few`)."""
        ids = np.empty(len(uniq), dtype=np.int64)
        few = 8 * len(uniq) < self._n  # few values: dictionary look-ups beat hashing all
        scan = scan and few and self._n - self._indexed > 8 * len(uniq)
        if not self._n:
            new_mask = np.ones(len(uniq), dtype=bool)
        elif scan:  # completing the dict would cost more: a pass over the symbols that
            values = self.values()  # probes a hash of the few
            at = np.flatnonzero(pc.is_in(values, value_set=uniq).to_numpy(
                zero_copy_only=False))
            ids[:] = -1
            if len(at):
                which = pc.index_in(values.take(pa.array(at)), value_set=uniq)
                ids[which.to_numpy(zero_copy_only=False)] = at
            new_mask = ids < 0
        elif few:
            index = self._lookup()
            found = [index.get(v, -1) for v in uniq.to_pylist()]
            ids[:] = found
            new_mask = ids < 0
        else:
            known = pc.index_in(uniq, value_set=self.values())
            new_mask = known.is_null().to_numpy(zero_copy_only=False)
            ids[~new_mask] = known.filter(pc.invert(known.is_null())).to_numpy()
        new_vals = uniq.filter(pa.array(new_mask))
        if len(new_vals):
            start = self._n
            ids[new_mask] = np.arange(start, start + len(new_vals), dtype=np.int64)
            self._n += len(new_vals)  # the look-up dict learns them when next asked
            self._chunks.append(new_vals)
            self._values = None
            self._order = None
        if scan:  # remembered for single look-ups
            self._known.update(zip(uniq.to_pylist(), ids.tolist()))
        return ids[indices]

    # --- decoding -------------------------------------------------------------------

    def values(self) -> pa.Array:
        """All symbols in id order."""
        if self._values is None:
            self._values = (pa.concat_arrays(self._chunks) if self._chunks
                            else pa.array([], type=pa.string()))
            self._chunks = [self._values]
        return self._values

    def decode_arrow(self, ids: np.ndarray) -> pa.Array:
        return self.values().take(pa.array(np.asarray(ids, dtype=np.int64)))

    def decode_many(self, ids: np.ndarray) -> list[str]:
        return self.decode_arrow(ids).to_pylist()

    def order_pair(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Keys that order the symbols of ``a`` and ``b`` by their text, comparable with
        each other: the ranks among all symbols while they are known for this dictionary,
        else (a few rows against a large dictionary, which grew since) the ranks among the
        distinct symbols of ``a`` and ``b`` alone, so the comparison costs its rows."""
        a = np.asarray(a, dtype=np.int64)
        b = np.asarray(b, dtype=np.int64)
        known = self._order is not None and len(self._order) == self._n
        if known or (a.size + b.size) * 8 > self._n:
            return self.order_keys(a), self.order_keys(b)
        ids, inverse = np.unique(np.concatenate([a.ravel(), b.ravel()]), return_inverse=True)
        order = pc.sort_indices(self.decode_arrow(ids)).to_numpy()
        rank = np.empty(len(ids), dtype=np.int64)
        rank[order] = np.arange(len(ids), dtype=np.int64)
        keys = rank[inverse.ravel()]
        return keys[:a.size].reshape(a.shape), keys[a.size:].reshape(b.shape)

    def order_keys(self, ids: np.ndarray) -> np.ndarray:
        """Rank of each symbol in the lexicographic order of all symbols."""
        if self._order is None or len(self._order) != self._n:
            order = pc.sort_indices(self.values()).to_numpy()
            rank = np.empty(len(order), dtype=np.int64)
            rank[order] = np.arange(len(order), dtype=np.int64)
            self._order = rank
        return self._order[np.asarray(ids, dtype=np.int64)]


def _chunked_codes(arr: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray]:
    """The distinct strings of a chunked string array and, per row, the index of its
    string among them (one int64 array).  Arrow's encoding of a chunked array gives every
    chunk the dictionary of the whole array; chunks that differ are unified first."""
    enc = pc.dictionary_encode(arr)
    if not enc.num_chunks:
        return pa.array([], type=pa.string()), np.zeros(0, dtype=np.int64)
    size = len(enc.chunk(enc.num_chunks - 1).dictionary)
    if any(len(c.dictionary) != size for c in enc.chunks):
        enc = enc.unify_dictionaries()
    parts = [c.indices.to_numpy(zero_copy_only=False) for c in enc.chunks]
    return enc.chunk(0).dictionary, np.concatenate(parts).astype(np.int64, copy=False)

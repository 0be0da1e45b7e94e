"""Arguments for Numba kernels that take a tuple of columns.

Numba types a tuple of arrays by its members: a tuple that mixes a read-only array (a
zero-copy view of an Arrow buffer, a user's read-only array) with writable ones, or a
strided column of a 2-D array with contiguous ones, is heterogeneous, and a kernel that
indexes it with a loop variable fails to compile for it.  :func:`column_tuple` makes the
members one type: contiguous int64, all read-only views when any is read-only (a view's
flag costs no copy; the kernels only read the columns).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

_INT64 = np.dtype(np.int64)


def column_tuple(cols: Iterable[Any]) -> tuple[np.ndarray, ...]:
    """The columns as arrays of one Numba type (see the module docstring); the columns
    themselves when they are already (contiguous int64, all writable or all not)."""
    out = tuple(cols)
    if not out:
        return out
    writable = out[0].flags.writeable
    for c in out:
        f = c.flags
        if c.dtype != _INT64 or not f.c_contiguous or f.writeable != writable:
            return _uniform(out)
    return out


def _uniform(cols: tuple[Any, ...]) -> tuple[np.ndarray, ...]:
    out = tuple(np.ascontiguousarray(c, dtype=np.int64) for c in cols)
    if len({c.flags.writeable for c in out}) > 1:
        views = []
        for c in out:
            v = c.view()
            v.flags.writeable = False
            views.append(v)
        out = tuple(views)
    return out

"""The parts of ``cupyx`` the engine uses, for the CuPy stand-in (``tests/cupy_standin``)."""
import cupy as _cp
import numpy as _np


def scatter_add(a, slices, value):
    if not isinstance(a, _cp.ndarray):
        raise TypeError("cupy stand-in: scatter_add on non-cupy")
    if isinstance(value, _np.ndarray):
        raise TypeError("cupy stand-in: scatter_add numpy value")
    v = value._a if isinstance(value, _cp.ndarray) else value
    _np.add.at(a._a, _cp._unwrap_index(slices), v)


def scatter_max(a, slices, value):
    v = value._a if isinstance(value, _cp.ndarray) else value
    _np.maximum.at(a._a, _cp._unwrap_index(slices), v)


def scatter_min(a, slices, value):
    v = value._a if isinstance(value, _cp.ndarray) else value
    _np.minimum.at(a._a, _cp._unwrap_index(slices), v)

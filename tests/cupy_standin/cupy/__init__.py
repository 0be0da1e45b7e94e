"""A strict stand-in for CuPy, for checking the GPU path on a machine without a GPU
(``make gpu-standin-test``; written for this project).

NumPy computes underneath, but device arrays are their own type (:class:`ndarray`) that
behaves as ``cupy.ndarray`` does where the engine could go wrong: no implicit conversion
to NumPy (``np.asarray`` of a device array raises), NumPy arrays refused where CuPy refuses
them (operators, functions, ``concatenate`` of mixed lists), and the restrictions of CuPy
14.0 the engine has met: ``repeat`` with an array of repeats, ``bincount`` of an empty
array, ``lexsort`` of 1-D keys, ``ufunc.at``/``accumulate``/``reduceat`` beyond
``add``/``multiply``, sort kinds other than stable (CuPy's sorts are stable); float
arithmetic returns the GPU's one positive NaN (``_canonical_nan``).  It proves
nothing about speed, kernels or memory; real CuPy on a GPU remains the judge
(``make gpu-test``).  ``CUPY_STANDIN_LOG=FILE`` appends every refusal and warning with
the engine's frame that caused it.
"""
from __future__ import annotations

import builtins
import os
import sys
import traceback
import types

import numpy as _np

_LOG = os.environ.get("CUPY_STANDIN_LOG")


def _log(kind, msg):
    if not _LOG:
        return
    # record the first frame in the project for each event
    st = traceback.extract_stack()[:-2]
    where = "?"
    for fr in reversed(st):
        if ("/gpu_engine/" in fr.filename or "/kernels/" in fr.filename) and "cupy_standin" not in fr.filename:
            where = f"{fr.filename}:{fr.lineno}: {fr.line}"
            break
    with open(_LOG, "a") as f:
        f.write(f"{kind}\t{where}\t{msg}\n")


def _err(exc_type, msg):
    _log("ERROR", msg)
    return exc_type("cupy stand-in: " + msg)


_scalar_types = (int, float, bool, complex, _np.generic)


class ndarray:
    __slots__ = ("_a", "__weakref__")
    __array_priority__ = 100
    __hash__ = None  # cupy.ndarray is unhashable

    def __init__(self, a):
        if isinstance(a, ndarray):
            a = a._a
        if not isinstance(a, _np.ndarray):
            a = _np.asarray(a)
        self._a = a

    # ---- host conversion
    def __array__(self, *a, **k):
        raise _err(TypeError, "Implicit conversion to a NumPy array is not allowed")

    @property
    def __cuda_array_interface__(self):
        return {"shape": self._a.shape}

    def get(self, stream=None, order="C", out=None):
        return self._a.copy()

    def item(self):
        return self._a.item()

    def tolist(self):
        return self._a.tolist()

    def __int__(self):
        return int(self._a)

    def __float__(self):
        return float(self._a)

    def __bool__(self):
        return builtins.bool(self._a)

    def __index__(self):
        _log("WARN", "__index__ on a device array (not in CuPy <= 13; sync)")
        return self._a.__index__()

    def __iter__(self):
        if self._a.ndim == 0:
            raise TypeError("iteration over a 0-d array")
        _log("WARN", "iteration over a device array (yields 0-d device arrays)")
        return (ndarray(_np.asarray(self._a[i])) for i in range(len(self._a)))

    def __len__(self):
        return len(self._a)

    def __repr__(self):
        return "cupy_standin." + repr(self._a)

    def __str__(self):
        return str(self._a)

    def __format__(self, spec):
        return format(self._a, spec)

    def __contains__(self, x):
        raise _err(NotImplementedError, "__contains__ is not implemented in CuPy")

    # ---- attributes
    shape = property(lambda s: s._a.shape)
    dtype = property(lambda s: s._a.dtype)
    ndim = property(lambda s: s._a.ndim)
    size = property(lambda s: s._a.size)
    nbytes = property(lambda s: s._a.nbytes)
    itemsize = property(lambda s: s._a.itemsize)
    strides = property(lambda s: s._a.strides)
    flags = property(lambda s: s._a.flags)
    T = property(lambda s: ndarray(s._a.T))
    base = property(lambda s: s._a.base)
    real = property(lambda s: ndarray(s._a.real))

    @property
    def data(self):
        return self._a.ctypes.data

    # ---- indexing
    def __getitem__(self, key):
        key = _unwrap_index(key)
        r = self._a[key]
        return ndarray(_np.asarray(r)) if not isinstance(r, _np.ndarray) else ndarray(r)

    def __setitem__(self, key, value):
        key = _unwrap_index(key)
        if isinstance(value, ndarray):
            value = value._a
        elif isinstance(value, (list, tuple)):
            value = _unwrap_seq_value(value)
        self._a[key] = value

    # ---- methods
    def astype(self, dtype, copy=True, **k):
        return ndarray(self._a.astype(dtype, copy=copy))

    def view(self, dtype=None):
        return ndarray(self._a.view(dtype) if dtype is not None else self._a.view())

    def copy(self, order="C"):
        return ndarray(self._a.copy(order=order))

    def ravel(self, order="C"):
        return ndarray(self._a.ravel(order))

    def flatten(self):
        return ndarray(self._a.flatten())

    def reshape(self, *shape, **k):
        return ndarray(self._a.reshape(*shape, **k))

    def fill(self, v):
        if isinstance(v, _np.ndarray):
            raise _err(TypeError, "fill with numpy array")
        self._a.fill(v._a if isinstance(v, ndarray) else v)

    def sort(self, axis=-1, kind=None):
        if kind not in (None, "stable"):
            raise _err(ValueError, f"sort kind={kind!r} unsupported")
        self._a.sort(axis=axis, kind="stable")

    def argsort(self, axis=-1, kind=None):
        if kind not in (None, "stable"):
            raise _err(ValueError, f"argsort kind={kind!r} unsupported")
        return ndarray(self._a.argsort(axis=axis, kind="stable"))

    def nonzero(self):
        return tuple(ndarray(x) for x in self._a.nonzero())

    def transpose(self, *a):
        return ndarray(self._a.transpose(*a))

    def squeeze(self, axis=None):
        return ndarray(self._a.squeeze(axis))

    def repeat(self, repeats, axis=None):
        if isinstance(repeats, _np.ndarray):
            raise _err(TypeError, "repeat with numpy repeats")
        if isinstance(repeats, ndarray):
            raise _err(ValueError, "cupy repeat: repeats must be int/list, not a cupy array")
        return ndarray(self._a.repeat(repeats, axis))

    def take(self, idx, axis=None):
        return ndarray(self._a.take(_unwrap_index(idx), axis))

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    def __reduce__(self):
        return (ndarray, (self._a,))


def _reduction(name):
    def meth(self, *args, **kw):
        args = tuple(_check(a, name) for a in args)
        kw = {k: _check(v, name) for k, v in kw.items()}
        r = getattr(self._a, name)(*args, **kw)
        return _wrap(r, force_array=True)
    return meth


for _n in ("sum", "min", "max", "any", "all", "argmax", "argmin", "cumsum", "mean",
           "prod", "clip", "dot", "std", "var", "round", "conj", "trace", "diagonal",
           "swapaxes", "searchsorted"):
    setattr(ndarray, _n, _reduction(_n))


def _unwrap_index(key):
    if isinstance(key, ndarray):
        return key._a
    if isinstance(key, tuple):
        return tuple(_unwrap_index(k) for k in key)
    return key  # numpy arrays and lists are accepted by CuPy (copied to the device)


def _unwrap_seq_value(v):
    out = []
    for x in v:
        if isinstance(x, ndarray):
            out.append(x._a)
        elif isinstance(x, (list, tuple)):
            out.append(_unwrap_seq_value(x))
        else:
            out.append(x)
    return out


def _check(a, fname):
    """An argument of a CuPy function or kernel: device arrays and scalars only."""
    if isinstance(a, ndarray):
        return a._a
    if isinstance(a, _np.ndarray):
        raise _err(TypeError, f"Unsupported type <class 'numpy.ndarray'> in cupy.{fname}")
    if isinstance(a, (list, tuple)):
        return type(a)(_check(x, fname) for x in a)
    return a


# A GPU's float arithmetic returns one canonical NaN, positive, whatever its operands (CUDA:
# 0x7fffffff / 0x7fffffffffffffff), where x86 keeps an operand's NaN or gives a negative one
# (the H200 printed "nan" for 0.0 / 0.0 where Soufflé prints "-nan"); selections, copies
# and conversions keep the bits
_ARITH = {"add", "subtract", "multiply", "true_divide", "divide", "floor_divide", "remainder",
          "fmod", "power", "float_power", "sqrt", "exp", "log"}
_CANON = {4: (_np.int32, 0x7FFFFFFF), 8: (_np.int64, 0x7FFFFFFFFFFFFFFF)}


def _canonical_nan(r):
    if isinstance(r, _np.ndarray) and r.dtype.kind == "f" and r.dtype.itemsize in _CANON:
        nan = _np.isnan(r)
        if nan.any():
            r = r.copy()
            t, bits = _CANON[r.dtype.itemsize]
            r.view(t)[nan] = bits
    elif isinstance(r, _np.floating) and _np.isnan(r):
        return _canonical_nan(_np.asarray(r))[()]
    return r


def _wrap(r, force_array=False):
    if isinstance(r, _np.ndarray):
        return ndarray(r)
    if isinstance(r, tuple):
        return tuple(_wrap(x, force_array) for x in r)
    if isinstance(r, list):
        return [_wrap(x, force_array) for x in r]
    if isinstance(r, (_np.generic, int, float)) and force_array:
        return ndarray(_np.asarray(r))
    return r


# ---- operators via ufuncs
def _binop(ufunc, reflected=False):
    def op(self, other):
        if isinstance(other, _np.ndarray):
            if other.ndim == 0 and ufunc.__name__ in ("greater", "greater_equal", "less",
                                                      "less_equal", "equal", "not_equal"):
                other = other.item()
            else:
                raise _err(TypeError, f"Unsupported type <class 'numpy.ndarray'> in operator {ufunc.__name__}")
        if isinstance(other, (list, tuple)):
            raise _err(TypeError, f"Unsupported type {type(other)} in operator {ufunc.__name__}")
        if not isinstance(other, (ndarray,) + _scalar_types):
            return NotImplemented
        o = other._a if isinstance(other, ndarray) else other
        r = ufunc(o, self._a) if reflected else ufunc(self._a, o)
        return _wrap(_canonical_nan(r) if ufunc.__name__ in _ARITH else r, True)
    return op


def _iop(ufunc):
    def op(self, other):
        if isinstance(other, _np.ndarray):
            raise _err(TypeError, f"Unsupported type <class 'numpy.ndarray'> in inplace {ufunc.__name__}")
        o = other._a if isinstance(other, ndarray) else other
        ufunc(self._a, o, out=self._a)
        if ufunc.__name__ in _ARITH:
            self._a[...] = _canonical_nan(self._a)
        return self
    return op


for _name, _uf in [("add", _np.add), ("sub", _np.subtract), ("mul", _np.multiply),
                   ("truediv", _np.true_divide), ("floordiv", _np.floor_divide),
                   ("mod", _np.remainder), ("pow", _np.power), ("and", _np.bitwise_and),
                   ("or", _np.bitwise_or), ("xor", _np.bitwise_xor),
                   ("lshift", _np.left_shift), ("rshift", _np.right_shift)]:
    setattr(ndarray, f"__{_name}__", _binop(_uf))
    setattr(ndarray, f"__r{_name}__", _binop(_uf, True))
    setattr(ndarray, f"__i{_name}__", _iop(_uf))
for _name, _uf in [("lt", _np.less), ("le", _np.less_equal), ("gt", _np.greater),
                   ("ge", _np.greater_equal), ("eq", _np.equal), ("ne", _np.not_equal)]:
    setattr(ndarray, f"__{_name}__", _binop(_uf))
ndarray.__neg__ = lambda s: ndarray(-s._a)
ndarray.__invert__ = lambda s: ndarray(~s._a)
ndarray.__abs__ = lambda s: ndarray(abs(s._a))
ndarray.__pos__ = lambda s: s


def _array_ufunc(self, ufunc, method, *inputs, **kwargs):
    name = ufunc.__name__
    if method != "__call__":
        return NotImplemented
    mod = sys.modules[__name__]
    cf = getattr(mod, name, None)
    if cf is None:
        return NotImplemented
    return cf(*inputs, **kwargs)


def _array_function(self, func, types_, args, kwargs):
    mod = sys.modules[__name__]
    cf = getattr(mod, func.__name__, None)
    if cf is None or func.__module__ not in ("numpy",):
        _log("ERROR", f"numpy.{func.__name__} on a device array: no cupy equivalent here")
        return NotImplemented
    _log("INFO", f"numpy.{func.__name__} dispatched to cupy via __array_function__")
    return cf(*args, **kwargs)


ndarray.__array_ufunc__ = _array_ufunc
ndarray.__array_function__ = _array_function


# ---- ufunc wrapper
class ufunc:
    def __init__(self, np_ufunc):
        self._u = np_ufunc
        self.__name__ = np_ufunc.__name__

    def __call__(self, *args, out=None, **kw):
        a = tuple(self._arg(x) for x in args)
        if out is not None:
            if not isinstance(out, ndarray):
                raise _err(TypeError, f"ufunc {self.__name__}: out must be a cupy array")
            self._u(*a, out=out._a, **kw)
            if self.__name__ in _ARITH:
                out._a[...] = _canonical_nan(out._a)
            return out
        r = self._u(*a, **kw)
        return _wrap(_canonical_nan(r) if self.__name__ in _ARITH else r, True)

    def _arg(self, x):
        if isinstance(x, ndarray):
            return x._a
        if isinstance(x, _np.ndarray):
            raise _err(TypeError, f"Unsupported type <class 'numpy.ndarray'> in cupy.{self.__name__}")
        if isinstance(x, (list, tuple)):
            raise _err(TypeError, f"Unsupported type {type(x)} in cupy.{self.__name__}")
        return x

    def at(self, a, indices, b=None):
        if self.__name__ not in ("add", "subtract", "maximum", "minimum", "bitwise_and",
                                 "bitwise_or", "bitwise_xor"):
            raise _err(NotImplementedError, f"cupy.{self.__name__}.at unsupported")
        if not isinstance(a, ndarray):
            raise _err(TypeError, f"{self.__name__}.at on non-cupy array")
        dt = a.dtype
        if self.__name__ in ("maximum", "minimum") and dt.char not in "iIlLqQefd":
            raise _err(TypeError, f"cupy.{self.__name__}.at dtype {dt} unsupported?")
        _log("INFO", f"cupy.{self.__name__}.at dtype={dt}")
        self._u.at(a._a, _unwrap_index(indices), self._arg(b) if b is not None else None)

    def reduce(self, a, axis=0, **kw):
        _log("INFO", f"cupy.{self.__name__}.reduce")
        return _wrap(self._u.reduce(self._arg(a), axis=axis, **kw), True)

    def accumulate(self, a, axis=0, **kw):
        _log("CHECK", f"cupy.{self.__name__}.accumulate used")
        return _wrap(self._u.accumulate(self._arg(a), axis=axis, **kw), True)

    def reduceat(self, a, indices, axis=0, **kw):
        _log("CHECK", f"cupy.{self.__name__}.reduceat used")
        return _wrap(self._u.reduceat(self._arg(a), self._arg(indices), axis=axis, **kw), True)

    def outer(self, a, b, **kw):
        return _wrap(self._u.outer(self._arg(a), self._arg(b), **kw), True)


_mod = sys.modules[__name__]
for _n in dir(_np):
    _o = getattr(_np, _n)
    if isinstance(_o, _np.ufunc):
        setattr(_mod, _n, ufunc(_o))

# dtypes and constants
for _n in ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64", "float16",
           "float32", "float64", "bool_", "intp", "uintp", "complex64", "complex128", "dtype",
           "iinfo", "finfo", "newaxis", "inf", "nan", "pi", "e", "integer", "floating",
           "signedinteger", "unsignedinteger", "number", "generic", "result_type",
           "can_cast", "issubdtype", "promote_types", "ndim", "isscalar", "int_", "float_",
           "byte", "ubyte", "short", "ushort", "intc", "uintc", "longlong", "ulonglong",
           "double", "single", "half"):
    if hasattr(_np, _n):
        setattr(_mod, _n, getattr(_np, _n))
bool = _np.bool_  # noqa: A001


# ---- creation
def asarray(a, dtype=None, order=None, **k):
    if isinstance(a, ndarray):
        return ndarray(_np.asarray(a._a, dtype=dtype))
    if isinstance(a, (list, tuple)):
        a = _unwrap_seq_value(a)
    return ndarray(_np.array(a, dtype=dtype, copy=True))


def array(a, dtype=None, copy=True, order="K", ndmin=0, **k):
    if isinstance(a, ndarray):
        return ndarray(_np.array(a._a, dtype=dtype, copy=copy, ndmin=ndmin))
    if isinstance(a, (list, tuple)):
        a = _unwrap_seq_value(a)
    return ndarray(_np.array(a, dtype=dtype, copy=True, ndmin=ndmin))


def ascontiguousarray(a, dtype=None):
    if isinstance(a, ndarray):
        return ndarray(_np.ascontiguousarray(a._a, dtype=dtype))
    return ndarray(_np.array(a, dtype=dtype, copy=True))


def asnumpy(a, stream=None, order="C", out=None):
    if isinstance(a, ndarray):
        return a._a.copy()
    return _np.asarray(a)


def _shape_arg(s, fname):
    if isinstance(s, ndarray):
        raise _err(TypeError, f"cupy.{fname}: shape given as a device array")
    if isinstance(s, _np.ndarray):
        raise _err(TypeError, f"cupy.{fname}: shape given as a numpy array")
    return s


def zeros(shape, dtype=float, order="C"):
    return ndarray(_np.zeros(_shape_arg(shape, "zeros"), dtype=dtype))


def ones(shape, dtype=float, order="C"):
    return ndarray(_np.ones(_shape_arg(shape, "ones"), dtype=dtype))


def empty(shape, dtype=float, order="C"):
    return ndarray(_np.empty(_shape_arg(shape, "empty"), dtype=dtype))


def full(shape, fill_value, dtype=None, order="C"):
    if isinstance(fill_value, _np.ndarray):
        raise _err(TypeError, "cupy.full: fill_value is a numpy array")
    if isinstance(fill_value, ndarray):
        fill_value = fill_value._a
        if dtype is None:
            dtype = fill_value.dtype
    if dtype is not None and _np.dtype(dtype) == object:
        raise _err(ValueError, "cupy.full dtype=object unsupported")
    return ndarray(_np.full(_shape_arg(shape, "full"), fill_value, dtype=dtype))


def zeros_like(a, dtype=None, **k):
    return ndarray(_np.zeros_like(_check(a, "zeros_like"), dtype=dtype))


def ones_like(a, dtype=None, **k):
    return ndarray(_np.ones_like(_check(a, "ones_like"), dtype=dtype))


def empty_like(a, dtype=None, **k):
    return ndarray(_np.empty_like(_check(a, "empty_like"), dtype=dtype))


def full_like(a, v, dtype=None, **k):
    return ndarray(_np.full_like(_check(a, "full_like"), _check(v, "full_like"), dtype=dtype))


def arange(start, stop=None, step=None, dtype=None):
    for x in (start, stop, step):
        if isinstance(x, (ndarray, _np.ndarray)):
            _log("WARN", "arange with an array bound")
    args = [int(x) if isinstance(x, ndarray) else x for x in (start, stop, step)]
    if args[1] is None:
        return ndarray(_np.arange(args[0], dtype=dtype))
    return ndarray(_np.arange(args[0], args[1], args[2] if args[2] is not None else 1, dtype=dtype))


# ---- generic functions
def _generic(name, extra_check=None):
    f = getattr(_np, name)

    def g(*args, **kw):
        if extra_check:
            extra_check(*args, **kw)
        if name in ("sort", "argsort") and kw.get("kind") is None:
            kw["kind"] = "stable"  # CuPy's sorts are stable
        a = tuple(_check(x, name) for x in args)
        k = {kk: _check(v, name) for kk, v in kw.items()}
        return _wrap(f(*a, **k), force_array=name in _ARRAY_RESULT)
    g.__name__ = name
    return g


_ARRAY_RESULT = {"count_nonzero", "sum", "amax", "amin", "max", "min", "any", "all", "argmax",
                 "argmin", "prod", "mean", "dot"}


def _seq_only_device(name):
    def chk(seq, *a, **k):
        if isinstance(seq, ndarray):
            return
        for x in seq:
            if not isinstance(x, ndarray):
                raise _err(TypeError, f"cupy.{name}: element of type {type(x).__name__}")
    return chk


def _chk_bincount(x, weights=None, minlength=None):
    if not isinstance(x, ndarray):
        raise _err(TypeError, "bincount of non-cupy")
    if x.size == 0:  # CuPy before PR #9951 takes cupy.max of the input first
        raise _err(ValueError, "zero-size array to reduction operation (bincount of an "
                               "empty array)")


def _chk_lexsort(keys, axis=-1):
    if not isinstance(keys, ndarray):
        raise _err(AttributeError, "cupy.lexsort needs a 2-D cupy array, not a sequence")
    if keys.ndim == 1:
        raise _err(ValueError, "cupy.lexsort of 1-D keys returns 0")
    if keys.ndim > 2:
        raise _err(NotImplementedError, "cupy.lexsort ndim>2")


def _chk_sort(a, axis=-1, kind=None, **k):
    if kind not in (None, "stable"):
        raise _err(ValueError, f"kind={kind!r}")


def _chk_unique(ar, return_index=False, return_inverse=False, return_counts=False,
                axis=None, **k):
    if axis is not None:
        _log("CHECK", f"cupy.unique axis={axis}")


def _chk_isin(element, test_elements, assume_unique=False, invert=False, **k):
    if not isinstance(element, ndarray) or not isinstance(test_elements, ndarray):
        raise _err(TypeError, f"cupy.isin arg types {type(element).__name__}, {type(test_elements).__name__}")
    if k:
        raise _err(TypeError, f"cupy.isin kwargs {k}")


def _chk_searchsorted(a, v, side="left", sorter=None):
    if not isinstance(a, ndarray):
        raise _err(TypeError, "searchsorted a non-cupy")
    if a.ndim != 1:
        raise _err(ValueError, "searchsorted on non-1-D")
    if not isinstance(v, (ndarray,) + _scalar_types):
        raise _err(TypeError, f"searchsorted v type {type(v).__name__}")


def _chk_repeat(a, repeats, axis=None):
    if isinstance(repeats, (ndarray, _np.ndarray)):
        raise _err(ValueError, "cupy.repeat: repeats must be an int or a list, not an array")


def _chk_packbits(a, axis=None, bitorder="big"):
    if a.dtype.kind not in "biu":
        raise _err(TypeError, "packbits dtype")


_SPECIAL = {
    "concatenate": _seq_only_device("concatenate"),
    "stack": _seq_only_device("stack"),
    "hstack": _seq_only_device("hstack"),
    "vstack": _seq_only_device("vstack"),
    "column_stack": _seq_only_device("column_stack"),
    "bincount": _chk_bincount,
    "lexsort": _chk_lexsort,
    "sort": _chk_sort,
    "argsort": _chk_sort,
    "unique": _chk_unique,
    "isin": _chk_isin,
    "in1d": _chk_isin,
    "searchsorted": _chk_searchsorted,
    "repeat": _chk_repeat,
    "packbits": _chk_packbits,
}

for _n in ("concatenate", "stack", "hstack", "vstack", "column_stack", "where", "flatnonzero",
           "nonzero", "count_nonzero", "cumsum", "cumprod", "unique", "bincount", "sort",
           "argsort", "lexsort", "searchsorted", "isin", "in1d", "repeat", "tile", "packbits",
           "unpackbits", "diff", "clip", "take", "put", "argmax", "argmin", "amax", "amin", "max",
           "min", "sum", "prod", "mean", "any", "all", "ravel", "reshape", "broadcast_to",
           "expand_dims", "squeeze", "flip", "roll", "copyto", "array_equal", "allclose",
           "isclose", "argwhere", "setdiff1d", "intersect1d", "union1d", "union1d",
           "ravel_multi_index", "unravel_index", "digitize", "histogram", "dot", "outer",
           "cumsum", "nan_to_num", "trunc", "round", "around", "atleast_1d", "delete",
           "append", "split", "array_split", "extract", "compress", "choose", "select",
           "partition", "argpartition", "median", "percentile", "meshgrid", "indices",
           "interp", "diagonal", "einsum", "transpose", "moveaxis", "swapaxes",
           "shares_memory", "may_share_memory", "fmod", "iscomplexobj", "size", "shape"):
    if hasattr(_np, _n) and not isinstance(getattr(_np, _n), _np.ufunc):
        setattr(_mod, _n, _generic(_n, _SPECIAL.get(_n)))


def copy(a, order="K"):
    return ndarray(_check(a, "copy").copy())


# ---- memory pools, cuda
class _Pool:
    def free_all_blocks(self):
        pass

    def total_bytes(self):
        return 0

    def used_bytes(self):
        return 0

    def set_limit(self, size=0):
        pass

    def get_limit(self):
        return 0


_pool = _Pool()
_ppool = _Pool()


def get_default_memory_pool():
    return _pool


def get_default_pinned_memory_pool():
    return _ppool


def get_array_module(*args):
    return _mod if any(isinstance(a, ndarray) for a in args) else _np


cuda = types.ModuleType("cupy.cuda")
cuda.runtime = types.SimpleNamespace(getDeviceCount=lambda: 1, is_hip=False,
                                     memGetInfo=lambda: (1 << 34, 1 << 35))


class OutOfMemoryError(MemoryError):
    pass


cuda.memory = types.SimpleNamespace(OutOfMemoryError=OutOfMemoryError)
cuda.set_allocator = lambda f=None: None
cuda.Device = lambda i=0: types.SimpleNamespace(synchronize=lambda: None, mem_info=(1 << 34, 1 << 35))
cuda.Stream = types.SimpleNamespace(null=types.SimpleNamespace(synchronize=lambda: None))
sys.modules["cupy.cuda"] = cuda
__version__ = "14.0.0"

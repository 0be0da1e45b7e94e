"""The ahead-of-use compilation list (kernels/precompile.py): every listed signature names
a cached kernel of its module and evaluates to Numba types of the kernel's arity, and a
signature compiles into the cache (checked on one small kernel; ``make test`` compiles
the whole list before the suite)."""

from __future__ import annotations

import inspect

import pytest

numba = pytest.importorskip("numba")

from gpu_engine.kernels import precompile as P  # noqa: E402
from gpu_engine.kernels.precompile_list import SIGNATURES  # noqa: E402


def test_list_names_kernels_with_their_arity() -> None:
    from numba.core import types

    assert SIGNATURES
    for key, sigs in SIGNATURES.items():
        assert key.split(".", 1)[0] in P.MODULES, key
        disp = P._kernel(key)
        assert getattr(disp, "_cache", None) is not None, f"{key} is not a cached kernel"
        arity = len(inspect.signature(disp.py_func).parameters)
        for sig in sigs:
            assert len(sig) == arity, (key, sig)
            for t in sig:
                assert isinstance(P.parse_type(t), types.Type), (key, t)


def test_short_names_evaluate_back() -> None:
    from numba.core import types

    for t in (types.int64[::1], types.boolean[::1], types.uint64[::1], types.int64[:, ::1],
              types.UniTuple(types.int64[::1], 3), types.int64, types.boolean):
        assert P.parse_type(P._short(t)) == t, P._short(t)


def test_one_signature_compiles_and_a_bad_one_is_reported() -> None:
    key = "cpu_small._flagged"
    good = SIGNATURES[key][0]
    done, errors = P._compile_one(key, [good])
    assert (done, errors) == (1, [])
    done, errors = P._compile_one(key, [["float64", "int64", "int64"]])
    assert done == 0 and len(errors) == 1 and key in errors[0]
    done, errors = P._compile_one("cpu_small._no_such_kernel", [good])
    assert done == 0 and "_no_such_kernel" in errors[0]

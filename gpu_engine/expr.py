"""Built-in functors and comparisons as column operations over a binding table."""

from __future__ import annotations

import sys
from typing import Any

import numpy as np

from gpu_engine.kernels.backend import INDEX, Backend

from .ir import RECORD_OPS, Call, ColumnType, Compare, Const, ProgramError, SymbolTable, Term, Var
from .strings import string_constraint, string_functor
from .user_functors import apply_user_functor
from .values import (
    SIGN64,
    c_div,
    c_div_wide,
    encode_scalar,
    float_decode,
    float_encode,
    float_to_int,
    int_pow,
    unsigned_order,
    unsigned_to_float,
    word_size,
    wrap,
    x86_nan,
)

# operand type of conversion functors (the result type is Call.type)
_CONVERSION_ARG: dict[str, ColumnType] = {
    "itou": "number", "itof": "number", "utoi": "unsigned", "utof": "unsigned",
    "ftoi": "float", "ftou": "float",
}
STRING_FUNCTORS = {"cat", "strlen", "substr", "ord", "to_number", "to_string",
                   "to_float", "to_unsigned", "ftos"}
# argument types of the string functors (``cat`` and symbol ``min``/``max``: all symbols)
_STRING_ARGS: dict[str, tuple[ColumnType, ...]] = {
    "strlen": ("symbol",), "ord": ("symbol",), "to_number": ("symbol",),
    "to_unsigned": ("symbol",), "to_float": ("symbol",), "to_string": ("number",),
    "ftos": ("float",), "substr": ("symbol", "number", "number"),
}
# string constraints: Compare operators whose operands are symbols (pattern/needle, text)
STRING_CONSTRAINTS = {"match", "!match", "contains", "!contains"}
SHIFT_MASK = 31  # Soufflé masks shift counts to the low 5 bits (RAM_BIT_SHIFT_MASK)
SHIFT_MASK64 = 63  # ... and to the low 6 bits in its 64-bit build


def term_vars(t: Term) -> set[str]:
    """Names of the variables a term reads."""
    if isinstance(t, Var):
        return {t.name}
    if isinstance(t, Call):
        out: set[str] = set()
        for a in t.args:
            out |= term_vars(a)
        return out
    return set()


def const_value(c: Const, symbols: SymbolTable) -> int:
    """The stored int64 value of a constant (in the symbol table's word size)."""
    if c.type == "symbol":
        return int(symbols.encode(str(c.value)))
    return encode_scalar(c.value, c.type, word_size(symbols))


class ExprEvaluator:
    """Evaluates terms on the columns of a binding table (dict var -> column)."""

    def __init__(self, be: Backend, symbols: SymbolTable) -> None:
        self.be = be
        self.symbols = symbols
        self.autoinc = 0  # Soufflé's counter: the next value autoinc() gives
        self.iteration = 0  # recursive_iteration_cnt() (gpu_engine.iteration)
        self.bits = word_size(symbols)  # 32 or 64 (gpu_engine.values)
        self._warned: set[str] = set()

    def warn(self, message: str) -> None:
        """Print ``warning: message`` on stderr, once per message and evaluator."""
        if message not in self._warned:
            self._warned.add(message)
            print(f"warning: {message}", file=sys.stderr)

    def term(self, t: Term, cols: dict[str, Any], n: int) -> tuple[Any, Any | None]:
        """Column of values of ``t`` and a validity mask (None when always valid)."""
        xp = self.be.xp
        if isinstance(t, Var):
            return cols[t.name], None
        if isinstance(t, Const):
            return xp.full(n, const_value(t, self.symbols), dtype=INDEX), None
        return self._call(t, cols, n)

    def _call(self, t: Call, cols: dict[str, Any], n: int) -> tuple[Any, Any | None]:
        be, xp = self.be, self.be.xp
        vals, valid = [], None
        for a in t.args:
            v, ok = self.term(a, cols, n)
            vals.append(v)
            valid = ok if valid is None else (valid if ok is None else valid & ok)
        op, typ = t.op, t.type
        if op in RECORD_OPS:
            return self._record_op(t, vals, n, valid)
        if op.startswith("@"):  # a user-defined functor (its library, on the host)
            return apply_user_functor(be, self.symbols, t, vals, n, self.bits, valid), valid
        if op == "iteration":  # the seminaive iteration of the running stratum
            return xp.full(n, self.iteration, dtype=INDEX), None
        if op == "autoinc":  # a fresh number per row (per derivation), in row order
            start = self.autoinc
            self.autoinc += n
            return wrap(be, xp.arange(start, start + n, dtype=INDEX), "number", self.bits), None
        if op in STRING_FUNCTORS or (typ == "symbol" and op in ("min", "max")):
            arg_types = list(_STRING_ARGS.get(op, ("symbol",) * len(vals)))
            host = [be.to_host(v) for v in vals]
            out = string_functor(self.symbols, op, host, arg_types, typ, self.warn)
            return be.asarray(out), valid
        if op == "bits":  # as() between float and an integer type: the same bits
            if self.bits == 64:  # every 64-bit column holds the word's bit pattern
                return vals[0], valid
            return wrap(be, vals[0], "unsigned" if typ == "unsigned" else "number"), valid
        if op in _CONVERSION_ARG:
            src = _CONVERSION_ARG[op]
            v = vals[0]
            bits = self.bits
            if src == "float":  # NaN / out of range: as x86-64 builds convert
                return float_to_int(be, float_decode(be, v, bits), typ, bits), valid
            if typ == "float":
                fv = unsigned_to_float(be, v, bits) if src == "unsigned" else v.astype(xp.float64)
                return float_encode(be, fv, bits), valid
            return wrap(be, v, typ, bits), valid
        if typ == "float":
            fv = [float_decode(be, v, self.bits) for v in vals]
            return float_encode(be, self._float_op(op, fv), self.bits), valid
        res, ok = self._int_op(op, vals, typ)
        if ok is not None:
            valid = ok if valid is None else valid & ok
        return res, valid

    def _record_op(self, t: Call, vals: list[Any], n: int,
                   valid: Any | None) -> tuple[Any, Any | None]:
        """``pack`` (record ids of field columns) and ``field`` (a field of record ids),
        on the host record table (arrays copied once per call)."""
        be = self.be
        records = self.symbols.records  # type: ignore[attr-defined]
        if t.op == "pack":
            host = [be.to_host(v) for v in vals]
            if valid is not None:  # rows already invalid must not create records
                keep = be.to_host(valid).astype(bool)
                ids = records.pack([h[keep] for h in host], int(keep.sum()))
                out = np.zeros(n, dtype=np.int64)
                out[keep] = ids
                return be.asarray(out), valid
            return be.asarray(records.pack(host, n)), None
        index = t.args[1]
        assert isinstance(index, Const)
        out, ok = records.field(be.to_host(vals[0]), int(index.value))
        ok_dev = be.asarray(ok, dtype=bool)
        return be.asarray(out), ok_dev if valid is None else valid & ok_dev

    def _float_op(self, op: str, v: list[Any]) -> Any:
        be, xp = self.be, self.be.xp
        if op == "neg":  # a flip of the sign bit, NaN too (as x86's xorps)
            return (v[0].view(INDEX) ^ SIGN64).view(xp.float64)
        if op == "min":  # std::min / std::max, left to right: a NaN keeps the earlier
            return _fold(lambda a, b: xp.where(b < a, b, a), v)
        if op == "max":
            return _fold(lambda a, b: xp.where(a < b, b, a), v)
        with _quiet(xp):
            if op == "+":
                r = v[0] + v[1]
            elif op == "-":
                r = v[0] - v[1]
            elif op == "*":
                r = v[0] * v[1]
            elif op == "/":
                r = v[0] / v[1]
            elif op == "^":
                r = xp.power(v[0], v[1])
            elif op == "%":
                r = xp.fmod(v[0], v[1])
            else:
                raise ProgramError(f"functor {op!r} is not defined on float")
        return x86_nan(be, r, v[:2])

    def _int_op(self, op: str, v: list[Any], typ: ColumnType) -> tuple[Any, Any | None]:
        be, xp = self.be, self.be.xp
        signed = typ == "number"
        bits = self.bits
        if op == "+":
            return wrap(be, v[0] + v[1], typ, bits), None
        if op == "-":
            return wrap(be, v[0] - v[1], typ, bits), None
        if op == "*":
            return wrap(be, v[0] * v[1], typ, bits), None
        if op in ("/", "%"):
            q, ok = c_div_wide(be, v[0], v[1], typ) if bits == 64 else c_div(be, v[0], v[1])
            if len(ok) and not bool(ok.all()):
                self.warn("division by zero: the derivations that divide by zero are "
                          "dropped (Soufflé's behaviour is undefined there)")
            if op == "/":
                return wrap(be, q, typ, bits), ok
            return wrap(be, v[0] - q * xp.where(ok, v[1], 1), typ, bits), ok
        if op == "^":
            return int_pow(be, v[0], v[1], typ, bits), None
        if op == "neg":
            return wrap(be, -v[0], typ, bits), None
        if op in ("min", "max"):
            if bits == 64 and typ == "unsigned":  # compare as unsigned, keep the bits
                keys = [unsigned_order(be, x, bits) for x in v]
                f = xp.minimum if op == "min" else xp.maximum
                return unsigned_order(be, _fold(f, keys), bits), None
            return _fold(xp.minimum if op == "min" else xp.maximum, v), None
        if bits == 64:
            return self._bit_op64(op, v, signed)
        u = [x & 0xFFFFFFFF for x in v]
        if op == "band":
            return wrap(be, u[0] & u[1], typ), None
        if op == "bor":
            return wrap(be, u[0] | u[1], typ), None
        if op == "bxor":
            return wrap(be, u[0] ^ u[1], typ), None
        if op == "bnot":
            return wrap(be, ~v[0], typ), None
        if op == "bshl":  # shifted as unsigned, count masked (as Soufflé)
            return wrap(be, u[0] << (v[1] & SHIFT_MASK), typ), None
        if op == "bshr":
            src = v[0] if signed else u[0]
            return wrap(be, src >> (v[1] & SHIFT_MASK), typ), None
        if op == "bshru":
            return wrap(be, u[0] >> (v[1] & SHIFT_MASK), typ), None
        return self._logic_op(op, v)

    def _bit_op64(self, op: str, v: list[Any], signed: bool) -> tuple[Any, Any | None]:
        """Bitwise functors on 64-bit words (counts masked to 6 bits, as Soufflé -d64)."""
        if op == "band":
            return v[0] & v[1], None
        if op == "bor":
            return v[0] | v[1], None
        if op == "bxor":
            return v[0] ^ v[1], None
        if op == "bnot":
            return ~v[0], None
        if op in ("bshl", "bshr", "bshru"):
            count = (v[1] & SHIFT_MASK64).view(np.uint64)
            if op == "bshl":
                return (v[0].view(np.uint64) << count).view(INDEX), None
            if op == "bshr" and signed:
                return v[0] >> count.view(INDEX), None
            return (v[0].view(np.uint64) >> count).view(INDEX), None
        return self._logic_op(op, v)

    def _logic_op(self, op: str, v: list[Any]) -> tuple[Any, Any | None]:
        if op == "land":
            return ((v[0] != 0) & (v[1] != 0)).astype(INDEX), None
        if op == "lor":
            return ((v[0] != 0) | (v[1] != 0)).astype(INDEX), None
        if op == "lnot":
            return (v[0] == 0).astype(INDEX), None
        if op == "lxor":
            return ((v[0] != 0) != (v[1] != 0)).astype(INDEX), None
        raise ProgramError(f"unsupported functor {op!r}")

    def compare(self, c: Compare, cols: dict[str, Any], n: int) -> Any:
        """Boolean mask of the rows satisfying a comparison."""
        xp = self.be.xp
        a, va = self.term(c.left, cols, n)
        b, vb = self.term(c.right, cols, n)
        if c.op in STRING_CONSTRAINTS:
            mask = self.be.asarray(string_constraint(
                self.symbols, c.op, self.be.to_host(a), self.be.to_host(b), self.warn))
            for v in (va, vb):
                if v is not None:
                    mask &= v
            return mask
        if c.type == "float":
            a, b = float_decode(self.be, a, self.bits), float_decode(self.be, b, self.bits)
        elif c.type == "unsigned" and self.bits == 64 and c.op not in ("=", "!="):
            a, b = unsigned_order(self.be, a, 64), unsigned_order(self.be, b, 64)
        elif c.type == "symbol" and c.op not in ("=", "!="):
            a, b = self._symbol_order(a, b)
        mask = {
            "=": xp.equal, "!=": xp.not_equal, "<": xp.less, "<=": xp.less_equal,
            ">": xp.greater, ">=": xp.greater_equal,
        }[c.op](a, b)
        for v in (va, vb):
            if v is not None:
                mask &= v
        return mask

    def _symbol_order(self, a: Any, b: Any) -> tuple[Any, Any]:
        """Order keys of two symbol columns (lexicographic order of their text)."""
        ka, kb = self.symbols.order_pair(self.be.to_host(a), self.be.to_host(b))
        return self.be.asarray(ka), self.be.asarray(kb)


def _fold(f: Any, vals: list[Any]) -> Any:
    out = vals[0]
    for v in vals[1:]:
        out = f(out, v)
    return out


class _quiet:
    def __init__(self, xp: Any) -> None:
        self.xp = xp
        self.old: Any = None

    def __enter__(self) -> None:
        import numpy as np

        self.old = np.seterr(all="ignore")

    def __exit__(self, *exc: object) -> None:
        import numpy as np

        np.seterr(**self.old)

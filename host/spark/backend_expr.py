"""Built-in functors and comparisons as Spark SQL column expressions (Spark backend).

Mirrors :mod:`gpu_engine.expr` and :mod:`gpu_engine.values` value for value:

* Columns keep their declared Spark types: ``number`` IntegerType, ``unsigned`` LongType
  (0..2^32-1), ``float`` FloatType, ``symbol`` StringType.  Integer functors compute on
  LongType and wrap back to 32 bits (two's complement for ``number``, modulo 2^32 for
  ``unsigned``); no intermediate ever leaves the 64-bit range, so Spark's ANSI mode (the
  default since 4.0) never raises.  ``unsigned`` products are split into 16-bit halves.
* ``/`` and ``%`` truncate toward zero (C); a zero divisor makes the rule instance invalid
  (no head fact, a comparison is false, a negated atom holds), as in the local engine.
* ``^`` on integers is repeated squaring over 32 steps (``aggregate`` over a sequence, so
  the expression stays small), with Soufflé's results for negative exponents.
* Float functors compute on doubles and round every result to float32, with -0.0 made 0.0;
  a zero divisor gives +-inf/NaN as NumPy does; comparisons and ``min``/``max`` follow
  IEEE/NumPy NaN rules (Spark's own order puts NaN above everything).
* String functors: ``cat``, ``strlen`` and ``substr`` count code points like Python;
  ``to_number``/``to_unsigned`` accept ``[+-]digits`` with surrounding ASCII whitespace
  (at most 18 digits) and wrap to 32 bits; ``to_string`` of a number or unsigned.

Not expressible with identical semantics, rejected with :class:`ProgramError` when the
runner is built: ``ord`` (the local engine returns dictionary ids, which depend on the
order symbols were first seen), ``to_float`` of a symbol and ``to_string`` of a float
(the local engine has no working version of either).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gpu_engine.ir import Call, ColumnType, Compare, Const, ProgramError, Term, Var, fmt_term
from gpu_engine.values import encode_scalar

U32 = (1 << 32) - 1
SPARK_TYPES: dict[str, str] = {"number": "int", "unsigned": "bigint", "float": "float",
                               "symbol": "string"}

_INT_OPS = {"+", "-", "*", "/", "%", "^", "neg", "min", "max", "band", "bor", "bxor", "bnot",
            "bshl", "bshr", "bshru", "land", "lor", "lnot", "lxor"}
_FLOAT_OPS = {"+", "-", "*", "/", "^", "neg", "min", "max"}
_CONVERSIONS = {"itou", "itof", "utoi", "utof", "ftoi", "ftou"}
_STRING_OPS = {"cat", "strlen", "substr", "to_number", "to_unsigned", "to_string"}
_NUMBER_RE = r"^[ \t\n\r\f\x0B]*([+-]?[0-9]{1,18})[ \t\n\r\f\x0B]*$"

Valid = Any  # a boolean Column, or None for "always valid"


def _F() -> Any:
    from pyspark.sql import functions as F

    return F


# --- checking (at construction time) ---------------------------------------------------


def check_term(t: Term, types: Mapping[str, ColumnType], where: str) -> None:
    """Raise ProgramError when ``t`` uses a functor this backend cannot evaluate exactly."""
    if not isinstance(t, Call):
        return
    for a in t.args:
        check_term(a, types, where)
    op, typ = t.op, t.type
    arg_types = [term_type(a, types) for a in t.args]
    bad = None
    if op in ("pack", "field"):
        bad = "records and ADTs (their ids belong to the local engine's record table)"
    elif op == "ord":
        bad = "'ord' (its value is a dictionary id of the local engine)"
    elif op == "bits":
        bad = "as() between float and integer types (a reinterpretation of the bits)"
    elif op == "to_float":
        bad = "'to_float' of a symbol"
    elif op == "to_string" and arg_types and arg_types[0] == "float":
        bad = "'to_string' of a float"
    elif op in _STRING_OPS or op in _CONVERSIONS:
        bad = None
    elif typ == "float" and op not in _FLOAT_OPS:
        bad = f"functor {op!r} on float"
    elif typ in ("number", "unsigned") and op not in _INT_OPS:
        bad = f"functor {op!r}"
    elif typ == "symbol":
        bad = f"functor {op!r} with a symbol result"
    if bad:
        raise ProgramError(f"the Spark backend does not support {bad} "
                           f"(in {fmt_term(t)}, {where})")


def term_type(t: Term, types: Mapping[str, ColumnType]) -> ColumnType:
    """The column type of a term (variables from ``types``)."""
    if isinstance(t, Var):
        return types[t.name]
    return t.type


# --- translation ----------------------------------------------------------------------


class SparkExpr:
    """Translates IR terms over named columns (``cols``: variable -> Column) to Columns."""

    def __init__(self, types: Mapping[str, ColumnType]) -> None:
        self.types = types

    def term(self, t: Term, cols: Mapping[str, Any]) -> tuple[Any, Valid]:
        """(value in the canonical Spark type of the term's type, validity or None)."""
        if isinstance(t, Var):
            return cols[t.name], None
        if isinstance(t, Const):
            return const_column(t), None
        vals, valid = [], None
        for a in t.args:
            v, ok = self.term(a, cols)
            vals.append(v)
            valid = _and(valid, ok)
        arg_types = [term_type(a, self.types) for a in t.args]
        op, typ = t.op, t.type
        if op in _STRING_OPS:
            res, ok = _string_op(op, vals, arg_types, typ)
        elif op in _CONVERSIONS:
            res, ok = _conversion(op, vals[0], typ), None
        elif typ == "float":
            res, ok = _float_op(op, [v.cast("double") for v in vals]), None
        else:
            res, ok = _int_op(op, [v.cast("long") for v in vals], typ)
        return res, _and(valid, ok)

    def compare(self, c: Compare, cols: Mapping[str, Any]) -> Any:
        """Boolean Column of the rows satisfying ``c`` (false where an operand is invalid)."""
        F = _F()
        a, va = self.term(c.left, cols)
        b, vb = self.term(c.right, cols)
        if c.type == "float":
            a, b = a.cast("double"), b.cast("double")
            nan = F.isnan(a) | F.isnan(b)
            base = _CMP[c.op](a, b)
            cond = (nan | base) if c.op == "!=" else (~nan & base)
        else:
            cond = _CMP[c.op](a, b)
        return _and(_and(cond, va), vb)


_CMP = {"=": lambda a, b: a == b, "!=": lambda a, b: a != b, "<": lambda a, b: a < b,
        "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, ">=": lambda a, b: a >= b}


def const_column(c: Const) -> Any:
    """A literal in the canonical Spark type of the constant's type."""
    F = _F()
    if c.type == "symbol":
        return F.lit(str(c.value))
    if c.type == "float":
        return F.lit(float(c.value) + 0.0).cast("float")
    return F.lit(encode_scalar(c.value, c.type)).cast(SPARK_TYPES[c.type])


def normalise_float(v: Any) -> Any:
    """-0.0 -> 0.0 on a float Column (the local engine stores equal floats as equal bits)."""
    F = _F()
    return F.when(v == 0, F.lit(0.0).cast("float")).otherwise(v)


def _and(a: Valid, b: Valid) -> Valid:
    if a is None:
        return b
    if b is None:
        return a
    return a & b


def wrap(v: Any, typ: ColumnType) -> Any:
    """A LongType Column wrapped to the 32-bit domain of ``typ`` (in its Spark type)."""
    if typ == "number":
        return (((v + (1 << 31)).bitwiseAND(U32)) - (1 << 31)).cast("int")
    return v.bitwiseAND(U32)


def _mul(a: Any, b: Any, typ: ColumnType) -> Any:
    """a * b wrapped to ``typ`` without 64-bit overflow (operands are wrapped 32-bit)."""
    if typ == "number":
        return wrap(a * b, typ)
    lo = a * b.bitwiseAND(0xFFFF)
    hi = (a * _shr(b, 16)).bitwiseAND(0xFFFF)
    return (lo + _shl(hi, 16)).bitwiseAND(U32)


def _shl(v: Any, n: Any) -> Any:
    F = _F()
    return F.call_function("shiftleft", v, n if not isinstance(n, int) else F.lit(n))


def _shr(v: Any, n: Any) -> Any:
    F = _F()
    return F.call_function("shiftright", v, n if not isinstance(n, int) else F.lit(n))


def _int_op(op: str, v: list[Any], typ: ColumnType) -> tuple[Any, Valid]:
    F = _F()
    L = lambda x: F.lit(x).cast("long")  # noqa: E731
    if op == "+":
        return wrap(v[0] + v[1], typ), None
    if op == "-":
        return wrap(v[0] - v[1], typ), None
    if op == "*":
        return _mul(v[0], v[1], typ), None
    if op in ("/", "%"):
        ok = v[1] != 0
        q = F.coalesce(F.call_function("div", v[0], F.when(ok, v[1])), L(0))
        if op == "/":
            return wrap(q, typ), ok
        return wrap(v[0] - q * F.when(ok, v[1]).otherwise(L(1)), typ), ok
    if op == "^":
        return _int_pow(v[0], v[1], typ), None
    if op == "neg":
        return wrap(-v[0], typ), None
    if op == "min":
        return F.least(*v).cast(SPARK_TYPES[typ]), None
    if op == "max":
        return F.greatest(*v).cast(SPARK_TYPES[typ]), None
    u = [x.bitwiseAND(U32) for x in v]
    if op == "band":
        return wrap(u[0].bitwiseAND(u[1]), typ), None
    if op == "bor":
        return wrap(u[0].bitwiseOR(u[1]), typ), None
    if op == "bxor":
        return wrap(u[0].bitwiseXOR(u[1]), typ), None
    if op == "bnot":
        return wrap(F.bitwise_not(v[0]), typ), None
    if op in ("bshl", "bshr", "bshru"):
        s = v[1].bitwiseAND(63).cast("int")
        if op == "bshl":
            return wrap(_shl(u[0], s), typ), None
        src = v[0] if (op == "bshr" and typ == "number") else u[0]
        return wrap(_shr(src, s), typ), None
    truth = {"land": lambda: (v[0] != 0) & (v[1] != 0), "lor": lambda: (v[0] != 0) | (v[1] != 0),
             "lnot": lambda: v[0] == 0, "lxor": lambda: (v[0] != 0) != (v[1] != 0)}[op]()
    return F.when(truth, L(1)).otherwise(L(0)).cast(SPARK_TYPES[typ]), None


def _int_pow(base: Any, exp: Any, typ: ColumnType) -> Any:
    """Repeated squaring over 32 steps on wrapped values (gpu_engine.values.int_pow)."""
    F = _F()
    b0 = wrap(base, typ).cast("long")
    e0 = F.when(exp < 0, F.lit(0).cast("long")).otherwise(exp)
    init = F.struct(F.lit(1).cast("long").alias("r"), b0.alias("b"), e0.alias("e"))

    def step(acc: Any, _i: Any) -> Any:
        r, b, e = acc["r"], acc["b"], acc["e"]
        odd = e.bitwiseAND(1) == 1
        return F.struct(F.when(odd, _mul(r, b, typ).cast("long")).otherwise(r).alias("r"),
                        _mul(b, b, typ).cast("long").alias("b"), _shr(e, 1).alias("e"))

    res = F.aggregate(F.sequence(F.lit(0), F.lit(31)), init, step)["r"]
    if typ == "number":
        one = F.lit(1).cast("long")
        special = (F.when(base == 1, one)
                   .when(base == -1, F.when(exp.bitwiseAND(1) == 0, one).otherwise(-one))
                   .otherwise(F.lit(0).cast("long")))
        res = F.when(exp < 0, special).otherwise(res)
    return res.cast(SPARK_TYPES[typ])


def _float_result(d: Any) -> Any:
    return normalise_float(d.cast("float"))


def _float_op(op: str, v: list[Any]) -> Any:
    F = _F()
    nan, inf = F.lit(float("nan")), F.lit(float("inf"))
    if op == "+":
        return _float_result(v[0] + v[1])
    if op == "-":
        return _float_result(v[0] - v[1])
    if op == "*":
        return _float_result(v[0] * v[1])
    if op == "/":
        a, b = v
        by_zero = F.when(a > 0, inf).when(a < 0, -inf).otherwise(nan)
        return _float_result(F.coalesce(a / F.when(b != 0, b), by_zero))
    if op == "^":
        return _float_result(F.pow(v[0], v[1]))
    if op == "neg":
        return _float_result(-v[0])
    # std::min / std::max left to right: a NaN keeps the earlier argument (Spark orders
    # NaN above every number, so comparisons with it are ruled out first)
    acc = v[0]
    for x in v[1:]:
        better = (x < acc) if op == "min" else (acc < x)
        acc = F.when(~F.isnan(acc) & ~F.isnan(x) & better, x).otherwise(acc)
    return _float_result(acc)


def _conversion(op: str, v: Any, typ: ColumnType) -> Any:
    F = _F()
    if op in ("ftoi", "ftou"):  # as x86-64 builds convert (gpu_engine.values.float_to_int)
        d = v.cast("double")
        if op == "ftoi":  # INT_MIN beyond int32 and for NaN (a comparison with it is false)
            ok = (d > -2147483649.0) & (d < 2147483648.0)
            bad = F.lit(-(1 << 31)).cast("long")
        else:  # through int64: its low bits, 0 beyond
            ok = (d >= -float(1 << 63)) & (d < float(1 << 63))
            bad = F.lit(0).cast("long")
        return wrap(F.when(ok & ~F.isnan(d), d.cast("long")).otherwise(bad), typ)
    if typ == "float":
        return _float_result(v.cast("double"))
    return wrap(v.cast("long"), typ)


def _string_op(op: str, v: list[Any], arg_types: list[ColumnType],
               typ: ColumnType) -> tuple[Any, Valid]:
    F = _F()
    if op == "cat":
        return F.concat(*v), None
    if op == "strlen":
        return F.length(v[0]).cast("int"), None
    if op == "to_string":
        return v[0].cast("string"), None
    if op == "substr":
        # Soufflé (std::string::substr): out of range gives "", a negative length the rest
        s, i, n = v[0], v[1].cast("long"), v[2].cast("long")
        ok = (i >= 0) & (i <= F.length(s))
        pos = F.when(ok, i + 1).otherwise(F.lit(1)).cast("int")
        length = F.when(~ok, F.lit(0)).when(n < 0, F.length(s)).otherwise(n).cast("int")
        return s.substr(pos, length), None
    # to_number / to_unsigned
    ok = v[0].rlike(_NUMBER_RE)
    digits = F.regexp_extract(v[0], _NUMBER_RE, 1)
    whole = F.when(ok, digits).otherwise(F.lit("0")).cast("long")
    return wrap(whole, typ), ok

"""String functors and string constraints with Soufflé's semantics, evaluated on the host
once per distinct argument tuple (a column of dictionary ids has few distinct values
compared with its rows): the distinct tuples are decoded, evaluated in Python and the
results gathered back to the rows.

Readings of Soufflé (its interpreter and ``StringUtil.h``):

* ``to_number`` parses like ``std::stoi`` after Soufflé's prefix handling: ``0x``/``-0x``
  hexadecimal, ``0b``/``-0b`` binary, otherwise decimal; leading white space and a
  trailing unparsed rest are accepted (``"12ab"`` is 12).  ``to_unsigned`` likewise
  (``std::stoul``, no leading ``-``), ``to_float`` like ``std::stof``.  A string with no
  number, or one out of the word's range, is a fatal error in Soufflé; here it raises
  :class:`FunctorError` (the run stops with an error naming the string).  With 64-bit
  words they parse like ``std::stoll``, ``std::stoull`` and ``std::stod``.
* ``to_string`` of a float prints it as C's ``%f`` (``std::to_string``): ``2.000000``.
* ``substr(s, i, n)`` is ``std::string::substr`` with the int32 arguments read as
  ``size_t``: a negative length takes the rest, a negative or too large start gives
  ``""`` with a warning (``wrong index position provided by substr(...)``).
* ``match(re, s)`` is a full match of ECMAScript regular expressions (``std::regex``),
  translated to Python's ``re`` (``[[:digit:]]`` and the other classes of
  ``std::regex_traits`` in the "C" locale, ``.`` stopping at ``\\n`` and ``\\r``, ``$`` at
  the end of the text only, ``[]`` matching nothing); a pattern ``std::regex`` rejects
  (for example ``fo{x}``, which Python would read literally) makes ``match`` and
  ``!match`` false, with a warning.  ``contains(sub, s)`` is a substring test.
* ``strlen`` and ``substr`` count UTF-8 bytes, as ``std::string`` does; a ``substr``
  that would cut a character (Soufflé then makes a symbol of invalid UTF-8) is refused
  with a :class:`FunctorError`.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable
from typing import Any

import numpy as np

from .ir import ProgramError, SymbolTable
from .values import decode_scalar, encode_scalar, int_range, word_size

Warn = Callable[[str], None]

_FLT_MAX = 3.4028234663852886e38
_FLT_MIN = 1.1754943508222875e-38
_DBL_MIN = 2.2250738585072014e-308
_C_SPACE = " \t\n\v\f\r"


class FunctorError(ProgramError):
    """A functor that Soufflé treats as a fatal error (``to_number("abc")``)."""


# --- number parsing as C++'s stoi / stoul / stof ----------------------------------------------


def _strtol(s: str, base: int) -> tuple[int, int] | None:
    """``strtol``'s value and characters read (None: no digits)."""
    i = 0
    while i < len(s) and s[i] in _C_SPACE:
        i += 1
    neg = False
    if i < len(s) and s[i] in "+-":
        neg = s[i] == "-"
        i += 1
    if base == 16 and s[i:i + 2].lower() == "0x" and i + 2 < len(s) and \
            s[i + 2] in "0123456789abcdefABCDEF":
        i += 2
    digits = "0123456789abcdefghijklmnopqrstuvwxyz"[:base]
    j = i
    while j < len(s) and s[j].lower() in digits:
        j += 1
    if j == i:
        return None
    v = int(s[i:j], base)
    return (-v if neg else v), j


def parse_signed(s: str, bits: int = 32) -> int:
    """Soufflé's ``to_number`` of a string (``RamSignedFromString`` with base 0)."""
    if s.startswith(("-0b", "0b")):
        r = _strtol(("-" + s[3:]) if s.startswith("-") else s[2:], 2)
    elif s.startswith(("-0x", "0x")):
        r = _strtol(s, 16)
    else:
        r = _strtol(s, 10)
    lo, hi = int_range("number", bits)
    if r is None or not lo <= r[0] <= hi:
        raise FunctorError(f'wrong string provided by `to_number("{s}")` functor')
    return r[0]


def parse_unsigned(s: str, bits: int = 32) -> int:
    """Soufflé's ``to_unsigned`` of a string (``RamUnsignedFromString`` with base 0)."""
    r = None
    if not s.startswith("-"):
        if s.startswith("0b"):
            r = _strtol(s[2:], 2)
        elif s.startswith("0x"):
            r = _strtol(s, 16)
        else:
            r = _strtol(s, 10)
    if r is not None and r[0] < 0:
        r = (r[0] % (1 << 64), r[1])  # strtoul negates in unsigned long arithmetic
    if r is None or r[0] > int_range("unsigned", bits)[1]:
        raise FunctorError(f'wrong string provided by `to_unsigned("{s}")` functor')
    return r[0]


_FLOAT_RE = re.compile(
    r"[ \t\n\v\f\r]*([+-]?)(?:(inf(?:inity)?)|(nan)(?:\([0-9A-Za-z_]*\))?"
    r"|0[xX]((?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)(?:[pP][+-]?[0-9]+)?)"
    r"|((?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?))",
    re.IGNORECASE,
)


def parse_float(s: str, bits: int = 32) -> float:
    """Soufflé's ``to_float`` of a string (``std::stof``, 64 bits ``std::stod``: the
    longest valid prefix)."""
    m = _FLOAT_RE.match(s)
    bad = FunctorError(f'wrong string provided by `to_float("{s}")` functor')
    if m is None:
        raise bad
    sign = -1.0 if m.group(1) == "-" else 1.0
    if m.group(2):
        return sign * math.inf
    if m.group(3):
        return math.nan
    if m.group(4) is not None:
        text = m.group(4)
        if "p" not in text.lower():
            text += "p0"
        v = float.fromhex("0x" + text)
    else:
        v = float(m.group(5))
    if bits == 64:
        digits = (m.group(4) or m.group(5) or "").lower().split("p" if m.group(4) else "e")[0]
        if math.isinf(v) or (v == 0.0 and digits.strip("0.") != "") or \
                (v != 0.0 and abs(v) < _DBL_MIN):
            raise bad  # ERANGE: std::stod throws out_of_range
    elif abs(v) > _FLT_MAX or (v != 0.0 and abs(v) < _FLT_MIN):
        raise bad  # ERANGE: std::stof throws out_of_range
    return sign * v


def float_text(v: float) -> str:
    """C's ``%f`` (``std::to_string`` of a float)."""
    if math.isnan(v):
        return "-nan" if math.copysign(1.0, v) < 0 else "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:f}"


# --- regular expressions: ECMAScript (std::regex) to Python --------------------------------------

_BRACE = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")
_QUANTIFIED = re.compile(r"(?:[*+?]|\{[0-9]+(?:,[0-9]*)?\})\??")
# std::regex_traits<char>::lookup_classname in the "C" locale, as members of a Python set
_POSIX_CLASSES = {
    "alnum": "0-9A-Za-z", "alpha": "A-Za-z", "blank": r" \t", "cntrl": r"\x00-\x1f\x7f",
    "digit": "0-9", "graph": r"\x21-\x7e", "lower": "a-z", "print": r"\x20-\x7e",
    "punct": r"\x21-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e", "space": r" \t\n\r\f\v",
    "upper": "A-Z", "xdigit": "0-9A-Fa-f", "w": "0-9A-Za-z_",
}
_POSIX_CLASSES.update(d=_POSIX_CLASSES["digit"], s=_POSIX_CLASSES["space"])
_ESCAPES = set("dDwWsSbBnrtvf0123456789xu")  # letter and digit escapes ECMAScript knows


class _Rejected(Exception):
    """``std::regex`` throws ``regex_error`` on this pattern."""


def _escape(pattern: str, i: int) -> tuple[str, int]:
    """The Python form of the escape at ``pattern[i] == '\\'`` and the index after it."""
    if i + 1 >= len(pattern):
        raise _Rejected
    c = pattern[i + 1]
    if c == "c":  # \cX: the control character X % 32
        if i + 2 >= len(pattern) or not pattern[i + 2].isascii() or not pattern[i + 2].isalpha():
            raise _Rejected
        return f"\\x{ord(pattern[i + 2]) % 32:02x}", i + 3
    if c.isalnum() and c not in _ESCAPES:  # \A, \Z, \e, ...: not ECMAScript
        raise _Rejected
    return pattern[i:i + 2], i + 2


def _bracket(pattern: str, i: int) -> tuple[str, int]:
    """The Python form of the bracket expression starting at ``pattern[i] == '['``.
    ECMAScript reads a ``]`` right after ``[`` or ``[^`` as the end (``[]`` matches
    nothing, ``[^]`` any character); ``[:name:]``, ``[=c=]`` and ``[.c.]`` are the
    classes and single-character elements of std::regex; ``[ & ~ |`` are literals."""
    i += 1
    negated = pattern[i:i + 1] == "^"
    i += negated
    parts: list[str] = []
    while True:
        if i >= len(pattern):
            raise _Rejected
        c = pattern[i]
        if c == "]":
            break
        if c == "\\":
            text, i = _escape(pattern, i)
            parts.append(text)
            continue
        if c == "[" and pattern[i + 1:i + 2] in (":", "=", "."):
            kind = pattern[i + 1]
            close = pattern.find(kind + "]", i + 2)
            if close < 0:
                raise _Rejected
            name = pattern[i + 2:close]
            if kind == ":":
                if name not in _POSIX_CLASSES:
                    raise _Rejected
                parts.append(_POSIX_CLASSES[name])
            elif len(name) == 1:
                parts.append(re.escape(name))
            else:
                raise _Rejected
            i = close + 2
            continue
        parts.append("\\" + c if c in "[&~|" else c)
        i += 1
    body = "".join(parts)
    if not body:
        return ("(?s:.)" if negated else "(?!)"), i + 1
    return "[" + "^" * negated + body + "]", i + 1


def _translate(pattern: str) -> str:
    """``pattern`` (ECMAScript, std::regex) in Python's syntax: ``.`` excludes ``\\n``
    and ``\\r``, ``$`` is the end of the text only, bracket expressions as
    :func:`_bracket`; what Python would read but ECMAScript rejects raises
    :class:`_Rejected`: a ``{`` that does not start a ``{n}``, ``{n,}`` or ``{n,m}``
    quantifier, group syntax other than ``(?:``, ``(?=`` and ``(?!``, a possessive
    quantifier, escapes of letters ECMAScript does not define."""
    out: list[str] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == "\\":
            text, i = _escape(pattern, i)
            out.append(text)
            continue
        if c == "[":
            text, i = _bracket(pattern, i)
            out.append(text)
            continue
        if c == "{" and not _BRACE.match(pattern, i):
            raise _Rejected
        if c == "(" and pattern[i + 1:i + 2] == "?" and pattern[i + 2:i + 3] not in (":", "=", "!"):
            raise _Rejected
        quantified = _QUANTIFIED.match(pattern, i)
        if quantified is not None:
            if pattern[quantified.end():quantified.end() + 1] == "+":  # a*+: no possessives
                raise _Rejected
            out.append(quantified.group())
            i = quantified.end()
            continue
        out.append({".": "[^\\n\\r]", "$": "\\Z"}.get(c, c))
        i += 1
    return "".join(out)


def ecma_regex(pattern: str) -> re.Pattern[str] | None:
    """Python's compiled form of an ECMAScript pattern (:func:`_translate`), or None where
    ``std::regex`` rejects it; ``\\d \\w \\s`` are ASCII classes as in std::regex's
    default locale."""
    try:
        return re.compile(_translate(pattern), re.ASCII)
    except (_Rejected, re.error, RecursionError, OverflowError):
        return None


# --- evaluation over distinct argument tuples ------------------------------------------------------


def _distinct(args: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    stacked = np.stack([np.asarray(a, dtype=np.int64) for a in args], axis=1)
    uniq, inverse = np.unique(stacked, axis=0, return_inverse=True)
    return uniq, inverse.reshape(-1)


def _decode(symbols: SymbolTable, col: np.ndarray, typ: str) -> list[Any]:
    if typ == "symbol":
        return symbols.decode_many(col)
    bits = word_size(symbols)
    if typ in ("float", "unsigned"):
        return [decode_scalar(x, typ, bits) for x in col.tolist()]  # type: ignore[arg-type]
    return col.tolist()


def _float_bits(v: float, bits: int = 32) -> int:
    if bits == 64:
        return encode_scalar(v, "float", 64)
    try:
        f = struct.unpack("<f", struct.pack("<f", v))[0] + 0.0
    except OverflowError:
        f = math.copysign(math.inf, v)
    return struct.unpack("<i", struct.pack("<f", f))[0]


def string_functor(symbols: SymbolTable, op: str, args: list[np.ndarray],
                   arg_types: list[str], result_type: str, warn: Warn) -> np.ndarray:
    """``op`` applied row-wise to host argument columns (evaluated per distinct tuple)."""
    if op == "ord":  # the symbol's ordinal: its dictionary id
        return np.asarray(args[0], dtype=np.int64)
    if len(args[0]) == 0:
        return np.zeros(0, dtype=np.int64)
    uniq, inverse = _distinct(args)
    bits = word_size(symbols)
    decoded = [_decode(symbols, uniq[:, i], t) for i, t in enumerate(arg_types)]
    results = [_apply(op, row, warn, bits) for row in zip(*decoded)]
    if result_type == "symbol":
        out = symbols.encode_many([str(r) for r in results])
    elif result_type == "float":
        out = np.asarray([_float_bits(r, bits) for r in results], dtype=np.int64)
    else:
        out = np.asarray([encode_scalar(r, result_type, bits)  # type: ignore[arg-type]
                          for r in results], dtype=np.int64)
    return np.asarray(out, dtype=np.int64)[inverse]


def _apply(op: str, row: tuple, warn: Warn, bits: int = 32) -> Any:
    if op == "cat":
        return "".join(row)
    if op == "strlen":  # std::string::size(): UTF-8 bytes
        return len(row[0].encode())
    if op == "to_number":
        return parse_signed(row[0], bits)
    if op == "to_unsigned":
        return parse_unsigned(row[0], bits)
    if op == "to_float":
        return parse_float(row[0], bits)
    if op == "to_string":
        return str(int(row[0]))
    if op == "ftos":
        return float_text(row[0])
    if op == "substr":  # std::string::substr over the UTF-8 bytes
        s, i, n = row
        b = s.encode()
        if i < 0 or i > len(b):
            warn(f'wrong index position provided by substr("{s}",{i},{n}) functor.')
            return ""
        part = b[i:] if n < 0 else b[i:i + n]
        try:
            return part.decode()
        except UnicodeDecodeError:
            raise FunctorError(f'substr("{s}",{i},{n}) cuts a UTF-8 character (Soufflé counts '
                               "bytes; a symbol here is text, so the bytes it would give are "
                               "refused)") from None
    if op in ("min", "max"):
        return min(row) if op == "min" else max(row)
    raise ProgramError(f"unknown string functor {op!r}")


def string_constraint(symbols: SymbolTable, op: str, pattern: np.ndarray, text: np.ndarray,
                      warn: Warn) -> np.ndarray:
    """Row mask of ``match``/``contains`` (``!`` negated) over two symbol id columns."""
    if len(text) == 0:
        return np.zeros(0, dtype=bool)
    uniq, inverse = _distinct([pattern, text])
    pats = symbols.decode_many(uniq[:, 0])
    texts = symbols.decode_many(uniq[:, 1])
    negated = op.startswith("!")
    base = op.lstrip("!")
    out = np.zeros(len(uniq), dtype=bool)
    compiled: dict[str, re.Pattern[str] | None] = {}
    for k, (p, s) in enumerate(zip(pats, texts)):
        if base == "contains":
            out[k] = (p in s) != negated
            continue
        if p not in compiled:
            compiled[p] = ecma_regex(p)
        rx = compiled[p]
        if rx is None:  # Soufflé: false for match and !match
            warn(f'wrong pattern provided "{p}"')
            continue
        out[k] = (rx.fullmatch(s) is not None) != negated
    return out[inverse]

"""Seeded mutations of valid inputs: bytes, tokens, lines and fact-file fields."""

from __future__ import annotations

import gzip
import random
import re

_TOKEN_RE = re.compile(rb"\w+|[^\w\s]|\s+")
ODD = [b"\xff", b"\xc3", b"\xe2\x82", b"\x00", b"\xef\xbb\xbf", "é".encode(), "𝔘".encode(),
       "\u202e".encode(), b"\r", b"\r\n", b"\t", b'"', b"'", b"\\", b",", b" "]
BAD_NUMBERS = ["abc", "1.5", "+5", "0x1g", "", " ", "--1", "1e5", "NaN", "inf", "0b102",
               "9223372036854775808", "-9223372036854775809", "18446744073709551616",
               "2147483648", "-2147483649", "4294967296", "99999999999999999999999999",
               "1e400", "-1e400", "0x", "0x7fffffffffffffffff", "١٢٣", "1_000"]


def random_text(rng: random.Random, k: int) -> bytes:
    """``k`` random code points (any plane) and invalid bytes."""
    out = bytearray()
    for _ in range(k):
        r = rng.random()
        if r < 0.3:
            out += rng.choice(ODD)
        elif r < 0.6:
            out += chr(rng.randrange(32, 127)).encode()
        else:
            cp = rng.randrange(0x80, 0x110000)
            if 0xD800 <= cp < 0xE000:
                out += b"\xed\xa0\x80"  # an encoded surrogate: invalid UTF-8
            else:
                out += chr(cp).encode()
    return bytes(out)


def mutate_bytes(data: bytes, rng: random.Random, rounds: int | None = None) -> tuple[bytes, list[str]]:
    """Apply 1-3 random mutations; returns the result and what was done."""
    done: list[str] = []
    for _ in range(rounds or rng.randint(1, 3)):
        op = rng.choice(["flip", "truncate", "tok_del", "tok_dup", "tok_swap", "insert",
                         "line_del", "line_dup", "byte_del"])
        done.append(op)
        n = len(data)
        if op == "flip" and n:
            i = rng.randrange(n)
            data = data[:i] + bytes([rng.randrange(256)]) + data[i + 1:]
        elif op == "truncate":
            data = data[:rng.randrange(n + 1)]
        elif op == "byte_del" and n:
            i = rng.randrange(n)
            data = data[:i] + data[i + 1:]
        elif op == "insert":
            i = rng.randrange(n + 1)
            data = data[:i] + random_text(rng, rng.randint(1, 4)) + data[i:]
        elif op.startswith("tok_"):
            toks = _TOKEN_RE.findall(data)
            if not toks:
                continue
            i = rng.randrange(len(toks))
            if op == "tok_del":
                del toks[i]
            elif op == "tok_dup":
                toks.insert(i, toks[i])
            else:
                j = rng.randrange(len(toks))
                toks[i], toks[j] = toks[j], toks[i]
            data = b"".join(toks)
        else:
            lines = data.split(b"\n")
            i = rng.randrange(len(lines))
            if op == "line_del":
                del lines[i]
            else:
                lines.insert(i, lines[i])
            data = b"\n".join(lines)
    return data, done


def mutate_fields(data: bytes, delim: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    """Fact-file mutations: wrong column counts, bad/huge numbers, odd bytes in a field,
    embedded delimiters and quotes, empty or blank lines, line endings, a BOM."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    if not lines:
        lines = [b""]
    i = rng.randrange(len(lines))
    fields = lines[i].split(delim)
    j = rng.randrange(len(fields))
    op = rng.choice(["extra_field", "missing_field", "bad_number", "odd_bytes", "embed_delim",
                     "quote", "empty_line", "blank_line", "crlf", "bom", "empty_field",
                     "no_final_newline", "long_field"])
    if op == "extra_field":
        fields.insert(j, rng.choice([b"1", b"x", b""]))
    elif op == "missing_field" and len(fields) > 0:
        del fields[j]
    elif op == "bad_number":
        fields[j] = rng.choice(BAD_NUMBERS).encode()
    elif op == "odd_bytes":
        fields[j] = fields[j] + random_text(rng, rng.randint(1, 3))
    elif op == "embed_delim":
        fields[j] = fields[j] + delim + b"y"
    elif op == "quote":
        fields[j] = b'"' + fields[j] + rng.choice([b'"', b"", b'""'])
    elif op == "empty_field":
        fields[j] = b""
    elif op == "long_field":
        fields[j] = fields[j] * 10_000
    lines[i] = delim.join(fields)
    if op == "empty_line":
        lines.insert(i, b"")
    elif op == "blank_line":
        lines.insert(i, b"  \t ")
    out = b"\n".join(lines) + b"\n"
    if op == "crlf":
        out = out.replace(b"\n", b"\r\n")
    elif op == "bom":
        out = b"\xef\xbb\xbf" + out
    elif op == "no_final_newline":
        out = out.rstrip(b"\n")
    return out, [op]


JUNK = ["\t", ",", '"', "\n", "\r\n", "\x00", "\xff", "-", "+", "0x", "1e999", "99999999999",
        "nan", " ", "\\", "é", "'", "::", "", "-0", "0b102", "()", "\ufeff"]


def mutate_junk(data: bytes, rng: random.Random) -> tuple[bytes, list[str]]:
    """One to four edits of a text file: junk strings inserted (delimiters, quotes, line
    ends, NUL, a BOM, number-like tokens), short deletions, huge numbers inserted; in one
    case of ten the result is gzip-compressed and truncated."""
    text = data.decode("utf-8", "surrogateescape")
    done: list[str] = []
    for _ in range(rng.randint(1, 4)):
        k = rng.random()
        pos = rng.randint(0, len(text))
        if k < 0.5:
            junk = rng.choice(JUNK)
            text = text[:pos] + junk + text[pos:]
            done.append(f"insert {junk!r}")
        elif k < 0.8 and text:
            end = min(len(text), pos + rng.randint(1, 4))
            text = text[:pos] + text[end:]
            done.append("delete")
        else:
            big = str(rng.choice([-1, 2**31, 2**32, 2**63, 10**30]))
            text = text[:pos] + big + text[pos:]
            done.append(f"insert {big}")
    out = text.encode("utf-8", "surrogateescape")
    if "\xff" in text and rng.random() < 0.5:  # the byte, not the character
        out = out.replace("\xff".encode(), b"\xff")
        done.append("raw 0xff")
    if rng.random() < 0.1:
        out = gzip.compress(out)[: rng.randint(2, 40)]
        done.append("truncated gzip")
    return out, done

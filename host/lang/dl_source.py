"""Reading a program's text: the C preprocessor, ``.include`` and ``.once``.

Soufflé runs a program through a C preprocessor (``#include``, ``#define``, ``#if``)
before parsing it, and its lexer splices the files named by ``.include "file"`` (a file
holding ``.once`` is included at most once).  :func:`load_source` does the same and
returns one self-contained text: ``cpp`` runs (without ``-P``) where a file uses
preprocessor directives or macros are defined with ``-M``, and included files are spliced
in between line markers (``# 12 "file.dl"``, as cpp writes them), so that the lexer
(:mod:`host.lang.dl_lexer`) reports every error at its original file, line and column,
and a store can keep the program without the files it included.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from gpu_engine.host.lang.dl_lexer import _MASTER, LINE_MARKER, marker_file

from gpu_engine.ir import Location, ProgramError

MAX_INCLUDE_DEPTH = 64
# Soufflé's preprocessor defines the width of its values: RAM_DOMAIN_SIZE=<word size>.

_DIRECTIVE_LINE = re.compile(r"^[ \t]*#[ \t]*[A-Za-z_]", re.MULTILINE)
_CPP_ERROR = re.compile(r"^(?P<file>[^:\n]+):(?P<line>\d+):(?:(?P<col>\d+):)?\s*(?:fatal )?error:\s*"
                        r"(?P<msg>.*)$", re.MULTILINE)


@dataclass(frozen=True)
class SourceOptions:
    """How a program file is read: ``-I`` folders, ``-M`` macros, the preprocessor switch."""

    include_dirs: tuple[str, ...] = ()
    macros: tuple[str, ...] = ()  # NAME or NAME=VALUE
    preprocessor: bool = True
    word_size: int = 32  # RAM_DOMAIN_SIZE for the preprocessor (the run's word size)


@dataclass(frozen=True)
class ProgramSource:
    """A program's text after preprocessing and ``.include`` expansion, and its file name."""

    text: str
    name: str
    options: SourceOptions = field(default_factory=SourceOptions)


def parse_macros(specs: Sequence[str]) -> tuple[str, ...]:
    """``-M "X=1 Y=2"`` (repeatable) as a tuple of NAME[=VALUE] definitions."""
    out: list[str] = []
    for spec in specs:
        for item in spec.split():
            name = item.split("=", 1)[0]
            if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", name):
                raise ProgramError(f"-M: '{item}' is not a macro definition (NAME or NAME=VALUE)")
            out.append(item)
    return tuple(out)


def uses_preprocessor(text: str) -> bool:
    """Whether ``text`` has a C preprocessor directive (line markers do not count)."""
    return _DIRECTIVE_LINE.search(text) is not None


def load_source(path: str | Path, options: SourceOptions | None = None) -> ProgramSource:
    """Read the program file ``path``: preprocess it where needed and splice ``.include``s."""
    options = options or SourceOptions()
    p = Path(path)
    text = read_program_text(p)
    return ProgramSource(expand_source(text, str(p), options), str(p), options)


def read_program_text(path: Path) -> str:
    """A program file's text (UTF-8, an optional BOM); a byte that is not UTF-8 is a
    ProgramError at its line and column."""
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        col = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise ProgramError(f"invalid UTF-8 byte 0x{raw[exc.start]:02x}",
                           Location(str(path), line, col)) from None


def expand_source(text: str, name: str, options: SourceOptions | None = None,
                  path: Path | None = None) -> str:
    """The text of a program named ``name`` (a file at ``path`` if it is one), preprocessed
    where it uses directives or macros are given, with its ``.include``s spliced in."""
    options = options or SourceOptions()
    if path is None and Path(name).is_file():
        path = Path(name)
    if options.preprocessor and (options.macros or uses_preprocessor(text)):
        text = run_cpp(text, name, path, options)
    if ".include" not in text and ".once" not in text:
        return text
    once: set[str] = set()
    return _expand_includes(text, name, options, once, [_key(path, name)])


# --- the C preprocessor -------------------------------------------------------------------


def find_cpp() -> list[str] | None:
    """The command line of a C preprocessor (``cpp``, ``mcpp`` or ``gcc -E``), or None."""
    if shutil.which("cpp"):
        return ["cpp", "-x", "c", "-E", "-undef", "-nostdinc", "-w"]
    if shutil.which("mcpp"):
        return ["mcpp", "-W0"]
    for cc in ("gcc", "clang", "cc"):
        if shutil.which(cc):
            return [cc, "-x", "c", "-E", "-undef", "-nostdinc", "-w"]
    return None


def run_cpp(text: str, name: str, path: Path | None, options: SourceOptions) -> str:
    """``text`` through the C preprocessor, with line markers (``# N "file"``) kept."""
    cmd = find_cpp()
    loc = Location(name, 1, 1)
    if cmd is None:
        raise ProgramError("the program uses C preprocessor directives or -M macros, but no "
                           "C preprocessor (cpp, mcpp or gcc) is installed; install one (for "
                           "example the 'cpp' package) or run with --no-preprocessor", loc)
    cmd = list(cmd)
    for d in options.include_dirs:
        cmd.append(f"-I{d}")
    for m in (f"RAM_DOMAIN_SIZE={options.word_size}", *options.macros):
        cmd.append(f"-D{m}")
    if path is not None:
        cmd.append(str(path))
        stdin = None
    else:
        cmd.append("-")
        stdin = text
    try:
        proc = subprocess.run(cmd, input=stdin, capture_output=True, text=True, timeout=300,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProgramError(f"the C preprocessor failed: {exc}", loc) from None
    if proc.returncode != 0:
        raise _cpp_error(proc.stderr, name, loc)
    out = proc.stdout
    if path is None:  # cpp names standard input '<stdin>'; the program has a name
        out = out.replace('"<stdin>"', _quote(name))
    return out


def _cpp_error(stderr: str, name: str, loc: Location) -> ProgramError:
    m = _CPP_ERROR.search(stderr)
    if m is None:
        first = stderr.strip().splitlines()[0] if stderr.strip() else "unknown error"
        return ProgramError(f"C preprocessor: {first}", loc)
    file = name if m.group("file") in ("<stdin>", "-") else m.group("file")
    where = Location(file, int(m.group("line")), int(m.group("col") or 1))
    return ProgramError(f"C preprocessor: {m.group('msg')}", where)


# --- .include and .once -------------------------------------------------------------------


def _quote(name: str) -> str:
    return '"' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _key(path: Path | None, name: str) -> str:
    return os.path.realpath(path) if path is not None else name


def _resolve(target: str, current: str, options: SourceOptions) -> Path | None:
    candidates = []
    if os.path.isabs(target):
        candidates.append(Path(target))
    else:
        base = Path(current).parent if current and not current.startswith("<") else Path(".")
        candidates.append(base / target)
        candidates.extend(Path(d) / target for d in options.include_dirs)
        candidates.append(Path(target))
    for c in candidates:
        if c.is_file():
            return c
    return None


def _expand_includes(text: str, name: str, options: SourceOptions, once: set[str],
                     stack: list[str]) -> str:
    """Splice the files named by ``.include`` into ``text`` (whose file is ``name``)."""
    out: list[str] = []
    pos, end, line, line_start = 0, len(text), 1, 0
    file = name
    copied = 0
    expect_file: tuple[int, int, int] | None = None  # .include seen: (start, line, column)
    while pos < end:
        m = _MASTER.match(text, pos)
        if m is None or m.lastgroup == "OPEN_COMMENT":
            break  # the lexer reports it
        kind, value = m.lastgroup, m.group()
        column = pos - line_start + 1
        if kind == "PREPROCESSOR":
            marker = LINE_MARKER.match(value)
            if marker is not None:
                line = int(marker.group(1)) - 1
                if marker.group(2) is not None:
                    file = marker_file(marker.group(2))
        elif expect_file is not None and kind not in ("WS", "COMMENT"):
            start, at_line, at_col = expect_file
            where = Location(file, at_line, at_col)
            if kind != "STRING":
                raise ProgramError(".include needs a file name in double quotes", where)
            target = value[1:-1]
            resolved = _resolve(target, file, options)
            if resolved is None:
                searched = ", ".join([str(Path(file).parent), *options.include_dirs])
                raise ProgramError(f"cannot find the included file '{target}' "
                                   f"(searched {searched})", where)
            key = _key(resolved, str(resolved))
            out.append(text[copied:start])
            if key not in once:
                if len(stack) >= MAX_INCLUDE_DEPTH:
                    raise ProgramError(f".include nested more than {MAX_INCLUDE_DEPTH} deep "
                                       "(a file that includes itself needs .once)", where)
                inner = read_program_text(resolved)
                if options.preprocessor and (options.macros or uses_preprocessor(inner)):
                    inner = run_cpp(inner, str(resolved), resolved, options)
                inner = _expand_includes(inner, str(resolved), options, once, [*stack, key])
                after = m.end() - line_start  # columns taken by what the directive leaves
                out.append(f"\n# 1 {_quote(str(resolved))}\n{inner}\n"
                           f"# {line} {_quote(file)}\n{' ' * after}")
            else:
                out.append(" " * (m.end() - start))
            copied = m.end()
            expect_file = None
        elif kind == "DIRECTIVE" and value == ".include":
            expect_file = (pos, line, column)
        elif kind == "DIRECTIVE" and value == ".once":
            once.add(stack[-1])
            out.append(text[copied:pos] + " " * len(value))
            copied = m.end()
        newlines = value.count("\n")
        if newlines:
            line += newlines
            line_start = pos + value.rindex("\n") + 1
        pos = m.end()
    if expect_file is not None:
        raise ProgramError(".include needs a file name in double quotes",
                           Location(file, expect_file[1], expect_file[2]))
    out.append(text[copied:])
    return "".join(out)

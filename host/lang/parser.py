"""Datalog (Soufflé subset) front end: parse, check and lower a program to the IR.

>>> parsed = parse_program('.decl e(x:number)\\ne(1).\\n.output e')
>>> parsed.program.facts["e"], parsed.directives[0].kind
([(1,)], 'output')

Every problem is raised as :class:`gpu_engine.ir.ProgramError` with the location
(file, line, column) of the offending token.

Pipeline: ``grammar.lark`` (LALR, tokens from :mod:`host.lang.dl_lexer`) is reduced straight
into the surface tree of :mod:`host.dl_syntax` by :mod:`host.dl_builder`;
:mod:`host.dl_lower` then resolves types (:mod:`host.dl_types`), expands disjunctions and
multiple heads, and has :mod:`host.dl_typecheck` (with :mod:`host.dl_safety` and
:mod:`host.dl_fold`) check and lower each clause to :mod:`gpu_engine.ir`.
"""

from __future__ import annotations

import gc
import hashlib
import os
import sys
import threading
from functools import lru_cache
from importlib import resources
from pathlib import Path

from gpu_engine.host.lang.dl_builder import Builder
from gpu_engine.host.lang.dl_components import expand_components
from gpu_engine.host.lang.dl_fold import word_size_context
from gpu_engine.host.lang.dl_inline import inline_relations
from gpu_engine.host.lang.dl_lexer import LINE_MARKER, DatalogLexer, LexError, marker_file
from gpu_engine.host.lang.dl_lower import Lowering
from gpu_engine.host.lang.dl_result import Directive, ParsedProgram
from gpu_engine.host.lang.dl_source import SourceOptions, expand_source, load_source
from gpu_engine.host.lang.dl_syntax import Statement
from lark import Lark, Token
from lark import __version__ as lark_version
from lark.exceptions import UnexpectedCharacters, UnexpectedEOF, UnexpectedInput, UnexpectedToken

from gpu_engine.ir import Location, ProgramError

__all__ = ["Directive", "ParsedProgram", "parse_file", "parse_program", "parse_statements"]

# package data read through importlib.resources: also inside a zip (the package as the
# Spark backend ships it to executors)
_GRAMMAR = resources.files(__package__ or "gpu_engine.host.lang").joinpath("grammar.lark")
_LOCK = threading.Lock()
_RECURSION_LIMIT = 20_000

_TERMINAL_NAMES = {
    "IDENT": "identifier",
    "NUMBER": "number",
    "STRING": "string",
    "$END": "end of input",
}


@lru_cache(maxsize=1)
def _parser() -> tuple[Lark, Builder]:
    builder = Builder()
    grammar = _GRAMMAR.read_text(encoding="utf-8")
    parser = Lark(
        grammar,
        parser="lalr",
        lexer=DatalogLexer,
        maybe_placeholders=True,
        transformer=builder,
        cache=_cache_file(grammar),
    )
    return parser, builder


def _cache_file(grammar: str) -> str | bool:
    """Where lark keeps the analysed grammar between processes (building the LALR tables
    costs about 0.3 s of every start-up): a file named after the grammar, lark and Python
    in the user's cache folder (``$XDG_CACHE_HOME`` or ``~/.cache``, ``gpu-engine/``);
    False (no cache) when that folder cannot be written or ``GPU_ENGINE_PARSER_CACHE=0``.
    Lark checks the file's digest before using it and rebuilds the tables when it does
    not match or cannot be read."""
    if os.environ.get("GPU_ENGINE_PARSER_CACHE", "1") == "0":
        return False
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = os.path.join(base, "gpu-engine")
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
    except OSError:
        return False
    if not os.access(folder, os.W_OK):
        return False
    key = hashlib.sha256(f"{grammar}{lark_version}{sys.version_info[:2]}".encode()).hexdigest()
    return os.path.join(folder, f"grammar-{key[:16]}.lark")


def parse_program(text: str, filename: str = "<input>", word_size: int = 32) -> ParsedProgram:
    """Parse and check a program given as text; ``filename`` is used in locations.

    ``.include`` directives are resolved relative to ``filename``'s folder; the text is not
    run through the C preprocessor (:func:`parse_file` and the ``Reasoner`` do that).
    ``word_size`` (32 or 64) is the width of numbers, unsigned and floats: constants are
    range-checked and folded in it."""
    if ".include" in text or ".once" in text:
        text = expand_source(text, filename, SourceOptions(preprocessor=False))
    lark, builder = _parser()
    gc_enabled = gc.isenabled()
    gc.disable()  # the trees are acyclic; collecting during the parse only costs time
    try:
        with _LOCK:
            builder.filename = filename
            DatalogLexer.filename = filename
            try:
                statements = lark.parse(text)
            except UnexpectedInput as e:
                raise _syntax_error(e, text, filename, lark) from None
            except LexError as e:
                raise ProgramError(
                    e.message, Location(e.file or filename, e.line, e.column)
                ) from None
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, _RECURSION_LIMIT))  # long operator chains nest deeply
        try:
            with word_size_context(word_size):
                return Lowering(inline_relations(expand_components(statements))).run()
        finally:
            sys.setrecursionlimit(limit)
    finally:
        if gc_enabled:
            gc.enable()


def parse_statements(text: str, filename: str = "<input>") -> list[Statement]:
    """The surface statements of ``text`` (parsed, not yet checked or lowered)."""
    lark, builder = _parser()
    with _LOCK:
        builder.filename = filename
        DatalogLexer.filename = filename
        try:
            return lark.parse(text)  # type: ignore[return-value]
        except UnexpectedInput as e:
            raise _syntax_error(e, text, filename, lark) from None
        except LexError as e:
            raise ProgramError(e.message, Location(e.file or filename, e.line, e.column)) from None


def parse_file(path: str | Path, options: SourceOptions | None = None) -> ParsedProgram:
    """Parse and check the program in ``path`` (preprocessed, ``.include``s spliced)."""
    source = load_source(path, options)
    return parse_program(source.text, source.name,
                         options.word_size if options is not None else 32)


# --- syntax errors ---------------------------------------------------------------------


def _describe_terminal(lark: Lark, name: str) -> str:
    if name in _TERMINAL_NAMES:
        return _TERMINAL_NAMES[name]
    try:
        pattern = lark.get_terminal(name).pattern
    except KeyError:
        return name
    return f"'{pattern.value}'" if pattern.type == "str" else name


_RARE = {"'$'", "'@'", "'['", "'autoinc'", "'nil'"}  # only there to report unsupported input
_STRUCTURAL = {"')'", "','", "'.'", "':-'", "'('", "';'", "'='"}


def _expected(lark: Lark, names: set[str] | frozenset[str]) -> str:
    described = {_describe_terminal(lark, n) for n in names} - _RARE
    if "identifier" in described:  # keywords are identifiers too; listing them is noise
        described = {d for d in described if not (d[1:2].isalpha() and d.endswith("'"))}
    ordered = sorted(
        described,
        key=lambda d: (0 if d in _STRUCTURAL else 1 if d in _TERMINAL_NAMES.values() else 2, d),
    )
    if len(ordered) > 10:
        ordered = [*ordered[:10], "..."]
    return ", ".join(ordered)


def _end_location(text: str, filename: str) -> Location:
    """Where the text ends, in the file and line that the last line marker (an
    ``.include`` expansion, cpp) says its last line is."""
    lines = text.split("\n")
    file, line = filename, 0
    for raw in lines:
        marker = LINE_MARKER.match(raw) if raw.lstrip().startswith("#") else None
        if marker is not None:
            line = int(marker.group(1)) - 1
            if marker.group(2) is not None:
                file = marker_file(marker.group(2))
        else:
            line += 1
    return Location(file, max(line, 1), len(lines[-1]) + 1)


def _syntax_error(e: UnexpectedInput, text: str, filename: str, lark: Lark) -> ProgramError:
    if isinstance(e, UnexpectedToken):
        tok: Token = e.token
        expected = _expected(lark, e.expected)
        if tok.type == "$END":
            return ProgramError(
                f"syntax error: unexpected end of input, expected {expected}",
                _end_location(text, filename),
            )
        return ProgramError(
            f"syntax error: unexpected {_describe_token(tok)}, expected {expected}",
            Location(getattr(tok, "file", filename), tok.line or 0, tok.column or 0),
        )
    if isinstance(e, UnexpectedCharacters):
        loc = Location(filename, e.line, e.column)
        rest = text[e.pos_in_stream : e.pos_in_stream + 2]
        if rest == "/*":
            return ProgramError("syntax error: unterminated comment", loc)
        if rest[:1] == '"':
            return ProgramError("syntax error: unterminated string literal", loc)
        return ProgramError(f"syntax error: unexpected character {rest[:1]!r}", loc)
    if isinstance(e, UnexpectedEOF):
        return ProgramError("syntax error: unexpected end of input", _end_location(text, filename))
    return ProgramError(f"syntax error: {e}", Location(filename, e.line, e.column))


def _describe_token(tok: Token) -> str:
    if tok.type == "IDENT":
        return f"identifier '{_one_line(tok)}'"
    if tok.type == "NUMBER":
        return f"number {_one_line(tok)}"
    if tok.type == "STRING":
        return f"string {_one_line(tok)}"
    return f"'{_one_line(tok)}'"


def _one_line(text: str, limit: int = 60) -> str:
    """A token as it appears in a one-line message: up to its first line break, shortened."""
    first = text.splitlines()[0] if text else text
    if first != text or len(first) > limit:
        return first[:limit] + "..."
    return first

"""A fast contextual lexer for the Datalog grammar (plugged into lark's LALR parser).

It splits the text with one compiled regular expression and, like lark's contextual
lexer, turns an identifier into a keyword (``input``, ``min``, ``band``, ...) only where
the parser state accepts that keyword.  Terminal names come from the grammar, so the two
cannot drift apart; tests compare its output with lark's own contextual lexer.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from lark import Token
from lark.lexer import Lexer, LexerState, PatternStr

_STRING_LITERAL = r'"(?:\\.|[^"\\])*"'  # also skipped inside annotations (annotation_end)
_STRING = re.compile(_STRING_LITERAL)
_MASTER = re.compile(
    r"""
     (?P<WS>[ \t\f\r\n]+)
    |(?P<COMMENT>//[^\n]*|/\*[\s\S]*?\*/)
    |(?P<OPEN_COMMENT>/\*)
    |(?P<PREPROCESSOR>\#[^\n]*)
    |(?P<STRING>""" + _STRING_LITERAL + r""")
    |(?P<NUMBER>0x[0-9a-fA-F]+u?|0b[01]+u?|[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+|[0-9]+\.[0-9]+|[0-9]+u?)
    |(?P<CHOICE>choice-domain)
    |(?P<IDENT>[_?a-zA-Z][_?a-zA-Z0-9]*)
    |(?P<DIRECTIVE>\.[a-z_]+(?![_?a-zA-Z0-9]))
    |(?P<PUNCT>:-|<:|<=|>=|!=|[-+*/%^()\[\]{},.:;=<>!|@$])
    """,
    re.VERBOSE,
)

_QUALIFIED = re.compile(r"(?:\.[_?a-zA-Z][_?a-zA-Z0-9]*)+")

# `# 12 "file.dl"` and `#line 12 "file.dl"` markers (as cpp and the .include expansion of
# host/lang/dl_source.py write them): the next line is line 12 of file.dl.
LINE_MARKER = re.compile(r'#\s*(?:line\s+)?(\d+)(?:\s+"((?:\\.|[^"\\])*)")?(?:\s|$)')


class SourceToken(Token):
    """A token that knows the file it was read from (line markers switch files)."""

    __slots__ = ("file",)


def marker_file(raw: str) -> str:
    """The file name of a line marker, with cpp's escapes (``\\``, ``\"``) resolved."""
    return re.sub(r"\\(.)", r"\1", raw)


class LexError(Exception):
    """A lexical error at ``line``/``column`` (converted to ProgramError by the parser)."""

    def __init__(self, message: str, line: int, column: int, file: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column
        self.file = file


class DatalogLexer(Lexer):
    """Contextual lexer: see the module docstring."""

    __future_interface__ = 2
    filename = "<input>"  # the parsed text's file name (set by the parser, for __FILE__)

    def __init__(self, lexer_conf: Any) -> None:
        self.keywords: dict[str, str] = {}
        self.directives: dict[str, str] = {}
        self.punct: dict[str, str] = {}
        for term in lexer_conf.terminals:
            pattern = term.pattern
            if not isinstance(pattern, PatternStr):
                continue
            value = pattern.value
            if value.startswith(".") and len(value) > 1:
                self.directives[value] = term.name
            elif value[0].isalpha() or value[0] == "_":
                self.keywords[value] = term.name
            else:
                self.punct[value] = term.name

    def lex(self, lexer_state: LexerState, parser_state: Any) -> Iterator[Token]:
        """Yield the tokens of the text, choosing keywords by the current parser state."""
        text_slice = lexer_state.text
        text: str = getattr(text_slice, "text", text_slice)
        states = parser_state.parse_conf.states
        stack = parser_state.state_stack
        match = _MASTER.match
        keywords, directives, punct = self.keywords, self.directives, self.punct
        pos, end, line, line_start = 0, len(text), 1, 0
        previous = ""  # the last token's text
        file: str | None = None  # None: the parsed text's own file name
        while pos < end:
            if text[pos] == "@" and text.startswith(("@[", "@!["), pos):
                stop = annotation_end(text, pos)  # Soufflé 2.4's annotations: ignored
                if stop < 0:
                    raise LexError("syntax error: unterminated annotation", line,
                                   pos - line_start + 1, file)
                newlines = text.count("\n", pos, stop)
                if newlines:
                    line += newlines
                    line_start = text.rindex("\n", pos, stop) + 1
                pos = stop
                continue
            m = match(text, pos)
            kind = m.lastgroup if m is not None else "OPEN_COMMENT"
            if kind == "OPEN_COMMENT":
                err = self._error(text, pos, line, pos - line_start + 1)
                err.file = file
                raise err
            value = m.group()
            column = pos - line_start + 1
            if kind in ("WS", "COMMENT", "PREPROCESSOR", "STRING"):
                if kind == "PREPROCESSOR":
                    marker = LINE_MARKER.match(value)
                    if marker is None:
                        raise LexError(
                            f"C preprocessor directive '{value.split()[0]}', but the text "
                            "was not run through the C preprocessor (--no-preprocessor, or "
                            "parsed directly: load the file, or see host.lang.dl_source)",
                            line,
                            column,
                            file,
                        )
                    line = int(marker.group(1)) - 1  # the marker's own newline follows
                    if marker.group(2) is not None:
                        file = marker_file(marker.group(2))
                if kind == "STRING":
                    yield _token("STRING", value, pos, line, column, file)
                newlines = value.count("\n")
                if newlines:
                    line += newlines
                    line_start = pos + value.rindex("\n") + 1
                pos = m.end()
                continue
            if kind == "IDENT":
                if pos and text[pos - 1] == "$":  # `$inst.Branch`: a qualified ADT branch
                    more = _QUALIFIED.match(text, m.end())
                    if more is not None:
                        value += more.group()
                kw = keywords.get(value)
                ttype = kw if kw is not None and kw in states[stack[-1]] else "IDENT"
                if value in ("min", "max") and previous not in _OPERATORS:
                    agg = "MIN_AGG" if value == "min" else "MAX_AGG"
                    if agg in states[stack[-1]] and _paren_then_colon(text, m.end()):
                        ttype = agg  # `max(y) : body`: an aggregate, not the functor
                if value in ("__LINE__", "__FILE__"):  # as Soufflé's lexer does
                    yield _special(value, pos, line, column, file)
                    pos += len(value)
                    continue
            elif kind == "NUMBER":
                ttype = "NUMBER"
            elif kind == "PUNCT":
                ttype = punct[value]
            elif kind == "DIRECTIVE":
                ttype = directives.get(value, "")
                if ttype not in states[stack[-1]]:  # not a directive here: a plain '.'
                    value, ttype = ".", punct["."]
            else:  # CHOICE
                ttype = keywords.get("choice-domain", "CHOICE_DOMAIN")
                if ttype not in states[stack[-1]]:
                    value, ttype = "choice", "IDENT"
            previous = value
            yield _token(ttype, value, pos, line, column, file)
            pos += len(value)

    @staticmethod
    def _error(text: str, pos: int, line: int, column: int) -> LexError:
        if text.startswith("/*", pos):
            return LexError("syntax error: unterminated comment", line, column)
        if text.startswith('"', pos):
            return LexError("syntax error: unterminated string literal", line, column)
        return LexError(f"syntax error: unexpected character {text[pos]!r}", line, column)


# tokens after which `min(`/`max(` continue an expression (`sum x + max(a, b) : ...`):
# there they are the functors
_OPERATORS = frozenset({"+", "-", "*", "/", "%", "^", "band", "bor", "bxor", "bshl", "bshr",
                        "bshru", "land", "lor", "lxor", "bnot", "lnot", "sum", "mean", "min",
                        "max", "count"})


def _paren_then_colon(text: str, pos: int) -> bool:
    """Whether ``text`` continues at ``pos`` with a balanced parenthesis (strings inside
    skipped) and then ``:`` that does not begin ``:-``."""
    n = len(text)
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    if pos >= n or text[pos] != "(":
        return False
    depth = 0
    while pos < n:
        c = text[pos]
        if c == '"':
            m = _STRING.match(text, pos)
            if m is None:
                return False
            pos = m.end()
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if not depth:
                break
        pos += 1
    pos += 1
    while pos < n and text[pos] in " \t\r\n":
        pos += 1
    return text.startswith(":", pos) and not text.startswith(":-", pos)


def annotation_end(text: str, pos: int) -> int:
    """The end of the annotation ``@[...]`` or ``@![...]`` at ``pos`` (its brackets,
    parentheses and braces balanced, string literals skipped), or -1."""
    depth, i, n = 0, pos + 1, len(text)
    while i < n:
        c = text[i]
        if c == '"':
            string = _STRING.match(text, i)  # the lexer's own string literal
            if string is None:
                return -1
            i = string.end()
            continue
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    return -1


_STRING = re.compile(_STRING_LITERAL)


def _token(ttype: str, value: str, pos: int, line: int, column: int, file: str | None) -> Token:
    if file is None:
        return Token(ttype, value, pos, line, column)
    tok = SourceToken(ttype, value, pos, line, column)
    tok.file = file
    return tok


def _special(name: str, pos: int, line: int, column: int, file: str | None) -> Token:
    """``__LINE__`` as a number, ``__FILE__`` as a string literal."""
    if name == "__LINE__":
        return _token("NUMBER", str(line), pos, line, column, file)
    path = file or DatalogLexer.filename
    quoted = '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return _token("STRING", quoted, pos, line, column, file)

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

_MASTER = re.compile(
    r"""
     (?P<WS>[ \t\f\r\n]+)
    |(?P<COMMENT>//[^\n]*|/\*[\s\S]*?\*/)
    |(?P<OPEN_COMMENT>/\*)
    |(?P<PREPROCESSOR>\#[^\n]*)
    |(?P<STRING>"(?:\\.|[^"\\])*")
    |(?P<NUMBER>0x[0-9a-fA-F]+u?|0b[01]+u?|[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+|[0-9]+\.[0-9]+|[0-9]+u?)
    |(?P<CHOICE>choice-domain)
    |(?P<IDENT>[_?a-zA-Z][_?a-zA-Z0-9]*)
    |(?P<DIRECTIVE>\.[a-z_]+)
    |(?P<PUNCT>:-|<:|<=|>=|!=|[-+*/%^()\[\]{},.:;=<>!|@$])
    """,
    re.VERBOSE,
)

# `# 12 "file.dl"` and `#line 12 "file.dl"` markers (as cpp writes them) are skipped.
_LINE_MARKER = re.compile(r"#\s*(line\s+)?\d+(\s|$)")


class LexError(Exception):
    """A lexical error at ``line``/``column`` (converted to ProgramError by the parser)."""

    def __init__(self, message: str, line: int, column: int) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.column = column


class DatalogLexer(Lexer):
    """Contextual lexer: see the module docstring."""

    __future_interface__ = 2

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
        while pos < end:
            m = match(text, pos)
            kind = m.lastgroup if m is not None else "OPEN_COMMENT"
            if kind == "OPEN_COMMENT":
                raise self._error(text, pos, line, pos - line_start + 1)
            value = m.group()
            column = pos - line_start + 1
            if kind in ("WS", "COMMENT", "PREPROCESSOR", "STRING"):
                if kind == "PREPROCESSOR" and not _LINE_MARKER.match(value):
                    raise LexError(
                        f"C preprocessor directive '{value.split()[0]}' is not supported "
                        "(run the C preprocessor first)",
                        line,
                        column,
                    )
                if kind == "STRING":
                    yield Token("STRING", value, pos, line, column)
                newlines = value.count("\n")
                if newlines:
                    line += newlines
                    line_start = pos + value.rindex("\n") + 1
                pos = m.end()
                continue
            if kind == "IDENT":
                kw = keywords.get(value)
                ttype = kw if kw is not None and kw in states[stack[-1]] else "IDENT"
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
            yield Token(ttype, value, pos, line, column)
            pos += len(value)

    @staticmethod
    def _error(text: str, pos: int, line: int, column: int) -> LexError:
        if text.startswith("/*", pos):
            return LexError("syntax error: unterminated comment", line, column)
        if text.startswith('"', pos):
            return LexError("syntax error: unterminated string literal", line, column)
        return LexError(f"syntax error: unexpected character {text[pos]!r}", line, column)

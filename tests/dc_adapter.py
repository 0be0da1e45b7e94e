"""The engine as a ``datalog_conformance.DatalogEvaluator``.

The package's core cases give facts as YAML tuples and rules as strings in a Soufflé-like
syntax (``not`` for negation, an optional final ``.``, parenthesised constraints, no
declarations). ``translate`` parses them into the tests' own AST (generators.py), declares every
relation with the arity of its first use and column types inferred by unifying facts, constants,
arithmetic and shared variables (unresolved columns default to ``symbol``), and renders Soufflé
text. Facts whose width matches the declaration go through ``Reasoner.add_facts``; the others
are written into the program text, so the engine itself meets (and must reject) the mismatch.

Engine diagnostics (``ProgramError``, ``FactsError``) are re-raised as ``ConformanceRejection``
whose class name and ``code`` name the kind of error the engine's message describes, which is
how the package's runner matches ``expect_error``. Other exceptions (crashes) pass unchanged.

Plugin use: ``pytest --pyargs ... --datalog-evaluator=dc_adapter.GpuEngineEvaluator``; the suite
itself runs the cases through ``tests/test_datalog_conformance.py``.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterator
from typing import Any

import pyarrow as pa
from datalog_conformance.schema import Model
from datalog_conformance.schema import Program as DCProgram
from generators import (
    NUMBER,
    SYMBOL,
    Atom,
    BinOp,
    Cmp,
    Const,
    Expr,
    Literal,
    Neg,
    Program,
    Relation,
    Row,
    Rule,
    Term,
    Var,
    Wild,
    render_program,
)
from reference import term_vars

FLOAT = "float"

# --------------------------------------------------------------------------- rule parser

_TOKEN = re.compile(
    r"""\s*(?:
        (?P<str>"(?:[^"\\]|\\.)*")
      | (?P<num>\d+(?:\.\d+)?)
      | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
      | (?P<op>:-|!=|<=|>=|[=<>(),.!;+\-*/%^])
    )""",
    re.VERBOSE,
)
CMP_OPS = {"=", "!=", "<", "<=", ">", ">="}


class RuleSyntaxError(ValueError):
    """A rule string the translator cannot read (a bug in the translator, not the engine)."""


def tokenize(text: str) -> list[tuple[str, str]]:
    """(kind, text) tokens of a rule; kind is str, num, id or op."""
    tokens: list[tuple[str, str]] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if m is None or m.end() == pos:
            raise RuleSyntaxError(f"cannot tokenize {text[pos:]!r} in {text!r}")
        kind = m.lastgroup
        assert kind is not None
        tokens.append((kind, m.group(kind)))
        pos = m.end()
    return tokens


class _Parser:
    """Recursive descent over one rule: ``head [:- literal, ...] [.]``."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.tokens = tokenize(text)
        self.i = 0

    def peek(self, offset: int = 0) -> str | None:
        j = self.i + offset
        return self.tokens[j][1] if j < len(self.tokens) else None

    def take(self, expected: str | None = None) -> tuple[str, str]:
        if self.i >= len(self.tokens):
            raise RuleSyntaxError(f"unexpected end of {self.text!r}")
        tok = self.tokens[self.i]
        if expected is not None and tok[1] != expected:
            raise RuleSyntaxError(f"expected {expected!r}, got {tok[1]!r} in {self.text!r}")
        self.i += 1
        return tok

    def literal(self) -> Literal:
        if self.peek() in ("not", "!") and self.peek(2) == "(" or self.peek() == "!":
            self.take()
            return Neg(self.atom())
        if self.tokens[self.i][0] == "id" and self.peek(1) == "(":
            return self.atom()
        cmp = self.comparison()
        if not isinstance(cmp, Cmp):
            raise RuleSyntaxError(f"expected a literal in {self.text!r}")
        return cmp

    def atom(self) -> Atom:
        kind, name = self.take()
        if kind != "id":
            raise RuleSyntaxError(f"expected a relation name, got {name!r} in {self.text!r}")
        self.take("(")
        args: list[Term] = []
        if self.peek() != ")":
            args.append(self.expr())
            while self.peek() == ",":
                self.take()
                args.append(self.expr())
        self.take(")")
        return Atom(name, tuple(args))

    def comparison(self) -> Term | Cmp:
        left = self.expr()
        if self.peek() in CMP_OPS:
            op = self.take()[1]
            return Cmp(op, _as_expr(left), _as_expr(self.expr()))
        return left

    def expr(self) -> Term:
        left = self.term()
        while self.peek() in ("+", "-"):
            op = self.take()[1]
            left = BinOp(op, _as_expr(left), _as_expr(self.term()))
        return left

    def term(self) -> Term:
        left = self.power()
        while self.peek() in ("*", "/", "%"):
            op = self.take()[1]
            left = BinOp(op, _as_expr(left), _as_expr(self.power()))
        return left

    def power(self) -> Term:
        base = self.unary()
        if self.peek() == "^":
            self.take()
            return BinOp("^", _as_expr(base), _as_expr(self.power()))
        return base

    def unary(self) -> Term:
        if self.peek() == "-":
            self.take()
            inner = self.unary()
            if isinstance(inner, Const) and isinstance(inner.value, int | float):
                return Const(-inner.value)
            return BinOp("-", Const(0), _as_expr(inner))
        return self.primary()

    def primary(self) -> Term:
        kind, text = self.take()
        if kind == "num":
            return Const(float(text) if "." in text else int(text))
        if kind == "str":
            return Const(bytes(text[1:-1], "utf-8").decode("unicode_escape"))
        if kind == "id":
            return Wild() if text == "_" else Var(text)
        if text == "(":
            inner = self.comparison()
            self.take(")")
            if isinstance(inner, Cmp):
                raise _ParenthesisedCmp(inner)
            return inner
        raise RuleSyntaxError(f"unexpected {text!r} in {self.text!r}")


class _ParenthesisedCmp(Exception):  # noqa: N818 - control flow, never escapes parse_rule
    def __init__(self, cmp: Cmp) -> None:
        self.cmp = cmp


def _as_expr(term: Term | Cmp) -> Expr:
    if isinstance(term, Wild | Cmp):
        raise RuleSyntaxError(f"{term} cannot be an operand")
    return term


def parse_rule(text: str) -> Rule:
    """Parse one rule string of the conformance format into the tests' AST."""
    parser = _Parser(text)
    body: list[Literal] = []
    head = parser.atom()
    if parser.peek() == ":-":
        parser.take()
        while True:
            start = parser.i
            try:
                body.append(parser.literal())
            except _ParenthesisedCmp as paren:  # ``(n <= 25)``: a whole parenthesised literal
                parser.i = start
                parser.take("(")
                cmp = parser.comparison()
                parser.take(")")
                if not isinstance(cmp, Cmp):
                    raise RuleSyntaxError(f"expected a comparison in {text!r}") from paren
                body.append(cmp)
            if parser.peek() != ",":
                break
            parser.take()
    if parser.peek() == ".":
        parser.take()
    if parser.peek() is not None:
        raise RuleSyntaxError(f"trailing {parser.peek()!r} in {text!r}")
    return Rule(head, tuple(body))


# --------------------------------------------------------------------------- type inference


class _Types:
    """Union-find over columns ("col", rel, i) and rule variables ("var", rule, name)."""

    def __init__(self) -> None:
        self.parent: dict[tuple[Any, ...], tuple[Any, ...]] = {}
        self.type: dict[tuple[Any, ...], str] = {}

    def find(self, key: tuple[Any, ...]) -> tuple[Any, ...]:
        while self.parent.setdefault(key, key) != key:
            key = self.parent[key]
        return key

    def union(self, a: tuple[Any, ...], b: tuple[Any, ...]) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[rb] = ra
            if ra not in self.type and rb in self.type:
                self.type[ra] = self.type[rb]

    def fix(self, key: tuple[Any, ...], typ: str) -> None:
        self.type.setdefault(self.find(key), typ)

    def get(self, key: tuple[Any, ...]) -> str:
        return self.type.get(self.find(key), SYMBOL)


def _value_type(value: Any) -> str:
    if isinstance(value, bool) or isinstance(value, str):
        return SYMBOL
    return FLOAT if isinstance(value, float) else NUMBER


def _atoms(rule: Rule) -> Iterator[Atom]:
    yield rule.head
    for lit in rule.body:
        if isinstance(lit, Atom):
            yield lit
        elif isinstance(lit, Neg):
            yield lit.atom


def _unify_term(types: _Types, key: tuple[Any, ...], term: Term, scope: int) -> None:
    if isinstance(term, Var):
        types.union(key, ("var", scope, term.name))
    elif isinstance(term, BinOp):
        for name in term_vars(term):
            types.union(("num",), ("var", scope, name))
        types.union(("num",), key)


def _fix_constant(types: _Types, key: tuple[Any, ...], term: Term) -> None:
    if isinstance(term, Const):
        types.fix(key, _value_type(term.value))


def _coerce(value: Any, typ: str) -> Any:
    """A constant of the other kind made to fit its column (the harvest turned some numeral
    symbols into YAML integers)."""
    if typ == NUMBER and isinstance(value, str) and re.fullmatch(r"-?\d+", value.strip()):
        return int(value)
    if typ == SYMBOL and isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return value


def _coerce_term(term: Term, typ: str) -> Term:
    return Const(_coerce(term.value, typ)) if isinstance(term, Const) else term


def existential_negation(rules: tuple[Rule, ...]) -> tuple[Rule, ...]:
    """Variables that occur only inside one negated atom are existential there (as in Nemo):
    ``!s(X, P)`` becomes ``!s(X, _)``, and ``!s(X, P, P)`` becomes ``!aux(X)`` with
    ``aux(X) :- s(X, P, P)``. Soufflé would reject such variables as ungrounded."""
    out: list[Rule] = []
    aux_count = 0
    for rule in rules:
        body: list[Literal] = []
        for j, lit in enumerate(rule.body):
            if not isinstance(lit, Neg):
                body.append(lit)
                continue
            elsewhere = set(term_vars_of(rule.head)).union(
                *(term_vars_of(other) for k, other in enumerate(rule.body) if k != j)
            )
            names = [a.name for a in lit.atom.args if isinstance(a, Var)]
            local = {n for n in names if n not in elsewhere}
            if not local or any(not isinstance(a, Var | Const | Wild) for a in lit.atom.args):
                body.append(lit)
            elif all(names.count(n) == 1 for n in local):
                args = tuple(
                    Wild() if isinstance(a, Var) and a.name in local else a for a in lit.atom.args
                )
                body.append(Neg(Atom(lit.atom.rel, args)))
            else:
                aux_count += 1
                outer = tuple(Var(n) for n in dict.fromkeys(names) if n not in local)
                aux = Atom(f"neg_aux{aux_count}", outer)
                out.append(Rule(aux, (lit.atom,)))
                body.append(Neg(aux))
        out.append(Rule(rule.head, tuple(body), rule.alternatives))
    return tuple(out)


def term_vars_of(item: Atom | Literal) -> set[str]:
    """Variables of an atom or literal."""
    if isinstance(item, Atom):
        return set().union(*(term_vars(a) for a in item.args))
    if isinstance(item, Neg):
        return term_vars_of(item.atom)
    if isinstance(item, Cmp):
        return term_vars(item.left) | term_vars(item.right)
    return {item.var.name} | term_vars(item.expr)


def translate(program: DCProgram) -> Program:
    """The conformance program as the tests' AST (declarations, types and facts inferred)."""
    rules = existential_negation(tuple(parse_rule(text) for text in program.rules))
    arity: dict[str, int] = {}
    for name, rows in program.facts.items():
        if rows:
            arity.setdefault(name, len(rows[0]))
    for rule in rules:
        for atom in _atoms(rule):
            arity.setdefault(atom.rel, len(atom.args))
    for name in program.facts:
        arity.setdefault(name, 0)

    # unify first, then fix types: evidence from facts beats constants in rules
    types = _Types()
    for scope, rule in enumerate(rules):
        for atom in _atoms(rule):
            if len(atom.args) == arity[atom.rel]:
                for i, arg in enumerate(atom.args):
                    _unify_term(types, ("col", atom.rel, i), arg, scope)
        for j, lit in enumerate(rule.body):
            if isinstance(lit, Cmp):
                _unify_term(types, ("cmp", scope, j), lit.left, scope)
                _unify_term(types, ("cmp", scope, j), lit.right, scope)
    types.fix(("num",), NUMBER)
    facts: dict[str, list[Row]] = {}
    inline: dict[str, list[Row]] = {}
    for name, rows in program.facts.items():
        for row in rows:
            if len(row) == arity[name]:
                facts.setdefault(name, []).append(tuple(row))  # type: ignore[arg-type]
                for i, value in enumerate(row):
                    types.fix(("col", name, i), _value_type(value))
            else:
                inline.setdefault(name, []).append(tuple(row))  # type: ignore[arg-type]
    for scope, rule in enumerate(rules):
        for atom in _atoms(rule):
            if len(atom.args) == arity[atom.rel]:
                for i, arg in enumerate(atom.args):
                    _fix_constant(types, ("col", atom.rel, i), arg)
        for j, lit in enumerate(rule.body):
            if isinstance(lit, Cmp):
                _fix_constant(types, ("cmp", scope, j), lit.left)
                _fix_constant(types, ("cmp", scope, j), lit.right)

    def col(rel: str, i: int) -> str:
        return types.get(("col", rel, i))

    def fit(atom: Atom) -> Atom:
        if len(atom.args) != arity[atom.rel]:
            return atom
        return Atom(
            atom.rel, tuple(_coerce_term(a, col(atom.rel, i)) for i, a in enumerate(atom.args))
        )

    typed_rules: list[Rule] = []
    for scope, rule in enumerate(rules):
        body: list[Literal] = []
        for j, lit in enumerate(rule.body):
            if isinstance(lit, Atom):
                body.append(fit(lit))
            elif isinstance(lit, Neg):
                body.append(Neg(fit(lit.atom)))
            elif isinstance(lit, Cmp):
                typ = types.get(("cmp", scope, j))
                body.append(Cmp(lit.op, *(_coerce_term(t, typ) for t in (lit.left, lit.right))))  # type: ignore[arg-type]
            else:
                body.append(lit)
        typed_rules.append(Rule(fit(rule.head), tuple(body), rule.alternatives))
    typed_facts: dict[str, list[Row]] = {}
    for name, rows in facts.items():
        for row in rows:
            fitted = tuple(_coerce(v, col(name, i)) for i, v in enumerate(row))
            fits = all(
                _value_type(v) == col(name, i) or (col(name, i), _value_type(v)) == (FLOAT, NUMBER)
                for i, v in enumerate(fitted)
            )
            # ill-typed rows go into the program text, for the engine to reject
            (typed_facts if fits else inline).setdefault(name, []).append(fitted)
    facts = typed_facts
    relations = tuple(
        Relation(name, tuple(col(name, i) for i in range(n))) for name, n in arity.items()
    )
    return Program(relations, tuple(typed_rules), facts, inline, {n: "arrow" for n in facts})


# --------------------------------------------------------------------------- evaluator


class ConformanceRejection(Exception):
    """The engine rejected the program; ``code`` says why (see ``classify``)."""

    code = "rejected"


def _rejection(name: str, code: str) -> type[ConformanceRejection]:
    return type(name, (ConformanceRejection,), {"code": code})


# (pattern over the engine's message, class name, code), first match wins
_KINDS: list[tuple[str, type[ConformanceRejection]]] = [
    (
        r"arit|argument(s)? (count|number)|expects? \d+ (argument|column|value)|width",
        _rejection("ArityMismatchError", "arity_mismatch"),
    ),
    (
        r"stratif|negat\w* .*(cycle|recurs)|(cycle|recurs)\w* .*negat",
        _rejection("CyclicNegationError", "cyclic_negation"),
    ),
    (
        r"underscore|wildcard|anonymous|\b_\b.*head|head.*\b_\b",
        _rejection("SafetyViolationError", "safety_violations"),
    ),
    (
        r"ground|unbound|not bound|range.restrict|unsafe|safety|limited",
        _rejection("SafetyViolationError", "unbound_variable"),
    ),
]


def classify(message: str) -> type[ConformanceRejection]:
    """The rejection class for an engine diagnostic, by what its message says."""
    for pattern, cls in _KINDS:
        if re.search(pattern, message, re.IGNORECASE):
            return cls
    return ConformanceRejection


def _engine_errors() -> tuple[type[BaseException], ...]:
    from gpu_engine import ProgramError

    try:
        from gpu_engine.host.io import FactsError
    except ImportError:  # pragma: no cover - older layouts
        return (ProgramError,)
    return (ProgramError, FactsError)


def table_rows(table: pa.Table, rel: Relation) -> set[Row]:
    """An engine result table as a set of tuples (nullary: ``{()}`` when it holds)."""
    if rel.arity == 0:
        return {()} if table.num_rows else set()
    return set(zip(*(table.column(i).to_pylist() for i in range(rel.arity)), strict=True))


_CACHE: dict[tuple[str, str], dict[str, set[Row]]] = {}


def program_key(program: DCProgram) -> str:
    text = repr((program.rules, sorted(program.facts.items())))
    return hashlib.sha256(text.encode()).hexdigest()


class GpuEngineEvaluator:
    """``evaluate(program) -> Model`` through ``gpu_engine.Reasoner`` on one device.

    Results are cached per (device, program content): many cases share one program and
    differ only in the relation they check.
    """

    def __init__(self, device: str | None = None) -> None:
        self.device = device or os.environ.get("GPU_ENGINE_TEST_DEVICE") or "auto"

    def evaluate(self, program: DCProgram) -> Model:
        """Materialise ``program`` with the engine and return every relation."""
        key = (self.device, program_key(program))
        if key not in _CACHE:
            _CACHE[key] = self._run(translate(program))
        return Model(facts={k: set(v) for k, v in _CACHE[key].items()})

    def _run(self, program: Program) -> dict[str, set[Row]]:
        from gpu_engine import Reasoner

        text = render_program(program)
        try:
            reasoner = Reasoner(text, device=self.device)
            for name, rows in program.facts.items():
                rel = program.relation(name)
                reasoner.add_facts(name, _arrow(rel, rows))
            reasoner.materialise()
        except _engine_errors() as exc:
            raise classify(str(exc))(f"{exc}\n--- program ---\n{text}") from exc
        return {rel.name: table_rows(reasoner.relation(rel.name), rel) for rel in program.relations}


def _arrow(rel: Relation, rows: list[Row]) -> pa.Table:
    kinds = {NUMBER: pa.int64(), SYMBOL: pa.string(), FLOAT: pa.float64()}
    return pa.table(
        {
            attr: pa.array([row[i] for row in rows], type=kinds[t])
            for i, (attr, t) in enumerate(zip(rel.attrs, rel.types, strict=True))
        }
    )

"""Random Datalog programs for property tests: a tiny AST, hypothesis strategies, renderers.

The AST here is the tests' own representation of a program. ``reference.py`` evaluates it
directly; ``render_program`` turns it into Soufflé text for the engine under test; ``engine_facts``
and ``write_fact_files`` turn its explicit facts into the engine's input formats.

Generated programs are always stratifiable: every relation gets a level, positive body atoms
use relations of the same or a lower level and negated atoms only lower levels. Arithmetic
operands are guarded by ``-GUARD < x < GUARD`` so every fixpoint stays finite and no value
leaves the 32-bit range.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import pyarrow as pa
from hypothesis import strategies as st

NUMBER = "number"
SYMBOL = "symbol"

Value: TypeAlias = int | str
Row: TypeAlias = tuple[Value, ...]


# --------------------------------------------------------------------------- AST


@dataclass(frozen=True)
class Var:
    """A named variable."""

    name: str


@dataclass(frozen=True)
class Const:
    """A number (int) or symbol (str) constant."""

    value: Value


@dataclass(frozen=True)
class Wild:
    """The anonymous variable ``_``."""


@dataclass(frozen=True)
class BinOp:
    """Integer arithmetic ``left op right`` with op in + - * / % ^."""

    op: str
    left: Expr
    right: Expr


Expr: TypeAlias = Var | Const | BinOp
Term: TypeAlias = Var | Const | Wild | BinOp


@dataclass(frozen=True)
class Atom:
    """``rel(args...)``."""

    rel: str
    args: tuple[Term, ...]


@dataclass(frozen=True)
class Neg:
    """``!atom``."""

    atom: Atom


@dataclass(frozen=True)
class Cmp:
    """A comparison ``left op right`` with op in = != < <= > >=."""

    op: str
    left: Expr
    right: Expr


@dataclass(frozen=True)
class Bind:
    """``var = expr``: binds a fresh variable (a filter if ``var`` is already bound)."""

    var: Var
    expr: Expr
    flipped: bool = False  # render as ``expr = var``


@dataclass(frozen=True)
class Agg:
    """``result = op target : { body }`` (no target for ``count``): the aggregate over the
    body's instances, grouped by the body's variables that also occur outside it."""

    result: Var
    op: str  # count sum min max
    target: Var | None
    body: tuple[Literal, ...]


Literal: TypeAlias = Atom | Neg | Cmp | Bind | Agg


@dataclass(frozen=True)
class Rule:
    """``head :- body, (alt_1 ; alt_2 ; ...)``: the union over alternatives of body + alt."""

    head: Atom
    body: tuple[Literal, ...]
    alternatives: tuple[tuple[Literal, ...], ...] = ()

    def conjunctions(self) -> list[tuple[Literal, ...]]:
        """The rule in disjunctive normal form: one conjunction per alternative."""
        if not self.alternatives:
            return [self.body]
        return [self.body + alt for alt in self.alternatives]


@dataclass(frozen=True)
class Relation:
    """A declared relation: column types (NUMBER/SYMBOL), optionally an equivalence relation."""

    name: str
    types: tuple[str, ...]
    eqrel: bool = False

    @property
    def arity(self) -> int:
        """Number of columns."""
        return len(self.types)

    @property
    def attrs(self) -> list[str]:
        """Attribute names used in ``.decl`` (and as column names of fact tables)."""
        return [f"a{i}" for i in range(self.arity)]


@dataclass
class Program:
    """Relations, rules, explicit facts (``facts`` go through the API or fact files,
    ``inline_facts`` are written into the program text)."""

    relations: tuple[Relation, ...]
    rules: tuple[Rule, ...] = ()
    facts: dict[str, list[Row]] = field(default_factory=dict)
    inline_facts: dict[str, list[Row]] = field(default_factory=dict)
    fact_formats: dict[str, str] = field(default_factory=dict)  # one of FACT_FORMATS
    symbol_subtype: bool = False  # declare symbol columns with a `.type Sym <: symbol`

    def relation(self, name: str) -> Relation:
        """Look a relation up by name."""
        for rel in self.relations:
            if rel.name == name:
                return rel
        raise KeyError(name)


# --------------------------------------------------------------------------- rendering


def render_value(value: Value) -> str:
    """A constant in Soufflé syntax."""
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def render_term(term: Term) -> str:
    """A term in Soufflé syntax; arithmetic is fully parenthesised."""
    if isinstance(term, Var):
        return term.name
    if isinstance(term, Const):
        return render_value(term.value)
    if isinstance(term, Wild):
        return "_"
    return f"({_operand(term.left)} {term.op} {_operand(term.right)})"


def _operand(term: Term) -> str:
    """An arithmetic operand; negative constants get parentheses (``-2 ^ 2`` is ambiguous)."""
    if isinstance(term, Const) and isinstance(term.value, int) and term.value < 0:
        return f"({term.value})"
    return render_term(term)


def render_atom(atom: Atom) -> str:
    """``rel(a, b)``."""
    return f"{atom.rel}({', '.join(render_term(a) for a in atom.args)})"


def render_literal(lit: Literal) -> str:
    """One body literal."""
    if isinstance(lit, Atom):
        return render_atom(lit)
    if isinstance(lit, Neg):
        return "!" + render_atom(lit.atom)
    if isinstance(lit, Cmp):
        return f"{render_term(lit.left)} {lit.op} {render_term(lit.right)}"
    if isinstance(lit, Agg):
        target = f" {lit.target.name}" if lit.target is not None else ""
        inner = ", ".join(render_literal(x) for x in lit.body)
        return f"{lit.result.name} = {lit.op}{target} : {{ {inner} }}"
    if lit.flipped:
        return f"{render_term(lit.expr)} = {lit.var.name}"
    return f"{lit.var.name} = {render_term(lit.expr)}"


def render_rule(rule: Rule) -> str:
    """A rule; alternatives become a parenthesised disjunction at the end of the body."""
    parts = [render_literal(lit) for lit in rule.body]
    if rule.alternatives:
        alts = " ; ".join(
            ", ".join(render_literal(lit) for lit in alt) for alt in rule.alternatives
        )
        parts.append(f"({alts})" if parts else alts)
    if not parts:
        return render_atom(rule.head) + "."
    return f"{render_atom(rule.head)} :- {', '.join(parts)}."


def render_program(program: Program, *, inputs: bool = False) -> str:
    """Soufflé text: declarations, ``.output`` for every relation, inline facts, rules.

    With ``inputs`` every relation that has external facts also gets ``.input`` (CLI mode).
    """
    lines: list[str] = []
    if program.symbol_subtype:
        lines.append(".type Sym <: symbol")
    for rel in program.relations:
        cols = ", ".join(
            f"{a}:{'Sym' if t == SYMBOL and program.symbol_subtype else t}"
            for a, t in zip(rel.attrs, rel.types, strict=True)
        )
        lines.append(f".decl {rel.name}({cols}){' eqrel' if rel.eqrel else ''}")
    for rel in program.relations:
        if inputs and rel.name in program.facts:
            lines.append(f".input {rel.name}")
        lines.append(f".output {rel.name}")
    for name, rows in program.inline_facts.items():
        for row in rows:
            lines.append(f"{name}({', '.join(render_value(v) for v in row)}).")
    lines.extend(render_rule(rule) for rule in program.rules)
    return "\n".join(lines) + "\n"


FACT_FORMATS = ("arrow", "arrow_narrow", "numpy", "pandas", "pandas_string")


def _numpy_rows(rel: Relation, rows: list[Row]) -> np.ndarray:
    """A 2-D array: int64 for numbers, fixed-width unicode for symbols, object when mixed."""
    if set(rel.types) == {NUMBER}:
        return np.array(rows, dtype=np.int64).reshape(len(rows), rel.arity)
    if set(rel.types) == {SYMBOL} and rows:
        return np.array(rows, dtype=str).reshape(len(rows), rel.arity)
    return np.array(rows, dtype=object).reshape(len(rows), rel.arity)


def engine_facts(program: Program) -> dict[str, Any]:
    """External facts in the format chosen per relation (FACT_FORMATS): a 2-D numpy array,
    a pyarrow Table (int64/string, or int32/dictionary-encoded strings) or a pandas DataFrame
    (int64/object, or int32/"string" dtype)."""
    import pandas as pd

    out: dict[str, Any] = {}
    for name, rows in program.facts.items():
        rel = program.relation(name)
        fmt = program.fact_formats.get(name, "arrow")
        if fmt == "numpy":
            out[name] = _numpy_rows(rel, rows)
            continue
        columns = [
            (attr, [row[i] for row in rows], t)
            for i, (attr, t) in enumerate(zip(rel.attrs, rel.types, strict=True))
        ]
        if fmt == "pandas":
            out[name] = pd.DataFrame(
                {a: pd.Series(c, dtype="int64" if t == NUMBER else "object") for a, c, t in columns}
            )
        elif fmt == "pandas_string":
            out[name] = pd.DataFrame(
                {a: pd.Series(c, dtype="int32" if t == NUMBER else "string") for a, c, t in columns}
            )
        elif fmt == "arrow_narrow":
            out[name] = pa.table(
                {
                    a: pa.array(c, pa.int32())
                    if t == NUMBER
                    else pa.array(c, pa.string()).dictionary_encode()
                    for a, c, t in columns
                }
            )
        else:
            out[name] = pa.table(
                {a: pa.array(c, pa.int64() if t == NUMBER else pa.string()) for a, c, t in columns}
            )
    return out


def write_fact_files(program: Program, directory: Path) -> None:
    """Write ``<rel>.facts`` (tab separated) for every relation with external facts."""
    directory.mkdir(parents=True, exist_ok=True)
    for name, rows in program.facts.items():
        text = "".join("\t".join(str(v) for v in row) + "\n" for row in rows)
        (directory / f"{name}.facts").write_text(text, encoding="utf-8")


def parse_output_lines(rel: Relation, lines: list[str]) -> set[Row]:
    """Parse Soufflé-style output lines of ``rel`` (tab separated; ``()`` for nullary)."""
    rows: set[Row] = set()
    for line in lines:
        if rel.arity == 0:
            if line.strip() == "()":
                rows.add(())
            continue
        fields = line.split("\t")
        rows.add(
            tuple(int(f) if t == NUMBER else f for f, t in zip(fields, rel.types, strict=True))
        )
    return rows


def describe(program: Program) -> str:
    """Everything needed to reproduce a case: program text and external facts."""
    facts = "\n".join(
        f"  {name} ({program.fact_formats.get(name, 'arrow')}): {rows!r}"
        for name, rows in program.facts.items()
    )
    return f"--- program ---\n{render_program(program)}--- add_facts ---\n{facts or '  (none)'}\n"


# --------------------------------------------------------------------------- strategies

REL_NAMES = ("edge", "path", "Reach", "q_1", "S2", "t")
SYMBOLS = ("a", "b", "c", "d", "x y", "7")
NUMBERS = tuple(range(-2, 8))
GUARD = 20  # arithmetic operands satisfy -GUARD < x < GUARD
DIVISORS = (1, 2, 3, -2, 7)

Draw: TypeAlias = Callable[[st.SearchStrategy[Any]], Any]


def values(col_type: str) -> st.SearchStrategy[Value]:
    """Constants of a column type over a small domain."""
    return st.sampled_from(NUMBERS if col_type == NUMBER else SYMBOLS)


def rows(rel: Relation) -> st.SearchStrategy[Row]:
    """One tuple of ``rel``."""
    return st.tuples(*(values(t) for t in rel.types))


class _Scope:
    """Variables of one rule under construction, by type; bound = occurs in a positive atom
    or a binding."""

    def __init__(self) -> None:
        self.bound: dict[str, list[str]] = {NUMBER: [], SYMBOL: []}
        self.guarded: set[str] = set()
        self.guards: list[Cmp] = []
        self.count = 0

    def fresh(self, col_type: str) -> Var:
        name = f"{'x' if col_type == NUMBER else 's'}{self.count}"
        self.count += 1
        self.bound[col_type].append(name)
        return Var(name)

    def guard(self, var: Var) -> None:
        if var.name not in self.guarded:
            self.guarded.add(var.name)
            self.guards += [Cmp("<", var, Const(GUARD)), Cmp(">", var, Const(-GUARD))]


def _arg(
    draw: Draw,
    scope: _Scope,
    col_type: str,
    *,
    fresh_ok: bool,
    same_atom: frozenset[str] = frozenset(),
) -> Term:
    """An argument of a body atom: a fresh variable, a variable bound by an earlier literal
    (a join), a constant, ``_``, or (rarely) a variable repeated within the same atom."""
    k = draw(st.integers(0, 19))
    earlier = [v for v in scope.bound[col_type] if v not in same_atom]
    repeated = [v for v in scope.bound[col_type] if v in same_atom]
    if k in (15, 16) and repeated:
        return Var(draw(st.sampled_from(repeated)))
    if k < 17:
        if fresh_ok and (k < 5 or not earlier):
            return scope.fresh(col_type)
        if earlier:
            return Var(draw(st.sampled_from(earlier)))
    elif k == 17 and repeated:
        return Var(draw(st.sampled_from(repeated)))
    if k <= 18:
        return Const(draw(values(col_type)))
    return Wild()


def _body_atom(draw: Draw, scope: _Scope, rel: Relation, *, fresh_ok: bool) -> Atom:
    """A body atom; with ``fresh_ok`` false only already bound variables are used."""
    args: list[Term] = []
    mine: set[str] = set()
    before = {t: set(scope.bound[t]) for t in (NUMBER, SYMBOL)}
    for t in rel.types:
        arg = _arg(draw, scope, t, fresh_ok=fresh_ok, same_atom=frozenset(mine))
        if isinstance(arg, Var) and arg.name not in before[t]:
            mine.add(arg.name)
        args.append(arg)
    return Atom(rel.name, tuple(args))


def _expr(draw: Draw, scope: _Scope, depth: int) -> Expr:
    """A bounded integer expression over bound number variables and small constants."""
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        if scope.bound[NUMBER] and draw(st.integers(0, 3)) > 0:
            var = Var(draw(st.sampled_from(scope.bound[NUMBER])))
            scope.guard(var)
            return var
        return Const(draw(st.integers(-5, 10)))
    op = draw(st.sampled_from(["+", "-", "*", "/", "%", "^"]))
    if op in "/%":
        return BinOp(op, _expr(draw, scope, depth - 1), Const(draw(st.sampled_from(DIVISORS))))
    if op == "^":
        return BinOp(op, _expr(draw, scope, 0), Const(draw(st.integers(0, 2))))
    return BinOp(op, _expr(draw, scope, depth - 1), _expr(draw, scope, depth - 1))


def _cmp(draw: Draw, scope: _Scope) -> Cmp | None:
    """A comparison between a bound variable and a variable, constant or expression."""
    types = [t for t in (NUMBER, SYMBOL) if scope.bound[t]]
    if not types:
        return None
    col_type = draw(st.sampled_from(types))
    left = Var(draw(st.sampled_from(scope.bound[col_type])))
    others = [v for v in scope.bound[col_type] if v != left.name] or [left.name]
    k = draw(st.integers(0, 3))
    right: Expr
    if k == 0:
        right = Var(draw(st.sampled_from(others)))
    elif k == 3 and col_type == NUMBER:
        right = _expr(draw, scope, 1)
    else:
        right = Const(draw(values(col_type)))
    ops = ["=", "!=", "<", "<=", ">", ">="]  # of symbols: by their text (Soufflé's SLT, ...)
    return Cmp(draw(st.sampled_from(ops)), left, right)


def _filter_atom(draw: Draw, scope: _Scope, rel: Relation) -> Atom:
    """An atom over already bound variables, constants and wildcards (no fresh variables)."""
    return _body_atom(draw, scope, rel, fresh_ok=False)


def _rule(
    draw: Draw, head: Relation, relations: tuple[Relation, ...], level: dict[str, int]
) -> Rule:
    """One rule deriving ``head``; only stratifiable dependencies are used."""
    pos = [r for r in relations if level[r.name] <= level[head.name]]
    neg = [r for r in relations if level[r.name] < level[head.name]]
    scope = _Scope()
    body: list[Literal] = []
    for i in range(draw(st.sampled_from([1, 2, 2, 3]))):
        rel = head if i == 0 and draw(st.integers(0, 3)) == 0 else draw(st.sampled_from(pos))
        body.append(_body_atom(draw, scope, rel, fresh_ok=True))
    for _ in range(draw(st.integers(0, 1))):
        expr = _expr(draw, scope, 2)
        body.append(Bind(scope.fresh(NUMBER), expr, draw(st.booleans())))
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2]))):
        cmp = _cmp(draw, scope)
        if cmp is not None:
            body.append(cmp)
    if neg:
        for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
            body.append(Neg(_filter_atom(draw, scope, draw(st.sampled_from(neg)))))
    alternatives: list[tuple[Literal, ...]] = []
    if draw(st.integers(0, 5)) == 0:
        for _ in range(2):
            alt: list[Literal] = []
            for _ in range(draw(st.integers(1, 2))):
                kind = draw(st.integers(0, 2))
                if kind == 0:
                    alt.append(_filter_atom(draw, scope, draw(st.sampled_from(pos))))
                elif kind == 1 and neg:
                    alt.append(Neg(_filter_atom(draw, scope, draw(st.sampled_from(neg)))))
                else:
                    alt.append(_cmp(draw, scope) or Cmp("=", Const(1), Const(1)))
            alternatives.append(tuple(alt))
    args: list[Term] = []
    for col_type in head.types:
        k = draw(st.integers(0, 9))
        if k <= 5 and scope.bound[col_type]:
            args.append(Var(draw(st.sampled_from(scope.bound[col_type]))))
        elif col_type == NUMBER and k >= 8:
            args.append(_expr(draw, scope, 2))
        else:
            args.append(Const(draw(values(col_type))))
    body.extend(scope.guards)
    ordered = draw(st.permutations(body))
    return Rule(Atom(head.name, tuple(args)), tuple(ordered), tuple(alternatives))


def _closure_rules(draw: Draw, p: Relation, e: Relation) -> list[Rule]:
    """A transitive closure of ``e`` into ``p`` (left, right or doubly recursive)."""
    x, y, z = (Var(f"{'x' if p.types[0] == NUMBER else 's'}{i}") for i in range(3))
    recursive = draw(
        st.sampled_from(
            [
                (Atom(p.name, (x, y)), Atom(e.name, (y, z))),
                (Atom(e.name, (x, y)), Atom(p.name, (y, z))),
                (Atom(p.name, (x, y)), Atom(p.name, (y, z))),
            ]
        )
    )
    return [
        Rule(Atom(p.name, (x, z)), (Atom(e.name, (x, z)),)),
        Rule(Atom(p.name, (x, z)), recursive),
    ]


@st.composite
def programs(
    draw: Draw, max_relations: int = 6, max_rules: int = 8, max_facts: int = 30
) -> Program:
    """A random stratifiable program with explicit facts (see module docstring)."""
    n_rel = draw(st.integers(1, max_relations))
    relations: list[Relation] = []
    level: dict[str, int] = {}
    for name in REL_NAMES[:n_rel]:
        arity = draw(st.sampled_from([2, 1, 2, 3, 0, 2, 3, 1]))
        types = tuple(draw(st.sampled_from([NUMBER, NUMBER, SYMBOL])) for _ in range(arity))
        eqrel = arity == 2 and types[0] == types[1] and draw(st.integers(0, 7)) == 0
        relations.append(Relation(name, types, eqrel))
        level[name] = draw(st.integers(0, 2))
    rels = tuple(relations)
    rules = [
        _rule(draw, draw(st.sampled_from(rels)), rels, level)
        for _ in range(draw(st.integers(0, max_rules)))
    ]
    pairs = [
        (p, e)
        for p in rels
        for e in rels
        if p != e and p.arity == e.arity == 2 and len({*p.types, *e.types}) == 1
        if level[e.name] <= level[p.name]
    ]
    if pairs and len(rules) < max_rules and draw(st.integers(0, 2)) == 0:
        rules = rules[: max_rules - 2] + _closure_rules(draw, *draw(st.sampled_from(pairs)))
    facts: dict[str, list[Row]] = {}
    inline: dict[str, list[Row]] = {}
    formats: dict[str, str] = {}
    for rel in rels:
        if rel.arity > 0 and draw(st.integers(0, 9)) < (9 if level[rel.name] == 0 else 8):
            size = 0 if draw(st.integers(0, 9)) == 0 else draw(st.integers(1, max_facts))
            facts[rel.name] = draw(st.lists(rows(rel), min_size=size, max_size=size))
            formats[rel.name] = draw(st.sampled_from(FACT_FORMATS))
        if rel.arity == 0:
            if draw(st.booleans()):
                inline[rel.name] = [()]
        elif draw(st.integers(0, 3)) == 0:
            size = draw(st.integers(0, 3))
            inline[rel.name] = draw(st.lists(rows(rel), min_size=size, max_size=size))
    return Program(
        relations=rels,
        rules=tuple(rules),
        facts=facts,
        inline_facts=inline,
        fact_formats=formats,
        symbol_subtype=draw(st.integers(0, 4)) == 0,
    )


# --------------------------------------------------------------------------- arithmetic focus

ARITH_OPS = ("+", "-", "*", "/", "%", "^")
INT32_MAX = 2**31 - 1


def _bound(expr: Expr, var_bound: int) -> int:
    """An upper bound of ``abs(expr)`` when every variable is bounded by ``var_bound``."""
    if isinstance(expr, Var):
        return var_bound
    if isinstance(expr, Const):
        return abs(int(expr.value))
    left, right = _bound(expr.left, var_bound), _bound(expr.right, var_bound)
    if expr.op in "+-":
        return left + right
    if expr.op == "*":
        return left * right
    if expr.op == "^":
        return left ** abs(int(expr.right.value)) if isinstance(expr.right, Const) else 2**40
    return left  # / and %: never larger than the dividend


@st.composite
def arith_exprs(draw: Draw, variables: tuple[str, ...], depth: int = 3) -> Expr:
    """An integer expression over ``variables`` with all six operators. Divisors are nonzero
    constants or a variable that the caller guards with ``!= 0``; ``^`` has a constant
    exponent 0..3."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            return Var(draw(st.sampled_from(variables)))
        return Const(draw(st.integers(-9, 9)))
    op = draw(st.sampled_from(ARITH_OPS))
    left = draw(arith_exprs(variables, depth - 1))
    if op == "^":
        return BinOp(op, left, Const(draw(st.integers(0, 3))))
    if op in "/%" and draw(st.booleans()):
        return BinOp(op, left, Const(draw(st.sampled_from([-7, -3, -2, -1, 1, 2, 3, 5]))))
    return BinOp(op, left, draw(arith_exprs(variables, depth - 1)))


def _divisor_vars(expr: Expr) -> set[str]:
    """Variables that occur as a whole divisor (``e / y``, ``e % y``)."""
    if not isinstance(expr, BinOp):
        return set()
    own = {expr.right.name} if expr.op in "/%" and isinstance(expr.right, Var) else set()
    return own | _divisor_vars(expr.left) | _divisor_vars(expr.right)


def _bad_divisor(expr: Expr, forbidden: tuple[int, ...] = (0,)) -> bool:
    """A divisor that is neither a variable nor a constant outside ``forbidden``."""
    if not isinstance(expr, BinOp):
        return False
    if expr.op in "/%" and not (
        isinstance(expr.right, Var)
        or (isinstance(expr.right, Const) and expr.right.value not in forbidden)
    ):
        return True
    return _bad_divisor(expr.left, forbidden) or _bad_divisor(expr.right, forbidden)


ARITH_VAR_BOUND = 40


def _safe(expr: Expr) -> bool:
    """No overflow possible and every divisor is a constant or a guarded variable."""
    return _bound(expr, ARITH_VAR_BOUND) <= INT32_MAX and not _bad_divisor(expr)


@st.composite
def arithmetic_programs(draw: Draw, wide: bool = False, bits: int = 32) -> Program:
    """``v(x, y)`` facts in [-40, 40] and three rules exercising arithmetic: a computed head
    column, a comparison between expressions, and a binding ``z = expr`` used in a filter.

    ``wide`` adds values near the 32-bit limits and lets results overflow: they must wrap
    around (two's complement). Division by -1 is excluded there (INT_MIN / -1 traps in C).
    ``bits=64`` (with ``wide``): values near the 64-bit limits, for 64-bit words.
    """
    v = Relation("v", (NUMBER, NUMBER))
    head = Relation("h", (NUMBER, NUMBER, NUMBER))
    cmp = Relation("c", (NUMBER, NUMBER))
    bind = Relation("b", (NUMBER, NUMBER))
    x, y = Var("x"), Var("y")

    def acceptable(e: Expr) -> bool:
        return not _bad_divisor(e, (0, -1)) if wide else _safe(e)

    exprs = [draw(arith_exprs(("x", "y")).filter(acceptable)) for _ in range(4)]
    op = draw(st.sampled_from(["=", "!=", "<", "<=", ">", ">="]))
    threshold = draw(st.integers(-20, 20))

    def guards(*es: Expr) -> tuple[Literal, ...]:
        names = sorted(set().union(*(_divisor_vars(e) for e in es)))
        forbidden = (0, -1) if wide else (0,)
        return tuple(Cmp("!=", Var(n), Const(c)) for n in names for c in forbidden)

    rules = (
        Rule(Atom("h", (x, y, exprs[0])), (Atom("v", (x, y)), *guards(exprs[0]))),
        Rule(
            Atom("c", (x, y)),
            (Atom("v", (x, y)), *guards(exprs[1], exprs[2]), Cmp(op, exprs[1], exprs[2])),
        ),
        Rule(
            Atom("b", (x, Var("z"))),
            (
                Atom("v", (x, y)),
                *guards(exprs[3]),
                Bind(Var("z"), exprs[3]),
                Cmp(">", Var("z"), Const(threshold)),
            ),
        ),
    )
    size = draw(st.integers(1, 25))
    val = st.integers(-ARITH_VAR_BOUND, ARITH_VAR_BOUND)
    formats = FACT_FORMATS
    if wide and bits == 64:
        extremes = [-(2**63), -(2**63) + 1, 2**63 - 1, 2**63 - 2, 2**32, -(2**32), 3037000500,
                    2**31, -(2**31) - 1]
        val = st.one_of(val, st.sampled_from(extremes), st.integers(-(2**63), 2**63 - 1))
        formats = ("arrow", "numpy", "pandas")  # the others narrow numbers to int32
    elif wide:
        extremes = [-(2**31), -(2**31) + 1, 2**31 - 1, 2**31 - 2, 65536, -65536, 46341]
        val = st.one_of(val, st.sampled_from(extremes), st.integers(-(2**31), 2**31 - 1))
    rows_ = draw(st.lists(st.tuples(val, val), min_size=size, max_size=size))
    return Program(
        relations=(v, head, cmp, bind),
        rules=rules,
        facts={"v": rows_},
        fact_formats={"v": draw(st.sampled_from(formats))},
    )


# --------------------------------------------------------------------------- update sequences


@dataclass(frozen=True)
class Update:
    """One update of the explicit facts: rows to insert and delete per relation (rows may
    repeat, be absent or present, or occur in both), and the input format per relation."""

    insert: dict[str, list[Row]]
    delete: dict[str, list[Row]]
    formats: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """A readable one-line summary."""
        return f"insert {self.insert!r}, delete {self.delete!r}"


def updated_facts(explicit: dict[str, set[Row]], update: Update) -> dict[str, set[Row]]:
    """E' = (E \\ E⁻) ∪ E⁺ (a fact both inserted and deleted is inserted)."""
    out = {name: set(rows) for name, rows in explicit.items()}
    for name, rows in update.delete.items():
        out[name] -= set(rows)
    for name, rows in update.insert.items():
        out[name] |= set(rows)
    return out


def update_data(rel: Relation, rows_: list[Row], fmt: str) -> Any:
    """Rows of ``rel`` in one of FACT_FORMATS, as ``Reasoner.update`` and ``add_facts`` take
    them; nullary relations always as an ``(n, 0)`` numpy array."""
    if rel.arity == 0:
        return np.empty((len(rows_), 0), dtype=np.int64)
    tmp = Program(relations=(rel,), facts={rel.name: rows_}, fact_formats={rel.name: fmt})
    return engine_facts(tmp)[rel.name]


def _pick_rows(draw: Draw, rel: Relation, pools: list[list[Row]], max_rows: int) -> list[Row]:
    """Up to ``max_rows`` rows, each from a random non-empty pool or random (mostly absent)."""
    if rel.arity == 0:
        return [()] * draw(st.integers(0, 2))
    candidates = [sorted(p, key=repr) for p in pools if p] + [[]]
    out: list[Row] = []
    for _ in range(draw(st.integers(0, max_rows))):
        pool = draw(st.sampled_from(candidates))
        out.append(draw(st.sampled_from(pool)) if pool else draw(rows(rel)))
    return out


@st.composite
def updates(
    draw: Draw,
    program: Program,
    explicit: dict[str, set[Row]],
    derived: dict[str, set[Row]],
    max_relations: int = 3,
    max_rows: int = 6,
) -> Update:
    """An update of ``program``'s explicit facts E, given E and the facts that some rule
    instance derives: insertions, deletions or both; rows drawn from E (inserting present
    facts, deleting explicit ones), from derived facts (deleting absent or explicit-and-derived
    facts, making derived facts explicit) and at random (new facts, also in relations that rules
    derive; deleting absent facts); sometimes one row is both inserted and deleted."""
    kind = draw(st.sampled_from(["insert", "delete", "both"]))
    names = [r.name for r in program.relations]
    chosen = draw(st.lists(st.sampled_from(names), min_size=1, max_size=max_relations, unique=True))
    insert: dict[str, list[Row]] = {}
    delete: dict[str, list[Row]] = {}
    formats: dict[str, str] = {}
    for name in chosen:
        rel = program.relation(name)
        mine, theirs = explicit.get(name, set()), derived.get(name, set())
        pools = [list(mine & theirs), list(mine - theirs), list(theirs - mine)]
        if kind != "insert" and (kind == "delete" or draw(st.booleans())):
            delete[name] = _pick_rows(draw, rel, pools, max_rows)
        if kind != "delete" and (kind == "insert" or name not in delete or draw(st.booleans())):
            insert[name] = _pick_rows(draw, rel, [list(theirs - mine), list(mine)], max_rows)
            if name in delete and delete[name] and draw(st.integers(0, 3)) == 0:
                insert[name].append(draw(st.sampled_from(delete[name])))
        formats[name] = draw(st.sampled_from(FACT_FORMATS))
    return Update(insert, delete, formats)


# --------------------------------------------------------------------------- aggregates

AGG_NAMES = ("g0", "g1", "g2")


@st.composite
def aggregate_programs(draw: Draw) -> Program:
    """A generated program plus 1-3 relations defined with aggregates over its relations
    (count/sum/min/max over a number column; correlated through a shared atom argument, a
    comparison with an outer variable, or not at all; optionally a negated atom inside);
    a last relation may read an aggregate relation."""
    base = draw(programs(max_relations=4, max_rules=5))
    numeric = [(r, i) for r in base.relations for i, t in enumerate(r.types) if t == NUMBER]
    if not numeric:
        return base
    relations = list(base.relations)
    rules = list(base.rules)
    for name in AGG_NAMES[: draw(st.integers(1, 3))]:
        inner_rel, j = draw(st.sampled_from(numeric))
        op = draw(st.sampled_from(["count", "sum", "min", "max"]))
        y = Var("y")
        inner_args: list[Term] = [Wild() for _ in inner_rel.types]
        inner_args[j] = y
        mode = draw(st.sampled_from(["none", "atom", "cmp"]))
        body: list[Literal] = []
        head_args: list[Term] = []
        types: list[str] = []
        extra: list[Literal] = []
        if mode != "none":
            outer_rel, k = draw(st.sampled_from(numeric))
            x = Var("x")
            outer_args: list[Term] = [Wild() for _ in outer_rel.types]
            outer_args[k] = x
            body.append(Atom(outer_rel.name, tuple(outer_args)))
            head_args.append(x)
            types.append(NUMBER)
            if mode == "atom":
                others = [i for i, t in enumerate(inner_rel.types) if t == NUMBER and i != j]
                if others:
                    inner_args[draw(st.sampled_from(others))] = x
                else:
                    extra.append(Cmp(draw(st.sampled_from(["<", "="])), y, x))
            else:
                extra.append(Cmp(draw(st.sampled_from(["<", "<=", "!="])), y, x))
        inner: list[Literal] = [Atom(inner_rel.name, tuple(inner_args)), *extra]
        negatable = [r for r in base.relations if r.arity == 1 and r.types[0] == NUMBER]
        if negatable and draw(st.integers(0, 3)) == 0:
            inner.append(Neg(Atom(draw(st.sampled_from(negatable)).name, (y,))))
        c = Var("c")
        body.append(Agg(c, op, None if op == "count" else y, tuple(inner)))
        head_args.append(c)
        types.append(NUMBER)
        rel = Relation(name, tuple(types))
        relations.append(rel)
        rules.append(Rule(Atom(name, tuple(head_args)), tuple(body)))
    if draw(st.booleans()):
        src = relations[-1]
        c = Var("c")
        args: list[Term] = [Wild() for _ in src.types]
        args[-1] = c
        relations.append(Relation("g9", (NUMBER,)))
        rules.append(Rule(Atom("g9", (c,)), (Atom(src.name, tuple(args)),
                                             Cmp(">", c, Const(draw(st.integers(-2, 3)))))))
    return Program(tuple(relations), tuple(rules), base.facts, base.inline_facts,
                   base.fact_formats, base.symbol_subtype)

"""Logical rule layer: the program representation the engine evaluates.

The host's parser lowers Datalog text to these plain data classes; the engine compiles
them to columnar plans.  Nothing here knows about files or text beyond the source
location carried for error messages.

Conventions
-----------
* Every attribute has one of four base types: ``number`` (32-bit signed), ``unsigned``
  (32-bit unsigned), ``float`` (32-bit IEEE) and ``symbol`` (dictionary-encoded string);
  with 64-bit words (``gpu_engine.values``) the first three are 64 bits wide.
* Disjunctions and multiple heads are expanded by the parser: a :class:`Rule` has exactly
  one head atom and a conjunctive body.
* An anonymous variable ``_`` is lowered to a fresh :class:`Var` whose name starts with
  ``"_"``; a variable that occurs only in a negated atom is existential (don't-care).
* A comparison ``x = expr`` whose left (or right) side is a variable not bound by any
  positive atom binds that variable (Soufflé's binding equality).
* Constant symbols are kept as Python ``str``; the engine encodes them through its
  :class:`SymbolTable`.
* Aggregates (``count``, ``sum``, ``min``, ``max``, ``mean``) are lowered by the parser to
  a hidden relation ``@agg<k>`` (name starting with ``@``) defined by an
  :class:`Aggregate` in ``Program.aggregates``; the rule that used the aggregate reads
  the hidden relation as an ordinary atom (see :class:`Aggregate`).
* Records and algebraic data types (Soufflé's ``[a, b]`` and ``$Branch(a, b)``) are
  ``number`` columns holding ids of a host :class:`RecordTable` (hash-consed tuples, so
  equal records have equal ids; ``nil`` is id 0).  ``Call("pack", fields, "number")``
  makes the id of a tuple (new tuples get new ids); ``Call("field", (r, Const(i)), t)``
  reads field ``i`` of record ``r`` (invalid, so the row is dropped, when ``r`` is nil or
  has no field ``i``).  An ADT value of branch ``k`` is the record ``(k, *arguments)``.
  :attr:`Relation.formats` says how such columns are read and printed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, Union

import numpy as np

ColumnType = Literal["number", "unsigned", "float", "symbol"]
COLUMN_TYPES: tuple[str, ...] = ("number", "unsigned", "float", "symbol")


@dataclass(frozen=True)
class Location:
    """A position in a source file (1-based line and column)."""

    file: str = "<input>"
    line: int = 0
    column: int = 0

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.column}"


class ProgramError(Exception):
    """An error in a program, reported as ``file:line:col: message``."""

    def __init__(self, message: str, loc: Location | None = None) -> None:
        self.message = message
        self.loc = loc
        super().__init__(f"{loc}: {message}" if loc is not None else message)


# --- terms -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Var:
    name: str

    @property
    def anonymous(self) -> bool:
        return self.name.startswith("_")


@dataclass(frozen=True)
class Const:
    """A constant; ``value`` is ``int`` for number/unsigned, ``float`` or ``str``."""

    value: int | float | str
    type: ColumnType


@dataclass(frozen=True)
class Call:
    """An arithmetic, bitwise, logical or string functor application.

    ``op`` is one of: ``+ - * / % ^`` (binary), ``neg`` (unary minus), ``band bor bxor
    bshl bshr bshru bnot land lor lnot``, ``min max`` (n-ary), ``cat`` (n-ary),
    ``strlen substr ord to_number to_string to_float to_unsigned itou itof utoi utof
    ftoi ftou``.  ``type`` is the result type the parser inferred; operands of
    arithmetic operators have that same type (conversions are explicit functors).
    """

    op: str
    args: tuple[Term, ...]
    type: ColumnType


Term = Union[Var, Const, Call]  # noqa: UP007 (runtime alias, py3.10)


# --- literals --------------------------------------------------------------------------


@dataclass(frozen=True)
class Atom:
    relation: str
    args: tuple[Term, ...]
    loc: Location = field(default_factory=Location, compare=False)


@dataclass(frozen=True)
class Negation:
    atom: Atom
    loc: Location = field(default_factory=Location, compare=False)


@dataclass(frozen=True)
class Compare:
    """``left op right`` with ``op`` in ``= != < <= > >=``; ``type`` is the operand type."""

    op: str
    left: Term
    right: Term
    type: ColumnType
    loc: Location = field(default_factory=Location, compare=False)


Literal_ = Union[Atom, Negation, Compare]  # noqa: UP007


@dataclass(frozen=True)
class Rule:
    head: Atom
    body: tuple[Literal_, ...]
    loc: Location = field(default_factory=Location, compare=False)

    def __str__(self) -> str:
        return f"{_fmt_atom(self.head)} :- {', '.join(_fmt_lit(b) for b in self.body)}."


def rule_constants(rule: Rule) -> list[Const]:
    """The constants of a rule's head and body literals (inside functor calls too), in
    order of appearance."""
    out: list[Const] = []
    todo: list[Any] = [*reversed(rule.body), rule.head]  # a stack: the head pops first
    while todo:
        x = todo.pop()
        if isinstance(x, Const):
            out.append(x)
        elif isinstance(x, (Atom, Call)):
            todo.extend(reversed(x.args))
        elif isinstance(x, Negation):
            todo.append(x.atom)
        elif isinstance(x, Compare):
            todo.extend((x.right, x.left))
    return out


@dataclass(frozen=True)
class Aggregate:
    """The definition of a hidden aggregate relation ``relation(k1..kK, value)``.

    ``rules`` are the aggregate's body as rules (alternatives whose instances are
    disjoint, several only when a nested ``count`` needed a zero case) with the head
    ``relation.in(k1..kK, t)`` (``relation.in(k1..kK)`` for ``count``): ``k1..kK`` are the
    variables of the body that also occur outside it (correlated: the group key), ``t``
    the aggregated variable.  For each group key for which the body has instances the
    relation holds one row whose last column is ``op`` over the body's instances (each an
    assignment of all the body's variables, anonymous ones included; with ``distinct``, each
    distinct head row ``(k.., t, locals..)``):

    * ``count``: the number of instances (``number``);
    * ``sum``: the sum of ``t`` over the instances, of ``t``'s type (``number`` and
      ``unsigned`` wrap to 32 bits; ``float`` adds one value at a time in float32);
    * ``min`` / ``max``: the least / greatest ``t`` (numeric types only);
    * ``mean``: the sum divided by the count, as ``float``.

    Groups without instances have no row.  The rule that used the aggregate reads the
    relation positively; for ``count`` and ``sum`` the parser adds a second rule where the group is
    absent (``!relation(k.., _)``) and the count is 0.  The relation is evaluated in a
    stratum of its own, after every relation the body reads (recursion through an
    aggregate is a :class:`ProgramError`).
    """

    relation: str
    op: str  # count sum min max mean
    rules: tuple[Rule, ...]
    type: ColumnType  # the result type
    keys: int  # the number of group-key columns
    loc: Location = field(default_factory=Location, compare=False)
    arg_type: ColumnType | None = None  # the aggregated variable's type (None: count)
    # Soufflé materialises a complex body (several atoms, an inner aggregate, a repeated
    # variable) as a set over its named variables: the head is then (k.., t, locals..) and
    # each distinct head row is one instance
    distinct: bool = False
    # a float sum or mean over one atom: the head's columns after ``t`` are the atom's
    # arguments, in order, and the values are added in the order of those rows (Soufflé
    # scans the atom's index and adds tuple by tuple in float32)
    ordered: bool = False
    # evaluated inside a recursive stratum, per new key of its ``.dom`` relation (the body
    # reads only lower strata otherwise); ``count`` then yields 0 for a key without
    # instances (see gpu_engine.recursive_aggregates)
    lookup: bool = False

    @property
    def reads(self) -> frozenset[str]:
        """Relations the body reads (positively or negatively)."""
        return frozenset(lit.relation if isinstance(lit, Atom) else lit.atom.relation
                         for r in self.rules for lit in r.body
                         if isinstance(lit, (Atom, Negation)))
# --- record and ADT types ----------------------------------------------------------------


@dataclass(eq=False)
class RecordFormat:
    """A record or ADT type, for reading and printing its values (may be recursive).

    ``kind == "record"``: ``fields`` are (name, type); ``kind == "adt"``: ``branches`` are
    (branch name, field types), branch ``k`` stored as the record ``(k, *fields)``.
    A field type is a base type or another :class:`RecordFormat`.
    """

    name: str
    kind: Literal["record", "adt"]
    fields: list[tuple[str, ColumnType | RecordFormat]] = field(default_factory=list)
    branches: list[tuple[str, list[ColumnType | RecordFormat]]] = field(default_factory=list)

    def __repr__(self) -> str:
        return f"RecordFormat({self.name!r}, {self.kind!r})"


RECORD_OPS = frozenset({"pack", "field"})


# --- relations and programs ------------------------------------------------------------


@dataclass(frozen=True)
class Relation:
    name: str
    attributes: tuple[tuple[str, ColumnType], ...]
    representation: Literal["set", "eqrel"] = "set"
    loc: Location = field(default_factory=Location, compare=False)
    # choice-domain keys: attribute positions of each key (see gpu_engine.order_dependent)
    choice: tuple[tuple[int, ...], ...] = ()
    # per attribute: None, or the record/ADT type of a column of record ids (for IO)
    formats: tuple[RecordFormat | None, ...] = field(default=(), compare=False)

    def format(self, i: int) -> RecordFormat | None:
        """The record/ADT type of attribute ``i`` (None for a plain column)."""
        return self.formats[i] if self.formats else None

    @property
    def arity(self) -> int:
        return len(self.attributes)

    @property
    def types(self) -> tuple[ColumnType, ...]:
        return tuple(t for _, t in self.attributes)


@dataclass(frozen=True)
class Equality:
    """A relation declared ``equality`` (gpu_engine.equality): a congruence over the
    columns ``domain`` names (relation -> attribute positions whose type is in the
    equality's type family, the equality relation's own two included).  ``reflexive``:
    reflexive facts ``same(c, c)`` for every constant ``c`` in a domain column (the
    declared semantics; a recognised hand-written axiomatisation without a reflexivity
    rule keeps ``False``)."""

    relation: str
    domain: dict[str, tuple[int, ...]]
    loc: Location = field(default_factory=Location, compare=False)
    reflexive: bool = True


@dataclass(frozen=True)
class FunctorDecl:
    """A user-defined functor (``.functor``) a rule calls as ``Call("@name", ...)``: its
    parameter and result types; the code is reached through ``symbols.functors`` (a
    :class:`FunctorLibrary` the host attaches, see ``gpu_engine.user_functors``)."""

    name: str
    params: tuple[ColumnType, ...]
    result: ColumnType
    loc: Location = field(default_factory=Location, compare=False)


class FunctorLibrary(Protocol):
    """Implementations of user-defined functors, vectorised over distinct argument rows:
    numbers as int32/int64, unsigned as uint32/uint64, floats as float32/float64 arrays
    (the word size), symbols as lists of ``str``; the result likewise."""

    def call(self, decl: FunctorDecl, args: list[Any], n: int) -> Any: ...


@dataclass
class Program:
    """Relations, rules and the facts written in the program text.

    ``facts`` maps a relation to rows of constant Python values (str for symbols).
    Facts whose arguments are constant expressions may also appear as body-less rules.
    """

    relations: dict[str, Relation] = field(default_factory=dict)
    rules: list[Rule] = field(default_factory=list)
    facts: dict[str, list[tuple]] = field(default_factory=dict)
    # subsumptive rules A(x..) <= A(y..) :- body, as A(x.., y..) :- A(x..), A(y..), body
    # (see gpu_engine.subsumption)
    subsumptions: list[Rule] = field(default_factory=list)
    # ``.decl D = debug_delta(R)``: D -> R (D holds R's tuples with the seminaive iteration
    # that added them; see gpu_engine.iteration)
    debug_deltas: dict[str, str] = field(default_factory=dict)
    # ``.limitsize R(n=N)``: R -> (N, where); a recursive stratum stops before a round
    # would add to R once R holds N tuples (gpu_engine.iteration)
    limits: dict[str, tuple[int, Location]] = field(default_factory=dict)
    aggregates: dict[str, Aggregate] = field(default_factory=dict)  # hidden relation -> def
    equality: Equality | None = None  # a relation declared ``equality`` (rewriting)
    functors: dict[str, FunctorDecl] = field(default_factory=dict)  # the ones rules call


class SymbolTable(Protocol):
    """Dictionary encoding of symbols; implemented on the host."""

    def encode(self, symbol: str) -> int: ...

    def encode_many(self, symbols: list[str] | np.ndarray) -> np.ndarray: ...

    def decode_many(self, ids: np.ndarray) -> list[str]: ...


class RecordTable(Protocol):
    """Hash-consed records (tuples of int64 values) <-> ids; implemented on the host and
    reached by the engine as ``symbols.records``.  Id 0 is ``nil``."""

    def pack(self, cols: list[np.ndarray], n: int) -> np.ndarray: ...

    def field(self, ids: np.ndarray, index: int) -> tuple[np.ndarray, np.ndarray]: ...

    def __len__(self) -> int: ...


# --- formatting (for stats and error messages) -----------------------------------------


def fmt_term(t: Term) -> str:
    if isinstance(t, Var):
        return "_" if t.anonymous else t.name
    if isinstance(t, Const):
        return _quote(str(t.value)) if t.type == "symbol" else str(t.value)
    if t.op in {"+", "-", "*", "/", "%", "^"} and len(t.args) == 2:
        return f"({fmt_term(t.args[0])} {t.op} {fmt_term(t.args[1])})"
    return f"{t.op}({', '.join(fmt_term(a) for a in t.args)})"


_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\t": "\\t",
                          "\r": "\\r"})


def _quote(text: str) -> str:
    """A symbol as a string literal that reads back as the same symbol."""
    return '"' + text.translate(_ESCAPES) + '"'


def _fmt_atom(a: Atom) -> str:
    return f"{a.relation}({', '.join(fmt_term(x) for x in a.args)})"


def _fmt_lit(lit: Literal_) -> str:
    if isinstance(lit, Atom):
        return _fmt_atom(lit)
    if isinstance(lit, Negation):
        return "!" + _fmt_atom(lit.atom)
    return f"{fmt_term(lit.left)} {lit.op} {fmt_term(lit.right)}"

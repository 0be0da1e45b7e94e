"""Surface syntax tree of a Datalog program, as written, with source locations.

The builder (:mod:`host.dl_builder`) produces these nodes while parsing; the lowering
(:mod:`host.dl_lower`) checks them and turns them into :mod:`gpu_engine.ir`.  Unlike the
IR, every node keeps its :class:`~gpu_engine.ir.Location` so that errors can point at the
offending token.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from gpu_engine.ir import Location

# --- terms -----------------------------------------------------------------------------


@dataclass(frozen=True)
class SVar:
    """A named variable (``x``, ``_x``)."""

    name: str
    loc: Location


@dataclass(frozen=True)
class SWild:
    """The anonymous variable ``_``."""

    loc: Location


@dataclass(frozen=True)
class SNum:
    """A numeric literal; ``kind`` is its lexical kind, ``value`` already negated if needed.

    ``int`` literals are polymorphic (number, unsigned or float by context); ``based`` is
    true for hexadecimal, binary and IPv4 literals, which may use all 32 bits.
    """

    value: int | float
    kind: Literal["int", "uint", "float"]
    text: str
    loc: Location
    based: bool = False
    negated: bool = False


@dataclass(frozen=True)
class SStr:
    """A string literal with escapes resolved."""

    value: str
    loc: Location


@dataclass(frozen=True)
class SCall:
    """An operator or functor application; ``op_loc`` is where the operator is written."""

    op: str
    args: tuple[STerm, ...]
    loc: Location
    op_loc: Location


@dataclass(frozen=True)
class SCast:
    """``as(arg, type_name)``."""

    arg: STerm
    type_name: str
    loc: Location
    type_loc: Location


@dataclass(frozen=True)
class SAgg:
    """An aggregate ``op target : { body }`` (``target`` None for ``count``); ``body`` is a
    formula (an atom or a braced disjunction).  Lowered by :mod:`host.lang.dl_aggregate`."""

    op: str
    target: STerm | None
    body: SFormula
    loc: Location


@dataclass(frozen=True)
class SRecord:
    """A record constructor or pattern ``[a, b]``."""

    args: tuple[STerm, ...]
    loc: Location


@dataclass(frozen=True)
class SAdt:
    """An ADT constructor or pattern ``$Branch(a, b)`` (``$Branch`` without arguments)."""

    branch: str
    args: tuple[STerm, ...]
    loc: Location


@dataclass(frozen=True)
class SNil:
    """The empty record ``nil``."""

    loc: Location


@dataclass(frozen=True)
class SField:
    """Field ``index`` of the record (or ADT value) ``rec``; made by the lowering of
    record patterns, never written.  ``raw`` reads stored field ``index`` as a number
    (the branch tag of an ADT value)."""

    rec: STerm
    index: int
    loc: Location
    raw: bool = False
    branch: str = ""  # the ADT branch the field belongs to (its type)


STerm = SVar | SWild | SNum | SStr | SCall | SCast | SAgg | SRecord | SAdt | SNil | SField

# --- body formulas ---------------------------------------------------------------------


@dataclass(frozen=True)
class SAtom:
    relation: str
    args: tuple[STerm, ...]
    loc: Location


@dataclass(frozen=True)
class SCmp:
    op: str
    left: STerm
    right: STerm
    loc: Location
    op_loc: Location


@dataclass(frozen=True)
class SNot:
    inner: SFormula
    loc: Location


@dataclass(frozen=True)
class SBool:
    value: bool
    loc: Location


@dataclass(frozen=True)
class SAnd:
    items: tuple[SFormula, ...]


@dataclass(frozen=True)
class SOr:
    items: tuple[SFormula, ...]


SFormula = SAtom | SCmp | SNot | SBool | SAnd | SOr


@dataclass(frozen=True)
class SNegAtom:
    """A negated atom in a conjunctive (expanded) body."""

    atom: SAtom
    loc: Location


SLiteral = SAtom | SNegAtom | SCmp

# --- statements ------------------------------------------------------------------------


@dataclass(frozen=True)
class Named:
    """A name as written, with its location."""

    name: str
    loc: Location


@dataclass(frozen=True)
class SChoice:
    """The ``choice-domain`` qualifier: its keys, each one or more attribute names."""

    keys: tuple[tuple[Named, ...], ...]
    loc: Location
    name: str = "choice-domain"


@dataclass(frozen=True)
class DeclStmt:
    names: tuple[Named, ...]
    attributes: tuple[tuple[Named, Named], ...]  # (attribute name, type name)
    qualifiers: tuple[Named | SChoice, ...]
    loc: Location
    # ``.decl D = debug_delta(R)``: R (D's attributes are R's plus ``iteration``)
    debug_delta: Named | None = None


@dataclass(frozen=True)
class TypeStmt:
    """A type declaration: ``subtype`` (``<:``), ``union`` (``=``, one member is an alias),
    ``base`` (legacy ``.number_type``/``.symbol_type``/``.type T``), ``record``
    (``= [a: T, ...]``) or ``adt`` (``= A {a: T} | B {}``)."""

    kind: Literal["subtype", "union", "base", "record", "adt"]
    name: Named
    members: tuple[Named, ...]
    # record: (field, type) pairs; adt: (branch, its (field, type) pairs)
    fields: tuple[tuple[Named, Named], ...] = ()
    branches: tuple[tuple[Named, tuple[tuple[Named, Named], ...]], ...] = ()


@dataclass(frozen=True)
class IOStmt:
    kind: str  # "input", "output", "printsize"
    names: tuple[Named, ...]
    params: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RuleStmt:
    heads: tuple[SAtom, ...]
    body: SFormula | None  # None for a fact
    loc: Location
    dominating: SAtom | None = None  # subsumptive rule: heads[0] <= dominating :- body


@dataclass(frozen=True)
class NoteStmt:
    """Something accepted and ignored (``.plan``, ``.pragma``); ``pragma`` holds a
    ``.pragma``'s key and value (quotes removed)."""

    text: str
    loc: Location
    pragma: tuple[str, str] | None = None
    plan: tuple[tuple[int, tuple[int, ...], Location], ...] = ()  # .plan: (version, order)


# --- components (expanded away by host.lang.dl_components before lowering) ---------------


@dataclass(frozen=True)
class CompType:
    """A component name with its type arguments: ``Name<T1, T2>``."""

    name: Named
    args: tuple[Named, ...]


@dataclass(frozen=True)
class CompStmt:
    """``.comp Name<P...> : Base<...>, ... { body }``."""

    head: CompType
    bases: tuple[CompType, ...]
    body: tuple[Statement, ...]
    loc: Location


@dataclass(frozen=True)
class InitStmt:
    """``.init instance = Name<args>``."""

    name: Named
    comp: CompType
    loc: Location


@dataclass(frozen=True)
class OverrideStmt:
    """``.override relation`` inside a component."""

    name: Named
    loc: Location


@dataclass(frozen=True)
class FunctorStmt:
    """``.functor name(a: T, ...): R [stateful]``: a user-defined functor's signature (its
    code is in a shared library, see ``host/functor_libs.py``)."""

    name: Named
    params: tuple[Named, ...]  # parameter type names
    result: Named
    stateful: bool
    loc: Location


Statement = (DeclStmt | TypeStmt | IOStmt | RuleStmt | NoteStmt | CompStmt | InitStmt
             | OverrideStmt | FunctorStmt)

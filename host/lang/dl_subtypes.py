"""Soufflé's subtype discipline over declared type names (checked before lowering).

:mod:`host.lang.dl_typecheck` types clauses by base type (``number``, ``symbol``, ...), so
it cannot see that two subtypes of one base type are different types.  Soufflé can: in

    .type T <: symbol   .type S <: symbol
    .decl A(x: T)   .decl B(x: S)
    A(x) :- B(x).

``x`` has type ``S``, which is not a subtype of ``T``, and Soufflé refuses the rule
(its ``semantic/rule_typecompat`` test).  Here each declared type denotes a set of
*leaves*: a primitive, subtype or legacy type ``t`` its own leaf ``t*`` plus the leaves of
the types declared below it, a union the leaves of its members, a record or ADT its own
leaf.  Two subtypes of one base type share no leaf; ``T`` is below ``symbol``.

What is checked, only between types of the same base type (other mismatches are
:mod:`host.lang.dl_typecheck`'s, with its messages), and only where declared types are
known (a variable bound only by constants, functors or records is not constrained):

* a variable's type is the meet of the attribute types of its occurrences as a direct
  argument of body atoms (negated ones too); an empty meet is an error;
* a comparison of two such variables needs types that meet;
* in the head, a variable's type must lie below the attribute's declared type.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from gpu_engine.host.lang.dl_syntax import SAtom, SCmp, SLiteral, SNegAtom, SVar, TypeStmt

from gpu_engine.ir import COLUMN_TYPES, Location, ProgramError


class Subtypes:
    """The leaves of every declared type name (and of the four primitive types)."""

    def __init__(self, decls: Sequence[TypeStmt]) -> None:
        self._decls = {d.name.name: d for d in decls}
        below: dict[str, list[str]] = {}
        for d in decls:
            if d.kind in ("subtype", "base"):
                below.setdefault(d.members[0].name, []).append(d.name.name)
        self._below = below
        self._leaves: dict[str, frozenset[str] | None] = {}

    def leaves(self, name: str) -> frozenset[str] | None:
        """The leaves of type ``name`` (None when unknown here: left unchecked)."""
        if name in self._leaves:
            return self._leaves[name]
        self._leaves[name] = None  # a cycle (reported by TypeEnv) stays unknown
        decl = self._decls.get(name)
        if decl is None and name not in COLUMN_TYPES:
            return None
        parts: list[frozenset[str] | None] = []
        if decl is not None and decl.kind == "union":
            parts.extend(self.leaves(m.name) for m in decl.members)
        else:
            parts.append(frozenset((name,)))
        parts.extend(self.leaves(s) for s in self._below.get(name, ()))
        out = None if any(p is None for p in parts) else frozenset().union(*parts)
        self._leaves[name] = out
        return out


def check_clause(head: SAtom, body: Sequence[SLiteral], declared: Mapping[str, Sequence[str]],
                 bases: Mapping[str, Sequence[str]], subtypes: Subtypes) -> None:
    """Raise a :class:`ProgramError` where the clause breaks Soufflé's subtype rules
    (module docstring); ``declared``/``bases`` give each relation's attribute type names
    and base types (relations made by the front end are absent and not checked)."""
    # variable -> (leaves, type name, where it was seen)
    var: dict[str, tuple[frozenset[str], str, str, str]] = {}
    for lit in body:
        atom = lit.atom if isinstance(lit, SNegAtom) else lit
        if (not isinstance(atom, SAtom) or atom.relation not in declared
                or len(atom.args) != len(declared[atom.relation])):  # arity: dl_typecheck's
            continue
        for i, arg in enumerate(atom.args):
            if not isinstance(arg, SVar):
                continue
            name, base = declared[atom.relation][i], bases[atom.relation][i]
            leaves = subtypes.leaves(name)
            if leaves is None:
                continue
            ctx = f"argument {i + 1} of '{atom.relation}'"
            known = var.get(arg.name)
            if known is None:
                var[arg.name] = (leaves, name, base, ctx)
                continue
            k_leaves, k_name, k_base, k_ctx = known
            if k_base != base:
                continue  # a base type mismatch: dl_typecheck reports it
            meet = k_leaves & leaves
            if not meet:
                _clash(f"variable '{arg.name}' has type {k_name} ({k_ctx}) but {ctx} has the "
                       f"disjoint type {name}", arg.loc)
            if meet == leaves and meet != k_leaves:  # the narrower type names it
                var[arg.name] = (meet, name, base, ctx)
            elif meet != k_leaves:
                var[arg.name] = (meet, k_name, base, k_ctx)
    for lit in body:
        if isinstance(lit, SCmp) and isinstance(lit.left, SVar) and isinstance(lit.right, SVar):
            a, b = var.get(lit.left.name), var.get(lit.right.name)
            if a is not None and b is not None and a[2] == b[2] and not a[0] & b[0]:
                _clash(f"'{lit.op}' compares '{lit.left.name}' of type {a[1]} with "
                       f"'{lit.right.name}' of the disjoint type {b[1]}", lit.op_loc)
    if head.relation not in declared or len(head.args) != len(declared[head.relation]):
        return
    for i, arg in enumerate(head.args):
        known = var.get(arg.name) if isinstance(arg, SVar) else None
        if known is None or known[2] != bases[head.relation][i]:
            continue
        name = declared[head.relation][i]
        leaves = subtypes.leaves(name)
        if leaves is not None and not known[0] <= leaves:
            _clash(f"variable '{arg.name}' has type {known[1]} ({known[3]}), which is not a "
                   f"subtype of {name} (argument {i + 1} of '{head.relation}')", arg.loc)


def _clash(message: str, loc: Location) -> None:
    raise ProgramError(f"type mismatch: {message}", loc)

"""Range restriction (safety) of one conjunctive clause.

A named variable is bound when it is a direct argument of a positive body atom, or when
it is one side of an equality ``x = expr`` whose other side only uses bound variables
(applied until nothing changes, so circular bindings stay unbound).  Every named variable
of the clause must be bound; the anonymous ``_`` may only be a direct argument of a
body atom.
"""

from __future__ import annotations

from collections.abc import Iterator

from gpu_engine.host.lang.dl_syntax import (
    SAdt,
    SAtom,
    SCall,
    SCast,
    SCmp,
    SField,
    SLiteral,
    SNegAtom,
    SRecord,
    STerm,
    SVar,
    SWild,
)

from gpu_engine.ir import ProgramError


def term_vars(t: STerm) -> Iterator[SVar]:
    """Named variables of a term, in source order."""
    if isinstance(t, SVar):
        yield t
    elif isinstance(t, (SCall, SRecord, SAdt)):
        for a in t.args:
            yield from term_vars(a)
    elif isinstance(t, SCast):
        yield from term_vars(t.arg)
    elif isinstance(t, SField):
        yield from term_vars(t.rec)


def _wildcards(t: STerm) -> Iterator[SWild]:
    if isinstance(t, SWild):
        yield t
    elif isinstance(t, (SCall, SRecord, SAdt)):
        for a in t.args:
            yield from _wildcards(a)
    elif isinstance(t, SCast):
        yield from _wildcards(t.arg)


def check_wildcards(head: SAtom, body: list[SLiteral]) -> None:
    """Reject ``_`` in the head, in comparisons and inside expressions."""
    for arg in head.args:
        for w in _wildcards(arg):
            raise ProgramError("'_' is not allowed in a rule head", w.loc)
    for lit in body:
        if isinstance(lit, SCmp):
            for side in (lit.left, lit.right):
                for w in _wildcards(side):
                    raise ProgramError("'_' is not allowed in a comparison", w.loc)
            continue
        atom = lit.atom if isinstance(lit, SNegAtom) else lit
        for arg in atom.args:
            if not isinstance(arg, SWild):
                for w in _wildcards(arg):
                    raise ProgramError("'_' is not allowed inside an expression", w.loc)


def bound_variables(body: list[SLiteral]) -> set[str]:
    """Variables bound by positive atoms and (non-circular) binding equalities."""
    bound = {
        a.name for lit in body if isinstance(lit, SAtom) for a in lit.args if isinstance(a, SVar)
    }
    equalities = [c for c in body if isinstance(c, SCmp) and c.op == "="]
    changed = True
    while changed:
        changed = False
        for c in equalities:
            for side, other in ((c.left, c.right), (c.right, c.left)):
                if (
                    isinstance(side, SVar)
                    and side.name not in bound
                    and all(v.name in bound for v in term_vars(other))
                ):
                    bound.add(side.name)
                    changed = True
    return bound


def _occurrences(head: SAtom, body: list[SLiteral]) -> Iterator[SVar]:
    for arg in head.args:
        yield from term_vars(arg)
    for lit in body:
        if isinstance(lit, SCmp):
            yield from term_vars(lit.left)
            yield from term_vars(lit.right)
        else:
            atom = lit.atom if isinstance(lit, SNegAtom) else lit
            for arg in atom.args:
                yield from term_vars(arg)


def check_safety(head: SAtom, body: list[SLiteral]) -> None:
    """Raise for the first (in source order) occurrence of an unbound named variable."""
    check_wildcards(head, body)
    bound = bound_variables(body)
    unsafe = [v for v in _occurrences(head, body) if v.name not in bound]
    if not unsafe:
        return
    first = min(unsafe, key=lambda v: (v.loc.line, v.loc.column))
    in_equality = any(
        isinstance(c, SCmp)
        and c.op == "="
        and first.name in (_side_name(c.left), _side_name(c.right))
        for c in body
    )
    hint = (
        " (the other side of its equality is unbound, or the binding is circular)"
        if in_equality
        else ""
    )
    raise ProgramError(
        f"unsafe variable '{first.name}': not bound by a positive body atom "
        f"or a binding equality{hint}",
        first.loc,
    )


def _side_name(t: STerm) -> str | None:
    return t.name if isinstance(t, SVar) else None

"""Witnesses of ``min``/``max`` aggregates (Soufflé's semantics), as a rewrite of the clause.

A *witness* of an aggregate is a variable that the aggregate's body grounds and that the
enclosing clause uses outside every aggregate without grounding it there, e.g. ``student`` in
``Tallest(student, n) :- n = max h : { Student(student, h) }``.  Soufflé binds it to the
values of the body instances whose target equals the result (every such instance, so ties
give several rows).  We read it as Soufflé's front end does, by rewriting the clause:

1. inside the aggregate the witnesses are renamed to fresh variables (they become local);
2. the aggregate's body literals are added to the clause with the witnesses under their own
   names, the other local variables renamed apart, and the target variable replaced by the
   (renamed) aggregate itself (a target expression ``e`` adds ``e = aggregate`` instead).

The added literals ground the witnesses; the same aggregate term is then lowered once.  A
variable is a witness of the innermost aggregate that grounds it (a witness of an inner
aggregate is not one of the outer); a variable grounded by an enclosing aggregate's body is
injected, not a witness.  Witnesses of ``count``, ``sum`` and ``mean`` are refused, as in
Soufflé (there is no instance the result belongs to).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from gpu_engine.host.lang.dl_safety import bound_variables
from gpu_engine.host.lang.dl_syntax import SAdt, SAgg, SAtom, SCmp, SLiteral, SNum, SRecord, SVar
from gpu_engine.host.lang.dl_walk import children, transform

from gpu_engine.ir import ProgramError


def _aggregates(node: Any, ancestors: tuple[SAgg, ...] = ()) -> Iterator[tuple[SAgg, tuple[SAgg, ...]]]:
    """Every aggregate under ``node`` with its enclosing aggregates, outer ones first."""
    if isinstance(node, SAgg):
        yield node, ancestors
        ancestors = (*ancestors, node)
    for child in children(node):
        yield from _aggregates(child, ancestors)


def shallow_vars(node: Any) -> Iterator[SVar]:
    """Named variables under ``node`` outside every aggregate."""
    if isinstance(node, SVar):
        yield node
    elif not isinstance(node, SAgg):
        for child in children(node):
            yield from shallow_vars(child)


def _all_vars(node: Any) -> set[str]:
    out: set[str] = set()
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, SVar):
            out.add(n.name)
        stack.extend(children(n))
    return out


def _masked(lits: list[SLiteral]) -> list[SLiteral]:
    """The literals with every aggregate replaced by a constant (its result is ground)."""
    def f(n: Any) -> Any:
        return SNum(0, "int", "0", n.loc) if isinstance(n, SAgg) else n
    return [transform(lit, f) for lit in lits]


def _body(agg: SAgg) -> list[SLiteral] | None:
    from gpu_engine.host.lang.dl_lower import expand_body

    conj = expand_body(agg.body)
    return conj[0] if len(conj) == 1 else None


def _grounded(lits: list[SLiteral]) -> set[str]:
    return bound_with_patterns(_masked(lits))


def _pattern_vars(t: Any) -> Iterator[str]:
    if isinstance(t, SVar):
        yield t.name
    elif isinstance(t, (SRecord, SAdt)):
        for a in t.args:
            yield from _pattern_vars(a)


def bound_with_patterns(body: list[SLiteral]) -> set[str]:
    """:func:`bound_variables` where record and ADT patterns also bind: in positive atoms,
    and in equalities with a bound variable on the other side (the front end flattens
    them later, ``dl_records``)."""
    lits: list[SLiteral] = []
    for k, lit in enumerate(body):
        if isinstance(lit, SAtom) and any(isinstance(a, (SRecord, SAdt)) for a in lit.args):
            args = []
            for j, a in enumerate(lit.args):
                if isinstance(a, (SRecord, SAdt)):
                    v = SVar(f"@pat{k}.{j}", a.loc)
                    lits.append(SCmp("=", v, a, a.loc, a.loc))
                    args.append(v)
                else:
                    args.append(a)
            lits.append(replace(lit, args=tuple(args)))
        else:
            lits.append(lit)
    bound = bound_variables(lits)
    while True:
        grown = set(bound)
        for c in lits:
            if isinstance(c, SCmp) and c.op == "=":
                for side, other in ((c.left, c.right), (c.right, c.left)):
                    if isinstance(side, SVar) and side.name in bound:
                        grown.update(_pattern_vars(other))
        if grown == bound:
            return {v for v in bound if not v.startswith("@pat")}
        seed = SAtom("@bound", tuple(SVar(v, body[0].loc) for v in sorted(grown)), body[0].loc)
        bound = bound_variables([*lits, seed])


def _witnesses(agg: SAgg, ancestors: tuple[SAgg, ...], outside: set[str],
               ground: set[str]) -> set[str]:
    """The witnesses of ``agg`` (``outside``: the clause's variables outside aggregates,
    ``ground``: those the clause grounds)."""
    body = _body(agg)
    if body is None:
        return set()
    injected = set(ground)
    for p in ancestors:
        pb = _body(p)
        if pb is not None:
            injected |= _grounded(pb)
    found = ((outside - ground) & _grounded(body)) - injected
    for inner, anc in _aggregates(tuple(body), (*ancestors, agg)):
        found -= _witnesses(inner, anc, outside, ground)
    return found


def ground_witnesses(head: SAtom, body: list[SLiteral],
                     fresh: Callable[[str], str]) -> tuple[SAtom, list[SLiteral]]:
    """The clause with the witnesses of its aggregates grounded (see the module docstring);
    ``fresh(name)`` makes a new variable name."""
    for _ in range(64):  # each round removes the witnesses of one aggregate
        outside = {v.name for v in shallow_vars((head, tuple(body)))}
        ground = _grounded(body)
        for agg, ancestors in _aggregates((head, tuple(body))):
            found = _witnesses(agg, ancestors, outside, ground)
            if found:
                head, body = _rewrite(head, body, agg, found, fresh)
                break
        else:
            return head, body
    raise ProgramError("too many nested aggregate witnesses", head.loc)


def _rewrite(head: SAtom, body: list[SLiteral], agg: SAgg, witnesses: set[str],
             fresh: Callable[[str], str]) -> tuple[SAtom, list[SLiteral]]:
    if agg.op not in ("min", "max"):
        first = next(v for v in shallow_vars((head, tuple(body))) if v.name in witnesses)
        raise ProgramError(
            f"variable '{first.name}' is grounded only inside a '{agg.op}' aggregate and used "
            "outside it: witnesses exist only for min and max (as in Soufflé)", first.loc)
    lits = _body(agg)
    assert lits is not None
    inside = {w: fresh(w) for w in witnesses}

    def rename(mapping: dict[str, str]) -> Callable[[Any], Any]:
        def f(n: Any) -> Any:
            if isinstance(n, SVar) and n.name in mapping:
                return SVar(mapping[n.name], n.loc)
            return n
        return f

    renamed = transform(agg, rename(inside))

    def put(n: Any) -> Any:
        return renamed if n is agg else n

    head = transform(head, put)
    body = [transform(lit, put) for lit in body]
    # the copy of the body: witnesses keep their names, variables grounded by the clause
    # stay (injected), the others are renamed apart
    ground = _grounded(body)
    target = agg.target.name if isinstance(agg.target, SVar) else None
    others = {v: fresh(v) for v in _all_vars(tuple(lits)) if v not in witnesses
              and v not in ground and v != target}
    ren = rename(others)

    def copy(n: Any) -> Any:
        if isinstance(n, SVar) and n.name == target:
            return renamed
        return ren(n)

    added = [transform(lit, copy) for lit in lits]
    if target is None and agg.target is not None:
        added.append(SCmp("=", transform(agg.target, ren), renamed, agg.loc, agg.loc))
    return head, [*body, *added]

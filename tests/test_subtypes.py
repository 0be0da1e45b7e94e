"""Soufflé's subtype discipline (host.lang.dl_subtypes): subtypes of one base type are
different types; a variable's type is the meet of its body occurrences and must lie below
the head attribute's type.  Expected verdicts follow Soufflé's semantic/rule_typecompat."""

from __future__ import annotations

import pytest

from gpu_engine import Reasoner
from gpu_engine.ir import ProgramError

DECLS = """
.type T <: symbol
.symbol_type S
.type U = T | S
.type Alias = T
.type Sub <: T
.number_type N
.type M <: number
.decl A(t: T)  .decl B(s: S)  .decl Y(x: symbol)  .decl W(u: U)  .decl L(a: Alias)
.decl Q(x: Sub)  .decl F(s: S, t: T)  .decl I(n: N)  .decl J(m: M)  .decl K(n: number)
"""

ACCEPTED = [
    "A(x) :- A(x).",
    "Y(x) :- A(x).",  # T lies below symbol
    "W(x) :- A(x).", "W(x) :- B(x).",  # members lie below their union
    "L(x) :- A(x).", "A(x) :- L(x).",  # an alias is the same type
    "A(x) :- Q(x).", "A(x) :- Y(x), A(x).",  # the meet of symbol and T is T
    "A(x) :- W(x), A(x).", "B(x) :- F(x, _).", "A(y) :- F(_, y).",
    "A(x) :- A(x), !Q(x).", "A(x) :- A(x), x != \"c\".", "A(\"c\").",
    "K(n) :- I(n).", "K(n) :- I(m), J(k), n = m + k.",  # arithmetic is not constrained
    "A(x) :- F(_, x), Y(y), x != y.", "A(x) :- A(x), Y(x).",
]

REFUSED = [
    ("A(x) :- B(x).", "type S", "not a subtype of T"),
    ("A(x) :- Y(x).", "type symbol", "not a subtype of T"),  # a cast would be needed
    ("A(x) :- W(x).", "type U", "not a subtype of T"),
    ("Q(x) :- A(x).", "type T", "not a subtype of Sub"),
    ("A(x) :- A(x), B(x).", "'x' has type T", "disjoint type S"),
    ("A(x) :- F(x, x).", "'x' has type S", "disjoint type T"),
    ("A(x) :- A(x), !B(x).", "'x' has type T", "disjoint type S"),
    ("A(x) :- F(y, x), x != y.", "compares 'x' of type T", "'y' of the disjoint type S"),
    ("A(x) :- F(y, x), y < x.", "", "disjoint"),
    ("I(n) :- J(n).", "type M", "not a subtype of N"),
    ("I(n) :- K(n).", "type number", "not a subtype of N"),
]


def _run(rule: str) -> Reasoner:
    r = Reasoner(DECLS + rule + "\n", device="cpu")
    r.materialise()
    return r


@pytest.mark.parametrize("rule", ACCEPTED)
def test_accepted(rule: str) -> None:
    _run(rule)


@pytest.mark.parametrize(("rule", "first", "second"), REFUSED)
def test_refused(rule: str, first: str, second: str) -> None:
    with pytest.raises(ProgramError) as info:
        _run(rule)
    text = str(info.value)
    assert "type mismatch" in text and first in text and second in text, text
    assert f":{DECLS.count(chr(10)) + 1}:" in text  # the rule's line


def test_casts_and_facts_still_move_values_between_subtypes() -> None:
    r = _run('Y("a"). Y("b").\nA(as(x, T)) :- Y(x), x != "b".\nW(x) :- A(x).')
    assert r.render("W").split() == ["a"]

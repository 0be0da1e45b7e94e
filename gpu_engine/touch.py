"""What a rule reads, computed once per rule: the cheapest tests that skip work.

A small update touches a few relations; maintenance asks, per stratum and per rule,
whether the rule can see a change at all.  These tests must cost less than the work they
skip, so everything they need that depends on the rule alone (the relations its positive
and negated atoms read, the encoded constants of each atom) is computed once and kept,
keyed by the rule object (the engine's rules live as long as the engine; a key holds its
rule, so an id is never reused while its entry exists).
"""

from __future__ import annotations

import os
import weakref
from dataclasses import dataclass
from typing import Any

from .expr import const_value
from .ir import Atom, Const, Negation, Rule

_LIMIT = 1 << 16  # entries kept (rules of programs that come and go in one process)

# Maintenance's shortcuts for small changes (rules skipped by what they read, one-atom
# rules as filters, strata without rules, strata that copy facts): on unless
# GPU_ENGINE_MAINTENANCE_SHORTCUTS=0 (the tests compare both ways).
SHORTCUTS = os.environ.get("GPU_ENGINE_MAINTENANCE_SHORTCUTS", "1") != "0"


@dataclass(frozen=True)
class RuleReads:
    """The relations a rule's positive atoms (``pos``) and negated atoms (``neg``) read."""

    pos: frozenset[str]
    neg: frozenset[str]


_reads: dict[int, tuple[Rule, RuleReads]] = {}
# per symbol table (weakly: a table may be large), per atom
_consts: weakref.WeakKeyDictionary[Any, dict[int, tuple[Atom, tuple[tuple[int, int], ...]]]] \
    = weakref.WeakKeyDictionary()


def reads(rule: Rule) -> RuleReads:
    """The relations ``rule`` reads (cached per rule)."""
    hit = _reads.get(id(rule))
    if hit is not None and hit[0] is rule:
        return hit[1]
    out = RuleReads(frozenset(lit.relation for lit in rule.body if isinstance(lit, Atom)),
                    frozenset(lit.atom.relation for lit in rule.body
                              if isinstance(lit, Negation)))
    if len(_reads) >= _LIMIT:
        _reads.clear()
    _reads[id(rule)] = (rule, out)
    return out


def can_see(rule: Rule, P: dict[str, Any], N: dict[str, Any] | None) -> bool:
    """Whether Π⟦..: P, N⟧ of ``rule`` may be nonempty: some positive atom reads a
    relation with rows in ``P`` or some negated atom one with rows in ``N``."""
    rr = reads(rule)
    for r in rr.pos:
        p = P.get(r)
        if p is not None and len(p):
            return True
    if N and rr.neg:
        for r in rr.neg:
            n = N.get(r)
            if n is not None and len(n):
                return True
    return False


_by_rel: dict[int, tuple[tuple[Rule, ...], dict[str, list[int]], dict[str, list[int]]]] = {}


def seeing(rules: list[Rule], P: dict[str, Any], N: dict[str, Any] | None) -> list[Rule]:
    """The rules of ``rules`` (in their order) that :func:`can_see` the change, found
    through an index from relations to the rules reading them (kept per rule list), so
    that the cost follows the changed relations rather than the rules."""
    if len(rules) <= 2:
        return [rule for rule in rules if can_see(rule, P, N)]
    key = tuple(rules)
    hit = _by_rel.get(id(rules))
    if hit is None or hit[0] != key:
        pos: dict[str, list[int]] = {}
        neg: dict[str, list[int]] = {}
        for i, rule in enumerate(rules):
            rr = reads(rule)
            for r in rr.pos:
                pos.setdefault(r, []).append(i)
            for r in rr.neg:
                neg.setdefault(r, []).append(i)
        if len(_by_rel) >= _LIMIT:
            _by_rel.clear()
        hit = _by_rel[id(rules)] = (key, pos, neg)
    _, pos, neg = hit
    picked: set[int] = set()
    for r, p in P.items():
        at = pos.get(r)
        if at is not None and len(p):
            picked.update(at)
    if N and neg:
        for r, n in N.items():
            at = neg.get(r)
            if at is not None and len(n):
                picked.update(at)
    return [rules[i] for i in sorted(picked)]


_last: list[Any] = [None, None]  # (weak reference to the last symbol table, its table)


def _table_of(symbols: Any) -> dict[int, Any]:
    """The constants cache of one symbol table (the last one found without a weak-key
    look-up: one engine asks many times in a row)."""
    ref = _last[0]
    if ref is not None and ref() is symbols:
        return _last[1]
    try:
        table = _consts.get(symbols)
        if table is None:
            table = _consts[symbols] = {}
        _last[0], _last[1] = weakref.ref(symbols), table
    except TypeError:  # a table that cannot be weakly referenced: no cache
        table = {}
    return table


def atom_consts(atom: Atom, symbols: Any) -> tuple[tuple[int, int], ...]:
    """(position, encoded value) of the atom's constants (cached per symbol table and
    atom: a symbol constant's id is the table's)."""
    table = _table_of(symbols)
    hit = table.get(id(atom))
    if hit is not None and hit[0] is atom:
        return hit[1]
    out = tuple((q, const_value(t, symbols)) for q, t in enumerate(atom.args)
                if isinstance(t, Const))
    if len(table) >= _LIMIT:
        table.clear()
    table[id(atom)] = (atom, out)
    return out


__all__ = ["SHORTCUTS", "RuleReads", "atom_consts", "can_see", "reads", "seeing"]

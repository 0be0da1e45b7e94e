"""``inline`` relations, substituted into the rules that use them (as Soufflé does).

A relation declared ``inline`` is never materialised: each atom ``p(a1, ..., an)`` in a rule
body becomes the disjunction, over ``p``'s rules ``p(h1, ..., hn) :- B``, of ``B`` with
``p``'s variables renamed apart, where a head variable ``hi`` seen first is replaced by
``ai`` and every other head argument gives an equality ``hi = ai``.  A negated atom
``!p(...)`` becomes the negation of that disjunction (pushed inwards later by De Morgan),
which is exact only when ``p``'s rules bind no variable outside their head: otherwise, or
when the negated atom has a ``_`` argument, the program is refused, as Soufflé does.

Refused with the location of the offending name: recursion through inline relations,
inline relations with ``.input``/``.output``/``.printsize``, ``eqrel`` inline relations,
and inline atoms inside aggregates.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace
from itertools import count
from typing import Any

from gpu_engine.host.lang.dl_syntax import (
    DeclStmt,
    IOStmt,
    Named,
    RuleStmt,
    SAdt,
    SAnd,
    SAtom,
    SBool,
    SCall,
    SCast,
    SCmp,
    SFormula,
    SNil,
    SNot,
    SNum,
    SOr,
    SRecord,
    SStr,
    Statement,
    STerm,
    SVar,
    SWild,
)
from gpu_engine.host.lang.dl_walk import transform, walk

from gpu_engine.ir import Location, ProgramError

_IO = ("input", "output", "printsize")


@dataclass(frozen=True)
class _Clause:
    head: SAtom
    body: SFormula | None
    loc: Location


def inline_relations(statements: list[Statement]) -> list[Statement]:
    """The program with every ``inline`` relation substituted into its uses and removed."""
    inline: dict[str, Named] = {}
    arity: dict[str, int] = {}
    for s in statements:
        if isinstance(s, DeclStmt) and any(q.name == "inline" for q in s.qualifiers):
            for q in s.qualifiers:
                if q.name in _IO:
                    raise ProgramError(f"relation '{s.names[0].name}' is inline and cannot "
                                       f"have the '{q.name}' qualifier", q.loc)
                if q.name in ("eqrel", "equality"):
                    raise ProgramError(f"{q.name} relation '{s.names[0].name}' cannot be "
                                       "inline", q.loc)
            for n in s.names:
                inline[n.name] = n
                arity[n.name] = len(s.attributes)
    if not inline:
        return statements
    return _Inliner(statements, inline, arity).run()


class _Inliner:
    def __init__(self, statements: list[Statement], inline: dict[str, Named],
                 arity: dict[str, int]) -> None:
        self.statements = statements
        self.inline = inline
        self.arity = arity
        self.clauses: dict[str, list[_Clause]] = {name: [] for name in inline}
        self.done: dict[str, list[_Clause]] = {}
        self.visiting: list[str] = []
        self.fresh = count(1)

    def run(self) -> list[Statement]:
        out: list[Statement] = []
        for s in self.statements:
            if isinstance(s, IOStmt):
                for n in s.names:
                    if n.name in self.inline:
                        raise ProgramError(f"relation '{n.name}' is inline and cannot have "
                                           f".{s.kind}", n.loc)
            if isinstance(s, RuleStmt):
                for h in s.heads:
                    if h.relation in self.inline:
                        self.clauses[h.relation].append(_Clause(h, s.body, s.loc))
        for name in self.inline:
            self._definition(name)
        for s in self.statements:
            if isinstance(s, DeclStmt):
                names = tuple(n for n in s.names if n.name not in self.inline)
                if names:
                    out.append(s if len(names) == len(s.names) else replace(s, names=names))
            elif isinstance(s, RuleStmt):
                heads = tuple(h for h in s.heads if h.relation not in self.inline)
                if not heads:
                    continue
                body = None if s.body is None else self._formula(s.body)
                out.append(replace(s, heads=heads, body=body))
            else:
                out.append(s)
        return out

    # ---- definitions, inner inline relations substituted first ------------------------

    def _definition(self, name: str) -> list[_Clause]:
        if name in self.done:
            return self.done[name]
        if name in self.visiting:
            cycle = [*self.visiting[self.visiting.index(name):], name]
            raise ProgramError("cannot inline recursive relations: " + " -> ".join(cycle),
                               self.inline[cycle[0]].loc)
        self.visiting.append(name)
        clauses = [replace(c, body=None if c.body is None else self._formula(c.body))
                   for c in self.clauses[name]]
        self.visiting.pop()
        self.done[name] = clauses
        return clauses

    # ---- rewriting bodies ------------------------------------------------------------

    def _formula(self, f: SFormula) -> SFormula:
        if isinstance(f, SAtom):
            self._check_terms(f.args)
            return self._expand(f, None) if f.relation in self.inline else f
        if isinstance(f, SNot):
            if isinstance(f.inner, SAtom) and f.inner.relation in self.inline:
                self._check_terms(f.inner.args)
                return SNot(self._expand(f.inner, f.loc), f.loc)
            return SNot(self._formula(f.inner), f.loc)
        if isinstance(f, SAnd):
            return SAnd(tuple(self._formula(x) for x in f.items))
        if isinstance(f, SOr):
            return SOr(tuple(self._formula(x) for x in f.items))
        if isinstance(f, SCmp):
            self._check_terms((f.left, f.right))
            return f
        if isinstance(f, SBool):
            return f
        self._check_terms(f)  # a construct of its own: no inline atom may hide in it
        return f

    def _check_terms(self, node: Any) -> None:
        """Inline atoms inside terms (aggregates) are not substituted: refuse them."""
        for atom in _atoms_in(node):
            if atom.relation in self.inline:
                raise ProgramError(f"the inline relation '{atom.relation}' cannot be inlined "
                                   "inside an aggregate (declare it without 'inline')",
                                   atom.loc)

    def _expand(self, atom: SAtom, negated: Location | None) -> SFormula:
        """The disjunction of the definitions of ``atom``'s relation, unified with it."""
        if negated is not None:
            for arg in atom.args:
                for w in _wildcards(arg):
                    raise ProgramError(f"cannot inline the negated atom '{atom.relation}' with "
                                       "an unnamed variable '_' (name it, or declare the "
                                       "relation without 'inline')", w.loc)
        arity = self.arity[atom.relation]
        for a in (atom, *(c.head for c in self.clauses[atom.relation])):
            if len(a.args) != arity:
                raise ProgramError(
                    f"arity mismatch: relation '{a.relation}' has arity {arity} "
                    f"but is used with {len(a.args)} argument(s)", a.loc)
        disjuncts: list[SFormula] = []
        for clause in self._definition(atom.relation):
            if negated is not None:
                # a variable only inside a head expression (``R(x + x) :- x = 0``) is not
                # bound by the atom's arguments: it is local too
                direct = {a.name for a in clause.head.args if isinstance(a, SVar)}
                local = _variables(clause.body) - direct
                if local:
                    raise ProgramError(
                        f"cannot inline the negated relation '{atom.relation}': its rule at "
                        f"{clause.loc} binds variables outside its head "
                        f"({', '.join(sorted(local))})", negated)
            disjuncts.append(self._unify(clause, atom))
        if not disjuncts:
            return SBool(False, atom.loc)
        return disjuncts[0] if len(disjuncts) == 1 else SOr(tuple(disjuncts))

    def _unify(self, clause: _Clause, atom: SAtom) -> SFormula:
        k = next(self.fresh)
        subst: dict[str, STerm] = {}
        pending: list[tuple[STerm, STerm]] = []
        wildcards = count()

        def name_wildcards(n: Any) -> Any:
            return SVar(f"_~{k}~{next(wildcards)}", n.loc) if isinstance(n, SWild) else n

        for h, a in zip(clause.head.args, atom.args, strict=True):
            # a record/ADT pattern becomes an equality with the argument (taken apart later
            # by dl_records when the argument is bound)
            if not isinstance(h, (SVar, SWild, SNum, SStr, SCall, SCast, SRecord, SAdt, SNil)):
                raise ProgramError(f"cannot inline '{atom.relation}': record or ADT patterns in "
                                   "the heads of inline relations are not supported (declare "
                                   "it without 'inline')", getattr(h, "loc", clause.loc))
            a = transform(a, name_wildcards)  # '_' in the atom: one fresh variable each
            if isinstance(h, SVar) and h.name not in subst:
                subst[h.name] = a
            elif not isinstance(h, SWild):
                pending.append((h, a))

        def rename(n: Any) -> Any:
            if isinstance(n, SVar):
                return subst.get(n.name) or SVar(f"{n.name}~{k}", n.loc)
            return n

        parts: list[SFormula] = []
        if clause.body is not None:
            parts.append(transform(clause.body, rename))
        for h, a in pending:
            parts.append(SCmp("=", transform(h, rename), a, atom.loc, atom.loc))
        if not parts:
            return SBool(True, atom.loc)
        return parts[0] if len(parts) == 1 else SAnd(tuple(parts))


def _atoms_in(node: Any) -> Iterator[SAtom]:
    return (n for n in walk(node) if isinstance(n, SAtom))


def _wildcards(node: Any) -> Iterator[SWild]:
    return (n for n in walk(node) if isinstance(n, SWild))


def _variables(node: Any) -> set[str]:
    return {n.name for n in walk(node) if isinstance(n, SVar)}

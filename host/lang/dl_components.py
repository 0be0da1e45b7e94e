"""Components (``.comp``, ``.init``, ``.override``), expanded into a flat program.

Soufflé's component model, applied to the surface tree before anything is typed:

* ``.comp Name<P1, P2> : Base<A1>, Other { ... }`` declares a component (a template of
  types, relations, rules, directives and nested components); ``.init inst = Name<T1, T2>``
  instantiates it.  Everything an instance declares is renamed ``inst.x`` (relations, types,
  the relations of its ``.input``/``.output`` directives), and references to those names
  inside the instance follow; nested instances nest the prefixes (``a.b.rel``).
* Type parameters are replaced by their arguments in attribute types, type declarations and
  casts; a parameter may also name the component to instantiate or inherit from.
* A component inherits its bases' content (bases first); ``.override rel`` drops the rules
  and facts its bases give an ``overridable`` relation ``rel``.
* A rule whose head relation is not declared in the instance (an "orphan") moves up to the
  enclosing instance that declares it, or to the program if none does.

Component names are looked up in the enclosing components (and their bases) from the
innermost outwards, then globally.  Errors (unknown component, wrong number of type
arguments, an override of a relation that is not ``overridable`` or not inherited,
cyclic inheritance, name clashes, instantiation nested too deeply) are ``ProgramError``s at
the offending name.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from gpu_engine.host.lang.dl_syntax import (
    CompStmt,
    CompType,
    DeclStmt,
    InitStmt,
    IOStmt,
    Named,
    NoteStmt,
    OverrideStmt,
    RuleStmt,
    SAdt,
    SAtom,
    SCast,
    Statement,
    TypeStmt,
)
from gpu_engine.host.lang.dl_walk import transform

from gpu_engine.ir import Location, ProgramError

MAX_DEPTH = 100  # nesting of instantiations (a component instantiating itself stops here)

Binding = dict[str, str]  # type parameter -> actual name


@dataclass(eq=False)
class _Comp:
    """A component declaration, its body sorted by kind, and its enclosing component."""

    stmt: CompStmt
    parent: _Comp | None
    types: list[TypeStmt] = field(default_factory=list)
    decls: list[DeclStmt] = field(default_factory=list)
    ios: list[IOStmt] = field(default_factory=list)
    clauses: list[RuleStmt] = field(default_factory=list)
    comps: dict[str, _Comp] = field(default_factory=dict)
    inits: list[InitStmt] = field(default_factory=list)
    overrides: dict[str, Named] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.stmt.head.name.name

    @property
    def params(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.stmt.head.args)


@dataclass
class _Content:
    """What an instantiation contributes, before and after its names are prefixed."""

    types: list[TypeStmt] = field(default_factory=list)
    relations: list[DeclStmt] = field(default_factory=list)
    ios: list[IOStmt] = field(default_factory=list)
    clauses: list[RuleStmt] = field(default_factory=list)

    def extend(self, other: _Content) -> None:
        self.types.extend(other.types)
        self.relations.extend(other.relations)
        self.ios.extend(other.ios)
        self.clauses.extend(other.clauses)


def expand_components(statements: list[Statement]) -> list[Statement]:
    """The program with every component instantiated and every declaration removed."""
    if not any(isinstance(s, (CompStmt, InitStmt, OverrideStmt)) for s in statements):
        return statements
    return _Expander(statements).run()


class _Expander:
    def __init__(self, statements: list[Statement]) -> None:
        self.statements = statements
        self.globals: dict[str, _Comp] = {}
        self.notes: list[Statement] = []
        for s in statements:
            if isinstance(s, CompStmt):
                self._declare(s, None, self.globals)
            elif isinstance(s, OverrideStmt):
                raise ProgramError(".override is only allowed inside a component", s.loc)

    # ---- the component tree -------------------------------------------------------------

    def _declare(self, stmt: CompStmt, parent: _Comp | None, scope: dict[str, _Comp]) -> None:
        comp = _Comp(stmt, parent)
        name = stmt.head.name
        if name.name in scope:
            first = scope[name.name].stmt.head.name.loc
            raise ProgramError(f"component '{name.name}' redeclared (first declared at {first})",
                               name.loc)
        seen: set[str] = set()
        for p in stmt.head.args:
            if "." in p.name:
                raise ProgramError(f"type parameter '{p.name}' must be a plain name", p.loc)
            if p.name in seen:
                raise ProgramError(f"type parameter '{p.name}' declared twice", p.loc)
            seen.add(p.name)
        scope[name.name] = comp
        for s in stmt.body:
            if isinstance(s, TypeStmt):
                comp.types.append(s)
            elif isinstance(s, DeclStmt):
                comp.decls.append(s)
            elif isinstance(s, IOStmt):
                comp.ios.append(s)
            elif isinstance(s, RuleStmt):
                comp.clauses.extend([s] if len(s.heads) == 1 else
                                    [replace(s, heads=(h,), loc=h.loc) for h in s.heads])
            elif isinstance(s, CompStmt):
                self._declare(s, comp, comp.comps)
            elif isinstance(s, InitStmt):
                comp.inits.append(s)
            elif isinstance(s, OverrideStmt):
                comp.overrides.setdefault(s.name.name, s.name)
            elif isinstance(s, NoteStmt):  # .plan, .pragma: reported once, not per instance
                self.notes.append(s)
            else:
                loc = getattr(s, "loc", None) or getattr(getattr(s, "name", None), "loc", None)
                raise ProgramError(f"{type(s).__name__} is not supported inside a component",
                                   loc or stmt.loc)

    def lookup(self, scope: _Comp | None, name: str, binding: Binding) -> _Comp | None:
        """The component ``name`` (or the one a type parameter binds it to) seen from
        ``scope``: nested components of ``scope`` and of its bases, outwards, then global."""
        bound = binding.get(name, name)
        s = scope
        while s is not None:
            if bound in s.comps:
                return s.comps[bound]
            for base in s.stmt.bases:
                b = self.lookup(s.parent, base.name.name, binding)
                if b is s:
                    return None
                if b is not None:
                    found = self.lookup(b, name, binding)
                    if found is not None:
                        return found
            s = s.parent
        return self.globals.get(bound)

    # ---- checks -------------------------------------------------------------------------

    def _resolve(self, scope: _Comp | None, ct: CompType, binding: Binding) -> _Comp:
        comp = self.lookup(scope, ct.name.name, binding)
        if comp is None:
            raise ProgramError(f"unknown component '{binding.get(ct.name.name, ct.name.name)}'",
                               ct.name.loc)
        if len(comp.params) != len(ct.args):
            raise ProgramError(
                f"component '{comp.name}' takes {len(comp.params)} type parameter(s), "
                f"but {len(ct.args)} are given", ct.name.loc)
        return comp

    def _check(self, comp: _Comp, outer: frozenset[str] = frozenset()) -> None:
        own = outer | set(comp.params)  # parameters: unknown until instantiated
        for base in comp.stmt.bases:
            if base.name.name not in own:
                self._resolve(comp.parent, base, {})
        parents = self._ancestors(comp)
        if comp in parents:
            raise ProgramError(f"cyclic inheritance of component '{comp.name}'",
                               comp.stmt.head.name.loc)
        declared = {n.name for d in comp.decls for n in d.names}
        for name, where in comp.overrides.items():
            if name in declared:
                raise ProgramError(f"override of relation '{name}', which component "
                                   f"'{comp.name}' declares itself (not inherited)", where.loc)
            found = False
            for parent in parents:
                for d in parent.decls:
                    if any(n.name == name for n in d.names):
                        found = True
                        if not any(q.name == "overridable" for q in d.qualifiers):
                            raise ProgramError(
                                f"override of relation '{name}' of component "
                                f"'{parent.name}', which is not declared overridable",
                                where.loc)
            generic = any(b.name.name in c.params for c in (comp, *parents)
                          for b in c.stmt.bases)  # a base given as a parameter: unknown
            if not found and not generic and "." not in name:
                raise ProgramError(f"override of relation '{name}', which no base of "
                                   f"component '{comp.name}' declares", where.loc)
        for nested in comp.comps.values():
            self._check(nested, own)
        for init in comp.inits:
            if init.comp.name.name not in own:
                self._resolve(comp, init.comp, {})

    def _ancestors(self, comp: _Comp) -> list[_Comp]:
        """The components ``comp`` inherits from, transitively (parameters skipped)."""
        out: list[_Comp] = []
        todo = [comp]
        while todo:
            cur = todo.pop()
            own = set(cur.params)
            for base in cur.stmt.bases:
                if base.name.name in own:
                    continue
                b = self.lookup(cur.parent, base.name.name, {})
                if b is not None and b not in out:
                    out.append(b)
                    if b is not comp:
                        todo.append(b)
        return out

    def _check_names(self) -> None:
        """Component and instance names must differ from type and relation names."""
        names: dict[str, Location] = {}
        for s in self.statements:
            if isinstance(s, TypeStmt):
                names.setdefault(s.name.name, s.name.loc)
            elif isinstance(s, DeclStmt):
                for n in s.names:
                    names.setdefault(n.name, n.loc)
        for s in self.statements:
            named = s.head.name if isinstance(s, CompStmt) else s.name if isinstance(
                s, InitStmt) else None
            if named is None:
                continue
            what = "component" if isinstance(s, CompStmt) else "instance"
            if named.name in names:
                raise ProgramError(f"name clash: {what} '{named.name}' has the name of a type, "
                                   f"relation, component or instance declared at "
                                   f"{names[named.name]}", named.loc)
            names[named.name] = named.loc

    # ---- expansion ----------------------------------------------------------------------

    def run(self) -> list[Statement]:
        for comp in self.globals.values():
            self._check(comp)
        self._check_names()
        for s in self.statements:
            if isinstance(s, InitStmt):
                self._resolve(None, s.comp, {})
        out: list[Statement] = []
        for s in self.statements:
            if isinstance(s, CompStmt):
                continue
            if isinstance(s, InitStmt):
                orphans: list[RuleStmt] = []
                content = self._instantiate(s, None, orphans, set(), {}, MAX_DEPTH)
                out.extend(content.types)
                out.extend(content.relations)
                out.extend(content.clauses)
                out.extend(orphans)
                out.extend(content.ios)
            else:
                out.append(s)
        out.extend(self.notes)
        return out

    def _instantiate(self, init: InitStmt, scope: _Comp | None, orphans: list[RuleStmt],
                     overridden: set[str], binding: Binding, depth: int) -> _Content:
        if depth == 0:
            raise ProgramError(f"component instantiation nested more than {MAX_DEPTH} deep "
                               "(does a component instantiate itself?)", init.loc)
        comp = self._resolve(scope, init.comp, binding)
        active = _extend(binding, comp.params, init.comp.args)
        res = _Content()
        for nested in comp.inits:
            res.extend(self._instantiate(nested, comp, orphans, overridden, active, depth - 1))
        self._collect(comp, active, comp.parent, res, orphans, overridden, depth)
        prefix = init.name.name + "."
        type_map = {t.name.name: prefix + t.name.name for t in res.types}
        rel_map = {n.name: prefix + n.name for d in res.relations for n in d.names}
        # ADT branches declared in the instance are qualified too (`$inst.Branch`)
        branch_map = {b.name: prefix + b.name for t in res.types for b, _ in t.branches}
        res.types = [_rename_type(t, type_map, prefix) for t in res.types]
        res.relations = [_rename_decl(d, type_map, prefix) for d in res.relations]
        res.clauses = [_rename_node(c, rel_map, type_map, branch_map) for c in res.clauses]
        orphans[:] = [_rename_node(c, rel_map, type_map, branch_map) for c in orphans]
        res.ios = [replace(io, names=tuple(_prefixed(n, rel_map) for n in io.names))
                   for io in res.ios]
        return res

    def _collect(self, comp: _Comp, binding: Binding, scope: _Comp | None, res: _Content,
                 orphans: list[RuleStmt], overridden: set[str], depth: int) -> None:
        """Add the content of ``comp`` and of its bases (with ``binding`` applied) to ``res``."""
        inherited_overrides = overridden | set(comp.overrides)
        for base in comp.stmt.bases:
            base_comp = self._resolve(scope, base, binding)
            active = _extend(binding, base_comp.params, base.args)
            for nested in base_comp.inits:
                res.extend(self._instantiate(nested, base_comp, orphans, set(), active,
                                             depth - 1))
            self._collect(base_comp, active, base_comp.parent, res, orphans,
                          inherited_overrides, depth)
        for t in comp.types:
            res.types.append(replace(  # a type named like a parameter takes its argument
                t, name=_bound(t.name, binding),
                members=tuple(_bound(m, binding) for m in t.members),
                fields=tuple((f, _bound(ft, binding)) for f, ft in t.fields),
                branches=tuple((b, tuple((f, _bound(ft, binding)) for f, ft in fs))
                               for b, fs in t.branches)))
        for d in comp.decls:
            res.relations.append(replace(d, attributes=tuple(
                (a, _bound(t, binding)) for a, t in d.attributes)))
        res.ios.extend(comp.ios)
        index = {n.name for d in res.relations for n in d.names}
        for clause in comp.clauses:
            head = clause.heads[0].relation
            if head.split(".")[0] in overridden:
                continue
            bound = _bind_casts(clause, binding)
            (res.clauses if head in index else orphans).append(bound)
        kept = []
        for orphan in orphans:
            (res.clauses if orphan.heads[0].relation in index else kept).append(orphan)
        orphans[:] = kept


# ---- renaming ----------------------------------------------------------------------------


def _extend(binding: Binding, formals: tuple[str, ...], actuals: tuple[Named, ...]) -> Binding:
    """The binding of a component's parameters to arguments resolved in ``binding``."""
    return {f: binding.get(a.name, a.name) for f, a in zip(formals, actuals, strict=True)}


def _bound(name: Named, binding: Binding) -> Named:
    actual = binding.get(name.name)
    return name if actual is None else Named(actual, name.loc)


def _prefixed(name: Named, mapping: dict[str, str]) -> Named:
    new = mapping.get(name.name)
    return name if new is None else Named(new, name.loc)


def _rename_type(t: TypeStmt, type_map: dict[str, str], prefix: str) -> TypeStmt:
    return replace(t, name=Named(prefix + t.name.name, t.name.loc),
                   members=tuple(_prefixed(m, type_map) for m in t.members),
                   fields=tuple((f, _prefixed(ft, type_map)) for f, ft in t.fields),
                   branches=tuple((Named(prefix + b.name, b.loc),
                                   tuple((f, _prefixed(ft, type_map)) for f, ft in fs))
                                  for b, fs in t.branches))


def _rename_decl(d: DeclStmt, type_map: dict[str, str], prefix: str) -> DeclStmt:
    src = d.debug_delta  # a relation of the same component
    return replace(d, names=tuple(Named(prefix + n.name, n.loc) for n in d.names),
                   attributes=tuple((a, _prefixed(t, type_map)) for a, t in d.attributes),
                   debug_delta=Named(prefix + src.name, src.loc) if src is not None else None)


def _bind_casts(clause: RuleStmt, binding: Binding) -> RuleStmt:
    if not binding:
        return clause
    return transform(clause, lambda n: replace(n, type_name=binding[n.type_name])
                      if isinstance(n, SCast) and n.type_name in binding else n)


def _rename_node(clause: RuleStmt, rel_map: dict[str, str], type_map: dict[str, str],
                 branch_map: dict[str, str] | None = None) -> RuleStmt:
    def rename(n: Any) -> Any:
        if isinstance(n, SAtom) and n.relation in rel_map:
            return replace(n, relation=rel_map[n.relation])
        if isinstance(n, SAdt) and branch_map and n.branch in branch_map:
            return replace(n, branch=branch_map[n.branch])
        if isinstance(n, SCast) and n.type_name in type_map:
            return replace(n, type_name=type_map[n.type_name])
        return n

    return transform(clause, rename)


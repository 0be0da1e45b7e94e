"""User-defined type declarations, each resolved to one of the four base types."""

from __future__ import annotations

from gpu_engine.host.lang.dl_syntax import Named, TypeStmt

from gpu_engine.ir import COLUMN_TYPES, ColumnType, Location, ProgramError


class TypeEnv:
    """Maps every declared type name to its base type (number, unsigned, float, symbol)."""

    def __init__(self, decls: list[TypeStmt]) -> None:
        self._decls: dict[str, TypeStmt] = {}
        for d in decls:
            name = d.name.name
            if name in COLUMN_TYPES:
                raise ProgramError(f"cannot redefine the base type '{name}'", d.name.loc)
            if name in self._decls:
                first = self._decls[name].name.loc
                raise ProgramError(
                    f"type '{name}' redeclared (first declared at {first})", d.name.loc
                )
            self._decls[name] = d
        self._base: dict[str, ColumnType] = {t: t for t in COLUMN_TYPES}  # type: ignore[misc]
        for d in decls:
            self._resolve(d.name.name, d.name.loc, ())

    def base(self, type_name: Named) -> ColumnType:
        """The base type of a type name used in a program; unknown names are errors."""
        return self._resolve(type_name.name, type_name.loc, ())

    def base_of(self, name: str, loc: Location) -> ColumnType:
        """Like :meth:`base` for a bare name and location."""
        return self._resolve(name, loc, ())

    def _resolve(self, name: str, loc: Location, visiting: tuple[str, ...]) -> ColumnType:
        if name in self._base:
            return self._base[name]
        decl = self._decls.get(name)
        if decl is None:
            raise ProgramError(f"unknown type '{name}'", loc)
        if name in visiting:
            raise ProgramError(f"cyclic definition of type '{name}'", decl.name.loc)
        bases = [self._resolve(m.name, m.loc, (*visiting, name)) for m in decl.members]
        first = bases[0]
        for member, b in zip(decl.members, bases, strict=True):
            if b != first:
                raise ProgramError(
                    f"union type '{name}' mixes base types {first} "
                    f"({decl.members[0].name}) and {b} ({member.name})",
                    member.loc,
                )
        self._base[name] = first
        return first

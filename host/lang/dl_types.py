"""User-defined type declarations, each resolved to one of the four base types, or to a
record or ADT type.

Inside the front end a record type is the string ``"record R"`` and an ADT ``"adt T"``
(``R``, ``T`` the declared names; aliases resolve to them); their columns are ``number``
columns of record ids in the IR, described for IO by :class:`gpu_engine.ir.RecordFormat`.
"""

from __future__ import annotations

from gpu_engine.host.lang.dl_syntax import Named, TypeStmt

from gpu_engine.ir import (
    COLUMN_TYPES,
    ColumnType,
    FunctorDecl,
    Location,
    ProgramError,
    RecordFormat,
)


def is_record_type(t: str | None) -> bool:
    """Whether a front-end type is a record or ADT type."""
    return t is not None and t.startswith(("record ", "adt "))


def column_type(t: str) -> ColumnType:
    """The IR column type of a front-end type (records and ADTs are ids: number)."""
    return "number" if is_record_type(t) else t  # type: ignore[return-value]


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
        self._base: dict[str, str] = {t: t for t in COLUMN_TYPES}
        # user-defined functors: declared (``.functor``) and called (host.lang.dl_lower)
        self.functors: dict[str, FunctorDecl] = {}
        self.called_functors: dict[str, FunctorDecl] = {}
        # ADT branch name -> (ADT type, branch index, its (field name, type name) pairs)
        self.branches: dict[str, tuple[str, int, tuple]] = {}
        self._formats: dict[str, RecordFormat] = {}
        for d in decls:
            if d.kind == "record":
                self._base[d.name.name] = f"record {d.name.name}"
            elif d.kind == "adt":
                self._base[d.name.name] = f"adt {d.name.name}"
                for k, (branch, fields) in enumerate(d.branches):
                    if branch.name in self.branches:
                        raise ProgramError(f"ADT branch '{branch.name}' declared twice",
                                           branch.loc)
                    self.branches[branch.name] = (f"adt {d.name.name}", k, fields)
        for d in decls:
            self._resolve(d.name.name, d.name.loc, ())
        for d in decls:  # field types must exist, a record's field names be distinct
            pairs = [*d.fields, *(f for _, fs in d.branches for f in fs)]
            for _fname, ftype in pairs:
                self.base(ftype)
            seen: set[str] = set()
            for fname, _ in d.fields:  # (Soufflé checks records so, not ADT branches)
                if fname.name in seen:
                    raise ProgramError(f"doubly defined field name '{fname.name}' in the "
                                       f"definition of type '{d.name.name}'", fname.loc)
                seen.add(fname.name)

    def base(self, type_name: Named) -> str:
        """The base (or record/ADT) type of a type name; unknown names are errors."""
        return self._resolve(type_name.name, type_name.loc, ())

    def base_of(self, name: str, loc: Location) -> str:
        """Like :meth:`base` for a bare name and location."""
        return self._resolve(name, loc, ())

    def record_fields(self, t: str) -> list[str]:
        """Front-end types of the fields of record type ``t`` (``"record R"``)."""
        decl = self._decls[t.split(" ", 1)[1]]
        return [self.base(ftype) for _, ftype in decl.fields]

    def branch(self, name: str, loc: Location) -> tuple[str, int, list[str]]:
        """ADT type, branch index and field types of the branch ``name``."""
        if name not in self.branches:
            raise ProgramError(f"unknown ADT branch '{name}'", loc)
        adt, k, fields = self.branches[name]
        return adt, k, [self.base(ftype) for _, ftype in fields]

    def format(self, t: str) -> RecordFormat | None:
        """The IO description of front-end type ``t`` (None for base types)."""
        if not is_record_type(t):
            return None
        if t in self._formats:
            return self._formats[t]
        kind, name = t.split(" ", 1)
        fmt = RecordFormat(name, kind)  # type: ignore[arg-type]
        self._formats[t] = fmt  # before the fields: recursive types refer to it
        decl = self._decls[name]
        if kind == "record":
            fmt.fields = [(f.name, self._field_format(ft)) for f, ft in decl.fields]
        else:
            fmt.branches = [(b.name, [self._field_format(ft) for _, ft in fs])
                            for b, fs in decl.branches]
        return fmt

    def _field_format(self, type_name: Named) -> ColumnType | RecordFormat:
        t = self.base(type_name)
        return self.format(t) or t  # type: ignore[return-value]

    def _resolve(self, name: str, loc: Location, visiting: tuple[str, ...]) -> str:
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

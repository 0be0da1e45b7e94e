"""Program-level lowering: declarations, directives, disjunctive expansion, facts and rules.

Relations and types may be declared after their first use (as in Soufflé), so all
declarations are read first; statements are then lowered in source order.
"""

from __future__ import annotations

from itertools import product

from gpu_engine.host.lang.dl_aggregate import AggregateLowering
from gpu_engine.host.lang.dl_equality import lower_equality, note_spelled_out
from gpu_engine.host.lang.dl_result import Directive, ParsedProgram
from gpu_engine.host.lang.dl_subtypes import Subtypes, check_clause
from gpu_engine.host.lang.dl_syntax import (
    DeclStmt,
    FunctorStmt,
    IOStmt,
    Named,
    NoteStmt,
    RuleStmt,
    SAnd,
    SAtom,
    SBool,
    SChoice,
    SCmp,
    SFormula,
    SLiteral,
    SNegAtom,
    SNot,
    SOr,
    Statement,
    SVar,
    SWild,
    TypeStmt,
)
from gpu_engine.host.lang.dl_typecheck import ClauseTyper
from gpu_engine.host.lang.dl_types import TypeEnv, column_type, is_record_type
from gpu_engine.host.lang.dl_untyped_records import has_untyped_records, solve_untyped_records

from gpu_engine import ir
from gpu_engine.ir import ColumnType, Const, Location, ProgramError
from gpu_engine.magic import magic_transform
from gpu_engine.recursive_aggregates import mark_lookups

MAX_DISJUNCTS = 4096  # rules one clause may expand to

_NEGATED_CMP = {"=": "!=", "!=": "=", "<": ">=", "<=": ">", ">": "<=", ">=": "<",
                "match": "!match", "!match": "match", "contains": "!contains",
                "!contains": "contains"}
_REPRESENTATIONS = ("eqrel", "brie", "btree", "btree_delete")
_IO_QUALIFIERS = ("input", "output", "printsize")
_OTHER_QUALIFIERS = ("overridable", "equality")  # equality: host.lang.dl_equality


def expand_body(
    f: SFormula, negated: bool = False, neg_loc: Location | None = None
) -> list[list[SLiteral]]:
    """Disjunctive normal form of a body: a list of conjunctions (negation pushed inward)."""
    if isinstance(f, SAtom):
        return [[SNegAtom(f, neg_loc or f.loc)]] if negated else [[f]]
    if isinstance(f, SCmp):
        if not negated:
            return [[f]]
        return [[SCmp(_NEGATED_CMP[f.op], f.left, f.right, f.loc, f.op_loc)]]
    if isinstance(f, SBool):
        return [[]] if f.value != negated else []
    if isinstance(f, SNot):
        return expand_body(f.inner, not negated, f.loc)
    parts = [expand_body(item, negated, neg_loc) for item in f.items]
    conjunctive = isinstance(f, SAnd) != negated  # De Morgan swaps and/or under negation
    if not conjunctive:
        return [conj for part in parts for conj in part]
    size = 1
    for part in parts:
        size *= len(part)
    if size > MAX_DISJUNCTS:
        raise ProgramError(
            f"the rule body expands to {size} disjuncts (limit {MAX_DISJUNCTS})", _first_loc(f)
        )
    return [[lit for conj in combo for lit in conj] for combo in product(*parts)]


def _first_loc(f: SFormula) -> Location:
    while isinstance(f, (SAnd, SOr)):
        f = f.items[0]
    return f.loc


class Lowering:
    """Lowers a list of statements to a :class:`ParsedProgram`."""

    def __init__(self, statements: list[Statement]) -> None:
        self.statements = statements
        self.types = TypeEnv([s for s in statements if isinstance(s, TypeStmt)])
        self.program = ir.Program()
        self.directives: list[Directive] = []
        self.notes: list[str] = []
        self._decl_extras: dict[int, tuple[list[Directive], list[str]]] = {}
        self.magic: list[tuple[str, Location]] = []
        self.demand_only: frozenset[str] = frozenset()
        self.attr_types: dict[str, tuple[str, ...]] = {}  # front-end types (records too)
        self.subtypes = Subtypes([s for s in statements if isinstance(s, TypeStmt)])
        self.declared: dict[str, tuple[str, ...]] = {}  # attribute type names as declared
        self.aggregates = AggregateLowering(self.program, self.types, self.attr_types)
        for stmt in statements:
            if isinstance(stmt, FunctorStmt):
                self._declare_functor(stmt)

    def run(self) -> ParsedProgram:
        """Lower every statement, declarations first."""
        for stmt in self.statements:
            if isinstance(stmt, DeclStmt) and stmt.debug_delta is None:
                self._declare(stmt)
        for stmt in self.statements:  # after the relations they copy
            if isinstance(stmt, DeclStmt) and stmt.debug_delta is not None:
                self._declare_debug_delta(stmt)
        for stmt in self.statements:
            if isinstance(stmt, DeclStmt):
                directives, notes = self._decl_extras[id(stmt)]
                self.directives.extend(directives)
                self.notes.extend(notes)
            elif isinstance(stmt, IOStmt):
                self._io(stmt)
            elif isinstance(stmt, RuleStmt):
                self._clause(stmt)
            elif isinstance(stmt, NoteStmt):
                if stmt.pragma is not None and stmt.pragma[0] == "magic-transform":
                    self.magic.append((stmt.pragma[1], stmt.loc))
                else:
                    self.notes.append(f"{stmt.loc}: {stmt.text}")
        self.program.functors = dict(self.types.called_functors)
        lower_equality(self.statements, self.program)
        mark_lookups(self.program)  # aggregates inside recursion (over lower strata)
        self.notes.extend(note_spelled_out(self.program))
        if self.magic:
            self._magic_transform()
        return ParsedProgram(self.program, self.directives, self.notes, self.demand_only)

    def _declare_functor(self, stmt: FunctorStmt) -> None:
        """``.functor f(T1, ...): R``: a signature over the four base types (records and
        ADTs have no C representation to pass); ``stateful`` functors are refused."""
        name = stmt.name.name
        if name in self.types.functors:
            raise ProgramError(f"functor '{name}' redeclared (first declared at "
                               f"{self.types.functors[name].loc})", stmt.name.loc)
        if stmt.stateful:
            raise ProgramError(f"functor '{name}' is stateful: stateful functors take "
                               "Soufflé's C++ symbol and record tables, which gpu-engine "
                               "does not provide", stmt.name.loc)

        def base(t: Named) -> ColumnType:
            b = self.types.base_of(t.name, t.loc)
            if is_record_type(b):
                raise ProgramError(f"functor '{name}': record and ADT types ('{t.name}') "
                                   "cannot be passed to or returned by a user-defined "
                                   "functor", t.loc)
            return b  # type: ignore[return-value]

        self.types.functors[name] = ir.FunctorDecl(
            name, tuple(base(p) for p in stmt.params), base(stmt.result), stmt.name.loc)

    def _magic_transform(self) -> None:
        """``.pragma "magic-transform" "*"`` (or a comma-separated list of relations):
        demand-driven evaluation by the magic-set transformation (gpu_engine/magic.py)."""
        names: set[str] | None = set()
        for value, loc in self.magic:
            parts = {p.strip() for p in value.split(",") if p.strip()}
            if "*" in parts:
                names = None
                break
            for p in parts:
                if p not in self.program.relations:
                    raise ProgramError(f"magic-transform names an undeclared relation '{p}'", loc)
            names |= parts
        if self.program.equality is not None:  # rewriting needs every fact: in full
            self.notes.append(f"{self.magic[0][1]}: magic-transform skipped (the program has "
                              "an equality relation)")
            return
        from gpu_engine.iteration import features as round_features

        if round_features(self.program, self.program.rules):  # rounds are observable
            self.notes.append(f"{self.magic[0][1]}: magic-transform skipped (the program "
                              "observes the evaluation's iterations)")
            return
        if self.program.aggregates:  # not combined with aggregates: evaluate in full
            self.notes.append(f"{self.magic[0][1]}: magic-transform skipped (the program has "
                              "aggregates)")
            return
        keep = {d.relation for d in self.directives}
        result = magic_transform(self.program, keep, names)
        self.program = result.program
        self.demand_only = result.transformed
        if result.transformed:
            self.notes.append(
                f"{self.magic[0][1]}: magic-transform: demand-driven evaluation of "
                + ", ".join(sorted(result.transformed))
            )

    # ---- declarations -----------------------------------------------------------------

    def _declare(self, stmt: DeclStmt) -> None:
        seen: dict[str, Location] = {}
        attributes = []
        for attr, type_name in stmt.attributes:
            if attr.name in seen:
                raise ProgramError(f"attribute '{attr.name}' declared twice", attr.loc)
            seen[attr.name] = attr.loc
            attributes.append((attr.name, self.types.base(type_name)))
        front = tuple(t for _, t in attributes)
        formats = tuple(self.types.format(t) for t in front)
        attributes = [(a, column_type(t)) for a, t in attributes]
        representation = "set"
        chosen = None
        directives: list[Directive] = []
        notes: list[str] = []
        names = ", ".join(n.name for n in stmt.names)
        choice: tuple[tuple[int, ...], ...] = ()
        for q in stmt.qualifiers:
            if isinstance(q, SChoice):
                choice = self._choice_keys(stmt, q)
            elif q.name in _REPRESENTATIONS:
                if chosen is not None:
                    raise ProgramError(
                        f"more than one representation qualifier ('{chosen}' and '{q.name}')", q.loc
                    )
                chosen = q.name
                if q.name == "eqrel":
                    representation = "eqrel"
                    self._check_eqrel(stmt, attributes, q.loc)
                else:
                    notes.append(f"{q.loc}: ignored the '{q.name}' qualifier of {names}")
            elif q.name in _IO_QUALIFIERS:
                directives.extend(Directive(q.name, n.name, {}, q.loc) for n in stmt.names)  # type: ignore[arg-type]
            elif q.name not in _OTHER_QUALIFIERS:  # overridable: host.lang.dl_components
                notes.append(f"{q.loc}: ignored the '{q.name}' qualifier of {names}")
        relations = self.program.relations
        for n in stmt.names:
            if n.name in relations:
                first = relations[n.name].loc
                raise ProgramError(
                    f"relation '{n.name}' redeclared (first declared at {first})", n.loc
                )
            relations[n.name] = ir.Relation(  # type: ignore[arg-type]
                n.name, tuple(attributes), representation, n.loc, choice,
                formats if any(f is not None for f in formats) else ())
            self.attr_types[n.name] = front
            self.declared[n.name] = tuple(t.name for _, t in stmt.attributes)
        self._decl_extras[id(stmt)] = (directives, notes)

    def _declare_debug_delta(self, stmt: DeclStmt) -> None:
        """``.decl D = debug_delta(R)``: R's attributes plus ``iteration: unsigned``."""
        src = stmt.debug_delta
        assert src is not None
        name = stmt.names[0]
        relations = self.program.relations
        if src.name not in relations:
            raise ProgramError(f"debug_delta of an undeclared relation '{src.name}'", src.loc)
        if name.name in relations:
            raise ProgramError(f"relation '{name.name}' redeclared (first declared at "
                               f"{relations[name.name].loc})", name.loc)
        r = relations[src.name]
        relations[name.name] = ir.Relation(
            name.name, (*r.attributes, ("iteration", "unsigned")), "set", name.loc, (),
            (*r.formats, None) if r.formats else ())
        self.attr_types[name.name] = (*self.attr_types[src.name], "unsigned")
        self.program.debug_deltas[name.name] = src.name
        self._decl_extras[id(stmt)] = ([], [])

    @staticmethod
    def _choice_keys(stmt: DeclStmt, q: SChoice) -> tuple[tuple[int, ...], ...]:
        """Attribute positions of each choice-domain key."""
        names = [a.name for a, _ in stmt.attributes]
        keys = []
        for key in q.keys:
            pos = []
            for k in key:
                if k.name not in names:
                    raise ProgramError(f"choice-domain: '{k.name}' is not an attribute", k.loc)
                pos.append(names.index(k.name))
            if len(pos) == len(names):
                raise ProgramError("choice-domain: a key may not be all attributes", key[0].loc)
            keys.append(tuple(pos))
        return tuple(keys)

    @staticmethod
    def _check_eqrel(stmt: DeclStmt, attributes: list[tuple[str, str]], loc: Location) -> None:
        name = stmt.names[0].name
        if len(attributes) != 2:
            raise ProgramError(
                f"eqrel relation '{name}' must be binary, but it has arity {len(attributes)}", loc
            )
        (_, a), (_, b) = attributes
        if a != b:
            raise ProgramError(
                f"eqrel relation '{name}' needs two attributes of the same type, not {a} and {b}",
                loc,
            )

    # ---- directives and clauses -------------------------------------------------------

    def _io(self, stmt: IOStmt) -> None:
        for n in stmt.names:
            if n.name not in self.program.relations:
                raise ProgramError(f"undeclared relation '{n.name}' in .{stmt.kind}", n.loc)
            if stmt.kind == "limitsize":  # a bound of the evaluation (gpu_engine.iteration)
                raw = stmt.params.get("n", "")
                if set(stmt.params) != {"n"} or not raw.isdigit():
                    raise ProgramError(f".limitsize {n.name} needs one parameter n=<count> "
                                       "(a non-negative integer)", n.loc)
                self.program.limits[n.name] = (int(raw), n.loc)
                continue
            self.directives.append(Directive(stmt.kind, n.name, dict(stmt.params), n.loc))  # type: ignore[arg-type]

    def _subsumption(self, stmt: RuleStmt, bodies: list[list[SLiteral]]) -> None:
        """``A(x..) <= A(y..) :- body`` as ``A(x.., y..) :- A(x..), A(y..), body``."""
        fresh = iter(range(1 << 30))

        def named(atom: SAtom) -> SAtom:  # '_' would be refused in the head
            return SAtom(atom.relation, tuple(
                SVar(f"_sub{next(fresh)}", a.loc) if isinstance(a, SWild) else a
                for a in atom.args), atom.loc)

        assert stmt.dominating is not None
        low, high = named(stmt.heads[0]), named(stmt.dominating)
        if not low.args:  # Soufflé's semantic check
            raise ProgramError(f'subsumptive relation "{low.relation}" must not be a '
                               "nullary relation", low.loc)
        for body in bodies:
            check_clause(low, [low, high, *body], self.declared, self.attr_types, self.subtypes)
            typer = ClauseTyper(low, [low, high, *body], self.program.relations, self.types,
                                self.attr_types)
            lowered = typer.lower()
            if lowered is None:
                continue
            h, b = lowered
            head = ir.Atom(h.relation, (*h.args, *b[1].args), h.loc)  # type: ignore[union-attr]
            self.program.subsumptions.append(ir.Rule(head, tuple(b), stmt.loc))

    def _clause(self, stmt: RuleStmt) -> None:
        bodies = [[]] if stmt.body is None else expand_body(stmt.body)
        if stmt.dominating is not None:
            self._subsumption(stmt, bodies)
            return
        if not bodies:
            self.notes.append(f"{stmt.loc}: the rule can never fire (its body is false)")
        clauses = [c for written in stmt.heads for body in bodies
                   for h, b in (solve_untyped_records(written, body)
                                if has_untyped_records(body) else [(written, body)])
                   for c in self.aggregates.expand(h, b)]
        for head, body in clauses:
            check_clause(head, body, self.declared, self.attr_types, self.subtypes)
            try:
                lowered = ClauseTyper(head, body, self.program.relations, self.types,
                                      self.attr_types).lower()
            except RecursionError:
                raise ProgramError("expression nested too deeply", head.loc) from None
            if lowered is None:
                self.notes.append(
                    f"{stmt.loc}: the rule can never fire (a comparison is false)"
                )
                continue
            h, b = lowered
            if not b and all(isinstance(a, Const) for a in h.args):
                row = tuple(a.value for a in h.args)  # type: ignore[union-attr]
                self.program.facts.setdefault(h.relation, []).append(row)
            else:
                self.program.rules.append(ir.Rule(h, tuple(b), head.loc))

"""The ``equality`` qualifier: ``.decl same(x: T, y: T) equality`` (gpu_engine.equality).

The relation is a congruence over the *domain*: every column whose declared type is in
``T``'s family.  The family of a base type (``symbol``) is every symbol column; the family
of a user type ``T`` is ``T`` and the types declared from it (subtypes ``.type U <: T``,
aliases, unions all of whose members are in the family).

What the rewriting algorithms (paper 001) do not cover is refused here with the location
of the rule, never answered wrongly:

* negation of an atom of a relation with a domain column (replacement makes every such
  relation depend on the equality relation);
* comparisons over domain values other than ``=`` between variables and constants, and
  functors with a domain value as argument or result (``!=``, ``<``, ``strlen``, ``cat``
  do not respect the congruence);
* aggregates whose body reads a relation with a domain column;
* a variable that joins a domain column with a column of the same base type outside the
  family (rewritten and written ids would be compared);
* subsumption and ``choice-domain`` over domain relations, record and ADT fields in the
  family, more than one equality relation, equality over non-symbol types.
"""

from __future__ import annotations

from gpu_engine.host.lang.dl_syntax import DeclStmt, Statement, TypeStmt

from gpu_engine import ir
from gpu_engine.ir import Atom, Call, Compare, Const, Location, Negation, ProgramError, Var

QUALIFIER = "equality"


def equality_decls(statements: list[Statement]) -> list[tuple[DeclStmt, Location]]:
    """Declarations carrying the ``equality`` qualifier, with the qualifier's location."""
    out = []
    for s in statements:
        if isinstance(s, DeclStmt):
            for q in s.qualifiers:
                if getattr(q, "name", None) == QUALIFIER:
                    out.append((s, q.loc))  # type: ignore[union-attr]
    return out


def _family(statements: list[Statement], root: str) -> set[str]:
    """Type names in ``root``'s family (see the module docstring)."""
    decls = {s.name.name: s for s in statements if isinstance(s, TypeStmt)}
    fam = {root}
    if root in ir.COLUMN_TYPES:
        # every type whose base is the root: resolved through the declarations
        def base(t: str, seen: tuple[str, ...] = ()) -> str:
            if t in ir.COLUMN_TYPES or t not in decls or t in seen:
                return t
            d = decls[t]
            if d.kind in ("record", "adt") or not d.members:
                return t
            return base(d.members[0].name, (*seen, t))

        return fam | {t for t in decls if base(t) == root}
    changed = True
    while changed:
        changed = False
        for name, d in decls.items():
            if name in fam or d.kind not in ("subtype", "union") or not d.members:
                continue
            inside = [m.name in fam for m in d.members]
            if all(inside):
                fam.add(name)
                changed = True
            elif any(inside):
                raise ProgramError(
                    f"union type '{name}' mixes members of the equality's type family "
                    f"('{root}') with others; rewriting cannot tell its values apart",
                    d.name.loc)
    return fam


def lower_equality(statements: list[Statement], program: ir.Program) -> None:
    """Set ``program.equality`` from the ``equality`` declaration and check the program
    (module docstring).  Does nothing when no relation is declared ``equality``."""
    found = equality_decls(statements)
    if not found:
        return
    if len(found) > 1 or len(found[0][0].names) > 1:
        loc = found[1][1] if len(found) > 1 else found[0][1]
        raise ProgramError("only one relation may be declared 'equality'", loc)
    stmt, loc = found[0]
    name = stmt.names[0].name
    rel = program.relations[name]
    if rel.arity != 2:
        raise ProgramError(f"equality relation '{name}' must be binary, but it has arity "
                           f"{rel.arity}", loc)
    (_, t1), (_, t2) = stmt.attributes
    if t1.name != t2.name:
        raise ProgramError(f"equality relation '{name}' needs two attributes of the same type, "
                           f"not {t1.name} and {t2.name}", loc)
    if rel.types[0] != "symbol" or rel.formats:
        raise ProgramError(f"equality relation '{name}': only symbol types can be merged "
                           f"(its type '{t1.name}' is {rel.types[0]})", loc)
    if rel.representation == "eqrel" or rel.choice:
        raise ProgramError(f"equality relation '{name}' cannot also be eqrel or "
                           "choice-domain", loc)
    fam = _family(statements, t1.name)
    for s in statements:
        if isinstance(s, TypeStmt) and s.kind in ("record", "adt"):
            pairs = [*s.fields, *(f for _, fs in s.branches for f in fs)]
            for fname, ftype in pairs:
                if ftype.name in fam:
                    raise ProgramError(
                        f"record field '{fname.name}' has type '{ftype.name}', which the "
                        f"equality relation '{name}' merges: not supported", fname.loc)
    domain: dict[str, tuple[int, ...]] = {}
    for s in statements:
        if isinstance(s, DeclStmt):
            pos = tuple(i for i, (_, t) in enumerate(s.attributes) if t.name in fam)
            for n in s.names:
                if n.name in program.relations:
                    domain[n.name] = pos
    for n, pos in domain.items():
        if pos and program.relations[n].choice:
            raise ProgramError(f"choice-domain relation '{n}' has columns that the equality "
                               f"relation '{name}' merges: not supported",
                               program.relations[n].loc)
    domain = {n: p for n, p in domain.items() if p}
    eq = ir.Equality(name, domain, loc)
    for rule in program.rules:
        check_rule(rule, eq, program)
    # rewriting normalises rule constants: `x = "a", x = "b"` would become satisfiable
    program.rules = [r for r in program.rules if not equates_distinct_symbols(r)]
    for rule in program.subsumptions:
        if any(isinstance(lit, Atom) and lit.relation in domain for lit in rule.body):
            raise ProgramError(f"subsumption over '{rule.head.relation}', whose columns the "
                               f"equality relation '{name}' merges, is not supported", rule.loc)
    for agg in program.aggregates.values():
        for r in agg.rules:
            for lit in r.body:
                a = lit.atom if isinstance(lit, Negation) else lit
                if isinstance(a, Atom) and a.relation in domain:
                    raise ProgramError(
                        f"aggregate '{agg.op}' over '{a.relation}', whose columns the equality "
                        f"relation '{name}' merges: not supported (paper 001 does not cover "
                        "aggregates under rewriting)", agg.loc)
    program.equality = eq


def equates_distinct_symbols(rule: ir.Rule) -> bool:
    """Whether the body's ``=`` comparisons between variables and symbol constants tie two
    different constants together (``x = "a", x = "b"``, or ``"a" = "b"``).

    Such a rule never fires.  Under rewriting its constants are normalised through ρ,
    and two constants of one class would become the same constant, so the rule is dropped
    before that can happen."""
    parent: dict[object, object] = {}
    nodes: set[object] = set()

    def find(k: object) -> object:
        while parent.get(k, k) != k:
            k = parent[k]
        return k

    def key(t: object) -> object | None:
        if isinstance(t, Var) and not t.anonymous:
            return ("var", t.name)
        if isinstance(t, Const) and t.type == "symbol":
            return ("const", t.value)
        return None

    for lit in rule.body:
        if isinstance(lit, Compare) and lit.op == "=":
            a, b = key(lit.left), key(lit.right)
            if a is not None and b is not None:
                nodes.update((a, b))
                ra, rb = find(a), find(b)
                if ra != rb:
                    parent[ra] = rb
    consts: dict[object, object] = {}
    for k in nodes:
        if k[0] == "const" and consts.setdefault(find(k), k) != k:  # type: ignore[index]
            return True
    return False


def _mentions(t: object, names: set[str]) -> bool:
    if isinstance(t, Var):
        return t.name in names
    if isinstance(t, Call):
        return any(_mentions(a, names) for a in t.args)
    return False


def check_rule(rule: ir.Rule, eq: ir.Equality, program: ir.Program) -> None:
    """Refuse what rewriting does not cover in ``rule`` (module docstring)."""
    domain = eq.domain
    where = f"in rule {rule}"
    inside: set[str] = set()  # variables in domain columns (head or body)
    inside_body: set[str] = set()
    outside_body: set[str] = set()  # ... in other symbol columns of body atoms
    outside_head: set[str] = set()
    atoms = [rule.head, *[lit for lit in rule.body if isinstance(lit, Atom)]]
    for k, a in enumerate(atoms):
        pos = domain.get(a.relation, ())
        types = program.relations[a.relation].types
        for i, t in enumerate(a.args):
            if i in pos:
                if isinstance(t, Call):
                    raise ProgramError(
                        f"a functor in column {i + 1} of '{a.relation}', which the equality "
                        f"relation '{eq.relation}' merges, is not supported {where}",
                        a.loc if a.loc.line else rule.loc)
                if isinstance(t, Var):
                    inside.add(t.name)
                    if k:
                        inside_body.add(t.name)
            elif isinstance(t, Var) and types[i] == "symbol":
                (outside_body if k else outside_head).add(t.name)
    outside = outside_body | outside_head
    # a value may flow from an unmerged column into a merged head column (it is
    # normalised when derived), never from a merged column elsewhere
    both = (inside_body & outside) | (inside & outside_head)
    if both:
        v = sorted(both)[0]
        raise ProgramError(
            f"variable '{v}' joins a column that the equality relation '{eq.relation}' merges "
            f"with a symbol column it does not merge: not supported {where}", rule.loc)
    for a in atoms:
        if any(isinstance(t, Call) and _mentions(t, inside) for t in a.args):
            raise ProgramError(
                f"the comparison or functor over values that the equality relation "
                f"'{eq.relation}' merges is not supported {where}",
                a.loc if a.loc.line else rule.loc)
    for lit in rule.body:
        if isinstance(lit, Negation) and lit.atom.relation in domain:
            raise ProgramError(
                f"negation of '{lit.atom.relation}', whose columns the equality relation "
                f"'{eq.relation}' merges, is not supported (paper 001 covers positive "
                f"programs) {where}", lit.loc if lit.loc.line else rule.loc)
        if isinstance(lit, Compare) and (_mentions(lit.left, inside)
                                          or _mentions(lit.right, inside)):
            simple = all(isinstance(s, Const) and s.type == "symbol"
                         or isinstance(s, Var) and s.name not in outside
                         for s in (lit.left, lit.right))
            if lit.op != "=" or not simple:
                raise ProgramError(
                    f"the comparison or functor over values that the equality relation "
                    f"'{eq.relation}' merges is not supported {where} (only '=' between "
                    "variables and constants respects the congruence)",
                    lit.loc if lit.loc.line else rule.loc)


# --- equality spelled out by hand (reflexivity, symmetry, transitivity, replacement) -------


def _vars(args: tuple) -> list[str] | None:
    """Names of distinct variables, or None when an argument is anything else."""
    if not all(isinstance(a, Var) for a in args):
        return None
    names = [a.name for a in args]
    return names if len(set(names)) == len(names) else None


def _axiom(rule: ir.Rule, eq: str) -> tuple[str, tuple[str, int] | None] | None:
    """The congruence axiom ``rule`` spells out for relation ``eq``: ("sym"|"trans", None),
    ("refl", (R, p)) or ("repl", (R, p)); None for any other rule."""
    body = rule.body
    h = rule.head
    if not all(isinstance(lit, Atom) for lit in body):
        return None
    if h.relation == eq and len(h.args) == 2:
        a, b = h.args
        if len(body) == 1 and isinstance(a, Var) and a == b:  # E(x, x) :- R(.., x, ..)
            atom = body[0]
            hits = [i for i, t in enumerate(atom.args) if t == a]
            others = [t for t in atom.args if t != a]
            if len(hits) == 1 and all(isinstance(t, Var) for t in others) and \
                    len({t.name for t in others}) == len(others):
                return "refl", (atom.relation, hits[0])
            return None
        if len(body) == 1 and body[0].relation == eq and _vars(h.args) and \
                tuple(body[0].args) == (b, a):
            return "sym", None
        if len(body) == 2 and all(x.relation == eq for x in body) and _vars(h.args):
            for x, y in (body, body[::-1]):
                if (x.args[0] == a and y.args[1] == b and x.args[1] == y.args[0]
                        and isinstance(x.args[1], Var) and x.args[1] not in (a, b)):
                    return "trans", None
    if len(body) == 2:  # R(.., y, ..) :- R(.., x, ..), E(x, y)
        for r, e in (body, body[::-1]):
            if e.relation != eq or r.relation != h.relation or r.relation == eq:
                continue
            names = _vars(r.args)
            hn = _vars(h.args)
            if names is None or hn is None or _vars(e.args) is None:
                continue
            diff = [i for i, (s, t) in enumerate(zip(names, hn)) if s != t]
            if len(diff) != 1:
                continue
            p = diff[0]
            u, v = e.args[0].name, e.args[1].name  # type: ignore[union-attr]
            if {u, v} == {names[p], hn[p]} and hn[p] not in names:
                return "repl", (r.relation, p)
    return None


def spelled_out_equalities(program: ir.Program) -> list[tuple[str, list[ir.Rule], dict,
                                                              set[tuple[str, int]]]]:
    """Binary relations whose congruence axioms the program spells out by hand (symmetry,
    transitivity and at least one replacement rule, as in the Claros_L/DBpedia_L rule
    sets): (relation, the axiom rules, domain positions, reflexivity positions)."""
    out = []
    candidates = set()  # relations with a symmetry rule (one cheap pass over the rules)
    for rule in program.rules:
        h = rule.head
        if (len(rule.body) == 1 and isinstance(rule.body[0], Atom) and len(h.args) == 2
                and rule.body[0].relation == h.relation
                and tuple(rule.body[0].args) == tuple(h.args[::-1])):
            candidates.add(h.relation)
    for name in sorted(candidates, key=list(program.relations).index):
        rel = program.relations[name]
        if rel.arity != 2 or rel.types[0] != rel.types[1] or rel.types[0] != "symbol":
            continue
        kinds: dict[str, list[ir.Rule]] = {"sym": [], "trans": [], "refl": [], "repl": []}
        domain: dict[str, set[int]] = {}
        refl: set[tuple[str, int]] = set()
        for rule in program.rules:
            found = _axiom(rule, name)
            if found is None:
                continue
            kind, where = found
            kinds[kind].append(rule)
            if kind == "repl" and where is not None:
                domain.setdefault(where[0], set()).add(where[1])
            elif kind == "refl" and where is not None:
                refl.add(where)
        if kinds["sym"] and kinds["trans"] and kinds["repl"]:
            rules = [r for k in kinds.values() for r in k]
            domain[name] = {0, 1}
            out.append((name, rules, {r: tuple(sorted(p)) for r, p in domain.items()}, refl))
    return out


def note_spelled_out(program: ir.Program) -> list[str]:
    """Warnings naming the relations whose equality axioms are spelled out by hand."""
    notes = []
    if program.equality is not None:
        return notes
    for name, rules, domain, _ in spelled_out_equalities(program):
        rel = program.relations[name]
        notes.append(
            f"{rel.loc}: warning: {len(rules)} rules spell out '{name}' as an equality "
            f"(symmetry, transitivity, replacement in {sum(map(len, domain.values())) - 2} "
            "columns): a class of n equal constants costs n³ derivations; "
            "--rewrite-equality (Reasoner(..., rewrite_equality=True)) rewrites with "
            "representatives instead")
    return notes


def rewrite_spelled_out(program: ir.Program) -> ir.Program:
    """The program with a hand-written equality (:func:`spelled_out_equalities`) turned
    into an ``equality`` relation: its axiom rules are dropped and Mat≈ rewrites instead.
    Without reflexivity rules the relation stays irreflexive on singletons (as the rules
    say); reflexivity rules must cover every domain column.  Raises :class:`ProgramError`
    when the rest of the program is beyond rewriting (see :func:`check_rule`)."""
    import dataclasses

    found = spelled_out_equalities(program)
    if program.equality is not None or not found:
        return program
    if len(found) > 1:
        raise ProgramError(f"--rewrite-equality: several relations spell out equality "
                           f"({', '.join(f[0] for f in found)}); only one can be rewritten",
                           program.relations[found[1][0]].loc)
    name, rules, domain, refl = found[0]
    rel = program.relations[name]
    cells = {(r, p) for r, ps in domain.items() for p in ps}
    if refl and not cells <= refl | {(name, 0), (name, 1)}:
        missing = sorted(cells - refl)[0]
        raise ProgramError(f"--rewrite-equality: '{name}' has reflexivity rules, but not for "
                           f"column {missing[1] + 1} of '{missing[0]}'", rel.loc)
    eq = ir.Equality(name, domain, rel.loc, reflexive=bool(refl))
    drop = {id(r) for r in rules}
    out = dataclasses.replace(program, rules=[r for r in program.rules if id(r) not in drop])
    for rule in out.rules:
        check_rule(rule, eq, out)
    for agg in out.aggregates.values():
        for r in agg.rules:
            if any(isinstance(lit, Atom) and lit.relation in domain for lit in r.body):
                raise ProgramError(f"--rewrite-equality: aggregate '{agg.op}' over a relation "
                                   f"'{name}' merges: not supported", agg.loc)
    out.equality = eq
    return out

"""Lowering of aggregates (``count``, ``sum``, ``min``, ``max``, ``mean``) to hidden relations.

An aggregate term ``op t : { body }`` in a clause is replaced by a fresh variable ``@rK``
plus the atom ``@aggK(k1..kn, @rK)`` over a hidden relation defined by an
:class:`gpu_engine.ir.Aggregate`: the group key ``k1..kn`` is the variables of the body
that also occur in the rest of the clause (correlated); the body's other variables are
local to it.  ``count`` and ``sum`` also yield 0 for a group without instances: the clause
gets a second alternative with ``!@aggK(k1..kn, _), @rK = 0``.  Nested aggregates are lowered
inside the body first (the inner definition's rules may then be several alternatives).

Readings of Soufflé's semantics (checked against its test suite where it has cases):

* an aggregate ranges over the instances of its body (every variable assigned,
  anonymous ones included), so ``sum y : { a(y, _) }`` adds ``y`` once per ``a`` fact;
  a body Soufflé materialises (several positive atoms, an inner aggregate, a
  multi-result functor such as ``range``, or one atom with a repeated variable) is a set
  over its named variables instead (``Aggregate.distinct``): ``count : { a(x, _), b(x) }``
  counts the distinct ``x``;
* witnesses of ``min``/``max`` (a body variable used outside, ungrounded there) are
  grounded by a rewrite of the clause (``dl_witness``); those of other operators are
  refused, as in Soufflé;
* ``min``/``max``/``mean`` of an empty group give no row (the rule does not fire for that
  group), ``count`` and ``sum`` give 0 (Soufflé's interpreter and synthesiser start both at
  0 and always produce their result);
* ``min``/``max``/``sum``/``mean`` over symbols are refused (Soufflé's ordering of
  symbols for aggregates is not the text order, and we do not guess);
* a body variable is correlated (part of the group key) when the enclosing clause grounds
  it without this aggregate; a body variable that occurs outside only where the aggregate
  itself grounds it (``Y = min Z+Y : { a(_, Z), a(_, Y) }``) is local to the body, as
  Soufflé's ``aggregates`` test expects;
* when a correlated variable is not bound inside the body (``count : { p(y), y < x }``)
  the body ranges over the enclosing clause's bindings of it: a hidden relation
  ``@aggK.dom`` holds them (the clause's literals that do not read an aggregate's result);
* the target may be an expression (``sum x + 1``, ``sum 1``); a variable of a complex
  target that the clause grounds outside is local to the aggregate, renamed in it
  (Soufflé's SimplifyAggregateTargetExpression: ``A(y), x = sum y + z : { B(y, z) }`` sums
  over all of B); a plain target variable stays correlated; a disjunctive body is refused;
  ``_ = min ...`` only requires the aggregate to have a value.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING

from gpu_engine.host.lang.dl_syntax import (
    SAgg,
    SAtom,
    SCall,
    SCast,
    SCmp,
    SLiteral,
    SNegAtom,
    SNum,
    STerm,
    SVar,
    SWild,
)
from gpu_engine.host.lang.dl_types import column_type, is_record_type
from gpu_engine.host.lang.dl_walk import children, transform, walk
from gpu_engine.host.lang.dl_witness import (
    bound_with_patterns,
    ground_witnesses,
    shallow_vars,
)

from gpu_engine import ir
from gpu_engine.ir import ProgramError

if TYPE_CHECKING:
    from gpu_engine.host.lang.dl_types import TypeEnv

Clause = tuple[SAtom, list[SLiteral]]

MULTI_RESULT = ("range",)  # functors with several results per call (Soufflé's RANGE etc.)


def deep_vars(t: STerm) -> Iterator[SVar]:
    """Named variables of a term, including those inside records, ADT values and
    aggregate bodies (in order of appearance)."""
    if isinstance(t, SVar):
        yield t
        return
    for child in children(t):
        yield from deep_vars(child)


def _formula_vars(f: object) -> Iterator[SVar]:
    yield from deep_vars(f)  # type: ignore[arg-type]


def first_aggregate(f: object) -> SAgg | None:
    """The first aggregate term of a formula (None: it has none)."""
    from gpu_engine.host.lang.dl_syntax import SAnd, SNot, SOr

    def in_term(t: STerm) -> SAgg | None:
        if isinstance(t, SAgg):
            return t
        for a in (t.args if isinstance(t, SCall) else (t.arg,) if isinstance(t, SCast) else ()):
            if (hit := in_term(a)) is not None:
                return hit
        return None

    if isinstance(f, SAtom):
        terms: list[STerm] = list(f.args)
    elif isinstance(f, SCmp):
        terms = [f.left, f.right]
    elif isinstance(f, SNot):
        return first_aggregate(f.inner)
    elif isinstance(f, (SAnd, SOr)):
        for item in f.items:
            if (hit := first_aggregate(item)) is not None:
                return hit
        return None
    else:
        return None
    for t in terms:
        if (hit := in_term(t)) is not None:
            return hit
    return None


def _literal_terms(lit: SLiteral) -> list[STerm]:
    if isinstance(lit, SCmp):
        return [lit.left, lit.right]
    atom = lit.atom if isinstance(lit, SNegAtom) else lit
    return list(atom.args)


def _has_agg(t: STerm) -> bool:
    if isinstance(t, SAgg):
        return True
    if isinstance(t, SCall):
        return any(_has_agg(a) for a in t.args)
    if isinstance(t, SCast):
        return _has_agg(t.arg)
    return False


def clause_has_aggregate(head: SAtom, body: list[SLiteral]) -> bool:
    return any(_has_agg(t) for t in head.args) or any(
        _has_agg(t) for lit in body for t in _literal_terms(lit))


class AggregateLowering:
    """Replaces the aggregates of clauses by hidden relations (one per aggregate)."""

    def __init__(self, program: ir.Program, types: TypeEnv,
                 attr_types: dict[str, tuple[str, ...]] | None = None) -> None:
        self.program = program
        self.types = types
        # front-end attribute types (records and ADTs too), shared with the lowering
        self.attr_types = attr_types if attr_types is not None else {}
        self.count = 0

    # ---- clauses ----------------------------------------------------------------------

    def expand(self, head: SAtom, body: list[SLiteral]) -> list[Clause]:
        """Alternatives of the clause with every aggregate replaced (none: unchanged)."""
        if clause_has_aggregate(head, body):
            # `_ = aggregate`: the aggregate has a value (the wildcard becomes a variable)
            body = [replace(lit, left=SVar(self._fresh("_"), lit.left.loc))
                    if isinstance(lit, SCmp) and lit.op == "=" and isinstance(lit.left, SWild)
                    and _has_agg(lit.right) else
                    replace(lit, right=SVar(self._fresh("_"), lit.right.loc))
                    if isinstance(lit, SCmp) and lit.op == "=" and isinstance(lit.right, SWild)
                    and _has_agg(lit.left) else lit for lit in body]
            head, body = ground_witnesses(head, body, self._fresh)
        found: list[SAgg] = []

        def collect(t: STerm) -> None:
            if isinstance(t, SAgg):
                if all(t is not f for f in found):  # one term may occur several times
                    found.append(t)
            elif isinstance(t, SCall):
                for a in t.args:
                    collect(a)
            elif isinstance(t, SCast):
                collect(t.arg)

        for t in head.args:
            collect(t)
        for lit in body:
            for t in _literal_terms(lit):
                collect(t)
        if not found:
            return [(head, body)]
        names: dict[int, SVar] = {}
        for agg in found:
            self.count += 1
            names[id(agg)] = SVar(f"@r{self.count}", agg.loc)

        def subst(t: STerm) -> STerm:
            if isinstance(t, SAgg):
                return names[id(t)]
            if isinstance(t, SCall):
                return replace(t, args=tuple(subst(a) for a in t.args))
            if isinstance(t, SCast):
                return replace(t, arg=subst(t.arg))
            return t

        new_head = replace(head, args=tuple(subst(t) for t in head.args))
        new_body: list[SLiteral] = []
        for lit in body:
            if isinstance(lit, SCmp):
                new_body.append(replace(lit, left=subst(lit.left), right=subst(lit.right)))
            elif isinstance(lit, SNegAtom):
                a = lit.atom
                new_body.append(replace(lit, atom=replace(a, args=tuple(subst(t)
                                                                     for t in a.args))))
            else:
                new_body.append(replace(lit, args=tuple(subst(t) for t in lit.args)))
        alternatives: list[list[SLiteral]] = [new_body]
        for agg in found:
            # variables of the clause outside this aggregate
            outer: set[str] = set()
            for t in head.args:
                if t is not agg:
                    outer |= {v.name for v in _vars_outside(t, agg)}
            for lit in body:
                for t in _literal_terms(lit):
                    outer |= {v.name for v in _vars_outside(t, agg)}
            context = _context(new_body)
            # grounded outside (Soufflé's injected variables): by the clause, the other
            # aggregates' results included, but not this aggregate's own result
            others = tuple(names[id(a)] for a in found if a is not agg)
            grounded = bound_with_patterns([*new_body, SAtom("@results", others, agg.loc)])
            keys, rel = self._define(agg, outer, context, grounded)
            res = names[id(agg)]
            hidden = SAtom(rel, tuple(keys) + (res,), agg.loc)
            nxt: list[list[SLiteral]] = []
            for alt in alternatives:
                nxt.append([*alt, hidden])
                if agg.op in ("count", "sum"):  # an empty group: 0 (Soufflé's evaluation)
                    absent = SAtom(rel, tuple(keys) + (SWild(agg.loc),), agg.loc)
                    zero = SCmp("=", res, SNum(0, "int", "0", agg.loc), agg.loc, agg.loc)
                    nxt.append([*alt, SNegAtom(absent, agg.loc), zero])
            alternatives = nxt
        inside = {v.name: v for agg in found for v in deep_vars(agg)}
        for alt in alternatives:  # Soufflé's witnesses: a body variable used ungrounded
            bound = bound_with_patterns(alt)
            outside = [v for t in new_head.args for v in deep_vars(t)] + [
                v for lit in alt for t in _literal_terms(lit) for v in deep_vars(t)]
            for v in outside:
                if v.name not in bound and v.name in inside:
                    raise ProgramError(
                        f"variable '{v.name}' is grounded only inside an aggregate: witnesses "
                        "of min/max (a body variable used outside) are not supported", v.loc)
        return [(new_head, alt) for alt in alternatives]

    def _fresh(self, name: str) -> str:
        self.count += 1
        return f"{name}@w{self.count}"

    # ---- one aggregate ----------------------------------------------------------------

    def _define(self, agg: SAgg, outer: set[str], context: list[SLiteral],
                grounded: set[str] | None = None) -> tuple[list[SVar], str]:
        """Declare and define the hidden relation of ``agg``; its key variables.
        ``context`` holds the enclosing clause's literals that do not read an aggregate's
        result: they define the domain of keys the body does not bind itself."""
        from gpu_engine.host.lang.dl_lower import expand_body

        conj = expand_body(agg.body)
        if len(conj) > 1:
            raise ProgramError("a disjunction inside an aggregate is not supported", agg.loc)
        if not conj:  # a false body: no instances
            return self._empty(agg)
        body = conj[0]
        keys: list[SVar] = []
        seen: set[str] = set()
        # correlated: grounded outside the aggregate (a body variable that occurs outside
        # only where the aggregate grounds it, e.g. its own result, is local to the body)
        bound_ctx = bound_variables_deep(context)
        if grounded is not None:
            bound_ctx = bound_ctx | grounded
        for lit in body:
            for t in _literal_terms(lit):
                for v in deep_vars(t):
                    if v.name in outer and v.name in bound_ctx and v.name not in seen:
                        seen.add(v.name)
                        keys.append(v)
        inner_vars = {v.name for lit in body for t in _literal_terms(lit) for v in deep_vars(t)}
        target: SVar | None = None
        if isinstance(agg.target, SVar):
            target = agg.target
            if target.name not in inner_vars:
                if target.name not in outer or target.name not in bound_ctx:
                    raise ProgramError(f"the target variable '{target.name}' of '{agg.op}' "
                                       "does not occur in the aggregate's body", target.loc)
                keys.append(target)  # given by the clause: the same value per instance
        elif agg.target is not None:  # an expression: bound to a fresh variable inside
            expr, body = self._decorrelate(agg.target, body, outer, bound_ctx)
            if expr is not agg.target:
                keys = [k for k in keys if any(
                    k.name == v.name for lit in body for t in _literal_terms(lit)
                    for v in deep_vars(t))]
            target = SVar(f"@t{self.count}", agg.target.loc)
            body = [*body, SCmp("=", target, expr, agg.loc, agg.loc)]
        # Soufflé materialises a complex body as a set over its named variables (those of
        # inner aggregates excluded): each distinct assignment of them is one instance
        distinct = _materialised(body)
        local: list[SVar] = []
        if distinct:
            taken = {k.name for k in keys} | ({target.name} if target is not None else set())
            for lit in body:
                for v in shallow_vars(lit):
                    if v.name not in taken:
                        taken.add(v.name)
                        local.append(v)
        name = f"@agg{self.count}"
        self.count += 1
        unbound = [k for k in keys if k.name not in bound_variables_deep(body)]
        for k in unbound:
            if k.name not in bound_variables_deep(context):
                raise ProgramError(
                    f"variable '{k.name}' is given to the aggregate by another aggregate's "
                    "result and not bound in its body: not supported (bind it in the body)",
                    k.loc)
        if unbound:
            # keys bound only outside: their domain is the context's bindings of them
            dom = name + ".dom"
            dom_head = SAtom(dom, tuple(keys), agg.loc)
            _types, rules = self._declare_typed(dom, keys, [(dom_head, list(context))], agg)
            self.program.rules.extend(rules)
            body = [SAtom(dom, tuple(keys), agg.loc), *body]
        head_vars = keys + ([target] if target is not None else []) + local
        inner_name = name + ".in"
        inner_head = SAtom(inner_name, tuple(head_vars), agg.loc)
        rels = self.program.relations
        rels[inner_name] = ir.Relation(inner_name, tuple((v.name, "number")
                                                         for v in head_vars), "set", agg.loc)
        try:
            alts = self.expand(inner_head, body)  # nested aggregates first
            vt, rules = self._declare_typed(inner_name, head_vars, alts, agg)
        finally:
            rels.pop(inner_name, None)
        ordered = False
        if agg.op in ("sum", "mean") and not distinct and vt[len(keys)] == "float":
            # Soufflé adds a float sum tuple by tuple in the order of the atom's index:
            # its arguments (wildcards named) follow the head's columns as sort keys
            atoms = [lit for lit in body if isinstance(lit, SAtom)
                     and lit.relation != name + ".dom"]
            named = () if len(atoms) != 1 else tuple(
                SVar(self._fresh("_"), a.loc) if isinstance(a, SWild) else a
                for a in atoms[0].args)
            order = [a for a in named if isinstance(a, SVar)]
            if order:
                body = [replace(lit, args=named) if lit is atoms[0] else lit for lit in body]
                ordered_head = head_vars + order
                rels[inner_name] = ir.Relation(inner_name, tuple(
                    (f"c{i}", "number") for i in range(len(ordered_head))), "set", agg.loc)
                try:
                    alts = self.expand(SAtom(inner_name, tuple(ordered_head), agg.loc), body)
                    vt, rules = self._declare_typed(inner_name, ordered_head, alts, agg)
                finally:
                    rels.pop(inner_name, None)
                vt = vt[:len(head_vars)]
                ordered = True
        if agg.op == "count":
            result = "number"
        else:
            t = vt[len(keys)]
            if t == "symbol":
                raise ProgramError(f"'{agg.op}' over symbols is not supported", agg.loc)
            if is_record_type(t):
                raise ProgramError(f"'{agg.op}' over records or ADTs is not supported "
                                   "(their order is not defined)", agg.loc)
            if agg.op == "mean" and t != "float" and not isinstance(agg.target, SNum):
                raise ProgramError(  # Soufflé types mean and its target float
                    f"type mismatch: 'mean' takes a float target, not {t} (convert it: "
                    "mean to_float(x) : { ... })", agg.loc)
            result = "float" if agg.op == "mean" else t
        key_types = vt[:len(keys)]
        rels[name] = ir.Relation(
            name, tuple((f"k{i}", column_type(t)) for i, t in enumerate(key_types))
            + (("value", column_type(result)),), "set", agg.loc)  # type: ignore[arg-type]
        self.attr_types[name] = (*key_types, result)
        self.program.aggregates[name] = ir.Aggregate(
            name, agg.op, tuple(rules), result, len(keys), agg.loc,  # type: ignore[arg-type]
            None if agg.op == "count" else vt[len(keys)], distinct,  # type: ignore[arg-type]
            ordered=ordered)
        return keys, name

    def _decorrelate(self, expr: STerm, body: list[SLiteral], outer: set[str],
                     grounded: set[str]) -> tuple[STerm, list[SLiteral]]:
        """Soufflé's SimplifyAggregateTargetExpression: a variable of a complex target
        expression that the clause grounds outside the aggregate is local to it, renamed
        in the expression and throughout the body (``A(y), x = sum y + z : { B(y, z) }``
        adds ``y + z`` over all of B, whatever ``y`` is outside)."""
        names = {v.name for v in deep_vars(expr) if v.name in outer and v.name in grounded}
        if not names:
            return expr, body
        fresh = {n: self._fresh(n) for n in sorted(names)}

        def rename(node: object) -> object:
            if isinstance(node, SVar) and node.name in fresh:
                return replace(node, name=fresh[node.name])
            return node

        new_body = [transform(lit, rename) for lit in body]
        bound = bound_variables_deep(new_body)
        for v in deep_vars(expr):
            if v.name in fresh and fresh[v.name] not in bound:
                raise ProgramError(
                    f"ungrounded variable '{v.name}' in the aggregate's target: a variable "
                    "of a complex target is local to the aggregate (as in Soufflé), and its "
                    "body does not bind it", v.loc)
        return transform(expr, rename), new_body

    def _empty(self, agg: SAgg) -> tuple[list[SVar], str]:
        """The hidden relation of an aggregate whose body is false (no rows)."""
        if agg.op in ("sum", "min", "max") and agg.target is not None:
            raise ProgramError(f"'{agg.op}' over a false body (its type is unknown) is not "
                               "supported", agg.loc)
        name = f"@agg{self.count}"
        self.count += 1
        result = "number" if agg.op == "count" else "float"
        self.program.relations[name] = ir.Relation(name, (("value", result),), "set",
                                                   agg.loc)  # type: ignore[arg-type]
        self.program.aggregates[name] = ir.Aggregate(
            name, agg.op, (), result, 0, agg.loc,  # type: ignore[arg-type]
            None if agg.op == "count" else "float")
        return [], name

    def _declare_typed(self, name: str, head_vars: list[SVar], alts: list[Clause],
                       agg: SAgg) -> tuple[list[str], list[ir.Rule]]:
        """Declare relation ``name`` over ``head_vars`` with the types the first clause
        infers for them, and lower the clauses (their heads are over ``name``)."""
        from gpu_engine.host.lang.dl_typecheck import ClauseTyper

        rels = self.program.relations
        rels[name] = ir.Relation(name, tuple((v.name, "number") for v in head_vars), "set",
                                 agg.loc)
        self.attr_types.pop(name, None)
        typer = ClauseTyper(alts[0][0], alts[0][1], rels, self.types, self.attr_types)
        for lit in alts[0][1]:
            a = lit.atom if isinstance(lit, SNegAtom) else lit
            if isinstance(a, SAtom):
                typer._check_atom(a)
        typer._infer_variable_types()
        vt = [typer.vtypes.get(v.name, "number") for v in head_vars]
        rels[name] = ir.Relation(name, tuple((v.name, column_type(t))
                                             for v, t in zip(head_vars, vt)),
                                 "set", agg.loc)  # type: ignore[misc]
        self.attr_types[name] = tuple(vt)
        rules: list[ir.Rule] = []
        for h, b in alts:
            lowered = ClauseTyper(h, b, rels, self.types, self.attr_types).lower()
            if lowered is not None:
                rules.append(ir.Rule(lowered[0], tuple(lowered[1]), agg.loc))
        return vt, rules


def _materialised(body: list[SLiteral]) -> bool:
    """Whether Soufflé materialises the aggregate body (several positive atoms, an inner
    aggregate, a multi-result functor such as ``range``, or one atom with a repeated
    variable: MaterializeAggregationQueries ``needsMaterializedRelation``)."""
    atoms = [lit for lit in body if isinstance(lit, SAtom)]
    if len(atoms) > 1 or any(_has_agg(t) for lit in body for t in _literal_terms(lit)):
        return True
    if any(isinstance(n, SCall) and n.op in MULTI_RESULT for lit in body
           for n in walk(lit)):
        return True
    if atoms:
        names = [v.name for t in atoms[0].args for v in deep_vars(t)]
        return len(names) != len(set(names))
    return False


def _context(body: list[SLiteral]) -> list[SLiteral]:
    """The literals of a clause that do not depend on an aggregate's result: positive
    atoms without result variables, and other literals whose variables these bind."""
    def reads_result(lit: SLiteral) -> bool:
        return any(v.name.startswith("@r") for t in _literal_terms(lit) for v in deep_vars(t))

    out = [lit for lit in body if not reads_result(lit)]
    while True:
        bound = bound_with_patterns(out)
        keep = [lit for lit in out if isinstance(lit, SAtom) or all(
            v.name in bound for t in _literal_terms(lit) for v in deep_vars(t))]
        if len(keep) == len(out):
            return out
        out = keep


def bound_variables_deep(body: list[SLiteral]) -> set[str]:
    """Variables a conjunction binds (positive atoms and binding equalities), treating an
    aggregate term as bound once the variables it is correlated with are."""
    flat: list[SLiteral] = []
    for lit in body:
        if isinstance(lit, SCmp) and (_has_agg(lit.left) or _has_agg(lit.right)):
            continue
        if isinstance(lit, SAtom) and any(_has_agg(t) for t in lit.args):
            lit = replace(lit, args=tuple(SWild(lit.loc) if _has_agg(t) else t
                                          for t in lit.args))
        flat.append(lit)
    return bound_with_patterns(flat)


def _vars_outside(t: STerm, agg: SAgg) -> Iterator[SVar]:
    """Variables of ``t`` except those inside the aggregate ``agg`` itself."""
    if t is agg:
        return
    if isinstance(t, SCall):
        for a in t.args:
            yield from _vars_outside(a, agg)
    elif isinstance(t, SCast):
        yield from _vars_outside(t.arg, agg)
    else:
        yield from deep_vars(t)

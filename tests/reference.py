"""A deliberately naive reference evaluator for the tests' own program AST (generators.py).

Relations are Python sets of tuples. Strata are the strongly connected components of the
predicate dependency graph in topological order; each stratum is evaluated by a naive fixpoint
(every rule re-run on the whole database until nothing changes). Negation must be stratified.
Numbers are 32-bit (64-bit with ``evaluate(..., bits=64)``, as Soufflé's 64-bit build):
arithmetic wraps, ``/`` and ``%`` truncate toward zero as in C.
An aggregate literal (``Agg``) is evaluated per outer assignment by solving its body with the
correlated variables (body variables that also occur elsewhere in the rule) fixed: count is
the number of body solutions (one per matching row combination), sum wraps to 32 bits, an
empty group gives 0 for count and sum and no result otherwise (Soufflé); aggregated relations must lie in
strictly lower strata, as for negation.

It shares nothing with the engine under test; it is the judge in the property tests.
"""

from __future__ import annotations

from collections import defaultdict

from generators import (
    Agg,
    Atom,
    Bind,
    BinOp,
    Cmp,
    Const,
    Literal,
    Neg,
    Program,
    Row,
    Rule,
    Term,
    Value,
    Var,
    Wild,
)

Env = dict[str, Value]


class UnsafeRule(ValueError):
    """A variable that no positive atom or binding grounds (or ``_`` in a head)."""


class NotStratifiable(ValueError):
    """Negation inside a recursive cycle."""


class ArityMismatch(ValueError):
    """An atom or fact whose width differs from the declaration."""


class LimitExceeded(RuntimeError):
    """The materialisation grew beyond ``max_tuples``."""


# --------------------------------------------------------------------------- arithmetic


def wrap32(v: int) -> int:
    """Two's complement 32-bit wrap-around."""
    return (v + 2**31) % 2**32 - 2**31


WORD_BITS = 32  # the word size of numbers during an evaluate() call
_WORK: int | None = None  # rows an evaluate(max_work=...) call may still read and match


def wrap_word(v: int) -> int:
    """Two's complement wrap-around to the word size being evaluated."""
    half = 1 << (WORD_BITS - 1)
    return (v + half) % (2 * half) - half


def c_div(a: int, b: int) -> int:
    """Integer division truncating toward zero (C semantics)."""
    if b == 0:
        raise ZeroDivisionError("division by zero")
    q = abs(a) // abs(b)
    return -q if (a < 0) != (b < 0) else q


def c_mod(a: int, b: int) -> int:
    """Remainder with the sign of the dividend (C semantics)."""
    return a - b * c_div(a, b)


def eval_term(term: Term, env: Env) -> Value:
    """Value of a ground term under ``env``."""
    if isinstance(term, Const):
        return wrap_word(term.value) if isinstance(term.value, int) else term.value
    if isinstance(term, Var):
        return env[term.name]
    if isinstance(term, Wild):
        raise UnsafeRule("_ cannot be evaluated")
    a, b = eval_term(term.left, env), eval_term(term.right, env)
    assert isinstance(a, int) and isinstance(b, int), f"arithmetic on symbols: {term}"
    if term.op == "+":
        r = a + b
    elif term.op == "-":
        r = a - b
    elif term.op == "*":
        r = a * b
    elif term.op == "/":
        r = c_div(a, b)
    elif term.op == "%":
        r = c_mod(a, b)
    elif term.op == "^":
        if b < 0:
            raise ValueError("negative exponent")
        r = a**b
    else:
        raise ValueError(f"unknown operator {term.op}")
    return wrap_word(r)


def term_vars(term: Term) -> set[str]:
    """Variables occurring in a term."""
    if isinstance(term, Var):
        return {term.name}
    if isinstance(term, BinOp):
        return term_vars(term.left) | term_vars(term.right)
    return set()


def compare(op: str, a: Value, b: Value) -> bool:
    """A comparison between two values."""
    if op == "=":
        return a == b
    if op == "!=":
        return a != b
    assert type(a) is type(b), f"ordering {a!r} against {b!r}"
    if op == "<":
        return a < b  # type: ignore[operator]
    if op == "<=":
        return a <= b  # type: ignore[operator]
    if op == ">":
        return a > b  # type: ignore[operator]
    if op == ">=":
        return a >= b  # type: ignore[operator]
    raise ValueError(f"unknown comparison {op}")


# --------------------------------------------------------------------------- rules


def _binding(lit: Literal, bound: set[str]) -> tuple[str, Term] | None:
    """If ``lit`` can bind a fresh variable now, return (variable, expression)."""
    if isinstance(lit, Bind):
        lit = Cmp("=", lit.var, lit.expr)
    if isinstance(lit, Cmp) and lit.op == "=":
        for var, other in ((lit.left, lit.right), (lit.right, lit.left)):
            if isinstance(var, Var) and var.name not in bound and term_vars(other) <= bound:
                return var.name, other
    return None


def literal_vars(lit: Literal) -> set[str]:
    """Variables of a literal (of an aggregate: its result, target and body)."""
    if isinstance(lit, Atom):
        return set().union(*(term_vars(a) for a in lit.args))
    if isinstance(lit, Neg):
        return literal_vars(lit.atom)
    if isinstance(lit, Bind):
        return {lit.var.name} | term_vars(lit.expr)
    if isinstance(lit, Agg):
        inner = set().union(*(literal_vars(x) for x in lit.body))
        return {lit.result.name} | inner
    return term_vars(lit.left) | term_vars(lit.right)


def _correlated(agg: Agg, outside: set[str]) -> set[str]:
    """The aggregate body's variables that also occur outside it (its group key)."""
    return set().union(*(literal_vars(x) for x in agg.body)) & outside


def _aggregate(agg: Agg, env: Env, keys: set[str], db: dict[str, set[Row]],
               limit: int | None) -> Value | None:
    """Soufflé's aggregate over the body's instances for the outer assignment ``env``
    (None: an empty group of min/max, which gives no result; count and sum give 0)."""
    inner, _ = solve(agg.body, db, limit, init={k: env[k] for k in keys})
    if agg.op == "count":
        return len(inner)
    if not inner and agg.op == "sum":
        return 0
    if not inner:
        return None
    assert agg.target is not None
    vals = [e[agg.target.name] for e in inner]
    if agg.op == "sum":
        return wrap_word(sum(vals))  # type: ignore[arg-type]
    return min(vals) if agg.op == "min" else max(vals)  # type: ignore[type-var]


def _ready(lit: Literal, bound: set[str], keys: set[str] | None = None) -> bool:
    """Whether a non-atom literal can be evaluated with the variables bound so far."""
    if isinstance(lit, Agg):
        return keys is not None and keys <= bound
    if isinstance(lit, Neg):
        return all(term_vars(a) <= bound for a in lit.atom.args)
    if isinstance(lit, Bind):
        return term_vars(lit.expr) <= bound
    assert isinstance(lit, Cmp)
    return term_vars(lit.left) | term_vars(lit.right) <= bound or _binding(lit, bound) is not None


def _match(
    atom: Atom, rows: set[Row], envs: list[Env], bound: set[str], limit: int | None = None
) -> list[Env]:
    """Join ``envs`` with the rows of ``atom`` (an index on the already ground arguments);
    more than ``limit`` results raise LimitExceeded."""
    keyed = [
        i for i, a in enumerate(atom.args) if not isinstance(a, Wild) and term_vars(a) <= bound
    ]
    index: dict[tuple[Value, ...], list[Row]] = defaultdict(list)
    for row in rows:
        index[tuple(row[i] for i in keyed)].append(row)
    out: list[Env] = []
    for env in envs:
        key = tuple(eval_term(atom.args[i], env) for i in keyed)
        for row in index.get(key, ()):
            new = dict(env)
            ok = True
            for value, arg in zip(row, atom.args, strict=True):
                if isinstance(arg, Var):
                    if new.setdefault(arg.name, value) != value:
                        ok = False
                        break
            if ok:
                out.append(new)
        if limit is not None and len(out) > limit:
            raise LimitExceeded(f"more than {limit} partial matches for {atom}")
    global _WORK
    if _WORK is not None:
        _WORK -= len(rows) + len(out)
        if _WORK < 0:
            raise LimitExceeded("the evaluation read and matched more rows than its max_work")
    return out


def solve(
    body: tuple[Literal, ...], db: dict[str, set[Row]], limit: int | None = None,
    init: Env | None = None, head_vars: set[str] | None = None,
) -> tuple[list[Env], set[str]]:
    """All variable assignments satisfying a conjunction, and the set of bound variables
    (more than ``limit`` partial assignments raise LimitExceeded).

    Literal order in the text does not matter: filters and bindings run as soon as their
    variables are bound, positive atoms otherwise. The order depends only on the rule, so an
    unsafe rule is reported whatever the data.
    """
    pending = list(body)
    bound: set[str] = set(init or {})
    envs: list[Env] = [dict(init or {})]
    keys: dict[int, set[str]] = {}
    for i, lit in enumerate(body):
        if isinstance(lit, Agg):
            outside = set(head_vars or ()) | bound
            for j, other in enumerate(body):
                if j != i:
                    outside |= literal_vars(other)
            keys[id(lit)] = _correlated(lit, outside)
    while pending:
        lit = next((x for x in pending
                    if not isinstance(x, Atom) and _ready(x, bound, keys.get(id(x)))), None)
        if lit is None:
            lit = next(
                (
                    x
                    for x in pending
                    if isinstance(x, Atom)
                    and all(term_vars(a) <= bound for a in x.args if isinstance(a, BinOp))
                ),
                None,
            )
        if lit is None:
            raise UnsafeRule(f"ungrounded variables in {pending}")
        pending.remove(lit)
        if isinstance(lit, Atom):
            envs = _match(lit, db[lit.rel], envs, bound, limit)
            bound |= set().union(*(term_vars(a) for a in lit.args))
        elif isinstance(lit, Agg):
            out: list[Env] = []
            for e in envs:
                v = _aggregate(lit, e, keys[id(lit)], db, limit)
                if v is not None and e.setdefault(lit.result.name, v) == v:
                    out.append(e)
            envs = out
            bound.add(lit.result.name)
        elif isinstance(lit, Neg):
            args = lit.atom.args
            keyed = [i for i, a in enumerate(args) if not isinstance(a, Wild)]
            present = {tuple(row[i] for i in keyed) for row in db[lit.atom.rel]}
            envs = [e for e in envs if tuple(eval_term(args[i], e) for i in keyed) not in present]
        elif (binding := _binding(lit, bound)) is not None:
            var, expr = binding
            envs = [{**e, var: eval_term(expr, e)} for e in envs]
            bound.add(var)
        else:
            assert isinstance(lit, Cmp | Bind)
            cmp = lit if isinstance(lit, Cmp) else Cmp("=", lit.var, lit.expr)
            envs = [
                e for e in envs if compare(cmp.op, eval_term(cmp.left, e), eval_term(cmp.right, e))
            ]
    return envs, bound


def fire(rule: Rule, db: dict[str, set[Row]], limit: int | None = None) -> set[Row]:
    """All head tuples a rule derives from ``db``."""
    out: set[Row] = set()
    head_vars = set().union(*(term_vars(a) for a in rule.head.args))
    for body in rule.conjunctions():
        envs, bound = solve(body, db, limit, head_vars=head_vars)
        for arg in rule.head.args:
            if isinstance(arg, Wild) or not term_vars(arg) <= bound:
                raise UnsafeRule(f"head argument {arg} is not grounded in {rule}")
        out |= {tuple(eval_term(a, e) for a in rule.head.args) for e in envs}
    return out


# --------------------------------------------------------------------------- program


def _atoms(lit: Literal) -> list[tuple[Atom, bool]]:
    """(atom, negated) pairs of a literal."""
    if isinstance(lit, Atom):
        return [(lit, False)]
    if isinstance(lit, Neg):
        return [(lit.atom, True)]
    if isinstance(lit, Agg):  # stratified like negation
        return [(a, True) for x in lit.body for a, _ in _atoms(x)]
    return []


def strata(program: Program) -> list[list[str]]:
    """Strongly connected components of the dependency graph, dependencies first."""
    names = [r.name for r in program.relations]
    deps: dict[str, set[str]] = {n: set() for n in names}
    negative: set[tuple[str, str]] = set()
    for rule in program.rules:
        for body in rule.conjunctions():
            for lit in body:
                for atom, negated in _atoms(lit):
                    deps[rule.head.rel].add(atom.rel)
                    if negated:
                        negative.add((rule.head.rel, atom.rel))
    reach = {n: set(deps[n]) for n in names}
    changed = True
    while changed:
        changed = False
        for n in names:
            extra = set().union(*(reach[m] for m in reach[n])) - reach[n]
            if extra:
                reach[n] |= extra
                changed = True
    components: list[list[str]] = []
    seen: set[str] = set()
    for n in names:
        if n not in seen:
            comp = [m for m in names if m == n or (m in reach[n] and n in reach[m])]
            seen |= set(comp)
            components.append(comp)
    for head, body in negative:
        if head == body or (body in reach[head] and head in reach[body]):
            raise NotStratifiable(f"{head} depends negatively on {body} within a cycle")
    ordered: list[list[str]] = []
    done: set[str] = set()
    while components:
        comp = next(c for c in components if all(reach[n] - set(c) <= done for n in c))
        components.remove(comp)
        ordered.append(comp)
        done |= set(comp)
    return ordered


def equivalence_closure(pairs: set[Row]) -> set[Row]:
    """Reflexive, symmetric, transitive closure over the elements occurring in ``pairs``."""
    component: dict[Value, set[Value]] = {}
    for a, b in pairs:
        merged = component.get(a, {a}) | component.get(b, {b})
        for x in merged:
            component[x] = merged
    return {
        (a, b)
        for comp in {id(c): c for c in component.values()}.values()
        for a in comp
        for b in comp
    }


def _check_arity(program: Program) -> None:
    arity = {r.name: r.arity for r in program.relations}
    atoms = [rule.head for rule in program.rules]
    for rule in program.rules:
        for body in rule.conjunctions():
            atoms += [a for lit in body for a, _ in _atoms(lit)]
    for atom in atoms:
        if atom.rel not in arity:
            raise ArityMismatch(f"undeclared relation {atom.rel}")
        if len(atom.args) != arity[atom.rel]:
            raise ArityMismatch(f"{atom.rel} used with {len(atom.args)} arguments")
    for facts in (program.facts, program.inline_facts):
        for name, rows in facts.items():
            if name not in arity or any(len(r) != arity[name] for r in rows):
                raise ArityMismatch(f"facts of {name} do not match its declaration")


def evaluate(program: Program, max_tuples: int | None = None,
             bits: int = 32, max_work: int | None = None) -> dict[str, set[Row]]:
    """The materialisation: every declared relation mapped to its set of tuples.

    With ``max_tuples``, LimitExceeded is raised when the database grows beyond it or one rule
    has more than 50 times as many partial matches (keeps the naive joins cheap); with
    ``max_work``, when the whole evaluation reads and matches more rows than that (the
    naive rounds repeat every join, so a small result may still cost seconds).  ``bits``
    is the word size of numbers (32 or 64).
    """
    global WORD_BITS, _WORK
    saved, WORD_BITS = WORD_BITS, bits
    saved_work, _WORK = _WORK, max_work
    try:
        return _evaluate(program, max_tuples)
    finally:
        WORD_BITS, _WORK = saved, saved_work


def _evaluate(program: Program, max_tuples: int | None) -> dict[str, set[Row]]:
    limit = None if max_tuples is None else 50 * max_tuples
    _check_arity(program)
    eqrel = {r.name for r in program.relations if r.eqrel}
    db: dict[str, set[Row]] = {r.name: set() for r in program.relations}
    for stratum in strata(program):
        base = {
            n: set(program.facts.get(n, [])) | set(program.inline_facts.get(n, [])) for n in stratum
        }
        rules = [r for r in program.rules if r.head.rel in stratum]
        while True:
            new = {n: set(base[n]) for n in stratum}
            for rule in rules:
                new[rule.head.rel] |= fire(rule, db, limit)
            for n in stratum:
                if n in eqrel:
                    new[n] = equivalence_closure(new[n])
            if all(new[n] == db[n] for n in stratum):
                break
            db.update(new)
            if max_tuples is not None and sum(map(len, db.values())) > max_tuples:
                raise LimitExceeded(f"more than {max_tuples} tuples")
    return db


# --------------------------------------------------------------------------- derivation counts

Counts = dict[str, dict[Row, tuple[int, int]]]


def explicit_facts(program: Program) -> dict[str, set[Row]]:
    """E: the external and inline facts of every declared relation, as sets."""
    return {
        r.name: set(program.facts.get(r.name, [])) | set(program.inline_facts.get(r.name, []))
        for r in program.relations
    }


def is_recursive(body: tuple[Literal, ...], stratum: set[str]) -> bool:
    """Whether a conjunction has a positive atom over a relation of the head's stratum."""
    return any(isinstance(lit, Atom) and lit.rel in stratum for lit in body)


def has_recursive_rule(program: Program) -> bool:
    """Whether some rule (one disjunct counts as one rule) is recursive in its stratum."""
    stratum_of = {n: frozenset(c) for c in strata(program) for n in c}
    return any(
        is_recursive(body, stratum_of[rule.head.rel])
        for rule in program.rules
        for body in rule.conjunctions()
    )


def derivation_counts(program: Program, db: dict[str, set[Row]] | None = None) -> Counts:
    """Per relation and fact F of the materialisation, (c_nr, c_r) as in DRed^c (paper 000).

    c_nr[F] is 1 if F is explicit plus the number of instances of non-recursive rules with head
    F firing on the materialisation; c_r[F] counts the instances of recursive rules (a positive
    body atom in the head's stratum). An instance assigns every variable, each ``_`` of a
    positive atom being a distinct variable; ``_`` in a negated atom is existential. Each
    disjunct of a rule is a rule of its own. ``db`` is the materialisation if already known.
    Counters of eqrel relations count only the program's rules (the engine's differ).
    """
    if db is None:
        db = evaluate(program)
    explicit = explicit_facts(program)
    counts: dict[str, dict[Row, list[int]]] = {r.name: {} for r in program.relations}
    for name, rows in db.items():
        for row in rows:
            counts[name][row] = [int(row in explicit[name]), 0]
    for stratum in strata(program):
        members = set(stratum)
        for rule in (r for r in program.rules if r.head.rel in members):
            table = counts[rule.head.rel]
            for body in rule.conjunctions():
                slot = 1 if is_recursive(body, members) else 0
                envs, _ = solve(body, db)
                for env in envs:
                    head = tuple(eval_term(a, env) for a in rule.head.args)
                    assert head in table, f"{rule.head.rel}{head} derived but not materialised"
                    table[head][slot] += 1
    return {
        name: {row: (c[0], c[1]) for row, c in table.items()} for name, table in counts.items()
    }

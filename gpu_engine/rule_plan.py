"""Compiled rule plans: what evaluating a rule body works out once, not per call.

:mod:`gpu_engine.rule_eval` joins a rule's positive atoms one at a time and applies each
filter (comparison, binding ``x = expr``, ``range``, negation) as soon as its variables
are bound.  Which atom comes next is chosen at run time from the inputs' sizes, but
everything else about a step depends only on *which variables are bound and which atoms
are left*: the positions an atom is probed on and the variables read there, its
constants and repeated variables, the variables that survive the step, the filters that
become ready after it and how each applies.  A :class:`Node` holds this for one such
point and a :class:`Step` for joining one atom from it; a node's steps (and the nodes
they lead to) are compiled on first use and kept, so a rule compiles the join orders it
is actually run in, once, and a call only chooses among the compiled steps (Soufflé's
RAM and Nemo's execution plans, with the order left to run time as in issue 11's
"plans may adapt to sizes at run time").

One plan per rule and per set of variables bound at the start (a backward evaluation
starts with the head bound).  Plans hold no data and no constant's stored value (the
evaluator encodes those), so one :class:`PlanCache` serves the process (:data:`PLANS`):
by rule object, and by value for rules built again (a program parsed again, the
one-atom queries of backward evaluation built per call).
"""

from __future__ import annotations

from typing import Any, NamedTuple

from .expr import term_vars
from .ir import Atom, Call, Compare, Const, Negation, ProgramError, Rule, Var


class Probe(NamedTuple):
    """How an atom is looked up from bound variables: positions ``key_pos`` keyed by
    ``key_terms`` (a bound :class:`Var`, or, in a negated atom, any expression over
    bound variables), constant positions ``consts``, repeated unbound variables
    ``equal`` (pairs of positions that must hold equal values) and the unbound
    variables ``new`` (name, first position)."""

    key_pos: tuple[int, ...]
    key_terms: tuple[Any, ...]
    consts: tuple[tuple[int, Const], ...]
    equal: tuple[tuple[int, int], ...]
    new: tuple[tuple[str, int], ...]
    symbolic: bool  # a constant is a symbol (its id is read from the table per call)


def probe_of(atom: Atom, bound: frozenset[str], negated: bool = False) -> Probe:
    """The :class:`Probe` of ``atom`` when ``bound`` are bound (``negated``: a negated
    atom, whose functor arguments are keys computed from the bindings)."""
    key_pos: list[int] = []
    key_terms: list[Any] = []
    consts: list[tuple[int, Const]] = []
    equal: list[tuple[int, int]] = []
    new: dict[str, int] = {}
    for p, t in enumerate(atom.args):
        if isinstance(t, Const):
            consts.append((p, t))
        elif isinstance(t, Var) and t.name in bound:
            key_pos.append(p)
            key_terms.append(t)
        elif isinstance(t, Var):
            if t.name in new:
                equal.append((new[t.name], p))
            else:
                new[t.name] = p
        elif negated:
            key_pos.append(p)
            key_terms.append(t)
        else:
            raise ProgramError(f"functor argument in {atom.relation} was not normalised",
                               atom.loc)
    return Probe(tuple(key_pos), tuple(key_terms), tuple(consts), tuple(equal),
                 tuple(new.items()), any(c.type == "symbol" for _, c in consts))


class Filter(NamedTuple):
    """One filter literal as it applies at a node.

    ``kind``: ``"test"`` (a comparison of bound terms), ``"bind"`` (``var = term`` with
    ``var`` unbound), ``"range"`` (``term`` is the ``range`` call, ``other`` the other
    side, ``var`` its name when it is an unbound variable the range binds) or ``"neg"``
    (the ``neg``-th negated literal of the body, looked up by ``probe``)."""

    kind: str
    lit: Any
    var: str | None = None
    term: Any = None
    other: Any = None
    neg: int = -1
    probe: Probe | None = None


def _is_range(t: Any) -> bool:
    return isinstance(t, Call) and t.op == "range"


def ready(lit: Any, neg: int, bound: set[str]) -> Filter | None:
    """How filter ``lit`` applies when ``bound`` are bound, or None if it cannot yet
    (the readiness rules of the evaluator: comparisons once both sides are bound,
    ``x = expr`` once ``expr`` is, ``range`` once its arguments are, a negation once
    its named variables are)."""
    if isinstance(lit, Compare):
        lv, rv = term_vars(lit.left), term_vars(lit.right)
        if _is_range(lit.left) or _is_range(lit.right):
            call, other = (lit.left, lit.right) if _is_range(lit.left) else (lit.right,
                                                                            lit.left)
            if not term_vars(call) <= bound:
                return None
            var = other.name if isinstance(other, Var) and other.name not in bound else None
            return Filter("range", lit, var, call, other)
        if lv <= bound and rv <= bound:
            return Filter("test", lit)
        if lit.op == "=":
            for var, other, ov in ((lit.left, lit.right, rv), (lit.right, lit.left, lv)):
                if isinstance(var, Var) and var.name not in bound and ov <= bound:
                    return Filter("bind", lit, var.name, other)
        return None
    assert isinstance(lit, Negation)
    atom = lit.atom
    named = {v for t in atom.args for v in term_vars(t) if not v.startswith("_")}
    if not named <= bound:
        return None
    return Filter("neg", lit, neg=neg, probe=probe_of(atom, frozenset(bound), negated=True))


class RulePlan:
    """The positive atoms and filter literals of one rule (body order) and its compiled
    nodes, one root per set of variables bound at the start."""

    def __init__(self, rule: Rule, roots: dict[frozenset[str], Node] | None = None) -> None:
        self.atoms: tuple[Atom, ...] = tuple(lit for lit in rule.body
                                             if isinstance(lit, Atom))
        lits = [lit for lit in rule.body if not isinstance(lit, Atom)]
        self.negated: tuple[Atom, ...] = tuple(lit.atom for lit in lits
                                               if isinstance(lit, Negation))
        filters: list[tuple[Any, int]] = []  # (literal, its index among the negations)
        k = 0
        for lit in lits:
            if isinstance(lit, Negation):
                filters.append((lit, k))
                k += 1
            else:
                filters.append((lit, -1))
        self.filters: tuple[tuple[Any, int], ...] = tuple(filters)
        self.needs_head = frozenset().union(*(term_vars(t) for t in rule.head.args))
        self.atom_vars = tuple(frozenset(v for t in a.args for v in term_vars(t))
                               for a in self.atoms)
        # shared by the plans of rules equal by value (nodes read only what they share)
        self._roots: dict[frozenset[str], Node] = {} if roots is None else roots

    def root(self, bound: frozenset[str]) -> Node:
        node = self._roots.get(bound)
        if node is None:
            node = Node(self, bound, tuple(range(len(self.atoms))),
                        tuple(range(len(self.filters))))
            self._roots[bound] = node
        return node

    def filter_vars(self, i: int) -> set[str]:
        lit = self.filters[i][0]
        if isinstance(lit, Compare):
            return term_vars(lit.left) | term_vars(lit.right)
        return {v for t in lit.atom.args for v in term_vars(t)}


class Node:
    """A point of a rule's plan: the variables ``bound`` on entry and the atoms left.

    On entry the filters ``filters`` apply, in order (as the evaluator's fixpoint over
    ready filters would apply them); ``pending`` are the filters not ready after them;
    ``connected[i]`` says whether ``atoms[i]`` shares a variable with what is bound then
    (or has none, or nothing is bound).  ``step(k)`` compiles the join of atom ``k``."""

    __slots__ = ("plan", "bound", "atoms", "filters", "pending", "connected", "empty",
                 "_steps")

    def __init__(self, plan: RulePlan, bound: frozenset[str], atoms: tuple[int, ...],
                 pending: tuple[int, ...]) -> None:
        self.plan = plan
        now = set(bound)
        applied: list[Filter] = []
        left = list(pending)
        changed = bool(left)
        while changed and left:
            changed = False
            rest = []
            for i in left:
                lit, neg = plan.filters[i]
                f = ready(lit, neg, now)
                if f is None:
                    rest.append(i)
                    continue
                applied.append(f)
                changed = True
                if f.kind in ("bind", "range") and f.var is not None:
                    now.add(f.var)
            left = rest
        self.bound = frozenset(now)
        self.atoms = atoms
        self.filters = tuple(applied)
        self.pending = tuple(left)
        self.empty = not now
        self.connected = tuple(bool(plan.atom_vars[k] & now) or not plan.atom_vars[k]
                               or not now for k in atoms)
        self._steps: dict[int, Step] = {}

    def step(self, k: int) -> Step:
        """The join of atom ``k`` (one of ``atoms``) from this node."""
        hit = self._steps.get(k)
        if hit is None:
            hit = self._steps[k] = Step(self, k)
        return hit


class Step:
    """Joining atom ``atom`` at a node: its :class:`Probe`, the probed variables
    ``key_vars``, the bound variables kept (``keep_old``) and the atom's new ones kept
    (``keep_new``: name, position): those the remaining atoms, filters or the head
    read; ``then`` is the node after it."""

    __slots__ = ("atom", "probe", "key_vars", "keep_old", "keep_new", "_node", "_then")

    def __init__(self, node: Node, k: int) -> None:
        plan = node.plan
        self.atom = k
        self.probe = probe_of(plan.atoms[k], node.bound)
        self.key_vars = tuple(t.name for t in self.probe.key_terms)
        rest = tuple(a for a in node.atoms if a != k)
        needed = set(plan.needs_head)
        for a in rest:
            needed |= plan.atom_vars[a]
        for i in node.pending:
            needed |= plan.filter_vars(i)
        self.keep_old = tuple(sorted(v for v in node.bound if v in needed))
        self.keep_new = tuple((v, p) for v, p in self.probe.new if v in needed)
        self._node = (node, rest)
        self._then: Node | None = None

    @property
    def then(self) -> Node:
        if self._then is None:
            node, rest = self._node
            bound = frozenset((*self.keep_old, *(v for v, _ in self.keep_new)))
            self._then = Node(node.plan, bound, rest, node.pending)
        return self._then


class PlanCache:
    """Compiled plans by rule object, and by value for rules built again; cleared when
    it holds :data:`LIMIT` rule objects."""

    LIMIT = 4096

    def __init__(self) -> None:
        self._by_id: dict[int, tuple[Rule, RulePlan]] = {}
        self._by_value: dict[Rule, RulePlan] = {}

    def plan(self, rule: Rule) -> RulePlan:
        hit = self._by_id.get(id(rule))
        if hit is not None and hit[0] is rule:
            return hit[1]
        if len(self._by_id) >= self.LIMIT:
            self._by_id.clear()
            self._by_value.clear()
        try:
            plan = self._by_value.get(rule)
        except TypeError:  # an unhashable constant: compile per object only
            plan = None
        if plan is None:
            plan = RulePlan(rule)
            try:
                self._by_value[rule] = plan
            except TypeError:
                pass
        elif any(a is not b for a, b in zip(plan.atoms, (x for x in rule.body
                                                          if isinstance(x, Atom)))):
            # equal by value, other objects: its own atoms (``atom_rank`` is keyed by
            # the atoms' identity), the same compiled nodes
            plan = RulePlan(rule, plan._roots)
        self._by_id[id(rule)] = (rule, plan)
        return plan


PLANS = PlanCache()  # the process's plans: nodes hold no data, constants or symbols

__all__ = ["PLANS", "Filter", "Node", "PlanCache", "Probe", "RulePlan", "Step", "probe_of",
           "ready"]

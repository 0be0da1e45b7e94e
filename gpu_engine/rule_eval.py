"""Evaluation of one rule body over chosen relation versions, as columnar joins.

A binding table maps variables to equally long columns; each row is a partial rule
instance.  Positive atoms are joined one at a time (sort-merge join against a cached
index of the atom's relation); comparisons, bindings ``x = expr`` and negations are
applied as soon as their variables are bound.  The join order is chosen greedily at run
time from the sizes of the inputs: the smallest atom connected to what is bound first.
Rows are never deduplicated inside a rule, so the number of output rows is exactly the
number of rule instances (derivations) — what the derivation counters need.
Large joins are expanded in chunks and the rest of the plan runs chunk by chunk.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Union

from gpu_engine.kernels import join as J
from gpu_engine.kernels import keys as K
from gpu_engine.kernels import sets as S
from gpu_engine.kernels.backend import INDEX, Backend

from .expr import ExprEvaluator, const_value, term_vars
from .fallback import MemoryEvents, retry_smaller_chunks
from .ir import Atom, Call, Compare, Const, Negation, ProgramError, Rule, SymbolTable, Var
from .range_expand import expand_range
from .rowset import JoinIndex, RowSet
from .runs import RunSet
from .views import View


@dataclass
class Bindings:
    cols: dict[str, Any]
    n: int


@dataclass
class RuleOutput:
    """Head rows of one rule evaluation (unsorted, with duplicates) and their count.

    A compacted output (see :attr:`RuleEvaluator.compact`) holds distinct rows with their
    multiplicities in ``weights``; ``derivations`` is the number of rule instances it
    stands for (``n`` when not compacted)."""

    cols: tuple[Any, ...]
    n: int
    weights: Any = None
    derivations: int = -1
    rows: Any = None  # the same rows as a RowSet when they are distinct and sorted

    @property
    def count(self) -> int:
        """Rule instances (derivations) represented."""
        return self.n if self.derivations < 0 else self.derivations


Compactor = Callable[[Rule, list[RuleOutput]], list[RuleOutput]]


class RuleEvaluator:
    """Evaluates rule bodies on a backend; one instance per engine."""

    def __init__(self, be: Backend, symbols: SymbolTable) -> None:
        self.be = be
        self.symbols = symbols
        self.expr = ExprEvaluator(be, symbols)
        self._delta: RunSet | None = None
        # memory bound: when the outputs of one evaluation exceed ``compact_rows`` rows,
        # ``compact`` (if set) replaces them by fewer (distinct rows with multiplicities)
        self.compact: Compactor | None = None
        self.compact_rows = 2 * be.join_chunk_rows
        self._pending = 0
        self._limit = self.compact_rows
        self.memory = MemoryEvents()  # device out-of-memory retries (gpu_engine.fallback)
        # rule -> its hypertree-decomposition plan (gpu_engine.hd_eval), or None
        self.hd_plan: Callable[[Rule], Any] | None = None
        self.peak_rows = 0  # the largest binding table / bag seen (benchmarks reset it)
        # when a dict: seconds per head relation spent in evaluate (benchmarks set it to
        # measure rules' shares of an update; host clock, so on a GPU without sync)
        self.rule_seconds: dict[str, float] | None = None
        # when a dict: id(atom) -> rank, ordering connected atoms before their sizes do
        # (gpu_engine.hd_eval sets it for a node joined from its parent's keys: the
        # estimated fan-out of each atom from the variables bound before it)
        self.atom_rank: dict[int, int] | None = None

    # --- public -----------------------------------------------------------------------

    def note_rows(self, n: int) -> None:
        if n > self.peak_rows:
            self.peak_rows = n

    def evaluate(self, rule: Rule, sources: list[Source], negated: NegSpecs,
                 delta: Source | None = None, initial: Bindings | None = None
                 ) -> list[RuleOutput]:
        """Evaluate ``rule`` (see :meth:`evaluate_plain`); a rule with a hypertree
        decomposition is evaluated through it (:mod:`gpu_engine.hd_eval`), with the
        same result: head rows with their numbers of instances, unless the variant's Δ
        holds at most ``hd_eval.SMALL_DELTA`` facts (joining them first costs less than
        the decomposition's fixed number of array passes)."""
        if self.rule_seconds is not None:
            t0 = time.perf_counter()
            try:
                return self._evaluate(rule, sources, negated, delta, initial)
            finally:
                key = rule.head.relation
                self.rule_seconds[key] = (self.rule_seconds.get(key, 0.0)
                                          + time.perf_counter() - t0)
        return self._evaluate(rule, sources, negated, delta, initial)

    def _evaluate(self, rule: Rule, sources: list[Source], negated: NegSpecs,
                  delta: Source | None, initial: Bindings | None) -> list[RuleOutput]:
        if initial is None and self.hd_plan is not None:
            from . import hd_eval

            plan = self.hd_plan(rule)
            if plan is not None and (delta is None or len(delta) > hd_eval.SMALL_DELTA):
                if any(len(s) == 0 for s in sources):
                    return []
                try:
                    return hd_eval.evaluate_decomposed(self, plan, sources, negated, delta)
                except ProgramError as e:
                    if e.loc is not None:
                        raise
                    raise type(e)(e.message, rule.loc) from None
        return self.evaluate_plain(rule, sources, negated, delta, initial)

    def evaluate_plain(self, rule: Rule, sources: list[Source], negated: NegSpecs,
                       delta: Source | None = None, initial: Bindings | None = None
                       ) -> list[RuleOutput]:
        """Evaluate ``rule``; ``sources[i]`` is the version (a RunSet or a View) read by
        the i-th positive atom.  ``negated`` is either a map from relation name to the
        relation a negated atom tests against, or one list of conditions per negated
        literal (in body order): pairs (version, must_hold) — the existentially closed
        atom must (``True``) or must not (``False``) hold in that version.  ``delta``
        (the Δ of a seminaive variant) is scanned first: it is read once, so indexing it
        would be wasted, while the other inputs' indexes are cached across rounds.
        ``initial`` starts from given binding rows instead of the single empty row
        (backward evaluation with the head bound)."""
        self._delta = delta
        atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
        filters: list[Any] = []
        k = 0
        for lit in rule.body:
            if isinstance(lit, Negation):
                conds = ([(negated[lit.atom.relation], False)] if isinstance(negated, dict)
                         else negated[k])
                filters.append(_NegFilter(lit, tuple(conds)))
                k += 1
            elif not isinstance(lit, Atom):
                filters.append(lit)
        if any(len(s) == 0 for s in sources):
            return []
        out: list[RuleOutput] = []
        self._pending = 0
        self._limit = self.compact_rows
        start = initial if initial is not None else Bindings({}, 1)
        try:  # a device OOM is retried with smaller join chunks (gpu_engine.fallback)
            retry_smaller_chunks(
                self, lambda: self._run(rule, start, list(zip(atoms, sources)), filters, out),
                out)
        except ProgramError as e:  # a functor error (to_number("abc")): name the rule
            if e.loc is not None:
                raise
            raise type(e)(e.message, rule.loc) from None
        return out

    # --- the plan, depth first over join chunks ---------------------------------------

    def _run(self, rule: Rule, b: Bindings, atoms: list[tuple[Atom, Source]],
             filters: list[Any], out: list[RuleOutput]) -> None:
        b, filters = self._apply_ready(b, filters)
        if b.n == 0:
            return
        if not atoms:
            if filters:
                raise ProgramError(f"cannot evaluate {filters[0]!r}: unbound variables", rule.loc)
            self._emit(rule, b, out)
            return
        k = self._choose(b, atoms)
        atom, src = atoms[k]
        rest = atoms[:k] + atoms[k + 1:]
        needed = _needed_vars(rule, rest, filters)
        for nb in self._join(b, atom, src, needed):
            if nb.n > self.peak_rows:
                self.peak_rows = nb.n
            if nb.n:
                self._run(rule, nb, rest, filters, out)

    def _choose(self, b: Bindings, atoms: list[tuple[Atom, Source]]) -> int:
        """Greedy join order: connected atoms first, then ``atom_rank`` (when set), then
        the smallest input."""
        bound = b.cols.keys()
        rank = self.atom_rank or {}

        def score(item: tuple[int, tuple[Atom, Source]]) -> tuple[int, int, int, int]:
            _, (atom, src) = item
            vs = _atom_vars(atom)
            connected = bool(vs & bound) or not vs or not bound
            first_delta = 0 if (not bound and src is self._delta) else 1
            return (0 if connected else 1, first_delta, rank.get(id(atom), 0), len(src))

        return min(enumerate(atoms), key=score)[0]

    def _join(self, b: Bindings, atom: Atom, src: Source, needed: set[str]):
        be = self.be
        if isinstance(src, RunSet) and src.dead:
            src = View.of(src)
        consts: list[tuple[int, int]] = []
        equal: list[tuple[int, int]] = []
        key_pos: list[int] = []
        probe_cols: list[Any] = []
        new_vars: dict[str, int] = {}
        for p, t in enumerate(atom.args):
            if isinstance(t, Const):
                consts.append((p, const_value(t, self.symbols)))
            elif isinstance(t, Var) and t.name in b.cols:
                key_pos.append(p)
                probe_cols.append(b.cols[t.name])
            elif isinstance(t, Var):
                if t.name in new_vars:
                    equal.append((new_vars[t.name], p))
                else:
                    new_vars[t.name] = p
            else:
                raise ProgramError(f"functor argument in {atom.relation} was not normalised",
                                   atom.loc)
        keep_old = [v for v in b.cols if v in needed]
        keep_new = [(v, p) for v, p in new_vars.items() if v in needed]
        view_excl = src.exclude if isinstance(src, View) else ()
        parts = src.parts if isinstance(src, View) else ((r, ()) for r in src.runs)
        for run, dead in parts:  # live rows of the runs are disjoint: outputs add up
            excluded = (*view_excl, *(RunSet.of(d) for d in dead))
            idx = run.index_for(tuple(key_pos), tuple(consts), tuple(equal), probe_cols,
                                b.n)
            lo, counts = self._probe(idx, probe_cols, b.n)
            for pi, bpos in J.join_chunks(be, lo, counts):
                rows = idx.rows[bpos]
                if excluded:  # a view: drop matches with facts it hides
                    facts = tuple(c[rows] for c in run.cols)
                    keep = be.xp.ones(len(rows), dtype=bool)
                    for ex in excluded:
                        keep &= ~ex.contains(facts, len(rows))
                    pi, rows = pi[keep], rows[keep]
                cols = {v: b.cols[v][pi] for v in keep_old}
                for v, p in keep_new:
                    cols[v] = run.cols[p][rows]
                yield Bindings(cols, len(pi))

    def _probe(self, idx: JoinIndex, probe_cols: list[Any], n: int) -> tuple[Any, Any]:
        be, xp = self.be, self.be.xp
        if not probe_cols:
            m = len(idx.rows)
            return xp.zeros(n, dtype=INDEX), xp.full(n, m, dtype=INDEX)
        if idx.spec is not None:
            pk = K.pack_probe(be, probe_cols, idx.spec)
            if n <= 64:
                return J.probe(be, pk, idx.sorted_keys)
            off = idx.offsets(be)
            if off is not None:  # dense keys: direct addressing
                return J.probe_dense(be, pk, off)
            return J.probe(be, pk, idx.sorted_keys, idx.ends(be))
        # ranked general path: rank probe and index keys jointly
        assert idx.key_cols is not None
        pk, ik = K.joint_keys(be, probe_cols, list(idx.key_cols))
        return J.probe(be, pk, ik)

    # --- filters ------------------------------------------------------------------------

    def _apply_ready(self, b: Bindings, filters: list[Any]) -> tuple[Bindings, list[Any]]:
        changed = True
        while changed and b.n and filters:
            changed = False
            pending = []
            for f in filters:
                done, b = self._try_filter(f, b)
                changed |= done
                if not done:
                    pending.append(f)
            filters = pending
        return b, filters

    def _try_filter(self, f: Any, b: Bindings) -> tuple[bool, Bindings]:
        bound = b.cols.keys()
        if isinstance(f, Compare):
            lv, rv = term_vars(f.left), term_vars(f.right)
            if _is_range(f.left) or _is_range(f.right):
                call, other = (f.left, f.right) if _is_range(f.left) else (f.right, f.left)
                if not term_vars(call) <= bound:
                    return False, b
                return True, self._range(b, call, other)
            if lv <= bound and rv <= bound:
                return True, _select(b, self.expr.compare(f, b.cols, b.n))
            if f.op == "=":
                for var, other, ov in ((f.left, f.right, rv), (f.right, f.left, lv)):
                    if isinstance(var, Var) and var.name not in bound and ov <= bound:
                        col, ok = self.expr.term(other, b.cols, b.n)
                        nb = Bindings({**b.cols, var.name: col}, b.n)
                        return True, (nb if ok is None else _select(nb, ok))
            return False, b
        assert isinstance(f, _NegFilter)
        atom = f.lit.atom
        named = {v for t in atom.args for v in term_vars(t) if not v.startswith("_")}
        if not named <= bound:
            return False, b
        keep = None
        for rel, must_hold in f.conds:
            hit = self._member(atom, b, rel)
            ok = hit if must_hold else ~hit
            keep = ok if keep is None else keep & ok
        return True, (b if keep is None else _select(b, keep))

    def _range(self, b: Bindings, call: Call, other: Any) -> Bindings:
        """Expand the rows by ``range(...)``: bind ``other`` (an unbound variable) to each
        value, or keep the values equal to it."""
        args, valid = [], None
        for a in call.args:
            col, ok = self.expr.term(a, b.cols, b.n)
            args.append(col)
            valid = ok if valid is None else (valid if ok is None else valid & ok)
        if valid is not None:
            b = _select(b, valid)
            args = [c[valid.nonzero()[0]] for c in args]
        rows, vals = expand_range(self.be, args, call.type, self.expr.bits)
        nb = Bindings({v: c[rows] for v, c in b.cols.items()}, len(rows))
        if isinstance(other, Var) and other.name not in nb.cols:
            nb.cols[other.name] = vals
            return nb
        col, ok = self.expr.term(other, nb.cols, nb.n)
        mask = col == vals
        return _select(nb, mask if ok is None else mask & ok)

    def _member(self, atom: Atom, b: Bindings, rel: Source) -> Any:
        """Mask of binding rows for which the (existentially closed) atom holds."""
        consts, equal, key_pos, probe = [], [], [], []
        anon: dict[str, int] = {}
        valid = None
        for p, t in enumerate(atom.args):
            if isinstance(t, Const):
                consts.append((p, const_value(t, self.symbols)))
            elif isinstance(t, Var) and t.name in b.cols:
                key_pos.append(p)
                probe.append(b.cols[t.name])
            elif isinstance(t, Var):
                if t.name in anon:
                    equal.append((anon[t.name], p))
                else:
                    anon[t.name] = p
            else:
                col, ok = self.expr.term(t, b.cols, b.n)
                key_pos.append(p)
                probe.append(col)
                valid = ok if valid is None else valid & ok
        xp = self.be.xp
        if isinstance(rel, RunSet) and rel.dead:
            rel = View.of(rel)
        excluded = rel.excluded_runs if isinstance(rel, View) else ()
        if isinstance(rel, View):  # tombstones: subsets of their relation's runs
            excluded = (*excluded, *(d for inc in rel.include for d in inc.dead))
        if not excluded:
            hit = xp.zeros(b.n, dtype=bool)
            for run in rel.runs:
                idx = run.index(tuple(key_pos), tuple(consts), tuple(equal))
                _, counts = self._probe(idx, probe, b.n)
                hit |= counts > 0
        else:  # matches in the included runs minus matches among the hidden facts
            total = xp.zeros(b.n, dtype=INDEX)
            for sign, runs in ((1, rel.runs), (-1, excluded)):
                for run in runs:
                    idx = run.index(tuple(key_pos), tuple(consts), tuple(equal))
                    _, counts = self._probe(idx, probe, b.n)
                    total += sign * counts
            hit = total > 0
        return hit if valid is None else hit & valid

    # --- head ---------------------------------------------------------------------------

    def _emit(self, rule: Rule, b: Bindings, out: list[RuleOutput]) -> None:
        cols, valid = [], None
        for t in rule.head.args:
            col, ok = self.expr.term(t, b.cols, b.n)
            cols.append(col)
            if ok is not None:
                valid = ok if valid is None else valid & ok
        if valid is not None:
            cols = [c[valid] for c in cols]
            n = int(valid.sum())
        else:
            n = b.n
        if n:
            out.append(RuleOutput(tuple(self.be.xp.ascontiguousarray(c) for c in cols), n))
            self._pending += n
            if self.compact is not None and self._pending > self._limit:
                out[:] = self.compact(rule, out)
                self._pending = sum(o.n for o in out)
                # amortised: the next compaction waits until the outputs have doubled
                self._limit = max(self.compact_rows, 2 * self._pending)


def concat_outputs(be: Backend, arity: int, outs: list[RuleOutput]) -> tuple[tuple[Any, ...],
                                                                          Any]:
    """The rows of rule outputs as columns, and their weights (None: all 1)."""
    xp = be.xp
    cols = tuple(xp.concatenate([o.cols[c] for o in outs]) for c in range(arity))
    if all(o.weights is None for o in outs):
        return cols, None
    w = xp.concatenate([o.weights if o.weights is not None else xp.ones(o.n, dtype=INDEX)
                        for o in outs])
    return cols, w


Source = Union[RunSet, View]  # noqa: UP007
NegSpecs = Union[dict[str, Source], list[list[tuple[Source, bool]]]]  # noqa: UP007


@dataclass(frozen=True)
class _NegFilter:
    """A negated literal with the versions it is tested against."""

    lit: Negation
    conds: tuple[tuple[Source, bool], ...]


_VARS_CACHE: dict[int, tuple[Atom, frozenset[str]]] = {}


def _atom_vars(atom: Atom) -> frozenset[str]:
    """The variables of an atom (cached per atom object)."""
    hit = _VARS_CACHE.get(id(atom))
    if hit is not None and hit[0] is atom:
        return hit[1]
    vs = frozenset(v for t in atom.args for v in term_vars(t))
    _VARS_CACHE[id(atom)] = (atom, vs)
    return vs


def _is_range(t: Any) -> bool:
    return isinstance(t, Call) and t.op == "range"


def _select(b: Bindings, mask: Any) -> Bindings:
    idx = mask.nonzero()[0]
    return Bindings({v: c[idx] for v, c in b.cols.items()}, len(idx))


def _needed_vars(rule: Rule, atoms: list[tuple[Atom, Source]], filters: list[Any]) -> set[str]:
    """Variables still read by the remaining atoms, filters or the head."""
    need: set[str] = set()
    for t in rule.head.args:
        need |= term_vars(t)
    for a, _ in atoms:
        for t in a.args:
            need |= term_vars(t)
    for f in filters:
        if isinstance(f, Compare):
            need |= term_vars(f.left) | term_vars(f.right)
        else:
            for t in f.lit.atom.args:
                need |= term_vars(t)
    return need


__all__ = ["RuleEvaluator", "RuleOutput", "Bindings", "RowSet", "S", "Call", "concat_outputs"]

def keep_counts(be: Backend) -> Any:
    """A compactor (:attr:`RuleEvaluator.compact`) for maintenance: distinct rows with
    their multiplicities, nothing dropped (the multisets Π⟦...⟧ need every row)."""
    def compact(rule: Rule, outs: list[RuleOutput]) -> list[RuleOutput]:
        if not outs:
            return outs
        arity = len(outs[0].cols)
        total = sum(o.count for o in outs)
        cols, weights = concat_outputs(be, arity, outs)
        d, cnt = RowSet.from_columns(be, cols, arity, sum(o.n for o in outs),
                                     return_counts=True, weights=weights)
        return [RuleOutput(d.cols, len(d), cnt, total)]
    return compact

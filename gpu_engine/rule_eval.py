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

from gpu_engine.kernels import cpu_small as small
from gpu_engine.kernels import join as J
from gpu_engine.kernels import keys as K
from gpu_engine.kernels import sets as S
from gpu_engine.kernels.backend import INDEX, Backend

from .expr import ExprEvaluator, const_value
from .fallback import MemoryEvents, retry_smaller_chunks
from .ir import Call, ProgramError, Rule, SymbolTable, Var
from .range_expand import expand_range
from .rowset import JoinIndex, RowSet
from .rule_plan import PLANS, Filter, Node, Probe, RulePlan, Step
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
        self.plans = PLANS  # compiled rule plans (gpu_engine.rule_plan), process-wide
        self._const_values: dict[int, tuple[Probe, tuple[tuple[int, int], ...]]] = {}

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
        if any(len(s) == 0 for s in sources):
            return []
        plan = self.plans.plan(rule)
        negs: list[tuple[tuple[Source, bool], ...]] | None = None
        if isinstance(negated, dict):
            negs = [((negated[lit.relation], False),) for lit in plan.negated]
        elif plan.negated:
            negs = [tuple(c) for c in negated]
        out: list[RuleOutput] = []
        self._pending = 0
        self._limit = self.compact_rows
        start = initial if initial is not None else Bindings({}, 1)
        node = plan.root(frozenset(start.cols))
        try:  # a device OOM is retried with smaller join chunks (gpu_engine.fallback)
            src = sources[0] if sources else None
            if (initial is None and len(plan.atoms) == 1 and not plan.filters
                    and isinstance(src, RunSet) and not src.dead):  # a filter, no join
                retry_smaller_chunks(
                    self, lambda: self._scan(rule, node.step(0), src, out), out)
            else:
                retry_smaller_chunks(
                    self, lambda: self._run(rule, plan, node, start, sources, negs, out),
                    out)
        except ProgramError as e:  # a functor error (to_number("abc")): name the rule
            if e.loc is not None:
                raise
            raise type(e)(e.message, rule.loc) from None
        return out

    # --- the plan, depth first over join chunks ---------------------------------------

    def _run(self, rule: Rule, plan: RulePlan, node: Node, b: Bindings,
             sources: list[Source], negs: Any, out: list[RuleOutput]) -> None:
        """Run ``node`` of ``rule``'s compiled plan (:mod:`gpu_engine.rule_plan`) on the
        binding rows ``b``: its ready filters, then the join of the atom chosen next,
        chunk by chunk, each chunk depth first."""
        for f in node.filters:
            if not b.n:
                return
            b = self._apply(f, b, negs)
        if b.n == 0:
            return
        if not node.atoms:
            if node.pending:
                lit = plan.filters[node.pending[0]][0]
                raise ProgramError(f"cannot evaluate {lit!r}: unbound variables", rule.loc)
            self._emit(rule, b, out)
            return
        step = node.step(self._choose(plan, node, sources))
        then = step.then
        for nb in self._join(b, step, sources[step.atom]):
            if nb.n > self.peak_rows:
                self.peak_rows = nb.n
            if nb.n:
                self._run(rule, plan, then, nb, sources, negs, out)

    def _scan(self, rule: Rule, step: Step, src: RunSet, out: list[RuleOutput]) -> None:
        """A rule whose body is one positive atom: per run, the rows that match the
        atom's constants and repeated variables, projected onto the head; a filter, no
        join index (most rules of ontology programs copy or rename facts, and a Δ run
        is read once)."""
        probe = step.probe
        consts = self._consts(probe)
        xp = self.be.xp
        for run in src.runs:
            cols = run.cols
            mask = None
            for p, v in consts:
                m = cols[p] == v
                mask = m if mask is None else mask & m
            for i, j in probe.equal:
                m = cols[i] == cols[j]
                mask = m if mask is None else mask & m
            pick = None if mask is None else xp.flatnonzero(mask)
            n = run.n if pick is None else len(pick)
            chunk = max(1, self.be.join_chunk_rows)  # the rows selected, as join chunks
            for lo in range(0, n, chunk):
                if pick is None:
                    sel = slice(None) if n <= chunk else slice(lo, lo + chunk)
                else:
                    sel = pick if n <= chunk else pick[lo:lo + chunk]
                b = Bindings({v: cols[p][sel] for v, p in step.keep_new}, min(chunk, n - lo))
                if b.n > self.peak_rows:
                    self.peak_rows = b.n
                self.be.charge(b.n, join=True)
                self._emit(rule, b, out)

    def _choose(self, plan: RulePlan, node: Node, sources: list[Source]) -> int:
        """Greedy join order: connected atoms first, then (with nothing bound) the Δ,
        then ``atom_rank`` (when set), then the smallest input."""
        atoms = node.atoms
        if len(atoms) == 1:
            return atoms[0]
        rank = self.atom_rank
        best, best_score = atoms[0], None
        for k, conn in zip(atoms, node.connected):
            src = sources[k]
            score = (0 if conn else 1, 0 if (node.empty and src is self._delta) else 1,
                     rank.get(id(plan.atoms[k]), 0) if rank else 0, len(src))
            if best_score is None or score < best_score:
                best, best_score = k, score
        return best

    def _consts(self, probe: Probe) -> tuple[tuple[int, int], ...]:
        """The stored values of a probe's constants (symbols read from the table on
        every call: a rolled-back update may give an id to another symbol)."""
        if not probe.consts:
            return ()
        if not probe.symbolic:
            hit = self._const_values.get(id(probe))
            if hit is not None and hit[0] is probe:
                return hit[1]
        vals = tuple((p, const_value(c, self.symbols)) for p, c in probe.consts)
        if not probe.symbolic:
            if len(self._const_values) >= 1 << 14:  # probes of plans dropped since
                self._const_values.clear()
            self._const_values[id(probe)] = (probe, vals)
        return vals

    def _join(self, b: Bindings, step: Step, src: Source):
        be = self.be
        if isinstance(src, RunSet) and src.dead:
            src = View.of(src)
        probe = step.probe
        probe_cols = [b.cols[v] for v in step.key_vars]
        key_pos, equal = probe.key_pos, probe.equal
        consts = self._consts(probe)
        keep_old, keep_new = step.keep_old, step.keep_new
        view_excl = src.exclude if isinstance(src, View) else ()
        parts = src.parts if isinstance(src, View) else ((r, ()) for r in src.runs)
        # a few rows probing a bound atom of one column (class membership, in ontology
        # programs): a semi-join through the run's rank bitmap, one word read per row
        member = (key_pos == (0,) and not keep_new and not consts and not equal
                  and src.arity == 1 and small.use(be, b.n))
        for run, dead in parts:  # live rows of the runs are disjoint: outputs add up
            excluded = (*view_excl, *(RunSet.of(d) for d in dead)) if (view_excl or dead) \
                else ()
            if member and (rank := run.rank_bitmap(b.n)) is not None:
                pi = small.rank_members(probe_cols[0], rank)
                if excluded and len(pi):
                    pi = pi[_visible(be, excluded, (probe_cols[0][pi],), len(pi))]
                if len(pi):
                    be.charge(len(pi), join=True)
                    yield Bindings({v: b.cols[v][pi] for v in keep_old}, len(pi))
                continue
            idx = run.index_for(key_pos, consts, equal, probe_cols, b.n)
            if not excluded and self._fused(idx, probe_cols, b.n):
                # the matched rows' columns in one pass per chunk (J.gather_chunks): no
                # probe-index, build-position or row arrays
                lo, counts = self._probe(idx, probe_cols, b.n)
                for pc, bc, n in J.gather_chunks(be, lo, counts, idx.rows,
                                                 [b.cols[v] for v in keep_old],
                                                 [run.cols[p] for _, p in keep_new]):
                    cols = dict(zip(keep_old, pc))
                    cols.update((v, c) for (v, _), c in zip(keep_new, bc))
                    yield Bindings(cols, n)
                continue
            for pi, bpos in self._matches(idx, probe_cols, b.n):
                rows = idx.rows[bpos]
                if excluded:  # a view: drop matches with facts it hides
                    keep = _visible(be, excluded, tuple(c[rows] for c in run.cols), len(rows))
                    pi, rows = pi[keep], rows[keep]
                cols = {v: b.cols[v][pi] for v in keep_old}
                for v, p in keep_new:
                    cols[v] = run.cols[p][rows]
                yield Bindings(cols, len(pi))

    def _fused(self, idx: JoinIndex, probe_cols: list[Any], n: int) -> bool:
        """Whether the join of ``n`` binding rows with ``idx`` gathers its output columns
        in one compiled pass (:func:`kernels.join.gather_chunks`): many probe rows on
        the CPU (a few take :meth:`_matches`' compiled probe; one probe row's run is
        split by :func:`kernels.join.join_chunks`)."""
        return (n >= FUSED_MIN_ROWS and not self.be.is_gpu
                and not (probe_cols and idx.spec is not None and small.use(self.be, n)))

    def _matches(self, idx: JoinIndex, probe_cols: list[Any], n: int):
        """(probe row, index position) pairs of the join of ``n`` binding rows keyed by
        ``probe_cols`` with ``idx``, in chunks (:func:`kernels.join.join_chunks`); a few
        probe rows with a packed index take one compiled call
        (:func:`kernels.cpu_small.probe_expand`)."""
        be = self.be
        if probe_cols and idx.spec is not None and small.use(be, n):
            pk = K.pack_probe(be, probe_cols, idx.spec)
            a, b, done = small.probe_expand(pk, idx.sorted_keys, be.join_chunk_rows,
                                            idx.fence())
            if done:
                if len(a):
                    be.charge(len(a), join=True)
                    yield a, b
                return
            yield from J.join_chunks(be, a, b)
            return
        lo, counts = self._probe(idx, probe_cols, n)
        yield from J.join_chunks(be, lo, counts)

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

    def _apply(self, f: Filter, b: Bindings, negs: Any) -> Bindings:
        """Apply one ready filter (:func:`gpu_engine.rule_plan.ready`) to ``b``."""
        if f.kind == "test":
            return _select(b, self.expr.compare(f.lit, b.cols, b.n))
        if f.kind == "bind":
            col, ok = self.expr.term(f.term, b.cols, b.n)
            nb = Bindings({**b.cols, f.var: col}, b.n)
            return nb if ok is None else _select(nb, ok)
        if f.kind == "range":
            return self._range(b, f.term, f.other)
        keep = None
        for rel, must_hold in negs[f.neg]:
            hit = self.member(f.probe, b, rel)
            ok = hit if must_hold else ~hit
            keep = ok if keep is None else keep & ok
        return b if keep is None else _select(b, keep)

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

    def member(self, probe: Probe, b: Bindings, rel: Source) -> Any:
        """Mask of binding rows for which the (existentially closed) atom ``probe``
        looks up holds in ``rel`` (a semi-join: negations, and backward checks of
        one-atom rules whose other variables are existential).  A few probe rows on a
        later column of a large run read it through :meth:`RowSet.index_for`."""
        key_pos, equal, consts = probe.key_pos, probe.equal, self._consts(probe)
        valid = None
        probe_cols: list[Any] = []
        for t in probe.key_terms:
            if isinstance(t, Var):
                probe_cols.append(b.cols[t.name])
            else:
                col, ok = self.expr.term(t, b.cols, b.n)
                probe_cols.append(col)
                if ok is not None:
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
                idx = run.index_for(key_pos, consts, equal, probe_cols, b.n)
                _, counts = self._probe(idx, probe_cols, b.n)
                hit |= counts > 0
        else:  # matches in the included runs minus matches among the hidden facts
            total = xp.zeros(b.n, dtype=INDEX)
            for sign, runs in ((1, rel.runs), (-1, excluded)):
                for run in runs:
                    idx = run.index_for(key_pos, consts, equal, probe_cols, b.n)
                    _, counts = self._probe(idx, probe_cols, b.n)
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
FUSED_MIN_ROWS = 2  # probe rows from which a join gathers its columns in one pass
NegSpecs = Union[dict[str, Source], list[list[tuple[Source, bool]]]]  # noqa: UP007


def _visible(be: Backend, excluded: tuple[Any, ...], facts: tuple[Any, ...], n: int) -> Any:
    """Mask over ``n`` matched facts (columns ``facts``): those no excluded set hides."""
    keep = be.xp.ones(n, dtype=bool)
    for ex in excluded:
        keep &= ~ex.contains(facts, n)
    return keep


def _select(b: Bindings, mask: Any) -> Bindings:
    idx = mask.nonzero()[0]
    return Bindings({v: c[idx] for v, c in b.cols.items()}, len(idx))


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

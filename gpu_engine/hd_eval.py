"""Evaluation of a rule through its hypertree decomposition (paper 003, §3-4), with exact
multiplicities.

:meth:`RuleEvaluator.evaluate` hands a decomposed rule here (:func:`evaluate_decomposed`)
with the versions its positive atoms read (one delta variant: Δ at one atom, ``I \\ Δ``
before it, ``I`` after it, or any other choice of versions: Π⟦…⟧ of paper 000, the
labels of paper 003 eq. 8 and 10 at the level of atoms).  Every place that evaluates
rules (materialisation, the seminaive module of MAT-MOD / DRed^c-MOD, DRed^c's Π⟦…⟧,
Counting, B/F's forward passes) therefore evaluates a decomposed rule by decomposition,
and since the result carries the exact number of rule instances per head row, the
derivation counters c_nr / c_r stay exact.

One evaluation (the shape of Algorithm 4, CrossNodeEvaluation, for one Δ node):

1. **In-node evaluation** Π_p (§4, read with "≠ ∅" for the printed "⊈ ∅"): node p is the
   rule ``#bag_p(χ(p)) :- λ(p), <its comparisons and negations>`` evaluated by the
   ordinary evaluator over the atoms' versions; its binding rows (rule instances of
   λ(p)) are grouped onto χ(p) with their counts (weighted group-count), so a bag tuple
   carries the number of λ(p)-instantiations it stands for (node-local variables are
   counted, not kept).
2. **Top-down from the Δ node** (Algorithm 4 line 6): the node holding the Δ atom is
   evaluated first and made the root; every other node is evaluated in breadth-first
   order with an extra atom ``#sj(χ(p) ∩ χ(parent))`` over the distinct projection of
   its parent's bag (a semi-join pushed into the in-node join), so a small Δ costs what
   it reaches, not the size of the other nodes' bags.
3. **Full reducer** (line 7): bottom-up then top-down left semi-joins (sorted membership
   on packed keys).
4. **Bottom-up join with counts** (line 8, CrossNodeJoin): each node joins its bag with
   its children's messages (sort-merge join), multiplies the counts and groups onto
   (χ(p) ∩ χ(parent)) ∪ the head variables seen so far, summing counts (a counting-
   semiring Yannakakis); the root's result is grouped onto the head variables.  Joins
   are expanded in chunks of at most ``GPU_ENGINE_JOIN_CHUNK_ROWS`` rows and each chunk
   is grouped at once.

Our reading of multiplicities through projections (pitfall 3 of the notes): counts are
carried through every projection, so the head row's weight is the number of rule
instances (an instance is one assignment of every variable; the λ(p) partition the atoms,
so instances and combinations of node instantiations correspond one to one).

A node other than the Δ node whose semi-join keys are many (a large Δ, or an evaluation
with no Δ) reads its kept bag (:mod:`gpu_engine.hd_bags`: inst_p^I kept across rounds
and updates, brought to the asked versions by Algorithms 3 and 5) and filters it by the
parent's keys; with few keys its in-node join is evaluated restricted to them, which
costs what the Δ reaches.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any

from gpu_engine.kernels import join as J
from gpu_engine.kernels import keys as K
from gpu_engine.kernels import sets as S
from gpu_engine.kernels.backend import INDEX

from .decomposition import Decomposition, positive_atoms
from .expr import term_vars
from .ir import Atom, Negation, Rule, Var
from .rowset import RowSet
from .runs import RunSet

# a delta variant whose Δ holds at most this many facts is evaluated by the ordinary
# evaluator (Δ first): a few facts reach few rows, and the decomposition's fixed number of
# array passes (two bags, their groupings, the joins) would cost more; the tests set 0
SMALL_DELTA = 128

# the parent's keys are joined first when the rows that builds (keys × the estimated
# fan-out of the node's first atom joined from them, :func:`_join_order`) times this factor
# are at most the rows of the node's largest atom (SJ_BASIS), else tested once the node's
# join binds them (or filter its kept bag).  Exp, 1,000 leaf values deleted: node
# {right(n,r), val(r,s,v2)} reached by 1,000 keys (n, s) fans out 1:1 through right, so
# its keys go first (a basis of its smallest atom sent them to the node's whole join,
# 2.8·10⁶ rows, each round).  LUBM(10) L+C, 25 % deletion: node {RP68(s,c), RP37(s,d)}
# reached by 1,339 keys (c, d) went to RP37 (the smaller atom: ~700 members per
# department) before RP68 (~18 students per course): 0.39 s for one evaluation; the
# fan-out order takes RP68 first.
SJ_JOIN_FACTOR = 2
SJ_BASIS = max
# a kept bag is built from scratch only by an evaluation whose Δ is at most 1/SMALL_SHARE
# of the node's largest atom (else each round of a large update would build it again)
SMALL_SHARE = 64

if TYPE_CHECKING:
    from .rule_eval import RuleEvaluator, RuleOutput


@dataclass
class Table:
    """Distinct rows over named variables with a count per row."""

    cols: dict[str, Any]
    cnt: Any

    def __len__(self) -> int:
        return len(self.cnt)


@dataclass
class HDPlan:
    """A rule's decomposition prepared for evaluation."""

    rule: Rule
    dec: Decomposition
    node_atoms: list[list[int]]  # positions among the positive atoms, per node
    node_negs: list[list[int]]  # positions among the negated literals, per node
    node_rules: list[Rule]  # #bag_p(χ(p)) :- λ(p), filters_p
    head_vars: tuple[str, ...]
    cross: list[Any]  # comparisons over variables of several nodes (cross-node join)
    whole: list[bool]  # χ(p) holds every variable of λ(p) (no grouping of the bag)
    key: Any = None  # names the rule and decomposition for kept bags (gpu_engine.hd_bags)
    # (positive atom, column) -> (rows, distinct values) of its largest run when counted
    distinct: dict[tuple[int, int], tuple[int, int]] = field(default_factory=dict)

    @cached_property
    def rule_atoms(self) -> list[Atom]:
        """The rule's positive atoms (the objects of the node rules' bodies)."""
        return positive_atoms(self.rule)

    @staticmethod
    def build(rule: Rule, dec: Decomposition) -> HDPlan:
        atoms = positive_atoms(rule)
        k = len(dec.nodes)
        lam_vars = [set().union(*({t.name for t in atoms[i].args if isinstance(t, Var)}
                                  for i in node)) for node in dec.nodes]
        atom_node = {i: p for p, node in enumerate(dec.nodes) for i in node}
        body: list[list[Any]] = [[] for _ in range(k)]
        negs: list[list[int]] = [[] for _ in range(k)]
        ai = ni = 0
        cross: list[Any] = []
        bound = set().union(*lam_vars)
        for lit in rule.body:
            if isinstance(lit, Atom):
                body[atom_node[ai]].append(lit)
                ai += 1
                continue
            if isinstance(lit, Negation):
                vs: set[str] = set()
                for t in lit.atom.args:
                    vs |= term_vars(t)
            else:
                vs = term_vars(lit.left) | term_vars(lit.right)  # type: ignore[union-attr]
            vs &= bound
            p = next((q for q in range(k) if vs <= lam_vars[q]), -1)
            if p < 0:  # a comparison across nodes
                cross.append(lit)
                continue
            body[p].append(lit)
            if isinstance(lit, Negation):
                negs[p].append(ni)
                ni += 1
        node_rules = [Rule(Atom(f"#bag{p}", tuple(Var(v) for v in dec.chi[p])),
                           tuple(body[p]), rule.loc) for p in range(k)]
        hv: list[str] = []
        for t in rule.head.args:
            for v in sorted(term_vars(t)):
                if v not in hv:
                    hv.append(v)
        whole = [set(dec.chi[p]) == lam_vars[p] for p in range(k)]
        return HDPlan(rule, dec, [list(n) for n in dec.nodes], negs, node_rules, tuple(hv),
                      cross, whole, (id(rule), repr(dec.to_json())))


def _shared(a: tuple[str, ...] | list[str], b: Any) -> list[str]:
    return [v for v in a if v in b]


def _group(be: Any, t: Table, keep: list[str]) -> Table:
    """Project ``t`` onto ``keep`` summing counts (weighted group-count)."""
    xp = be.xp
    if len(t) == 0:
        return Table({v: xp.zeros(0, dtype=INDEX) for v in keep}, xp.zeros(0, dtype=INDEX))
    if not keep:
        return Table({}, xp.asarray([int(t.cnt.sum())], dtype=INDEX))
    cols = tuple(t.cols[v] for v in keep)
    rs, cnt = RowSet.from_columns(be, cols, len(keep), return_counts=True, weights=t.cnt)
    return Table(dict(zip(keep, rs.cols)), cnt)


def _keys(be: Any, a: Table, b: Table, on: list[str]) -> tuple[Any, Any]:
    xp = be.xp
    if not on:
        return xp.zeros(len(a), dtype=INDEX), xp.zeros(len(b), dtype=INDEX)
    return K.joint_keys(be, tuple(a.cols[v] for v in on), tuple(b.cols[v] for v in on))


def _semijoin(be: Any, a: Table, b: Table, on: list[str]) -> Table:
    """a ⋉ b on ``on``: sorted membership of packed keys."""
    if len(a) == 0:
        return a
    if len(b) == 0:
        return Table({v: c[:0] for v, c in a.cols.items()}, a.cnt[:0])
    if not on:
        return a
    ka, kb = _keys(be, a, b, on)
    keep = S.isin_sorted(be, ka, S.sort_values(be, kb))  # (sorting beats hashing for unique)
    return Table({v: c[keep] for v, c in a.cols.items()}, a.cnt[keep])


def _join_group(ev: RuleEvaluator, a: Table, b: Table, on: list[str], keep: list[str],
                filters: list[Any] = ()) -> Table:  # type: ignore[assignment]
    """π_keep(σ_filters(a ⋈ b)) with counts multiplied then summed, chunk by chunk
    (sort-merge join by binary-search expansion)."""
    be, xp = ev.be, ev.be.xp
    if len(a) == 0 or len(b) == 0:
        return Table({v: xp.zeros(0, dtype=INDEX) for v in keep}, xp.zeros(0, dtype=INDEX))
    ka, kb = _keys(be, a, b, on)
    skb, order = S.sort_with_order(be, kb)
    lo, counts = J.probe(be, ka, skb)
    parts: list[Table] = []
    for pi, bpos in J.join_chunks(be, lo, counts):
        bi = order[bpos]
        ev.note_rows(len(pi))
        cnt = a.cnt[pi] * b.cnt[bi]
        if filters:
            fv = set().union(*(term_vars(f.left) | term_vars(f.right) for f in filters))
            env = {v: (a.cols[v][pi] if v in a.cols else b.cols[v][bi]) for v in fv}
            ok = None
            for f in filters:
                mk = ev.expr.compare(f, env, len(pi)).astype(bool)  # (string ones: 0/1)
                ok = mk if ok is None else ok & mk
            pi, bi, cnt = pi[ok], bi[ok], cnt[ok]
        cols = {}
        for v in keep:
            cols[v] = a.cols[v][pi] if v in a.cols else b.cols[v][bi]
        parts.append(_group(be, Table(cols, cnt), keep))
    if not parts:
        return Table({v: xp.zeros(0, dtype=INDEX) for v in keep}, xp.zeros(0, dtype=INDEX))
    if len(parts) == 1:
        return parts[0]
    both = Table({v: xp.concatenate([p.cols[v] for p in parts]) for v in keep},
                 xp.concatenate([p.cnt for p in parts]))
    return _group(be, both, keep)




def _distinct(ev: RuleEvaluator, plan: HDPlan, i: int, col: int, src: Any) -> int:
    """Distinct values in column ``col`` of atom ``i``'s largest run (kept in the plan:
    an estimate for join orders, counted again when the run has doubled since)."""
    got = plan.distinct.get((i, col))
    runs = [r for r in getattr(src, "runs", ()) if len(r)]
    if not runs:
        return 1 if got is None else got[1]
    r = max(runs, key=len)
    if got is None or len(r) > 2 * got[0]:
        xp = ev.be.xp
        c = r.cols[col] if col == 0 else xp.sort(r.cols[col])  # (column 0 of a run: sorted)
        got = plan.distinct[(i, col)] = (len(r), 1 + int(xp.count_nonzero(c[1:] != c[:-1])))
    return got[1]


def _fanout(ev: RuleEvaluator, plan: HDPlan, i: int, src: Any, bound: set[str]) -> float:
    """Estimated rows of atom ``i`` per binding of ``bound`` (its size over the distinct
    values of its bound columns, the textbook estimate)."""
    atom = plan.rule_atoms[i]
    div = 1
    for c, t in enumerate(atom.args):
        if isinstance(t, Var) and t.name in bound:
            div *= _distinct(ev, plan, i, c, src)
    return max(len(src) / div, 1.0)


def _join_order(ev: RuleEvaluator, plan: HDPlan, p: int, sources: list[Any],
                shared: list[str]) -> tuple[dict[int, int], float]:
    """Node ``p``'s atoms in a greedy order from its parent's keys ``shared`` (each step
    the connected atom of least estimated fan-out) as ranks for the evaluator
    (``RuleEvaluator.atom_rank``), and the fan-out of the first step."""
    bound = set(shared)
    left = list(plan.node_atoms[p])
    rank: dict[int, int] = {}
    first = 0.0
    while left:
        conn = [i for i in left if _atom_var_names(plan.rule_atoms[i]) & bound]
        if conn:
            i = min(conn, key=lambda j: _fanout(ev, plan, j, sources[j], bound))
            if not rank:
                first = _fanout(ev, plan, i, sources[i], bound)
        else:
            i = min(left, key=lambda j: len(sources[j]))
            if not rank:
                first = float(len(sources[i]))
        rank[id(plan.rule_atoms[i])] = len(rank) + 1
        bound |= _atom_var_names(plan.rule_atoms[i])
        left.remove(i)
    return rank, first


def _atom_var_names(a: Atom) -> set[str]:
    return {t.name for t in a.args if isinstance(t, Var)}


def _keys_first(ev: RuleEvaluator, plan: HDPlan, p: int, sources: list[Any],
                shared: list[str], keys: int) -> dict[int, int] | None:
    """The join order (ranks) when node ``p``'s ``keys`` parent keys over ``shared`` are
    to be joined first (few keys, a small fan-out), else None (a membership filter)."""
    rank, first = _join_order(ev, plan, p, sources, shared)
    big = SJ_BASIS(len(sources[i]) for i in plan.node_atoms[p])
    return rank if keys * first * SJ_JOIN_FACTOR <= big else None


def _bag(ev: RuleEvaluator, plan: HDPlan, p: int, sources: list[Any], negated: Any,
         sj: Any = None, shared: list[str] = (),  # type: ignore[assignment]
         delta: Any = None) -> Table:
    """Π_p: the node's in-node join over the given versions, grouped onto χ(p) with
    counts; ``sj`` (the distinct rows over ``shared`` = χ(p) ∩ χ(parent) of the parent's
    bag, or the parent's bag itself when nothing is shared) restricts it first;
    ``delta`` (one of the sources) is scanned first."""
    from .rule_eval import concat_outputs

    be, xp = ev.be, ev.be.xp
    rule = plan.node_rules[p]
    srcs = [sources[i] for i in plan.node_atoms[p]]
    body = list(rule.body)
    neg: list[list[tuple[Any, bool]]] = []
    rank: dict[int, int] | None = None
    k = 0
    for lit in body:
        if isinstance(lit, Negation):
            neg.append([(negated[lit.atom.relation], False)] if isinstance(negated, dict)
                       else list(negated[plan.node_negs[p][k]]))
            k += 1
    if sj is not None:
        if not len(sj):
            return Table({v: xp.zeros(0, dtype=INDEX) for v in plan.dec.chi[p]},
                         xp.zeros(0, dtype=INDEX))
        if isinstance(sj, RowSet):  # (a Table: no shared variables, a cross product)
            names = list(shared)
            rs = RunSet.of(sj)
            atom = Atom("#sj", tuple(Var(v) for v in names))
            rank = _keys_first(ev, plan, p, sources, names, len(rs))
            if rank is not None:
                # few keys: scan them first and probe the node's atoms (top-down) in the
                # order of least fan-out
                body.insert(0, atom)
                srcs = [rs, *srcs]
                delta = rs
            else:  # many: a membership filter once the node binds the keys
                body.append(Negation(atom))
                neg.append([(rs, True)])
    rule = Rule(rule.head, tuple(body), rule.loc)
    saved = ev.compact
    from .rule_eval import keep_counts

    ev.compact = keep_counts(be)  # a large bag is grouped as it grows, never deduplicated
    saved_rank, ev.atom_rank = ev.atom_rank, rank
    try:
        outs: list[RuleOutput] = ev.evaluate_plain(rule, srcs, neg, delta)  # type: ignore
    finally:
        ev.compact = saved
        ev.atom_rank = saved_rank
    chi = list(plan.dec.chi[p])
    if not outs:
        return Table({v: xp.zeros(0, dtype=INDEX) for v in chi}, xp.zeros(0, dtype=INDEX))
    n = sum(o.n for o in outs)
    cols, w = concat_outputs(be, len(chi), outs)
    if w is None:
        w = xp.ones(n, dtype=INDEX)
    if not chi:
        return Table({}, xp.asarray([int(w.sum())], dtype=INDEX))
    if plan.whole[p]:  # χ(p) = var(λ(p)): instances of λ(p) are distinct rows already
        return Table(dict(zip(chi, cols)), w)
    rs, cnt = RowSet.from_columns(be, cols, len(chi), n, return_counts=True, weights=w)
    return Table(dict(zip(chi, rs.cols)), cnt)


def evaluate_decomposed(ev: RuleEvaluator, plan: HDPlan, sources: list[Any], negated: Any,
                        delta: Any, root_bag: tuple[int, Table] | None = None
                        ) -> list[RuleOutput]:
    """Head rows of ``plan.rule`` over the given versions, distinct, with their numbers of
    rule instances as weights (the contract of :meth:`RuleEvaluator.evaluate`).
    ``root_bag`` (node, bag): that node's bag is given (a Δ bag, gpu_engine.hd_affected)
    and is the root; its atoms' sources are not read."""
    from .rule_eval import Bindings, RuleOutput

    be, xp = ev.be, ev.be.xp
    dec = plan.dec
    k = len(dec.nodes)
    adj: list[list[int]] = [[] for _ in range(k)]
    for p, q in enumerate(dec.parent):
        if q >= 0:
            adj[p].append(q)
            adj[q].append(p)
    # the Δ node is the root; else the node whose atoms read the fewest rows
    root = -1 if root_bag is None else root_bag[0]
    if delta is not None and root < 0:
        for i, s in enumerate(sources):
            if s is delta:
                root = next(p for p in range(k) if i in plan.node_atoms[p])
                break
    if root < 0:
        root = min(range(k), key=lambda p: min(len(sources[i]) for i in plan.node_atoms[p]))
    parent = [-1] * k
    order, seen = [root], {root}
    for x in order:
        for y in adj[x]:
            if y not in seen:
                seen.add(y)
                parent[y] = x
                order.append(y)
    chi = [list(c) for c in dec.chi]
    shared = [(_shared(chi[p], chi[parent[p]]) if parent[p] >= 0 else []) for p in range(k)]
    # steps 1-2: bags, top-down from the Δ node with the semi-joins pushed in
    bags: list[Table | None] = [None] * k
    kept = getattr(ev, "hd_bags", None)
    kept = kept() if kept is not None else None
    if root_bag is not None:
        delta = root_bag[1]  # (its size decides whether a kept bag is built)
    for p in order:
        if root_bag is not None and p == root:
            bags[p] = root_bag[1]
            ev.note_rows(len(root_bag[1]))
            continue
        sj = None
        if parent[p] >= 0:
            par = bags[parent[p]]
            assert par is not None
            sj = par if not shared[p] else RowSet.from_columns(
                be, tuple(par.cols[v] for v in shared[p]), len(shared[p]))
        if kept is not None and (
                (sj is None and delta is None)
                or (isinstance(sj, RowSet) and _keys_first(
                    ev, plan, p, sources, shared[p], len(sj)) is None)):
            # the node's kept bag (gpu_engine.hd_bags), the parent's keys as a semi-join
            big = SJ_BASIS(len(sources[i]) for i in plan.node_atoms[p])
            got = kept.bag(ev, plan, p, sources, negated, may_skip=True,
                           build=delta is None or len(delta) * SMALL_SHARE <= big)
            if got is not None and sj is not None:
                got = _semijoin(be, got, Table(dict(zip(shared[p], sj.cols)), sj.cols[0]),
                                shared[p])
        else:
            got = None
        bag = got if got is not None else _bag(ev, plan, p, sources, negated, sj, shared[p])
        ev.note_rows(len(bag))
        if not len(bag):
            return []
        bags[p] = bag
    B: list[Table] = [b for b in bags if b is not None]
    # step 3: full reducer (bottom-up, then top-down left semi-joins); with two nodes the
    # child is already reduced by step 2 and the join of step 4 does the rest
    if k > 2:
        for p in reversed(order):
            if parent[p] >= 0:
                B[parent[p]] = _semijoin(be, B[parent[p]], B[p], shared[p])
        if not len(B[root]):
            return []
        for p in order:
            if parent[p] >= 0:
                B[p] = _semijoin(be, B[p], B[parent[p]], shared[p])
    # step 4: bottom-up join with counts, projecting onto shared ∪ head variables
    pending = list(plan.cross)  # comparisons across nodes, applied where they meet

    def wanted() -> set[str]:
        out = set(plan.head_vars)
        for f in pending:
            out |= term_vars(f.left) | term_vars(f.right)
        return out

    msgs: list[Table | None] = [None] * k
    ready: list[Any] = []
    for p in reversed(order):
        t = B[p]
        kids = [c for c in adj[p] if c != parent[p]]
        for j, c in enumerate(kids):
            m = msgs[c]
            assert m is not None
            on = _shared(list(m.cols), t.cols)
            joined = set(t.cols) | set(m.cols)
            for f in [f for f in pending if term_vars(f.left) | term_vars(f.right) <= joined]:
                pending.remove(f)
                ready.append(f)
            # only what the head, pending comparisons, the parent or the children still
            # to join need
            need = wanted() | set(shared[p])
            for c2 in kids[j + 1:]:
                need |= set(shared[c2])
            keep = [v for v in list(t.cols) + [v for v in m.cols if v not in t.cols]
                    if v in need]
            t = _join_group(ev, t, m, on, keep, ready)
            ready = []
            if not len(t):
                return []
        head = wanted()
        want = ([v for v in t.cols if v in head or v in shared[p]] if parent[p] >= 0
                else list(plan.head_vars))
        # a join's result is grouped on its columns already
        msgs[p] = t if kids and set(t.cols) == set(want) else _group(be, t, want)
    assert not pending, "a comparison across nodes was never applied"
    res = msgs[root]
    assert res is not None
    if not len(res):
        return []
    # the head: its terms over the head variables' columns, weights = instance counts
    b = Bindings(dict(res.cols), len(res))
    cols, valid = [], None
    for t in plan.rule.head.args:
        col, ok = ev.expr.term(t, b.cols, b.n)
        cols.append(col)
        if ok is not None:
            valid = ok if valid is None else valid & ok
    cnt = res.cnt
    if valid is not None:
        cols = [c[valid] for c in cols]
        cnt = cnt[valid]
    n = len(cnt)
    if n == 0:
        return []
    return [RuleOutput(tuple(xp.ascontiguousarray(c) for c in cols), n, cnt,
                       int(cnt.sum()))]


__all__ = ["HDPlan", "Table", "evaluate_decomposed"]

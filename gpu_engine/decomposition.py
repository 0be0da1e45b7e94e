"""Hypertree decompositions of rule bodies (paper 003 §3 and §5).

A decomposition of a rule is a tree of nodes p with a set of body atoms λ(p) and a set of
variables χ(p).  We use the class of decompositions in which

* the λ(p) **partition** the positive body atoms (every atom in exactly one node), and
* χ(p) is var(λ(p)) minus the variables that occur in no other node and not in the head
  (those are projected away inside the node, where they are counted),

and the χ(p) satisfy the connectedness condition (conditions 1-3 of the paper hold by
construction; condition 4 holds because χ(p) = var(λ(p)) up to node-local variables).
Our reading: the paper allows an atom in several λ(p) (a generalised hypertree cover);
we keep a partition so that the bottom-up join with counts (the counting-semiring
Yannakakis of :mod:`gpu_engine.hd_eval`) gives exactly one combination of node
instantiations per rule instance, which the derivation counters of DRed^c need.  Every
α-acyclic body has width 1 in this class (one node per atom), so "cyclic" (the paper's
"complex", hw > 1) is the same test.

Comparisons and negations go to a node whose atoms bind all their variables (a negation's
other variables are existential); a comparison that fits no node is applied in the
cross-node join at the first node where its variables meet (they count as head variables
until then); a partition where a negation fits no node is not considered, and a rule whose
body binds variables outside positive atoms (``x = expr`` introducing a variable,
``range``) is not decomposed.

``auto`` adds a cost check (:func:`worth_decomposing`): a cyclic rule is decomposed
only when the pairwise plan (the evaluator's greedy order, from no Δ and from each atom)
is estimated to build more than :data:`CLEAR` = 2 times the decomposition's rows (its
nodes' in-node joins and results).  The paper's "combined" decomposes every complex
rule; Exp's value rules (brief §2.3 P4) showed a cyclic rule whose pairwise plan does
not blow up (estimated 1.1·10⁷ rows either way), where the decomposition's six nodes
cost 2-3× its time.

The search (per rule, Python, once): partitions of the atoms into blocks of at most w
atoms for w = 1, 2, ... (the first w with a valid tree is the minimal width); among the
valid ones of that width, the one of least cost under the paper's model (§5): the
textbook cardinality estimate of each node's join (sizes over distinct values of the
join variables, constants as selections) plus 2·(|p̂_i| + |p̂_j|) per tree edge.  The
tree over the blocks is a maximum-weight spanning tree on |χ(p) ∩ χ(q)| (a join tree
whenever one exists), checked for connectedness.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .expr import term_vars
from .ir import Atom, Compare, Const, Negation, Rule, Var

MAX_ATOMS = 12  # rules with more positive atoms are not decomposed
MAX_WIDTH = 4
MAX_PARTITIONS = 200_000  # partitions examined per width
# ``auto`` decomposes a cyclic rule only when the pairwise plan's estimated intermediate
# rows exceed this many times the decomposition's (worth_decomposing)
CLEAR = 2.0

# (relation, column) -> (rows, distinct values in the column)
StatsOf = Callable[[str, int], tuple[int, int]]


@dataclass(frozen=True)
class Decomposition:
    """``nodes[p]``: positions (among the rule's positive atoms) of λ(p); ``parent[p]``:
    the parent node (-1 at the root); ``chi[p]``: χ(p) in a fixed order."""

    nodes: tuple[tuple[int, ...], ...]
    parent: tuple[int, ...]
    chi: tuple[tuple[str, ...], ...]
    width: int
    cost: float

    def to_json(self) -> dict[str, Any]:
        return {"nodes": [list(n) for n in self.nodes], "parent": list(self.parent),
                "chi": [list(c) for c in self.chi], "width": self.width, "cost": self.cost}

    @staticmethod
    def from_json(d: dict[str, Any]) -> Decomposition:
        return Decomposition(tuple(tuple(int(i) for i in n) for n in d["nodes"]),
                             tuple(int(p) for p in d["parent"]),
                             tuple(tuple(str(v) for v in c) for c in d["chi"]),
                             int(d["width"]), float(d["cost"]))

    def describe(self, rule: Rule) -> str:
        """``w=2 {CW(x,z1) PC(z1,y)} {CA(x,z2) PC(z2,y) ^0}``: the bags (λ and the parent)."""
        atoms = positive_atoms(rule)
        parts = []
        for p, node in enumerate(self.nodes):
            body = " ".join(_atom_text(atoms[i]) for i in node)
            up = f" ^{self.parent[p]}" if self.parent[p] >= 0 else ""
            parts.append(f"{{{body}{up}}}")
        return f"w={self.width} " + " ".join(parts)


def _atom_text(a: Atom) -> str:
    args = ",".join(t.name if isinstance(t, Var) else str(getattr(t, "value", "?"))
                    for t in a.args)
    return f"{a.relation}({args})"


def positive_atoms(rule: Rule) -> list[Atom]:
    return [lit for lit in rule.body if isinstance(lit, Atom)]


def _atom_vars(a: Atom) -> frozenset[str]:
    return frozenset(t.name for t in a.args if isinstance(t, Var))


def literal_needs(rule: Rule) -> list[tuple[frozenset[str], bool]] | None:
    """For each non-atom body literal (in body order), the variables it reads and whether
    it is a comparison (which may also be applied in the cross-node join, where its
    variables meet); None when the rule cannot be decomposed (a literal binds a variable
    that no positive atom binds)."""
    bound: set[str] = set()
    for a in positive_atoms(rule):
        bound |= _atom_vars(a)
    out = []
    for lit in rule.body:
        if isinstance(lit, Atom):
            continue
        if isinstance(lit, Negation):
            vs = set()
            for t in lit.atom.args:
                vs |= term_vars(t)
            out.append((frozenset(vs & bound), False))  # the others are existential
        elif isinstance(lit, Compare):
            vs = term_vars(lit.left) | term_vars(lit.right)
            if not vs <= bound:
                return None
            out.append((frozenset(vs), True))
        else:
            return None
    return out


def _head_vars(rule: Rule) -> frozenset[str]:
    out: set[str] = set()
    for t in rule.head.args:
        out |= term_vars(t)
    return frozenset(out)


def _partitions(m: int, w: int) -> Iterator[list[list[int]]]:
    """Set partitions of range(m) into blocks of at most ``w`` elements."""
    blocks: list[list[int]] = []

    def rec(i: int) -> Iterator[list[list[int]]]:
        if i == m:
            yield [list(b) for b in blocks]
            return
        for b in blocks:
            if len(b) < w:
                b.append(i)
                yield from rec(i + 1)
                b.pop()
        blocks.append([i])
        yield from rec(i + 1)
        blocks.pop()

    yield from rec(0)


def _tree(chis: list[frozenset[str]]) -> list[int] | None:
    """A join tree over the blocks (parent array rooted at 0), or None when the χ sets
    admit none (the hypergraph they form is cyclic)."""
    k = len(chis)
    edges = sorted(((len(chis[i] & chis[j]), i, j) for i in range(k) for j in range(i + 1, k)),
                   reverse=True)
    root = list(range(k))

    def find(x: int) -> int:
        while root[x] != x:
            root[x] = root[root[x]]
            x = root[x]
        return x

    adj: list[list[int]] = [[] for _ in range(k)]
    for _, i, j in edges:
        a, b = find(i), find(j)
        if a != b:
            root[a] = b
            adj[i].append(j)
            adj[j].append(i)
    parent = [-1] * k
    order, seen = [0], {0}
    for x in order:
        for y in adj[x]:
            if y not in seen:
                seen.add(y)
                parent[y] = x
                order.append(y)
    # connectedness: the nodes holding a variable form a subtree
    every: set[str] = set().union(*chis) if chis else set()
    for v in every:
        holders = [p for p in range(k) if v in chis[p]]
        links = sum(1 for p in holders if parent[p] >= 0 and v in chis[parent[p]])
        if links != len(holders) - 1:
            return None
    return parent


def _candidate(rule: Rule, blocks: list[list[int]], needs: list[tuple[frozenset[str], bool]]
               ) -> tuple[list[frozenset[str]], list[int]] | None:
    atoms = positive_atoms(rule)
    head = _head_vars(rule)
    lam = [frozenset().union(*(_atom_vars(atoms[i]) for i in b)) for b in blocks]
    for need, is_cmp in needs:  # a negation fits some node; a comparison that fits
        if not any(need <= vs for vs in lam):  # none is applied where its variables
            if not is_cmp:  # meet in the cross-node join: they are kept until then
                return None
            head = head | need
    chis = []
    for p, vs in enumerate(lam):
        others = frozenset().union(*(lam[q] for q in range(len(lam)) if q != p))
        chis.append(vs & (others | head))
    parent = _tree(chis)
    return None if parent is None else (chis, parent)


def _estimate(rule: Rule, block: list[int], stats: StatsOf) -> float:
    """Textbook cardinality of the join of the block's atoms (Garcia-Molina et al. 16.4):
    the product of sizes over, per variable, the largest distinct count of all but one
    of its occurrences; a constant selects 1/distinct of its atom."""
    atoms = positive_atoms(rule)
    size = 1.0
    occ: dict[str, list[int]] = {}
    for i in block:
        a = atoms[i]
        rows, _ = stats(a.relation, 0) if a.args else (1, 1)
        size *= max(rows, 1)
        for c, t in enumerate(a.args):
            d = max(stats(a.relation, c)[1], 1)
            if isinstance(t, Const):
                size /= d
            elif isinstance(t, Var):
                occ.setdefault(t.name, []).append(d)
    for ds in occ.values():
        ds.sort(reverse=True)
        for d in ds[:-1]:
            size /= d
    return max(size, 1.0)


def pairwise_rows(rule: Rule, block: list[int], stats: StatsOf, start: int = -1) -> float:
    """Estimated rows built by joining the atoms of ``block`` two at a time in the order
    the evaluator takes without a Δ (``RuleEvaluator._choose``: the smallest atom, then
    connected atoms smallest first): the sum of the intermediate results' textbook
    sizes (each join: the product of the sizes over, per shared variable, the larger
    distinct count; a constant selects 1/distinct; a variable's distinct count is the
    least of its atoms' and the result's size)."""
    atoms = positive_atoms(rule)
    left = list(block)
    size, total = 1.0, 0.0
    dist: dict[str, float] = {}

    def rows(i: int) -> float:
        return float(max(stats(atoms[i].relation, 0)[0], 1)) if atoms[i].args else 1.0

    while left:
        conn = [i for i in left if _atom_vars(atoms[i]) & dist.keys()] or left
        i = start if start in left else min(conn, key=rows)
        left.remove(i)
        a, n = atoms[i], rows(i)
        out = size * n
        seen: dict[str, float] = {}
        for c, t in enumerate(a.args):
            d = float(max(stats(a.relation, c)[1], 1))
            if isinstance(t, Const):
                out /= d
            elif isinstance(t, Var):
                if t.name in dist:
                    out /= max(dist[t.name], d)
                    seen[t.name] = min(dist[t.name], d)
                elif t.name in seen:  # a repeated variable: a selection
                    out /= d
                else:
                    seen[t.name] = d
        size = max(out, 1.0)
        for v, d in seen.items():
            dist[v] = d
        for v in dist:
            dist[v] = min(dist[v], size)
        if len(left) < len(block) - 1:  # a join's result (the first atom is scanned)
            total += size
    return total


def worth_decomposing(rule: Rule, dec: Decomposition, stats: StatsOf) -> bool:
    """``auto``'s cost check: whether the pairwise plan's estimated intermediate rows
    (:func:`pairwise_rows` over the whole body) exceed :data:`CLEAR` times the
    decomposition's (the in-node joins' intermediate rows, the same estimate per node,
    plus each node's result, which the semi-joins and the bottom-up join read)."""
    m = len(positive_atoms(rule))
    whole = max(pairwise_rows(rule, list(range(m)), stats, i) for i in range(-1, m))
    nodes = sum(pairwise_rows(rule, list(b), stats) + _estimate(rule, list(b), stats)
                for b in dec.nodes)
    return whole > CLEAR * nodes


def is_cyclic(rule: Rule) -> bool:
    """Whether the body needs width > 1 (the paper's complex rules)."""
    needs = literal_needs(rule)
    atoms = positive_atoms(rule)
    if needs is None or len(atoms) < 2 or len(atoms) > MAX_ATOMS:
        return False
    return _candidate(rule, [[i] for i in range(len(atoms))], needs) is None


def decompose(rule: Rule, stats: StatsOf, mode: str = "auto") -> Decomposition | None:
    """The decomposition of least cost among those of minimal width, or None when the rule
    is not decomposed: fewer than two positive atoms, too many, literals that fit no
    node, ``auto`` and an acyclic body, ``auto`` and a pairwise plan estimated to build
    no more than :data:`CLEAR` times the decomposition's rows (:func:`worth_decomposing`),
    or only the one-node decomposition."""
    needs = literal_needs(rule)
    atoms = positive_atoms(rule)
    m = len(atoms)
    if needs is None or m < 2 or m > MAX_ATOMS or mode == "off":
        return None
    for w in range(1, min(MAX_WIDTH, m - 1) + 1):
        if w == 1 and mode == "auto":
            if _candidate(rule, [[i] for i in range(m)], needs) is not None:
                return None  # acyclic: the standard join order serves it
            continue
        best: Decomposition | None = None
        for k, blocks in enumerate(_partitions(m, w)):
            if k >= MAX_PARTITIONS:
                break
            if len(blocks) < 2:
                continue
            got = _candidate(rule, blocks, needs)
            if got is None:
                continue
            chis, parent = got
            est = [_estimate(rule, b, stats) for b in blocks]
            cost = sum(est) + sum(2 * (est[p] + est[q]) for p, q in enumerate(parent) if q >= 0)
            if best is None or cost < best.cost:
                width = max(len(b) for b in blocks)
                best = Decomposition(tuple(tuple(b) for b in blocks), tuple(parent),
                                     tuple(tuple(sorted(c)) for c in chis), width, cost)
        if best is not None:
            if mode == "auto" and not worth_decomposing(rule, best, stats):
                return None  # the pairwise plan builds no more rows: keep it
            return best
    return None


__all__ = ["Decomposition", "decompose", "is_cyclic", "positive_atoms", "literal_needs"]

"""The small-delta path: seminaive rounds of a stratum as one compiled call.

While the deltas of a recursive stratum are tiny, :func:`run_small` encodes every delta
variant of the stratum's recursive rules as a plan (``kernels.small_path`` describes the
tables) and lets the compiled interpreter run round after round, until the fixpoint, a
delta too large for nested loops, or a round whose output overflows the buffer (then the
caller evaluates that round with the array path).  The result is the same as the array
path's, round for round: the same exact delta variants (variant i reads Δ at p_i,
``I \\ Δ`` at p_j for j < i and ``I`` for j > i), so the same facts, the same derivation
counts per rule and, when counting, the same multiplicities logged for the counters.

A plan is fixed when the path is entered: Δ first, then greedily the atom connected to
what is bound with the fewest rows (the array path's order), keys probed in position
order, filters as soon as their variables are bound.  A part of a body that shares no
variable with Δ or the head and reads only lower strata (``a(x) :- b(x), c(y), d(y)``
with Δ at ``b``) is counted once at entry instead of enumerated per instance: each head
row the rest derives stands for that many derivations (:func:`independent_parts`).

Features the interpreter does not have (float or symbol order comparisons, string and
bitwise functors, functors inside body atoms, ranked keys wider than 63 bits, nullary
stratum relations) make :func:`small_plan` return None, and the stratum keeps the array
path.  On the GPU the path runs on the host over copies of the runs it reads (cached with
each immutable run), as long as one entry copies at most ``HOST_COPY_LIMIT`` elements.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

import numpy as np

from gpu_engine.kernels import cpu_numba, cpu_small
from gpu_engine.kernels import small_path as K

from .expr import const_value, term_vars
from .ir import Atom, Compare, Const, Negation, Rule, SymbolTable, Term, Var
from .plan import Role, delta_variants
from .rowset import RowSet
from .rule_plan import probe_of
from .runs import RunSet
from .stratify import Stratum

ENTER_DELTA = 1024  # enter the path when a round's Δ holds at most this many facts
LEAVE_DELTA = 4096  # leave it when a round derives more new facts than this
OUT_ROWS = 1 << 16  # head rows one round may produce before the array path takes over
ROUND_SLICE = 1 << 16  # rounds per compiled call (between progress reports)
HOST_COPY_LIMIT = 1 << 22  # GPU: elements the path may copy to the host at one entry
MIN_CAPACITY = 1 << 12  # rows of N allocated at entry (doubled when full)
# Numba's first call in a process costs about 0.4 s (its CPU target, scipy.linalg, the
# cached kernels): a stratum enters the path only after this many array rounds, unless
# the process has paid that already, so that a program whose strata reach their
# fixpoint in a few rounds never pays it (a tiny recursive program: 1.4 -> 0.95 s as a
# whole process), while a chain of a million rounds loses a few milliseconds.
WARM_ROUNDS = 16
_entered = False  # the path has run in this process

_ARITH = {"+": K.C_ADD, "-": K.C_SUB, "*": K.C_MUL, "/": K.C_DIV, "%": K.C_MOD,
          "min": K.C_MIN, "max": K.C_MAX}
_CMP = {"=": K.OP_EQ, "!=": K.OP_NE, "<": K.OP_LT, "<=": K.OP_LE, ">": K.OP_GT,
        ">=": K.OP_GE}


def enabled() -> bool:
    """The path is on unless ``GPU_ENGINE_SMALL_PATH=0`` (or Numba is missing)."""
    return K.AVAILABLE and os.environ.get("GPU_ENGINE_SMALL_PATH", "1") != "0"


def worth_entering(rounds: int, be: Any) -> bool:
    """Whether a stratum that has run ``rounds`` rounds enters the path now
    (:data:`WARM_ROUNDS`): Numba is loaded in this process, or the rounds go on."""
    return _entered or rounds >= WARM_ROUNDS or cpu_numba.warm() or cpu_small.on(be)


@dataclass
class SmallPlan:
    """What is fixed about a stratum for the small path (checked once)."""

    stratum: Stratum
    rels: list[str]  # stratum relations, in N-relation id order
    arity: dict[str, int]
    maxar: int


def small_plan(s: Stratum, arity: dict[str, int], bits: int = 32) -> SmallPlan | None:
    """The stratum's small-path description, or None when a rule needs a feature the
    compiled interpreter does not have (with 64-bit words: any functor, any unsigned
    order comparison; its arithmetic wraps to 32 bits)."""
    if not s.recursive or not enabled():
        return None
    rels = list(s.relations)
    if any(arity[r] == 0 or arity[r] > K.MAXK for r in rels):
        return None
    if not all(_supported(rule, arity, bits) for rule in s.recursive_rules):
        return None
    return SmallPlan(s, rels, dict(arity), max(arity[r] for r in rels))


def _supported(rule: Rule, arity: dict[str, int], bits: int = 32) -> bool:
    names: set[str] = set()
    if bits == 64 and not _word64_ok(rule):
        return False
    for lit in rule.body:
        if isinstance(lit, (Atom, Negation)):
            atom = lit if isinstance(lit, Atom) else lit.atom
            if len(atom.args) > K.MAXK or not all(isinstance(t, (Var, Const))
                                                  for t in atom.args):
                return False
            names |= {t.name for t in atom.args if isinstance(t, Var)}
        elif isinstance(lit, Compare):
            if lit.type in ("float",) or (lit.type == "symbol" and lit.op not in ("=", "!=")):
                return False
            if not (_term_ok(lit.left) and _term_ok(lit.right)):
                return False
            names |= term_vars(lit.left) | term_vars(lit.right)
        else:
            return False
    return (len(rule.head.args) <= K.MAXK and all(_term_ok(t) for t in rule.head.args)
            and len(names) <= K.MAXV)


def _word64_ok(rule: Rule) -> bool:
    """No functor and no unsigned order comparison (the interpreter's words are 32-bit)."""
    for lit in rule.body:
        if isinstance(lit, Compare):
            if lit.type == "unsigned" and lit.op not in ("=", "!="):
                return False
            if not all(isinstance(t, (Var, Const)) for t in (lit.left, lit.right)):
                return False
    return all(isinstance(t, (Var, Const)) for t in rule.head.args)


def _term_ok(t: Term) -> bool:
    if isinstance(t, (Var, Const)):
        return not (isinstance(t, Const) and t.type == "float")
    if t.type not in ("number", "unsigned") or (t.op not in _ARITH and t.op != "neg"):
        return False
    if t.op in ("/", "%") and not (isinstance(t.args[1], Const) and t.args[1].value != 0):
        return False  # a division by zero is dropped with a warning on the array path
    return all(_term_ok(a) for a in t.args)


class _Tables:
    """Builder of the interpreter's tables for one entry into the path."""

    def __init__(self, symbols: SymbolTable, be: Any = None) -> None:
        self.symbols = symbols
        self.gpu = be is not None and be.is_gpu
        self.be = be
        self.copied = 0  # elements copied from the device at this entry
        self.arrays: list[np.ndarray] = []
        self._ids: dict[int, int] = {}
        self.IX: list[list[int]] = []
        self.L: list[list[int]] = []
        self.F: list[list[int]] = []
        self.V: list[list[int]] = []
        self.VC: list[list[int]] = []  # independent parts, counted once at entry
        self.factors: list[list[int]] = []  # per V row: its independent parts (VC rows)
        self.code: list[int] = []
        self.HD: list[list[int]] = []
        self._hd: dict[tuple[int, tuple[int, ...]], int] = {}

    def host(self, a: Any, owner: RowSet) -> np.ndarray:
        """``a`` as a host array (on the GPU a copy, cached with the immutable run that
        owns it, so a run is copied once however often the path is entered)."""
        if not self.gpu:
            return np.ascontiguousarray(a, dtype=np.int64)
        key = ("host", id(a))
        hit = owner._mirror.get(key)
        if hit is None:
            self.copied += len(a)
            if self.copied > HOST_COPY_LIMIT:
                raise _NotEncodable
            hit = np.ascontiguousarray(self.be.to_host(a), dtype=np.int64)
            owner._mirror[key] = hit
        return hit

    def array(self, a: Any, owner: RowSet) -> int:
        hit = self._ids.get(id(a))
        if hit is not None:
            return hit
        self.arrays.append(self.host(a, owner))
        self._ids[id(a)] = len(self.arrays) - 1
        return len(self.arrays) - 1

    def entry(self, owner: RowSet, keys: Any, rows: Any, dense: Any, n: int,
              cols: tuple[Any, ...], spec: Any, k: int) -> int:
        row = [0] * K.IX_WIDTH
        row[K.IX_KEYS] = self.array(keys, owner) if keys is not None else -1
        row[K.IX_ROWS] = self.array(rows, owner) if rows is not None else -1
        row[K.IX_DENSE] = self.array(dense, owner) if dense is not None else -1
        row[K.IX_DLEN] = len(dense) if dense is not None else 0
        row[K.IX_K] = k
        ids = [self.array(c, owner) for c in cols]
        row[K.IX_COL0] = ids[0] if ids else -1
        if ids and ids != list(range(ids[0], ids[0] + len(ids))):  # columns must be adjacent
            base = len(self.arrays)
            for c in cols:
                self.arrays.append(self.host(c, owner))
            row[K.IX_COL0] = base
        row[K.IX_N] = n
        if spec is None:
            row[K.IX_W] = 64
        else:
            for i in range(k):
                row[K.IX_OFF + i] = spec.offsets[i]
                row[K.IX_W + i] = spec.widths[i]
                row[K.IX_SH + i] = spec.shifts[i]
        self.IX.append(row)
        return len(self.IX) - 1

    def hash_def(self, rel: int, keypos: tuple[int, ...]) -> int:
        hit = self._hd.get((rel, keypos))
        if hit is not None:
            return hit
        row = [0] * K.HD_WIDTH
        row[K.HD_REL] = rel
        row[K.HD_NKEY] = len(keypos)
        for i, p in enumerate(keypos):
            row[K.HD_KEYPOS + i] = p
        self.HD.append(row)
        self._hd[(rel, keypos)] = len(self.HD) - 1
        return len(self.HD) - 1

    def expr(self, t: Term, regs: dict[str, int]) -> tuple[int, int]:
        lo = len(self.code)
        self._emit(t, regs)
        return lo, len(self.code)

    def _emit(self, t: Term, regs: dict[str, int]) -> None:
        if isinstance(t, Var):
            self.code += [K.C_VAR, regs[t.name]]
        elif isinstance(t, Const):
            self.code += [K.C_CONST, const_value(t, self.symbols)]
        else:
            wrap = 0 if t.type == "number" else 1
            if t.op == "neg":
                self._emit(t.args[0], regs)
                self.code += [K.C_NEG, wrap]
                return
            self._emit(t.args[0], regs)
            for a in t.args[1:]:
                self._emit(a, regs)
                self.code += [_ARITH[t.op], wrap]

    def runs_index(self, runs: RunSet, key_pos: tuple[int, ...],
                   consts: tuple[tuple[int, int], ...], equal: tuple[tuple[int, int], ...]
                   ) -> tuple[int, int] | None:
        """Index entries of every run of ``runs`` (None: a ranked index)."""
        if runs.dead:  # tombstones: not in the interpreter (the array path handles them)
            return None
        first = len(self.IX)
        for run in runs.runs:
            idx = run.index(key_pos, consts, equal)
            if key_pos and idx.spec is None:
                return None
            dense = idx.offsets(run.be) if key_pos else None
            self.entry(run, idx.sorted_keys if key_pos else None, idx.rows, dense,
                       len(idx.rows), run.cols, idx.spec, len(key_pos))
        return first, len(self.IX) - first

    def finish(self, rows: list[list[int]], width: int) -> np.ndarray:
        if not rows:
            return np.zeros((0, width), dtype=np.int64)
        return np.asarray(rows, dtype=np.int64).reshape(len(rows), width)


def _plan_variant(t: _Tables, rule: Rule, p: int, roles: tuple[Role, ...], atoms: list[Atom],
                  rel_id: dict[str, int], base: dict[str, RunSet], lower: dict[str, RunSet],
                  sizes: dict[str, int], rule_id: int) -> bool:
    """Encode the variant of ``rule`` with Δ at body atom ``p`` and the atoms' versions
    ``roles`` (``plan.delta_variants``); False: not encodable.  Parts of the body
    independent of Δ and of the head (:func:`independent_parts`) are encoded apart, as
    counts (``t.VC``), and multiply the variant's derivations (``V_MULT``)."""
    parts = independent_parts(rule, atoms[p], rel_id.__contains__)
    apart = {id(lit) for part in parts for lit in part}
    try:
        factors = [_plan_count(t, part, rel_id, lower, sizes) for part in parts]
        keep = [i for i, a in enumerate(atoms) if id(a) not in apart]
        sub = [atoms[i] for i in keep]
        order = [keep[j] for j in join_order(sub, keep.index(p), sizes)]
        seq = [(atoms[i], 0 if i == p else 1 if atoms[i].relation in rel_id else 2,
                0 if roles[i] is Role.OLD else 1) for i in order]
        filters = [lit for lit in rule.body if not isinstance(lit, Atom) and id(lit) not in apart]
        vrow, levels, regs, bound = _encode_body(t, seq, filters, rel_id, base, lower)
        vrow[K.V_RULE] = rule_id
        vrow[K.V_HREL] = rel_id[rule.head.relation]
        vrow[K.V_HN] = len(rule.head.args)
        vrow[K.V_DREL] = rel_id[atoms[p].relation]
        for j, arg in enumerate(rule.head.args):
            if not term_vars(arg) <= bound:
                return False
            vrow[K.V_HC + 2 * j], vrow[K.V_HC + 2 * j + 1] = t.expr(arg, regs)
        if len(regs) > K.MAXV:
            return False
    except _NotEncodable:
        return False
    vrow[K.V_L0] = len(t.L)
    t.L.extend(levels)
    t.factors.append(factors)
    t.V.append(vrow)
    return True


def _plan_count(t: _Tables, part: list[Any], rel_id: dict[str, int],
                lower: dict[str, RunSet], sizes: dict[str, int]) -> int:
    """Encode an independent part (atoms of lower strata and their filters) as a variant
    whose instances :func:`kernels.small_path.count_instances` counts; its index in
    ``t.VC``."""
    atoms = [lit for lit in part if isinstance(lit, Atom)]
    first = min(range(len(atoms)), key=lambda i: (sizes[atoms[i].relation], i))
    seq = [(atoms[i], 2, 1) for i in join_order(atoms, first, sizes)]
    filters = [lit for lit in part if not isinstance(lit, Atom)]
    vrow, levels, regs, _ = _encode_body(t, seq, filters, rel_id, {}, lower)
    if len(regs) > K.MAXV:
        raise _NotEncodable
    vrow[K.V_L0] = len(t.L)
    t.L.extend(levels)
    t.VC.append(vrow)
    return len(t.VC) - 1


def _encode_body(t: _Tables, seq: list[tuple[Atom, int, int]], filters: list[Any],
                 rel_id: dict[str, int], base: dict[str, RunSet], lower: dict[str, RunSet]
                 ) -> tuple[list[int], list[list[int]], dict[str, int], set[str]]:
    """The levels of the atoms ``seq`` (atom, level kind, version), in that order, with
    each filter placed as soon as its variables are bound: (variant row with its first
    filters and level count, levels, registers, bound variables).  Raises
    :class:`_NotEncodable`."""
    regs: dict[str, int] = {}
    filters = list(filters)

    def reg(v: str) -> int:
        if v not in regs:
            regs[v] = len(regs)
        return regs[v]

    bound: set[str] = set()

    def ready() -> list[list[int]]:
        """Filters applicable now (bindings may enable more), encoded."""
        out: list[list[int]] = []
        changed = True
        while changed:
            changed = False
            for f in list(filters):
                row = _filter_row(t, f, bound, regs, reg, lower)
                if row is None:
                    continue
                if row is False:
                    raise _NotEncodable
                filters.remove(f)
                out.append(row)
                changed = True
        return out

    vrow = [0] * K.V_WIDTH
    vrow[K.V_MULT] = 1
    f0 = len(t.F)
    t.F.extend(ready())
    vrow[K.V_F0], vrow[K.V_NF] = f0, len(t.F) - f0
    levels: list[list[int]] = []
    for a, kind, ver in seq:
        row = [0] * K.L_WIDTH
        key_pos, keyreg, consts, equal, first = _atom_args(t, a, bound, regs)
        binds = [(q, reg(v)) for v, q in first.items()]
        row[K.L_KIND] = kind
        row[K.L_VER] = ver
        row[K.L_REL] = rel_id.get(a.relation, -1)
        row[K.L_NKEY] = len(key_pos)
        for j, (q, r) in enumerate(zip(key_pos, keyreg)):
            row[K.L_KEYPOS + j], row[K.L_KEYREG + j] = q, r
        row[K.L_NBIND] = len(binds)
        for j, (q, r) in enumerate(binds):
            row[K.L_BINDPOS + j], row[K.L_BINDREG + j] = q, r
        row[K.L_NCONST] = len(consts)
        for j, (q, v) in enumerate(consts):
            row[K.L_CONSTPOS + j], row[K.L_CONSTVAL + j] = q, v
        row[K.L_NEQ] = len(equal)
        for j, (x, y) in enumerate(equal):
            row[K.L_EQA + j], row[K.L_EQB + j] = x, y
        if kind == 1:
            row[K.L_HASH] = t.hash_def(rel_id[a.relation], tuple(key_pos))
        if kind in (1, 2):
            src = base[a.relation] if kind == 1 else lower[a.relation]
            ents = t.runs_index(src, tuple(key_pos), tuple(consts), tuple(equal))
            if ents is None:
                raise _NotEncodable
            row[K.L_IX0], row[K.L_NIX] = ents
        bound |= set(first)
        f0 = len(t.F)
        t.F.extend(ready())
        row[K.L_F0], row[K.L_NF] = f0, len(t.F) - f0
        levels.append(row)
    if filters:
        raise _NotEncodable
    vrow[K.V_NLEV] = len(levels)
    return vrow, levels, regs, bound


def independent_parts(rule: Rule, delta: Atom, in_stratum: Any) -> list[list[Any]]:
    """The parts of ``rule``'s body that share no variable, directly or through other
    literals, with the Δ atom ``delta`` or the head, and whose atoms all belong to lower
    strata: each part's instances are the same in every round, so it is evaluated once,
    as a count, not once per instance of the rest (Soufflé's ``independent_body``
    cases).  A part is a connected component of the body's literals (atoms, negations,
    comparisons) linked by shared variables; each holds at least one atom."""
    body = list(rule.body)
    parent = list(range(len(body)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner: dict[str, int] = {}
    shared = [_literal_vars(lit) for lit in body]
    for i, vs in enumerate(shared):
        for v in vs:
            if v in owner:
                parent[root(i)] = root(owner[v])
            else:
                owner[v] = i
    head = set().union(*(term_vars(a) for a in rule.head.args))
    dependent = {root(i) for i, lit in enumerate(body)
                 if lit is delta or shared[i] & head}
    groups: dict[int, list[Any]] = {}
    for i, lit in enumerate(body):
        groups.setdefault(root(i), []).append(lit)
    return [lits for r, lits in groups.items()
            if r not in dependent
            and any(isinstance(lit, Atom) for lit in lits)
            and not any(isinstance(lit, Atom) and in_stratum(lit.relation) for lit in lits)]


def _literal_vars(lit: Any) -> set[str]:
    """The variables a body literal shares with the rest of the rule (a negation's
    anonymous variables are its own)."""
    if isinstance(lit, Atom):
        return {a.name for a in lit.args if isinstance(a, Var)}
    if isinstance(lit, Negation):
        return {a.name for a in lit.atom.args if isinstance(a, Var) and not a.anonymous}
    return term_vars(lit.left) | term_vars(lit.right)


def join_order(atoms: list[Atom], first: int, sizes: dict[str, int]) -> list[int]:
    """Δ (atom ``first``) first, then greedily the atom connected to what is bound (or
    without variables) with the fewest rows; ties by position (the array path's order)."""
    order = [first]
    rest = [i for i in range(len(atoms)) if i != first]
    seen = {v.name for v in atoms[first].args if isinstance(v, Var)}
    while rest:
        best, best_key = -1, (2, 0, 0)
        for i in rest:
            vs = {v.name for v in atoms[i].args if isinstance(v, Var)}
            key = (0 if (vs & seen or not vs) else 1, sizes[atoms[i].relation], i)
            if key < best_key:
                best, best_key = i, key
        rest.remove(best)
        order.append(best)
        seen |= {v.name for v in atoms[best].args if isinstance(v, Var)}
    return order


class _NotEncodable(Exception):
    pass


def _filter_row(t: _Tables, f: Any, bound: set[str], regs: dict[str, int], reg: Any,
                lower: dict[str, RunSet]) -> list[int] | None | bool:
    """The encoded filter if applicable now (None: not yet; False: not encodable)."""
    row = [0] * K.F_WIDTH
    if isinstance(f, Compare):
        lv, rv = term_vars(f.left), term_vars(f.right)
        if lv <= bound and rv <= bound:
            row[K.F_KIND], row[K.F_OP] = 0, _CMP[f.op]
            row[K.F_L0], row[K.F_L1] = t.expr(f.left, regs)
            row[K.F_R0], row[K.F_R1] = t.expr(f.right, regs)
            return row
        if f.op == "=":
            for var, other, ov in ((f.left, f.right, rv), (f.right, f.left, lv)):
                if isinstance(var, Var) and var.name not in bound and ov <= bound:
                    row[K.F_KIND] = 1
                    row[K.F_L0], row[K.F_L1] = t.expr(other, regs)
                    row[K.F_REG] = reg(var.name)
                    bound.add(var.name)
                    return row
        return None
    atom = f.atom
    named = {a.name for a in atom.args if isinstance(a, Var) and not a.anonymous}
    if not named <= bound:
        return None
    if atom.relation not in lower:
        return False
    key_pos, keyreg, consts, equal, _ = _atom_args(t, atom, bound, regs)
    ents = t.runs_index(lower[atom.relation], tuple(key_pos), tuple(consts), tuple(equal))
    if ents is None:
        return False
    row[K.F_KIND] = 2
    row[K.F_IX0], row[K.F_NIX] = ents
    row[K.F_NKEY] = len(key_pos)
    for j, r in enumerate(keyreg):
        row[K.F_KEYREG + j] = r
    return row


def _atom_args(t: _Tables, atom: Atom, bound: set[str], regs: dict[str, int]
               ) -> tuple[list[int], list[int], list[tuple[int, int]], list[tuple[int, int]],
                          dict[str, int]]:
    """An atom's :func:`rule_plan.probe_of` in the interpreter's terms: the key positions
    and their registers, the constants (position, encoded value), the repeated new
    variables (first position, position) and the first position of each new variable."""
    pr = probe_of(atom, frozenset(bound))
    return (list(pr.key_pos), [regs[v.name] for v in pr.key_terms],
            [(q, const_value(c, t.symbols)) for q, c in pr.consts], list(pr.equal),
            dict(pr.new))


@dataclass
class SmallResult:
    prev: dict[str, RunSet]
    delta: dict[str, RunSet]
    rounds: int
    overflow: bool  # the next round must be evaluated by the array path
    derivations: dict[int, int]  # per rule index
    evaluations: dict[int, int]
    counts: list[tuple[str, RowSet, Any]]  # (relation, rows, multiplicities) to log


def run_small(sp: SmallPlan, store: dict[str, RunSet], prev: dict[str, RunSet],
              delta: dict[str, RunSet], symbols: SymbolTable, counting: bool,
              progress: Any = None) -> SmallResult | None:
    """Run rounds of stratum ``sp`` on the small path from the versions ``prev`` (I \\ Δ),
    ``delta`` and ``store`` (I); None when a plan cannot be encoded (ranked keys)."""
    global _entered
    _entered = True
    s = sp.stratum
    rel_id = {r: i for i, r in enumerate(sp.rels)}
    be = next(iter(store.values())).be
    t = _Tables(symbols, be)
    sizes = {r: len(rs) for r, rs in store.items()}
    lower = {r: rs for r, rs in store.items() if r not in rel_id}
    rules = s.recursive_rules
    for ri, rule in enumerate(rules):
        atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
        for p, roles in delta_variants(atoms, rel_id.__contains__):
            if not _plan_variant(t, rule, p, roles, atoms, rel_id, prev, lower, sizes, ri):
                return None
    # membership entries of the base runs, and the full-row hash of every relation
    try:
        M = np.zeros((len(sp.rels), 2), dtype=np.int64)
        full_hash = np.zeros(len(sp.rels), dtype=np.int64)
        for r, i in rel_id.items():
            first = len(t.IX)
            if prev[r].dead or store[r].dead:
                return None
            for run in prev[r].runs:
                if sp.arity[r] > 1 and run.spec is None:
                    return None
                t.entry(run, run.keys, None, None, len(run), run.cols,
                        run.spec if sp.arity[r] > 1 else None, sp.arity[r])
            M[i] = (first, len(t.IX) - first)
            full_hash[i] = t.hash_def(i, tuple(range(sp.arity[r])))
        # the arrays as a table of data addresses (t.arrays keeps them alive meanwhile)
    except _NotEncodable:  # (the GPU: too much to copy to the host)
        return None
    A = np.asarray([a.ctypes.data for a in t.arrays] or [0], dtype=np.int64)
    IX = t.finish(t.IX, K.IX_WIDTH)
    L = t.finish(t.L, K.L_WIDTH)
    F = t.finish(t.F, K.F_WIDTH)
    V = t.finish(t.V, K.V_WIDTH)
    HD = t.finish(t.HD, K.HD_WIDTH)
    code = np.asarray(t.code or [0], dtype=np.int64)
    if not _multiply(t, A, IX, L, F, V, code):
        return None
    # N: the initial Δ (tag 0)
    d_rows = [(i, delta[r].compact()) for r, i in rel_id.items() if len(delta[r])]
    n0 = sum(len(rs) for _, rs in d_rows)
    cap = max(MIN_CAPACITY, 1 << int(2 * n0).bit_length())
    st = np.zeros(K.ST_WIDTH, dtype=np.int64)
    N = _alloc(cap, sp.maxar, len(t.HD))
    at = 0
    for i, rs in d_rows:
        k = len(rs)
        for c, col in enumerate(rs.cols):
            N["vals"][at:at + k, c] = be.to_host(col)
        N["rel"][at:at + k] = i
        at += k
    N["new"][:at] = 1
    st[K.ST_COUNT], st[K.ST_ROUND], st[K.ST_DLO], st[K.ST_DHI] = at, 0, 0, at
    K.rebuild_hashes(HD, N["head"], N["next"], N["vals"], N["rel"], N["new"], at, full_hash)
    ovals = np.empty((OUT_ROWS, sp.maxar), dtype=np.int64)
    orel = np.empty(OUT_ROWS, dtype=np.int64)
    omul = np.empty(OUT_ROWS, dtype=np.int64)
    rder = np.zeros(len(rules), dtype=np.int64)
    reval = np.zeros(len(rules), dtype=np.int64)
    while True:
        status = K.run_rounds(A, IX, L, F, V, code, HD, N["head"], N["next"], M, full_hash,
                              N["vals"], N["rel"], N["tag"], N["new"], N["cnt"], st, ovals,
                              orel, omul, rder, reval, int(bool(counting)), LEAVE_DELTA,
                              ROUND_SLICE)
        if status == K.FULL:
            N = _grow(N, int(st[K.ST_COUNT]), len(t.HD), HD, full_hash)
            continue
        if status == K.ROUND_LIMIT:
            if progress:
                progress("iteration", int(st[K.ST_ROUND]), s.index)
            continue
        break
    return _result(sp, store, prev, delta, N, st, status, rder, reval, counting, be)


def _multiply(t: _Tables, A: np.ndarray, IX: np.ndarray, L: np.ndarray, F: np.ndarray,
              V: np.ndarray, code: np.ndarray) -> bool:
    """Count each independent part once (the lower strata do not change while the path
    runs) and set each variant's multiplicity to the product of its parts' counts;
    False when a product would not fit a counter."""
    if not t.VC:
        return True
    VC = t.finish(t.VC, K.V_WIDTH)
    counts = [int(K.count_instances(A, IX, L, F, VC, code, j)) for j in range(len(VC))]
    for v, parts in enumerate(t.factors):
        mult = math.prod(counts[j] for j in parts)
        if mult >= 1 << 62:
            return False
        V[v, K.V_MULT] = mult
    return True


def _alloc(cap: int, width: int, nhash: int) -> dict[str, np.ndarray]:
    return {"vals": np.zeros((cap, width), dtype=np.int64),
            "rel": np.zeros(cap, dtype=np.int64), "tag": np.zeros(cap, dtype=np.int64),
            "new": np.zeros(cap, dtype=np.int64), "cnt": np.zeros(cap, dtype=np.int64),
            "head": np.full((max(nhash, 1), 2 * cap), -1, dtype=np.int64),
            "next": np.full((max(nhash, 1), cap), -1, dtype=np.int64)}


def _grow(N: dict[str, np.ndarray], count: int, nhash: int, HD: np.ndarray,
          full_hash: np.ndarray) -> dict[str, np.ndarray]:
    cap = 2 * len(N["rel"])
    out = _alloc(cap, N["vals"].shape[1], nhash)
    for k in ("vals", "rel", "tag", "new", "cnt"):
        out[k][:count] = N[k][:count]
    K.rebuild_hashes(HD, out["head"], out["next"], out["vals"], out["rel"], out["new"], count,
                     full_hash)
    return out


def _result(sp: SmallPlan, store: dict[str, RunSet], prev: dict[str, RunSet],
            delta: dict[str, RunSet], N: dict[str, np.ndarray], st: np.ndarray, status: int,
            rder: np.ndarray, reval: np.ndarray, counting: bool, be: Any) -> SmallResult:
    """The versions after the last complete round: ``prev`` = I \\ Δ and Δ = N[tag = t]."""
    count = int(st[K.ST_COUNT])
    rounds = int(st[K.ST_ROUND])
    rel = N["rel"][:count]
    tag = N["tag"][:count]
    new = N["new"][:count] == 1
    out_prev, out_delta = dict(prev), dict(delta)
    counts: list[tuple[str, RowSet, Any]] = []
    for i, r in enumerate(sp.rels):
        a = sp.arity[r]
        mine = rel == i
        if rounds > 0:
            mid = np.flatnonzero(mine & new & (tag >= 1) & (tag < rounds))
            last = np.flatnonzero(mine & new & (tag == rounds))
            base = store[r]
            mid_rs = _rows(be, N["vals"], mid, a)
            p = base.append(mid_rs) if len(mid_rs) else base
            d = _rows(be, N["vals"], last, a)
            out_prev[r] = p
            out_delta[r] = RunSet.of(d)
        if counting:
            sel = np.flatnonzero(mine & (N["cnt"][:count] > 0))
            if len(sel):
                cols = tuple(be.asarray(N["vals"][sel, c]) for c in range(a))
                d, cnt = RowSet.from_columns(be, cols, a, len(sel), return_counts=True,
                                             weights=be.asarray(N["cnt"][sel]))
                counts.append((r, d, cnt))
    return SmallResult(out_prev, out_delta, rounds, status == K.OVERFLOW,
                       {i: int(v) for i, v in enumerate(rder) if v},
                       {i: int(v) for i, v in enumerate(reval) if v}, counts)


def _rows(be: Any, vals: np.ndarray, sel: np.ndarray, arity: int) -> RowSet:
    if len(sel) == 0:
        return RowSet.empty(be, arity)
    cols = tuple(be.asarray(vals[sel, c]) for c in range(arity))
    return RowSet.from_columns(be, cols, arity, len(sel))

"""One rule body as Spark DataFrame operations (Spark backend).

A relation version is a DataFrame with columns ``c0..c{k-1}`` in its declared Spark types
plus its row count (tracked by the runner, never recounted here).  A rule body becomes a
chain of equi-joins on the shared variables (column names are variables), started at the
delta (or the smallest input) and continued greedily with connected atoms, smallest first,
as the local engine orders them; inputs under the broadcast threshold carry a broadcast
hint.  Comparisons, bindings ``x = expr`` and negations (``left_anti`` joins against the
complete lower-stratum relation) apply as soon as their variables are bound, and columns no
later literal needs are projected away after each step.  The head is a projection with
the validity of its functors as a filter; duplicates are removed by the caller.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import reduce
from typing import Any

from gpu_engine.ir import (
    Atom,
    ColumnType,
    Compare,
    Const,
    Negation,
    ProgramError,
    Relation,
    Rule,
    Var,
)
from gpu_engine.rule_plan import Node, RulePlan

from . import adapter as sa
from .backend_expr import SPARK_TYPES, SparkExpr, check_term, const_column

_CMP_OPS = ("=", "!=", "<", "<=", ">", ">=")


@dataclass
class Source:
    """A relation version: DataFrame (columns ``c0..``) and its number of rows (an upper
    bound is enough: it only steers join order, broadcasts and empty-input shortcuts)."""

    df: Any
    count: int


def col_names(arity: int) -> list[str]:
    """Internal column names of a relation of ``arity``."""
    return [f"c{i}" for i in range(arity)]


class CompiledRule:
    """A rule, checked for what the Spark backend supports, ready to build per variant."""

    def __init__(self, rule: Rule, relations: Mapping[str, Relation]) -> None:
        self.rule = rule
        self.relations = relations
        self.atoms = [lit for lit in rule.body if isinstance(lit, Atom)]
        self.filters = [lit for lit in rule.body if not isinstance(lit, Atom)]
        self.plan = RulePlan(rule)  # gpu_engine.rule_plan: the steps build() walks
        self.types: dict[str, ColumnType] = {}
        for a in self.atoms:
            for t, typ in zip(a.args, relations[a.relation].types):
                if isinstance(t, Var):
                    self.types.setdefault(t.name, typ)
                elif not isinstance(t, Const):
                    raise ProgramError("functor argument in a body atom was not normalised",
                                       a.loc)
        for f in self.filters:
            if isinstance(f, Negation):
                for t, typ in zip(f.atom.args, relations[f.atom.relation].types):
                    if isinstance(t, Var):
                        self.types.setdefault(t.name, typ)
        for f in self.filters:  # bindings x = expr
            if isinstance(f, Compare) and f.op == "=":
                for side in (f.left, f.right):
                    if isinstance(side, Var):
                        self.types.setdefault(side.name, f.type)
        self.names = {v: f"v{i}" for i, v in enumerate(sorted(self.types))}
        self.expr = SparkExpr(self.types)
        where = f"rule {rule}"
        for f in self.filters:
            if isinstance(f, Compare) and f.op not in _CMP_OPS:
                raise ProgramError(f"the Spark backend does not support '{f.op}' ({where})",
                                   rule.loc)
            if isinstance(f, Compare):
                check_term(f.left, self.types, where)
                check_term(f.right, self.types, where)
            else:
                for t in f.atom.args:
                    check_term(t, self.types, where)
        for t in rule.head.args:
            check_term(t, self.types, where)
            if isinstance(t, Var) and t.name not in self.types:
                raise ProgramError(f"head variable {t.name} is not bound", rule.loc)

    # --- building ----------------------------------------------------------------------

    def build(self, spark: Any, sources: list[Source], negated: Mapping[str, Source],
              first: int | None, broadcast_rows: int) -> Any | None:
        """Head rows (columns ``c0..``, with duplicates) of the rule with positive atom
        ``i`` reading ``sources[i]``; ``first`` (the delta) is scanned first.  None when
        an input is empty.  The steps are those of the rule's compiled plan
        (:mod:`gpu_engine.rule_plan`, shared with the local evaluator): the order is
        chosen here, what each step joins on, keeps and filters is the plan's."""
        if any(s.count == 0 for s in sources):
            return None
        node = self.plan.root(frozenset())
        df = None
        if node.filters or not node.atoms:  # literals with no variable to wait for
            df = spark.range(1).select()
            df = self._filters(df, node, negated, broadcast_rows)
        while node.atoms:
            k = self._choose(node, sources, first if df is None else None)
            step = node.step(k)
            right = self._atom_frame(self.atoms[k], sources[k].df,
                                     {*step.key_vars, *(v for v, _ in step.keep_new)})
            if df is None:
                df = right
            else:
                if sources[k].count <= broadcast_rows:
                    right = sa.broadcast(right)
                common = sorted({self.names[v] for v in step.key_vars})
                df = df.join(right, on=common, how="inner") if common else df.crossJoin(right)
            keep = (*step.keep_old, *(v for v, _ in step.keep_new))
            if set(df.columns) != {self.names[v] for v in keep}:
                df = df.select(*[self.names[v] for v in keep])
            node = step.then
            df = self._filters(df, node, negated, broadcast_rows)
        if node.pending:
            lit = self.plan.filters[node.pending[0]][0]
            raise ProgramError(f"cannot evaluate {lit}: unbound variables", self.rule.loc)
        return self._head(df)

    def _choose(self, node: Node, sources: list[Source], first: int | None) -> int:
        """The delta first (when nothing is joined yet), then connected atoms, smallest
        first (the local evaluator's order)."""
        if first is not None and first in node.atoms:
            return first
        return min(zip(node.atoms, node.connected),
                   key=lambda kc: (0 if kc[1] else 1, sources[kc[0]].count))[0]

    def _filters(self, df: Any, node: Node, negated: Mapping[str, Source],
                 broadcast_rows: int) -> Any:
        """``df`` through the filters that become ready at ``node``, in the plan's order."""
        bound = set(node.bound)
        for f in node.filters:
            if f.var is not None:
                bound.discard(f.var)
        for f in node.filters:
            if f.kind == "test":
                df = df.filter(self.expr.compare(f.lit, self._cols(bound)))
            elif f.kind == "bind":
                val, ok = self.expr.term(f.term, self._cols(bound))
                df = df.withColumn(self.names[f.var], val.cast(SPARK_TYPES[self.types[f.var]]))
                if ok is not None:
                    df = df.filter(ok)
                bound.add(f.var)
            elif f.kind == "neg":
                df = self._anti(df, f.lit.atom, bound, negated[f.lit.atom.relation],
                                broadcast_rows)
            else:  # range: refused when compiled (check_term)
                raise ProgramError("the Spark backend does not support range", self.rule.loc)
        return df

    def _atom_frame(self, atom: Atom, df: Any, needed: set[str]) -> Any:
        """The atom's rows as columns named after its (needed) variables."""
        from pyspark.sql import functions as F

        conds, first_pos = [], {}
        for p, t in enumerate(atom.args):
            if isinstance(t, Const):
                conds.append(F.col(f"c{p}") == const_column(t))
            elif t.name in first_pos:
                conds.append(F.col(f"c{p}") == F.col(f"c{first_pos[t.name]}"))
            else:
                first_pos[t.name] = p
        if conds:
            df = df.filter(reduce(lambda a, b: a & b, conds))
        cols = [F.col(f"c{p}").alias(self.names[v]) for v, p in first_pos.items() if v in needed]
        if not cols:  # an existence test: one row is enough
            return df.select().limit(1)
        return df.select(*cols)

    def _cols(self, bound: set[str]) -> dict[str, Any]:
        from pyspark.sql import functions as F

        return {v: F.col(self.names[v]) for v in bound}

    def _anti(self, df: Any, atom: Atom, bound: set[str], neg: Source,
              broadcast_rows: int) -> Any:
        """Rows of ``df`` for which the existentially closed ``atom`` does not hold."""
        from pyspark.sql import functions as F

        if neg.count == 0:
            return df
        ndf = neg.df
        conds, keys, tmp, anon = [], [], [], {}
        for p, t in enumerate(atom.args):
            c = F.col(f"c{p}")
            if isinstance(t, Const):
                conds.append(c == const_column(t))
            elif isinstance(t, Var) and t.name in bound:
                if t.name in anon:  # repeated: equal columns on the negated side
                    conds.append(c == F.col(f"c{anon[t.name]}"))
                else:
                    anon[t.name] = p
                    keys.append(c.alias(self.names[t.name]))
            elif isinstance(t, Var):
                if t.name in anon:
                    conds.append(c == F.col(f"c{anon[t.name]}"))
                else:
                    anon[t.name] = p
            else:  # a functor: its value is the key; an invalid value matches nothing
                name = f"n{len(tmp)}"
                val, ok = self.expr.term(t, self._cols(bound))
                df = df.withColumn(name, val if ok is None else F.when(ok, val))
                tmp.append(name)
                keys.append(c.alias(name))
        if conds:
            ndf = ndf.filter(reduce(lambda a, b: a & b, conds))
        if not keys:
            return df.join(ndf.select().limit(1), how="left_anti")
        ndf = ndf.select(*keys)
        if neg.count <= broadcast_rows:
            ndf = sa.broadcast(ndf)
        df = df.join(ndf, on=list(ndf.columns), how="left_anti")
        return df.drop(*tmp) if tmp else df

    def _head(self, df: Any) -> Any:
        head = self.rule.head
        rel = self.relations[head.relation]
        cols, valid = [], None
        env = self._cols(set(self.types))
        for i, (t, typ) in enumerate(zip(head.args, rel.types)):
            val, ok = self.expr.term(t, env)
            cols.append(val.cast(SPARK_TYPES[typ]).alias(f"c{i}"))
            if ok is not None:
                valid = ok if valid is None else valid & ok
        if valid is not None:
            df = df.filter(valid)
        return df.select(*cols)


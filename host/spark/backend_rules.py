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

from gpu_engine.expr import term_vars
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
        an input is empty."""
        if any(s.count == 0 for s in sources):
            return None
        pending = list(range(len(self.atoms)))
        filters = list(self.filters)
        bound: set[str] = set()
        df = None
        if not pending:
            df = spark.range(1).select()
        while pending:
            k = self._choose(pending, sources, bound, first if df is None else None)
            pending.remove(k)
            atom = self.atoms[k]
            needed = self._needed(pending, filters)
            right = self._atom_frame(atom, sources[k].df, needed | bound)
            avars = {v for v in self._vars(atom) if v in needed | bound}
            if df is None:
                df = right
            else:
                if sources[k].count <= broadcast_rows:
                    right = sa.broadcast(right)
                common = sorted(self.names[v] for v in bound & avars)
                df = df.join(right, on=common, how="inner") if common else df.crossJoin(right)
            bound |= avars
            df, filters = self._apply_ready(df, bound, filters, negated, broadcast_rows)
            keep = self._needed(pending, filters)
            if bound - keep:
                bound &= keep
                df = df.select(*[self.names[v] for v in sorted(bound)])
        df, filters = self._apply_ready(df, bound, filters, negated, broadcast_rows)
        if filters:
            raise ProgramError(f"cannot evaluate {filters[0]}: unbound variables", self.rule.loc)
        return self._head(df)

    def _vars(self, atom: Atom) -> set[str]:
        return {t.name for t in atom.args if isinstance(t, Var)}

    def _needed(self, pending: list[int], filters: list[Any]) -> set[str]:
        out: set[str] = set()
        for k in pending:
            out |= self._vars(self.atoms[k])
        for f in filters:
            if isinstance(f, Compare):
                out |= term_vars(f.left) | term_vars(f.right)
            else:
                for t in f.atom.args:
                    out |= term_vars(t)
        for t in self.rule.head.args:
            out |= term_vars(t)
        return out

    def _choose(self, pending: list[int], sources: list[Source], bound: set[str],
                first: int | None) -> int:
        if first is not None and first in pending:
            return first

        def score(k: int) -> tuple[int, int]:
            vs = self._vars(self.atoms[k])
            connected = not bound or not vs or bool(vs & bound)
            return (0 if connected else 1, sources[k].count)

        return min(pending, key=score)

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

    def _apply_ready(self, df: Any, bound: set[str], filters: list[Any],
                     negated: Mapping[str, Source], broadcast_rows: int) -> tuple[Any, list]:
        changed = True
        while changed and filters:
            changed = False
            pending = []
            for f in filters:
                done, df = self._try(f, df, bound, negated, broadcast_rows)
                changed |= done
                if not done:
                    pending.append(f)
            filters = pending
        return df, filters

    def _try(self, f: Any, df: Any, bound: set[str], negated: Mapping[str, Source],
             broadcast_rows: int) -> tuple[bool, Any]:
        if isinstance(f, Compare):
            lv, rv = term_vars(f.left), term_vars(f.right)
            if lv <= bound and rv <= bound:
                return True, df.filter(self.expr.compare(f, self._cols(bound)))
            if f.op == "=":
                for var, other, ov in ((f.left, f.right, rv), (f.right, f.left, lv)):
                    if isinstance(var, Var) and var.name not in bound and ov <= bound:
                        val, ok = self.expr.term(other, self._cols(bound))
                        df = df.withColumn(self.names[var.name],
                                           val.cast(SPARK_TYPES[self.types[var.name]]))
                        if ok is not None:
                            df = df.filter(ok)
                        bound.add(var.name)
                        return True, df
            return False, df
        atom = f.atom
        named = {v for t in atom.args for v in term_vars(t) if not v.startswith("_")}
        if not named <= bound:
            return False, df
        return True, self._anti(df, atom, bound, negated[atom.relation], broadcast_rows)

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


"""Versions of a relation during an update, as views over stored runs (no copies).

Maintenance evaluates rules over versions such as ``I \\ (D \\ A)``, ``I ∪ A`` and
``(I \\ D) ∪ A`` (paper 000, Algorithms 1-3).  Copying the relation for each of them
would cost O(|I|) per round, so a :class:`View` keeps the stored runs and lists what to
add and what to hide:

* ``include``: disjoint runs (the old relation's runs plus runs of new facts);
* ``exclude``: disjoint row sets, each a subset of the included rows.

A fact is in the view iff it is in an included relation (a run of it, not under one of
its tombstones, see ``runs.RunSet``) and in no excluded set.  Joins read
the included runs and drop matches that fall into an excluded set; existential
membership tests (negation) count matches in the included runs and subtract the counts
in the excluded sets, which is exact because each excluded set is a subset of the
included rows and the excluded sets are disjoint.
"""

from __future__ import annotations

from dataclasses import dataclass

from .rowset import RowSet
from .runs import RunSet


@dataclass(frozen=True)
class View:
    arity: int
    include: tuple[RunSet, ...]
    exclude: tuple[RunSet, ...] = ()

    @staticmethod
    def of(rs: RunSet) -> View:
        return View(rs.arity, (rs,))

    @property
    def runs(self) -> tuple[RowSet, ...]:
        return tuple(r for inc in self.include for r in inc.runs)

    @property
    def parts(self) -> tuple[tuple[RowSet, tuple[RowSet, ...]], ...]:
        """Each included run with the tombstone sets of its relation (a tombstone hides a
        row of its own relation's runs only: a fact deleted from ``I`` and added back in
        ``A`` is hidden in ``I``'s run and visible in ``A``'s)."""
        return tuple((r, inc.dead) for inc in self.include for r in inc.runs)

    @property
    def excluded_runs(self) -> tuple[RowSet, ...]:
        return tuple(r for ex in self.exclude for r in ex.runs)

    def __len__(self) -> int:
        return sum(len(i) for i in self.include) - sum(len(e) for e in self.exclude)

    def plus(self, extra: RunSet) -> View:
        """This view with the rows of ``extra`` (none of them visible in it) added.

        A row the view hides by an exclude set (a fact deleted, then derived again) is made
        visible by taking it out of that set, not by including it a second time: included
        runs stay disjoint and each exclude set a subset of them.  The other rows are
        included as a new run."""
        if len(extra) == 0:
            return self
        excluded = [ex for ex in self.exclude if len(ex)]
        if not excluded:
            return View(self.arity, (*self.include, extra), self.exclude)
        if self.arity == 0:  # the one nullary row: hidden by an exclude set, so included
            return View(self.arity, self.include, ())
        rows = extra.compact()
        hidden = excluded[0].has(rows)
        for ex in excluded[1:]:
            hidden |= ex.has(rows)
        if not bool(hidden.any()):
            return View(self.arity, (*self.include, extra), self.exclude)
        back = rows.select(hidden)
        kept = (ex.compact().minus(back) for ex in excluded)
        exclude = tuple(RunSet.of(k) for k in kept if len(k))
        rest = rows.select(~hidden)
        include = (*self.include, RunSet.of(rest)) if len(rest) else self.include
        return View(self.arity, include, exclude)

    def minus(self, rows: RunSet) -> View:
        """This view without ``rows`` (a subset of it, disjoint from what is excluded)."""
        if len(rows) == 0:
            return self
        return View(self.arity, self.include, (*self.exclude, rows))

"""``explain``: why a fact holds, as a proof tree (text or JSON), over a reasoner's
materialisation (the search itself is ``gpu_engine.explain``)."""

from __future__ import annotations

import csv
import json
import re
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpu_engine.explain import Explainer, ProofNode
from gpu_engine.ir import Location, ProgramError, Relation
from gpu_engine.values import encode_scalar

from .io import decode_column

_FACT = re.compile(r"\s*([A-Za-z_?][A-Za-z0-9_?.]*)\s*\((.*)\)\s*\.?\s*$", re.S)
WHERE = "<fact>"


@dataclass
class Proof:
    """A proof tree with decoded values: ``kind`` is ``explicit`` (a given fact),
    ``derived`` (by ``rule``, from ``children``) or ``see above`` (a fact proved earlier
    in the same tree)."""

    fact: str
    kind: str
    height: int
    rule: str | None = None
    location: str | None = None
    children: list[Proof] = field(default_factory=list)
    # with an equality relation: the equality axiom of the step (reflexivity, symmetry,
    # transitivity, replacement), None for a rule of the program
    axiom: str | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"fact": self.fact, "kind": self.kind, "height": self.height}
        if self.rule is not None:
            out["rule"] = self.rule
            out["location"] = self.location
            if self.axiom is not None:
                out["axiom"] = self.axiom
            out["children"] = [c.to_dict() for c in self.children]
        return out

    def text(self) -> str:
        """An indented tree, one fact per line."""
        lines: list[str] = []

        def walk(p: Proof, depth: int) -> None:
            pad = "  " * depth
            if p.kind == "derived" and p.axiom is not None:
                lines.append(f"{pad}{p.fact}    [height {p.height}; equality axiom "
                             f"({p.axiom}): {p.rule}]")
            elif p.kind == "derived":
                lines.append(f"{pad}{p.fact}    [height {p.height}; rule at {p.location}: "
                             f"{p.rule}]")
            else:
                lines.append(f"{pad}{p.fact}    [{p.kind}]")
            for c in p.children:
                walk(c, depth + 1)

        walk(self, 0)
        return "\n".join(lines)


def parse_fact(text: str, relations: dict[str, Relation]) -> tuple[str, list[Any]]:
    """``rel(v1, v2, ...)`` as a relation name and Python values of its attribute types;
    errors carry ``<fact>:1:col``."""
    m = _FACT.match(text)
    if m is None:
        raise ProgramError("expected a fact such as path(1, 5) or name(\"text\")",
                           Location(WHERE, 1, 1))
    name, inner = m.group(1), m.group(2)
    rel = relations.get(name)
    if rel is None:
        raise ProgramError(f"unknown relation '{name}'", Location(WHERE, 1, m.start(1) + 1))
    col = m.start(2) + 1
    try:
        fields = next(csv.reader([inner], skipinitialspace=True, quotechar='"',
                                 escapechar="\\")) if inner.strip() else []
    except csv.Error as exc:  # e.g. a line break inside the values
        raise ProgramError(f"cannot read the values of {name}: {exc}",
                           Location(WHERE, 1, col)) from None
    if len(fields) != rel.arity:
        raise ProgramError(f"{name} has {rel.arity} attributes, the fact gives {len(fields)}",
                           Location(WHERE, 1, col))
    values: list[Any] = []
    for v, (attr, typ) in zip(fields, rel.attributes):
        v = v.strip()
        try:
            if typ == "symbol":
                values.append(v)
            elif typ == "float":
                values.append(float(v))
            else:
                values.append(int(v, 0))
        except ValueError:
            raise ProgramError(f"{name}.{attr}: {v!r} is not a {typ}",
                               Location(WHERE, 1, col)) from None
    return name, values


def explain(reasoner: Any, text: str) -> Proof | None:
    """The proof of minimal height of the fact ``text`` in ``reasoner``'s materialisation,
    or ``None`` when it does not hold."""
    relations = reasoner.program.relations
    name, values = parse_fact(text, relations)
    rel = relations[name]
    row: list[int] = []
    for v, (_, typ) in zip(values, rel.attributes):
        if typ == "symbol":
            sid = reasoner.symbols.find(v)
            if sid is None:  # a symbol never seen cannot occur in a fact that holds
                return None
            row.append(int(sid))
        else:
            row.append(encode_scalar(v, typ, getattr(reasoner, "word_size", 32)))
    reasoner._ensure()
    if reasoner.program.equality is not None:  # proofs with the equality axioms
        from gpu_engine.equality_explain import explain as explain_eq

        node, view = explain_eq(reasoner.engine, name, tuple(row))
        return None if node is None else _decoded(node, relations, reasoner.symbols,
                                                  view.axiom)
    node = Explainer(reasoner.engine).explain(name, tuple(row))
    return None if node is None else _decoded(node, relations, reasoner.symbols)


def _render(relation: Relation, row: tuple[int, ...], symbols: Any) -> str:
    parts = []
    for v, (_, typ) in zip(row, relation.attributes):
        value = decode_column(np.asarray([v], dtype=np.int64), typ, symbols)[0].as_py()
        parts.append(json.dumps(value) if typ == "symbol" else repr(value))
    return f"{relation.name}({', '.join(parts)})"


def _decoded(node: ProofNode, relations: dict[str, Relation], symbols: Any,
             axiom: Any = None) -> Proof:
    fact = _render(relations[node.relation], node.row, symbols)
    if node.rule is None:
        kind = "see above" if node.repeated else "explicit"
        return Proof(fact, kind, node.height)
    return Proof(fact, "derived", node.height, str(node.rule), str(node.rule.loc),
                 [_decoded(c, relations, symbols, axiom) for c in node.children],
                 axiom(node.rule) if axiom is not None else None)

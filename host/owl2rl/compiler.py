"""OWL 2 RL compiled against one ontology: per-class and per-property rules over vertically
partitioned relations (the default of ``--rules owl2rl``).

The generic rule set (``owl2rl-core.dl``) reads one relation ``triple(s, p, o)``; every rule
joins on the predicate column, so the planner cannot index by predicate and LUBM(50) runs
out of memory. Here the T-box is read once and the rules are instantiated with it:

1. **Split** the input triples: the *schema* part holds the triples whose predicate is
   schema vocabulary (``rdfs:subClassOf``, ``owl:onProperty``, ``rdf:first``, ... every
   predicate the rules read except ``rdf:type``, ``owl:sameAs`` and ``owl:differentFrom``)
   and the ``rdf:type`` triples whose class is OWL meta vocabulary (``owl:Class``,
   ``owl:TransitiveProperty``, ...); the rest is the *data*.
2. **Close the schema** under the generic rule set (``owl2rl-eq``, which includes the
   table 9 ``scm-*`` rules and the list helpers): a small run over the schema alone.
3. **Compile**: each data rule of tables 4-7 is instantiated with the closed schema's
   bindings (``cax-sco`` becomes ``C2(x) :- C1(x).`` for every ``C1 ⊑ C2``, ``cls-svf1``
   becomes ``X(u) :- P(u, v), Y(v).``, ``prp-spo2`` one rule per chain, lists unrolled),
   over one unary relation per class and one binary relation per property that the schema
   mentions in a class or property position. Data triples with any other predicate or
   class go to the relation ``other`` untouched (no rule but eq-ref reads them).
   ``owl:sameAs`` stays an ``equality`` relation (rewriting). ``triple`` is the union of
   every relation mapped back to triples (plus eq-ref), so the output is the generic one's.

Exactness: the compiled program's ``triple`` and ``inconsistency`` equal the generic
``owl2rl-eq`` ones whenever (a) no schema vocabulary stands in a class or property position
of the closed schema (then no data rule can derive a schema triple, and the schema rules
never read data), (b) every list that an axiom names is well formed (one ``rdf:first`` and
one ``rdf:rest`` per cell, ending in ``rdf:nil``, no cycle), (c) the schema alone derives no
``owl:sameAs`` between different terms, and (d) after materialisation, no class of equal
terms contains a schema term (a class, property, list cell or vocabulary IRI: rewriting
would merge a predicate or a class name, which the partitioning has turned into a relation
name). (a)-(c) are checked before compiling, (d) after; when one fails, :func:`prepare`
falls back to the generic rule set and says why (:attr:`Compiled.fallback`).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from gpu_engine.host.reasoner import Reasoner

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
OWL = "http://www.w3.org/2002/07/owl#"
XSD = "http://www.w3.org/2001/XMLSchema#"


def _r(local: str) -> str:
    return f"<{RDF}{local}>"


def _rs(local: str) -> str:
    return f"<{RDFS}{local}>"


def _o(local: str) -> str:
    return f"<{OWL}{local}>"


TYPE, FIRST, REST, NIL = _r("type"), _r("first"), _r("rest"), _r("nil")
SAME_AS, DIFFERENT_FROM = _o("sameAs"), _o("differentFrom")
THING, NOTHING = _o("Thing"), _o("Nothing")
SUB_CLASS, SUB_PROP, DOMAIN, RANGE = (_rs("subClassOf"), _rs("subPropertyOf"), _rs("domain"),
                                      _rs("range"))
ZERO = f'"0"^^<{XSD}nonNegativeInteger>'
ONE = f'"1"^^<{XSD}nonNegativeInteger>'

# predicates the rules read (in their bodies) other than rdf:type, owl:sameAs and
# owl:differentFrom: the schema vocabulary
SCHEMA_PREDICATES = frozenset([SUB_CLASS, SUB_PROP, DOMAIN, RANGE, FIRST, REST] + [_o(n) for n in (
    "equivalentClass", "equivalentProperty", "inverseOf", "onProperty", "someValuesFrom",
    "allValuesFrom", "hasValue", "intersectionOf", "unionOf", "oneOf", "propertyChainAxiom",
    "hasKey", "disjointWith", "complementOf", "propertyDisjointWith", "members",
    "distinctMembers", "maxCardinality", "maxQualifiedCardinality", "onClass",
    "sourceIndividual", "assertionProperty", "targetIndividual", "targetValue")])
# classes of rdf:type triples the rules read or derive as schema
META_CLASSES = frozenset(_o(n) for n in (
    "Class", "ObjectProperty", "DatatypeProperty", "FunctionalProperty",
    "InverseFunctionalProperty", "IrreflexiveProperty", "SymmetricProperty",
    "AsymmetricProperty", "TransitiveProperty", "AllDifferent", "AllDisjointClasses",
    "AllDisjointProperties", "AnnotationProperty"))
# what may not stand where a class or a property is named (condition (a))
VOCABULARY = SCHEMA_PREDICATES | META_CLASSES | {TYPE, SAME_AS}


@dataclass
class Compiled:
    """The outcome of :func:`compile_owl2rl`: a program and how to load the data into it,
    or the reason to fall back to the generic rule set (``fallback``)."""

    program: str = ""
    fallback: str | None = None
    classes: dict[str, str] = field(default_factory=dict)  # IRI -> relation name
    properties: dict[str, str] = field(default_factory=dict)
    schema_terms: frozenset[str] = frozenset()
    schema: pa.Table | None = None  # the closed schema's schema-shaped triples
    data: pa.Table | None = None  # the data triples (and data-shaped schema consequences)
    schema_inconsistency: pa.Table | None = None
    rules: int = 0
    seconds: dict[str, float] = field(default_factory=dict)


def _q(term: str) -> str:
    """A Datalog string constant for a term."""
    return '"' + term.replace("\\", "\\\\").replace('"', '\\"') + '"'


def split(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(schema triples, data triples) of a ``(s, p, o)`` table of term strings."""
    p = table.column(1)
    o = table.column(2)
    schema = pc.or_(pc.is_in(p, value_set=pa.array(sorted(SCHEMA_PREDICATES), pa.string())),
                    pc.and_(pc.equal(p, TYPE),
                            pc.is_in(o, value_set=pa.array(sorted(META_CLASSES), pa.string()))))
    schema = pc.fill_null(schema, False)
    return table.filter(schema), table.filter(pc.invert(schema))


class _Schema:
    """The closed schema as Python sets (it is small): lookups by predicate."""

    def __init__(self, triples: Iterable[tuple[str, str, str]]) -> None:
        self.by_p: dict[str, set[tuple[str, str]]] = defaultdict(set)
        self.out: dict[tuple[str, str], set[str]] = defaultdict(set)
        self.terms: set[str] = set()
        for s, p, o in triples:
            self.by_p[p].add((s, o))
            self.out[(s, p)].add(o)
            self.terms.update((s, p, o))

    def pairs(self, p: str) -> list[tuple[str, str]]:
        return sorted(self.by_p.get(p, ()))

    def objects(self, s: str, p: str) -> list[str]:
        return sorted(self.out.get((s, p), ()))

    def typed(self, cls: str) -> list[str]:
        return sorted(s for s, o in self.by_p.get(TYPE, ()) if o == cls)

    def items(self, head: str) -> list[str] | None:
        """The members of the list at ``head``; ``None`` when it is not well formed."""
        out: list[str] = []
        seen: set[str] = set()
        cell = head
        while cell != NIL:
            if cell in seen:
                return None
            seen.add(cell)
            firsts, rests = self.objects(cell, FIRST), self.objects(cell, REST)
            if len(firsts) != 1 or len(rests) != 1:
                return None
            out.append(firsts[0])
            cell = rests[0]
        return out


class _Program:
    """Rules being generated: relation names for classes and properties."""

    def __init__(self) -> None:
        self.classes: dict[str, str] = {}
        self.properties: dict[str, str] = {}
        self.rules: list[str] = []

    def c(self, term: str) -> str:
        if term not in self.classes:
            self.classes[term] = f"c{len(self.classes)}"
        return self.classes[term]

    def p(self, term: str) -> str:
        if term not in self.properties:
            self.properties[term] = f"p{len(self.properties)}"
        return self.properties[term]

    def add(self, head: str, *body: str) -> None:
        self.rules.append(f"{head} :- {', '.join(body)}." if body else f"{head}.")


def _positions(s: _Schema) -> tuple[set[str], set[str], str | None]:
    """(class terms, property terms, why the schema cannot be compiled or ``None``)."""
    classes: set[str] = {THING, NOTHING}
    props: set[str] = {DIFFERENT_FROM}
    lists: list[tuple[str, str]] = []  # (axiom, head)
    for p in (SUB_CLASS, _o("equivalentClass"), _o("disjointWith"), _o("complementOf")):
        for a, b in s.pairs(p):
            classes.update((a, b))
    for p in (SUB_PROP, _o("equivalentProperty"), _o("inverseOf"), _o("propertyDisjointWith")):
        for a, b in s.pairs(p):
            props.update((a, b))
    for p in (DOMAIN, RANGE):
        for a, b in s.pairs(p):
            props.add(a)
            classes.add(b)
    for p in (_o("someValuesFrom"), _o("allValuesFrom"), _o("onClass")):
        for a, b in s.pairs(p):
            classes.update((a, b))
    for p in (_o("hasValue"), _o("maxCardinality"), _o("maxQualifiedCardinality")):
        for a, _ in s.pairs(p):
            classes.add(a)
    for p in (_o("onProperty"), _o("assertionProperty")):
        for _, b in s.pairs(p):
            props.add(b)
    for meta in ("FunctionalProperty", "InverseFunctionalProperty", "IrreflexiveProperty",
                 "SymmetricProperty", "AsymmetricProperty", "TransitiveProperty"):
        props.update(s.typed(_o(meta)))
    for p, kind in ((_o("intersectionOf"), "c"), (_o("unionOf"), "c"), (_o("oneOf"), None),
                    (_o("propertyChainAxiom"), "p"), (_o("hasKey"), "p"),
                    (_o("members"), "?"), (_o("distinctMembers"), None)):
        for a, h in s.pairs(p):
            lists.append((p, h))
            if p in (_o("intersectionOf"), _o("unionOf"), _o("oneOf"), _o("hasKey")):
                classes.add(a)
            if p == _o("propertyChainAxiom"):
                props.add(a)
            items = s.items(h)
            if items is None:
                return classes, props, f"the list {h} of an {p} axiom is not well formed"
            if kind == "c":
                classes.update(items)
            elif kind == "p":
                props.update(items)
            elif kind == "?":  # members: of AllDisjointClasses or AllDisjointProperties
                types = set(s.objects(a, TYPE))
                if _o("AllDisjointClasses") in types:
                    classes.update(items)
                if _o("AllDisjointProperties") in types:
                    props.update(items)
    bad = sorted((classes | props) & VOCABULARY)
    if bad:
        return classes, props, f"schema vocabulary {bad[0]} is used as a class or property"
    return classes, props, None


def _rules(s: _Schema, g: _Program) -> None:
    """The data rules of tables 4-7 instantiated with the closed schema ``s``."""
    c, p, add = g.c, g.p, g.add
    inc = "inconsistency"
    # table 7: cax-sco (cax-eqc1/2 are in it: scm-eqc1/2 closed the schema); cax-dw; cax-adc
    for a, b in s.pairs(SUB_CLASS):
        if a != b:
            add(f"{c(b)}(x)", f"{c(a)}(x)")
    for a, b in s.pairs(_o("disjointWith")):
        add(f'{inc}("cax-dw", x, {_q(a)})', f"{c(a)}(x)", f"{c(b)}(x)")
    for x in s.typed(_o("AllDisjointClasses")):
        for h in s.objects(x, _o("members")):
            items = s.items(h) or []
            for i, a in enumerate(items):
                for b in items[i + 1:]:
                    add(f'{inc}("cax-adc", z, {_q(a)})', f"{c(a)}(z)", f"{c(b)}(z)")
    # table 5
    for a, b in s.pairs(DOMAIN):
        add(f"{c(b)}(x)", f"{p(a)}(x, _)")
    for a, b in s.pairs(RANGE):
        add(f"{c(b)}(y)", f"{p(a)}(_, y)")
    for q in s.typed(_o("FunctionalProperty")):
        add("sameAs(y1, y2)", f"{p(q)}(x, y1)", f"{p(q)}(x, y2)")
    for q in s.typed(_o("InverseFunctionalProperty")):
        add("sameAs(x1, x2)", f"{p(q)}(x1, y)", f"{p(q)}(x2, y)")
    for q in s.typed(_o("IrreflexiveProperty")):
        add(f'{inc}("prp-irp", x, {_q(q)})', f"{p(q)}(x, x)")
    for q in s.typed(_o("SymmetricProperty")):
        add(f"{p(q)}(y, x)", f"{p(q)}(x, y)")
    for q in s.typed(_o("AsymmetricProperty")):
        add(f'{inc}("prp-asyp", x, y)', f"{p(q)}(x, y)", f"{p(q)}(y, x)")
    for q in s.typed(_o("TransitiveProperty")):
        add(f"{p(q)}(x, z)", f"{p(q)}(x, y)", f"{p(q)}(y, z)")
    for a, b in s.pairs(SUB_PROP):  # prp-spo1 (prp-eqp1/2 are in it: scm-eqp1/2)
        if a != b:
            add(f"{p(b)}(x, y)", f"{p(a)}(x, y)")
    for q, h in s.pairs(_o("propertyChainAxiom")):  # prp-spo2, the list unrolled
        items = s.items(h) or []
        if items:
            vs = [f"x{i}" for i in range(len(items) + 1)]
            add(f"{p(q)}(x0, {vs[-1]})",
                *(f"{p(it)}({vs[i]}, {vs[i + 1]})" for i, it in enumerate(items)))
    for a, b in s.pairs(_o("propertyDisjointWith")):
        add(f'{inc}("prp-pdw", x, y)', f"{p(a)}(x, y)", f"{p(b)}(x, y)")
    for x in s.typed(_o("AllDisjointProperties")):
        for h in s.objects(x, _o("members")):
            items = s.items(h) or []
            for i, a in enumerate(items):
                for b in items[i + 1:]:
                    add(f'{inc}("prp-adp", u, v)', f"{p(a)}(u, v)", f"{p(b)}(u, v)")
    for a, b in s.pairs(_o("inverseOf")):
        add(f"{p(b)}(y, x)", f"{p(a)}(x, y)")
        add(f"{p(a)}(y, x)", f"{p(b)}(x, y)")
    for k, h in s.pairs(_o("hasKey")):
        items = s.items(h) or []
        if items:
            body = [f"{c(k)}(x)", f"{c(k)}(y)"]
            for i, q in enumerate(items):
                body += [f"{p(q)}(x, z{i})", f"{p(q)}(y, z{i})"]
            add("sameAs(x, y)", *body)
    for x, i1 in s.pairs(_o("sourceIndividual")):
        for q in s.objects(x, _o("assertionProperty")):
            for i2 in s.objects(x, _o("targetIndividual")):
                add(f'{inc}("prp-npa1", {_q(i1)}, {_q(i2)})', f"{p(q)}({_q(i1)}, {_q(i2)})")
            for lt in s.objects(x, _o("targetValue")):
                add(f'{inc}("prp-npa2", {_q(i1)}, {_q(lt)})', f"{p(q)}({_q(i1)}, {_q(lt)})")
    # table 6
    add(f'{inc}("cls-nothing2", x, {_q(NOTHING)})', f"{c(NOTHING)}(x)")
    for k, h in s.pairs(_o("intersectionOf")):
        items = s.items(h) or []
        if items:
            add(f"{c(k)}(y)", *(f"{c(m)}(y)" for m in items))
            for m in items:
                add(f"{c(m)}(y)", f"{c(k)}(y)")
    for k, h in s.pairs(_o("unionOf")):
        for m in s.items(h) or []:
            add(f"{c(k)}(y)", f"{c(m)}(y)")
    for a, b in s.pairs(_o("complementOf")):
        add(f'{inc}("cls-com", x, {_q(a)})', f"{c(a)}(x)", f"{c(b)}(x)")
    for x, y in s.pairs(_o("someValuesFrom")):
        for q in s.objects(x, _o("onProperty")):
            add(f"{c(x)}(u)", f"{p(q)}(u, v)", f"{c(y)}(v)")
            if y == THING:
                add(f"{c(x)}(u)", f"{p(q)}(u, _)")
    for x, y in s.pairs(_o("allValuesFrom")):
        for q in s.objects(x, _o("onProperty")):
            add(f"{c(y)}(v)", f"{c(x)}(u)", f"{p(q)}(u, v)")
    for x, y in s.pairs(_o("hasValue")):
        for q in s.objects(x, _o("onProperty")):
            add(f"{p(q)}(u, {_q(y)})", f"{c(x)}(u)")
            add(f"{c(x)}(u)", f"{p(q)}(u, {_q(y)})")
    for x, n in s.pairs(_o("maxCardinality")):
        for q in s.objects(x, _o("onProperty")):
            if n == ZERO:
                add(f'{inc}("cls-maxc1", u, {_q(x)})', f"{c(x)}(u)", f"{p(q)}(u, _)")
            elif n == ONE:
                add("sameAs(y1, y2)", f"{c(x)}(u)", f"{p(q)}(u, y1)", f"{p(q)}(u, y2)")
    for x, n in s.pairs(_o("maxQualifiedCardinality")):
        if n not in (ZERO, ONE):
            continue
        for q in s.objects(x, _o("onProperty")):
            for k in s.objects(x, _o("onClass")):
                if n == ZERO:
                    add(f'{inc}("cls-maxqc1", u, {_q(x)})', f"{c(x)}(u)", f"{p(q)}(u, y)",
                        f"{c(k)}(y)")
                    if k == THING:
                        add(f'{inc}("cls-maxqc2", u, {_q(x)})', f"{c(x)}(u)",
                            f"{p(q)}(u, _)")
                else:
                    add("sameAs(y1, y2)", f"{c(x)}(u)", f"{p(q)}(u, y1)", f"{c(k)}(y1)",
                        f"{p(q)}(u, y2)", f"{c(k)}(y2)")
                    if k == THING:
                        add("sameAs(y1, y2)", f"{c(x)}(u)", f"{p(q)}(u, y1)",
                            f"{p(q)}(u, y2)")
    for k, h in s.pairs(_o("oneOf")):
        for m in s.items(h) or []:
            add(f"{c(k)}({_q(m)})")
    # table 4: eq-diff1 (rewritten rows: x owl:sameAs y and x owl:differentFrom y hold
    # together exactly when the differentFrom row reads (x, x)); eq-diff2/3: two members of an
    # AllDifferent list are equal only when they are one term (condition (d) keeps schema
    # terms out of every class of two or more)
    add(f'{inc}("eq-diff1", x, x)', f"{p(DIFFERENT_FROM)}(x, x)")
    for x in s.typed(_o("AllDifferent")):
        for which, rule in (("members", "eq-diff2"), ("distinctMembers", "eq-diff3")):
            for h in s.objects(x, _o(which)):
                items = s.items(h) or []
                for i, a in enumerate(items):
                    if a in items[i + 1:]:
                        add(f'{inc}({_q(rule)}, {_q(a)}, {_q(a)})')


HEADER = """\
// OWL 2 RL/RDF compiled against one ontology (gpu_engine.host.owl2rl.compiler): one relation
// per class (c*) and per property (p*) that the closed schema names; `other` holds the data
// triples with any other predicate; `triple` is everything mapped back to triples.
.type Node <: symbol
.decl triple(s: Node, p: Node, o: Node)
.decl other(s: Node, p: Node, o: Node)
.decl inconsistency(rule: symbol, x: Node, y: Node)
.decl sameAs(x: Node, y: Node) equality
.output triple(IO=rdf)
.output inconsistency
"""


def _text(g: _Program, closed_terms: set[str]) -> str:
    """The program: declarations, the data rules, the union back to ``triple`` and eq-ref.

    eq-ref (``t owl:sameAs t`` for every term of every triple) reads the partitions rather
    than ``triple``: ``term`` collects their subjects and objects (a unary relation, cheap
    to deduplicate), so ``triple`` is a plain union and not recursive. The closed schema is
    closed under eq-ref already; a class or property name outside it gets its term from a
    rule on its relation."""
    lines = [HEADER, ".decl term(x: Node)"]
    for term, name in g.classes.items():
        lines.append(f".decl {name}(x: Node)  // {term}")
    for term, name in g.properties.items():
        lines.append(f".decl {name}(s: Node, o: Node)  // {term}")
    lines.append("")
    lines.extend(g.rules)
    lines.append("// back to triples")
    for term, name in g.properties.items():
        lines.append(f"triple(s, {_q(term)}, o) :- {name}(s, o).")
    for term, name in g.classes.items():
        lines.append(f"triple(x, {_q(TYPE)}, {_q(term)}) :- {name}(x).")
    lines.append("triple(s, p, o) :- other(s, p, o).")
    lines.append("// eq-ref")
    for term, name in g.properties.items():
        lines.append(f"term(x) :- {name}(x, _).")
        lines.append(f"term(x) :- {name}(_, x).")
        if term not in closed_terms:
            lines.append(f"term({_q(term)}) :- {name}(_, _).")
    for term, name in g.classes.items():
        lines.append(f"term(x) :- {name}(x).")
        if term not in closed_terms:
            lines.append(f"term({_q(term)}) :- {name}(_).")
    lines.append("term(x) :- other(x, _, _).")
    lines.append("term(x) :- other(_, x, _).")
    lines.append("term(x) :- other(_, _, x).")
    lines.append(f"triple(x, {_q(SAME_AS)}, x) :- term(x).")
    return "\n".join(lines) + "\n"


def _close_schema(schema: pa.Table) -> tuple[pa.Table, pa.Table, str | None]:
    """The schema closed under the generic rule set: (triples, inconsistency rows, why the
    compiled route is not exact or ``None``)."""
    from gpu_engine.host.equality import classes_table
    from gpu_engine.host.reasoner import Reasoner

    from . import rule_set

    r = Reasoner(rule_set("owl2rl-eq"), device="cpu")
    r.add_facts("triple", schema.rename_columns(["s", "p", "o"]))
    r.materialise()
    why = None
    if classes_table(r).num_rows:
        why = "the schema alone derives owl:sameAs between different terms"
    return r.relation("triple"), r.relation("inconsistency"), why


def compile_owl2rl(table: pa.Table) -> Compiled:
    """Compile OWL 2 RL for the triples of ``table`` (columns s, p, o of term strings)."""
    t0 = time.perf_counter()
    table = pa.table({"s": table.column(0), "p": table.column(1), "o": table.column(2)})
    schema_in, data = split(table)
    closed, bad, why = _close_schema(schema_in)
    t1 = time.perf_counter()
    out = Compiled(seconds={"schema": t1 - t0})
    if why is not None:
        out.fallback = why
        return out
    closed_schema, closed_data = split(closed)  # oneOf etc. derive data from the schema alone
    rows = zip(*(closed_schema.column(i).to_pylist() for i in range(3)))
    s = _Schema(rows)
    classes, props, why = _positions(s)
    if why is not None:
        out.fallback = why
        return out
    g = _Program()
    for term in sorted(classes):
        g.c(term)
    for term in sorted(props):
        g.p(term)
    _rules(s, g)
    out.program = _text(g, s.terms)
    out.classes, out.properties = g.classes, g.properties
    out.schema_terms = frozenset(s.terms | classes | props | VOCABULARY)
    out.schema = closed_schema
    out.data = pa.concat_tables([data, closed_data.rename_columns(["s", "p", "o"])],
                                promote_options="permissive")
    out.schema_inconsistency = bad
    out.rules = len(g.rules)
    out.seconds["compile"] = time.perf_counter() - t1
    return out


def _groups(keys: pa.Array, values: Sequence[str]) -> tuple[np.ndarray, np.ndarray]:
    """Row order grouping ``keys`` by their index in ``values`` (-1: not there), and the
    group boundaries (``bounds[i]:bounds[i+1]`` are the rows of ``values[i]``)."""
    idx = pc.fill_null(pc.index_in(keys, value_set=pa.array(list(values), pa.string())), -1)
    idx_np = np.asarray(idx.to_numpy(), dtype=np.int64)
    order = np.argsort(idx_np, kind="stable")
    bounds = np.searchsorted(idx_np[order], np.arange(-1, len(values) + 1))
    return order, bounds


def load(r: Reasoner, comp: Compiled) -> int:
    """Add the data to the compiled program's relations: property rows to ``p*``, typed
    rows to ``c*``, ``owl:sameAs`` rows to ``sameAs``, the rest to ``other``; the closed
    schema to ``triple`` and its inconsistency rows. Returns the number of facts added."""
    assert comp.data is not None and comp.schema is not None
    data = comp.data.combine_chunks()
    s, p, o = (data.column(i) for i in range(3))
    is_type = pc.equal(p, TYPE)
    is_same = pc.equal(p, SAME_AS)
    props = list(comp.properties)
    classes = list(comp.classes)
    n = 0
    # property rows
    porder, pb = _groups(pc.if_else(pc.or_(is_type, is_same), pa.scalar(None, pa.string()), p),
                         props)
    for i, term in enumerate(props):
        rows = porder[pb[i + 1]:pb[i + 2]]
        if len(rows):
            n += r.add_facts(comp.properties[term],
                             pa.table({"s": s.take(rows), "o": o.take(rows)}))
    # typed rows
    corder, cb = _groups(pc.if_else(is_type, o, pa.scalar(None, pa.string())), classes)
    for i, term in enumerate(classes):
        rows = corder[cb[i + 1]:cb[i + 2]]
        if len(rows):
            n += r.add_facts(comp.classes[term], pa.table({"x": s.take(rows)}))
    # sameAs rows
    same = np.flatnonzero(np.asarray(is_same.to_numpy(), dtype=bool))
    if len(same):
        n += r.add_facts("sameAs", pa.table({"x": s.take(same), "y": o.take(same)}))
    # the rest: rows with neither a property nor a class the schema names, and the sameAs
    # rows (no rule reads the equality relation, so that the engine adds its reflexive rows
    # at the end instead of as rules; the rewritten sameAs rows in `other` expand to every
    # pair of each class)
    placed = np.zeros(len(data), dtype=bool)
    placed[porder[pb[1]:]] = True
    placed[corder[cb[1]:]] = True
    rest = np.flatnonzero(~placed)
    if len(rest):
        n += r.add_facts("other", pa.table({"s": s.take(rest), "p": p.take(rest),
                                            "o": o.take(rest)}))
    if comp.schema.num_rows:
        n += r.add_facts("triple", comp.schema.rename_columns(["s", "p", "o"]))
    if comp.schema_inconsistency is not None and comp.schema_inconsistency.num_rows:
        n += r.add_facts("inconsistency", comp.schema_inconsistency)
    return n


def merged_schema_terms(r: Reasoner, comp: Compiled) -> list[str]:
    """Schema terms in a class of two or more equal terms (condition (d))."""
    from gpu_engine.host.equality import classes_table

    members = classes_table(r).column("member")
    if len(members) == 0:
        return []
    hit = pc.is_in(members, value_set=pa.array(sorted(comp.schema_terms), pa.string()))
    return sorted(set(pc.filter(members, hit).to_pylist()))


@dataclass
class Prepared:
    """A reasoner ready to materialise OWL 2 RL over RDF files, compiled or generic."""

    reasoner: Reasoner
    compiled: Compiled | None
    note: str | None = None

    @property
    def rule_set(self) -> str:
        return "owl2rl-compiled" if self.compiled is not None else "owl2rl-eq"


Factory = Callable[[Any], "Reasoner"]


def _default_factory(device: str) -> Factory:
    from gpu_engine.host.reasoner import Reasoner

    return lambda program: Reasoner(program, device=device)


def _generic(paths: Sequence[str | Path], make: Factory, table: pa.Table | None = None
             ) -> Reasoner:
    from gpu_engine.host.rdf import read_rdf_files

    from . import rule_set

    t0 = time.perf_counter()
    r = make(rule_set("owl2rl-eq"))
    if table is None:
        table = read_rdf_files(list(paths))
    r.add_facts("triple", table.rename_columns(["s", "p", "o"]))
    r.load_seconds += time.perf_counter() - t0
    return r


def prepare(paths: Sequence[str | Path], device: str = "auto", *,
            factory: Factory | None = None) -> Prepared:
    """Read ``paths``, compile OWL 2 RL for them and load the data; falls back to the generic
    rule set (``owl2rl-eq``) when the ontology cannot be compiled exactly (``note`` says
    why). ``factory(program)`` makes the reasoner (default: ``Reasoner(program, device)``)."""
    from gpu_engine.host.rdf import read_rdf_files

    make = factory or _default_factory(device)
    t0 = time.perf_counter()
    table = read_rdf_files(list(paths))
    comp = compile_owl2rl(table)
    if comp.fallback is not None:
        return Prepared(_generic(paths, make, table), None,
                        f"OWL 2 RL not compiled ({comp.fallback}): generic rules")
    r = make(comp.program)
    load(r, comp)
    r.load_seconds += time.perf_counter() - t0
    return Prepared(r, comp)


def materialise(prep: Prepared, paths: Sequence[str | Path], device: str = "auto", *,
                factory: Factory | None = None) -> Prepared:
    """Materialise a prepared reasoner; when a class of equal terms turns out to contain a
    schema term (condition (d)), rematerialise with the generic rule set (noted)."""
    prep.reasoner.materialise()
    if prep.compiled is None:
        return prep
    merged = merged_schema_terms(prep.reasoner, prep.compiled)
    if not merged:
        return prep
    r = _generic(paths, factory or _default_factory(device))
    r.materialise()
    return Prepared(r, None, f"OWL 2 RL compiled rules set aside: owl:sameAs merges the "
                             f"schema term {merged[0]}; generic rules")


def run(paths: Sequence[str | Path], device: str = "auto", *,
        factory: Factory | None = None) -> Prepared:
    """:func:`prepare` then :func:`materialise`: OWL 2 RL over RDF files, compiled where
    exact. ``run(paths).reasoner.relation("triple")`` is the closure."""
    return materialise(prepare(paths, device, factory=factory), paths, device,
                       factory=factory)

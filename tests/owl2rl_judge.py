"""Comparing the shipped OWL 2 RL rule set with owlrl, the independent reasoner from PyPI.

Both sides are reduced to sets of canonical N-Triples term strings (owlrl's graph is
serialised by rdflib and re-read by pyoxigraph, so literals are written alike). What owlrl
derives and our rules do not, by design, is filtered with an explained rule
(:func:`explained`); everything else must be equal.
"""

from __future__ import annotations

from pathlib import Path

RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
RDFS = "http://www.w3.org/2000/01/rdf-schema#"
XSD = "http://www.w3.org/2001/XMLSchema#"
ERR = "http://www.daml.org/2002/03/agents/agent-ont#"

# the datatypes of OWL 2 RL table 8 (owlrl's XsdDatatypes.OWL_RL_Datatypes are a subset of
# these namespaces) and the vocabulary only table 8 uses
DATATYPE_TERMS = (f"<{XSD}", f"<{RDF}PlainLiteral>", f"<{RDF}XMLLiteral>", f"<{RDFS}Literal>",
                  f"<{RDF}langString>", f"<{RDF}HTML>", f"<{RDF}JSON>",
                  f"<{RDFS}Datatype>")

Triple = tuple[str, str, str]

# 4. ``reflexive-schema`` (ours only): ``c rdfs:subClassOf c``, ``c owl:equivalentClass c``
#    and the property counterparts for a class or property not declared ``owl:Class`` /
#    ``owl:ObjectProperty`` / ``owl:DatatypeProperty`` but equivalent to another one. The
#    W3C rules derive them (scm-sco with c1 = c3 from c1 ⊑ c2 ⊑ c1, then scm-eqc2; likewise
#    scm-spo and scm-eqp2); owlrl 7.6 skips c1 = c3 in scm-sco and scm-spo ("another axiom
#    already sets that", which holds only for declared classes and properties).
REFLEXIVE_SCHEMA = {f"<{RDFS}subClassOf>", "<http://www.w3.org/2002/07/owl#equivalentClass>",
                    f"<{RDFS}subPropertyOf>", "<http://www.w3.org/2002/07/owl#equivalentProperty>"}


def explained(t: Triple, error_nodes: set[str]) -> str | None:
    """Why a triple is left out of the comparison (``None``: it is compared).

    1. ``literal-subject``: generalised triples with a literal subject. owlrl keeps them in
       its rdflib graph (``"x" owl:sameAs "x"`` from eq-ref, and ``"1"^^xsd:int rdf:type
       xsd:int`` from dt-type2); RDF cannot hold them, so our writer leaves them out, and
       our relation's eq-ref ones are dropped here too.
    2. ``datatype``: a datatype IRI (XSD namespace, rdf:PlainLiteral, rdf:XMLLiteral,
       rdfs:Literal, rdfs:Datatype) as subject or object. owlrl implements part of table 8
       (dt-type1 for every OWL RL datatype, dt-type2, datatype subsumption and
       disjointness) and then eq-ref on those triples; our rule set omits table 8, whose
       rules need the value spaces of datatypes.
    3. ``owlrl-error``: owlrl reports an inconsistency as a blank node typed
       ``err:ErrorMessage`` with the message as a literal; we derive rows of the
       ``inconsistency`` relation instead (compared separately: both or neither).
    """
    s, p, o = t
    if s.startswith('"'):
        return "literal-subject"
    if s.startswith(DATATYPE_TERMS) or o.startswith(DATATYPE_TERMS):
        return "datatype"
    if s in error_nodes or p.startswith(f"<{ERR}") or o.startswith(f"<{ERR}"):
        return "owlrl-error"
    return None


def owlrl_closure(paths: list[Path]) -> tuple[set[Triple], int]:
    """owlrl's OWL 2 RL closure (no axiomatic triples) of RDF files, as canonical term
    strings, and the number of inconsistency messages it reports."""
    import owlrl
    import pyoxigraph as ox
    import rdflib

    g = rdflib.Graph()
    for p in paths:
        fmt = "nt" if ".nt" in p.suffixes else ("xml" if p.suffix == ".owl" else "turtle")
        if p.suffix == ".gz":
            import gzip

            with gzip.open(p, "rb") as f:
                g.parse(f, format=fmt)
        else:
            g.parse(p, format=fmt)
    owlrl.DeductiveClosure(owlrl.OWLRL_Semantics, axiomatic_triples=False,
                           datatype_axioms=False).expand(g)
    errors = sum(1 for _ in g.triples((None, rdflib.RDF.type,
                                       rdflib.URIRef(f"{ERR}ErrorMessage"))))
    # literal subjects cannot go through N-Triples: count them as owlrl holds them
    data = rdflib.Graph()
    lit_subjects: set[Triple] = set()
    for s, p, o in g:
        if isinstance(s, rdflib.Literal):
            lit_subjects.add((s.n3(), p.n3(), o.n3()))
        else:
            data.add((s, p, o))
    nt = data.serialize(format="nt", encoding="utf-8")
    out = {(str(t.subject), str(t.predicate), str(t.object))
           for t in ox.parse(nt, ox.RdfFormat.N_TRIPLES)}
    return out | lit_subjects, errors


def ours(paths: list[Path], variant: str, device: str = "cpu") -> tuple[set[Triple], set]:
    """Our closure of RDF files under a shipped rule set, and the inconsistency rows."""
    from gpu_engine.host.owl2rl import compiler, is_compiled, rule_set

    from gpu_engine import Reasoner

    if is_compiled(variant):  # compiled against the ontology (or its generic fallback)
        r = compiler.materialise(compiler.prepare(paths, device), paths, device).reasoner
    else:
        r = Reasoner(rule_set(variant), device=device)
        r.load_rdf(paths)
        r.materialise()
    triples = {tuple(row.values()) for row in r.relation("triple").to_pylist()}
    bad = {tuple(row.values()) for row in r.relation("inconsistency").to_pylist()}
    return triples, bad  # type: ignore[return-value]


OWL = "http://www.w3.org/2002/07/owl#"
# predicates that describe a blank node's structure (restrictions, class expressions,
# lists); no OWL 2 RL rule derives them except as copies through eq-ref's reflexive sameAs
STRUCTURAL = {f"<{RDF}first>", f"<{RDF}rest>"} | {
    f"<{OWL}{n}>" for n in ("onProperty", "someValuesFrom", "allValuesFrom", "hasValue",
                            "intersectionOf", "unionOf", "oneOf", "onClass", "complementOf",
                            "maxCardinality", "maxQualifiedCardinality", "minCardinality",
                            "cardinality", "members", "inverseOf", "distinctMembers")}


_XSD_STRING = f'"^^<{XSD}string>'


def canonical_bnodes(triples: set[Triple]) -> set[Triple]:
    """Blank nodes renamed by a hash of their structure (their outgoing structural edges,
    recursively), so that two reasoners' labels compare: rdflib and pyoxigraph each name
    the anonymous nodes of a file by random labels. ``"x"^^xsd:string`` is written ``"x"``
    (canonical N-Triples), as some peers spell it out."""
    import hashlib

    out_edges: dict[str, list[tuple[str, str]]] = {}
    for s, p, o in triples:
        if s.startswith("_:") and p in STRUCTURAL:
            out_edges.setdefault(s, []).append((p, o))
    names: dict[str, str] = {}

    def name(b: str, depth: int = 0) -> str:
        if b in names:
            return names[b]
        if depth > 50:
            return "_:cycle"
        parts = sorted(f"{p} {name(o, depth + 1) if o.startswith('_:') else o}"
                       for p, o in out_edges.get(b, []))
        names[b] = "_:h" + hashlib.sha1("|".join(parts).encode()).hexdigest()[:16]
        return names[b]

    def c(t: str) -> str:
        if t.startswith("_:"):
            return name(t)
        if t.endswith(_XSD_STRING):  # RDF 1.1: a simple literal is an xsd:string
            return t[: -len(_XSD_STRING) + 1]
        return t

    return {(c(s), c(p), c(o)) for s, p, o in triples}


def compare(mine: set[Triple], theirs: set[Triple]) -> tuple[set[Triple], set[Triple], dict]:
    """(only ours, only owlrl's, counts of the filtered triples per reason)."""
    mine, theirs = canonical_bnodes(mine), canonical_bnodes(theirs)
    error_nodes = {s for s, p, o in theirs
                   if p == f"<{RDF}type>" and o == f"<{ERR}ErrorMessage>"}
    counts: dict[str, int] = {}

    def keep(ts: set[Triple], side: str) -> set[Triple]:
        out = set()
        for t in ts:
            why = explained(t, error_nodes)
            if why is None:
                out.add(t)
            else:
                counts[f"{side}:{why}"] = counts.get(f"{side}:{why}", 0) + 1
        return out

    a, b = keep(mine, "ours"), keep(theirs, "owlrl")
    only_ours = set()
    for t in a - b:
        if t[0] == t[2] and t[1] in REFLEXIVE_SCHEMA:
            counts["ours:reflexive-schema"] = counts.get("ours:reflexive-schema", 0) + 1
        else:
            only_ours.add(t)
    return only_ours, b - a, counts

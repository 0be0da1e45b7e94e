"""The compiled OWL 2 RL rule set (``host/owl2rl/compiler.py``, the default of ``--rules
owl2rl``) against the generic one (``owl2rl-eq``, the rules over one triple relation): the
same triples and the same inconsistency rows, exactly, on the small ontologies of
``test_owl2rl.py`` (every rule table), on LUBM(1), and on ontologies the compiler must
refuse, where it falls back to the generic rules and says why."""

from __future__ import annotations

from pathlib import Path

import pytest
from gpu_engine.host.owl2rl import compiler, equality_supported, rule_set

from gpu_engine import Reasoner
from tests.test_owl2rl import INCONSISTENT, ONTOLOGIES, PREFIXES

pytestmark = pytest.mark.skipif(not equality_supported(), reason="needs the equality qualifier")

LUBM = Path(__file__).resolve().parents[1].parent / "shared" / "bench-data" / "lubm"

Rows = set[tuple[str, ...]]


def _rows(r: Reasoner, name: str) -> Rows:
    t = r.relation(name)
    return set(zip(*(t.column(i).to_pylist() for i in range(t.num_columns))))


def _generic(paths: list[Path]) -> tuple[Rows, Rows]:
    r = Reasoner(rule_set("owl2rl-eq"), device="cpu")
    r.load_rdf(paths)
    r.materialise()
    return _rows(r, "triple"), _rows(r, "inconsistency")


def _compiled(paths: list[Path]) -> tuple[compiler.Prepared, Rows, Rows]:
    prep = compiler.run(paths, "cpu")
    return prep, _rows(prep.reasoner, "triple"), _rows(prep.reasoner, "inconsistency")


def _write(tmp_path: Path, name: str, body: str) -> Path:
    path = tmp_path / f"{name}.ttl"
    path.write_text(PREFIXES + body, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(ONTOLOGIES) + sorted(INCONSISTENT))
def test_compiled_equals_generic(tmp_path: Path, name: str) -> None:
    body = ONTOLOGIES.get(name) or INCONSISTENT[name]
    path = _write(tmp_path, name, body)
    prep, triples, bad = _compiled([path])
    assert prep.compiled is not None, prep.note  # compiled, not the fallback
    assert (triples, bad) == _generic([path])
    if name in INCONSISTENT:
        assert name in {b[0] for b in bad}


MORE = {
    # rules the small ontologies leave out: cls-avf with a chain of restrictions, hasKey of
    # one property, symmetric + transitive together, AllDisjointProperties, differentFrom
    # inside a class of equal terms, a literal hasValue, oneOf deriving data from the schema
    "mixed": """
        :r a owl:Restriction ; owl:onProperty :p ; owl:allValuesFrom :B .
        :A rdfs:subClassOf :r . :B rdfs:subClassOf :r2 .
        :r2 a owl:Restriction ; owl:onProperty :q ; owl:someValuesFrom owl:Thing .
        :K owl:hasKey ( :id ) . :k1 a :K ; :id "7" . :k2 a :K ; :id "7" .
        :near a owl:SymmetricProperty , owl:TransitiveProperty .
        :m1 :near :m2 . :m2 :near :m3 .
        :d a owl:AllDisjointProperties ; owl:members ( :likes :hates ) .
        :u :likes :v . :u :hates :v .
        :e1 owl:sameAs :e2 . :e1 owl:differentFrom :e2 .
        :hv a owl:Restriction ; owl:onProperty :age ; owl:hasValue "3"^^xsd:integer .
        :kid :age "3"^^xsd:integer . :Col owl:oneOf ( :red :blue ) .
        :x a :A ; :p :y . :y :q :z . :red :p :blue .
    """,
}


@pytest.mark.parametrize("name", sorted(MORE))
def test_compiled_equals_generic_more(tmp_path: Path, name: str) -> None:
    path = _write(tmp_path, name, MORE[name])
    prep, triples, bad = _compiled([path])
    assert prep.compiled is not None, prep.note
    assert (triples, bad) == _generic([path])
    assert len(bad) >= 2  # prp-adp and eq-diff1


FALLBACK = {
    # schema vocabulary in a property position: data rules would derive schema triples
    "vocabulary": (":sub rdfs:subPropertyOf rdfs:subClassOf . :A :sub :B . :x a :A .",
                   "schema vocabulary"),
    # a list with two rdf:first
    "bad-list": (":C owl:intersectionOf :l . :l rdf:first :A , :B ; rdf:rest rdf:nil . "
                 ":x a :A , :B .", "not well formed"),
    # owl:sameAs in the data merges a class: rewriting renames a relation (checked after)
    "merged-class": (":Student rdfs:subClassOf :Person . :Pupil owl:sameAs :Student . "
                     ":x a :Pupil . :y a :Student .", "merges the schema term"),
    # a functional property merges two properties
    "merged-property": (":alias a owl:FunctionalProperty . :w :alias :knows , :meets . "
                        ":knows rdfs:domain :Person . :a :meets :b .",
                        "merges the schema term"),
}


@pytest.mark.parametrize("name", sorted(FALLBACK))
def test_falls_back_exactly(tmp_path: Path, name: str) -> None:
    body, why = FALLBACK[name]
    path = _write(tmp_path, name, body)
    prep, triples, bad = _compiled([path])
    assert prep.compiled is None and prep.note is not None and why in prep.note
    assert (triples, bad) == _generic([path])


def test_partitioning(tmp_path: Path) -> None:
    """Data the schema does not name stays in ``other``; named classes and properties get
    relations of their own."""
    path = _write(tmp_path, "part", ":A rdfs:subClassOf :B . :p rdfs:domain :A . "
                                    ":x :p :y . :x :q :z . :z a :C .")
    prep = compiler.prepare([path], "cpu")
    comp = prep.compiled
    assert comp is not None
    iri = "<http://ex.org/{}>".format
    assert {iri("A"), iri("B")} <= set(comp.classes) and iri("C") not in comp.classes
    assert iri("p") in comp.properties and iri("q") not in comp.properties
    other = _rows(prep.reasoner, "other")
    same = "<http://www.w3.org/2002/07/owl#sameAs>"
    assert {t for t in other if t[1] != same} == {(iri("x"), iri("q"), iri("z")),
                                                 (iri("z"), compiler.TYPE, iri("C"))}
    assert prep.reasoner.relation_sizes()[comp.properties[iri("p")]] == 1


def test_cli_default_is_compiled(tmp_path: Path) -> None:
    from gpu_engine.host.cli import main

    path = _write(tmp_path, "cli", ONTOLOGIES["restrictions"])
    outs = []
    for rules in ("owl2rl", "owl2rl-generic"):
        out = tmp_path / rules
        assert main(["run", "--rules", rules, "--rdf", str(path), "-D", str(out),
                     "--device", "cpu"]) == 0
        outs.append(sorted((out / "triple.nt").read_text().splitlines()))
    assert outs[0] == outs[1] and len(outs[0]) > 100


@pytest.mark.skipif(not (LUBM / "lubm1.nt.gz").exists(), reason="no LUBM data")
def test_lubm1_compiled_equals_generic() -> None:
    paths = [LUBM / "lubm1.nt.gz", LUBM / "univ-bench.owl"]
    prep, triples, bad = _compiled(paths)
    assert prep.compiled is not None, prep.note
    assert len(triples) == 194_700 and not bad
    assert (triples, bad) == _generic(paths)

"""OWL 2 RL reasoning from Python: the shipped rule set over a Turtle file.

    python examples/owl2rl/run.py [data.ttl ...]

The same from the command line:

    gpu-engine run --rules owl2rl --rdf examples/owl2rl/family.ttl -D out/

writes ``out/triple.nt`` (every triple of the closure; ``--rdf-format ttl`` for Turtle) and
``out/inconsistency.csv`` (one row per violated constraint: the rule and two witnesses).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow.compute as pc
from gpu_engine.host.owl2rl import compiler

HERE = Path(__file__).resolve().parent
RDF = "http://www.w3.org/1999/02/22-rdf-syntax-ns#"
OWL = "http://www.w3.org/2002/07/owl#"


def main(paths: list[str]) -> None:
    # compiled against the ontology of the files (the generic rules where that is not exact)
    prep = compiler.run(paths or [HERE / "family.ttl"])  # Turtle, N-Triples, TriG, .gz, ...
    r = prep.reasoner
    stats = r.stats
    assert stats is not None
    print(f"rule set {prep.rule_set}: {r.relation_sizes()['triple']:,} triples in "
          f"{stats.seconds:.3f} s on {r.device}" + (f" ({prep.note})" if prep.note else ""))
    fam = "http://example.org/family#"
    triples = r.relation("triple")                      # a pyarrow Table (s, p, o)
    s, p, o = (triples.column(i) for i in range(3))

    def matching(pred: str, obj: str | None = None, subj: str | None = None) -> list[tuple]:
        mask = pc.equal(p, pred)
        if obj is not None:
            mask = pc.and_(mask, pc.equal(o, obj))
        if subj is not None:
            mask = pc.and_(mask, pc.equal(s, subj))
        rows = triples.filter(mask)
        return list(zip(rows.column(0).to_pylist(), rows.column(2).to_pylist()))

    for x, _ in matching(f"<{RDF}type>", f"<{fam}Mother>"):
        print("Mother:", x)
    for x, y in matching(f"<{fam}hasGrandparent>"):
        print("grandparent:", x, y)
    for _, y in matching(f"<{OWL}sameAs>", subj=f"<{fam}mary>"):
        print("mary sameAs:", y)
    print("inconsistencies:", r.relation("inconsistency").num_rows)
    r.write_rdf(HERE / "closure.ttl")                   # N-Triples for a .nt name


if __name__ == "__main__":
    main(sys.argv[1:])

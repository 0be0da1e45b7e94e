"""OWL 2 RL on LUBM: gpu-engine's shipped rule set against owlrl and reasonable, and RDF load
times (one JSON line per measurement, peers side by side, ratios from the same run).

```sh
python -m benchmarks.owl2rl --sizes 1,10 --device cpu --timeout 900 \\
    --out benchmarks/results/owl2rl.jsonl
python -m benchmarks.owl2rl --load --sizes 50          # N-Triples readers on LUBM(50)
python -m benchmarks.owl2rl --sizes 1 --sameas 300 --variant owl2rl-spelled,owl2rl-eq
```

``--sameas N`` adds N aliases of one professor chained by ``owl:sameAs`` (a class of N + 1
equal terms): the spelled-out equality rules make about (N + 1)^3 derivations for eq-trans
alone, rewriting keeps one representative.

Data: ``../shared/bench-data/lubm/lubm{N}.nt.gz`` plus the ontology ``univ-bench.owl``
(RDF/XML). Every engine runs in a child process with a wall-clock limit (``--timeout``), so
its time and peak memory are its own. Counts: ``triples`` is what the engine holds;
``rdf_triples`` leaves out what is not compared (``tests/owl2rl_judge.explained``: triples
with a literal subject, which RDF cannot hold, and the datatype triples of table 8, which
our rule set omits), so equal ``rdf_triples`` mean the same closure size.

* ``gpu-engine``: ``Reasoner(rule_set(variant))``, ``load_rdf``, ``materialise``.
* ``owlrl``: rdflib ``Graph.parse`` then ``DeductiveClosure(OWLRL_Semantics)`` (no axiomatic
  triples), owlrl's brute-force fixpoint in Python.
* ``reasonable`` (Rust, from PyPI): ``PyReasoner.from_graph`` of the same rdflib graph,
  ``reason()``.

``--load``: the vectorised N-Triples reader through ``host/rdf.py`` (with its check that
every term is canonical), the same reader without the check (``host/ntriples.py``), and
pyoxigraph with one Python string per term (the path every other format takes).
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing as mp
import os
import platform
import resource
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LUBM = ROOT.parent / "shared" / "bench-data" / "lubm"
ONTOLOGY = "univ-bench.owl"


PROFESSOR = "http://www.Department0.University0.edu/FullProfessor0"
EXTRA: list[Path] = []  # --sameas: a generated file of owl:sameAs triples


def _data(size: int) -> list[Path]:
    return [LUBM / f"lubm{size}.nt.gz", LUBM / ONTOLOGY, *EXTRA]


def sameas_file(n: int, directory: Path) -> Path:
    """A chain of ``n`` aliases of FullProfessor0 (alias_i owl:sameAs alias_i+1): one
    equality class of n + 1 members whose every triple eq-rep copies to every member."""
    path = directory / f"sameas{n}.nt"
    same = "<http://www.w3.org/2002/07/owl#sameAs>"
    names = [f"<{PROFESSOR}>"] + [f"<{PROFESSOR}/alias{i}>" for i in range(n)]
    path.write_text("".join(f"{a} {same} {b} .\n" for a, b in zip(names, names[1:])))
    return path


def _peak_rss() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def _count(terms: Any) -> tuple[int, int]:
    """(all triples, triples compared with peers) of an iterable of N-Triples-text triples."""
    sys.path.insert(0, str(ROOT))
    from tests.owl2rl_judge import explained

    total = kept = 0
    for t in terms:
        total += 1
        if explained(t, set()) is None:
            kept += 1
    return total, kept


def _run_ours(size: int, device: str, variant: str) -> dict[str, Any]:
    from gpu_engine.host.owl2rl import compiler, is_compiled, resolve, rule_set

    from gpu_engine import Reasoner

    t0 = time.perf_counter()
    extra: dict[str, Any] = {}
    if is_compiled(variant):  # read, close the schema, compile, load the partitions
        prep = compiler.prepare(_data(size), device)
        r = prep.reasoner
        if prep.compiled is not None:
            extra = {"compiled_rules": prep.compiled.rules,
                     "compiled_classes": len(prep.compiled.classes),
                     "compiled_properties": len(prep.compiled.properties),
                     "schema_seconds": prep.compiled.seconds.get("schema")}
    else:
        r = Reasoner(rule_set(variant), device=device)
        r.load_rdf(_data(size))
    t1 = time.perf_counter()
    c1 = time.process_time()
    if is_compiled(variant):
        prep = compiler.materialise(prep, _data(size), device)
        r = prep.reasoner
        st = r.stats
        extra["rules"] = prep.rule_set
        if prep.note:
            extra["note"] = prep.note
    else:
        st = r.materialise()
    t2 = time.perf_counter()
    c2 = time.process_time()
    n_triples = r.relation_sizes()["triple"]
    if size > 10:  # counting in Python takes minutes at LUBM(50): the relation's size only
        total = kept = n_triples
    else:
        table = r.relation("triple")
        rows = zip(*(table.column(i).to_pylist() for i in range(3)))
        total, kept = _count(rows)
    return {"engine": "gpu-engine", "device": r.device, "rules": resolve(variant),
            "load_seconds": t1 - t0, "materialise_seconds": t2 - t1,
            "materialise_cpu_seconds": c2 - c1,
            "triples": total, "rdf_triples": kept,
            "inconsistencies": r.relation_sizes()["inconsistency"],
            "derivations": st.to_dict().get("derivations"), **extra}


def _rdflib_graph(size: int) -> Any:
    import rdflib

    g = rdflib.Graph()
    with gzip.open(_data(size)[0], "rb") as f:
        g.parse(f, format="nt")
    g.parse(_data(size)[1], format="xml")
    for extra in _data(size)[2:]:
        g.parse(extra, format="nt")
    return g


def _n3(terms: Any) -> Any:
    for s, p, o in terms:
        yield (s.n3(), p.n3(), o.n3())


def _run_owlrl(size: int) -> dict[str, Any]:
    import owlrl

    t0 = time.perf_counter()
    g = _rdflib_graph(size)
    t1 = time.perf_counter()
    c1 = time.process_time()
    owlrl.DeductiveClosure(owlrl.OWLRL_Semantics, axiomatic_triples=False,
                           datatype_axioms=False).expand(g)
    t2 = time.perf_counter()
    c2 = time.process_time()
    total, kept = _count(_n3(g))
    return {"engine": "owlrl", "device": "cpu", "rules": "owlrl OWLRL_Semantics",
            "load_seconds": t1 - t0, "materialise_seconds": t2 - t1,
            "materialise_cpu_seconds": c2 - c1,
            "triples": total, "rdf_triples": kept}


def _run_reasonable(size: int) -> dict[str, Any]:
    import rdflib
    import reasonable

    t0 = time.perf_counter()
    g = _rdflib_graph(size)
    r = reasonable.PyReasoner()
    r.from_graph(g)
    t1 = time.perf_counter()
    c1 = time.process_time()
    out = r.reason()
    t2 = time.perf_counter()
    c2 = time.process_time()
    triples = set()
    for s, p, o in out:
        triples.add(tuple(x if isinstance(x, rdflib.term.Node) else rdflib.URIRef(x)
                          for x in (s, p, o)))
    total, kept = _count(_n3(triples))
    return {"engine": "reasonable", "device": "cpu", "rules": "reasonable OWL 2 RL",
            "load_seconds": t1 - t0, "materialise_seconds": t2 - t1,
            "materialise_cpu_seconds": c2 - c1,
            "triples": total, "rdf_triples": kept}


def _run_reasonable_file(size: int) -> dict[str, Any]:
    """reasonable reading the files itself (``PyReasoner.load_file``: Turtle/N-Triples, no
    rdflib graph, which at LUBM(50) would take most of the machine's memory): the data
    unzipped to a temporary file and the ontology as ``univ-bench.nt``."""
    import shutil
    import tempfile

    import reasonable

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        plain = Path(tmp) / f"lubm{size}.ttl"  # N-Triples is Turtle; it wants .ttl
        with gzip.open(_data(size)[0], "rb") as src, open(plain, "wb") as dst:
            shutil.copyfileobj(src, dst, 1 << 24)
        files = [plain]
        for k, extra in enumerate([LUBM / "univ-bench.nt", *EXTRA]):
            files.append(Path(tmp) / f"extra{k}.ttl")
            shutil.copyfile(extra, files[-1])
        r = reasonable.PyReasoner()
        for path in files:
            r.load_file(str(path))
        t1 = time.perf_counter()
        c1 = time.process_time()
        out = r.reason()
        t2 = time.perf_counter()
        c2 = time.process_time()
    n = len(out)
    if size > 10:
        total = kept = n
    else:
        import rdflib

        total, kept = _count(_n3({tuple(x if isinstance(x, rdflib.term.Node)
                                        else rdflib.URIRef(x) for x in t) for t in out}))
    return {"engine": "reasonable-file", "device": "cpu", "rules": "reasonable OWL 2 RL",
            "load_seconds": t1 - t0, "materialise_seconds": t2 - t1,
            "materialise_cpu_seconds": c2 - c1, "triples": total, "rdf_triples": kept}


def _run_load(size: int, reader: str) -> dict[str, Any]:
    path = _data(size)[0]
    t0 = time.perf_counter()
    if reader == "ntriples-vectorised":
        from gpu_engine.host.rdf import read_rdf

        n = read_rdf(path).num_rows
    elif reader == "ntriples-unchecked":  # the same reader without the canonical-term check
        from gpu_engine.host.ntriples import read_ntriples

        n = read_ntriples(path).num_rows
    else:
        from gpu_engine.host.rdf import _library

        n = _library(path, "N_TRIPLES", str(path), None).num_rows
    t1 = time.perf_counter()
    return {"engine": reader, "device": "cpu", "load_seconds": t1 - t0, "triples": n}


def _child(kind: str, args: tuple, queue: Any, extra: list[Path]) -> None:
    EXTRA[:] = extra
    try:
        fn = {"gpu-engine": _run_ours, "owlrl": _run_owlrl, "reasonable": _run_reasonable,
              "reasonable-file": _run_reasonable_file, "load": _run_load}[kind]
        res = fn(*args)
        res["peak_memory_bytes"] = _peak_rss()
        res["status"] = "ok"
    except ImportError as e:
        res = {"status": "skipped", "error": str(e)}
    except Exception as e:  # noqa: BLE001 - reported in the JSON line
        res = {"status": "error", "error": f"{type(e).__name__}: {e}"}
    queue.put(res)


def measure(kind: str, args: tuple, timeout: float) -> dict[str, Any]:
    """Run one measurement in a child process (spawned: a clean interpreter)."""
    ctx = mp.get_context("spawn")
    q = ctx.Queue()
    proc = ctx.Process(target=_child, args=(kind, args, q, list(EXTRA)))
    t0 = time.perf_counter()
    proc.start()
    res: dict[str, Any] | None = None
    while res is None:
        try:
            res = q.get(timeout=1.0)
        except Exception:  # noqa: BLE001 - queue.Empty: still running, past its limit, or dead
            if time.perf_counter() - t0 > timeout:
                res = {"status": "timeout"}
                proc.kill()
            elif not proc.is_alive():
                res = {"status": "error", "error": f"child exited with {proc.exitcode}"}
    proc.join(5)
    res["wall_seconds"] = time.perf_counter() - t0
    return res


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1", help="LUBM sizes, comma-separated (1, 10, 50)")
    ap.add_argument("--engines", default="gpu-engine,owlrl,reasonable")
    ap.add_argument("--device", default="cpu", choices=["auto", "cpu", "gpu"])
    ap.add_argument("--variant", default="owl2rl",
                    help="shipped rule sets for gpu-engine, comma-separated (owl2rl: "
                         "compiled, owl2rl-generic, owl2rl-spelled, owl2rl-eq)")
    ap.add_argument("--sameas", type=int, default=0,
                    help="add an owl:sameAs class of N + 1 members (aliases of one professor)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per peer run")
    ap.add_argument("--load", action="store_true", help="measure RDF load times only")
    ap.add_argument("--out", help="append the JSON lines to this file")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    records = []
    tmp = None
    if args.sameas:
        import tempfile

        tmp = tempfile.TemporaryDirectory()
        EXTRA[:] = [sameas_file(args.sameas, Path(tmp.name))]
    label = f"+sameAs({args.sameas + 1})" if args.sameas else ""
    for size in sizes:
        base = {"benchmark": "rdf-load" if args.load else "owl2rl",
                "size": f"LUBM({size}){label}",
                "host": platform.node(), "cpus": os.cpu_count(),
                "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        group = []
        if args.load:
            for reader in ("ntriples-vectorised", "ntriples-unchecked", "pyoxigraph"):
                rec = {**base, **measure("load", (size, reader), args.timeout)}
                group.append(rec)
            ref = group[0].get("load_seconds")
            for rec in group:
                if ref and rec.get("load_seconds"):
                    rec["ratio_vs_ntriples_vectorised"] = rec["load_seconds"] / ref
        else:
            for engine in args.engines.split(","):
                variants = args.variant.split(",") if engine == "gpu-engine" else [None]
                for v in variants:
                    spec = (size, args.device, v) if engine == "gpu-engine" else (size,)
                    name = engine if v is None or len(variants) == 1 else f"{engine}[{v}]"
                    group.append({**base, **measure(engine, spec, args.timeout),
                                  "engine": name, "timeout": args.timeout})
            ours = next((r for r in group if r["engine"].startswith("gpu-engine")
                         and r["status"] == "ok"), None)
            for rec in group:
                if ours and rec["status"] == "ok":
                    rec["ratio_vs_gpu_engine"] = (rec["materialise_seconds"]
                                                  / ours["materialise_seconds"])
                    if rec.get("materialise_cpu_seconds") and ours.get("materialise_cpu_seconds"):
                        rec["cpu_ratio_vs_gpu_engine"] = (rec["materialise_cpu_seconds"]
                                                          / ours["materialise_cpu_seconds"])
                    rec["same_rdf_triples"] = rec["rdf_triples"] == ours["rdf_triples"]
        for rec in group:
            line = json.dumps(rec)
            print(line, flush=True)
            records.append(line)
    if tmp is not None:
        tmp.cleanup()
    if args.out:
        Path(args.out).parent.mkdir(parents=True, exist_ok=True)
        with open(args.out, "a", encoding="utf-8") as f:
            f.write("".join(f"{line}\n" for line in records))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

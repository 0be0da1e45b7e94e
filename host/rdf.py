"""RDF in and out: N-Triples, Turtle, N-Quads, TriG (and what else pyoxigraph parses).

Terms are kept as their canonical N-Triples text, which is what the dictionary holds:
IRIs ``<http://...>``, blank nodes ``_:label``, literals ``"text"``, ``"text"@lang`` (tag in
lower case) or ``"text"^^<datatype>`` (``xsd:string`` literals written plainly). A triple
relation is any relation of three ``symbol`` (or symbol subtype) attributes.

Reading (:func:`read_rdf`):

* **N-Triples** first tries the vectorised reader of :mod:`host.ntriples` (Arrow's CSV
  reader, multi-threaded), accepted only when every term is already canonical (absolute
  IRIs, no escapes, no ``xsd:string`` datatype, lower-case language tags, ASCII blank node
  labels): on LUBM(10) it reads 1.27 M triples in 1.6 s where pyoxigraph with one Python
  string per term takes 3.2 s (``benchmarks/rdf_load.py``). Anything else goes to
* **pyoxigraph** (Rust parsers of the Oxigraph project) for every format: N-Triples it
  declined, Turtle, N-Quads and TriG (the graph names are dropped: the union of the graphs is
  read), N3, RDF/XML. Errors become :class:`~host.io.FactsError` at ``file:line:col``.

The format comes from the file name (``.nt``, ``.ttl``, ``.nq``, ``.trig``, ``.n3``,
``.rdf``/``.owl``/``.xml``, ``.jsonld``; a trailing ``.gz`` is ignored) or is given; gzip is
recognised by its magic bytes. Relative IRIs in Turtle-like formats resolve against the
file's ``file://`` URI. When several files are read together, each file's blank node labels
are made distinct (``_:b`` of the second file becomes ``_:f2_b``): blank nodes are scoped to
their document. Anonymous blank nodes (``[]``, collections), which pyoxigraph names by random
ids, are numbered ``_:g1``, ``_:g2``, ... in order of appearance, so results are repeatable.

Writing (:func:`rdf_bytes`): N-Triples is assembled with Arrow string kernels; Turtle is
that N-Triples re-serialised by pyoxigraph with the usual prefixes. Generalised triples that
RDF cannot hold (a literal subject, a predicate that is not an IRI: OWL 2 RL's ``eq-ref``
derives ``"x" owl:sameAs "x"``) are left out and counted.
"""

from __future__ import annotations

import gzip
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from gpu_engine.ir import Location, ProgramError

from .io import FactsError

if TYPE_CHECKING:
    from .reasoner import Reasoner

__all__ = ["read_rdf", "read_rdf_files", "rdf_bytes", "load_rdf", "rdf_format", "PREFIXES",
           "OUTPUT_FORMATS"]

# file extension -> pyoxigraph RdfFormat attribute name
_EXTENSIONS = {
    ".nt": "N_TRIPLES", ".ntriples": "N_TRIPLES", ".ttl": "TURTLE", ".turtle": "TURTLE",
    ".nq": "N_QUADS", ".nquads": "N_QUADS", ".trig": "TRIG", ".n3": "N3",
    ".rdf": "RDF_XML", ".owl": "RDF_XML", ".xml": "RDF_XML", ".jsonld": "JSON_LD",
}
# names accepted for an explicit format (CLI, ``format=`` of a directive)
_NAMES = {
    "nt": "N_TRIPLES", "ntriples": "N_TRIPLES", "n-triples": "N_TRIPLES",
    "ttl": "TURTLE", "turtle": "TURTLE", "nq": "N_QUADS", "nquads": "N_QUADS",
    "n-quads": "N_QUADS", "trig": "TRIG", "n3": "N3", "rdfxml": "RDF_XML", "rdf/xml": "RDF_XML",
    "xml": "RDF_XML", "jsonld": "JSON_LD", "json-ld": "JSON_LD",
}
OUTPUT_FORMATS = {"nt": ".nt", "ttl": ".ttl"}

PREFIXES = {
    "rdf": "http://www.w3.org/1999/02/22-rdf-syntax-ns#",
    "rdfs": "http://www.w3.org/2000/01/rdf-schema#",
    "owl": "http://www.w3.org/2002/07/owl#",
    "xsd": "http://www.w3.org/2001/XMLSchema#",
}

_COLUMNS = ("s", "p", "o")

# canonical N-Triples terms the vectorised reader may pass through unchanged (RE2)
_IRI = r'<[A-Za-z][A-Za-z0-9+.\-]*:[^<>"{}|^`\\\x00-\x20]*>'
_BNODE = r"_:[A-Za-z0-9_](?:[A-Za-z0-9_.\-]*[A-Za-z0-9_\-])?"
_LIT = (r'"[^"\\\n\r]*"(?:@[a-z]+(?:-[a-z0-9]+)*|\^\^' + _IRI + ")?")
_CANON = {"s": f"^(?:{_IRI}|{_BNODE})$", "p": f"^{_IRI}$", "o": f"^(?:{_IRI}|{_BNODE}|{_LIT})$"}
_XSD_STRING = '"^^<http://www.w3.org/2001/XMLSchema#string>'


def rdf_format(path: str | os.PathLike[str], fmt: str | None = None) -> str:
    """The pyoxigraph ``RdfFormat`` name for ``path`` (or the explicit ``fmt``)."""
    if fmt:
        name = _NAMES.get(fmt.strip().lower())
        if name is None:
            raise ProgramError(f"unknown RDF format {fmt!r} (known: {', '.join(sorted(_NAMES))})")
        return name
    p = Path(path)
    suffixes = [s.lower() for s in p.suffixes]
    if suffixes and suffixes[-1] in (".gz", ".gzip"):
        suffixes = suffixes[:-1]
    if suffixes and suffixes[-1] in _EXTENSIONS:
        return _EXTENSIONS[suffixes[-1]]
    raise ProgramError(f"{path}: cannot tell the RDF format from the file name (expected "
                       f"{', '.join(sorted(_EXTENSIONS))}, optionally .gz); name it")


def _is_gzip(path: Path) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == b"\x1f\x8b"


def _canonical_fast(path: Path) -> pa.Table | None:
    """The vectorised N-Triples reader's table when every term is canonical, else ``None``."""
    from .ntriples import _fast_path

    table = _fast_path(path)
    if table is None:
        return None
    if table.num_rows == 0:
        return None  # let the library decide (comments only, or nothing)
    for c in _COLUMNS:
        col = table[c]
        if not pc.all(pc.match_substring_regex(col, _CANON[c])).as_py():
            return None
    if pc.any(pc.ends_with(table["o"], _XSD_STRING)).as_py():
        return None
    return table


_POS = re.compile(r"^Parser error [^:]*: ")
_FORMAT_NAMES = {"N_TRIPLES": "N-Triples", "TURTLE": "Turtle", "N_QUADS": "N-Quads",
                 "TRIG": "TriG", "N3": "N3", "RDF_XML": "RDF/XML", "JSON_LD": "JSON-LD"}


def _library(path: Path, fmt_name: str, name: str, base_iri: str | None) -> pa.Table:
    """Parse with pyoxigraph into a table of N-Triples term strings."""
    import pyoxigraph as ox

    fmt = getattr(ox.RdfFormat, fmt_name)
    s: list[str] = []
    p: list[str] = []
    o: list[str] = []
    opener: Any = gzip.open if _is_gzip(path) else open
    try:
        with opener(path, "rb") as f:
            for t in ox.parse(f, fmt, base_iri=base_iri):
                s.append(str(t.subject))
                p.append(str(t.predicate))
                o.append(str(t.object))
    except SyntaxError as e:
        msg = _POS.sub("", str(e.args[0]) if e.args else str(e))
        line = e.lineno or 0
        col = e.offset or 0
        raise FactsError(f"malformed {_FORMAT_NAMES.get(fmt_name, fmt_name)}: {msg}",
                         Location(name, line, col)) from None
    except (gzip.BadGzipFile, EOFError) as e:
        raise FactsError(f"{name}: bad gzip data: {e}") from None
    except UnicodeDecodeError as e:
        raise FactsError(f"{name}: not UTF-8: {e}") from None
    table = pa.table({"s": pa.array(s, pa.string()), "p": pa.array(p, pa.string()),
                      "o": pa.array(o, pa.string())})
    return _number_anonymous(table)


_ANON = "^_:[0-9a-f]{16,32}$"  # pyoxigraph's random ids (a u128 in hex) of [] and list cells


def _number_anonymous(table: pa.Table) -> pa.Table:
    """Rename the blank nodes pyoxigraph made up (random 128-bit ids in hex) to ``_:gN`` in order
    of first appearance, so that reading a file twice gives the same terms. The prefix is
    lengthened (``gg``, ...) until no label of the file starts with it and a digit."""
    cols = {c: table[c].combine_chunks() for c in _COLUMNS}
    anon_masks = {c: pc.match_substring_regex(cols[c], _ANON) for c in _COLUMNS}
    if not any(pc.any(m).as_py() for m in anon_masks.values()):
        return table
    # first appearance in reading order: row by row, subject before predicate before object
    order = pa.chunked_array([pc.filter(cols[c], anon_masks[c]) for c in _COLUMNS])
    rows = pa.chunked_array([pa.array(np.flatnonzero(anon_masks[c].to_numpy(
        zero_copy_only=False)) * 3 + k) for k, c in enumerate(_COLUMNS)])
    ids = order.take(pc.sort_indices(rows))
    anon = pc.unique(ids)
    prefix = "g"
    labels = pc.unique(pa.chunked_array([cols[c] for c in _COLUMNS]))
    while pc.any(pc.match_substring_regex(labels, f"^_:{prefix}[0-9]")).as_py():
        prefix += "g"
    names = pa.array([f"_:{prefix}{i}" for i in range(1, len(anon) + 1)], pa.string())
    out = {}
    for c in _COLUMNS:
        pos = pc.index_in(cols[c], value_set=anon)
        out[c] = pc.if_else(anon_masks[c], names.take(pc.fill_null(pos, 0)), cols[c])
    return pa.table(out)


def read_rdf(path: str | os.PathLike[str], fmt: str | None = None, *,
             base_iri: str | None = None) -> pa.Table:
    """Read one RDF file into a table ``(s, p, o)`` of canonical N-Triples term strings
    (rows as read, duplicates included; quads lose their graph name)."""
    p = Path(path)
    if not p.exists():
        raise FileNotFoundError(f"{p}: no such file")
    if p.is_dir():
        raise FactsError(f"{p}: is a directory, expected an RDF file")
    name = rdf_format(p, fmt)
    if name == "N_TRIPLES":
        fast = _canonical_fast(p)
        if fast is not None:
            return pa.table({c: fast[c] for c in _COLUMNS})
        base = None
    else:
        base = base_iri or p.resolve().as_uri()
    return _library(p, name, str(path), base)


def read_rdf_files(paths: Sequence[str | os.PathLike[str]], fmt: str | None = None) -> pa.Table:
    """Several RDF files as one ``(s, p, o)`` table; blank node labels are made distinct
    per file when there is more than one (file k > 1: ``_:x`` -> ``_:fk_x``)."""
    tables = []
    for k, path in enumerate(paths, start=1):
        t = read_rdf(path, fmt)
        if len(paths) > 1 and k > 1:
            t = pa.table({c: pc.replace_substring_regex(t[c], "^_:", f"_:f{k}_")
                          for c in _COLUMNS})
        tables.append(t)
    if not tables:
        return pa.table({c: pa.array([], pa.string()) for c in _COLUMNS})
    return pa.concat_tables(tables, promote_options="permissive").combine_chunks()


def triple_relation(r: Reasoner, relation: str) -> list[str]:
    """The attribute names of ``relation``, checked to be a triple relation."""
    rel = r._relation(relation)
    if rel.arity != 3 or any(t != "symbol" for _, t in rel.attributes):
        raise ProgramError(f"relation {relation!r} cannot hold RDF triples: it needs three "
                           "symbol attributes")
    return [a for a, _ in rel.attributes]


def load_rdf(r: Reasoner, paths: str | os.PathLike[str] | Sequence[str | os.PathLike[str]],
             relation: str = "triple", fmt: str | None = None) -> int:
    """Read RDF files and add their triples to ``relation``; every file is read and
    checked before anything is added. Returns the number of new facts."""
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    names = triple_relation(r, relation)
    table = read_rdf_files(list(paths), fmt)
    return r.add_facts(relation, table.rename_columns(names))


def _nt_lines(table: pa.Table) -> tuple[pa.Array, int]:
    """``s p o .\\n`` per row of a (s, p, o) string table, generalised triples left out."""
    s, p, o = (pc.cast(table.column(i), pa.large_string()).combine_chunks() for i in range(3))
    keep = pc.and_(pc.invert(pc.starts_with(s, '"')), pc.starts_with(p, "<"))
    dropped = len(s) - int(pc.sum(keep).as_py() or 0)
    if dropped:
        s, p, o = (pc.filter(c, keep) for c in (s, p, o))
    dot = pa.scalar(".\n", pa.large_string())
    return pc.binary_join_element_wise(s, p, o, dot, pa.scalar(" ", pa.large_string())), dropped


def rdf_bytes(table: pa.Table, fmt: str = "nt",
              prefixes: dict[str, str] | None = None) -> tuple[bytes, int]:
    """A table of three term columns as N-Triples (``fmt="nt"``) or Turtle (``"ttl"``)
    bytes, and the number of generalised triples left out."""
    lines, dropped = _nt_lines(table)
    if len(lines) == 0:
        nt = b""
    else:
        lines = lines.combine_chunks() if isinstance(lines, pa.ChunkedArray) else lines
        offsets = np.frombuffer(lines.buffers()[1], dtype=np.int64)[lines.offset:
                                                                     lines.offset + len(lines) + 1]
        nt = lines.buffers()[2].to_pybytes()[int(offsets[0]):int(offsets[-1])]
    if fmt == "nt":
        return nt, dropped
    if fmt != "ttl":
        raise ProgramError(f"unknown RDF output format {fmt!r} (nt or ttl)")
    import pyoxigraph as ox

    ttl = ox.serialize(ox.parse(nt, ox.RdfFormat.N_TRIPLES), None, ox.RdfFormat.TURTLE,
                       prefixes=prefixes if prefixes is not None else PREFIXES)
    return ttl or b"", dropped


def write_rdf(r: Reasoner, path: str | os.PathLike[str], relation: str = "triple",
              fmt: str | None = None) -> int:
    """Write ``relation`` (a triple relation) as N-Triples or Turtle (from the file name's
    extension unless ``fmt`` is given), atomically. Returns the triples left out."""
    from .io import stage_file

    triple_relation(r, relation)
    if fmt is None:
        fmt = "ttl" if Path(path).suffix.lower() in (".ttl", ".turtle") else "nt"
    data, dropped = rdf_bytes(r.relation(relation), fmt)
    tmp = stage_file(Path(path), data)
    os.replace(tmp, path)
    return dropped


def rdf_output(r: Reasoner, relation: str, params: dict[str, str],
               default_fmt: str = "nt") -> tuple[str, bytes]:
    """``.output rel(IO=rdf[, format=nt|ttl][, filename=...])``: (file name, bytes)."""
    fmt = params.get("format", default_fmt).strip().lower()
    fmt = {"ntriples": "nt", "n-triples": "nt", "turtle": "ttl"}.get(fmt, fmt)
    if fmt not in OUTPUT_FORMATS:
        raise ProgramError(f"IO=rdf output of {relation}: format must be nt or ttl, not {fmt!r}")
    triple_relation(r, relation)
    fname = params.get("filename", f"{relation}{OUTPUT_FORMATS[fmt]}")
    data, _dropped = rdf_bytes(r.relation(relation), fmt)
    return fname, data


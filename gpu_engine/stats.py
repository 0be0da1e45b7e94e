"""Statistics of a materialisation: per stratum and per rule."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from .ir import Location


@dataclass
class RuleStats:
    rule: str
    loc: Location
    seconds: float = 0.0
    evaluations: int = 0  # rule (variant) evaluations
    derivations: int = 0  # rule instances (output rows before deduplication)
    module: str = ""  # nonrecursive, seminaive, tc(R) or stc(R) (paper 002 modules)

    def to_dict(self) -> dict:
        d = asdict(self)
        d["loc"] = str(self.loc)
        return d


@dataclass
class StratumStats:
    index: int
    relations: list[str]
    recursive: bool
    seconds: float = 0.0
    iterations: int = 0
    facts: int = 0  # facts added by this stratum's rules
    derivations: int = 0
    rules: list[RuleStats] = field(default_factory=list)
    small_rounds: int = 0  # rounds run by the compiled small-delta path

    def to_dict(self) -> dict:
        d = asdict(self)
        d["rules"] = [r.to_dict() for r in self.rules]
        return d


@dataclass
class MaterialisationStats:
    device: str
    seconds: float = 0.0
    facts: int = 0  # all facts in the materialisation (explicit and derived)
    derivations: int = 0
    peak_device_bytes: int = 0
    strata: list[StratumStats] = field(default_factory=list)
    # device out of memory (gpu_engine.fallback): rule evaluations retried with smaller
    # join chunks, and where and why the rest of the run moved to the CPU ("" if it did not)
    oom_retries: int = 0
    fallback: str = ""
    # equality by rewriting (gpu_engine.equality): classes, merge rounds, expanded facts
    equality: dict | None = None

    def to_dict(self) -> dict:
        out = {
            "device": self.device,
            "seconds": self.seconds,
            "facts": self.facts,
            "derivations": self.derivations,
            "peak_device_bytes": self.peak_device_bytes,
            "oom_retries": self.oom_retries,
            "fallback": self.fallback,
            "strata": [s.to_dict() for s in self.strata],
        }
        if self.equality is not None:
            out["equality"] = self.equality
        return out


@dataclass
class UpdateStats:
    """One incremental update: what changed and what the algorithm did."""

    algorithm: str
    device: str
    seconds: float = 0.0
    deleted: int = 0  # |E⁻| after normalisation (E⁻ ∩ E) \ E⁺
    inserted: int = 0  # |E⁺| after normalisation E⁺ \ E
    overdeleted: int = 0  # |D|
    rederived: int = 0  # facts of D that held after all (|D ∩ A| for DRed-style algorithms)
    added: int = 0  # |A|
    facts: int = 0  # facts in the new materialisation
    derivations: int = 0  # rule instances considered (forward and backward)
    backward: int = 0  # rule instances matched "backwards" (DRed, B/F)
    checked: int = 0  # B/F≈: facts checked (C), proved (P \ P̂), disproved (S)
    proved: int = 0
    disproved: int = 0
    modules: list[str] = field(default_factory=list)  # TC/STC modules used (DRed^c-MOD)
    note: str = ""
    oom_retries: int = 0  # device out of memory: evaluations retried with smaller chunks
    fallback: str = ""  # ... and why the update was redone on the CPU ("" if it was not)
    # fully dynamic updates (fdu.py, host/update_queue.py): rounds run (overdeletion and
    # insertion), updates composed into this one, injected into it mid-way, attempts
    # aborted (and so restarted with the composed change), interleaving steps
    # (fdu_interleave.py: pending updates, deletions included, joined at a boundary)
    rounds: int = 0
    composed: int = 1
    injected: int = 0
    aborted: int = 0
    restarted: int = 0
    interleaved: int = 0
    # why arrivals could not join the running update (each reason once; they then
    # restarted it or waited): an aggregate or TC/STC module stratum already done, ...
    refused: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)

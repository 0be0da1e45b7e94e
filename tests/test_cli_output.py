"""What the command line prints, as a user reading logs sees it."""

from __future__ import annotations

from pathlib import Path

from souffle_cases import run_cli


def test_stats_table_does_not_wrap_when_not_a_terminal(tmp_path: Path) -> None:
    """``--stats`` into a file or pipe: one line per rule, however long the rule."""
    long_name = "a_relation_with_a_long_name_" * 4
    prog = tmp_path / "p.dl"
    prog.write_text(
        f".decl e(x:number, y:number)\n.decl {long_name}(x:number, y:number)\n"
        f"e(1, 2). e(2, 3).\n{long_name}(x, y) :- e(x, y).\n"
        f"{long_name}(x, z) :- {long_name}(x, y), e(y, z).\n.output {long_name}\n"
    )
    rc, _, stderr = run_cli(["run", str(prog), "-D", str(tmp_path), "--device", "cpu",
                             "--quiet", "--stats"])
    assert rc == 0, stderr
    rule_lines = [line for line in stderr.splitlines() if f"{long_name}(x, z) :-" in line]
    assert len(rule_lines) == 1 and rule_lines[0].rstrip().endswith("│"), stderr

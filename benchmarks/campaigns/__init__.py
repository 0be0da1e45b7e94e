"""Campaigns that keep the engine honest (issue 12 item 3): ``make fuzz-programs``,
``make fuzz-inputs`` and ``make faults``.

Each campaign is a seeded loop (case ``i`` of a run with seed ``s`` is reproducible from
``s + i`` alone) that appends one JSON line per run to ``benchmarks/results/*.jsonl`` with
its counts, seeds, duration and every failure with a reproducer.  The test suite runs each
at a small size (``tests/test_campaigns.py``); known bugs that another change owns are listed
in :mod:`benchmarks.campaigns.known` so the small runs pass while they stay reported.
"""

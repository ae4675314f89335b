"""plugin/output/counting_text.header_text: the summary's counts line names what gated counts
(their own minimum effect, and a threshold the user set where one did)."""

from __future__ import annotations

import types
from pathlib import Path
from typing import Any

from pytest_burnperf.core import measures
from pytest_burnperf.instruments.counts_run import Counting
from pytest_burnperf.plugin.output.counting_text import header_text


def _state(tmp_path: Path, thresholds: list[float | None]) -> Any:
    counting = Counting(
        valgrind="valgrind",
        version="3.19.0",
        baselines_root=tmp_path / "baselines",
        size="small",
        measure=measures.COUNTS_ONLY,
    )
    results = {
        f"t.py::test_{i}": types.SimpleNamespace(
            judged_by=measures.COUNTS, verdict=types.SimpleNamespace(threshold=t)
        )
        for i, t in enumerate(thresholds)
    }
    # a timed result's threshold is the clock's: not said on the counts line
    results["t.py::test_timed"] = types.SimpleNamespace(
        judged_by=measures.TIME, verdict=types.SimpleNamespace(threshold=0.2)
    )
    return types.SimpleNamespace(
        counts=lambda: counting,
        run=types.SimpleNamespace(rootpath=tmp_path, mode=types.SimpleNamespace(compares=False)),
        findings=types.SimpleNamespace(results=results),
    )


def test_the_counts_line_names_a_threshold_set_beside_the_minimum_effect(tmp_path: Path) -> None:
    line = header_text(_state(tmp_path, [0.1, None, 0.1]))
    assert line.startswith("counts: instructions per call on callgrind's simulated CPU")
    assert line.endswith(
        "minimum effect 0.5%, 2x the counts' spread, or 1% x the interpreter's share or 250 "
        "instructions a call of interpreted code, or the threshold set (10%) where larger"
    )
    default = header_text(_state(tmp_path, [None, None]))
    # every term of the minimum effect is named, the interpreter's state in a call included
    assert default.endswith(
        "or 1% x the interpreter's share or 250 instructions a call of interpreted code"
    )
    both = header_text(_state(tmp_path, [0.08, 0.1]))
    assert both.endswith("or the threshold set (8%/10%) where larger")

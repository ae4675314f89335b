from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_burnperf.cli import main


def results_file(path: Path, factor: float) -> Path:
    samples = [factor * (1.0 + 0.001 * i) for i in range(20)]
    path.write_text(
        json.dumps(
            {
                "schema": "pytest-burnperf-results",
                "results": [{"test": "t.py::test_a", "samples": samples}],
            }
        )
    )
    return path


def test_compare_exit_code_and_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = results_file(tmp_path / "old.json", 1.0)
    assert main(["compare", str(old), str(results_file(tmp_path / "same.json", 1.0))]) == 0
    # one process a side: between-process noise is not measured, so the default prior applies
    # (+20% is inside its floor: inconclusive) and only a far larger change fails
    assert main(["compare", str(old), str(results_file(tmp_path / "slow.json", 1.2))]) == 0
    assert "inconclusive   +20.0%" in capsys.readouterr().out
    assert main(["compare", str(old), str(results_file(tmp_path / "slower.json", 1.5))]) == 1
    assert "t.py::test_a: 1.01 s -> 1.51 s (+50.0%" in capsys.readouterr().out


def test_compare_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(SystemExit, match=f"{bad} is not valid JSON"):
        main(["compare", str(bad), str(bad)])

"""The published JSON schemas (schemas/) describe what the plugin writes and reads."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from pytest_burnperf.storage.baselines import BaselineStore

ROOT = Path(__file__).resolve().parents[3]


def schema(name: str) -> dict[str, object]:
    doc = json.loads((ROOT / "schemas" / name).read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(doc)
    return doc  # type: ignore[no-any-return]


@pytest.mark.parametrize("path", sorted((ROOT / "baselines").rglob("*.json")), ids=str)
def test_committed_baselines_follow_the_schema(path: Path) -> None:
    jsonschema.validate(
        json.loads(path.read_text(encoding="utf-8")), schema("baselines-v1.schema.json")
    )


def test_a_written_baseline_follows_the_schema_and_bad_ones_do_not(tmp_path: Path) -> None:
    BaselineStore(tmp_path, "m").save(
        {"t.py": {"a": {"samples": [0.5], "timer": "host"}}}, {"id": "m"}
    )
    doc = json.loads((tmp_path / "m" / "t.json").read_text())
    validator = jsonschema.Draft202012Validator(schema("baselines-v1.schema.json"))
    assert validator.is_valid(doc)
    for bad in ([0.0], [1e9], ["0.1"], []):
        doc["benchmarks"]["a"]["samples"] = bad
        assert not validator.is_valid(doc)
    doc["benchmarks"]["a"]["samples"] = [0.5]
    doc["benchmarks"]["a"]["l2_flush"] = "false"
    assert not validator.is_valid(doc)


def test_results_schema_is_valid() -> None:
    schema("results-v1.schema.json")


def test_counts_kept_beside_a_time_verdict_follow_the_results_schema() -> None:
    """A result judged by time where counts could not decide keeps what they measured
    (``counts_not_judged``); the schema takes it, and refuses one without its why."""
    from pytest_burnperf.core.counting import counts
    from pytest_burnperf.core.counting.counts import Counted
    from pytest_burnperf.core.counting.counts_left_to_clock import left_to_clock

    got = Counted(instructions=(4_077, 4_087), cycles=(), interpreter=0.85)
    verdict = counts.judge_counts([4_077.0, 4_077.0], [4_077.0, 4_087.0], alpha_each=0.001,
                                  interpreter=0.85)  # fmt: skip
    validator = jsonschema.Draft202012Validator(schema("results-v1.schema.json"))
    kept = left_to_clock(got, verdict, None)
    result_schema = {**validator.schema, "$ref": "#/$defs/result"}
    doc = {"test": "t.py::a", "samples": [0.5], "timer": "host", "counts_not_judged": kept}
    strict = jsonschema.Draft202012Validator(result_schema)
    errors = [e.message for e in strict.iter_errors(doc) if "counts_not_judged" in e.json_path]
    assert errors == []
    del kept["why"]
    assert any("counts_not_judged" in e.json_path for e in strict.iter_errors(doc))

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

"""Every key of benchmarks.toml with a good and a bad value (config.py, no pytest run)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_burnperf.plugin.configuration.option_table import VALUE_OPTIONS
from pytest_burnperf.storage import project_config
from pytest_burnperf.storage.project_config import ConfigError, load

PARSERS = {ini: parse for _o, ini, parse, _t in VALUE_OPTIONS}
GOOD_BAD = {
    "backends": ('["cpu", "torch-cuda0"]', '["gpu"]'),
    "require": ('["opencl"]', "5"),
    "dtypes": ('["f32", "f64"]', '["float32"]'),
    "baselines_dir": ('"perf-baselines"', '""'),
    "machine": ('"ci-runner-a"', '"../up"'),
    "alpha": ("0.05", "0.9"),
    "threshold": ('"10%"', "5"),
    "min_judged": ('"90%"', "2"),
    "base": ('"v1.0"', '"--upload-pack=x"'),
    "samples": ("30", '"ten"'),
    "warmup": ("0.5", "-1"),
    "min_time": ("0.01", "100"),
    "max_samples": ("500", "1"),
    "max_time": ("2.0", '"long"'),
    "timer": ('"host"', '"wall"'),
    "rounds": ("3", "0"),
    "max_rounds": ("8", "51"),
    "round_budget": ("120", "-5"),
    "round_start": ('"fork"', '"spawn"'),
    "threads": ("2", "-1"),
    "measure": ('"counts"', '"cycles"'),
    "count_limit": ('"400M"', "1"),
    "count_jobs": ("2", "-1"),
    "profile": ('"regressed"', '"sometimes"'),
    "memory": ('"off"', '"sometimes"'),
    "profile_dir": ('"perf-profiles"', "7"),
    "size": ('"tiny"', '"huge"'),
    "columns": ('["median", "change"]', '["speed"]'),
    "sort": ('"change"', '"speed"'),
    "group_by": ('"device"', '"colour"'),
    "json_format": ('"pytest-benchmark"', '"csv"'),
    "shard": ('"2/4"', '"5/4"'),
    "json": ('"perf.json"', '"a\\u0001b"'),
    "markdown": ('"perf-summary.md"', '""'),
    "strict": ("true", '"maybe"'),
    "benches": ('["test_matmul"]', '"test_matmul"'),
}


def test_every_option_has_a_case() -> None:
    assert {ini.removeprefix("perf_") for ini in PARSERS} | {"strict", "benches"} == set(GOOD_BAD)


@pytest.mark.parametrize("key", sorted(GOOD_BAD))
def test_each_key_good_and_bad(tmp_path: Path, key: str) -> None:
    good, bad = GOOD_BAD[key]
    (tmp_path / "benchmarks.toml").write_text(f"[burnperf]\n{key} = {good}\n")
    cfg = load(tmp_path, PARSERS)
    assert cfg.path == tmp_path / "benchmarks.toml"
    assert cfg.values or cfg.benches or cfg.strict is not None
    (tmp_path / "benchmarks.toml").write_text(f"[burnperf]\n{key} = {bad}\n")
    with pytest.raises(ConfigError) as info:
        load(tmp_path, PARSERS)
    assert str(info.value).startswith(f"{tmp_path / 'benchmarks.toml'}: {key}")


def test_no_file_no_configuration(tmp_path: Path) -> None:
    assert load(tmp_path, PARSERS).path is None


def test_the_project_name_is_read_from_pyproject_and_none_where_absent_or_broken(
    tmp_path: Path,
) -> None:
    """The counts key leaves out the project's own distribution (its code is what is measured)."""
    named, bare, broken, table = (tmp_path / n for n in ("named", "bare", "broken", "table"))
    for d in (named, bare, broken, table):
        d.mkdir()
    (named / "pyproject.toml").write_text('[project]\nname = "my-lib"\n', encoding="utf-8")
    (broken / "pyproject.toml").write_text("[project\n", encoding="utf-8")
    (table / "pyproject.toml").write_text('project = "my-lib"\n', encoding="utf-8")
    assert project_config.project_name(named) == "my-lib"
    assert project_config.project_name(bare) is None
    assert project_config.project_name(broken) is None
    assert project_config.project_name(table) is None

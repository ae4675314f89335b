"""The session's state stays small enough to hold in one's head: no object of it has more than
25 fields, and its configuration cannot change once made."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_burnperf.core.options.run_mode import Mode
from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.plugin.session.findings import Findings
from pytest_burnperf.plugin.session.perf_state import PerfState
from pytest_burnperf.plugin.session.run_config import OutputConfig, RoundSchedule, RunConfig

MAX_FIELDS = 25


@pytest.mark.parametrize("cls", [PerfState, RunConfig, RoundSchedule, OutputConfig, Findings])
def test_no_object_of_the_state_has_more_than_25_fields(cls: type) -> None:
    names = [f.name for f in dataclasses.fields(cls)]
    assert len(names) <= MAX_FIELDS, f"{cls.__name__}: {len(names)} fields: {names}"


def _run() -> RunConfig:
    return RunConfig(
        mode=Mode.JUDGE,
        base=Settings(),
        cmdline={"samples": 7},
        backends_filter=None,
        dtypes_filter=None,
        require=None,
        baselines_root=Path("baselines"),
        machine_id="m",
        rootpath=Path("."),
        invocation=("--perf",),
    )


@pytest.mark.parametrize("make", [_run, RoundSchedule, OutputConfig])
def test_the_configuration_is_frozen(make: type) -> None:
    config = make()
    field = dataclasses.fields(config)[0].name
    with pytest.raises(dataclasses.FrozenInstanceError):
        setattr(config, field, None)


def test_a_benchmark_s_settings_put_the_command_line_over_its_marker() -> None:
    from pytest_burnperf.core.options.settings import PerfSpec

    spec = PerfSpec(overrides={"samples": 3, "warmup": 0.5})
    got = _run().settings_for(spec)
    assert (got.samples, got.warmup) == (7, 0.5)

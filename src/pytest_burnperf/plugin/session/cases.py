"""A benchmark's case: the device entry and dtype one parameter of a ``@pytest.mark.perf`` test runs
on, with the reason it is skipped or the error it fails with."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_burnperf.core.options.settings import PerfSpec

if TYPE_CHECKING:
    from pytest_burnperf.devices import Entry


@dataclass
class Case:
    """One parameter of a benchmark: a device entry and a dtype."""

    entry: Entry | None
    label: str
    dtype: str
    spec: PerfSpec
    skip_reason: str | None = None
    #: A bad marker: the test errors at setup with this message, the rest of its module runs.
    error: str | None = None
    #: A test written for pytest-benchmark: its one case (the host CPU) adds nothing to its id.
    benchmark_style: bool = False
    #: What the test's run says once, shared by the cases of one test function: the project's
    #: own ``device``/``dtype`` fixtures it does not see (collection.warn_shadowed).
    shadowed: list[str] = field(default_factory=list)

"""pytest-burnperf: performance regression testing of numeric and tensor code on every device.

The public API is what this module exports (``__all__``): the device protocol a benchmark's
``device`` fixture follows, and the roofline helpers that declare a benchmark's work. Every other
module is private and may change between releases.

Importing this package is cheap on purpose: it pulls in no array library, no scipy and no
device runtime. Those load only when a perf run needs them.
"""

from __future__ import annotations

from pytest_burnperf._version import __version__
from pytest_burnperf.core.records.roofline_figures import (
    Peaks,
    Work,
    WorkError,
    elementwise_work,
    matmul_work,
    reduction_work,
)
from pytest_burnperf.devices.base import Device, DeviceBase

__all__ = [
    "Device",
    "DeviceBase",
    "Peaks",
    "Work",
    "WorkError",
    "__version__",
    "elementwise_work",
    "matmul_work",
    "reduction_work",
]

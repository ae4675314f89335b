"""Real devices in tests: skip where absent, unless CI says they must be there.

``BURNPERF_REQUIRE_DEVICES=opencl,vulkan,valgrind`` (set by ``.ci/run``, which installs PoCL,
lavapipe and valgrind) turns "absent" into a failure, so the real OpenCL, Vulkan and counted
(callgrind) tests can never pass by skipping.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

from pytest_burnperf import devices


def required() -> set[str]:
    return {n.strip() for n in os.environ.get("BURNPERF_REQUIRE_DEVICES", "").split(",") if n}


def real_device(library: str) -> Any:
    """The first device ``library`` finds here; skip (or fail, if required) when there is none."""
    probe = devices.PROBES[library]()
    if probe.devices:
        return probe.devices[0]
    reason = "; ".join(probe.absent.values()) or f"no {library} device"
    if library in required():
        pytest.fail(f"BURNPERF_REQUIRE_DEVICES has {library}, but: {reason}", pytrace=False)
    pytest.skip(reason)


def present(library: str) -> bool:
    """Whether ``library`` has a device here; fails if it is required and has none."""
    probe = devices.PROBES[library]()
    if not probe.devices and library in required():
        reason = "; ".join(probe.absent.values())
        pytest.fail(f"BURNPERF_REQUIRE_DEVICES has {library}, but: {reason}", pytrace=False)
    return bool(probe.devices)

"""Settings of the shipped suite: CPU benchmarks, and the CPU-hosted OpenCL (PoCL) and Vulkan
(lavapipe) drivers, run on one thread.

On a small shared machine, 2-thread BLAS and torch intra-op pools compete with other processes and
make the same code change speed between runs by tens of percent; one thread is what
``torch.utils.benchmark`` uses by default for the same reason. The thread count is recorded in each
result's device fingerprint. Set BURNPERF_SUITE_THREADS to use another count.
"""

from __future__ import annotations

import os
import sys

import pytest

THREADS = os.environ.get("BURNPERF_SUITE_THREADS", "1")

# BLAS libraries read these when they load, so set them before numpy/torch are imported; PoCL and
# lavapipe read theirs when the device is first probed (during collection, after this import).
for var in (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "POCL_MAX_PTHREAD_COUNT",
    "LP_NUM_THREADS",
):
    os.environ.setdefault(var, THREADS)


@pytest.fixture(autouse=True)
def _suite_threads() -> None:
    torch = sys.modules.get("torch")
    if torch is not None:
        torch.set_num_threads(int(THREADS))

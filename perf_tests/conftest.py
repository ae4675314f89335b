"""Settings of the shipped suite: the CPU-hosted OpenCL (PoCL) and Vulkan (lavapipe) drivers run
on one thread, like the CPU benchmarks themselves (the plugin's ``threads`` setting, default 1,
limits BLAS/OpenMP and torch pools while each benchmark is timed).

On a small shared machine, 2-thread pools compete with other processes and make the same code
change speed between runs by tens of percent. PoCL and lavapipe read their thread counts from the
environment when the device is first probed (during collection, after this import), so they are
set here. Set BURNPERF_SUITE_THREADS to use another count for them.
"""

from __future__ import annotations

import os

THREADS = os.environ.get("BURNPERF_SUITE_THREADS", "1")

for var in ("POCL_MAX_PTHREAD_COUNT", "LP_NUM_THREADS"):
    os.environ.setdefault(var, THREADS)

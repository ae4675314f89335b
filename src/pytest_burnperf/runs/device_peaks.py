"""A device's measured peaks for a run's roofline figures: from the peak cache
(storage/peak_cache.py), else calibrated now (devices/peak_calibration.py) and cached; each key
measured once per run, a failed calibration said once and never cached."""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable

from pytest_burnperf.core.judging.precision import key_part
from pytest_burnperf.core.records.roofline_figures import Peaks
from pytest_burnperf.devices import peak_calibration
from pytest_burnperf.devices.base import Device
from pytest_burnperf.storage.peak_cache import PeakCache, cache_path


class PeakSource:
    """The peaks of this run's devices. ``announce`` prints a progress line; ``messages`` gets
    what the summary should say (a failed calibration, a cache that could not be written)."""

    def __init__(
        self,
        machine_id: str,
        *,
        recalibrate: bool,
        announce: Callable[[str], None],
        messages: list[str],
    ) -> None:
        self.machine_id = machine_id
        self.recalibrate = recalibrate
        self.announce = announce
        self.messages = messages
        self._cache: PeakCache | None = None
        #: Cache keys measured (or failed) in this run: --perf-recalibrate measures each once.
        self._checked: set[str] = set()

    def for_device(self, device: Device, dtype: str, threads: int) -> Peaks:
        """The device's measured peaks for ``dtype``: from the cache, else calibrated now."""
        if self._cache is None:
            self._cache = PeakCache(cache_path(), self.machine_id)
        cache = self._cache
        name = str(device.fingerprint().get("name", device.id))
        key = PeakCache.key(self.machine_id, device.id, name, dtype, threads)
        key += key_part(device.precision() if hasattr(device, "precision") else {})
        fresh = self.recalibrate and key not in self._checked
        peaks = None if fresh else cache.get(key)
        if peaks is None and key in self._checked:
            return Peaks(None, None, "calibration failed earlier in this run")
        if peaks is None:
            self.announce(
                f"pytest-burnperf: measuring the peak GFLOP/s and GB/s of {device.id} ({dtype}, "
                f"{threads} thread(s)) once; cached for later runs ..."
            )
            t0 = time.monotonic()
            try:
                active = getattr(device, "active", contextlib.nullcontext)
                with device.threads(threads), active():
                    peaks = peak_calibration.calibrate(device, dtype)
            except Exception as exc:  # a driver that cannot run the calibration kernels
                self._checked.add(key)
                self.messages.append(
                    f"peak calibration of {device.id} ({dtype}) failed, so its benchmarks show "
                    f"no % of peak: {type(exc).__name__}: {exc}"
                )
                return Peaks(None, None, f"calibration failed: {type(exc).__name__}: {exc}")
            self.announce(
                f"pytest-burnperf: peaks of {device.id} measured in {time.monotonic() - t0:.1f} s"
            )
            cache.put(key, peaks)  # failures are never cached: the next run tries again
            self.messages.extend(cache.problems)
            cache.problems.clear()
        self._checked.add(key)
        return peaks

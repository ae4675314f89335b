"""OpenCL through pyopencl: every device of every platform (CPU runtimes such as PoCL included).

What a benchmark gets: ``device.context``, ``device.queue`` (in order, profiling enabled; enqueue
the benchmark's kernels there), ``device.program(source)`` / ``device.kernel(source, name)``
(built once per device and cached, so a build never lands in a sample), and ``pyopencl.array``
arrays from ``random/zeros/asarray``. ``device.xp`` is absent: OpenCL has no array namespace.

Device clock: a marker enqueued before and after the timed calls; the elapsed time is the
difference of their ``CL_PROFILING_COMMAND_END`` stamps, i.e. the device-side span of the work
in between, the OpenCL counterpart of a CUDA event pair.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from pytest_burnperf.devices.base import NUMPY_DTYPE_NAMES, DeviceBase, HostData, Probe, identity

if TYPE_CHECKING:  # pyopencl is typed; imported at run time only when a device is probed
    import numpy as np
    import numpy.typing as npt
    import pyopencl
    import pyopencl.array

#: Short names for well-known platforms, for readable device ids.
_PLATFORM_SLUGS = (
    ("portable computing language", "pocl"),
    ("pocl", "pocl"),
    ("nvidia", "nvidia"),
    ("amd", "amd"),
    ("intel", "intel"),
    ("apple", "apple"),
    ("rusticl", "rusticl"),
    ("clover", "clover"),
    ("oclgrind", "oclgrind"),
)

_NO_PLATFORM = (
    "pyopencl {version} is installed, but no OpenCL platform was found ({error}); install an "
    "OpenCL driver (ICD), e.g. apt-get install pocl-opencl-icd ocl-icd-libopencl1 for the CPU"
)


def platform_slug(name: str) -> str:
    low = name.lower()
    for needle, slug in _PLATFORM_SLUGS:
        if needle in low:
            return slug
    words = re.findall(r"[a-z0-9]+", low)
    return words[0] if words else "platform"


class MarkerTimer:
    """Device time between two markers on a profiling queue."""

    name = "device"
    label = "OpenCL profiling markers"

    def __init__(self, cl: ModuleType, queue: pyopencl.CommandQueue) -> None:
        self._cl = cl
        self._queue = queue
        self._e0: pyopencl.Event | None = None

    def start(self) -> None:
        self._e0 = self._cl.enqueue_marker(self._queue)

    def stop(self) -> float:
        e1 = self._cl.enqueue_marker(self._queue)
        e1.wait()
        start = 0 if self._e0 is None else int(self._e0.profile.end)
        return max(0, int(e1.profile.end) - start) * 1e-9


class OpenCLDevice(HostData, DeviceBase):
    library = "opencl"
    kind = "opencl"

    def __init__(
        self,
        cl: ModuleType,
        platform: pyopencl.Platform,
        dev: pyopencl.Device,
        device_id: str,
    ) -> None:
        self._cl = cl
        self._platform = platform
        self._dev = dev
        self.id = device_id
        self.name = str(dev.name).strip()
        self._extensions = set(str(dev.extensions).split())
        self._ctx: pyopencl.Context | None = None
        self._queue: pyopencl.CommandQueue | None = None
        self._programs: dict[tuple[str, tuple[str, ...]], pyopencl.Program] = {}
        self._kernels: dict[tuple[str, str, tuple[str, ...]], pyopencl.Kernel] = {}

    # what a benchmark uses ------------------------------------------------------------------

    @property
    def lib(self) -> ModuleType:
        return self._cl

    @property
    def cl_device(self) -> pyopencl.Device:
        return self._dev

    @property
    def context(self) -> pyopencl.Context:
        if self._ctx is None:
            self._ctx = self._cl.Context([self._dev])
        return self._ctx

    @property
    def queue(self) -> pyopencl.CommandQueue:
        if self._queue is None:
            props = self._cl.command_queue_properties.PROFILING_ENABLE
            self._queue = self._cl.CommandQueue(self.context, properties=props)
        return self._queue

    def program(self, source: str, options: Sequence[str] = ()) -> pyopencl.Program:
        """``source`` built for this device, once (later calls return the cached program)."""
        key = (source, tuple(options))
        if key not in self._programs:
            self._programs[key] = self._cl.Program(self.context, source).build(
                options=list(options)
            )
        return self._programs[key]

    def kernel(self, source: str, name: str, options: Sequence[str] = ()) -> pyopencl.Kernel:
        """The kernel ``name`` of ``source``, built once and reused (a ``pyopencl.Kernel``)."""
        key = (source, name, tuple(options))
        if key not in self._kernels:
            self._kernels[key] = self._cl.Kernel(self.program(source, options), name)
        return self._kernels[key]

    # the common device surface ------------------------------------------------------------------

    def unsupported(self, dtype: str) -> str | None:
        if dtype not in NUMPY_DTYPE_NAMES:
            return f"OpenCL has no {dtype} buffers in pyopencl"
        if dtype == "f64" and not int(getattr(self._dev, "double_fp_config", 0) or 0):
            return f"{self.name} has no double precision (no cl_khr_fp64)"
        if dtype == "f16" and "cl_khr_fp16" not in self._extensions:
            return f"{self.name} has no half precision (no cl_khr_fp16)"
        return None

    def random(self, shape: Sequence[int], dtype: str = "f32") -> pyopencl.array.Array:
        from pyopencl import array as cla

        return cla.to_device(self.queue, self.host_random(shape, dtype))

    def zeros(self, shape: Sequence[int], dtype: str = "f32") -> pyopencl.array.Array:
        from pyopencl import array as cla

        return cla.zeros(self.queue, tuple(shape), self.dtype(dtype))

    def empty(self, shape: Sequence[int], dtype: str = "f32") -> pyopencl.array.Array:
        from pyopencl import array as cla

        return cla.empty(self.queue, tuple(shape), self.dtype(dtype))

    def asarray(self, obj: object, dtype: str | None = None) -> pyopencl.array.Array:
        import numpy as np
        from pyopencl import array as cla

        host = np.ascontiguousarray(
            np.asarray(obj, dtype=None if dtype is None else self.dtype(dtype))
        )
        return cla.to_device(self.queue, host)

    def to_host(self, x: pyopencl.array.Array) -> npt.NDArray[np.generic]:
        return x.get(queue=self.queue)

    def sync(self) -> None:
        self.queue.finish()

    def timer(self) -> MarkerTimer:
        return MarkerTimer(self._cl, self.queue)

    def fingerprint(self) -> dict[str, object]:
        d, cl = self._dev, self._cl
        # A CPU device's "global memory" is host memory, and drivers such as PoCL report a share of
        # what is free at the moment (4.60 GB in one run, 4.80 GB in the next on the same machine):
        # informative, not part of the device's identity.
        memory_key = "host_memory_bytes" if _type_slug(cl, d) == "cpu" else "memory_bytes"
        return {
            "id": self.id,
            "kind": self.kind,
            "library": self.library,
            "name": self.name,
            "vendor": str(d.vendor).strip(),
            "platform": str(self._platform.name).strip(),
            "device_type": str(cl.device_type.to_string(d.type)),
            memory_key: int(d.global_mem_size),
            "compute_units": int(d.max_compute_units),
            "clock_mhz": int(d.max_clock_frequency),
            "driver": str(d.driver_version).strip(),
            "runtime": str(d.version).strip(),
            "versions": {"pyopencl": str(cl.VERSION_TEXT)},
            **identity(host_cpu=_type_slug(cl, d) == "cpu"),
        }


def _type_slug(cl: ModuleType, dev: pyopencl.Device) -> str:
    t = int(dev.type)
    for flag, slug in (("GPU", "gpu"), ("CPU", "cpu"), ("ACCELERATOR", "acc")):
        if t & int(getattr(cl.device_type, flag)):
            return slug
    return "dev"


def probe(cl: ModuleType | None = None) -> Probe:
    """Find every OpenCL device. ``cl`` may be passed in (tests use a fake module)."""
    if cl is None:
        try:
            import pyopencl as _cl
        except ModuleNotFoundError:
            return Probe(
                "opencl",
                absent={"opencl": "pyopencl not installed (pip install pytest-burnperf[opencl])"},
            )
        except Exception as exc:  # e.g. libOpenCL.so missing: say what it said
            return Probe("opencl", absent={"opencl": f"pyopencl failed to import: {exc}"})
        cl = _cl
    version = str(getattr(cl, "VERSION_TEXT", "?"))
    try:
        platforms = list(cl.get_platforms())
    except Exception as exc:  # no ICD at all: clGetPlatformIDs fails
        return Probe("opencl", absent={"opencl": _NO_PLATFORM.format(version=version, error=exc)})
    result = Probe("opencl")
    counts: dict[str, int] = {}
    errors: list[str] = []
    for platform in platforms:
        try:
            devices = list(platform.get_devices())
        except Exception as exc:  # a platform with no usable device reports an error
            errors.append(f"{str(platform.name).strip()}: {exc}")
            continue
        pslug = platform_slug(str(platform.name))
        for dev in devices:
            stem = f"opencl-{pslug}-{_type_slug(cl, dev)}"
            n = counts.get(stem, 0)
            counts[stem] = n + 1
            result.devices.append(OpenCLDevice(cl, platform, dev, f"{stem}{n}"))
    if not result.devices:
        if not platforms:
            result.absent["opencl"] = _NO_PLATFORM.format(version=version, error="no platforms")
        else:
            detail = "; ".join(errors) or "the platforms list no devices"
            result.absent["opencl"] = f"pyopencl {version}: no OpenCL device ({detail})"
    return result

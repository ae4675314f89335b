"""Vulkan through wgpu-py: every Vulkan adapter (software ones such as llvmpipe/lavapipe included).

What a benchmark gets: ``device.gpu`` (a ``wg.GPUDevice``, created on first use with the
timestamp and f16 features the adapter offers), arrays that live in storage buffers
(:class:`VulkanArray`, from ``random/zeros/empty/asarray``) and ``device.kernel(wgsl)``, a
compute pipeline built once per source and dispatched with
``kernel(*arrays, workgroups=(x, y, z))``: the arrays bind, in order, to ``@group(0)
@binding(0..n-1)``. ``device.xp`` is absent: WGSL has no array namespace.

Device clock: timestamps written into the command stream before and after the timed calls
(``timestamp-query-inside-encoders``), converted with the queue's timestamp period. Adapters
without timestamp queries use the host clock.

Only Vulkan adapters are enumerated (wgpu's instance is restricted to the Vulkan back end when it
is created here): kind ``vulkan`` means Vulkan, and the GL back end's warnings stay quiet.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from pytest_burnperf.devices.base import NUMPY_DTYPE_NAMES, DeviceBase, HostData, Probe, identity

if TYPE_CHECKING:  # wgpu ships no type information: these name its types for the reader
    import numpy as np
    import numpy.typing as npt
    import wgpu as wg

#: dtype names with a WGSL type (f16 also needs the adapter's shader-f16 feature).
_WGSL = ("f16", "f32", "i32")
_TIMESTAMPS = ("timestamp-query", "timestamp-query-inside-encoders")


def adapter_slug(name: str) -> str:
    base = name.split("(", 1)[0].lower()
    words = re.findall(r"[a-z0-9]+", base)[:3]
    return "-".join(words) or "adapter"


class VulkanArray:
    """A storage buffer with a shape and a numpy dtype; ``device.to_host`` reads it back."""

    def __init__(
        self, buffer: wg.GPUBuffer, shape: tuple[int, ...], dtype: np.dtype[np.generic]
    ) -> None:
        self.buffer = buffer
        self.shape = shape
        self.dtype = dtype

    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        return self.size * int(self.dtype.itemsize)

    def __repr__(self) -> str:
        return f"VulkanArray(shape={self.shape}, dtype={self.dtype})"


class TimestampTimer:
    """Device time between two timestamps written into the queue's command stream."""

    name = "device"
    label = "Vulkan timestamp queries"

    def __init__(self, wgpu: ModuleType, gpu: wg.GPUDevice, period_ns: float) -> None:
        from wgpu.backends.wgpu_native import extras

        self._write = extras.write_timestamp
        self._gpu = gpu
        self._period = period_ns
        self._queries = gpu.create_query_set(type="timestamp", count=2)
        usage = wgpu.BufferUsage
        self._resolved = gpu.create_buffer(size=16, usage=usage.QUERY_RESOLVE | usage.COPY_SRC)

    def _stamp(self, index: int) -> None:
        enc = self._gpu.create_command_encoder()
        self._write(enc, self._queries, index)
        if index == 1:
            enc.resolve_query_set(self._queries, 0, 2, self._resolved, 0)
        self._gpu.queue.submit([enc.finish()])

    def start(self) -> None:
        self._stamp(0)

    def stop(self) -> float:
        import numpy as np

        self._stamp(1)
        t0, t1 = np.frombuffer(self._gpu.queue.read_buffer(self._resolved), dtype=np.uint64)[:2]
        return max(0, int(t1) - int(t0)) * self._period * 1e-9


class Kernel:
    """A WGSL compute pipeline; call it with the arrays to bind and the workgroup counts."""

    def __init__(self, device: VulkanDevice, source: str, entry_point: str) -> None:
        gpu = device.gpu
        self._device = device
        module = gpu.create_shader_module(code=source)
        self.pipeline = gpu.create_compute_pipeline(
            layout="auto", compute={"module": module, "entry_point": entry_point}
        )
        self._groups: dict[tuple[int, ...], wg.GPUBindGroup] = {}

    def _bind_group(self, arrays: Sequence[VulkanArray]) -> wg.GPUBindGroup:
        key = tuple(id(a.buffer) for a in arrays)
        group = self._groups.get(key)
        if group is None:
            entries = [
                {"binding": i, "resource": {"buffer": a.buffer, "offset": 0, "size": a.buffer.size}}
                for i, a in enumerate(arrays)
            ]
            group = self._device.gpu.create_bind_group(
                layout=self.pipeline.get_bind_group_layout(0), entries=entries
            )
            # keep the arrays alive while their bind group is cached (ids stay unique)
            self._groups[key] = group = (group, tuple(arrays))
        return group[0]

    def __call__(self, *arrays: VulkanArray, workgroups: int | Sequence[int]) -> None:
        for a in arrays:
            if not isinstance(a, VulkanArray):
                raise TypeError(f"kernel arguments must be VulkanArray buffers, got {a!r}")
        wg = (workgroups,) if isinstance(workgroups, int) else tuple(workgroups)
        gpu = self._device.gpu
        enc = gpu.create_command_encoder()
        compute = enc.begin_compute_pass()
        compute.set_pipeline(self.pipeline)
        compute.set_bind_group(0, self._bind_group(arrays))
        compute.dispatch_workgroups(*wg)
        compute.end()
        gpu.queue.submit([enc.finish()])


class VulkanDevice(HostData, DeviceBase):
    library = "vulkan"
    kind = "vulkan"

    def __init__(self, wgpu: ModuleType, adapter: wg.GPUAdapter, device_id: str) -> None:
        self._wgpu = wgpu
        self._adapter = adapter
        self.id = device_id
        self._info = dict(adapter.info)
        self.name = str(self._info.get("device") or adapter.summary)
        self._features = {str(f) for f in adapter.features}
        self._gpu: wg.GPUDevice | None = None
        self._kernels: dict[tuple[str, str], Kernel] = {}
        self._sync_buffer: wg.GPUBuffer | None = None

    @property
    def lib(self) -> ModuleType:
        return self._wgpu

    @property
    def adapter(self) -> wg.GPUAdapter:
        return self._adapter

    @property
    def has_timestamps(self) -> bool:
        return all(f in self._features for f in _TIMESTAMPS)

    @property
    def gpu(self) -> wg.GPUDevice:
        """The ``wg.GPUDevice`` (created on first use)."""
        if self._gpu is None:
            wanted = [*(_TIMESTAMPS if self.has_timestamps else ()), "shader-f16"]
            features = [f for f in wanted if f in self._features]
            self._gpu = self._adapter.request_device_sync(required_features=features)
        return self._gpu

    def kernel(self, source: str, entry_point: str = "main") -> Kernel:
        """The compute pipeline for a WGSL ``source``, built once per device."""
        key = (source, entry_point)
        if key not in self._kernels:
            self._kernels[key] = Kernel(self, source, entry_point)
        return self._kernels[key]

    def unsupported(self, dtype: str) -> str | None:
        if dtype == "f16":
            return None if "shader-f16" in self._features else f"{self.name} has no shader-f16"
        if dtype not in _WGSL:
            return f"WGSL compute shaders (wgpu) have no {dtype} type; use f32, i32 or f16"
        return None

    def _buffer(self, host: npt.NDArray[np.generic]) -> VulkanArray:
        usage = self._wgpu.BufferUsage
        flags = usage.STORAGE | usage.COPY_SRC | usage.COPY_DST
        if host.nbytes == 0:
            raise ValueError(f"{self.id}: cannot make an empty buffer")
        buf = self.gpu.create_buffer_with_data(data=host.tobytes(), usage=flags)
        return VulkanArray(buf, tuple(host.shape), host.dtype)

    def random(self, shape: Sequence[int], dtype: str = "f32") -> VulkanArray:
        return self._buffer(self.host_random(shape, dtype))

    def zeros(self, shape: Sequence[int], dtype: str = "f32") -> VulkanArray:
        import numpy as np

        return self._buffer(np.zeros(tuple(shape), dtype=self.dtype(dtype)))

    empty = zeros

    def asarray(self, obj: object, dtype: str | None = None) -> VulkanArray:
        import numpy as np

        host = np.ascontiguousarray(
            np.asarray(obj, dtype=None if dtype is None else self.dtype(dtype))
        )
        if host.dtype not in [np.dtype(NUMPY_DTYPE_NAMES[n]) for n in _WGSL]:
            raise ValueError(f"{self.id}: no WGSL type for dtype {host.dtype}; use f32, i32 or f16")
        return self._buffer(host)

    def to_host(self, x: VulkanArray) -> npt.NDArray[np.generic]:
        import numpy as np

        raw = self.gpu.queue.read_buffer(x.buffer)
        host: npt.NDArray[np.generic] = np.frombuffer(raw, dtype=x.dtype)[: x.size]
        out: npt.NDArray[np.generic] = host.reshape(x.shape).copy()
        return out

    def sync(self) -> None:
        # Reading a small buffer back waits for everything submitted before it (queues run in
        # order); this works on every wgpu version, unlike on_submitted_work_done_sync.
        if self._sync_buffer is None:
            usage = self._wgpu.BufferUsage
            self._sync_buffer = self.gpu.create_buffer(size=4, usage=usage.COPY_SRC)
        self.gpu.queue.read_buffer(self._sync_buffer)

    def timer(self) -> TimestampTimer | None:
        if not self.has_timestamps:
            return None
        return TimestampTimer(self._wgpu, self.gpu, _timestamp_period(self.gpu))

    def fingerprint(self) -> dict[str, object]:
        info = self._info
        limits = dict(self._adapter.limits)
        from wgpu.backends.wgpu_native import lib_version_info

        return {
            "id": self.id,
            "kind": self.kind,
            "library": self.library,
            "name": self.name,
            "vendor": str(info.get("vendor", "")),
            "vendor_id": int(info.get("vendor_id", 0) or 0),
            "device_id": int(info.get("device_id", 0) or 0),
            "adapter_type": str(info.get("adapter_type", "")),
            "max_buffer_bytes": int(limits.get("max-buffer-size", 0) or 0),
            "driver": str(info.get("description", "")),
            "versions": {
                "wgpu": str(self._wgpu.__version__),
                "wgpu-native": ".".join(str(v) for v in lib_version_info),
            },
            **identity(host_cpu=str(info.get("adapter_type", "")).lower() == "cpu"),
        }


def _timestamp_period(gpu: wg.GPUDevice) -> float:
    """Nanoseconds per timestamp tick (wgpuQueueGetTimestampPeriod; 1.0 where unknown)."""
    try:
        from wgpu.backends.wgpu_native import lib

        period = float(lib.wgpuQueueGetTimestampPeriod(gpu.queue._internal))
    except Exception:  # an older wgpu-py without the call: timestamps are nanoseconds there
        return 1.0
    return period if math.isfinite(period) and period > 0 else 1.0


def _vulkan_only(wgpu: ModuleType) -> None:
    try:
        from wgpu.backends.wgpu_native import extras

        extras.set_instance_extras(backends=["Vulkan"])
    except Exception:  # the instance exists already (the benchmark made one): take what it has
        pass


def probe(wgpu: ModuleType | None = None) -> Probe:
    """Find every Vulkan adapter. ``wgpu`` may be passed in (tests use a fake module)."""
    if wgpu is None:
        try:
            import wgpu as _wgpu
        except ModuleNotFoundError:
            return Probe(
                "vulkan",
                absent={"vulkan": "wgpu not installed (pip install pytest-burnperf[vulkan])"},
            )
        except Exception as exc:  # the native library failed to load: say what it said
            return Probe("vulkan", absent={"vulkan": f"wgpu failed to import: {exc}"})
        wgpu = _wgpu
        _vulkan_only(wgpu)
    version = str(getattr(wgpu, "__version__", "?"))
    try:
        adapters = list(wgpu.gpu.enumerate_adapters_sync())
    except Exception as exc:  # loader or driver errors
        return Probe("vulkan", absent={"vulkan": f"wgpu {version} could not list adapters: {exc}"})
    result = Probe("vulkan")
    counts: dict[str, int] = {}
    others: list[str] = []
    for adapter in adapters:
        info = dict(adapter.info)
        if str(info.get("backend_type", "")).lower() != "vulkan":
            others.append(str(adapter.summary))
            continue
        stem = f"vulkan-{adapter_slug(str(info.get('device') or adapter.summary))}"
        n = counts.get(stem, 0)
        counts[stem] = n + 1
        sep = "-" if stem[-1].isdigit() else ""
        result.devices.append(VulkanDevice(wgpu, adapter, f"{stem}{sep}{n}"))
    if not result.devices:
        seen = f"; wgpu found only: {', '.join(others)}" if others else ""
        result.absent["vulkan"] = (
            f"wgpu {version} is installed, but found no Vulkan adapter{seen}; install a Vulkan "
            "driver, e.g. apt-get install mesa-vulkan-drivers libvulkan1 (lavapipe, on the CPU)"
        )
    return result

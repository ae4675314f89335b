"""cupy on CUDA and ROCm (cupy built for HIP reports ``cupy.cuda.runtime.is_hip``).

Device clock: ``cupy.cuda.Event`` pairs on the current stream. Peak memory: the growth of cupy's
default memory pool while the call runs, after freeing its cached blocks first (the pool keeps what
it allocated, so its total after the call is the high-water mark of the call).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from .base import (
    NUMPY_DTYPE_NAMES,
    DeviceBase,
    EventTimer,
    Probe,
    fill_random,
    identity,
    nvml_fields,
)

_FLUSH_MIN_BYTES = 256 * 1024 * 1024


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _version(code: int) -> str:
    """CUDA encodes 12.9 as 12090; HIP as major*10_000_000 + minor*100_000 + patch."""
    if code >= 10_000_000:
        return f"{code // 10_000_000}.{code // 100_000 % 100}.{code % 100_000}"
    return f"{code // 1000}.{code % 1000 // 10}"


class CupyDevice(DeviceBase):
    library = "cupy"
    compat = "cupy"

    def __init__(self, cupy: Any, kind: str, index: int) -> None:
        self._cp = cupy
        self.kind = kind
        self.index = index
        self.id = f"cupy-{kind}{index}"
        self._props = cupy.cuda.runtime.getDeviceProperties(index)
        self.name = _text(self._props["name"])
        self._dev = cupy.cuda.Device(index)
        self._rng: Any = None

    @property
    def lib(self) -> Any:
        return self._cp

    def unsupported(self, dtype: str) -> str | None:
        if dtype == "bf16":
            return "cupy has no bfloat16 dtype"
        return None if dtype in NUMPY_DTYPE_NAMES else f"cupy has no dtype {dtype!r}"

    def dtype(self, name: str) -> Any:
        reason = self.unsupported(name)
        if reason:
            raise ValueError(f"{self.id}: {reason}")
        return getattr(self._cp, NUMPY_DTYPE_NAMES[name])

    def reseed(self, seed: int) -> None:
        with self._dev:
            self._rng = self._cp.random.default_rng(seed)

    def random(self, shape: Sequence[int], dtype: str = "f32") -> Any:
        if self._rng is None:
            self.reseed(0)
        with self._dev:
            return fill_random(self._rng, shape, dtype, self.dtype(dtype), self._cp.float32)

    def zeros(self, shape: Sequence[int], dtype: str = "f32") -> Any:
        with self._dev:
            return self._cp.zeros(tuple(shape), dtype=self.dtype(dtype))

    def asarray(self, obj: Any, dtype: str | None = None) -> Any:
        with self._dev:
            return self._cp.asarray(obj, dtype=None if dtype is None else self.dtype(dtype))

    def to_host(self, x: Any) -> Any:
        return self._cp.asnumpy(x)

    def sync(self) -> None:
        self._dev.synchronize()

    def timer(self) -> EventTimer:
        cp = self._cp
        with self._dev:
            label = "HIP events" if self.kind == "rocm" else "CUDA events"
            return EventTimer(cp.cuda.Event, cp.cuda.get_current_stream(), label=label)

    def l2_flusher(self) -> Callable[[], None]:
        l2 = int(self._props.get("l2CacheSize", 0) or 0)
        with self._dev:
            buf = self._cp.empty(max(_FLUSH_MIN_BYTES, 2 * l2), dtype=self._cp.int8)

        def flush() -> None:
            buf.fill(0)

        return flush

    def peak_memory(self, call: Callable[[], Any]) -> int | None:
        pool = self._cp.get_default_memory_pool()
        self.sync()
        pool.free_all_blocks()
        before = int(pool.total_bytes())
        call()
        self.sync()
        return max(0, int(pool.total_bytes()) - before)

    def fingerprint(self) -> dict[str, Any]:
        cp, p = self._cp, self._props
        rt = cp.cuda.runtime
        hip = bool(getattr(rt, "is_hip", False))
        if hip:
            capability = _text(p.get("gcnArchName", f"{p.get('major')}.{p.get('minor')}"))
        else:
            capability = f"{p.get('major')}.{p.get('minor')}"
        return {
            "id": self.id,
            "kind": self.kind,
            "library": self.library,
            "name": self.name,
            "memory_bytes": int(p.get("totalGlobalMem", 0)),
            "compute_units": int(p.get("multiProcessorCount", 0)),
            "capability": capability,
            "driver": _version(int(rt.driverGetVersion())),
            "runtime": f"{'HIP' if hip else 'CUDA'} {_version(int(rt.runtimeGetVersion()))}",
            "versions": {"cupy": str(cp.__version__)},
            "precision": self.precision(),
            **identity(host_cpu=False),
            **({} if hip else nvml_fields(self.pci())),
        }

    def precision(self) -> dict[str, Any]:
        from ..precision import cupy_modes

        return cupy_modes()

    def pci(self) -> str | None:
        """PCI address of the GPU (NVML finds it by that), or None."""
        from ..nvml import pci_address

        p = self._props
        try:
            return pci_address(int(p["pciDomainID"]), int(p["pciBusID"]), int(p["pciDeviceID"]))
        except (KeyError, TypeError, ValueError):
            return None

    def gpu_slowdown(self) -> str | None:
        from ..nvml import slowdown

        return None if self.kind == "rocm" else slowdown(self.pci())


def probe(cupy: Any = None) -> Probe:
    """Find cupy's GPUs. ``cupy`` may be passed in (tests use a fake module)."""
    result = Probe("cupy")
    if cupy is None:
        try:
            import cupy as _cupy
        except ModuleNotFoundError:
            reason = "cupy not installed (pip install pytest-burnperf[cupy])"
            return Probe("cupy", absent={"cuda": reason, "rocm": reason})
        except Exception as exc:  # a broken install, e.g. a CUDA library missing: say what it said
            reason = f"cupy failed to import: {exc}"
            return Probe("cupy", absent={"cuda": reason, "rocm": reason})
        cupy = _cupy
    version = str(cupy.__version__)
    hip = bool(getattr(cupy.cuda.runtime, "is_hip", False))
    kind, other = ("rocm", "cuda") if hip else ("cuda", "rocm")
    label, other_label = ("ROCm", "CUDA") if hip else ("CUDA", "ROCm")
    result.absent[other] = f"cupy {version} is built for {label}, not {other_label}"
    try:
        count = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as exc:  # no driver, no device: the runtime's own words
        result.absent[kind] = f"cupy {version} is installed, but found no {label} device: {exc}"
        return result
    if count == 0:
        result.absent[kind] = f"cupy {version} is installed, but found no {label} device"
    for i in range(count):
        result.devices.append(CupyDevice(cupy, kind, i))
    return result

"""numpy on the CPU."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType
from typing import TYPE_CHECKING

from pytest_burnperf.core.memory.call_figures import MemoryCalls
from pytest_burnperf.devices.base import (
    NUMPY_DTYPE_NAMES,
    DeviceBase,
    MakeCall,
    Probe,
    fill_random,
    identity,
)
from pytest_burnperf.devices.memory_meters import (
    allocator_unavailable,
    host_calls,
    host_peak,
    tracemalloc_peak,
)
from pytest_burnperf.devices.thread_limits import blas_threads, cpu_threads
from pytest_burnperf.host.hardware import (
    blas_core,
    cpu_count,
    cpu_model,
    memory_bytes,
    numpy_dispatch,
)

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt


class NumpyDevice(DeviceBase):
    library = "numpy"
    kind = "cpu"
    id = "numpy-cpu"

    def __init__(self) -> None:
        import numpy as np

        self._np = np
        self.name = cpu_model()
        if int(np.__version__.split(".")[0]) >= 2:
            self._xp: ModuleType = (
                np  # numpy 2 implements the array API itself: no wrapper overhead
            )
        else:  # pragma: no cover - numpy 1.x
            import array_api_compat.numpy as compat

            self._xp = compat
        self._rng = np.random.default_rng(0)

    @property
    def xp(self) -> ModuleType:
        return self._xp

    @property
    def lib(self) -> ModuleType:
        return self._np

    def unsupported(self, dtype: str) -> str | None:
        if dtype == "bf16":
            return "numpy has no bfloat16 dtype"
        return None if dtype in NUMPY_DTYPE_NAMES else f"numpy has no dtype {dtype!r}"

    def dtype(self, name: str) -> type[np.generic]:
        reason = self.unsupported(name)
        if reason:
            raise ValueError(f"{self.id}: {reason}")
        scalar: type[np.generic] = getattr(self._np, NUMPY_DTYPE_NAMES[name])
        return scalar

    def reseed(self, seed: int) -> None:
        self._rng = self._np.random.default_rng(seed)

    def random(self, shape: Sequence[int], dtype: str = "f32") -> npt.NDArray[np.generic]:
        out: npt.NDArray[np.generic] = fill_random(
            self._rng, shape, dtype, self.dtype(dtype), self._np.float32
        )
        return out

    def zeros(self, shape: Sequence[int], dtype: str = "f32") -> npt.NDArray[np.generic]:
        return self._np.zeros(tuple(shape), dtype=self.dtype(dtype))

    def asarray(self, obj: object, dtype: str | None = None) -> npt.NDArray[np.generic]:
        return self._np.asarray(obj, dtype=None if dtype is None else self.dtype(dtype))

    def to_host(self, x: object) -> npt.NDArray[np.generic]:
        return self._np.asarray(x)

    def sync(self) -> None:
        return None

    @contextlib.contextmanager
    def threads(self, n: int) -> Iterator[None]:
        with cpu_threads(n):
            yield

    def peak_memory(self, call: Callable[[], object]) -> int | None:
        return host_peak(call, tracemalloc_peak)

    def peak_is_tracked(self) -> bool:
        return allocator_unavailable() is None  # numpy reports its buffers to tracemalloc

    def memory_per_call(self, make_call: MakeCall, calls: int = 3) -> MemoryCalls | str:
        __tracebackhide__ = True
        return host_calls(make_call, calls)

    def fingerprint(self) -> dict[str, object]:
        blas = "unknown"
        try:
            cfg = self._np.show_config(mode="dicts")
            blas = str(cfg["Build Dependencies"]["blas"]["name"])
        except Exception:  # older numpy or an unusual build: the BLAS name is a nicety
            pass
        return {
            "id": self.id,
            "kind": self.kind,
            "library": self.library,
            "name": self.name,
            "cpus": cpu_count(),
            "threads": blas_threads(),
            "host_memory_bytes": memory_bytes(),
            "versions": {"numpy": self._np.__version__},
            "blas": blas,
            **identity(
                host_cpu=True,
                dispatch={"numpy": numpy_dispatch(self._np), "blas": blas_core()},
            ),
        }


def probe() -> Probe:
    try:
        return Probe("numpy", devices=[NumpyDevice()])
    except ModuleNotFoundError:  # pragma: no cover - numpy is a dependency
        return Probe("numpy", absent={"cpu": "numpy not installed"})
    except Exception as exc:  # pragma: no cover - a broken install: say what it said
        return Probe("numpy", absent={"cpu": f"numpy failed to import: {exc}"})

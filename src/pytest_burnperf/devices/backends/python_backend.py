"""The host CPU as a test written for pytest-benchmark sees it: Python code, no array library.

A ``benchmark`` test is not parametrised over devices: it runs on the host CPU with whatever
its own code imports. Its device says so (``python-cpu``, dtype ``-``): its fingerprint is the
CPU's identity and the interpreter, not numpy's version, BLAS or SIMD dispatch, so a project
that does not use numpy is neither labelled numpy nor made incomparable by a numpy upgrade.
It is not one of the backends a ``perf`` marker asks for (``burnperf devices`` lists those).
"""

from __future__ import annotations

import contextlib
import platform
from collections.abc import Callable, Iterator, Sequence

from pytest_burnperf.core.memory.call_figures import MemoryCalls
from pytest_burnperf.devices.base import DeviceBase, MakeCall, identity
from pytest_burnperf.devices.memory_meters import (
    allocator_unavailable,
    host_calls,
    host_peak,
    tracemalloc_peak,
)
from pytest_burnperf.devices.thread_limits import cpu_threads
from pytest_burnperf.host.hardware import cpu_count, cpu_model, memory_bytes

#: The device id, and the dtype a pytest-benchmark test is shown with (its data is its own).
DEVICE_ID = "python-cpu"
NO_DTYPE = "-"

_NO_ARRAYS = (
    "{id} is the host CPU of a test written for pytest-benchmark: it has no array library; "
    "make the test's data in the test, or write it with @pytest.mark.perf(backends=[...]) to "
    "get device arrays"
)


class PythonDevice(DeviceBase):
    library = "python"
    kind = "cpu"
    id = DEVICE_ID
    #: The interpreter's part of the reference probe only: a pure-Python benchmark runs the
    #: interpreter, and the probe's 64 MiB memory copy moved by 25-50% on a shared 2-core
    #: Intel host while the interpreter loop stayed within 4%, so the copy "explained" planted
    #: +15-20% slowdowns of pure-Python code (docs/pytest-benchmark-suites.md)
    probe_parts: tuple[str, ...] | None = ("python",)

    def __init__(self) -> None:
        self.name = cpu_model()

    def _no_arrays(self) -> ValueError:
        return ValueError(_NO_ARRAYS.format(id=self.id))

    @property
    def xp(self) -> object:
        raise AttributeError(_NO_ARRAYS.format(id=self.id))

    @property
    def lib(self) -> object:
        raise AttributeError(_NO_ARRAYS.format(id=self.id))

    def unsupported(self, dtype: str) -> str | None:
        return None if dtype == NO_DTYPE else f"{self.id} has no dtype {dtype!r}"

    def dtype(self, name: str) -> object:
        raise self._no_arrays()

    def reseed(self, seed: int) -> None:
        return None

    def random(self, shape: Sequence[int], dtype: str = "f32") -> object:
        raise self._no_arrays()

    def zeros(self, shape: Sequence[int], dtype: str = "f32") -> object:
        raise self._no_arrays()

    def asarray(self, obj: object, dtype: str | None = None) -> object:
        raise self._no_arrays()

    def to_host(self, x: object) -> object:
        return x

    def sync(self) -> None:
        return None

    @contextlib.contextmanager
    def threads(self, n: int) -> Iterator[None]:
        with cpu_threads(n):  # the thread pools the test's own imports started
            yield

    def peak_memory(self, call: Callable[[], object]) -> int | None:
        return host_peak(call, tracemalloc_peak)

    def peak_is_tracked(self) -> bool:
        return allocator_unavailable() is None

    def memory_per_call(self, make_call: MakeCall, calls: int = 3) -> MemoryCalls | str:
        __tracebackhide__ = True
        return host_calls(make_call, calls)

    def fingerprint(self) -> dict[str, object]:
        return {
            "id": self.id,
            "kind": self.kind,
            "library": self.library,
            "name": self.name,
            "cpus": cpu_count(),
            "host_memory_bytes": memory_bytes(),
            "versions": {"python": platform.python_version()},
            **identity(host_cpu=True),
        }

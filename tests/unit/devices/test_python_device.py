"""The host CPU of a test written for pytest-benchmark: no array library, no numpy in its
identity."""

from __future__ import annotations

import pytest

from pytest_burnperf.devices import Registry
from pytest_burnperf.devices.backends.python_backend import DEVICE_ID, NO_DTYPE, PythonDevice
from pytest_burnperf.host.hardware import IDENTITY_VERSION


def test_its_identity_is_the_host_cpu_and_the_interpreter() -> None:
    fp = PythonDevice().fingerprint()
    assert fp["id"] == DEVICE_ID and fp["library"] == "python" and fp["kind"] == "cpu"
    assert set(fp["versions"]) == {"python"}  # type: ignore[arg-type]
    assert fp["identity"] == IDENTITY_VERSION and isinstance(fp["cpu"], dict)
    assert fp["dispatch"] == {} and "blas" not in fp and "threads" not in fp


def test_it_has_no_arrays_and_says_what_to_do() -> None:
    dev = PythonDevice()
    for make in (lambda: dev.random((2,)), lambda: dev.zeros((2,)), lambda: dev.asarray([1])):
        with pytest.raises(ValueError, match=r"python-cpu is the host CPU .* no array library"):
            make()
    with pytest.raises(AttributeError, match="no array library"):
        _ = dev.xp
    assert dev.unsupported(NO_DTYPE) is None and dev.unsupported("f32") is not None
    assert dev.to_host([1, 2]) == [1, 2] and dev.peak_memory(lambda: [0] * 1000) is not None


def test_a_marker_never_finds_it() -> None:
    reg = Registry(probes={})
    assert reg.python().device is reg.python().device  # one device, made once
    assert reg.resolve("cpu") == []  # only the libraries' devices answer a backend name

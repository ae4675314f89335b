"""Is an exception a device fault? The words CUDA, ROCm, OpenCL and Vulkan drivers use for a fault
that leaves the device unusable for the rest of the process."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pytest_burnperf.core.clocks import GraphCaptureError

if TYPE_CHECKING:
    pass


#: Words of the errors after which a GPU context is not to be trusted again in this process: an
#: asynchronous CUDA/HIP fault (an illegal address, a device-side assert, a launch failure) is
#: sticky and surfaces in whichever call syncs next, so every later benchmark would fail too.
DEVICE_ERROR_WORDS = (
    "cuda error",
    "cudaerror",
    "cuda_error",
    "hip error",
    "hiperror",
    "device-side assert",
    "illegal memory access",
    "illegal address",
    "illegal instruction",
    "misaligned address",
    "unspecified launch failure",
    "launch timed out",
    "cudaruntimeerror",
    "cudadrivererror",
    "acceleratorerror",
)


def device_error(exc: BaseException) -> str | None:
    """The one-line text of ``exc`` when it is a GPU fault that poisons the device for the
    rest of the process (``DEVICE_ERROR_WORDS``), else None; out-of-memory is not one."""
    text = f"{type(exc).__name__}: {exc}".strip()
    low = text.lower()
    if "out of memory" in low or isinstance(exc, GraphCaptureError):
        return None  # a failed capture is ended and leaves the device usable
    if any(w in low for w in DEVICE_ERROR_WORDS):
        return " ".join(text.split())[:300]
    return None

"""The device protocol every backend implements, and the result of probing a library."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class Device(Protocol):
    """What a benchmark gets as its ``device`` fixture.

    ``xp`` is an array-API namespace, so one benchmark body serves numpy, torch and friends;
    ``lib`` is the library itself for library-specific code (``torch.nn.functional`` and so on).
    """

    id: str
    kind: str
    library: str
    name: str

    @property
    def xp(self) -> Any: ...

    @property
    def lib(self) -> Any: ...

    def dtype(self, name: str) -> Any:
        """The library's dtype object for a dtype name such as ``"f32"``."""

    def unsupported(self, dtype: str) -> str | None:
        """``None`` if the device can compute in ``dtype``, else the reason it cannot."""

    def random(self, shape: Sequence[int], dtype: str = "f32") -> Any:
        """Seeded data: standard normal for floats, uniform in [0, 100) for integers."""

    def zeros(self, shape: Sequence[int], dtype: str = "f32") -> Any: ...

    def asarray(self, obj: Any, dtype: str | None = None) -> Any: ...

    def to_host(self, x: Any) -> Any:
        """A numpy array with the values of ``x``."""

    def sync(self) -> None:
        """Wait until all work queued on the device has finished."""

    def reseed(self, seed: int) -> None:
        """Restart the generator behind :meth:`random` (done before every benchmark)."""

    def fingerprint(self) -> dict[str, Any]:
        """What identifies this device and its software, for results and baselines."""


@dataclass
class Probe:
    """What probing one library found: devices, and for each kind it found nothing of, why."""

    library: str
    devices: list[Device] = field(default_factory=list)
    absent: dict[str, str] = field(default_factory=dict)

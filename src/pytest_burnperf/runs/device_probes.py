"""The reference probe of each device a run uses (host/probe.py), measured once per process on
first use; a device that cannot run it gets none, and the summary says why."""

from __future__ import annotations

from pytest_burnperf.devices.base import Device
from pytest_burnperf.host import probe


class Probes:
    """This process's probe per device id, and the host parts they share."""

    def __init__(self, messages: list[str]) -> None:
        self.messages = messages
        self.by_device: dict[str, dict[str, object]] = {}
        self._host: dict[str, float] | None = None

    def for_device(self, device: Device) -> dict[str, object] | None:
        """The reference probe of ``device`` in this process, measured on first use."""
        if device.id not in self.by_device:
            try:
                if self._host is None:
                    self._host = probe.host_parts()
                self.by_device[device.id] = probe.measure(device, self._host)
            except Exception as exc:  # a device that cannot run the probe: no probe, say why
                self.messages.append(
                    f"reference probe on {device.id} failed, so its verdicts cannot tell a slower "
                    f"host from slower code: {type(exc).__name__}: {exc}"
                )
                self.by_device[device.id] = {}
        return self.by_device[device.id] or None

"""``burnperf devices``: the devices this machine offers and, for each kind a library could serve
but does not, why."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import stat
import tempfile
from collections.abc import Iterator
from typing import Any

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.options.settings import (
    DTYPES,
)
from pytest_burnperf.devices import Registry
from pytest_burnperf.devices.base import Device, graph_unsupported


def device_info(device: Device) -> dict[str, object]:
    """What ``burnperf devices`` shows for one device: its fingerprint, dtypes and clock."""

    info = dict(device.fingerprint())
    info["dtypes"] = [d for d in DTYPES if device.unsupported(d) is None]
    info["unsupported_dtypes"] = {
        d: reason for d in DTYPES if (reason := device.unsupported(d)) is not None
    }
    try:
        timer = device.timer()
    except Exception as exc:  # a driver that cannot make events: say so, keep listing
        info["clock"] = f"host (device clock failed: {exc})"
    else:
        label = getattr(timer, "label", type(timer).__name__)
        info["clock"] = "host (wall time around sync)" if timer is None else f"device ({label})"
    info["graphs"] = graph_unsupported(device) is None
    return info


def _gib(n: object) -> str:
    return f"{int(n) / 2**30:.1f} GiB" if isinstance(n, int) and n > 0 else "-"


@contextlib.contextmanager
def _quiet_mesa() -> Iterator[None]:
    """Mesa's Vulkan driver complains on stderr when XDG_RUNTIME_DIR is unset or unusable (each
    time it loads); give it a private directory while the devices are listed, so the listing is
    not interleaved with that, and remove the directory and the setting afterwards."""
    current = os.environ.get("XDG_RUNTIME_DIR")
    try:
        ok = current is not None and stat.S_IMODE(os.stat(current).st_mode) == 0o700
    except OSError:
        ok = False
    if ok:
        yield
        return
    with tempfile.TemporaryDirectory(prefix="burnperf-xdg-") as private:
        os.environ["XDG_RUNTIME_DIR"] = private
        try:
            yield
        finally:
            if current is None:
                os.environ.pop("XDG_RUNTIME_DIR", None)
            else:
                os.environ["XDG_RUNTIME_DIR"] = current


def cmd_devices(args: argparse.Namespace) -> int:
    with _quiet_mesa():
        probes = Registry().probe_all()
        infos = [device_info(d) for p in probes for d in p.devices]
    absent = {p.library: p.absent for p in probes if p.absent}
    if args.json:
        print(json.dumps({"devices": infos, "absent": absent}, indent=1, sort_keys=True))
        return 0
    for info in infos:
        memory = info.get("memory_bytes", info.get("host_memory_bytes"))
        versions = ", ".join(
            f"{k} {v}" for k, v in sorted(jf.mapping(info.get("versions")).items())
        )
        what = dict.fromkeys((str(info["kind"]), str(info["library"])))  # "opencl" said once
        print(f"{info['id']}  ({', '.join(what)})")
        print(f"  model:         {info['name']}")
        print(f"  memory:        {_gib(memory)}")
        units = info.get("compute_units", info.get("cpus"))
        print(f"  compute units: {units if units is not None else '-'}")
        if info.get("threads") is not None:
            print(
                f"  threads:       {info['threads']} by the library's default; benchmarks run "
                "with 1 unless threads= or --perf-threads say otherwise"
            )
        for key, label in (
            ("capability", "capability"),
            ("blas", "BLAS"),
            ("driver", "driver"),
            ("runtime", "runtime"),
        ):
            if info.get(key) not in (None, ""):
                print(f"  {label + ':':<14} {info[key]}")
        print(f"  versions:      {versions or '-'}")
        print(f"  clock:         {info['clock']}")
        print(f"  dtypes:        {', '.join(map(str, jf.sequence(info.get('dtypes')))) or '-'}")
        graphs = "yes (timer='graph' times CUDA-graph replays)" if info["graphs"] else "no"
        print(f"  graphs:        {graphs}")
    if not infos:
        print("no devices found")
    print()
    print("not available:")
    for library, kinds in absent.items():
        for kind, reason in kinds.items():
            name = library if kind == library else f"{library} {kind}"  # "opencl", not twice
            print(f"  {name}: {reason}")
    return 0


def register(sub: Any) -> None:
    dev = sub.add_parser("devices", help="list the devices found here, and why others are missing")
    dev.add_argument("--json", action="store_true", help="print JSON instead of a table")
    dev.set_defaults(func=cmd_devices)

"""Marker keywords and settings: validated, frozen, and with errors that name what is wrong.

Nothing here imports pytest or an array library, so the CLI and unit tests use it directly.
Every parser takes the raw value and a ``where`` string (``"--perf-alpha"``, ``"ini perf_alpha"``,
``"test_matmul: @pytest.mark.perf(alpha=...)"``) and raises :class:`SettingsError` with a message that
names that place, the bad value and what is allowed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal, cast

#: Device kinds a benchmark may ask for.
KINDS: tuple[str, ...] = ("cpu", "cuda", "rocm", "metal", "opencl", "vulkan")

#: Array/device libraries and the kinds each can serve.
LIBRARY_KINDS: dict[str, tuple[str, ...]] = {
    "numpy": ("cpu",),
    "torch": ("cpu", "cuda", "rocm", "metal"),
    "cupy": ("cuda", "rocm"),
    "opencl": ("opencl",),
    "vulkan": ("vulkan",),
}

#: Dtype names a benchmark may ask for, with the size of one element in bytes.
DTYPES: dict[str, int] = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i32": 4, "i64": 8}

#: Clocks a sample can come from. ``device``: the device's own events (CUDA/HIP events, OpenCL
#: profiling, Vulkan timestamp queries) where it has them, else the host clock; ``host``: wall time
#: on the host, bracketed by ``device.sync()``; ``graph``: the device's events around the replay
#: of a CUDA graph the calls were captured into (devices without graphs skip it).
#: The clocks a benchmark may ask for (``timer=``).
TimerName = Literal["device", "host", "graph"]
TIMERS: tuple[TimerName, ...] = ("device", "host", "graph")

_DEVICE_ID = re.compile(r"^(?P<lib>[a-z]+)-(?P<rest>[a-z0-9][a-z0-9_.-]*)$")


#: Size presets of a run (``--perf-size``): benchmarks pick their shapes from it. ``tiny`` is for
#: correctness runs (seconds for the whole suite), ``small`` the default (the shipped suite on a
#: 2-core CPU in minutes), ``full`` GPU-sized shapes like burn-bench's.
SIZES: tuple[str, ...] = ("tiny", "small", "medium", "full")

DEFAULT_SIZE = "small"


class SettingsError(ValueError):
    """A marker keyword, option or ini value that is not allowed. The message says why."""


def allowed_backend_names() -> str:
    libs = ", ".join(LIBRARY_KINDS)
    return (
        f"a device kind ({', '.join(KINDS)}), a library ({libs}), "
        "or a device id such as numpy-cpu, torch-cpu, torch-cuda0 (see `burnperf devices`)"
    )


def check_backend_name(name: object, where: str) -> str:
    """Return ``name`` if it is a kind, a library or a device id; raise SettingsError otherwise."""
    if not isinstance(name, str) or not name:
        raise SettingsError(
            f"{where}: backend {name!r} is not a name; expected {allowed_backend_names()}"
        )
    if name in KINDS or name in LIBRARY_KINDS:
        return name
    m = _DEVICE_ID.match(name)
    if m:
        lib, rest = m.group("lib"), m.group("rest")
        if lib in ("opencl", "vulkan"):
            return name
        kinds = LIBRARY_KINDS.get(lib)
        if kinds is not None:
            kind = rest.rstrip("0123456789")
            if kind in kinds:
                return name
    raise SettingsError(f"{where}: unknown backend {name!r}; expected {allowed_backend_names()}")


def check_dtype_name(name: object, where: str) -> str:
    if isinstance(name, str) and name in DTYPES:
        return name
    raise SettingsError(f"{where}: unknown dtype {name!r}; allowed: {', '.join(DTYPES)}")


def _name_list(value: object, where: str, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)):  # not a dict or a set: its keys would be read
        items = list(value)
    else:
        raise SettingsError(f"{where}: {what} must be a list of names, got {_show(value)}")
    if not items or any(i == "" for i in items):
        raise SettingsError(
            f"{where}: {what} must name at least one entry and no empty ones, got {_show(value)}"
        )
    return tuple(items)


def parse_backends(value: object, where: str) -> tuple[str, ...]:
    names = _name_list(value, where, "backends")
    return tuple(dict.fromkeys(check_backend_name(n, where) for n in names))


def parse_dtypes(value: object, where: str) -> tuple[str, ...]:
    names = _name_list(value, where, "dtypes")
    return tuple(dict.fromkeys(check_dtype_name(n, where) for n in names))


_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?%?")


def _number(value: object, where: str, what: str) -> float:
    """A finite number from an int, a float or a plain ASCII decimal string (``0.05``, ``5%``,
    ``1e-3``); nothing else (no ``1_000``, ``inf``, non-ASCII digits, or 5000-digit literals)."""
    if isinstance(value, bool):
        raise SettingsError(f"{where}: {what} must be a number, got {_show(value)}")
    if isinstance(value, (int, float)):
        try:
            x = float(value)
        except OverflowError:
            raise SettingsError(
                f"{where}: {what} is far out of range, got a {len(str(value))}-digit number"
            ) from None
    elif isinstance(value, str):
        text = value.strip()
        if len(text) > 40 or not _DECIMAL.fullmatch(text):
            raise SettingsError(f"{where}: {what} must be a number, got {_show(value)}")
        x = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    else:
        raise SettingsError(f"{where}: {what} must be a number, got {_show(value)}")
    if not math.isfinite(x):
        raise SettingsError(f"{where}: {what} must be finite, got {_show(value)}")
    return x


def _show(value: object) -> str:
    """``value`` for an error message: repr, shortened (a 5000-digit number is not echoed)."""
    text = repr(value) if not isinstance(value, int) else str(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def parse_alpha(value: object, where: str) -> float:
    x = _number(value, where, "alpha")
    if not 0.0 < x <= 0.5:
        raise SettingsError(f"{where}: alpha must be in (0, 0.5], got {_show(value)}")
    return x


def parse_threshold(value: object, where: str) -> float:
    """Minimum slowdown that counts, as a fraction (``0.05``) or a percentage (``"5%"``).

    A bare number above 1 is an error, not read as a percentage: ``threshold=5`` is almost
    always meant as 5%, but ``threshold=1`` could mean 1% or +100%, and guessing would make
    some values mean what the user did not. A percentage may exceed 100% (``"200%"``: 3x).
    """
    x = _number(value, where, "threshold")
    is_percent = isinstance(value, str) and value.strip().endswith("%")
    if not is_percent and x > 1.0:
        raise SettingsError(
            f"{where}: threshold {_show(value)} would mean a slowdown of +{x * 100:.0f}%; a bare "
            f"number is a fraction in [0, 1]: write '{x:g}%' or {x / 100:g} for {x:g}%, or "
            f"'{x * 100:.0f}%' if you mean +{x * 100:.0f}%"
        )
    if not 0.0 <= x <= 10.0:
        raise SettingsError(
            f"{where}: threshold must be a fraction in [0, 1] such as 0.05, or a percentage "
            f"in [0%, 1000%] such as 5%, got {_show(value)}"
        )
    return x


def _whole_number(value: object, where: str, what: str, low: int, high: int, hint: str = "") -> int:
    """A whole number in [low, high] from an int or a string of ASCII digits; SettingsError otherwise."""
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 12):
            raise SettingsError(f"{where}: {what} must be a whole number{hint}, got {_show(value)}")
        n = int(text)
    elif isinstance(value, int) and not isinstance(value, bool):
        n = value
    else:
        raise SettingsError(f"{where}: {what} must be a whole number{hint}, got {_show(value)}")
    if not low <= n <= high:
        raise SettingsError(f"{where}: {what} must be between {low} and {high}, got {_show(value)}")
    return n


def parse_samples(value: object, where: str) -> int:
    return _whole_number(value, where, "samples", 2, 100_000)


def parse_seconds(value: object, where: str, what: str, *, maximum: float = 3600.0) -> float:
    x = _number(value, where, what)
    if not 0.0 <= x <= maximum:
        raise SettingsError(
            f"{where}: {what} must be seconds in [0, {maximum:g}], got {_show(value)}"
        )
    return x


def parse_warmup(value: object, where: str) -> float:
    return parse_seconds(value, where, "warmup")


def parse_min_time(value: object, where: str) -> float:
    return parse_seconds(value, where, "min_time", maximum=60.0)


def parse_timer(value: object, where: str) -> TimerName:
    if isinstance(value, str) and value.strip() in TIMERS and value.isprintable():
        return cast(TimerName, value.strip())
    raise SettingsError(f"{where}: timer must be one of {', '.join(TIMERS)}, got {_show(value)}")


def parse_flag(value: object, where: str, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    raise SettingsError(f"{where}: {what} must be True or False, got {_show(value)}")


def parse_threads(value: object, where: str) -> int:
    """Threads for CPU benchmarks: a whole number >= 1, or 0 for the libraries' own default."""
    return _whole_number(value, where, "threads", 0, 4096, " (0 = the libraries' default)")


def _choice(value: object, where: str, what: str, allowed: tuple[str, ...]) -> str:
    if isinstance(value, str) and value.strip() in allowed:
        return value.strip()
    raise SettingsError(f"{where}: {what} must be one of {', '.join(allowed)}, got {_show(value)}")


def parse_size(value: object, where: str) -> str:
    if isinstance(value, str) and value.strip() in SIZES:
        return value.strip()
    raise SettingsError(f"{where}: size must be one of {', '.join(SIZES)}, got {_show(value)}")


def parse_flush_l2(value: object, where: str) -> bool:
    return parse_flag(value, where, "flush_l2")


def parse_max_samples(value: object, where: str) -> int:
    """Cap of adaptive sampling (samples per process); at or below ``samples`` it is off."""
    return _whole_number(value, where, "max_samples", 2, 100_000)


def parse_max_time(value: object, where: str) -> float:
    """Time budget of adaptive sampling in one process, in seconds (0 = no extra samples)."""
    return parse_seconds(value, where, "max_time")


#: Units of a memory size (``max_memory``): decimal and binary multiples, as they are written.
_BYTE_UNITS = {
    "B": 1,
    "KB": 10**3,
    "MB": 10**6,
    "GB": 10**9,
    "TB": 10**12,
    "KIB": 2**10,
    "MIB": 2**20,
    "GIB": 2**30,
    "TIB": 2**40,
}
_SIZE_RE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$")


def parse_max_memory(value: object, where: str) -> int:
    """``max_memory``: the most a call may hold at its peak, in bytes: a whole number of bytes,
    or a size with its unit (``'64 MB'``: 10^6 bytes a MB; ``'1.5 GiB'``: 2^30 a GiB)."""
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
        return value
    if isinstance(value, str) and value.isascii():
        m = _SIZE_RE.match(value)
        unit = (m.group(2) or "B").upper() if m else ""
        if m and unit in _BYTE_UNITS:
            n = int(float(m.group(1)) * _BYTE_UNITS[unit])
            if n >= 1:
                return n
    raise SettingsError(
        f"{where}: max_memory must be a size such as '64 MB', '512 KiB' or '1.5 GiB' (KB, MB, "
        f"GB: powers of 1000; KiB, MiB, GiB: of 1024) or a whole number of bytes of at least "
        f"1, got {_show(value)}"
    )


@dataclass(frozen=True)
class Settings:
    """How to time and how to judge. Defaults, then ini, then marker, then command line."""

    samples: int = 20
    warmup: float = 0.2
    min_time: float = 0.005
    alpha: float = 0.01
    threshold: float = 0.05
    timer: TimerName = "device"
    flush_l2: bool = False
    threads: int = 1
    #: Adaptive sampling: after ``samples``, more samples in batches while this process's median
    #: is not yet known to +-threshold/4, up to ``max_samples`` and ``max_time`` seconds of sampling.
    max_samples: int = 200
    max_time: float = 1.0
    #: Whether ``threshold`` was chosen (ini, marker or command line) rather than left at its
    #: default: a device-bound GPU kernel's default is its own (``verdict.DEVICE_THRESHOLD``).
    threshold_given: bool = False
    #: The marker's ``max_memory``: the most one call may hold at its peak, in bytes (a hard
    #: ceiling, judged with the memory per call), or None.
    max_memory: int | None = None

    @property
    def chosen_threshold(self) -> float | None:
        """The threshold the user set (ini, project file, marker or command line), which gates
        every measure; None where the default stands (each measure's own minimum effect)."""
        return self.threshold if self.threshold_given else None

    def merged(self, overrides: Mapping[str, object]) -> Settings:
        # the marker's keywords, each already parsed to its field's type (MARKER_KEYS)
        given: dict[str, Any] = {k: v for k, v in overrides.items() if v is not None}
        if "threshold" in given:
            given["threshold_given"] = True
        return replace(self, **given)


#: Marker keywords that tune a single benchmark, with their parsers.
SETTING_PARSERS = {
    "samples": parse_samples,
    "warmup": parse_warmup,
    "min_time": parse_min_time,
    "alpha": parse_alpha,
    "threshold": parse_threshold,
    "timer": parse_timer,
    "flush_l2": parse_flush_l2,
    "threads": parse_threads,
    "max_samples": parse_max_samples,
    "max_time": parse_max_time,
    "max_memory": parse_max_memory,
}

MARKER_KEYWORDS: tuple[str, ...] = ("backends", "dtypes", *SETTING_PARSERS)

DEFAULT_BACKENDS: tuple[str, ...] = ("cpu",)
DEFAULT_DTYPES: tuple[str, ...] = ("f32",)


@dataclass(frozen=True)
class PerfSpec:
    """What one ``@pytest.mark.perf`` asks for, checked."""

    backends: tuple[str, ...] = DEFAULT_BACKENDS
    dtypes: tuple[str, ...] = DEFAULT_DTYPES
    overrides: Mapping[str, object] = field(default_factory=dict)


#: What each marker keyword's value is in Python: a marker is code, so a string where a number
#: or a bool belongs (``samples='5'``, ``flush_l2='yes'``) is a mistake to name, not to convert
#: as an ini file's text is. ``alpha`` and ``threshold`` may also be ``'5%'``.
_MARKER_TYPES: dict[str, tuple[str, tuple[type, ...]]] = {
    "samples": ("a whole number", (int,)),
    "max_samples": ("a whole number", (int,)),
    "threads": ("a whole number", (int,)),
    "warmup": ("a number of seconds", (int, float)),
    "min_time": ("a number of seconds", (int, float)),
    "max_time": ("a number of seconds", (int, float)),
    "alpha": ("a number (or a percentage string such as '1%')", (int, float)),
    "threshold": ("a number (or a percentage string such as '5%')", (int, float)),
    "flush_l2": ("True or False", (bool,)),
    "timer": ("a string", (str,)),
    "max_memory": ("a size such as '64 MB' or a whole number of bytes", (int, str)),
    "backends": ("a name or a list of names", (str, list, tuple)),
    "dtypes": ("a name or a list of names", (str, list, tuple)),
}


def _check_marker_type(key: str, value: object, where: str) -> None:
    what, types = _MARKER_TYPES[key]
    ok = isinstance(value, types) and (bool not in types) == (not isinstance(value, bool))
    if key in ("alpha", "threshold") and isinstance(value, str) and value.strip().endswith("%"):
        ok = True
    if not ok:
        raise SettingsError(f"{where}: must be {what}, got {_show(value)} ({type(value).__name__})")


def parse_marker(test: str, args: tuple[Any, ...], kwargs: Mapping[str, object]) -> PerfSpec:
    """Turn the marker's arguments into a :class:`PerfSpec`; errors name ``test``."""
    where = f"{test}: @pytest.mark.perf"
    if args:
        raise SettingsError(
            f"{where} takes keyword arguments only ({', '.join(MARKER_KEYWORDS)}), "
            f"got positional {args!r}"
        )
    unknown = sorted(set(kwargs) - set(MARKER_KEYWORDS))
    if unknown:
        raise SettingsError(
            f"{where} got unknown keyword {', '.join(repr(u) for u in unknown)}; "
            f"allowed: {', '.join(MARKER_KEYWORDS)}"
        )
    backends = (
        parse_backends(kwargs["backends"], f"{where}(backends=...)")
        if "backends" in kwargs
        else DEFAULT_BACKENDS
    )
    dtypes = (
        parse_dtypes(kwargs["dtypes"], f"{where}(dtypes=...)")
        if "dtypes" in kwargs
        else DEFAULT_DTYPES
    )
    overrides = {
        key: parser(kwargs[key], f"{where}({key}=...)")
        for key, parser in SETTING_PARSERS.items()
        if key in kwargs
    }
    # a value that parses only as text (samples='5', flush_l2='yes') is named, not converted
    for key, value in kwargs.items():
        _check_marker_type(key, value, f"{where}({key}=...)")
    return PerfSpec(backends=backends, dtypes=dtypes, overrides=overrides)

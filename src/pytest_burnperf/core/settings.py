"""Marker keywords and settings: validated, frozen, and with errors that name what is wrong.

Nothing here imports pytest or an array library, so the CLI and unit tests use it directly.
Every parser takes the raw value and a ``where`` string (``"--perf-alpha"``, ``"ini perf_alpha"``,
``"test_matmul: @pytest.mark.perf(alpha=...)"``) and raises :class:`SpecError` with a message that
names that place, the bad value and what is allowed.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

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
TIMERS: tuple[str, ...] = ("device", "host", "graph")

_DEVICE_ID = re.compile(r"^(?P<lib>[a-z]+)-(?P<rest>[a-z0-9][a-z0-9_.-]*)$")


#: Size presets of a run (``--perf-size``): benchmarks pick their shapes from it. ``tiny`` is for
#: correctness runs (seconds for the whole suite), ``small`` the default (the shipped suite on a
#: 2-core CPU in minutes), ``full`` GPU-sized shapes like burn-bench's.
SIZES: tuple[str, ...] = ("tiny", "small", "medium", "full")

#: Columns of the results table (``--perf-columns``), in table order.
COLUMN_KEYS: tuple[str, ...] = (
    "benchmark",
    "shape",
    "backend",
    "device",
    "dtype",
    "clock",
    "median",
    "iqr",
    "baseline",
    "change",
    "p",
    "detects",
    "peak_mem",
    "arith",
    "bandwidth",
    "verdict",
)
#: ``--perf-sort`` and ``--perf-group-by`` keys.
SORT_KEYS: tuple[str, ...] = ("benchmark", "device", "dtype", "median", "change", "verdict")
GROUP_KEYS: tuple[str, ...] = ("benchmark", "device", "dtype", "module")
DEFAULT_SIZE = "small"


class SpecError(ValueError):
    """A marker keyword, option or ini value that is not allowed. The message says why."""


def allowed_backend_names() -> str:
    libs = ", ".join(LIBRARY_KINDS)
    return (
        f"a device kind ({', '.join(KINDS)}), a library ({libs}), "
        "or a device id such as numpy-cpu, torch-cpu, torch-cuda0 (see `burnperf devices`)"
    )


def check_backend_name(name: object, where: str) -> str:
    """Return ``name`` if it is a kind, a library or a device id; raise SpecError otherwise."""
    if not isinstance(name, str) or not name:
        raise SpecError(
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
    raise SpecError(f"{where}: unknown backend {name!r}; expected {allowed_backend_names()}")


def check_dtype_name(name: object, where: str) -> str:
    if isinstance(name, str) and name in DTYPES:
        return name
    raise SpecError(f"{where}: unknown dtype {name!r}; allowed: {', '.join(DTYPES)}")


def _name_list(value: object, where: str, what: str) -> tuple[str, ...]:
    if isinstance(value, str):
        items = [v.strip() for v in value.split(",")]
    elif isinstance(value, (list, tuple)):  # not a dict or a set: its keys would be read
        items = list(value)
    else:
        raise SpecError(f"{where}: {what} must be a list of names, got {_show(value)}")
    if not items or any(i == "" for i in items):
        raise SpecError(
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
        raise SpecError(f"{where}: {what} must be a number, got {_show(value)}")
    if isinstance(value, (int, float)):
        try:
            x = float(value)
        except OverflowError:
            raise SpecError(
                f"{where}: {what} is far out of range, got a {len(str(value))}-digit number"
            ) from None
    elif isinstance(value, str):
        text = value.strip()
        if len(text) > 40 or not _DECIMAL.fullmatch(text):
            raise SpecError(f"{where}: {what} must be a number, got {_show(value)}")
        x = float(text[:-1]) / 100.0 if text.endswith("%") else float(text)
    else:
        raise SpecError(f"{where}: {what} must be a number, got {_show(value)}")
    if not math.isfinite(x):
        raise SpecError(f"{where}: {what} must be finite, got {_show(value)}")
    return x


def _show(value: object) -> str:
    """``value`` for an error message: repr, shortened (a 5000-digit number is not echoed)."""
    text = repr(value) if not isinstance(value, int) else str(value)
    return text if len(text) <= 60 else f"{text[:40]}... ({len(text)} characters)"


def parse_alpha(value: object, where: str) -> float:
    x = _number(value, where, "alpha")
    if not 0.0 < x <= 0.5:
        raise SpecError(f"{where}: alpha must be in (0, 0.5], got {_show(value)}")
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
        raise SpecError(
            f"{where}: threshold {_show(value)} would mean a slowdown of +{x * 100:.0f}%; a bare "
            f"number is a fraction in [0, 1]: write '{x:g}%' or {x / 100:g} for {x:g}%, or "
            f"'{x * 100:.0f}%' if you mean +{x * 100:.0f}%"
        )
    if not 0.0 <= x <= 10.0:
        raise SpecError(
            f"{where}: threshold must be a fraction in [0, 1] such as 0.05, or a percentage "
            f"in [0%, 1000%] such as 5%, got {_show(value)}"
        )
    return x


def _whole_number(value: object, where: str, what: str, low: int, high: int, hint: str = "") -> int:
    """A whole number in [low, high] from an int or a string of ASCII digits; SpecError otherwise."""
    if isinstance(value, str):
        text = value.strip()
        if not (text.isascii() and text.isdigit() and len(text) <= 12):
            raise SpecError(f"{where}: {what} must be a whole number{hint}, got {_show(value)}")
        n = int(text)
    elif isinstance(value, int) and not isinstance(value, bool):
        n = value
    else:
        raise SpecError(f"{where}: {what} must be a whole number{hint}, got {_show(value)}")
    if not low <= n <= high:
        raise SpecError(f"{where}: {what} must be between {low} and {high}, got {_show(value)}")
    return n


def parse_samples(value: object, where: str) -> int:
    return _whole_number(value, where, "samples", 2, 100_000)


def parse_seconds(value: object, where: str, what: str, *, maximum: float = 3600.0) -> float:
    x = _number(value, where, what)
    if not 0.0 <= x <= maximum:
        raise SpecError(f"{where}: {what} must be seconds in [0, {maximum:g}], got {_show(value)}")
    return x


def parse_warmup(value: object, where: str) -> float:
    return parse_seconds(value, where, "warmup")


def parse_min_time(value: object, where: str) -> float:
    return parse_seconds(value, where, "min_time", maximum=60.0)


def parse_timer(value: object, where: str) -> str:
    if isinstance(value, str) and value.strip() in TIMERS and value.isprintable():
        return value.strip()
    raise SpecError(f"{where}: timer must be one of {', '.join(TIMERS)}, got {_show(value)}")


#: What a run judges CPU benchmarks by (core/counts.py): the clock, callgrind's counts, or both.
MEASURES = ("time", "counts", "both")


def parse_measure(value: object, where: str) -> str:
    if isinstance(value, str) and value.strip() in MEASURES and value.isprintable():
        return value.strip()
    raise SpecError(
        f"{where}: measure must be one of {', '.join(MEASURES)} (time: the clock; counts: "
        f"instructions and estimated cycles under valgrind; both), got {_show(value)}"
    )


def parse_share(value: object, where: str) -> float:
    """A share of the benchmarks: a fraction in [0, 1] (``0.9``) or a percentage (``"90%"``)."""
    x = _number(value, where, "the share")
    if not 0.0 <= x <= 1.0:
        raise SpecError(
            f"{where}: a share is a fraction in [0, 1] such as 0.9, or a percentage in "
            f"[0%, 100%] such as 90%, got {_show(value)}"
        )
    return x


def parse_git_ref(value: object, where: str) -> str:
    """A git revision for ``base`` (a tag, a branch, a hash): one word, no option-like start."""
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{where}: must be a git revision (a tag, a branch), got {_show(value)}")
    ref = value.strip()
    if ref.startswith("-") or any(ord(c) <= 32 or ord(c) == 127 for c in ref) or len(ref) > 256:
        raise SpecError(
            f"{where}: a git revision is one word of at most 256 characters that does not start "
            f"with '-', got {_show(value)}"
        )
    return ref


def parse_flag(value: object, where: str, what: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "1", "0", "yes", "no"):
        return value.strip().lower() in ("true", "1", "yes")
    raise SpecError(f"{where}: {what} must be True or False, got {_show(value)}")


def parse_threads(value: object, where: str) -> int:
    """Threads for CPU benchmarks: a whole number >= 1, or 0 for the libraries' own default."""
    return _whole_number(value, where, "threads", 0, 4096, " (0 = the libraries' default)")


#: Process rounds when neither --perf-rounds nor --perf-max-rounds is given, comparing or
#: recording: three processes show a benchmark's between-process spread, and the undecided ones
#: (comparing: a change that may still exceed the threshold; recording: runs too noisy for a
#: threshold-sized slowdown to show) get adaptive rounds up to DEFAULT_MAX_ROUNDS, within
#: --perf-round-budget. These are the settings docs/validation.md measures (1 false alarm in 764
#: unchanged comparisons, +10% caught 20/21, +20% 22/22); one process a side gates only above
#: +24-34% on a quiet host. --perf-quick asks for one round and no adaptive ones.
DEFAULT_ROUNDS = 3
DEFAULT_MAX_ROUNDS = 8
#: Process rounds of --perf-update under --perf-quick: a baseline is recorded once and judged
#: against many times, and three processes show its between-process spread.
DEFAULT_UPDATE_ROUNDS = 3
#: Seconds after the first round started past which no further adaptive round starts.
DEFAULT_ROUND_BUDGET_S = 600.0


def round_counts(
    given: int | None,
    most: int | None,
    *,
    update: bool,
    same_session: bool = False,
    quick: bool = False,
    names: tuple[str, str, str] = ("--perf-rounds", "--perf-max-rounds", "--perf-quick"),
) -> tuple[int, int]:
    """(rounds, max rounds) of a --perf run from --perf-rounds (``given``) and
    --perf-max-rounds (``most``), None where not set: 3 and up to 8 for the undecided
    benchmarks; --perf-rounds given alone, or ``quick`` (--perf-quick), means no adaptive
    rounds, and ``quick`` one round (3 recording or comparing in one session). ``names``: where
    each of the three came from, for errors (the option, or the ini or benchmarks.toml key)."""
    rounds_name, most_name, quick_name = names
    if quick and most is not None:
        raise SpecError(
            f"{quick_name} runs no adaptive rounds, so {most_name} {most} contradicts it: "
            "give one or the other"
        )
    if quick:
        rounds = given or (DEFAULT_UPDATE_ROUNDS if update or same_session else 1)
        return rounds, rounds
    rounds = given or DEFAULT_ROUNDS
    if most is None:
        return rounds, rounds if given else max(rounds, DEFAULT_MAX_ROUNDS)
    if most < rounds:
        given_name = rounds_name if given else "the default rounds"
        raise SpecError(
            f"{most_name} {most} is below {given_name} {rounds}: the adaptive rounds come "
            "after the fixed ones, so it must be at least as large"
        )
    return rounds, most


def parse_round_budget(value: object, where: str) -> float:
    """Seconds of process rounds past which no adaptive round starts (0: no limit)."""
    return parse_seconds(value, where, "the round budget", maximum=86400.0)


def parse_rounds(value: object, where: str) -> int:
    """Fresh processes that each measure every benchmark (1 = this process only)."""
    return _whole_number(value, where, "rounds", 1, 50)


def parse_columns(value: object, where: str) -> tuple[str, ...]:
    """Table columns: comma-separated keys of COLUMN_KEYS, or ``all``."""
    names = _name_list(value, where, "columns")
    if names == ("all",):
        return COLUMN_KEYS
    for n in names:
        if n not in COLUMN_KEYS:
            raise SpecError(
                f"{where}: unknown column {n!r}; allowed: all, {', '.join(COLUMN_KEYS)}"
            )
    return tuple(dict.fromkeys(names))


def _choice(value: object, where: str, what: str, allowed: tuple[str, ...]) -> str:
    if isinstance(value, str) and value.strip() in allowed:
        return value.strip()
    raise SpecError(f"{where}: {what} must be one of {', '.join(allowed)}, got {_show(value)}")


def parse_sort(value: object, where: str) -> str:
    return _choice(value, where, "sort key", SORT_KEYS)


def parse_group_by(value: object, where: str) -> str:
    return _choice(value, where, "group-by key", GROUP_KEYS)


def parse_size(value: object, where: str) -> str:
    if isinstance(value, str) and value.strip() in SIZES:
        return value.strip()
    raise SpecError(f"{where}: size must be one of {', '.join(SIZES)}, got {_show(value)}")


def parse_flush_l2(value: object, where: str) -> bool:
    return parse_flag(value, where, "flush_l2")


def parse_max_samples(value: object, where: str) -> int:
    """Cap of adaptive sampling (samples per process); at or below ``samples`` it is off."""
    return _whole_number(value, where, "max_samples", 2, 100_000)


def parse_max_time(value: object, where: str) -> float:
    """Time budget of adaptive sampling in one process, in seconds (0 = no extra samples)."""
    return parse_seconds(value, where, "max_time")


#: Formats of the ``--perf-json`` file: this plugin's own, or pytest-benchmark's.
JSON_FORMATS: tuple[str, ...] = ("burnperf", "pytest-benchmark")


def parse_json_format(value: object, where: str) -> str:
    return _choice(value, where, "format", JSON_FORMATS)


#: How the extra process rounds start: ``fork`` from one prepared process (collection and imports
#: paid once), ``fresh`` interpreters, or ``auto`` (fork where that is safe: Linux, CPU devices).
ROUND_STARTS: tuple[str, ...] = ("auto", "fork", "fresh")


def parse_round_start(value: object, where: str) -> str:
    return _choice(value, where, "round start", ROUND_STARTS)


def parse_path(value: object, where: str) -> str:
    """A file or directory path: non-empty, at most 4096 characters, no control characters
    (a NUL byte, a newline)."""
    if not isinstance(value, str) or not value.strip():
        raise SpecError(f"{where}: must be a path, got {_show(value)}")
    if len(value) > 4096 or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise SpecError(
            f"{where}: a path of at most 4096 characters without control characters, got "
            f"{_show(value)}"
        )
    return value


@dataclass(frozen=True)
class Settings:
    """How to time and how to judge. Defaults, then ini, then marker, then command line."""

    samples: int = 20
    warmup: float = 0.2
    min_time: float = 0.005
    alpha: float = 0.01
    threshold: float = 0.05
    timer: str = "device"
    flush_l2: bool = False
    threads: int = 1
    #: Adaptive sampling: after ``samples``, more samples in batches while this process's median
    #: is not yet known to +-threshold/4, up to ``max_samples`` and ``max_time`` seconds of sampling.
    max_samples: int = 200
    max_time: float = 1.0

    def merged(self, overrides: Mapping[str, Any]) -> Settings:
        return replace(self, **{k: v for k, v in overrides.items() if v is not None})


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
}

MARKER_KEYWORDS: tuple[str, ...] = ("backends", "dtypes", *SETTING_PARSERS)

DEFAULT_BACKENDS: tuple[str, ...] = ("cpu",)
DEFAULT_DTYPES: tuple[str, ...] = ("f32",)


@dataclass(frozen=True)
class PerfSpec:
    """What one ``@pytest.mark.perf`` asks for, checked."""

    backends: tuple[str, ...] = DEFAULT_BACKENDS
    dtypes: tuple[str, ...] = DEFAULT_DTYPES
    overrides: Mapping[str, Any] = field(default_factory=dict)


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
    "backends": ("a name or a list of names", (str, list, tuple)),
    "dtypes": ("a name or a list of names", (str, list, tuple)),
}


def _check_marker_type(key: str, value: object, where: str) -> None:
    what, types = _MARKER_TYPES[key]
    ok = isinstance(value, types) and (bool not in types) == (not isinstance(value, bool))
    if key in ("alpha", "threshold") and isinstance(value, str) and value.strip().endswith("%"):
        ok = True
    if not ok:
        raise SpecError(f"{where}: must be {what}, got {_show(value)} ({type(value).__name__})")


def parse_marker(test: str, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> PerfSpec:
    """Turn the marker's arguments into a :class:`PerfSpec`; errors name ``test``."""
    where = f"{test}: @pytest.mark.perf"
    if args:
        raise SpecError(
            f"{where} takes keyword arguments only ({', '.join(MARKER_KEYWORDS)}), "
            f"got positional {args!r}"
        )
    unknown = sorted(set(kwargs) - set(MARKER_KEYWORDS))
    if unknown:
        raise SpecError(
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


def without_options(
    args: Sequence[str], valued: Sequence[str], flags: Sequence[str] = ()
) -> list[str]:
    """``args`` without the options ``valued`` (with their value: ``--opt V`` or ``--opt=V``)
    and the flags ``flags``: a round's process gets its parent's command line less what only
    the parent acts on, a suggested command its run's less what it sets itself."""
    out: list[str] = []
    skip = False
    for a in args:
        if skip:
            skip = False
            continue
        if a in flags:
            continue
        if a in valued:
            skip = True
            continue
        if any(a.startswith(o + "=") for o in valued):
            continue
        out.append(a)
    return out


MACHINE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_machine_id(value: str, where: str) -> str:
    if not MACHINE_ID_RE.match(value):
        raise SpecError(
            f"{where}: machine id {value!r} is not allowed; use letters, digits, '.', '_' and '-' "
            "(it becomes a folder name under the baselines directory)"
        )
    return value

"""The parsers of the settings that apply to a whole run rather than to one benchmark: rounds and
their budget, the measure, the table's columns, sort and grouping, the results format, how round
processes start, paths, git references and machine ids. Each names the option and what is allowed
when a value is wrong (:class:`~.settings.SettingsError`)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Literal, cast

from pytest_burnperf.core import measures
from pytest_burnperf.core.counting import counts_key
from pytest_burnperf.core.options.settings import (
    SettingsError,
    _choice,
    _name_list,
    _number,
    _show,
    _whole_number,
    parse_seconds,
)
from pytest_burnperf.core.sides.side_registry import SIDES

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
    "time",
    "p",
    "detects",
    "peak_mem",
    *(side.field for side in SIDES),  # each verdict judged beside's: memory per call's
    "arith",
    "bandwidth",
    "verdict",
)


#: ``--perf-sort`` and ``--perf-group-by`` keys.
SORT_KEYS: tuple[str, ...] = ("benchmark", "device", "dtype", "median", "change", "verdict")


GROUP_KEYS: tuple[str, ...] = ("benchmark", "device", "dtype", "module")


def parse_columns(value: object, where: str) -> tuple[str, ...]:
    """Table columns: comma-separated keys of COLUMN_KEYS, or ``all``."""
    names = _name_list(value, where, "columns")
    if names == ("all",):
        return COLUMN_KEYS
    for n in names:
        if n not in COLUMN_KEYS:
            raise SettingsError(
                f"{where}: unknown column {n!r}; allowed: all, {', '.join(COLUMN_KEYS)}"
            )
    return tuple(dict.fromkeys(names))


def parse_sort(value: object, where: str) -> str:
    return _choice(value, where, "sort key", SORT_KEYS)


def parse_group_by(value: object, where: str) -> str:
    return _choice(value, where, "group-by key", GROUP_KEYS)


#: Formats of the ``--perf-json`` file: this plugin's own, or pytest-benchmark's.
JSON_FORMATS: tuple[str, ...] = ("burnperf", "pytest-benchmark")


def parse_json_format(value: object, where: str) -> str:
    return _choice(value, where, "format", JSON_FORMATS)


#: How the extra process rounds start: ``fork`` from one prepared process (collection and imports
#: paid once), ``fresh`` interpreters, ``resident`` (one process per environment that lives for
#: the run and measures every round itself: its device context, driver and imports paid once,
#: where a fork cannot keep them: GPUs, OpenCL, Vulkan), or ``auto`` (fork where that is safe:
#: Linux, CPU devices).
ROUND_STARTS: tuple[str, ...] = ("auto", "fork", "fresh", "resident")


def parse_round_start(value: object, where: str) -> str:
    return _choice(value, where, "round start", ROUND_STARTS)


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
        raise SettingsError(
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
        raise SettingsError(
            f"{most_name} {most} is below {given_name} {rounds}: the adaptive rounds come "
            "after the fixed ones, so it must be at least as large"
        )
    return rounds, most


def parse_round_budget(value: object, where: str) -> float:
    """Seconds of process rounds past which no adaptive round starts (0: no limit)."""
    return parse_seconds(value, where, "the round budget", maximum=86400.0)


#: ``--perf-count-limit``'s default: basic blocks valgrind runs per call (what counting costs:
#: core/counting/counted_calls.CallSize) over which a CPU benchmark is timed instead of counted; about
#: 3-7 s a counted call (21-48 ns a block measured: docs/gate.md, "Cost"). A 100 ms BLAS
#: matmul runs about 125 M; a pure-Python call of 150 M blocks about 0.05-0.1 s natively.
DEFAULT_COUNT_LIMIT = 150_000_000
_SCALE = {"": 1, "k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
#: ASCII digits only (``re.ASCII``: no Arabic-Indic or other Unicode digits), ``_`` only between
#: digits as Python writes them (``2_000_000``), a fraction only before a suffix (``1.5G``).
_COUNT = re.compile(r"([0-9]+(?:_[0-9]+)*(?:\.[0-9]+)?)\s*([kmgt]?)", re.IGNORECASE | re.ASCII)
#: The largest count limit taken: a call of a thousand tera-blocks never ends under valgrind.
MAX_COUNT_LIMIT = 10**15


def parse_count_limit(value: object, where: str) -> int:
    """Basic blocks per call (under valgrind) over which a CPU benchmark is timed instead of
    counted: a count with ``k``, ``M`` or ``G`` (``150M``), a whole number of at least 1000, or
    0 (every benchmark counted, however long). A bare number under 1000 is refused: the limit
    was seconds under valgrind once, and what those counted depended on the host."""
    text = str(value).strip() if isinstance(value, (int, float, str)) else None
    if isinstance(value, bool) or text is None or not text.isprintable() or len(text) > 40:
        m = None
    else:
        m = _COUNT.fullmatch(text)
    if m is not None and "." in m.group(1) and not m.group(2) and float(m.group(1)) >= 1000:
        m = None  # a bare count is whole: 1000.5 blocks is no limit anyone means
    if m is not None:
        count = Decimal(m.group(1).replace("_", "")) * _SCALE[m.group(2).lower()]
        if count == 0:
            return 0
        if count > MAX_COUNT_LIMIT:
            raise SettingsError(
                f"{where}: the count limit {_show(value)} is beyond any call valgrind could "
                f"finish (at most {count_text(MAX_COUNT_LIMIT)}); give a count such as 150M "
                "(the default), 1G or 50k, or 0 for no limit"
            )
        if m.group(2) or count >= 1000:
            if count < 1:
                m = None
            else:
                return int(count)
        else:
            raise SettingsError(
                f"{where}: the count limit is basic blocks per call under valgrind now, not "
                f"seconds (what seconds counted depended on the host): give a count such as "
                f"150M (the default), 1G or 50k, or 0 for no limit; got {_show(value)}"
            )
    raise SettingsError(
        f"{where}: the count limit must be basic blocks per call under valgrind, such as 150M, "
        f"1G or 50k (k, M, G), or 0 for no limit; got {_show(value)}"
    )


def count_text(count: int) -> str:
    """``150M``: a count limit as the option takes it (``0.5k`` under a thousand: a bare number
    that small is refused as the seconds it once was)."""
    for suffix, scale in (("T", 10**12), ("G", 10**9), ("M", 10**6), ("k", 10**3)):
        if count >= scale and count % (scale // 1000 or 1) == 0:
            return f"{count / scale:g}{suffix}"
    return f"{count / 1000:g}k" if 0 < count < 1000 else str(count)


#: Counted processes ``--perf-count-jobs 0`` starts at most, however many CPUs there are (each
#: holds a Python, its array libraries and valgrind's translations: a few hundred MiB).
MAX_AUTO_COUNT_JOBS = 8


def parse_count_jobs(value: object, where: str) -> int:
    """Counted processes side by side (0: one per usable CPU, up to :data:`MAX_AUTO_COUNT_JOBS`)."""
    return _whole_number(value, where, "counted processes", 0, 64)


def parse_rounds(value: object, where: str) -> int:
    """Fresh processes that each measure every benchmark (1 = this process only)."""
    return _whole_number(value, where, "rounds", 1, 50)


#: What judges CPU benchmarks (``--perf-measure``; core/measures.py says what each asks for).
Measure = measures.ChoiceName


def parse_measure(value: object, where: str) -> Measure:
    if isinstance(value, str) and value.strip() in measures.CHOICE_NAMES and value.isprintable():
        return cast(Measure, value.strip())
    said = "; ".join(f"{c.name}: {c.says}" for c in measures.CHOICES)
    raise SettingsError(
        f"{where}: measure must be one of {', '.join(measures.CHOICE_NAMES)} ({said}), "
        f"got {_show(value)}"
    )


def parse_share(value: object, where: str) -> float:
    """A share of the benchmarks: a fraction in [0, 1] (``0.9``) or a percentage (``"90%"``)."""
    x = _number(value, where, "the share")
    if not 0.0 <= x <= 1.0:
        raise SettingsError(
            f"{where}: a share is a fraction in [0, 1] such as 0.9, or a percentage in "
            f"[0%, 100%] such as 90%, got {_show(value)}"
        )
    return x


def parse_git_ref(value: object, where: str) -> str:
    """A git revision for ``base`` (a tag, a branch, a hash): one word, no option-like start."""
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(
            f"{where}: must be a git revision (a tag, a branch), got {_show(value)}"
        )
    ref = value.strip()
    if ref.startswith("-") or any(ord(c) <= 32 or ord(c) == 127 for c in ref) or len(ref) > 256:
        raise SettingsError(
            f"{where}: a git revision is one word of at most 256 characters that does not start "
            f"with '-', got {_show(value)}"
        )
    return ref


def parse_path(value: object, where: str) -> str:
    """A file or directory path: non-empty, at most 4096 characters, no control characters
    (a NUL byte, a newline)."""
    if not isinstance(value, str) or not value.strip():
        raise SettingsError(f"{where}: must be a path, got {_show(value)}")
    if len(value) > 4096 or any(ord(c) < 32 or ord(c) == 127 for c in value):
        raise SettingsError(
            f"{where}: a path of at most 4096 characters without control characters, got "
            f"{_show(value)}"
        )
    return value


#: Which benchmarks ``--perf-profile`` reruns under a profiler after measuring them.
Profile = Literal["off", "all", "regressed"]
PROFILES: tuple[Profile, ...] = ("off", "all", "regressed")


def parse_profile(value: object, where: str) -> Profile:
    if isinstance(value, str) and value.strip() in PROFILES and value.isprintable():
        return cast(Profile, value.strip())
    raise SettingsError(
        f"{where}: must be one of {', '.join(PROFILES)} (all: every benchmark of the run; "
        f"regressed: only those that regressed), got {_show(value)}"
    )


def parse_memory(value: object, where: str) -> bool:
    """``--perf-memory``: ``on`` (memory per call judged beside time and counts) or ``off``."""
    if isinstance(value, str) and value.strip() in ("on", "off"):
        return value.strip() == "on"
    raise SettingsError(
        f"{where}: must be on (memory per call judged beside time and counts, where the "
        f"device's memory is tracked) or off, got {_show(value)}"
    )


MACHINE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def check_machine_id(value: str, where: str) -> str:
    if not MACHINE_ID_RE.match(value):
        raise SettingsError(
            f"{where}: machine id {value!r} is not allowed; use letters, digits, '.', '_' and '-' "
            "(it becomes a folder name under the baselines directory)"
        )
    return value


def check_time_machine_id(value: str, where: str) -> str:
    """A machine id for time baselines (``--perf-machine``): also never a counts baselines'
    folder, whose instructions it would read as times and whose entries a recording would
    overwrite with times."""
    check_machine_id(value, where)
    if value.startswith(counts_key.FOLDER_PREFIX):
        raise SettingsError(
            f"{where}: machine id {value!r} names a counts baselines folder "
            f"({counts_key.FOLDER_PREFIX}<os>-<arch>: instructions per call, found and judged "
            "without it); a machine id names a folder of time baselines: choose one that does "
            f"not begin with {counts_key.FOLDER_PREFIX!r}"
        )
    return value

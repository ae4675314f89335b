"""The counts key: what decides whether counts taken in two runs compare (the simulated CPU,
the interpreter's build and settings, the C library, the libraries, the threads), the first
difference named when they do not, and where counts baselines are kept."""

from __future__ import annotations

from collections.abc import Mapping

#: Key fields, in the order a difference is named: what decides which instructions run.
KEY_FIELDS = (
    "arch",
    "counting",
    "cpuid",
    "simulated_cpu",
    "python",
    "python_build",
    "interpreter_settings",
    "libc",
    "libraries",
    "calls_into",
    "threads",
)
#: Key fields added after counts baselines were first committed, and what their absence means:
#: an older recording ran with the interpreter's defaults (what the counted process pins).
KEY_DEFAULTS: dict[str, object] = {"interpreter_settings": "default", "calls_into": {}}
#: The interpreter's settings that a counted process keeps from the run (the ones it drops
#: are runs/counted.DROPPED_ENV) and that change which instructions the same code runs, with
#: their defaults (sys.flags names).
INTERPRETER_FLAGS: tuple[tuple[str, object], ...] = (
    ("optimize", 0),
    ("dev_mode", False),
    ("debug", 0),
    ("bytes_warning", 0),
    ("warn_default_encoding", 0),
    ("int_max_str_digits", -1),
)


def interpreter_settings(
    flags: Mapping[str, object], xoptions: Mapping[str, object], gil: bool | None = None
) -> str:
    """The key's ``interpreter_settings``: the settings of the counted interpreter that differ
    from its defaults (``-O``/``PYTHONOPTIMIZE``, ``-X`` options, the GIL of a free-threaded
    build), or ``default``. ``python -O`` removes every assert, so counts taken with and without
    it are not the same code's. ``-W``/``PYTHONWARNINGS`` are not held: pytest puts each test's
    own warning filters over them (its ``filterwarnings``), so they do not decide what a
    benchmark runs, and a CI's ``PYTHONWARNINGS`` would otherwise leave every counts baseline
    unjudged."""
    parts = [
        f"{name}={flags.get(name)}"
        for name, default in INTERPRETER_FLAGS
        if name in flags and flags.get(name) != default
    ]
    parts += [
        f"-X {k}" if v is True else f"-X {k}={v}" for k, v in sorted(xoptions.items(), key=str)
    ]
    if gil is False:
        parts.append("gil=off")
    return ", ".join(parts) or "default"


#: Recorded, never a reason to refuse: ``cache``, the simulated caches (or ``none``), decides
#: the estimated cycles only (core/counting/estimated_cycles.py), not which instructions run; cycles are
#: compared where both keys name the same caches (:func:`same_caches`).
CYCLES_FIELD = "cache"


def same_caches(stored: Mapping[str, object] | None, current: Mapping[str, object]) -> bool:
    """Whether estimated cycles counted under ``stored`` compare with those under ``current``:
    both simulated the same caches."""
    return stored is not None and stored.get(CYCLES_FIELD) == current.get(CYCLES_FIELD)


#: Recorded and named where they differ, but no reason to refuse: another valgrind presents
#: the same simulated CPU (``simulated_cpu`` says where it does not) and counts the same
#: instructions of the same code.
NOTED_FIELDS = ("valgrind",)


def counts_key(
    *,
    arch: str,
    valgrind: str,
    cache: str,
    counting: str,
    cpuid: str,
    simulated_cpu: str,
    python: str,
    python_build: str,
    interpreter_settings: str,
    libc: str,
    libraries: Mapping[str, str],
    threads: int | str,
    calls_into: Mapping[str, str] | None = None,
) -> dict[str, object]:
    """What decides a benchmark's counts: not the host's CPU model (valgrind presents a fixed
    simulated CPU chosen by the host's capability level), but that simulated CPU as CPUID shows
    it (``cpuid``: what glibc and every CPUID-dispatched kernel choose by), the features the
    libraries dispatch on, the code that runs (Python's version and build, the C library, the
    libraries' versions) and the threads."""
    return {
        "arch": arch,
        "valgrind": valgrind,
        "cache": cache,
        "counting": counting,
        "cpuid": cpuid,
        "simulated_cpu": simulated_cpu,
        "python": python,
        "python_build": python_build,
        "interpreter_settings": interpreter_settings,
        "libc": libc,
        "libraries": dict(sorted(libraries.items())),
        "calls_into": dict(sorted((calls_into or {}).items())),
        "threads": threads,
    }


def key_difference(
    stored: Mapping[str, object] | None, current: Mapping[str, object]
) -> str | None:
    """Why counts recorded under ``stored`` do not compare with counts under ``current``
    (the first field that differs, with both values), or None."""
    if stored is None:
        return "the counts baseline has no key (recorded by an older pytest-burnperf)"
    for name in KEY_FIELDS:
        old, new = stored.get(name), current.get(name)
        if name == "calls_into":  # compared where both keys name a library: the calls ran in it
            old, new = old or {}, new or {}
        if name == "calls_into" and isinstance(old, Mapping) and isinstance(new, Mapping):
            for lib in sorted(set(old) & set(new)):
                if old[lib] != new[lib]:
                    return (
                        f"counts baseline recorded with {lib} {old[lib]} (the benchmark's calls "
                        f"run in it), this run has {new[lib]}"
                    )
            continue
        if name == "libraries" and isinstance(old, Mapping) and isinstance(new, Mapping):
            for lib in sorted(set(old) | set(new)):
                if old.get(lib) != new.get(lib):
                    return (
                        f"counts baseline recorded with {lib} {old.get(lib) or '(absent)'}, this "
                        f"run has {new.get(lib) or '(absent)'}"
                    )
            continue
        if name not in stored and name in KEY_DEFAULTS:
            old = KEY_DEFAULTS[name]
        elif name == "counting" and name not in stored:
            return (
                "the counts baseline was counted by an older rule (allocators' paths and glibc's "
                "copy loops included, which move with what ran before in the process)"
            )
        elif name not in stored:
            return (
                f"the counts baseline's key has no {name} (recorded by an older "
                f"pytest-burnperf), this run has {new!r}"
            )
        if name == "simulated_cpu" and same_simulated_cpu(old, new):
            continue
        if name == "simulated_cpu" and isinstance(old, str) and isinstance(new, str):
            return f"counts baseline recorded with simulated_cpu {_cpu_difference(old, new)}"
        if old != new:
            return f"counts baseline recorded with {name} {old!r}, this run has {new!r}"
    return None


#: ``simulated_cpu``'s dispatch parts that are there only where the counted calls ran what they
#: describe, compared only where both keys name them (as the loaded libraries' ``numpy:`` and
#: ``torch:``): ``inductor=``, the CPU torch.compile's C++ kernels were built for
#: (instruments/instruction_counts.compiled_for). Counts whose calls ran no such kernel did not
#: depend on that CPU, so a change that makes a call run one (a view become a compiled copy)
#: is compared, not refused. Baselines counted before the kernels' CPU was pinned, whose part
#: is missing though their calls ran kernels, hold an older ``counting`` rule, refused first.
WHERE_RUN_PARTS = frozenset({"inductor="})


def _where_both(name: str) -> bool:
    """Whether a ``simulated_cpu`` part is compared only where both keys name it."""
    return name.endswith(":") or name in WHERE_RUN_PARTS


def _parts(text: str) -> dict[str, str]:
    """``simulated_cpu``'s parts by what they describe (``numpy=``, ``numpy:``, ``torch:``,
    ``blas=``: the text up to the first ``=`` or ``:``)."""
    out = {}
    for token in text.split():
        cut = min((i for i in (token.find("="), token.find(":")) if i >= 0), default=len(token))
        out[token[: cut + 1]] = token
    return out


def _cpu_difference(old: str, new: str) -> str:
    """The parts of two ``simulated_cpu`` that keep them apart, as said after "recorded with
    simulated_cpu": ``'blas=Haswell', this run has 'blas=Sandybridge'``, a part only one side
    has as ``(no inductor=)``."""
    a, b = _parts(old), _parts(new)
    apart = [
        name
        for name in sorted(set(a) | set(b))
        if a.get(name) != b.get(name)
        and not (_where_both(name) and (name not in a or name not in b))
    ]
    was = " ".join(a.get(n, f"(no {n})") for n in apart)
    now = " ".join(b.get(n, f"(no {n})") for n in apart)
    return f"{was!r}, this run has {now!r}"


def same_simulated_cpu(old: object, new: object) -> bool:
    """Whether two keys' ``simulated_cpu`` agree: the dispatch a device adds (``numpy=``,
    ``blas=``) must be the same, and the features of each library loaded in the counted process
    (``numpy:``, ``torch:``) and the CPU compiled kernels were built for (``inductor=``) must be
    where both name it. Such a part is there only where that library was loaded or such a
    kernel ran, and what was not there decided none of the instructions (a numpy benchmark
    counted without torch imported runs what it ran with torch imported; a call that ran no
    compiled kernel ran none built for any CPU)."""
    if not isinstance(old, str) or not isinstance(new, str):
        return old == new
    a, b = _parts(old), _parts(new)
    for name in set(a) | set(b):
        if _where_both(name) and (name not in a or name not in b):
            continue
        if a.get(name) != b.get(name):
            return False
    return True


def key_notes(stored: Mapping[str, object] | None, current: Mapping[str, object]) -> list[str]:
    """Differences in the fields that are noted, not refused (another valgrind version)."""
    if stored is None:
        return []
    return [
        f"counts baseline recorded with {name} {stored.get(name)}, this run has {current.get(name)}"
        for name in NOTED_FIELDS
        if stored.get(name) != current.get(name)
    ]


#: How the counts baselines' folders begin (:func:`store_name`): no machine's time baselines.
FOLDER_PREFIX = "counts-"


def store_name(system: str, arch: str) -> str:
    """The baselines folder of counts: ``counts-linux-x86_64``. Not the host's CPU model nor
    the valgrind version: counts baselines travel between runners that drew different CPUs and
    images (each entry's key says what must match)."""
    return f"{FOLDER_PREFIX}{system.lower()}-{arch.lower()}"

"""pytest-benchmark's JSON, both ways: results written in it (``--perf-json-format
pytest-benchmark``) for the tools that read it, and saved pytest-benchmark runs with raw data
imported as baselines (``burnperf import-pytest-benchmark``).

A test written for pytest-benchmark keeps its name under ``--perf`` (``test_parse``,
``test_parse[10]``), so the names in this plugin's baselines and in pytest-benchmark's files are
the same. Baselines recorded before that carry a ``cpu`` case in the name (``test_parse[cpu]``,
``test_parse[cpu-10]``): :func:`legacy_keys` finds them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_burnperf._version import __version__
from pytest_burnperf.core.judging.stats import summarize
from pytest_burnperf.storage.jsonfile import Fields, loads, read_bytes
from pytest_burnperf.storage.paths import UnsafeName, inside

# --------------------------------------------------------------------------------------------
# names

#: The case label of a pytest-benchmark-style test: the one CPU case it runs in. Before
#: 0.12 it was also in the test's id (``test_x[cpu]``), and so in its baseline's key.
CASE_ID = "cpu"


def legacy_keys(key: str) -> list[str]:
    """The keys a pytest-benchmark-style test's baseline had when the ``cpu`` case was part of
    its id: ``test_p`` -> ``test_p[cpu]``; ``test_p[a-b]`` -> ``test_p[cpu-a-b]``,
    ``test_p[a-cpu-b]``, ``test_p[a-b-cpu]`` (where pytest put the case depended on the order in
    which the test's parameters were generated)."""
    if not (key.endswith("]") and "[" in key):
        return [f"{key}[{CASE_ID}]"]
    i = key.index("[")
    name, parts = key[:i], key[i + 1 : -1].split("-")
    out = []
    for at in range(len(parts) + 1):
        candidate = f"{name}[{'-'.join([*parts[:at], CASE_ID, *parts[at:]])}]"
        if candidate not in out:
            out.append(candidate)
    return out


# --------------------------------------------------------------------------------------------
# export


def stats(values: Sequence[float], loops: int) -> dict[str, object]:
    """pytest-benchmark's ``stats`` of per-call times ``values`` (each the mean of ``loops``),
    from this plugin's summary plus the outlier counts pytest-benchmark adds."""

    s = summarize(values)
    iqr = s.q3 - s.q1
    low, high = s.q1 - 1.5 * iqr, s.q3 + 1.5 * iqr
    inside = [x for x in values if low <= x <= high]
    iqr_out = len(values) - len(inside)
    sd_out = sum(1 for x in values if abs(x - s.mean) > s.stdev) if s.stdev > 0 else 0
    return {
        "min": s.min,
        "max": s.max,
        "mean": s.mean,
        "stddev": s.stdev,
        "rounds": s.n,
        "median": s.median,
        "iqr": iqr,
        "q1": s.q1,
        "q3": s.q3,
        "iqr_outliers": iqr_out,
        "stddev_outliers": sd_out,
        "outliers": f"{sd_out};{iqr_out}",
        "ld15iqr": min(inside) if inside else s.min,
        "hd15iqr": max(inside) if inside else s.max,
        "ops": 1.0 / s.mean if s.mean > 0 else None,
        "total": sum(values) * loops,
        "data": list(values),
        "iterations": loops,
    }


def document(
    results: Sequence[Any], *, machine: dict[str, object], created: str, git: dict[str, object]
) -> dict[str, object]:
    """The results of a run (``results.Result``) as a pytest-benchmark JSON document. The verdict
    of each benchmark is kept under ``extra_info["burnperf"]`` (with the measure that judged it).
    Its ``stats`` are times, as every tool that reads the format takes them: a benchmark judged
    by counts gives the time measured beside them, and one judged by counts alone (no time) is
    left out of ``benchmarks`` and named under ``burnperf_not_timed`` (:func:`not_timed`)."""

    benchmarks = []
    for r in results:
        t = r.timed()
        if t is None:
            continue
        s = r.settings
        name = r.key
        v = r.verdict
        benchmarks.append(
            {
                "group": r.group,
                "name": name,
                "fullname": f"{r.module}::{name}",
                "params": r.params,
                "param": r.param,
                "extra_info": {
                    **r.extra_info,
                    "burnperf": {
                        "device": r.device_id,
                        "dtype": r.dtype,
                        "timer": t.sample.timer,
                        "measure": r.judged_by.name,
                        "verdict": v.status,
                        "change_pct": v.change_pct,
                        "p_slower": v.p_slower,
                        "reason": v.reason,
                    },
                },
                "options": {
                    "disable_gc": True,
                    "timer": t.sample.timer,
                    "min_rounds": s.samples,
                    "max_time": s.max_time,
                    "min_time": s.min_time,
                    "warmup": s.warmup > 0,
                },
                "stats": stats(t.sample.values, t.sample.loops),
            }
        )
    left_out = not_timed(results)
    return {
        "machine_info": {"node": machine.get("id"), **machine},
        "commit_info": {
            "id": git.get("commit"),
            "dirty": git.get("dirty"),
            "branch": git.get("branch"),
        },
        "benchmarks": benchmarks,
        "datetime": created,
        "version": f"pytest-burnperf {__version__}",
        **({"burnperf_not_timed": left_out} if left_out else {}),
    }


def not_timed(results: Sequence[Any]) -> list[str]:
    """The benchmarks judged by instruction counts alone, with no time measured: pytest-benchmark's
    JSON has no place for them (its ``stats`` are seconds), so they are named apart."""
    return [f"{r.module}::{r.key}" for r in results if r.timed() is None]


def looks_like_one(doc: object) -> bool:
    """Whether ``doc`` is a pytest-benchmark JSON document (one ``--perf-json`` may overwrite)."""
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("benchmarks"), list)
        and isinstance(doc.get("machine_info"), dict)
    )


# --------------------------------------------------------------------------------------------
# import


@dataclass(frozen=True)
class SavedBenchmark:
    module: str  # test file, as pytest-benchmark's fullname has it
    key: str  # this plugin's baseline key
    samples: tuple[float, ...]
    iterations: int


def read_saved_run(path: Path) -> tuple[list[SavedBenchmark], dict[str, object]]:
    """The benchmarks of a saved pytest-benchmark run, with their raw data, and its machine_info.
    A run (or a benchmark) without raw data is refused: its summary statistics cannot be judged."""
    f = Fields(path)
    data = read_bytes(path)
    if data is None:
        f.fail("", "does not exist")
    doc = loads(path, data)
    if not looks_like_one(doc):
        f.fail("", "is not a pytest-benchmark JSON file (no 'benchmarks' list and 'machine_info')")
    out = []
    seen: dict[str, int] = {}
    for i, b in enumerate(doc["benchmarks"]):
        where = f"benchmarks[{i}]"
        f.obj(b, where)
        fullname = f.text(b.get("fullname"), f"{where}.fullname")
        if "::" not in fullname:
            f.fail(f"{where}.fullname", f"must be 'file.py::test', got {fullname!r}")
        try:  # the file's path becomes a baseline file's: it must stay inside the project
            inside(Path("baselines"), fullname.split("::", 1)[0])
        except UnsafeName as exc:
            f.fail(f"{where}.fullname", f"the test file {exc}")
        if fullname in seen:
            f.fail(
                f"{where}.fullname",
                f"{fullname!r} appears twice (also benchmarks[{seen[fullname]}])",
            )
        seen[fullname] = i
        st = f.obj(b.get("stats"), f"{where}.stats")
        if not st.get("data"):
            f.fail(
                f"{where}.stats.data",
                f"{fullname} has no raw data: pytest-benchmark saved only summary statistics, "
                "which cannot be judged; save the run again with --benchmark-save-data",
            )
        samples = f.samples(st["data"], f"{where}.stats.data")
        iterations = f.integer(st.get("iterations", 1), f"{where}.stats.iterations", low=1)
        module, test = fullname.split("::", 1)
        out.append(SavedBenchmark(module, test, tuple(samples), iterations))
    return out, doc["machine_info"]


def same_simd_class(machine_info: dict[str, object], level: str) -> str | None:
    """Why a run recorded on ``machine_info`` (py-cpuinfo's ``cpu`` record, as pytest-benchmark
    saves it) is not of this machine's instruction-set class, or None when it is or cannot tell."""
    cpu = machine_info.get("cpu")
    flags = cpu.get("flags") if isinstance(cpu, dict) else None
    if not isinstance(flags, list):
        return None
    theirs = "avx512f" in flags
    ours = level.endswith("v4")
    if theirs != ours:
        return (
            f"the run was recorded on a CPU {'with' if theirs else 'without'} AVX-512, this "
            f"machine is {level}; import it on a machine of the class that recorded it"
        )
    return None

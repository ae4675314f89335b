"""Memory per call judged beside time: a benchmark's calls tracked through the allocator
(memray) after its samples, its figures kept beside the baseline it records, and a memory
regression failing its own test while its time does not move. The time comes from the virtual
clock (so the time verdict is steady on a busy machine); the memory is real, of numpy buffers
whose sizes do not depend on the machine."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from pytest_burnperf.devices.memory_meters import allocator_unavailable

from ._helpers import FAST, use_virtual_clock

pytestmark = pytest.mark.skipif(
    allocator_unavailable() is not None, reason=str(allocator_unavailable())
)

BENCH = """
import os

import numpy as np
import pytest

from virtual_clock import spin

A = np.ones(1_000_000)
CACHE = []


def add():
    if os.environ.get("BURNPERF_TEST_PLANT") == "held":
        held = np.empty_like(A)  # a temporary of the input's size, never touched: no time
        out = A + 1.0
        del held
    elif os.environ.get("BURNPERF_TEST_PLANT") == "copy":
        out = A.copy() + 1.0  # numpy reuses the copy for the sum: no more memory
    else:
        out = A + 1.0
    spin(200e-6)
    return out


def resized():
    # a buffer whose size moves from call to call (a pool resized as it goes)
    CACHE.append(len(CACHE) % 5 + 1)
    np.ones(100_000 * CACHE[-1])
    spin(200e-6)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_add(perf):
    assert perf(add).shape == A.shape


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_resized(perf):
    perf(resized)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    use_virtual_clock(pytester)
    pytester.makepyfile(test_mem_bench=BENCH)
    return pytester


def _about(got: int, buffer: int) -> bool:
    """``got`` bytes are ``buffer`` and at most a few small allocations beside it (the same on
    every CPU: the sizes a library asks its allocator for)."""
    return buffer <= got < buffer + 4096


def _entries(project: pytest.Pytester) -> dict[str, dict[str, object]]:
    (path,) = Path(project.path, "baselines").rglob("test_mem_bench.json")
    return dict(json.loads(path.read_text())["benchmarks"])


def _results(project: pytest.Pytester) -> dict[str, dict[str, object]]:
    doc = json.loads(Path(project.path, "r.json").read_text())
    return {r["name"]: r for r in doc["results"]}


def test_a_held_temporary_fails_its_test_by_memory_while_its_time_is_unchanged(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest("--perf", "--update-baselines", *FAST).assert_outcomes(passed=2)
    entries = _entries(project)
    memory = entries["test_add[numpy-cpu-f64]"]["memory"]
    assert isinstance(memory, dict)
    # the result's buffer; another numpy may add a small allocation of its own beside it
    assert _about(memory["peak_bytes"], 8_000_000) and _about(memory["allocated_bytes"], 8_000_000)
    assert memory["allocations"] >= 1
    key = memory["key"]
    assert isinstance(key, dict) and key["meter"] == "allocator (memray)"
    assert key["versions"] == {"numpy": np_version()}
    assert key["threads"] == 1  # the benchmark's thread count (--perf-threads' default)
    # calls that allocate differently are not recorded: nothing to compare with later
    assert "memory" not in entries["test_resized[numpy-cpu-f64]"]

    same = project.runpytest("--perf", "--perf-json", "r.json", *FAST)
    same.assert_outcomes(passed=2)
    results = _results(project)
    assert results["test_add[numpy-cpu-f64]"]["memory"]["status"] == "unchanged"
    resized = results["test_resized[numpy-cpu-f64]"]["memory"]
    assert resized["status"] == "varies" and resized["figures"] is None
    assert "allocate differently" in resized["reason"]
    assert "perf: memory per call: 1 unchanged, 1 calls vary" in same.stdout.str()

    monkeypatch.setenv("BURNPERF_TEST_PLANT", "held")
    planted = project.runpytest("--perf", "--perf-json", "r.json", *FAST)
    planted.assert_outcomes(passed=1, failed=1)
    out = planted.stdout.str()
    assert "test_add[numpy-cpu-f64]: memory regressed: peak +7.6 MiB (+100.0%)" in out
    # where: the planted line, new against the sites the baseline kept
    flat = " ".join(out.split())
    found = re.search(
        r"grew at add \(test_mem_bench.py:(\d+)\) \[held = np.empty_like\(A\)[^]]*\] "
        r"\+7.6 MiB \(new\)(;| \()",
        flat,
    )
    assert found, flat
    planted_line = (
        Path(project.path, "test_mem_bench.py").read_text().splitlines()[int(found.group(1)) - 1]
    )
    assert "held = np.empty_like(A)" in planted_line
    # how to accept it where intended, fit to the measure
    assert "if the memory growth is intended, record it as the new baseline:" in flat
    assert "pytest --perf --update-baselines" in flat and "-k 'test_add[numpy-cpu-f64]'" in flat
    assert "memory regressed" in out  # the table's verdict cell
    r = _results(project)["test_add[numpy-cpu-f64]"]
    assert r["verdict"]["status"] != "regressed"  # the time did not move
    assert r["memory"]["status"] == "regressed"
    assert _about(r["memory"]["figures"]["peak_bytes"], 16_000_000)
    assert _about(r["memory"]["baseline"]["peak_bytes"], 8_000_000)

    # a copy numpy reuses for the sum holds no more memory: not a memory regression
    monkeypatch.setenv("BURNPERF_TEST_PLANT", "copy")
    project.runpytest("--perf", "--perf-json", "r.json", *FAST).assert_outcomes(passed=2)
    assert _results(project)["test_add[numpy-cpu-f64]"]["memory"]["status"] == "unchanged"


def np_version() -> str:
    import numpy as np

    return str(np.__version__)


def test_a_baseline_under_another_key_is_said_not_judged_and_a_bad_one_named(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest("--perf", "--update-baselines", *FAST).assert_outcomes(passed=2)
    (path,) = Path(project.path, "baselines").rglob("test_mem_bench.json")
    doc = json.loads(path.read_text())
    entry = doc["benchmarks"]["test_add[numpy-cpu-f64]"]
    entry["memory"]["key"]["versions"] = {"numpy": "0.0.1"}
    entry["memory"]["peak_bytes"] = 1  # whatever it held, another key is not compared
    path.write_text(json.dumps(doc))
    monkeypatch.setenv("BURNPERF_TEST_PLANT", "held")
    other = project.runpytest("--perf", "--perf-json", "r.json", "-v", *FAST)
    other.assert_outcomes(passed=2)
    m = _results(project)["test_add[numpy-cpu-f64]"]["memory"]
    assert m["status"] == "incomparable"
    assert "versions: {'numpy': '0.0.1'} -> {'numpy': '" in m["reason"]

    entry["memory"]["peak_bytes"] = "lots"
    path.write_text(json.dumps(doc))
    before = path.read_text()
    bad = project.runpytest("--perf", *FAST)
    bad.assert_outcomes(errors=2)  # as any bad baseline file: each benchmark of it errors
    out = bad.stdout.str()
    assert "memory.peak_bytes" in out and "must be a whole number" in out
    assert path.read_text() == before  # left untouched


def test_memory_off_tracks_nothing_and_a_bad_value_names_the_option(
    project: pytest.Pytester,
) -> None:
    project.runpytest("--perf", "--update-baselines", "--perf-memory", "off", *FAST)
    assert all("memory" not in e for e in _entries(project).values())
    off = project.runpytest("--perf", "--perf-memory=off", "--perf-json", "r.json", *FAST)
    off.assert_outcomes(passed=2)
    assert all("memory" not in r for r in _results(project).values())
    assert "memory per call" not in off.stdout.str()
    bad = project.runpytest("--perf", "--perf-memory=sometimes", *FAST)
    assert bad.ret != 0
    bad.stderr.fnmatch_lines(["*--perf-memory*must be on (memory per call*) or off*sometimes*"])


def test_pedantic_rounds_given_make_no_extra_calls_and_sampled_rounds_are_tracked(
    pytester: pytest.Pytester,
) -> None:
    use_virtual_clock(pytester)
    pytester.makepyfile(
        test_rounds_bench="""
        import numpy as np
        import pytest

        from virtual_clock import spin

        SETUPS = []


        def setup():
            SETUPS.append(1)
            return (np.ones(1000),), {}


        def body(a):
            spin(200e-6)
            return a * 2.0


        @pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
        def test_given(perf):
            SETUPS.clear()
            perf.pedantic(body, setup=setup, rounds=4, warmup_rounds=1)
            assert len(SETUPS) == 5


        @pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
        def test_sampled(perf):
            perf.pedantic(body, setup=setup)
        """
    )
    result = pytester.runpytest("--perf", "--perf-json", "r.json", *FAST)
    result.assert_outcomes(passed=2)
    doc = json.loads(Path(pytester.path, "r.json").read_text())
    got = {r["name"]: r.get("memory") for r in doc["results"]}
    assert got["test_given[numpy-cpu-f64]"] is None
    sampled = got["test_sampled[numpy-cpu-f64]"]
    assert sampled is not None and _about(sampled["figures"]["allocated_bytes"], 8000)  # a * 2.0
    # the one not tracked is said, with why, in memory's summary line
    result.stdout.fnmatch_lines(
        [
            "perf: memory per call: 1 no memory baseline, 1 not measured (perf.pedantic(rounds=4) "
            "makes no calls beyond its rounds)"
        ]
    )


@pytest.mark.slow
def test_counted_a_held_buffer_fails_by_memory_and_both_baselines_keep_it(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The default measure on the CPU (counts, where valgrind runs): memory is recorded beside
    the counts and beside the time recorded with them, and a buffer allocated and held but
    never touched (a few instructions: the counts do not move past their minimum effect) fails
    the test by its memory."""
    from pytest_burnperf.host import callgrind

    from ._helpers import belongs_in_the_slow_tier

    reason = callgrind.unsupported_reason()
    if reason is None and callgrind.find_valgrind() is None:
        reason = "valgrind is not installed"
    if reason is not None:
        pytest.skip(reason)
    belongs_in_the_slow_tier("count under valgrind")
    monkeypatch.delenv("BURNPERF_MEASURE")  # the tests' time, not the default's auto
    sel = ("-k", "test_add")
    project.runpytest("--perf", "--update-baselines", *sel, *FAST).assert_outcomes(passed=1)
    stores = {
        p.parent.name: p for p in Path(project.path, "baselines").rglob("test_mem_bench.json")
    }
    assert len(stores) == 2 and any(name.startswith("counts-") for name in stores)
    for path in stores.values():
        (entry,) = json.loads(path.read_text())["benchmarks"].values()
        assert _about(entry["memory"]["peak_bytes"], 8_000_000), path

    monkeypatch.setenv("BURNPERF_TEST_PLANT", "held")
    planted = project.runpytest("--perf", "--perf-json", "r.json", *sel, *FAST)
    planted.assert_outcomes(failed=1)
    r = _results(project)["test_add[numpy-cpu-f64]"]
    # the counts do not call it slower (here they moved by under 1%, either way)
    assert r["measure"] == "counts" and r["verdict"]["status"] in ("unchanged", "improved")
    assert r["memory"]["status"] == "regressed"
    assert "memory regressed: peak +7.6 MiB (+100.0%)" in planted.stdout.str()


def test_max_memory_is_a_hard_ceiling_named_in_the_failure_and_said_where_not_checked(
    pytester: pytest.Pytester,
) -> None:
    use_virtual_clock(pytester)
    pytester.makepyfile(
        test_ceiling_bench="""
        import numpy as np
        import pytest

        from virtual_clock import spin

        A = np.ones(1_000_000)


        def add():
            spin(200e-6)
            return A + 1.0  # 8 MB


        @pytest.mark.perf(backends=["numpy"], dtypes=["f64"], max_memory="4 MB")
        def test_over(perf):
            perf(add)


        @pytest.mark.perf(backends=["numpy"], dtypes=["f64"], max_memory="64 MiB")
        def test_under(perf):
            perf(add)


        @pytest.mark.perf(backends=["numpy"], dtypes=["f64"], max_memory="lots")
        def test_bad(perf):
            perf(add)
        """
    )
    result = pytester.runpytest("--perf", "--perf-json", "r.json", *FAST)
    result.assert_outcomes(passed=1, failed=1, errors=1)
    out = result.stdout.str()
    assert "test_over[numpy-cpu-f64]: memory over max_memory: a call's peak of 7.6 MiB" in out
    assert "max_memory must be a size such as '64 MB'" in out and "'lots'" in out
    got = {
        r["name"]: r["memory"]
        for r in json.loads(Path(pytester.path, "r.json").read_text())["results"]
    }
    assert got["test_over[numpy-cpu-f64]"]["status"] == "over-limit"
    assert got["test_under[numpy-cpu-f64]"]["max_memory_bytes"] == 64 * 2**20
    off = pytester.runpytest("--perf", "--perf-memory", "off", "-k", "over", *FAST)
    off.assert_outcomes(passed=1)
    assert "test_over[numpy-cpu-f64]: max_memory not checked: --perf-memory off" in " ".join(
        off.stdout.str().split()
    )


SWITCHING = """
import numpy as np
import pytest

from virtual_clock import spin

CALLS = []


def switches():
    # from its sixth call on it takes another path with a buffer of its own (as torch.compile
    # recompiles after some calls): what a call allocates follows the calls before it
    CALLS.append(1)
    out = np.ones(100_000)
    if len(CALLS) > 5:
        other = np.ones(500_000)
        del other
    spin(200e-6)
    return out


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_switches(perf):
    perf(switches)
"""


def test_memory_is_tracked_on_the_first_calls_whatever_number_the_clock_needs(
    pytester: pytest.Pytester,
) -> None:
    """The tracked calls are the benchmark's first, after a fixed number of untracked ones
    (instruments/memory_tracking.CALLS_BEFORE), before the clock's: a benchmark whose calls
    allocate more after its fifth call is tracked on the calls before that, in a run of 15
    samples and in one of 40 alike, and judged unchanged. Tracked after the clock's calls, its
    figures would be the other path's, and they would follow how many calls the clock made."""
    from pytest_burnperf.instruments.memory_tracking import CALLS_BEFORE, RULE, TRACKED_CALLS

    assert CALLS_BEFORE + TRACKED_CALLS <= 5  # the calls tracked come before the switch
    use_virtual_clock(pytester)
    pytester.makepyfile(test_switching=SWITCHING)
    pytester.runpytest("--perf", "--update-baselines", *FAST).assert_outcomes(passed=1)
    (path,) = Path(pytester.path, "baselines").rglob("test_switching.json")
    (entry,) = json.loads(path.read_text())["benchmarks"].values()
    assert _about(entry["memory"]["peak_bytes"], 800_000), entry["memory"]
    assert entry["memory"]["key"]["rule"] == RULE

    more = ("--perf-samples", "40", "--perf-max-samples", "40")
    pytester.runpytest("--perf", "--perf-json", "r.json", *FAST, *more).assert_outcomes(passed=1)
    (result,) = _results(pytester).values()
    assert result["memory"]["status"] == "unchanged", result["memory"]
    assert _about(result["memory"]["figures"]["peak_bytes"], 800_000)


COMPILING = """
import itertools

import pytest
import torch
import torch._dynamo

from virtual_clock import spin

torch._dynamo.config.automatic_dynamic_shapes = False
X = torch.ones(100_000)
STEP = itertools.count()


@torch.compile(backend="eager", dynamic=False)
def shifted(x, k):
    return x + k


@torch.compile(backend="eager")
def plus_one(x):
    return x + 1


def settles():
    # a new Python int each call: compiled again on each of its first calls, up to the
    # recompile limit, then run as it is (as a benchmark that draws its parameters each call)
    spin(200e-6)
    return shifted(X, next(STEP))


def on_and_on():
    torch._dynamo.reset()  # compiled again on every call
    spin(200e-6)
    return plus_one(X)


@pytest.mark.perf(backends=["torch"], dtypes=["f32"])
def test_settles(perf):
    perf(settles)


@pytest.mark.perf(backends=["torch"], dtypes=["f32"])
def test_on_and_on(perf):
    perf.pedantic(on_and_on)  # single-call rounds: few calls that compile
"""


@pytest.mark.slow  # TorchDynamo loaded and compiling: half a minute on a busy host
def test_calls_that_compile_are_tracked_once_the_compiler_settles_or_said(
    pytester: pytest.Pytester,
) -> None:
    """A benchmark that torch.compile compiles again on each of its first calls (a new Python
    int each call, up to its recompile limit) is tracked once a call compiles nothing, the
    calls before in its memory key, and judged unchanged on a check; one compiled again on
    every call is said (``varies``, naming torch.compile) and its memory not kept."""
    pytest.importorskip("torch")
    use_virtual_clock(pytester)
    pytester.makepyfile(test_compiling=COMPILING)
    few = (*FAST, "--perf-samples", "3", "--perf-max-samples", "3")
    # in processes of their own: torch's compiler registers its operators once per process
    recorded = pytester.runpytest_subprocess(
        "--perf", "--update-baselines", "--perf-json", "r.json", *few
    )
    assert recorded.parseoutcomes()["passed"] == 2  # torch's absent devices skip
    results = _results(pytester)
    settled = results["test_settles[torch-cpu-f32]"]["memory"]
    assert settled["status"] == "no-baseline" and settled["key"]["calls_before"] > 5, settled
    on = results["test_on_and_on[torch-cpu-f32]"]["memory"]
    assert on["status"] == "varies" and "torch.compile compiled" in on["reason"], on
    (path,) = Path(pytester.path, "baselines").rglob("test_compiling.json")
    entries = json.loads(path.read_text())["benchmarks"]
    assert "memory" not in entries["test_on_and_on[torch-cpu-f32]"]
    assert entries["test_settles[torch-cpu-f32]"]["memory"]["key"] == settled["key"]

    checked = pytester.runpytest_subprocess("--perf", "--perf-json", "r.json", *few)
    assert checked.parseoutcomes()["passed"] == 2
    again = _results(pytester)["test_settles[torch-cpu-f32]"]["memory"]
    assert again["status"] == "unchanged", again

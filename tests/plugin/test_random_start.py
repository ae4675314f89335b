"""Each benchmark starts from the same global random state in every process and run of
``--perf`` (plugin/configuration/random_start.py): a sort of data drawn from numpy's global
generator counted in two runs is the same work, and pytest-randomly's seed is fixed where none
was given."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest

from pytest_burnperf.devices.random_state import SEED

from ._helpers import FAST, use_virtual_clock
from .test_counts import UNCHANGED, _need_valgrind, _run

# Each process that runs the benchmark's body writes what its fixture and its body drew.
DRAWING = """
import json
import os
import random

import numpy as np
import pytest

from virtual_clock import spin


@pytest.fixture
def drawn_in_fixture():
    return random.random()


@pytest.fixture
def seeded_by_its_author():
    np.random.seed(1234)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_draws(perf, drawn_in_fixture):
    line = {"pid": os.getpid(), "fixture": drawn_in_fixture, "body": float(np.random.rand())}
    with open("drawn.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(line) + "\\n")
    perf(spin, 0.001)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_its_own_seed(perf, seeded_by_its_author):
    with open("own.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps(float(np.random.rand())) + "\\n")
    perf(spin, 0.001)
"""


def _lines(project: pytest.Pytester, name: str) -> list[object]:
    path = project.path / name
    lines = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
    path.unlink(missing_ok=True)
    return lines


def test_a_benchmark_draws_the_same_in_every_run_and_its_authors_seed_decides(
    pytester: pytest.Pytester,
) -> None:
    use_virtual_clock(pytester)
    pytester.makepyfile(test_drawing=DRAWING)
    expected = {"fixture": random.Random(SEED).random(), "body": None}
    for _ in range(2):
        result = pytester.runpytest_subprocess("--perf", "--perf-update", *FAST)
        result.assert_outcomes(passed=2)
        drawn = _lines(pytester, "drawn.jsonl")
        assert drawn and all(d["fixture"] == expected["fixture"] for d in drawn), drawn
        assert len({d["pid"] for d in drawn}) > 1, drawn  # the parent and its process rounds
        # the body continues from the state its setup started with: the same in every run
        bodies = {d["body"] for d in drawn}
        assert len(bodies) == 1, drawn
        if expected["body"] is not None:
            assert bodies == {expected["body"]}
        expected["body"] = bodies.pop()
        # a benchmark that seeds numpy itself (in its fixture) draws what its seed gives
        own = _lines(pytester, "own.jsonl")
        assert own and set(own) == {float(np.random.RandomState(1234).rand())}, own
    # without --perf the benchmarks are plain tests, run once: nothing seeded
    pytester.runpytest_subprocess().assert_outcomes(passed=2)
    (plain,) = _lines(pytester, "drawn.jsonl")
    assert plain["fixture"] != expected["fixture"]


# A stand-in for pytest-randomly, under its plugin name: its seed option, and the seed it sees.
FAKE_RANDOMLY = """
import json


class Randomly:
    def pytest_configure(self, config):
        with open("randomly_seed.json", "w", encoding="utf-8") as f:
            json.dump(config.getoption("randomly_seed"), f)


def pytest_addoption(parser, pluginmanager):
    parser.addoption("--randomly-seed", dest="randomly_seed", default="default")
    pluginmanager.register(Randomly(), "randomly")
"""


@pytest.mark.parametrize(
    ("args", "seen"),
    [
        (("--perf", "--perf-update", *FAST), SEED),  # fixed under --perf where none was given
        (("--perf", "--perf-update", "--randomly-seed", "7", *FAST), "7"),  # given: kept
        ((), "default"),  # not a --perf run: left to pytest-randomly
    ],
)
def test_pytest_randomlys_seed_is_fixed_under_perf_where_none_was_given(
    pytester: pytest.Pytester, args: tuple[str, ...], seen: object
) -> None:
    use_virtual_clock(pytester, FAKE_RANDOMLY)
    pytester.makepyfile(test_drawing=DRAWING)
    pytester.runpytest_subprocess(*args).assert_outcomes(passed=2)
    assert json.loads((pytester.path / "randomly_seed.json").read_text()) == seen


# A sort of 20,000 doubles drawn from numpy's global generator, and a sorted() of Python floats
# drawn from random: what each call costs follows its data.
SORTS = """
import random

import numpy as np
import pytest


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_np_sort(perf, device, dtype):
    perf(np.sort, np.random.rand(20000))


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_sorted(perf, device, dtype):
    perf(sorted, [random.random() for _ in range(3000)])
"""


@pytest.mark.slow
def test_sorts_of_random_data_count_the_same_in_every_counted_process(
    pytester: pytest.Pytester,
) -> None:
    """Counted in three processes and checked in another, a sort of data drawn from the global
    generators is the same work (unseeded, two checks of unchanged code read the numpy sort
    +0.20% and +1.62%, the second `regressed`)."""
    _need_valgrind()
    pytester.makepyfile(test_sorts=SORTS)
    recorded, doc = _run(pytester, "--perf-measure", "counts", "--perf-update")
    recorded.assert_outcomes(passed=2)
    checked, doc = _run(pytester, "--perf-measure", "counts")
    checked.assert_outcomes(passed=2)
    for result in doc["results"]:
        verdict = result["verdict"]
        assert verdict["status"] == UNCHANGED and abs(verdict["change_pct"]) < 0.1, result


# A sort of data whose size and values each call draws afresh from numpy's global generator:
# its calls spread far beyond what counts judge as a whole; ``EXTRA`` plants more work in each.
DRAWN_EACH_CALL = """
import numpy as np
import pytest

EXTRA = {extra}


def sort_drawn():
    x = np.random.rand(np.random.randint(15000, 25000))
    np.sort(x)
    if EXTRA:
        np.sort(x[: len(x) // EXTRA])


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_drawn_each_call(perf, device, dtype):
    perf(sort_drawn)
"""


@pytest.mark.slow
def test_calls_drawing_afresh_are_judged_call_by_call_and_a_small_change_is_caught(
    pytester: pytest.Pytester,
) -> None:
    """Each call draws its data's size and values (the counted calls spread over 10%, so
    counts of the calls as a whole cannot judge them); the same place draws alike in every
    counted process, so the check judges each call against the baseline's call at its place
    (core/counting/paired_counts.py): unchanged code is `unchanged` at the 0.5% floor, and a
    few percent more work in every call is `regressed`."""
    _need_valgrind()
    pytester.makepyfile(test_drawn=DRAWN_EACH_CALL.format(extra=0))
    recorded, doc = _run(pytester, "--perf-measure", "counts", "--perf-update")
    recorded.assert_outcomes(passed=1)
    (bench,) = doc["results"]
    places, calls = bench["counts"]["positions"], bench["counts"]["instructions"]
    assert len(places) == len(calls) and min(places) > 1
    assert (max(calls) - min(calls)) / min(calls) > 0.1, calls  # far beyond counts' 5%
    checked, doc = _run(pytester, "--perf-measure", "counts")
    checked.assert_outcomes(passed=1)
    (bench,) = doc["results"]
    verdict = bench["verdict"]
    assert verdict["status"] == UNCHANGED and verdict["spread_source"] == "pairs", bench
    assert verdict["min_effect"] == pytest.approx(0.005), verdict
    assert "against the baseline's call at the same place" in verdict["reason"]
    pytester.makepyfile(test_drawn=DRAWN_EACH_CALL.format(extra=20))
    planted, doc = _run(pytester, "--perf-measure", "counts")
    planted.assert_outcomes(failed=1)
    (bench,) = doc["results"]
    assert bench["verdict"]["status"] == "regressed" and bench["verdict"]["change_pct"] > 1
    said = " ".join(planted.stdout.str().split())  # the failure line as wrapped, joined
    assert "% the median call against the baseline's call at the same place, every call" in said

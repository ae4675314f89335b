"""Ctrl-C and SIGTERM at random moments of a real `pytest --perf --perf-update` process:
never a traceback, a half-written or partly updated set of baseline files, or a temporary file.
Every check holds whatever moment the signal lands at, so the test does not depend on speed."""

from __future__ import annotations

import json
import random
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ._helpers import FAST, LOOP_MODULE, use_virtual_clock

# makes each temporary baseline file slow to write, so some signals land in the writing phase
SLOW_WRITES = """
import os
import time

if os.environ.get("SLOW_WRITES"):
    import pytest_burnperf.storage.baselines as store

    real = store.write_temporary

    def slow(path, text):
        time.sleep(float(os.environ["SLOW_WRITES"]))
        return real(path, text)

    store.write_temporary = slow
"""


def _files(root: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(root.rglob("*.json"))}


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_update_interrupted_at_random_moments(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, sig: int
) -> None:
    pytester.makepyfile(test_a=LOOP_MODULE, test_b=LOOP_MODULE)
    use_virtual_clock(pytester, SLOW_WRITES)
    record = ("--perf", "--perf-update", "--perf-rounds", "1", *FAST)
    pytester.runpytest_subprocess(*record).assert_outcomes(passed=4)
    root = pytester.path / "baselines"
    before = _files(root)
    assert len(before) == 2
    monkeypatch.setenv("SLOW_WRITES", "0.4")
    monkeypatch.setenv("PYTHONUNBUFFERED", "1")  # the header line arrives when it is printed
    monkeypatch.setenv("BURNPERF_TEST_WORK", "1.5")  # new timings: every file changes
    rng = random.Random(sig)
    seen: set[str] = set()
    for _ in range(4):
        with subprocess.Popen(
            [sys.executable, "-m", "pytest", *record, "-p", "no:cacheprovider"],
            cwd=pytester.path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as proc:
            assert proc.stdout is not None
            while "test session starts" not in proc.stdout.readline():
                pass
            time.sleep(rng.uniform(0.0, 2.5))  # timing takes about 1 s, writing 0.8 s
            proc.send_signal(sig)
            out = proc.stdout.read()
            proc.wait(timeout=60)
        # a signal that lands after the session's last line (the run ended before the random
        # moment, as on a fast host) interrupts pytest's own exit, after every file was written
        end = re.search(r"^=+ .*\bin [0-9.]+s.* =+$", out, re.MULTILINE)
        run = out if end is None else out[: end.end()]
        assert "Traceback" not in run and "INTERNALERROR" not in out, out
        after = _files(root)
        assert list(after) == list(before)
        for text in after.values():
            json.loads(text)
        changed = [p for p in before if after[p] != before[p]]
        assert changed in ([], list(before)), out  # all files or none
        assert not [p for p in root.rglob("*") if p.name.endswith(".tmp")]
        if changed:
            seen.add("updated")
            assert "baselines updated: 4 benchmark(s) in 2 file(s)" in out
            before = after
        else:
            seen.add("not updated")
            # 2: interrupted. An interrupt that lands inside pytest's own frames can crash its
            # rendering of the interrupt after the session's last line (CPython 3.11 gives the
            # traceback entry no line number: "tb_lineno - 1" on None), and pytest then exits 1;
            # the files were already left whole, as checked above
            upstream = proc.returncode == 1 and "tb_lineno" in out[len(run) :]
            assert proc.returncode == 2 or upstream, out
            assert "baselines NOT updated" in out, out
    assert seen  # (which outcomes occur depends on timing; each is checked above)


# reports, when the first test starts, which of the verdict's modules were already imported
FIRST_TEST_SEES = """
import sys

import pytest


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    names = (
        "core.judging.assess",
        "core.judging.verdict",
        "core.records.results",
        "core.timing",
        "host.activity",
        "storage.jsonfile",
        "devices.base",
    )
    missing = [n for n in names if "pytest_burnperf." + n not in sys.modules]
    print("not yet imported:", missing or "none")
"""


def test_the_verdict_modules_are_imported_before_any_test_runs(
    pytester: pytest.Pytester,
) -> None:
    """A signal landing in a dataclass's generated __init__ (no line numbers) while a test first
    imports a verdict module crashed pytest's traceback printer; they are imported at session
    start, so a perf run's tests never create those classes."""
    pytester.makepyfile(test_a=LOOP_MODULE)
    use_virtual_clock(pytester, FIRST_TEST_SEES)
    result = pytester.runpytest_subprocess("--perf", "-s", "-k", "steady", *FAST)
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*not yet imported: none*"])


# a library whose module initialisation catches the interrupt and reports it as its own failure,
# as a C extension's init does (numpy: "ImportError: initialization failed")
CONVERTING_LIBRARY = """
import os
import signal

try:
    os.kill(os.getpid(), signal.{sig})
    for _ in range(10**6):
        pass
except KeyboardInterrupt as exc:
    raise ImportError("initialization failed") from exc
"""

IMPORTS_IN_ITS_BODY = """
import pytest

from virtual_clock import spin


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_first(perf):
    perf(spin, 200e-6)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_imports(perf):
    import converting_library  # noqa: F401

    perf(spin, 200e-6)


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_after(perf):
    perf(spin, 200e-6)
"""


@pytest.mark.slow
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT"])
def test_a_signal_during_an_import_is_an_interruption_not_a_failure(
    pytester: pytest.Pytester, sig: str
) -> None:
    """The signal lands while a benchmark imports its library, whose initialisation turns it
    into an ImportError: the run ends as interrupted (exit 2), no test is reported failed,
    no baseline is written."""
    pytester.makepyfile(
        converting_library=CONVERTING_LIBRARY.format(sig=sig), test_imports=IMPORTS_IN_ITS_BODY
    )
    use_virtual_clock(pytester)
    result = pytester.runpytest_subprocess("--perf", "--perf-update", "-p", "no:randomly", *FAST)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    out = result.stdout.str()
    assert "FAILED" not in out and "ImportError" not in out.split("KeyboardInterrupt")[-1]
    assert "baselines NOT updated" in out
    assert not list(Path(pytester.path).rglob("baselines/**/*.json"))


# sends Ctrl-C to the process in pytest's own cleanup, after every plugin's unconfigure
CTRL_C_IN_CLEANUP = """
import os
import signal
import time


def pytest_configure(config):
    def ctrl_c():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)

    config.add_cleanup(ctrl_c)
"""


@pytest.mark.slow
def test_a_ctrl_c_in_pytests_own_cleanup_is_said_not_a_traceback(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_a=LOOP_MODULE)
    use_virtual_clock(pytester, CTRL_C_IN_CLEANUP)
    result = pytester.runpytest_subprocess("--perf", "--perf-update", *FAST)
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.OK
    assert "Traceback" not in result.stderr.str() + result.stdout.str()
    result.stderr.fnmatch_lines(["*SIGINT received as pytest was ending*written whole*"])


# a benchmark whose code is generated from a string (as dataclasses and namedtuple make their
# methods) and is running when Ctrl-C arrives
INTERRUPTED_IN_GENERATED_CODE = """
import pytest

from virtual_clock import spin

GENERATED = '''
import os
import signal

os.kill(os.getpid(), signal.SIGINT)
for _ in range(10**6):
    pass
'''


@pytest.mark.perf(backends=["numpy"], dtypes=["f64"])
def test_generated(perf):
    exec(GENERATED)
    perf(spin, 200e-6)
"""


@pytest.mark.slow
def test_a_ctrl_c_in_code_made_from_a_string_ends_the_run_with_status_2(
    pytester: pytest.Pytester,
) -> None:
    """CPython marks an interrupt that leaves code run by exec() of a string as unhandled even
    where pytest catches it, and `python -m pytest` then ended by SIGINT (-2) after its
    summary; the run ends interrupted with status 2, no baseline written."""
    pytester.makepyfile(test_generated=INTERRUPTED_IN_GENERATED_CODE)
    use_virtual_clock(pytester)
    result = pytester.runpytest_subprocess("--perf", "--perf-update", *FAST)
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.INTERRUPTED, out + result.stderr.str()
    assert "baselines NOT updated" in out
    assert "Traceback" not in out + result.stderr.str()
    assert not list(Path(pytester.path).rglob("baselines/**/*.json"))


# Ctrl-C during collection, and pytest's own report of it failing before the plugins hear of it
# (as its traceback printer does on a frame with no line number: "tb_lineno - 1" on None)
INTERRUPT_UNREPORTED = """
import os
import signal

import pytest


def pytest_collection_modifyitems(items):
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(10**6):
        pass


@pytest.hookimpl(tryfirst=True)
def pytest_keyboard_interrupt(excinfo):
    raise TypeError("unsupported operand type(s) for -: 'NoneType' and 'int'")
"""


@pytest.mark.slow
def test_an_interrupt_pytest_fails_to_report_still_leaves_no_baseline_and_says_why(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_a=LOOP_MODULE)
    use_virtual_clock(pytester, INTERRUPT_UNREPORTED)
    result = pytester.runpytest_subprocess("--perf", "--perf-update", *FAST)
    out = result.stdout.str()
    assert result.ret != pytest.ExitCode.OK
    assert "baselines NOT updated: the run was interrupted" in out, out
    assert not list(Path(pytester.path).rglob("baselines/**/*.json"))

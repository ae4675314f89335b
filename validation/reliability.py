"""Reliability probes behind docs/reliability.md: concurrent writers, interrupts, malformed input.

Three experiments, each against real ``pytest --perf`` processes where a user would meet it:

1. **concurrency** -- ``--trials`` times, 2 or 3 ``pytest --perf --perf-update`` processes
   started together on one baselines directory, with disjoint or overlapping ``-k`` selections
   (alternating). Counted: benchmarks missing from the files afterwards, files that do not load,
   temporary files left, processes that failed.
2. **interrupts** -- ``--trials`` times, SIGINT or SIGTERM (alternating) at a random moment of a
   ``pytest --perf --perf-update`` run over 3 modules whose baseline files already exist;
   each temporary file takes 0.3 s to write (a conftest slows ``store.write_temporary``) so that
   many signals land while files are written. Counted: tracebacks, files that do not load, updates
   that changed some files but not all, temporary files left after the next run, and whether the
   README's promise held (no file changed unless the run says "baselines updated").
3. **malformed input** -- every generated bad input goes where a user would put it: baseline
   files (one field replaced by a wrong value, truncated or non-UTF-8 bytes, special files),
   ``--perf-json`` results files for ``burnperf compare``, marker keywords, command-line options
   and ini keys. File cases run through the plugin's readers in this process (and a sample of
   them end to end); option, ini and marker cases each run a real pytest process. A case passes
   when the error names the thing at fault and no traceback appears; a bad value that is
   accepted counts as silently misread.

    python -m validation.reliability --out docs/reliability.md

writes the section between ``<!-- reliability:start -->`` and ``<!-- reliability:end -->`` of
``--out`` and the raw outcomes in ``data/reliability-results.json`` beside it.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any

from validation.common import QUICK

START, END = "<!-- reliability:start -->", "<!-- reliability:end -->"
MODULE = """
import pytest

{tests}
"""
BENCH = """
@pytest.mark.perf(backends=["numpy"], threshold="1000%")
def test_{name}(perf):
    perf(sum, range(20))
"""
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


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def project(root: Path, modules: int, per_module: int) -> None:
    root.mkdir(parents=True, exist_ok=True)
    (root / "pytest.ini").write_text("[pytest]\n")
    (root / "conftest.py").write_text(SLOW_WRITES)
    for m in range(modules):
        tests = "".join(BENCH.format(name=f"m{m}b{b}") for b in range(per_module))
        (root / f"test_m{m}.py").write_text(MODULE.format(tests=tests))


def env() -> dict[str, str]:
    # unbuffered: "test session starts" reaches the parent when it is printed, so a delay measured
    # from it is a delay from the start of the session
    e = dict(os.environ, BURNPERF_TRUST_HOST="1", PYTHONDONTWRITEBYTECODE="1", PYTHONUNBUFFERED="1")
    e.pop("SLOW_WRITES", None)
    return e


def pytest_cmd(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", "--perf", *QUICK, *args]


def stored(root: Path) -> tuple[set[str], int]:
    """Benchmark keys in the baseline files, and how many files failed to load."""
    from pytest_burnperf.storage.baselines import BaselineError, load_file

    keys: set[str] = set()
    bad = 0
    for p in (root / "baselines").rglob("*.json"):
        try:
            keys |= {k.split("[")[0] for k in load_file(p)}
        except BaselineError:
            bad += 1
    return keys, bad


def leftovers(root: Path) -> int:
    return sum(1 for p in (root / "baselines").rglob("*") if p.name.endswith(".tmp"))


# --------------------------------------------------------------------------------------------


def concurrency(trials: int, work: Path) -> dict[str, Any]:
    rng = random.Random(1)
    out = Counter[str]()
    rows = []
    for t in range(trials):
        root = work / f"conc{t}"
        project(root, modules=3, per_module=6)
        n = 2 + t % 2
        overlap = t % 4 >= 2
        if overlap:  # every process selects a random half of all 18 benchmarks
            everything = [f"m{m}b{b}" for m in range(3) for b in range(6)]
            picks = [sorted(rng.sample(everything, 9)) for _ in range(n)]
        else:  # disjoint: each process a different benchmark index in every module
            picks = [
                [f"m{m}b{b}" for m in range(3) for b in range(6) if b % n == i] for i in range(n)
            ]
        procs = [
            subprocess.Popen(
                pytest_cmd("--perf-update", "-k", " or ".join(p)),
                cwd=root,
                env=env(),
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                text=True,
            )
            for p in picks
        ]
        texts = [p.communicate()[0] for p in procs]
        expected = {f"test_{name}" for p in picks for name in p}
        keys, bad = stored(root)
        lost = len(expected - keys)
        failed = sum(p.returncode != 0 for p in procs)
        tracebacks = sum("Traceback" in x or "INTERNALERROR" in x for x in texts)
        out.update(
            trials=1,
            processes=n,
            entries=len(expected),
            lost=lost,
            invalid_files=bad,
            leftover_tmp=leftovers(root),
            failed_processes=failed,
            tracebacks=tracebacks,
            overlapping=int(overlap),
        )
        rows.append({"trial": t, "processes": n, "overlap": overlap, "lost": lost, "invalid": bad})
        log(f"concurrency {t + 1}/{trials}: {n} processes, overlap={overlap}, lost {lost}")
    return {"totals": dict(out), "trials": rows}


# --------------------------------------------------------------------------------------------


def interrupts(trials: int, work: Path) -> dict[str, Any]:
    rng = random.Random(2)
    root = work / "interrupts"
    project(root, modules=3, per_module=4)
    first = subprocess.run(
        pytest_cmd("--perf-update"), cwd=root, env=env(), capture_output=True, text=True
    )
    if first.returncode != 0:
        raise SystemExit(first.stdout[-3000:])
    files = sorted((root / "baselines").rglob("*.json"))

    def timed_run(sig: int | None, delay: float) -> tuple[int, str, float]:
        """One update with slow writes; ``sig`` after ``delay`` s from the session's start."""
        e = env()
        e["SLOW_WRITES"] = "0.3"
        with subprocess.Popen(
            pytest_cmd("--perf-update"),
            cwd=root,
            env=e,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        ) as proc:
            assert proc.stdout is not None
            while "test session starts" not in proc.stdout.readline():
                pass
            t0 = time.monotonic()
            if sig is not None:
                time.sleep(delay)
                proc.send_signal(sig)
            text = proc.stdout.read()
            rc = proc.wait()
            return rc, text, time.monotonic() - t0

    # how long the part after "test session starts" takes: signals are spread over all of it
    span = max(timed_run(None, 0.0)[2] for _ in range(2))
    log(f"an uninterrupted update takes {span:.2f} s after the session starts")
    out = Counter[str]()
    rows = []
    for t in range(trials):
        sig = (signal.SIGINT, signal.SIGTERM)[t % 2]
        before = {p: p.read_bytes() for p in files}
        delay = rng.uniform(0.0, span)
        rc, text, _ = timed_run(sig, delay)
        after = {p: p.read_bytes() for p in files}
        _, bad = stored(root)
        changed = sum(after[p] != before[p] for p in files)
        partial = 0 < changed < len(files)
        says_updated = "baselines updated" in text
        promise = (changed == 0) or says_updated  # nothing changes unless the run says so
        tmp_now = leftovers(root)
        subprocess.run(  # "the next run": a check run that writes nothing
            pytest_cmd("-x", "-q"), cwd=root, env=env(), capture_output=True, text=True
        )
        outcome = (
            "updated, the signal held during the renames"
            if says_updated and "held until" in text
            else "updated, the signal came during the write-up or later"
            if says_updated and delay > 0.5 * span
            else "updated, the signal was lost early in collection"
            if says_updated
            else "not updated"
        )
        out.update(
            trials=1,
            tracebacks=int("Traceback" in text or "INTERNALERROR" in text),
            invalid_files=bad,
            partial_updates=int(partial),
            promise_broken=int(not promise),
            leftover_tmp_at_exit=int(tmp_now > 0),
            leftover_tmp_after_next_run=int(leftovers(root) > 0),
        )
        out[outcome] += 1
        rows.append(
            {
                "trial": t,
                "signal": signal.Signals(sig).name,
                "delay_s": round(delay, 3),
                "exit": rc,
                "changed_files": changed,
                "outcome": outcome,
                "traceback": text[text.find("Traceback") :][:3000] if "Traceback" in text else None,
            }
        )
        log(f"interrupt {t + 1}/{trials}: {signal.Signals(sig).name} at {delay:.2f}s -> {outcome}")
    return {"totals": dict(out), "trials": rows, "span_s": round(span, 2)}


# --------------------------------------------------------------------------------------------

ENTRY_FIELDS: list[tuple[tuple[Any, ...], list[Any]]] = [
    (("samples",), [[], [0], [-1.0], [1e9], [5e-324], ["0.1"], [True], [None], "0.1", {}, 0.1]),
    (("samples", 0), [0, -0.0, 1e300, "x", None, [], {}, False]),
    (("runs",), [[], [[]], [1.0], "runs", {}, [[0.1], [-1]], [["a"]], 5]),
    (("timer",), [5, "wall", "", None if False else True, ["host"], "host\n", "HOST"]),
    (("l2_flush",), ["false", "true", 0, 1, None if False else [], "no"]),
    (("loops",), [0, -1, 1.5, "2", True, 2**70]),
    (("peak_memory_bytes",), [-1, 1.5, "1k", True, 2**70]),
    (("dtype",), [5, ["f32"], "f32\x1b[31m", {}]),
    (("mode",), [1, "auto\n"]),
    (("device",), [[], "cpu", 5]),
    (("device", "identity"), ["2", -1, 1.5, 10**6]),
    (("device", "cpu"), ["x86", 5, []]),
    (("device", "versions"), ["2.0", [], 1]),
    (("device", "versions", "numpy"), ["2.0\nperf: 2 unchanged", "\x1b]0;pwned\x07"]),
    (("host",), [{}, "quiet", 5]),
    (("host", 0), ["x", 5, []]),
    (("host", 0, "others_cpus"), ["lots", -1.0, True, 1e12]),
    (("host", 0, "cpus"), [-1, 1.5, "2"]),
    (("host_probe",), ["fast", [], 5]),
    (("host_probe", "python"), ["slow", -1.0, 0, 1e9, True]),
    (("host_probe", "version"), ["2", -1, 1.5]),
    (("stats",), [[], "x"]),
    (("recorded",), [[], 5]),
    (("recorded", "libraries", "numpy"), ["2\r\nforged", "\x00"]),
]
VALID_ENTRY: dict[str, Any] = {
    "samples": [0.001, 0.002],
    "runs": [[0.001], [0.002]],
    "timer": "host",
    "l2_flush": False,
    "loops": 2,
    "peak_memory_bytes": 10,
    "dtype": "f32",
    "mode": "auto",
    "device": {"identity": 2, "cpu": {"level": "x86-64-v3"}, "versions": {"numpy": "2.4"}},
    "host": [{"seconds": 1.0, "cpus": 2, "others_cpus": 0.1}],
    "host_probe": {"version": 2, "python": 0.003},
    "stats": {"median": 0.0015},
    "recorded": {"libraries": {"numpy": "2.4"}},
}
DOC_TEXT = [
    "",
    "{",
    "[]",
    "null",
    '{"schema": "pytest-burnperf-baselines"}',
    '{"schema": "pytest-burnperf-baselines", "version": 2, "benchmarks": {}}',
    '{"schema": "pytest-burnperf-baselines", "version": "1", "benchmarks": {}}',
    '{"schema": "pytest-burnperf-baselines", "version": true, "benchmarks": {}}',
    '{"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": []}',
    '{"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": {"a": 1}}',
    '{"schema": "pytest-burnperf-baselines", "version": 1, "version": 1, "benchmarks": {}}',
    '{"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": {"a": {"samples": [NaN]}}}',
    '{"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": {"a": {"samples": [Infinity]}}}',
    '{"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": {"a": {"samples": [1e400]}}}',
    '{"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": {"a": {"samples": ['
    + "9" * 5000
    + "]}}}",
    '{"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": {"a\\u001b[2J": {"samples": [1]}}}',
    "[" * 5000 + "]" * 5000,
    '{"a": ' * 3000 + "1" + "}" * 3000,
]


def _set(doc: Any, path: tuple[Any, ...], value: Any) -> None:
    for step in path[:-1]:
        doc = doc[step]
    doc[path[-1]] = value


def baseline_cases(work: Path) -> list[dict[str, Any]]:
    """Every bad baseline file through the plugin's reader; the outcome of each."""
    from pytest_burnperf.storage.baselines import BaselineError, load_file

    d = work / "files"
    d.mkdir(parents=True, exist_ok=True)
    cases: list[tuple[str, Path]] = []
    n = 0

    def add(what: str, data: bytes) -> None:
        nonlocal n
        n += 1
        p = d / f"b{n}.json"
        p.write_bytes(data)
        cases.append((what, p))

    for where, values in ENTRY_FIELDS:
        for v in values:
            entry = json.loads(json.dumps(VALID_ENTRY))
            _set(entry, where, v)
            doc = {
                "schema": "pytest-burnperf-baselines",
                "version": 1,
                "benchmarks": {"t[x]": entry},
            }
            add(f"field {'.'.join(map(str, where))} = {v!r:.40}", json.dumps(doc).encode())
    for text in DOC_TEXT:
        add(f"document {text[:40]!r}", text.encode())
    valid = json.dumps(
        {"schema": "pytest-burnperf-baselines", "version": 1, "benchmarks": {"t[x]": VALID_ENTRY}}
    ).encode()
    for cut in range(5, len(valid) - 1, max(1, len(valid) // 40)):
        add(f"truncated at byte {cut}", valid[:cut])
    for bad in (b"\xff\xfe", b"\xc3\x28", b"\xed\xa0\x80"):
        add(f"non-UTF-8 bytes {bad!r}", valid[:20] + bad + valid[20:])
    fifo = d / "fifo.json"
    os.mkfifo(fifo)
    cases.append(("a FIFO", fifo))
    zero = d / "zero.json"
    zero.symlink_to("/dev/zero")
    cases.append(("a symlink to /dev/zero", zero))
    (d / "dir.json").mkdir()
    cases.append(("a directory", d / "dir.json"))
    big = d / "big.json"
    with big.open("wb") as fh:
        fh.truncate(65 * 1024 * 1024)  # sparse: no disk used
    cases.append(("a 65 MiB file", big))

    rows = []
    for what, path in cases:
        before = path.read_bytes() if path.is_file() and what != "a 65 MiB file" else None
        try:
            load_file(path)
            outcome = "accepted (silently misread)"
        except BaselineError as exc:
            msg = str(exc)
            named = str(path) in msg
            clean = "\n" not in msg and "\x1b" not in msg
            outcome = "clear error" if named and clean else "error without path or with raw text"
        except Exception as exc:
            outcome = f"traceback ({type(exc).__name__})"
        if before is not None and path.read_bytes() != before:
            outcome = "file changed"
        rows.append({"kind": "baseline file", "case": what, "outcome": outcome})
    return rows


def cache_and_round_cases(work: Path) -> list[dict[str, Any]]:
    """Bad peak-cache files (a bad one costs a re-measurement, named among the problems) and bad
    round files (named, the round left out)."""
    from pytest_burnperf.core.records.roofline_figures import Peaks
    from pytest_burnperf.runs.round_launcher import read_round_file
    from pytest_burnperf.storage.jsonfile import FileFormatError
    from pytest_burnperf.storage.peak_cache import CALIBRATION_VERSION, PeakCache

    d = work / "own"
    d.mkdir()
    rows = []
    key = PeakCache.key("m", "numpy-cpu", "cpu", "f32", 1)
    good_peaks = {"version": CALIBRATION_VERSION, "peaks": {key: Peaks(1.0, 2.0, "x").as_dict()}}
    peak_cases: list[tuple[str, str]] = [
        ("not JSON", "{"),
        ("NaN", json.dumps(good_peaks).replace("1.0", "NaN")),
        ("Infinity", json.dumps(good_peaks).replace("2.0", "Infinity")),
        ("1e400", json.dumps(good_peaks).replace("2.0", "1e400")),
        ("duplicate key", '{"version": 1, "version": 1, "peaks": {}}'),
        ("gflops a string", json.dumps(good_peaks).replace("1.0", '"fast"')),
        ("gflops negative", json.dumps(good_peaks).replace("1.0", "-1.0")),
        ("gbps true", json.dumps(good_peaks).replace("2.0", "true")),
        ("huge integer", json.dumps(good_peaks).replace("1.0", "9" * 400)),
        ("deep nesting", "[" * 5000 + "]" * 5000),
    ]
    for what, text in peak_cases:
        p = d / f"peaks-{len(rows)}.json"
        p.write_text(text)
        cache = PeakCache(p, "m")
        try:
            got = cache.get(key)
            if got is None and any(str(p) in x for x in cache.problems):
                outcome = "clear error"
            elif got is None:
                outcome = "error that does not name the thing at fault"
            else:
                outcome = "accepted (silently misread)"
        except Exception as exc:
            outcome = f"traceback ({type(exc).__name__})"
        rows.append({"kind": "peak cache", "case": what, "outcome": outcome})
    round_cases: list[tuple[str, Any]] = [
        ("not an object", []),
        ("record a list", {"t": []}),
        ("values missing", {"t": {"host": {}}}),
        ("values empty", {"t": {"values": []}}),
        ("values negative", {"t": {"values": [-1.0]}}),
        ("values strings", {"t": {"values": ["0.1"]}}),
        ("values tiny", {"t": {"values": [5e-324]}}),
        ("values booleans", {"t": {"values": [True]}}),
        ("host a list", {"t": {"values": [0.1], "host": []}}),
        ("probe a string", {"t": {"values": [0.1], "probe": "fast"}}),
        ("control character in a key", {"t\x1b": {"values": [0.1]}}),
        ("null", None),
    ]
    for what, doc in round_cases:
        p = d / f"round-{len(rows)}.json"
        p.write_text(json.dumps(doc))
        try:
            read_round_file(p)
            outcome = "accepted (silently misread)"
        except FileFormatError as exc:
            outcome = "clear error" if str(p) in str(exc) else "error without the path"
        except Exception as exc:
            outcome = f"traceback ({type(exc).__name__})"
        rows.append({"kind": "round file", "case": what, "outcome": outcome})
    return rows


def _run(root: Path, args: list[str]) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=root,
        env=env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc.returncode, proc.stdout + proc.stderr


MARKER_CASES = [
    ("samples", ["1", "'\u00b2'", "'1' + '0' * 5000", "2.5", "True", "'ten'", "-3", "10**9"]),
    ("warmup", ["10**400", "-1", "'soon'", "float('nan')", "float('inf')", "'1e999'"]),
    ("min_time", ["'\u0661'", "-0.1", "61", "[1]"]),
    ("alpha", ["0", "0.9", "'1_0'", "'5%%'", "None"]),
    ("threshold", ["5", "-0.1", "'2000%'", "'big'", "10"]),
    ("timer", ["'wall'", "5", "'HOST'"]),
    ("flush_l2", ["'maybe'", "2"]),
    ("threads", ["-1", "2.0", "'\u00b3'", "5000"]),
    ("max_samples", ["1", "'many'"]),
    ("max_time", ["-5", "'1h'"]),
    ("backends", ["['gpu']", "[]", "5", "['']", "['cuda', 7]"]),
    ("dtypes", ["['float32']", "'f32,,f64'", "[None]"]),
    ("sample", ["3"]),
]
OPTION_CASES = [
    ("--perf-samples", ["1", "ten", "\u00b2", "9" * 5000, "-5"]),
    ("--perf-warmup", ["soon", "-1", "1e999", "nan"]),
    ("--perf-min-time", ["100", "\u0661"]),
    ("--perf-alpha", ["0", "2", "x"]),
    ("--perf-threshold", ["5", "-5%", "big", "2000%"]),
    ("--perf-timer", ["wall"]),
    ("--perf-rounds", ["0", "51", "1.5"]),
    ("--perf-threads", ["many", "-1"]),
    ("--perf-max-samples", ["1"]),
    ("--perf-max-time", ["-1"]),
    ("--perf-size", ["huge"]),
    ("--perf-columns", ["median,nope"]),
    ("--perf-sort", ["speed"]),
    ("--perf-group-by", ["colour"]),
    ("--perf-backends", ["gpu", ""]),
    ("--perf-dtypes", ["float32"]),
    ("--perf-machine", ["../etc", "a/b"]),
    ("--perf-json", ["a\x01b.json", "test_m0.py", "pytest.ini", "baselines/x.json"]),
    ("--perf-baselines-dir", ["x\ny"]),
    ("--perf-json-format", ["csv", "PYTEST-BENCHMARK"]),
]
INI_CASES = [
    ("perf", ["maybe", "2"]),
    ("perf_update_baselines", ["sometimes"]),
    ("perf_strict", ["yes please"]),
    ("perf_samples", ["ten", "1"]),
    ("perf_threshold", ["5", "lots"]),
    ("perf_alpha", ["0"]),
    ("perf_warmup", ["-1"]),
    ("perf_rounds", ["0"]),
    ("perf_timer", ["wall"]),
    ("perf_json", ["pytest.ini"]),
    ("perf_machine", ["../x"]),
]


def pytest_cases(work: Path, limit: int | None) -> list[dict[str, Any]]:
    """Marker keywords, options and ini keys, each in a real pytest process."""
    rows: list[dict[str, Any]] = []
    root = work / "pytest-cases"
    project(root, modules=1, per_module=1)
    (root / "baselines").mkdir(exist_ok=True)
    (root / "baselines" / "x.json").write_text("{}")
    jobs: list[tuple[str, str, Path, list[str], list[str]]] = []
    for kw, values in MARKER_CASES:
        for v in values:
            case_root = work / f"marker-{len(jobs)}"
            case_root.mkdir()
            (case_root / "pytest.ini").write_text("[pytest]\n")
            (case_root / "test_k.py").write_text(
                "import pytest\n\n"
                f"@pytest.mark.perf(backends=['numpy'], {kw}={v})\n"
                "def test_k(perf):\n    perf(sum, range(5))\n"
            )
            jobs.append(("marker", f"{kw}={v[:30]}", case_root, ["--perf", "-q"], [kw, "test_k"]))
    for opt, values in OPTION_CASES:
        for v in values:
            jobs.append(("option", f"{opt} {v[:30]!r}", root, ["--perf", opt, v, "-q"], [opt]))
    for key, values in INI_CASES:
        for v in values:
            case_root = work / f"ini-{len(jobs)}"
            case_root.mkdir()
            (case_root / "pytest.ini").write_text(f"[pytest]\n{key} = {v}\n")
            (case_root / "test_k.py").write_text("def test_k():\n    pass\n")
            jobs.append(
                ("ini key", f"{key} = {v}", case_root, ["--perf", "-q"], [key, "pytest.ini"])
            )
    for kind, what, cwd, args, names in jobs[:limit]:
        rc, text = _run(cwd, [*QUICK, *args])
        trace = "Traceback" in text or "INTERNALERROR" in text
        named = all(n in text for n in names)
        if trace:
            outcome = "traceback"
        elif rc in (0, 5) and "error" not in text.lower():
            outcome = "accepted (silently misread)"
        elif named:
            outcome = "clear error"
        else:
            outcome = "error that does not name the thing at fault"
        rows.append({"kind": kind, "case": what, "outcome": outcome, "exit": rc})
        log(f"{kind} {what!r}: {outcome}")
    return rows


def results_cases(work: Path) -> list[dict[str, Any]]:
    """Bad --perf-json files given to `burnperf compare`."""
    rows = []
    good = {
        "schema": "pytest-burnperf-results",
        "version": 1,
        "results": [{"test": "t.py::a", "samples": [0.1, 0.2]}],
    }
    mutations: list[tuple[str, Any]] = [
        ("results", 5),
        ("results", [5]),
        ("results", [{"samples": [0.1]}]),
        ("results", [{"test": 5, "samples": [0.1]}]),
        ("results", [{"test": "a", "samples": []}]),
        ("results", [{"test": "a", "samples": [-1]}]),
        ("results", [{"test": "a", "samples": ["x"]}]),
        ("results", [{"test": "a", "samples": [0.1], "runs": 5}]),
        ("results", [{"test": "a", "samples": [0.1], "runs": [[0]]}]),
        ("results", [{"test": "a\nperf: ok", "samples": [0.1]}]),
        ("results", [{"test": "a", "samples": [0.1]}, {"test": "a", "samples": [0.1]}]),
        ("version", 9),
        ("version", "1"),
        ("schema", "other"),
    ]
    d = work / "results"
    d.mkdir()
    good_path = d / "good.json"
    good_path.write_text(json.dumps(good))
    for i, (key, value) in enumerate(mutations):
        doc = json.loads(json.dumps(good))
        doc[key] = value
        p = d / f"r{i}.json"
        p.write_text(json.dumps(doc))
        proc = subprocess.run(
            [sys.executable, "-m", "pytest_burnperf.cli", "compare", str(good_path), str(p)],
            capture_output=True,
            text=True,
            env=env(),
        )
        text = proc.stdout + proc.stderr
        if "Traceback" in text:
            outcome = "traceback"
        elif proc.returncode == 2 and str(p) in text:
            outcome = "clear error"
        elif proc.returncode == 2:
            outcome = "error that does not name the thing at fault"
        else:
            outcome = "accepted (silently misread)"
        rows.append({"kind": "results file", "case": f"{key} = {value!r:.40}", "outcome": outcome})
    return rows


# --------------------------------------------------------------------------------------------


def section(doc: dict[str, Any]) -> str:
    c, i, m = doc["concurrency"]["totals"], doc["interrupts"]["totals"], doc["malformed"]
    by_kind: dict[str, Counter[str]] = {}
    for r in m:
        by_kind.setdefault(r["kind"], Counter())[r["outcome"]] += 1
    lines = [
        START,
        f"Measured {doc['date']} on {doc['machine']} with `{doc['command']}` "
        f"({doc['minutes']:.1f} min; raw outcomes in `docs/data/reliability-results.json`).",
        "",
        "| experiment | trials | result |",
        "|---|---|---|",
        f"| concurrent `--perf-update` (2-3 processes, {c.get('overlapping', 0)} of "
        f"{c['trials']} trials overlapping) | {c['trials']} | {c.get('lost', 0)} of "
        f"{c.get('entries', 0)} entries lost, {c.get('invalid_files', 0)} invalid files, "
        f"{c.get('leftover_tmp', 0)} temporary files left, {c.get('failed_processes', 0)} of "
        f"{c.get('processes', 0)} processes failed, {c.get('tracebacks', 0)} tracebacks |",
        f"| SIGINT/SIGTERM at a random moment of an update | {i['trials']} | "
        f"{i.get('tracebacks', 0)} tracebacks, {i.get('invalid_files', 0)} half-written files, "
        f"{i.get('partial_updates', 0)} partial updates, {i.get('promise_broken', 0)} files "
        f'changed without "baselines updated", {i.get("leftover_tmp_at_exit", 0)} runs left a '
        f"temporary file, {i.get('leftover_tmp_after_next_run', 0)} after the next run; outcomes: "
        + ", ".join(
            f"{k} {v}" for k, v in sorted(i.items()) if k.startswith(("updated", "not updated"))
        )
        + f" (signals spread over the {doc['interrupts']['span_s']} s an update takes after the "
        "session starts) |",
    ]
    total = len(m)
    good = sum(r["outcome"] == "clear error" for r in m)
    lines.append(
        f"| malformed input ({', '.join(f'{k} {sum(v.values())}' for k, v in by_kind.items())}) "
        f"| {total} | {good} clear errors naming the thing at fault ({100 * good / max(total, 1):.0f}%)"
        + (
            "; "
            + ", ".join(
                f"{sum(r['outcome'] == o for r in m)} {o}"
                for o in sorted({r["outcome"] for r in m} - {"clear error"})
            )
            if good < total
            else ""
        )
        + " |"
    )

    def hostile(part: dict[str, Any], what: str, counted: str, outcome: str) -> str:
        t = part["totals"]
        groups = Counter(r["surface"] for r in part["rows"])
        return (
            f"| hostile input on {what} ({', '.join(f'{k} {v}' for k, v in groups.items())}; "
            f"measured {part['date']} with `{part['command']}`) | {t['cases']} | "
            f"{t['outside_writes']} writes outside the project, {t['tracebacks']} tracebacks, "
            f"{counted.format(**t)}; {t['clear']} of {t['cases']} {outcome} |"
        )

    surfaces = doc.get("surfaces")
    if surfaces:
        lines.append(
            hostile(
                surfaces,
                "the newer surfaces",
                "{secrets_printed} secrets printed, {user_files_overwritten} user files "
                "overwritten, {partial_runs_stored} partial runs in history, {commands_run} "
                "commands run unasked",
                "clear errors or inert output",
            )
        )
    fleet = doc.get("fleet")
    if fleet:
        lines.append(
            hostile(
                fleet,
                "the fleet's surfaces",
                "{user_files_overwritten} user files (or site pages) lost or overwritten",
                "clear errors or sensible results",
            )
        )
        for kind, c in fleet["concurrent"].items():
            lines.append(
                f"| two `burnperf {kind}` at once into one target, {c['trials']} trials | "
                f"{c['runs']} | {c['failed']} failed, {c['tracebacks']} tracebacks, "
                f"{c['not_whole']} targets not whole afterwards |"
            )
    counted = doc.get("counts")
    if counted:
        t = counted["totals"]
        parts = counted["trials"]
        lines += [
            f"| counted and profiled surfaces (profiles {len(parts['profiles'])}, strict "
            f"{len(parts['strict'])}, crashes {len(parts['crash'])}, interpreter settings "
            f"{len(parts['settings'])}, SIGKILL {len(parts['kill'])}, scratch folder removed "
            f"{len(parts['scratch'])}, signals {len(parts['signals'])}, $BURNPERF_VALGRIND "
            f"{len(parts['valgrind'])}"
            + (
                f", corrupt counts baselines {len(parts['corrupt'])}, interpreter flags "
                f"{len(parts['flags'])}, --perf-count-limit values {len(parts['options'])}"
                if "corrupt" in parts
                else ""
            )
            + f"; measured {counted['date']} with `{counted['command']}`) "
            f"| {t['trials']} | {t['profiles_lost']} of {t['profiles_reported']} profiles lost, "
            f"{t['profiles_shared']} shared; {t['tracebacks']} tracebacks; a crash cost at most "
            f"{t['crash_cost_max']} benchmark(s), named in {t['crash_named']} of "
            f"{t['crash_trials']}"
            + (
                f" and counted `not measured` in {t['crash_in_coverage']}"
                if "crash_in_coverage" in t
                else ""
            )
            + f"; {t['false_regressions']} false regressions from "
            f"{t['settings']} interpreter settings; {t['orphans']} counted processes left "
            f"running, {t['scratch_after_next_run']} scratch folders left after the next run; "
            f"{t['wrong_outcomes']} wrong exit statuses or unclear errors (SIGINT or SIGTERM sent after "
            f"the write-up in {t['late_signals_sent']} trials)"
            + (
                f"; {t['corrupt_ignored']} corrupt counts baselines ignored or changed, "
                f"{t['flag_false_verdicts']} counts verdicts under -O or -X dev against counts "
                f"of other code, {t['fifos_left']} vgdb FIFOs left by killed runs"
                if "corrupt_ignored" in t
                else ""
            )
            + " |",
        ]
    lost = [r for r in doc["interrupts"]["trials"] if "lost" in r["outcome"]]
    if lost:
        when = ", ".join(f"{r['signal']} at {r['delay_s']} s" for r in lost)
        lines += [
            "",
            f"Signals lost: {len(lost)} ({when} after the session started): the run went on "
            "and updated every file, whole; see Known limits.",
        ]
    bad = [r for r in m if r["outcome"] != "clear error"]
    if bad:
        lines += ["", "Cases that did not give a clear error:", ""]
        lines += [f"- {r['kind']}: `{r['case']}`: {r['outcome']}" for r in bad]
    unclear = [r for r in (surfaces or {}).get("rows", []) if not r["clear"]]
    unclear += [r for r in (fleet or {}).get("rows", []) if not r["clear"]]
    if unclear:
        lines += ["", "Newer-surface cases without a clear error or inert output:", ""]
        lines += [f"- {r['surface']}: `{r['case']!r}` (exit {r['exit']})" for r in unclear]
    lines.append(END)
    return "\n".join(lines)


def write_section(out: Path, text: str) -> None:
    old = out.read_text(encoding="utf-8") if out.exists() else ""
    if START in old and END in old:
        new = old[: old.index(START)] + text + old[old.index(END) + len(END) :]
    else:
        new = old.rstrip("\n") + "\n\n" + text + "\n"
    out.write_text(new, encoding="utf-8")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=30, help="trials of each process experiment")
    ap.add_argument("--pytest-cases", type=int, default=None, help="cap on pytest-process cases")
    ap.add_argument("--out", type=Path, default=None, help="markdown file to write the section to")
    ap.add_argument(
        "--only",
        choices=("surfaces", "fleet", "counts"),
        default=None,
        help="run only this experiment and keep the others' outcomes from the results file",
    )
    args = ap.parse_args()
    from pytest_burnperf.host.hardware import cpu_identity, describe, hardware_class
    from validation.hostile_surfaces import surface_cases, totals

    def surfaces(work: Path) -> dict[str, Any]:
        t = time.monotonic()
        rows = surface_cases(work / "surfaces", log)
        return {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": "python -m validation.reliability --only surfaces",
            "rows": rows,
            "totals": totals(rows),
            "minutes": (time.monotonic() - t) / 60,
        }

    def fleet(work: Path) -> dict[str, Any]:
        from validation.hostile_fleet import concurrent, fleet_cases

        t = time.monotonic()
        rows = fleet_cases(work / "fleet", log)
        return {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": f"python -m validation.reliability --only fleet --trials {args.trials}",
            "rows": rows,
            "totals": totals(rows),
            "concurrent": concurrent(work / "fleet-concurrent", args.trials, log),
            "minutes": (time.monotonic() - t) / 60,
        }

    def counts(work: Path) -> dict[str, Any]:
        from validation.hostile_counts import counts_totals, counts_trials

        t = time.monotonic()
        trials = min(args.trials, 12)
        got = counts_trials(work / "counts", trials, log)
        return {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "command": f"python -m validation.reliability --only counts --trials {trials}",
            "trials": got,
            "totals": counts_totals(got),
            "minutes": (time.monotonic() - t) / 60,
        }

    if args.only in ("surfaces", "fleet", "counts"):
        if args.out is None:
            ap.error("--only needs --out (the other experiments' outcomes are kept from there)")
        raw = args.out.parent / "data" / "reliability-results.json"
        doc = json.loads(raw.read_text(encoding="utf-8"))
        with tempfile.TemporaryDirectory(prefix="burnperf-reliability-") as tmp:
            doc[args.only] = {"surfaces": surfaces, "fleet": fleet, "counts": counts}[args.only](
                Path(tmp)
            )
        text = section(doc)
        print(text)
        write_section(args.out, text)
        raw.write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return

    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="burnperf-reliability-") as tmp:
        work = Path(tmp)
        doc: dict[str, Any] = {
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"hardware class {hardware_class()} ({describe(cpu_identity())}), "
            f"{platform.system()}, Python {platform.python_version()}",
            "command": "python -m validation.reliability --out docs/reliability.md"
            + (f" --trials {args.trials}" if args.trials != 30 else ""),
        }
        doc["malformed"] = baseline_cases(work) + results_cases(work) + cache_and_round_cases(work)
        doc["malformed"] += pytest_cases(work, args.pytest_cases)
        doc["concurrency"] = concurrency(args.trials, work)
        doc["interrupts"] = interrupts(args.trials, work)
        doc["surfaces"] = surfaces(work)
        doc["fleet"] = fleet(work)
        doc["minutes"] = (time.monotonic() - t0) / 60
    text = section(doc)
    print(text)
    if args.out:
        write_section(args.out, text)
        (args.out.parent / "data" / "reliability-results.json").write_text(
            json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8"
        )


if __name__ == "__main__":
    main()

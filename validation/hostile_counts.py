"""Hostile and careless trials on the counted and profiled surfaces (issue 57), each in a real
``pytest --perf`` process as a user would meet it (``python -m validation.reliability --only
counts``). Needs valgrind (``apt-get install valgrind``).

Counted per trial, from the processes' output and the files they left: profiles reported against
profile files written and shared (one file for two benchmarks or two sides), tracebacks
(``Traceback``/``INTERNALERROR`` in the output), benchmarks a crash cost beyond the one that
crashed, false regressions from an interpreter setting in the environment, counted processes
(valgrind) still running and scratch folders left on disk after the run was killed, runs whose
exit status says the wrong thing (a strict run that passed, an interrupted run that said its
tests failed), and whether each error names what is wrong.
"""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

SCRATCH = "burnperf-counts-"
QUICK = ["-p", "no:cacheprovider", "-p", "no:randomly", "--perf-quick"]

LOOP = """
import pytest


def work(n):
    return sum(i * i for i in range(n))


@pytest.mark.perf(backends=["numpy"])
def test_loop(perf):
    perf(work, 3000)
"""

ASSERTS = """
import pytest


def checked(n):
    s = 0
    for i in range(n):
        assert i >= 0, "never"
        s += i
    return s


@pytest.mark.perf(backends=["numpy"])
def test_loop(perf):
    perf(checked, 3000)
"""

NAMED = """
import pytest

IDS = {ids!r}


@pytest.mark.perf(backends=["numpy"])
@pytest.mark.parametrize("name", IDS)
def test_named(perf, name):
    perf(sum, range(200))
"""

CRASHING = """
import ctypes
import os
import sys

import pytest

COUNTED = any(a.startswith("--perf-round-process-count-dir") for a in sys.argv)
CRASH = {crash!r}


@pytest.mark.perf(backends=["numpy"])
@pytest.mark.parametrize("name", [f"b{{i}}" for i in range({n})])
def test_one(perf, name):
    if COUNTED and name == CRASH:
        if {how!r} == "segfault":
            ctypes.string_at(0)
        os._exit(3)
    perf(sum, range(300))
"""

REMOVES_SCRATCH = """
import shutil
import sys
from pathlib import Path

import pytest

COUNTED = [a for a in sys.argv if a.startswith("--perf-round-process-out=")]


@pytest.mark.perf(backends=["numpy"])
@pytest.mark.parametrize("name", ["a", "b", "c"])
def test_one(perf, name):
    if COUNTED and name == "b":  # a cleaner of the temporary directory, mid-run
        out = Path(COUNTED[0].split("=", 1)[1])
        shutil.rmtree(out.parent.parent, ignore_errors=True)
    perf(sum, range(300))
"""

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

IMPORTS = """
import pytest


@pytest.mark.perf(backends=["numpy"])
def test_first(perf):
    perf(sum, range(300))


@pytest.mark.perf(backends=["numpy"])
def test_imports(perf):
    import converting_library  # noqa: F401

    perf(sum, range(300))
"""

SETTINGS = [
    ("PYTHONMALLOC", "malloc"),
    ("PYTHONMALLOC", "debug"),
    ("PYTHONDEVMODE", "1"),
    ("PYTHONTRACEMALLOC", "1"),
    ("PYTHONHASHSEED", "random"),
    ("PYTHONHASHSEED", "12345"),
    ("PYTHONASYNCIODEBUG", "1"),
    ("PYTHONPROFILEIMPORTTIME", "1"),
    ("PYTHONOPTIMIZE", "1"),
    ("PYTHONWARNINGS", "ignore"),
    ("PYTHONWARNINGS", "error::DeprecationWarning"),
]


def _env(**extra: str) -> dict[str, str]:
    e = dict(os.environ, BURNPERF_TRUST_HOST="1", PYTHONDONTWRITEBYTECODE="1")
    for k in ("CI", "GITHUB_STEP_SUMMARY", "BURNPERF_STORE", *(n for n, _ in SETTINGS)):
        e.pop(k, None)
    e.update(extra)
    return e


def _pytest(cwd: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *QUICK, *args],
        cwd=cwd,
        env=env or _env(),
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    return proc.returncode, proc.stdout + proc.stderr


def _traceback(out: str) -> bool:
    return "Traceback" in out or "INTERNALERROR" in out


def _project(work: Path, name: str, **files: str) -> Path:
    root = work / name
    root.mkdir(parents=True)
    (root / "pytest.ini").write_text("[pytest]\n")
    for module, text in files.items():
        (root / f"{module}.py").write_text(text)
    return root


def _coverage_names(root: Path, total: int, crashed: str) -> bool:
    """Whether the run's coverage counts ``total`` benchmarks, the crashed one ``not measured``."""
    path = root / "r.json"
    if not path.is_file():
        return False
    cov = json.loads(path.read_text()).get("coverage") or {}
    missed = (cov.get("missed") or {}).get("not measured") or []
    return cov.get("total") == total and any(m.endswith(crashed) for m in missed)


def _results(root: Path) -> list[dict[str, Any]]:
    path = root / "r.json"
    if not path.is_file():
        return []
    return list(json.loads(path.read_text())["results"])


# --------------------------------------------------------------------------------------------
# the trials


ID_SETS = [
    ["a/b", "a b", "a$b", "a_b", "a:b", "a\\\\b"],
    ["x" * 190 + str(i) for i in range(4)],
    ["é", "e", "ü", "u", "日本", "__"],
]


def profile_trials(work: Path, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Benchmarks whose ids differ only in characters a file name cannot hold, or after
    character 180, profiled in one run (time and counts): every profile its own file."""
    rows = []
    for measure in ("time", "counts"):
        for n, ids in enumerate(ID_SETS):
            root = _project(work, f"profiles-{measure}-{n}", test_named=NAMED.format(ids=ids))
            rc, out = _pytest(
                root, "--perf", "--perf-measure", measure, "--perf-profile", "--perf-json", "r.json"
            )
            files = [r["profile"]["file"] for r in _results(root) if r.get("profile")]
            written = list((root / "perf-profiles").glob("*.pstats"))
            row = {
                "trial": f"{measure}: ids {ids[0][:12]!r}...",
                "exit": rc,
                "reported": len(files),
                "files": len(written),
                "shared": len(files) - len(set(files)),
                "lost": len(ids) - len(written),
                "traceback": _traceback(out),
            }
            log(f"profiles {row}")
            rows.append(row)
    return rows


def strict_trials(work: Path, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """--perf-strict with no baseline, for every measure: each run must fail."""
    rows = []
    for measure in ("time", "counts", "both"):
        root = _project(work, f"strict-{measure}", test_loop=LOOP)
        rc, out = _pytest(root, "--perf", "--perf-measure", measure, "--perf-strict")
        row = {
            "trial": f"--perf-strict --perf-measure {measure}, no baseline",
            "exit": rc,
            "right": rc == 1 and "--perf-strict fails it" in out,
            "traceback": _traceback(out),
        }
        log(f"strict {row}")
        rows.append(row)
    return rows


def crash_trials(work: Path, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """A benchmark that kills the counted process (segfault, os._exit) first, in the middle,
    last: how many benchmarks it cost, and whether the run names it."""
    rows = []
    n = 5
    for how in ("segfault", "exit"):
        for at in (0, 2, n - 1):
            crash = f"b{at}"
            root = _project(
                work, f"crash-{how}-{at}", test_crash=CRASHING.format(crash=crash, how=how, n=n)
            )
            rc, out = _pytest(root, "--perf", "--perf-measure", "counts", "--perf-json", "r.json")
            judged = len(_results(root))
            row = {
                "trial": f"{how} at benchmark {at + 1} of {n}",
                "exit": rc,
                "cost": n - judged,
                "named": f"{crash}]" in out and "died while counting it" in out,
                # "judged N of M" counts it: a miss named "not measured", not a benchmark gone
                "in_coverage": _coverage_names(root, n, f"{crash}]"),
                "traceback": _traceback(out.split("died while counting it")[0]),
            }
            log(f"crash {row}")
            rows.append(row)
    return rows


def setting_trials(work: Path, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Counts recorded in a plain environment, judged with one interpreter setting: never a
    regression (judged, or incomparable with the setting named)."""
    root = _project(work, "settings", test_loop=LOOP)
    _pytest(root, "--perf", "--perf-measure", "counts", "--perf-update")
    rows = []
    for name, value in SETTINGS:
        rc, out = _pytest(
            root,
            "--perf",
            "--perf-measure",
            "counts",
            "--perf-json",
            "r.json",
            env=_env(**{name: value}),
        )
        (r,) = _results(root) or [{"verdict": {"status": "none", "reason": ""}}]
        row = {
            "trial": f"{name}={value}",
            "exit": rc,
            "status": r["verdict"]["status"],
            "false_regression": r["verdict"]["status"] == "regressed",
            "traceback": _traceback(out),
        }
        log(f"setting {row}")
        rows.append(row)
    return rows


def _ours(root: Path) -> set[int]:
    """Process ids of the counted processes (valgrind) working in ``root``: other runs on the
    machine (a test suite beside) are not this trial's."""
    found = set()
    for p in Path("/proc").iterdir():
        if not p.name.isdigit():
            continue
        try:
            cmd = (p / "cmdline").read_bytes().split(b"\0")
            cwd = os.readlink(p / "cwd")
        except OSError:
            continue
        if any(b"--perf-round-process-count-dir" in c for c in cmd) and Path(cwd) == root:
            found.add(int(p.name))
    return found


def _scratch() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob(f"{SCRATCH}*"))


def _fifos() -> set[Path]:
    """valgrind's gdbserver FIFOs in the temporary folder."""
    return set(Path(tempfile.gettempdir()).glob("vgdb-pipe-*"))


def kill_trials(work: Path, trials: int, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """SIGKILL to pytest at a random moment of its counted pass: what is still running a minute
    later (and how long the counted process outlived its parent), and what is left on disk
    after the next counted run."""
    rng = random.Random(57)
    rows = []
    root = _project(work, "killed", test_loop=LOOP)
    for i in range(trials):
        before = _scratch()
        fifos_before = _fifos()
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", *QUICK, "--perf", "--perf-measure", "counts"],
            cwd=root,
            env=_env(),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 120
        while not _ours(root) and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        time.sleep(rng.uniform(0.0, 3.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        killed_at = time.monotonic()
        while _ours(root) and time.monotonic() - killed_at < 60:
            time.sleep(0.1)  # the kernel's parent-death signal, valgrind's end
        lived = time.monotonic() - killed_at
        running = _ours(root)
        for pid in running:  # do not leave them for the next trial
            os.kill(pid, signal.SIGKILL)
        left = _scratch() - before
        fifos = _fifos() - fifos_before
        _pytest(root, "--perf", "--perf-measure", "counts")  # the next run sweeps
        row = {
            "trial": f"SIGKILL {i + 1}",
            "orphans": len(running),
            "outlived_s": round(lived, 1),
            "scratch_left": len(left),
            "scratch_after_next_run": len([p for p in left if p.exists()]),
            "fifos_left": len(fifos),  # valgrind's vgdb-pipe FIFOs (issue 74)
        }
        log(f"kill {row}")
        rows.append(row)
    return rows


def scratch_trials(work: Path, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """The counted process's scratch folder removed mid-run."""
    root = _project(work, "scratch", test_scratch=REMOVES_SCRATCH)
    rc, out = _pytest(root, "--perf", "--perf-measure", "counts")
    row = {
        "trial": "scratch folder removed by a benchmark mid-run",
        "exit": rc,
        "traceback": _traceback(out),
        "named": "scratch folder" in out,
    }
    log(f"scratch {row}")
    return [row]


def signal_trials(work: Path, trials: int, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """A signal that lands while a benchmark imports its library (turned into an ImportError
    there), and SIGINT or SIGTERM (alternating) at a random moment of the half second after a
    run's write-up (sent where the process had not ended yet)."""
    rows = []
    for sig in ("SIGTERM", "SIGINT"):
        root = _project(
            work,
            f"import-{sig}",
            converting_library=CONVERTING_LIBRARY.format(sig=sig),
            test_imports=IMPORTS,
        )
        rc, out = _pytest(root, "--perf", "--perf-update")
        row = {
            "trial": f"{sig} during an import",
            "exit": rc,
            "right": rc == 2 and "FAILED" not in out,
            "traceback": "Traceback" in out,
        }
        log(f"signal {row}")
        rows.append(row)
    rng = random.Random(570)
    root = _project(work, "late", test_loop=LOOP)
    for i in range(trials):
        proc = subprocess.Popen(
            [sys.executable, "-m", "pytest", *QUICK, "--perf", "--perf-update"],
            cwd=root,
            env=_env(PYTHONUNBUFFERED="1"),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        assert proc.stdout is not None
        lines = []
        for line in proc.stdout:
            lines.append(line)
            if "baselines updated" in line:
                break
        time.sleep(rng.uniform(0.0, 0.5))
        sent = proc.poll() is None
        late = signal.SIGINT if i % 2 == 0 else signal.SIGTERM
        if sent:
            proc.send_signal(late)
        rest = proc.stdout.read()
        proc.wait(timeout=60)
        out = "".join(lines) + rest
        row = {
            "trial": f"{late.name} after the write-up {i + 1}",
            "sent": sent,
            "exit": proc.returncode,
            "right": proc.returncode in (0, 2),
            "traceback": _traceback(out),
        }
        log(f"signal {row}")
        rows.append(row)
    return rows


def valgrind_trials(work: Path, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """$BURNPERF_VALGRIND set carelessly: a bare name that is on $PATH works; the rest are
    named with what is wrong."""
    root = _project(work, "valgrind", test_loop=LOOP)
    (root / "notes.txt").write_text("not a program\n")
    cases = [
        ("a bare name on $PATH", "valgrind", None),
        ("a bare name not on $PATH", "no-such-valgrind", "a name that is not an executable"),
        ("a path that does not exist", str(root / "missing" / "valgrind"), "does not exist"),
        ("a folder", str(root), "a folder"),
        ("a file that is not executable", str(root / "notes.txt"), "not executable"),
    ]
    rows = []
    for what, value, words in cases:
        rc, out = _pytest(
            root, "--perf", "--perf-measure", "counts", env=_env(BURNPERF_VALGRIND=value)
        )
        right = rc == 0 if words is None else (rc == 4 and words in out and value in out)
        row = {
            "trial": f"BURNPERF_VALGRIND: {what}",
            "exit": rc,
            "right": right and "install" not in (out if words else ""),
            "traceback": _traceback(out),
        }
        log(f"valgrind {row}")
        rows.append(row)
        if words is None:
            continue
        # the default measure records by time where it cannot count, and says why (issue 74:
        # it said "valgrind is not installed" for every one of these)
        rc, out = _pytest(root, "--perf", "--perf-update", env=_env(BURNPERF_VALGRIND=value))
        flat = " ".join(out.split())
        row = {
            "trial": f"BURNPERF_VALGRIND: {what} (auto)",
            "exit": rc,
            "right": rc == 0 and words in flat and "valgrind is not installed" not in flat,
            "traceback": _traceback(out),
        }
        log(f"valgrind {row}")
        rows.append(row)
    return rows


#: Issue 74's corrupt counts baselines: what each does to the file's one entry.
CORRUPTIONS: list[tuple[str, Callable[[dict[str, Any]], object]]] = [
    ("NaN", lambda c: c.update(instructions=[float("nan")])),
    ("a string", lambda c: c.update(instructions="many")),
    ("a 40-digit integer", lambda c: c.update(instructions=[10**40])),
    ("1e25", lambda c: c.update(instructions=[1e25])),
    ("negative", lambda c: c.update(instructions=[-5, -5])),
    ("an empty list", lambda c: c.update(instructions=[])),
    ("zero", lambda c: c.update(instructions=[0, 0])),
    ("a float", lambda c: c.update(instructions=[1234.5])),
    ("a wrong key type", lambda c: c.update(key=["not", "an", "object"])),
]


def corrupt_trials(work: Path, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """A counts baseline made corrupt in each way of :data:`CORRUPTIONS`, and truncated, and
    emptied, judged under the default (auto) and under counts: the test fails naming the file,
    which is left as it was (never timed instead in silence, never rewritten)."""
    root = _project(work, "corrupt", test_loop=LOOP)
    _pytest(root, "--perf", "--perf-measure", "both", "--perf-update")
    (path,) = (root / "baselines").glob("counts-*/*.json")
    good = path.read_text()
    texts: list[tuple[str, str]] = [("truncated", good[: len(good) // 2]), ("an empty file", "")]
    for what, change in CORRUPTIONS:
        doc = json.loads(good)
        (entry,) = doc["benchmarks"].values()
        change(entry["counts"])
        texts.append((what, json.dumps(doc)))
    rows = []
    for what, text in texts:
        for measure in ("auto", "counts"):
            path.write_text(text)
            rc, out = _pytest(root, "--perf", "--perf-measure", measure)
            row = {
                "trial": f"counts baseline {what}, --perf-measure {measure}",
                "exit": rc,
                "right": rc == 1 and path.name in out and "left untouched" in out,
                "untouched": path.read_text() == text,
                "traceback": _traceback(out),
            }
            log(f"corrupt {row}")
            rows.append(row)
    path.write_text(good)
    return rows


def flag_trials(work: Path, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """Counts recorded by a plain interpreter, judged by ``python -O`` and ``python -X dev``:
    the counted process runs with the flag, its key says so, so never `unchanged` by counts of
    other code (issue 74: a module of asserts read +0.00% unchanged under -O)."""
    root = _project(work, "flags", test_loop=ASSERTS)
    _pytest(root, "--perf", "--perf-measure", "counts", "--perf-update")
    rows = []
    for flag in (["-O"], ["-X", "dev"]):
        judge = ["--perf", "--perf-measure", "counts", "--perf-json", "r.json"]
        proc = subprocess.run(
            [sys.executable, *flag, "-m", "pytest", *QUICK, *judge],
            cwd=root,
            env=_env(),
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        (r,) = _results(root) or [{"verdict": {"status": "none"}, "counts": {"key": {}}}]
        settings = str(r.get("counts", {}).get("key", {}).get("interpreter_settings"))
        row = {
            "trial": f"python {' '.join(flag)}",
            "exit": proc.returncode,
            "status": r["verdict"]["status"],
            "key": settings,
            "false_verdict": r["verdict"]["status"] in ("unchanged", "regressed", "improved"),
            "traceback": _traceback(proc.stdout + proc.stderr),
        }
        log(f"flag {row}")
        rows.append(row)
    return rows


def option_trials(work: Path, log: Callable[[str], None]) -> list[dict[str, Any]]:
    """--perf-count-limit values the docs do not allow, on the command line, in pytest.ini and
    in benchmarks.toml: a usage error naming the option and what is allowed, no traceback."""
    rows = []
    for i, value in enumerate(
        ["9" * 400, "1_000.5", "\u0661\u0660\u0660\u0660", "1000.5", "1" + "0" * 35]
    ):
        for where in ("command line", "pytest.ini"):
            root = _project(work, f"option-{i}-{where.replace(' ', '-').replace('.', '-')}")
            (root / "test_loop.py").write_text(LOOP)
            if where == "pytest.ini":
                (root / "pytest.ini").write_text(f"[pytest]\nperf_count_limit = {value}\n")
                rc, out = _pytest(root, "--perf")
            else:
                rc, out = _pytest(root, "--perf", f"--perf-count-limit={value}")
            row = {
                "trial": f"--perf-count-limit {value[:12]!r} ({where})",
                "exit": rc,
                "right": rc == 4 and "150M" in out,
                "traceback": _traceback(out),
            }
            log(f"option {row}")
            rows.append(row)
    return rows


def counts_trials(work: Path, trials: int, log: Callable[[str], None] = print) -> dict[str, Any]:
    return {
        "corrupt": corrupt_trials(work, log),
        "flags": flag_trials(work, log),
        "options": option_trials(work, log),
        "profiles": profile_trials(work, log),
        "strict": strict_trials(work, log),
        "crash": crash_trials(work, log),
        "settings": setting_trials(work, log),
        "kill": kill_trials(work, trials, log),
        "scratch": scratch_trials(work, log),
        "signals": signal_trials(work, trials, log),
        "valgrind": valgrind_trials(work, log),
    }


def counts_totals(doc: dict[str, Any]) -> dict[str, int]:
    rows = [r for part in doc.values() for r in part]
    return {
        "trials": len(rows),
        "tracebacks": sum(bool(r.get("traceback")) for r in rows),
        "profiles_reported": sum(r["reported"] for r in doc["profiles"]),
        "profiles_lost": sum(r["lost"] for r in doc["profiles"]),
        "profiles_shared": sum(r["shared"] for r in doc["profiles"]),
        "crash_trials": len(doc["crash"]),
        "crash_cost_max": max((r["cost"] for r in doc["crash"]), default=0),
        "crash_named": sum(r["named"] for r in doc["crash"]),
        "crash_in_coverage": sum(r.get("in_coverage", False) for r in doc["crash"]),
        "settings": len(doc["settings"]),
        "false_regressions": sum(r["false_regression"] for r in doc["settings"]),
        "orphans": sum(r["orphans"] for r in doc["kill"]),
        "late_signals_sent": sum(r.get("sent", False) for r in doc["signals"]),
        "scratch_after_next_run": sum(r["scratch_after_next_run"] for r in doc["kill"]),
        "wrong_outcomes": sum(
            not r["right"]
            for part in ("strict", "signals", "valgrind", "corrupt", "options")
            for r in doc.get(part, [])
        )
        + sum(not r["named"] for r in doc["scratch"]),
        "corrupt_ignored": sum(
            not r["right"] or not r["untouched"] for r in doc.get("corrupt", [])
        ),
        "flag_false_verdicts": sum(r["false_verdict"] for r in doc.get("flags", [])),
        "fifos_left": sum(r.get("fifos_left", 0) for r in doc["kill"]),
    }


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="burnperf-hostile-counts-") as tmp:
        got = counts_trials(Path(tmp), 3)
    print(json.dumps(counts_totals(got), indent=1))

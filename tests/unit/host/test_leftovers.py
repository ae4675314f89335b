"""host/leftovers.py: a counted process dies with its parent, and the scratch folders of dead
runs are removed by the next (never a folder without the owner mark)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_burnperf.host import leftovers

PREFIX = "burnperf-counts-"


def test_a_dead_runs_scratch_folder_is_removed_and_a_live_ones_kept(tmp_path: Path) -> None:
    dead_pid = _dead_pid()
    dead = tmp_path / f"{PREFIX}dead"
    dead.mkdir()
    (dead / "dumps").mkdir()
    (dead / "dumps" / "callgrind.out.1").write_text("x")
    leftovers.mark_owner(dead, pid=dead_pid)
    live = tmp_path / f"{PREFIX}live"
    live.mkdir()
    leftovers.mark_owner(live)
    reused = tmp_path / f"{PREFIX}reused"  # this pid, another start time
    reused.mkdir()
    (reused / leftovers.OWNER_FILE).write_text(f"{os.getpid()} 1\n")
    unmarked = tmp_path / f"{PREFIX}other"  # not ours to remove
    unmarked.mkdir()
    removed = leftovers.sweep(PREFIX, tmp_path)
    assert sorted(p.name for p in removed) == sorted([dead.name, reused.name])
    assert live.is_dir() and unmarked.is_dir() and not dead.exists()


def _dead_pid() -> int:
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return pid


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="parent-death signal: Linux")
def test_a_child_that_asked_dies_with_its_parent(tmp_path: Path) -> None:
    """A middle process starts a child that calls die_with_parent, then is SIGKILLed: the child
    goes with it (it would otherwise sleep for a minute)."""
    pidfile = tmp_path / "child.pid"
    child = (
        "import os, sys, time\n"
        "from pytest_burnperf.host.leftovers import die_with_parent\n"
        "assert die_with_parent()\n"
        f"open({str(pidfile)!r}, 'w').write(str(os.getpid()))\n"
        "time.sleep(60)\n"
    )
    middle = (
        "import os, subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', {child!r}])\n"
        "time.sleep(60)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", middle])
    deadline = time.monotonic() + 60
    while not pidfile.exists() or not pidfile.read_text():
        assert time.monotonic() < deadline, "the child never started"
        time.sleep(0.05)
    pid = int(pidfile.read_text())
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 30
    while leftovers.start_time(pid) is not None and _state(pid) != "Z":
        assert time.monotonic() < deadline, "the child outlived its parent"
        time.sleep(0.05)


def _state(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except (OSError, IndexError):
        return "gone"


def test_a_parent_gone_before_the_request_ends_the_child_at_once(tmp_path: Path) -> None:
    code = (
        "from pytest_burnperf.host.leftovers import die_with_parent\n"
        f"die_with_parent({_dead_pid()})\n"
        "raise SystemExit(0)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 3

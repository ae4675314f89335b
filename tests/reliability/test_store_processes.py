"""The baseline store under real processes: concurrent writers lose nothing, real signals never
leave a half-done update, a traceback or a temporary file. Timing-independent: every outcome
below is checked for whatever moment the signal landed at."""

from __future__ import annotations

import json
import os
import random
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_burnperf.storage.baselines import GITIGNORE, LOCK_NAME, BaselineStore, load_file

WORKER = str(Path(__file__).with_name("save_worker.py"))


def start(
    root: Path, tag: str, modules: int, keys: int, slow: float = 0.0
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, WORKER, str(root), tag, str(modules), str(keys), str(slow)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def keys_in(root: Path) -> dict[str, set[str]]:
    return {p.name: set(load_file(p)) for p in sorted((root / "m").glob("*.json"))}


def leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".tmp")]


@pytest.mark.parametrize("overlap", [False, True])
def test_concurrent_writers_keep_every_entry(tmp_path: Path, overlap: bool) -> None:
    for trial in range(3):
        root = tmp_path / f"t{trial}"
        # overlapping: every writer updates the same 3 modules; disjoint: the tags differ anyway
        procs = [start(root, f"w{w}", 3 if overlap else w + 1, 40) for w in range(3)]
        for p in procs:
            _out, err = p.communicate(timeout=120)
            assert p.returncode == 0, err
            assert "Traceback" not in err
        found = keys_in(root)
        for w in range(3):
            for j in range(3 if overlap else w + 1):
                assert {f"w{w}-{i}" for i in range(40)} <= found[f"m{j}.json"]
        assert leftovers(root) == []


def test_mode_is_kept_and_the_lock_is_ignored_by_git(tmp_path: Path) -> None:
    s = BaselineStore(tmp_path, "m")
    s.save({"t.py": {"a": {"samples": [1.0]}}}, {})
    path = tmp_path / "m" / "t.json"
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o666 & ~umask  # as any new file, not 0600
    path.chmod(0o640)
    s.save({"t.py": {"b": {"samples": [1.0]}}}, {})
    assert stat.S_IMODE(path.stat().st_mode) == 0o640
    assert (tmp_path / ".gitignore").read_text() == GITIGNORE
    assert LOCK_NAME in GITIGNORE and (tmp_path / LOCK_NAME).exists()


def test_stale_temporaries_of_killed_runs_are_removed_by_the_next_writer(tmp_path: Path) -> None:
    proc = start(tmp_path, "k", 3, 5, slow=0.5)
    assert proc.stdout is not None and proc.stdout.readline() == "saving\n"
    assert proc.stdout.readline().startswith("staging m0.json")
    assert proc.stdout.readline().startswith("staging m1.json")  # m0's temporary file is written
    proc.kill()  # SIGKILL: nothing can clean up
    proc.communicate()
    assert len(leftovers(tmp_path)) == 1
    assert (tmp_path / "m").exists()
    report = BaselineStore(tmp_path, "m").save({"x.py": {"a": {"samples": [1.0]}}}, {})
    assert leftovers(tmp_path) == []
    assert report.written and len(report.cleaned) == 1
    assert not (tmp_path / "m" / "m0.json").exists()  # killed before any rename


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_at_a_random_moment_leaves_all_files_or_none(tmp_path: Path, sig: int) -> None:
    rng = random.Random(sig)
    for trial in range(4):
        root = tmp_path / f"t{trial}"
        BaselineStore(root, "m").save(
            {f"m{j}.py": {"old": {"samples": [1.0]}} for j in range(3)}, {}
        )
        before = {p: p.read_bytes() for p in (root / "m").glob("*.json")}
        proc = start(root, "new", 3, 5, slow=0.2)
        assert proc.stdout is not None and proc.stdout.readline() == "saving\n"
        time.sleep(rng.uniform(0.0, 1.0))  # the update stages 3 files (0.6 s), renames (0.3 s)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=60)
        assert "Traceback" not in err, err
        after = {p: p.read_bytes() for p in (root / "m").glob("*.json")}
        changed = [p for p in before if after[p] != before[p]]
        # whole files only, and all of them or none of them
        for p in after:
            json.loads(after[p])
        assert changed in ([], sorted(before, key=str)) or sorted(changed) == sorted(before)
        if proc.returncode == 3:
            assert changed == [] and "interrupted before any rename" in out
        elif proc.returncode == 4:
            assert sorted(changed) == sorted(before) and "deferred SIG" in out
        elif proc.returncode == 5:  # Ctrl-C just before the hold or as it ended: all or none
            assert "interrupted outside the hold" in out
        else:  # the signal came after the update: the script ends as it ends (0 or by the signal)
            assert proc.returncode in (0, -sig) and sorted(changed) == sorted(before)
        assert leftovers(root) == []


#: Opens (creates) a results store and closes it.
OPEN_STORE = (
    "import sys\n"
    "from pytest_burnperf.storage.history.store import Store\n"
    "Store('sqlite:///' + sys.argv[1]).close()\n"
)


@pytest.mark.slow
def test_two_runs_creating_one_new_store_at_once_both_use_it(tmp_path: Path) -> None:
    """Two shard runs recording into a store that does not exist yet: before, about a third of
    such pairs had one run fail ("table burnperf_meta already exists", "has burnperf tables but
    no schema version", a duplicate version row); the first now takes SQLite's write lock
    before it looks, and the second waits and finds the schema."""
    pytest.importorskip("sqlalchemy")
    failed = []
    for i in range(8):
        db = tmp_path / f"s{i}.sqlite"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", OPEN_STORE, str(db)],
                stderr=subprocess.PIPE,
                text=True,
            )
            for _ in range(2)
        ]
        for p in procs:
            _, err = p.communicate(timeout=120)
            if p.returncode:
                failed.append(err.strip().splitlines()[-1])
    assert failed == []

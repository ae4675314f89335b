"""Process rounds: the same pytest command in fresh processes, one after another, each writing its
raw samples, host windows and probes for the parent session to pool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import pytest

from .session import PerfState

if TYPE_CHECKING:
    pass

T = TypeVar("T")


def run_rounds(session: pytest.Session, state: PerfState) -> None:
    """Rounds 1..N-1: the same pytest command in fresh processes, one after another."""
    import subprocess
    import sys
    import tempfile

    config = session.config
    tr = config.pluginmanager.get_plugin("terminalreporter")
    import time

    args = [a for a in state.invocation if a not in ("--update-baselines", "--perf-strict")]
    t0 = time.monotonic()

    def elapsed() -> str:
        s = int(time.monotonic() - t0)
        return f"{s // 60}:{s % 60:02d}"

    with tempfile.TemporaryDirectory(prefix="burnperf-rounds-") as tmp:
        for r in range(1, state.rounds):
            out = Path(tmp, f"round{r}.json")
            if tr is not None:
                tr.write_line(
                    f"pytest-burnperf: round {r}/{state.rounds} in a fresh process ({elapsed()} "
                    f"elapsed; this process measures round {state.rounds}) ..."
                )
            cmd = [sys.executable, "-m", "pytest", *args, "-q", "--perf-worker-out", str(out)]
            proc = subprocess.run(
                cmd,
                cwd=config.invocation_params.dir,
                capture_output=True,
                text=True,
                check=False,
            )
            if not out.exists():
                tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-15:])
                state.messages.append(
                    f"round {r} in a fresh process failed (exit {proc.returncode}); its samples "
                    f"are missing from the verdicts:\n{tail}"
                )
                continue
            doc = json.loads(out.read_text(encoding="utf-8"))
            for nodeid, rec in doc.items():
                state.worker_runs.setdefault(nodeid, []).append(list(rec["values"]))
                state.worker_host.setdefault(nodeid, []).append(rec.get("host") or {})
                state.worker_probes.setdefault(nodeid, []).append(rec.get("probe") or {})

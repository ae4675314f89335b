"""A process that saves baselines, for the concurrency and interrupt tests (run as a script).

    python save_worker.py ROOT TAG MODULES KEYS [SLOW_S]

saves KEYS benchmarks named ``<TAG>-<i>`` into each of MODULES modules ``m<j>.py`` under ROOT,
in one update. With SLOW_S, each temporary file takes that long to write and the process prints
``staging <path>`` and ``renaming`` as it goes, so a test can signal it at a chosen phase.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from pytest_burnperf.storage import baselines as store
from pytest_burnperf.storage.baselines import Interrupted

root, tag, modules, keys = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
slow = float(sys.argv[5]) if len(sys.argv) > 5 else 0.0

if slow:
    real_write, real_replace = store.write_temporary, store.os.replace
    renaming = False

    def slow_write(path: Path, text: str) -> Path:
        print(f"staging {path.name}", flush=True)
        time.sleep(slow)
        return real_write(path, text)

    def slow_replace(src: object, dst: object) -> None:
        global renaming
        if not renaming:
            renaming = True
            print("renaming", flush=True)
        time.sleep(slow / 2)
        real_replace(src, dst)  # type: ignore[arg-type]

    store.write_temporary = slow_write  # type: ignore[assignment]
    store.os.replace = slow_replace  # type: ignore[assignment]

updates = {
    f"m{j}.py": {
        f"{tag}-{i}": {"samples": [0.001 * (i + 1), 0.002], "dtype": "f32"} for i in range(keys)
    }
    for j in range(modules)
}
print("saving", flush=True)
try:
    try:
        report = store.BaselineStore(root, "m").save(updates, {"id": "m"})
    except Interrupted as exc:
        print(f"interrupted before any rename: {exc.signals}", flush=True)
        sys.exit(3)
    print(f"written {len(report.written)} deferred {report.deferred or '-'}", flush=True)
    sys.exit(4 if report.deferred else 0)
except KeyboardInterrupt:
    # Ctrl-C outside the hold (before it began, or as the old handler came back after the
    # update): Python's own KeyboardInterrupt, which a run reports as interrupted
    print("interrupted outside the hold", flush=True)
    sys.exit(5)

"""The cache of measured peaks (devices/peak_calibration.py): one JSON file in the user's cache directory,
keyed by machine, device, dtype and thread count. A file that cannot be read or written only
costs a new calibration."""

from __future__ import annotations

from pathlib import Path

from pytest_burnperf.core.records.roofline_figures import Peaks
from pytest_burnperf.core.text import escape
from pytest_burnperf.storage.jsonfile import FileFormatError, atomic_write_text, dumps, read_json
from pytest_burnperf.storage.paths import cache_root

#: Bump when calibration changes so that old cached peaks are measured again.
CALIBRATION_VERSION = 3  # 3: peaks on the device clock where benchmarks use it


def cache_path() -> Path:
    """Where measured peaks are cached: $BURNPERF_CACHE_DIR, else the XDG cache directory."""
    return cache_root() / "peaks.json"


class PeakCache:
    """Peaks per (machine, device, dtype, threads), in one JSON file; a file that cannot be read
    or written only costs a new calibration (the reason is kept in ``problems``)."""

    def __init__(self, path: Path, machine: str) -> None:
        self.path = path
        self.machine = machine
        self.problems: list[str] = []
        self._doc: dict[str, object] | None = None

    def _load(self) -> dict[str, object]:
        if self._doc is None:
            doc: dict[str, object] = {}
            try:
                loaded = read_json(self.path, max_bytes=4 * 1024 * 1024)
            except FileFormatError as exc:
                self.problems.append(f"peak cache {exc}; measured again")
                loaded = None
            if (
                isinstance(loaded, dict)
                and loaded.get("version") == CALIBRATION_VERSION
                and isinstance(loaded.get("peaks"), dict)
            ):
                doc = loaded
            doc.setdefault("version", CALIBRATION_VERSION)
            doc.setdefault("peaks", {})
            self._doc = doc
        return self._doc

    def _peaks(self) -> dict[str, object]:
        """The loaded document's peaks by key (an object: checked when loaded)."""
        peaks = self._load()["peaks"]
        assert isinstance(peaks, dict)
        return peaks

    @staticmethod
    def key(machine: str, device_id: str, model: str, dtype: str, threads: int) -> str:
        return f"{machine}|{device_id}|{model}|{dtype}|threads={threads}"

    def get(self, key: str) -> Peaks | None:
        entry = self._peaks().get(key)
        if not isinstance(entry, dict):
            return None
        rates = [entry.get("gflops"), entry.get("gbps")]
        if not all(
            r is None or (not isinstance(r, bool) and isinstance(r, (int, float)) and 0 < r < 1e12)
            for r in rates
        ):
            self.problems.append(
                f"peak cache {self.path}: peaks[{key!r}]: not rates > 0; measured again"
            )
            return None
        return Peaks(rates[0], rates[1], escape(str(entry.get("how", ""))))

    def put(self, key: str, peaks: Peaks) -> None:

        doc = self._load()
        self._peaks()[key] = peaks.as_dict()
        try:
            atomic_write_text(self.path, dumps(doc, indent=1, sort_keys=True) + "\n")
        except (OSError, ValueError) as exc:
            self.problems.append(f"peak cache {self.path} not written ({exc})")

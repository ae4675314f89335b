"""Splitting one perf run over N CI jobs (``--perf-shard K/N``), and what the shards must agree
on to be merged (``burnperf merge``). No pytest here.

A benchmark (one test function) stays whole in one shard: its device x dtype cases run on one
runner, and a same-session comparison measures both sides of each case in the same job. The
groups are dealt out by their expected duration, longest first, each to the shard with the least
so far (ties by name), so the split is the same in every job that collects the same selection.
Every shard judges with the family-wise alpha of the whole selection (``comparisons``), which
each job counts before it keeps its share: the N verdicts are those one unsharded run would give.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from pytest_burnperf.core.options.settings import SettingsError

_SHARD = re.compile(r"^\s*([0-9]{1,4})\s*/\s*([0-9]{1,4})\s*$")
#: The most shards one run may be split into.
MAX_SHARDS = 1024


def parse_shard(value: object, where: str) -> tuple[int, int]:
    """``"2/4"`` -> ``(2, 4)``: shard K of N, 1 <= K <= N."""
    m = _SHARD.match(value) if isinstance(value, str) else None
    if m is None:
        raise SettingsError(
            f"{where}: a shard is K/N such as 2/4 (the second of four), got {value!r}"
        )
    k, n = int(m.group(1)), int(m.group(2))
    if not 1 <= n <= MAX_SHARDS or not 1 <= k <= n:
        raise SettingsError(f"{where}: a shard K/N needs 1 <= K <= N <= {MAX_SHARDS}, got {k}/{n}")
    return k, n


@dataclass(frozen=True)
class Plan:
    """Which shard each group goes to, and the expected seconds of each shard."""

    shard_of: Mapping[str, int]  # group name -> shard (1-based)
    seconds: tuple[float, ...]
    #: Groups whose duration was not known (dealt out at the median of the known ones).
    guessed: int


def split(weights: Mapping[str, float | None], count: int) -> Plan:
    """Deal the groups (name -> expected seconds, None where unknown) out to ``count`` shards:
    longest first, each to the least loaded shard (the lowest index on a tie)."""
    known = sorted(w for w in weights.values() if w is not None and w > 0)
    fill = known[len(known) // 2] if known else 1.0
    sized = {g: (w if w is not None and w > 0 else fill) for g, w in weights.items()}
    load = [0.0] * count
    shard_of: dict[str, int] = {}
    for group in sorted(sized, key=lambda g: (-sized[g], g)):
        i = min(range(count), key=lambda j: (load[j], j))
        shard_of[group] = i + 1
        load[i] += sized[group]
    guessed = sum(1 for w in weights.values() if w is None or w <= 0)
    return Plan(shard_of, tuple(load), guessed)


def selection_id(nodeids: Iterable[str]) -> str:
    """A short fingerprint of the whole selection (every shard's is the same)."""
    h = hashlib.sha256()
    for n in sorted(set(nodeids)):
        h.update(n.encode("utf-8", "surrogateescape") + b"\0")
    return h.hexdigest()[:16]


def expected_seconds(entry: Mapping[str, object] | None, warmup: float) -> float | None:
    """One case's expected seconds in one round, from its stored baseline entry: the wall time
    it took when recorded (``seconds``: setup, calibration and warm-up included), else the
    samples of its first recorded round times their loop count plus the warm-up; or None."""
    if not isinstance(entry, Mapping):
        return None
    wall = entry.get("seconds")
    if isinstance(wall, (int, float)) and not isinstance(wall, bool) and wall > 0:
        return float(wall)
    runs = entry.get("runs")
    first = runs[0] if isinstance(runs, Sequence) and runs else entry.get("samples")
    loops = entry.get("loops", 1)
    if not isinstance(first, Sequence) or not first or not isinstance(loops, int):
        return None
    values = [v for v in first if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not values:
        return None
    return warmup + sum(values) * max(loops, 1)

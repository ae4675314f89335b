"""One benchmark's stored baseline as the gate reads it: a typed record made from an entry of a
baseline file whose fields ``storage.baselines.check_entry`` has checked (timed and counted
baselines alike; a counted one holds its counted calls). ``core/records/results.Result.baseline_entry``
writes the entries these are read from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from pytest_burnperf import json_fields as jf
from pytest_burnperf.core.counting.counts import Counted
from pytest_burnperf.core.options.pedantic_shape import PedanticShape
from pytest_burnperf.core.records.profiles import ProfileFormatError, ProfileSummary
from pytest_burnperf.core.sides.side_registry import SIDES
from pytest_burnperf.host.activity import Window


@dataclass(frozen=True)
class StoredBaseline:
    #: Samples per process round as recorded (a file from before rounds: its samples, as one).
    runs: tuple[tuple[float, ...], ...]
    #: The clock that measured it (``host``, ``device``, ``graph``; ``counts`` for counted
    #: calls, whose samples are estimated cycles) and whether the L2 cache was flushed.
    timer: str = "host"
    l2_flush: bool = False
    #: Calls per sample.
    loops: int = 1
    #: The fingerprint of the device it was measured on (``comparability`` compares it).
    device: Mapping[str, object] | None = None
    #: perf.pedantic's shape when it was recorded (``comparability.PEDANTIC_KEYS``), or None.
    pedantic: PedanticShape | None = None
    #: The host state during each recorded round, and the reference probe of that host.
    host: tuple[Window, ...] = ()
    host_probe: Mapping[str, object] | None = None
    #: A counts baseline's counted calls and the key they were counted under.
    counts: Counted | None = None
    counts_key: Mapping[str, object] | None = None
    #: The profile recorded beside it (--perf-update --perf-profile).
    profile: ProfileSummary | None = None
    #: What each verdict judged beside it kept (core/sides/side_registry.SIDES: memory per call's
    #: figures, key and sites), by its field, as the entry holds it: its side reads it.
    sides: Mapping[str, Mapping[str, object]] = field(default_factory=dict)
    #: Who recorded it, when, on which commit (``results.provenance``).
    recorded: Mapping[str, object] | None = None

    @property
    def samples(self) -> list[float]:
        """Every recorded sample, the rounds pooled."""
        return [v for r in self.runs for v in r]

    @classmethod
    def from_entry(cls, entry: Mapping[str, object]) -> StoredBaseline:
        """The record of a checked entry (a field of the wrong type reads as absent: the check
        before this names it)."""
        rounds = [tuple(r) for r in jf.rounds(entry.get("runs")) if r]
        counts = entry.get("counts")
        return cls(
            runs=tuple(rounds) or (tuple(jf.floats(entry.get("samples"))),),
            timer=jf.text(entry.get("timer")) or "host",
            l2_flush=entry.get("l2_flush") is True,
            loops=jf.integer(entry.get("loops")) or 1,
            device=_mapping_or_none(entry.get("device")),
            pedantic=_pedantic(entry.get("pedantic")),
            host=tuple(
                w for d in jf.sequence(entry.get("host")) if (w := Window.from_dict(d)) is not None
            ),
            host_probe=_mapping_or_none(entry.get("host_probe")),
            counts=Counted.from_json(counts) if isinstance(counts, Mapping) else None,
            counts_key=_mapping_or_none(jf.mapping(counts).get("key")),
            profile=_profile(entry.get("profile")),
            sides={
                side.field: kept
                for side in SIDES
                if isinstance(kept := entry.get(side.field), Mapping)
            },
            recorded=_mapping_or_none(entry.get("recorded")),
        )


def _mapping_or_none(value: object) -> Mapping[str, object] | None:
    return value if isinstance(value, Mapping) else None


def _pedantic(doc: object) -> PedanticShape | None:
    return PedanticShape.from_json(doc) if isinstance(doc, Mapping) else None


def _profile(doc: object) -> ProfileSummary | None:
    if doc is None:
        return None
    try:
        return ProfileSummary.from_json(doc)
    except ProfileFormatError:  # the file's check names it; a verdict never fails on it
        return None

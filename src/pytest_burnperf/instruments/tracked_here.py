"""The instrument of a tracking process (runs/tracked_sides.py: one per environment of a
same-session comparison, ``Mode.TRACK``): there it measures each benchmark, nothing else does;
each instrument beside (registry.BESIDE: memory per call) measures a few calls with no
baseline, and what they found goes to the parent, which judges the candidate's against the
reference's by each side's rule (core/sides/side_kind.Side.between)."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_burnperf.instruments.instrument import InstrumentName, Measurement, Situation


@dataclass(frozen=True)
class TrackedHere:
    name: InstrumentName = "tracked-side"
    #: Each instrument beside's records, in its own unit (memory per call: bytes).
    unit: str = "records"
    records: str = (
        "what each instrument beside records of a benchmark's calls in one environment, for "
        "the parent to judge the candidate's against the reference's"
    )
    blind_to: str = "time: its calls never enter a sample or a verdict of time"

    def applies(self, situation: Situation) -> bool:
        return situation.tracking_round

    def measure(self, calls: Measurement) -> object:
        __tracebackhide__ = True  # a failing call shows the test's line
        return calls.track_sides()


TRACKED_HERE = TrackedHere()

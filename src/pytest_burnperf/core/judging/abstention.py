"""Why a benchmark got no verdict: one :class:`Cause` set where the abstention is decided.

A verdict that is not one (``no-baseline``, ``incomparable``, ``inconclusive``) carries the cause
the code that decided it knew: the comparison that found no baseline, the key or device that
differed, the host evidence that explained the change away, the noise floor that held it. The
reason stays prose for people; the run's coverage (core/judging/coverage.py), its advice and the JSON
document group abstentions by this cause, so rewording a message moves nothing. No pytest here.
"""

from __future__ import annotations

from enum import Enum


class Cause(str, Enum):
    """Why a benchmark was not judged. The values are the groups the summary line and the
    JSON document's ``coverage.missed`` name, in the order the summary lists them."""

    #: the benchmark's test failed before it was measured (an error, a crash of the process
    #: that measured it): no result, no verdict
    NOT_MEASURED = "not measured"
    #: no baseline for this hardware class and no same-session reference
    NO_REFERENCE = "no reference"
    #: counted, with no counts baseline recorded
    NO_COUNTS = "no counts baseline"
    #: a baseline of another machine, device, clock or cache regime
    OTHER_MACHINE = "another machine"
    #: a baseline recorded before pytest-burnperf recorded the hardware class
    LEGACY_BASELINE = "baseline without hardware class"
    #: a counts baseline counted under another key (simulated CPU, Python build, libraries...)
    COUNTS_KEY = "another counts key"
    #: a baseline sampled with other pedantic settings: a sample means something else
    SAMPLED_OTHERWISE = "sampled otherwise"
    #: the host (or the probe measuring it) explains the change, or raised the floor
    HOST = "host busy"
    #: the change lies inside the benchmark's noise floor, or the samples are too few
    NOISE = "noise"
    #: counts cannot tell a change of the threshold's size apart (a call that small or spread)
    COUNTS_SPREAD = "counts undecided"


#: The cause an abstention of each status has where the code deciding it names none: a
#: verdict document written before causes were recorded, read back (report/merge.py).
BY_STATUS: dict[str, Cause] = {
    "no-baseline": Cause.NO_REFERENCE,
    "incomparable": Cause.OTHER_MACHINE,
    "inconclusive": Cause.NOISE,
}


def parse(value: object, status: str) -> Cause | None:
    """The cause a JSON verdict names (None for a verdict on the code); a document without one,
    or with one this version does not know, gets its status's :data:`BY_STATUS` cause."""
    if status not in BY_STATUS:
        return None
    try:
        return Cause(value)
    except ValueError:
        return BY_STATUS[status]

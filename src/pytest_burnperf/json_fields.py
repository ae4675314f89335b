"""Reading the fields of a JSON document with their types checked.

What ``json.loads`` gives, and every field of a document written by this project and read back
(baselines, results, run files, the history, a round process's report), is ``object`` until it
has been looked at. Readers take a field through one of these, which says what the field must be
and what a missing or mistyped one reads as: an empty object or list, or ``None``. Documents a
user may hand in broken (baselines, a results file given to ``burnperf``) are checked with their
path named before they reach a reader (``storage.baselines.check_entry``, ``report.results_json``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

#: One object of a JSON document, as written: its fields are anything JSON can hold.
JsonObject = dict[str, object]


def mapping(value: object) -> Mapping[str, object]:
    """``value`` where it is a JSON object; anything else (``None``, a missing field) as ``{}``."""
    return value if isinstance(value, Mapping) else {}


def mappings(value: object) -> list[Mapping[str, object]]:
    """The JSON objects in a list (anything else in it, or a field that is not a list, left out)."""
    return [v for v in sequence(value) if isinstance(v, Mapping)]


def sequence(value: object) -> Sequence[object]:
    """``value`` where it is a JSON list (or a tuple); anything else as ``()``."""
    return value if isinstance(value, (list, tuple)) else ()


def number(value: object) -> float | None:
    """``value`` as a float where it is a JSON number (not a boolean); else ``None``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def integer(value: object) -> int | None:
    """``value`` where it is a JSON integer (not a boolean); else ``None``."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def text(value: object) -> str | None:
    """``value`` where it is a string; else ``None``."""
    return value if isinstance(value, str) else None


def floats(value: object) -> list[float]:
    """The numbers of a JSON list, as floats (anything else in it left out)."""
    return [f for v in sequence(value) if (f := number(v)) is not None]


def rounds(value: object) -> list[list[float]]:
    """A list of rounds, each a list of numbers (samples per process round), as floats."""
    return [floats(r) for r in sequence(value) if isinstance(r, (list, tuple))]

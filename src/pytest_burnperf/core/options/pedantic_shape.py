"""What one sample of a ``perf.pedantic`` (or pytest-benchmark ``pedantic``) benchmark means:
kept with its results and baselines, and compared before a baseline is (core/judging/comparability)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from pytest_burnperf import json_fields as jf


@dataclass(frozen=True)
class PedanticShape:
    #: Rounds as the test gave them; None: not given, sampled by pytest-burnperf.
    rounds: int | None
    #: Calls a sample.
    iterations: int = 1
    #: Untimed rounds first: without them the first sample is a cold call (with ``rounds=1``,
    #: every sample is).
    warmup_rounds: int = 0
    #: Whether a setup gives each round fresh inputs.
    setup: bool = False

    def as_json(self) -> dict[str, object]:
        return {
            "rounds": self.rounds,
            "iterations": self.iterations,
            "warmup_rounds": self.warmup_rounds,
            "setup": self.setup,
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, object]) -> PedanticShape:
        """The shape of a checked document (storage/baselines.check_entry checks its fields)."""
        return cls(
            rounds=jf.integer(doc.get("rounds")),
            iterations=jf.integer(doc.get("iterations")) or 1,
            warmup_rounds=jf.integer(doc.get("warmup_rounds")) or 0,
            setup=doc.get("setup") is True,
        )

    def text(self) -> str:
        """``rounds=20, iterations=1, warmup_rounds=1, a setup``."""
        parts = [
            "rounds not given (sampled)" if self.rounds is None else f"rounds={self.rounds}",
            f"iterations={self.iterations}",
            f"warmup_rounds={self.warmup_rounds}",
            "a setup" if self.setup else "no setup",
        ]
        return ", ".join(parts)

"""Same-session comparisons (``--perf-against REF``, ``--perf-versions A,B,C``): which
environments a run measures and which two it judges (:class:`Plan`), each environment as a side
of the round scheduler (:func:`side_of`; the rounds run in ``scheduler.py``, the environments'
order drawn at random in each round), the check that a reference's round imported the reference
and not the checkout, and one summary per environment. Judged current vs reference with the
paired between-run model (run ``i`` of each side shares round ``i``); no baseline file is read
or written.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_burnperf.core.records.versions import VersionSummary, level
from pytest_burnperf.runs.comparison.environments import CURRENT, Env
from pytest_burnperf.runs.comparison.overlay import OVERLAY_ENV, top_level_names
from pytest_burnperf.runs.scheduler import Measured, Side


@dataclass(frozen=True)
class Plan:
    """Which environments a same-session run measures and which two it judges."""

    refs: tuple[str, ...]
    #: The label the verdict compares against, and the one it judges.
    reference: str
    candidate: str
    #: The option that asked for it, for messages.
    option: str = "--perf-versions"

    @classmethod
    def against(cls, ref: str) -> Plan:
        return cls((ref, CURRENT), ref, CURRENT, "--perf-against")

    @classmethod
    def versions(cls, refs: Sequence[str], reference: str | None) -> Plan:
        """``--perf-versions``: the reference is the first unless ``reference`` names another;
        the judged one is ``current`` where it is listed, else the last."""
        refs = tuple(refs)
        ref = refs[0] if reference is None else reference
        if ref not in refs:
            raise ValueError(
                f"--perf-reference {ref!r} is not one of --perf-versions {','.join(refs)}"
            )
        others = [r for r in refs if r != ref]
        cand = CURRENT if CURRENT in others else others[-1]
        return cls(refs, ref, cand)


def shadowed_modules(overlay: str, modules: Mapping[str, object]) -> dict[str, str]:
    """In a round's process of an installed reference: the modules of the overlay's top-level
    packages that were imported from somewhere else (the current checkout on ``sys.path``
    before the overlay: a flat layout run from its root, or a ``pythonpath`` ini setting), as
    ``{name: file}``. Such a round measures the current code under the reference's name."""
    root = Path(overlay)
    tops = top_level_names(root)
    bad: dict[str, str] = {}
    real = str(root.resolve())
    for name in sorted(tops):
        mod = modules.get(name)
        where = getattr(mod, "__file__", None) if mod is not None else None
        if where and not str(Path(where).resolve()).startswith(real):
            bad[name] = str(where)
    return bad


def side_of(label: str, env: Env) -> Side:
    """The scheduler's view of a reference environment: its interpreter, and the environment
    variables that put its overlay first."""
    return Side(label, env.python, _env_environ(env), env.detail, env.overlay)


def _env_environ(env: Env) -> dict[str, str]:
    environ = env.environ()
    if env.overlay is not None:
        environ[OVERLAY_ENV] = env.overlay
        # a module inside a flat layout's package is the reference's copy (overlay.py)
        environ["PY_IGNORE_IMPORTMISMATCH"] = "1"
    return environ


# --------------------------------------------------------------------------------------------
# summaries and the table


def summaries(labels: Sequence[str], got: Measured, nodeid: str) -> list[VersionSummary]:
    out: list[VersionSummary] = []
    first: float | None = None
    for label in labels:
        runs = got.of(label, nodeid)
        if not runs:
            continue
        med, low, high = level(runs)
        if first is None:
            first = med
        out.append(VersionSummary(label, med, low, high, len(runs), first / med))
    return out

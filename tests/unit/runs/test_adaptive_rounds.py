"""Adaptive rounds: which benchmarks get another process round (core/judging/more_rounds.py,
the round scheduler: tests/unit/runs/test_scheduler.py), on injected run medians; nothing is timed."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from pytest_burnperf.core.judging.more_rounds import needs_more_rounds, recording_floor
from pytest_burnperf.core.judging.verdict import REGRESSED, Policy, judge
from pytest_burnperf.core.text import rounds_text
from pytest_burnperf.plugin.output.baseline_writing import (
    busy_baselines_text,
    noisy_baselines_text,
    single_round_text,
)

POLICY = Policy(alpha=0.01, threshold=0.05, comparisons=20)


def runs(levels: list[float], n: int = 20) -> list[list[float]]:
    """One run per level, its samples 0.1% apart around it."""
    return [[lv * (1 + 0.001 * (i - n / 2)) for i in range(n)] for lv in levels]


def test_a_clearly_unchanged_benchmark_stops_after_the_fixed_rounds() -> None:
    base = runs([1.0, 1.003, 0.998])
    assert not needs_more_rounds(base, runs([1.001, 0.999]), POLICY)
    # an improvement needs no more rounds either: it can never fail
    assert not needs_more_rounds(base, runs([0.8, 0.81]), POLICY)


def test_a_benchmark_that_may_have_slowed_gets_more_rounds() -> None:
    base = runs([1.0, 1.003, 0.998])
    assert needs_more_rounds(base, runs([1.06, 1.07]), POLICY)
    # noisy runs: even a change near zero cannot rule out +5% yet
    noisy = runs([1.0, 1.08, 0.93])
    assert needs_more_rounds(noisy, runs([1.0, 1.07]), POLICY)
    # no current run yet: the first look always asks for one
    assert needs_more_rounds(base, [], POLICY)


def test_without_a_baseline_there_is_nothing_to_decide() -> None:
    assert not needs_more_rounds(None, runs([1.0, 1.01]), POLICY)
    assert not needs_more_rounds([], runs([1.0, 1.01]), POLICY)


def test_recording_continues_while_the_runs_are_too_noisy_for_the_threshold() -> None:
    quiet = runs([1.0, 1.002, 0.999, 1.001, 1.0, 0.998, 1.001, 1.0])
    assert not needs_more_rounds(None, quiet, POLICY, recording=True)
    assert needs_more_rounds(None, runs([1.0, 1.06, 0.95]), POLICY, recording=True)
    assert needs_more_rounds(None, [], POLICY, recording=True)


def test_recording_floor_is_what_a_comparison_with_as_many_rounds_could_see() -> None:
    quiet = runs([1.0, 1.002, 0.999, 1.001, 1.0, 0.998, 1.001, 1.0])
    floor = recording_floor(quiet, POLICY)
    assert floor is not None and 0 < floor < POLICY.threshold
    noisy = recording_floor(runs([1.0, 1.06, 0.95, 1.04]), POLICY)
    assert noisy is not None and noisy > POLICY.threshold
    # more rounds of the same spread pin it down better: a lower floor
    more = recording_floor(runs([1.0, 1.06, 0.95, 1.04] * 3), POLICY)
    assert more is not None and more < noisy
    # one round: only the prior speaks for the between-run spread, and it is wide
    one = recording_floor(runs([1.0]), POLICY)
    assert one is not None and one > noisy
    assert recording_floor(runs([1.0]), replace(POLICY, prior=None)) is None
    assert recording_floor([], POLICY) is None


def test_recording_floor_sets_aside_a_disturbed_round_as_a_comparison_does() -> None:
    quiet = [1.0, 1.002, 0.999, 1.001, 1.0, 0.998]
    with_spike = recording_floor(runs([*quiet, 1.7]), POLICY)
    alone = recording_floor(runs(quiet), POLICY)
    assert with_spike is not None and alone is not None
    assert with_spike < POLICY.threshold and with_spike == pytest.approx(alone, rel=0.5)


def test_noisy_baselines_text_names_the_worst_first_and_counts_the_rest() -> None:
    floors = {f"t.py::test_{i}": 0.06 + 0.01 * i for i in range(7)}
    text = noisy_baselines_text(floors, recorded=31, show=3)
    assert text.startswith("noisy baselines: 7 of 31 recorded benchmark(s) varied")
    assert "t.py::test_6 (+12.0%), t.py::test_5 (+11.0%), t.py::test_4 (+10.0%) and 4 more" in text
    assert "re-record them on a quieter host" in text


def test_single_round_text_names_the_widest_floor_first() -> None:
    floors: dict[str, float | None] = {"t.py::a": 0.36, "t.py::b": None, "t.py::c": 0.5}
    text = single_round_text(floors, recorded=4, show=2)
    assert text.startswith("single-round baselines: 3 of 4 recorded benchmark(s) were timed in ")
    assert "t.py::c (+50.0%), t.py::a (+36.0%) and 1 more;" in text
    assert single_round_text({"t.py::b": None}, 1).count("t.py::b;") == 1


def test_busy_baselines_text_names_them_and_what_comparisons_will_do() -> None:
    busy = {f"t.py::test_{i}": "other processes used 1.30 of 2 CPUs" for i in range(7)}
    text = busy_baselines_text(busy, recorded=9, show=2)
    assert text.startswith(
        "baselines recorded on a busy host: 7 of 9 recorded benchmark(s) ran some rounds beside "
        "other work (other processes used 1.30 of 2 CPUs): t.py::test_0, t.py::test_1 and 5 more;"
    )
    assert "calls no change they could hide unchanged" in text


def test_rounds_text() -> None:
    assert rounds_text(1, 1) == "1 process round"
    assert rounds_text(3, 3) == "3 process rounds"
    assert rounds_text(3, 8) == "3 process rounds (up to 8 for undecided benchmarks)"


def test_stopping_for_futility_does_not_raise_false_alarms() -> None:
    """Unchanged code with 3% between-process noise: rounds continue only for benchmarks that
    cannot rule out +5%, and the verdict after the last round is judged once at alpha. Over 400
    simulated benchmarks (seeded), no false alarm, and most stop early."""
    rng = random.Random(5)
    alarms = stopped_early = 0
    for _ in range(400):
        base = runs([rng.lognormvariate(0, 0.03) for _ in range(3)])
        cur: list[list[float]] = runs([rng.lognormvariate(0, 0.03) for _ in range(2)])
        while len(cur) < 7 and needs_more_rounds(base, cur, POLICY):
            cur += runs([rng.lognormvariate(0, 0.03)])
        stopped_early += len(cur) < 7
        cur += runs([rng.lognormvariate(0, 0.03)])  # this process's round
        alarms += judge(base, cur, POLICY).status == REGRESSED
    assert alarms == 0
    assert stopped_early > 100


def test_busy_rounds_do_not_count_towards_deciding() -> None:
    from pytest_burnperf.host.activity import Window
    from pytest_burnperf.plugin.rounds.round_control import clean_runs

    quiet = Window(seconds=1.0, cpus=2, own_cpus=1.0, others_cpus=0.01).as_dict()
    busy = Window(seconds=1.0, cpus=2, own_cpus=1.0, others_cpus=0.97).as_dict()
    rounds = [[1.0], [2.0], [3.0]]
    # two clean rounds of three: too few to leave the busy one out, so it costs another round
    assert clean_runs(rounds, [quiet, busy, quiet], trust_host=False) is None
    # three clean rounds of four: the busy one is left out, as the verdict leaves it out
    four = [*rounds, [4.0]]
    assert clean_runs(four, [quiet, busy, quiet, quiet], trust_host=False) == [[1.0], [3.0], [4.0]]
    # windows that do not line up with the rounds (a lost window): all rounds count
    assert clean_runs(rounds, [busy, quiet], trust_host=False) == rounds
    # a trusted host (BURNPERF_TRUST_HOST=1, the plugin's own tests): nothing is left out
    assert clean_runs(rounds, [quiet, busy, quiet], trust_host=True) == rounds


def test_a_busy_round_costs_another_round_until_enough_clean_ones_remain() -> None:
    from pytest_burnperf.core.judging.assess import MIN_CLEAN_ROUNDS, busy_round_costs_another

    assert MIN_CLEAN_ROUNDS == 3
    assert busy_round_costs_another(3, 2)  # one of three busy: buy a fourth
    assert busy_round_costs_another(4, 2)
    assert not busy_round_costs_another(4, 3)  # three clean: the busy one is left out
    assert not busy_round_costs_another(3, 3)  # nothing busy
    assert not busy_round_costs_another(1, 1)


@pytest.mark.parametrize(
    ("given", "most", "update", "same", "quick", "expected"),
    [
        # the default, checking or recording, stored or same-session: 3, then up to 8
        (None, None, False, False, False, (3, 8)),
        (None, None, True, False, False, (3, 8)),
        (None, None, False, True, False, (3, 8)),
        # --perf-rounds alone: exactly that many
        (1, None, False, False, False, (1, 1)),
        (5, None, True, False, False, (5, 5)),
        # --perf-max-rounds alone: adaptive rounds after the default 3
        (None, 4, False, False, False, (3, 4)),
        (2, 6, False, False, False, (2, 6)),
        # --perf-quick: one round checking, 3 recording or in one session, never adaptive
        (None, None, False, False, True, (1, 1)),
        (None, None, True, False, True, (3, 3)),
        (None, None, False, True, True, (3, 3)),
        (2, None, False, False, True, (2, 2)),
    ],
)
def test_round_counts_defaults(
    given: int | None,
    most: int | None,
    update: bool,
    same: bool,
    quick: bool,
    expected: tuple[int, int],
) -> None:
    from pytest_burnperf.core.options.run_options import round_counts

    got = round_counts(given, most, update=update, same_session=same, quick=quick)
    assert got == expected


def test_round_counts_refuses_contradictions() -> None:
    from pytest_burnperf.core.options.run_options import round_counts
    from pytest_burnperf.core.options.settings import SettingsError

    with pytest.raises(SettingsError, match="--perf-max-rounds 2 is below --perf-rounds 3"):
        round_counts(3, 2, update=False)
    with pytest.raises(SettingsError, match="--perf-quick runs no adaptive rounds"):
        round_counts(None, 8, update=False, quick=True)
    # the error names where each value came from
    names = ("rounds in b.toml", "max_rounds in b.toml", "ini option perf_quick in tox.ini")
    with pytest.raises(
        SettingsError, match=r"^max_rounds in b\.toml 2 is below the default rounds 3"
    ):
        round_counts(None, 2, update=False, names=names)
    with pytest.raises(SettingsError, match=r"^ini option perf_quick in tox\.ini runs no adaptive"):
        round_counts(None, 8, update=False, quick=True, names=names)


def test_round_budget() -> None:
    from pytest_burnperf.core.options.run_options import parse_round_budget
    from pytest_burnperf.core.options.settings import SettingsError
    from pytest_burnperf.runs.round_launcher import budget_spent, budget_text

    assert not budget_spent(599.9, 600.0) and budget_spent(600.0, 600.0)
    assert not budget_spent(1e9, 0.0)  # 0: no limit
    text = budget_text(600.0, 3, 40)
    assert "round budget of 600 s" in text and "3 of 40 benchmark(s) still undecided" in text
    assert "--perf-round-budget" in text
    assert parse_round_budget("90", "--perf-round-budget") == 90.0
    with pytest.raises(
        SettingsError, match="--perf-round-budget: the round budget must be seconds"
    ):
        parse_round_budget("-1", "--perf-round-budget")

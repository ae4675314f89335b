"""A between-process prior per clock (between_runs.noise_source, Policy.for_noise): a device-bound
GPU kernel timed on device events gets the device's prior, everything else keeps the host's.
Injected run medians and fake records; nothing is timed."""

from __future__ import annotations

from pytest_burnperf.core.judging import between_runs
from pytest_burnperf.core.judging.between_runs import (
    DEFAULT_PRIOR,
    DEVICE_PRIOR,
    NoisePrior,
    joint_source,
    noise_source,
)
from pytest_burnperf.core.judging.more_rounds import needs_more_rounds, recording_floor
from pytest_burnperf.core.judging.verdict import (
    DEVICE_THRESHOLD,
    REGRESSED,
    UNCHANGED,
    Policy,
    failure_message,
    judge,
)
from pytest_burnperf.core.options.settings import Settings
from pytest_burnperf.runs.scheduler import Measured


def runs(levels: list[float], n: int = 20) -> list[list[float]]:
    """One run per level, its samples 0.05% apart around it."""
    return [[lv * (1 + 0.0005 * (i - n / 2) / n) for i in range(n)] for lv in levels]


def test_a_device_clock_off_the_host_that_kept_the_device_busy_is_device_bound() -> None:
    device = [1.00e-3] * 5
    assert noise_source("device", on_host=False, values=device, host_values=[1.01e-3] * 5) == (
        "device"
    )
    assert noise_source("graph", on_host=False, values=device, host_values=[1.0e-3] * 5) == (
        "device"
    )


def test_everything_else_is_paced_by_the_host() -> None:
    device = [1.0e-3] * 5
    # the host's own clock, a device on the host CPU (PoCL, llvmpipe), a launch-bound chain
    # (device time a quarter of the wall time: the gaps between launches are the host's),
    # and a sample whose host time is unknown or not a time
    assert noise_source("host", on_host=False, values=device, host_values=device) == "host"
    assert noise_source("device", on_host=True, values=device, host_values=device) == "host"
    assert noise_source("device", on_host=False, values=device, host_values=[4e-3] * 5) == "host"
    assert noise_source("device", on_host=False, values=device, host_values=None) == "host"
    assert noise_source("device", on_host=False, values=device, host_values=[0.0] * 5) == "host"
    assert noise_source("device", on_host=False, values=[], host_values=[]) == "host"
    share = between_runs.DEVICE_BOUND_SHARE
    assert noise_source("device", on_host=False, values=[share], host_values=[1.0 + 1e-9]) == "host"


def test_a_comparison_is_device_bound_only_where_every_side_says_so() -> None:
    assert joint_source("device", "device") == "device"
    assert joint_source("device", "host") == "host"
    assert joint_source("device", None) == "device"  # one side did not say (an old record)
    assert joint_source(None, "") is None
    assert joint_source("nonsense") is None


def test_the_policy_swaps_only_the_default_prior() -> None:
    assert Policy().for_noise("device").prior is DEVICE_PRIOR
    assert Policy().for_noise("host").prior is DEFAULT_PRIOR
    assert Policy().for_noise(None).prior is DEFAULT_PRIOR
    assert Policy().for_noise("elsewhere").prior is DEFAULT_PRIOR
    mine = NoisePrior(0.1, 3, "a test's")
    assert Policy(prior=mine).for_noise("device").prior is mine
    assert Policy(prior=None).for_noise("device").prior is None
    kept = Policy(alpha=0.02, threshold=0.03, comparisons=7, paired=True).for_noise("device")
    assert (kept.alpha, kept.threshold, kept.comparisons, kept.paired) == (0.02, 0.03, 7, True)


def test_the_device_prior_lowers_a_quiet_kernels_floor_below_the_hosts() -> None:
    """Three rounds a side moving 0.1%: with the host's prior (2.2%) such a benchmark gates only
    above +6%; with the device's, its floor is the device's spread."""
    base = runs([1.000, 1.001, 0.999])
    policy = Policy(alpha=0.01, threshold=0.01, comparisons=11)
    host = judge(base, runs([1.0, 1.001, 0.999]), policy)
    device = judge(base, runs([1.0, 1.001, 0.999]), policy.for_noise("device"))
    assert host.min_detectable is not None and device.min_detectable is not None
    assert host.min_detectable > 0.05
    assert device.min_detectable < 0.02 < host.min_detectable
    # a +3% kernel slowdown: caught with the device's prior, inside the host's floor
    slower = runs([1.030, 1.031, 1.029])
    assert judge(base, slower, policy.for_noise("device")).status == REGRESSED
    assert judge(base, slower, policy).status != REGRESSED


def test_the_device_prior_still_widens_with_a_benchmarks_own_spread() -> None:
    """A benchmark whose rounds move 5% keeps a floor of its own size under the device prior:
    the prior is pooled with what the runs show, never put in their place."""
    base = runs([1.00, 1.05, 0.95])
    cur = runs([1.03, 0.98, 1.08])
    v = judge(base, cur, Policy(threshold=0.01, comparisons=11).for_noise("device"))
    assert v.status != REGRESSED
    assert v.min_detectable is not None and v.min_detectable > 0.05


def test_recording_a_quiet_device_bound_kernel_needs_no_more_rounds_than_its_spread_asks() -> None:
    policy = Policy(alpha=0.01, threshold=0.03, comparisons=11)
    quiet = runs([1.000, 1.001, 0.999])
    assert needs_more_rounds(None, quiet, policy, recording=True)  # the host's prior: 6% floor
    assert not needs_more_rounds(None, quiet, policy.for_noise("device"), recording=True)
    floor = recording_floor(quiet, policy.for_noise("device"))
    assert floor is not None and floor < 0.03


def test_the_rounds_keep_what_set_the_noise() -> None:
    got = Measured()
    for _ in range(3):
        got.add("main", "t::gpu", {"values": [1e-3] * 5, "timer": "device", "noise": "device"})
        got.add("current", "t::gpu", {"values": [1e-3] * 5, "timer": "device", "noise": "device"})
        got.add("main", "t::chain", {"values": [1e-3] * 5, "timer": "device", "noise": "device"})
        got.add("current", "t::chain", {"values": [1e-3] * 5, "timer": "device", "noise": "host"})
        got.add("current", "t::old", {"values": [1e-3] * 5, "timer": "host"})
    assert got.noise(("main", "current"), "t::gpu") == "device"
    assert got.noise(("main", "current"), "t::chain") == "host"
    assert got.noise(("current",), "t::old") is None
    assert got.noise(("current",), "t::absent") is None


def test_a_device_bound_kernel_whose_threshold_nobody_chose_is_judged_at_two_percent() -> None:
    """Issue 72: the gate on a GPU should see 2%. The default threshold (5%) stays the host's;
    a device-bound kernel gets DEVICE_THRESHOLD, unless a threshold was chosen."""
    default = Policy(threshold=0.05, threshold_given=False)
    assert default.for_noise("device").threshold == DEVICE_THRESHOLD == 0.015
    assert default.for_noise("host").threshold == 0.05
    assert default.for_noise(None).threshold == 0.05
    chosen = Policy(threshold=0.04, threshold_given=True)
    assert chosen.for_noise("device").threshold == 0.04
    # the prior is swapped as before, whatever the threshold
    assert chosen.for_noise("device").prior is DEVICE_PRIOR


def test_settings_say_whether_the_threshold_was_chosen() -> None:
    assert not Settings().threshold_given
    assert not Settings().merged({"samples": 5, "threshold": None}).threshold_given
    given = Settings().merged({"threshold": 0.05})  # chosen, even at the default's value
    assert given.threshold_given and given.threshold == 0.05
    assert given.merged({"samples": 3}).threshold_given  # a later layer keeps it


def test_a_three_percent_kernel_regression_fails_at_the_device_threshold_only() -> None:
    base = runs([1.000, 1.001, 0.999, 1.000])
    slower = runs([1.030, 1.031, 1.029, 1.030])
    policy = Policy(alpha=0.01, threshold=0.05, threshold_given=False, comparisons=11)
    device = judge(base, slower, policy.for_noise("device"))
    assert device.status == REGRESSED and device.threshold == 0.015
    assert "exceeds 1.5% threshold" in failure_message("t", device, policy)
    host = judge(base, slower, policy.for_noise("host"))
    assert host.status != REGRESSED and host.threshold == 0.05
    # unchanged rounds stay unchanged at 1.5%
    same = judge(base, runs([1.0005, 0.9995, 1.001, 1.0]), policy.for_noise("device"))
    assert same.status == UNCHANGED

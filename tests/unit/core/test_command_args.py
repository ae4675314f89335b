"""core/options/command_args: the plugins a measuring child process starts without."""

from __future__ import annotations

from pytest_burnperf.core.options.command_args import left_out_of_children


def test_hypothesiss_plugin_is_left_out_of_the_children_where_the_run_names_none_of_it() -> None:
    loaded = {"hypothesispytest", "benchmark"}.__contains__
    off = ("-p", "no:hypothesispytest")
    assert left_out_of_children(loaded, ["--perf", "-k", "matmul"]) == off
    assert left_out_of_children(loaded, []) == off
    # an option of it on the command line, in addopts or PYTEST_ADDOPTS: a child lacking the
    # plugin would refuse it, so the child keeps it
    assert left_out_of_children(loaded, ["--perf", "--hypothesis-seed=3"]) == ()
    assert left_out_of_children(loaded, ["-p", "no:randomly --hypothesis-show-statistics"]) == ()
    # not installed or not loaded here: nothing to leave out
    assert left_out_of_children({"benchmark"}.__contains__, ["--perf"]) == ()

"""A counted process's memory layout drawn from its seed (host/memory_layout.py)."""

from __future__ import annotations

from pytest_burnperf.host import memory_layout


def test_the_seed_is_taken_out_of_the_environment_so_no_child_draws_again() -> None:
    env = {memory_layout.SEED_ENV: "1234", "PATH": "/bin"}
    assert memory_layout.seed_from(env) == 1234
    assert env == {"PATH": "/bin"}
    assert memory_layout.seed_from(env) is None
    bad = {memory_layout.SEED_ENV: "many"}
    assert memory_layout.seed_from(bad) is None and not bad


def test_each_seed_draws_its_own_layout_and_the_same_seed_the_same() -> None:
    draws = {memory_layout.draw(seed) for seed in range(6)}
    assert len(draws) == 6, "six seeds, six layouts"
    assert memory_layout.draw(3) == memory_layout.draw(3)
    for tags, kept in draws:
        assert 0 <= tags < memory_layout.MAX_TAGS and kept >= 0

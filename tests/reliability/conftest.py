from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def _this_plugin_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The hostile harnesses' pytest processes load this plugin alone, as the plugin tests'
    projects do (tests/plugin/conftest.py): no case here needs another installed plugin, and
    loading hypothesis, pytest-xdist and pytest-benchmark cost each process about 1.3 s of CPU
    (many times that in a counted process under valgrind). Run on its own
    (``python -m validation.reliability``), a harness loads what the environment has, as a
    user's run would."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")
    monkeypatch.setenv("PYTEST_PLUGINS", "pytest_burnperf.plugin.hooks")

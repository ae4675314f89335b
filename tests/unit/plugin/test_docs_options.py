"""The option table of docs/configuration.md is checked against the options and ini keys the
plugin registers: an option added without a row, or a row for an option that no longer exists,
fails here (issue 30: docs that stay true)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from pytest_burnperf.plugin.configuration.options import UPDATE_ALIAS, add_options

DOC = Path(__file__).resolve().parents[3] / "docs" / "configuration.md"
#: Options the parent run gives its own round processes; not for users.
INTERNAL = re.compile(r"^--perf-round-process-")


class Recorder:
    """Stands in for pytest's parser and option group: records what is registered."""

    def __init__(self) -> None:
        self.options: set[str] = set()
        self.inis: set[str] = set()

    def getgroup(self, *args: Any, **kwargs: Any) -> Recorder:
        return self

    def addoption(self, *names: str, **kwargs: Any) -> None:
        self.options.update(n for n in names if n.startswith("--"))

    def addini(self, name: str, *args: Any, **kwargs: Any) -> None:
        self.inis.add(name)


def _registered() -> Recorder:
    rec = Recorder()
    add_options(rec)  # type: ignore[arg-type]
    return rec


def _table() -> tuple[set[str], set[str]]:
    """The options and ini keys named in the first column pair of the table's rows."""
    options, inis = set(), set()
    for line in DOC.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.split("|")[1:-1]] if line.startswith("| `--") else []
        if len(cells) < 2:
            continue
        options.update(re.findall(r"`(--[a-z-]+)", cells[0]))
        inis.update(re.findall(r"`(perf(?:_[a-z_]+)?)`", cells[1]))
    return options, inis


def test_every_option_has_a_row_and_every_row_an_option() -> None:
    rec = _registered()
    # the alias of --perf-update, registered once the project's conftest.py files are loaded
    public = {o for o in rec.options if not INTERNAL.match(o)} | {UPDATE_ALIAS}
    documented, _ = _table()
    documented.discard("--no-perf-smoke")  # the negative form of --perf-smoke, in its row
    public.discard("--no-perf-smoke")
    assert public - documented == set(), "options missing from docs/configuration.md"
    assert documented - public == set(), "rows for options the plugin does not have"


def test_every_ini_key_has_a_row_and_every_row_an_ini_key() -> None:
    rec = _registered()
    _, documented = _table()
    assert rec.inis - documented == set(), "ini keys missing from docs/configuration.md"
    assert documented - rec.inis == set(), "rows for ini keys the plugin does not have"

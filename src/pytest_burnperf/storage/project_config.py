"""The project's benchmark configuration: ``benchmarks.toml`` at the rootdir (a ``[burnperf]``
table, as burn-bench's has ``[burn-bench]``, and an ``[environment]`` table), or the same keys
under ``[tool.burnperf]`` (and ``[tool.burnperf.environment]``) in ``pyproject.toml``.

Keys are the ini keys without ``perf_`` (``backends``, ``dtypes``, ``size``, ``rounds``,
``threshold``, ...), checked by the same parsers as the options, plus ``benches`` (test function
names to run: others are deselected) and ``strict``. ``[environment]`` is free metadata (runner
type, GPU model) recorded with the results' machine facts. The command line overrides the file,
the file overrides the ini keys. Every problem names the file, the key and what is allowed; an
unknown key is an error, not ignored.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

from pytest_burnperf.core.options.settings import SettingsError, parse_flag
from pytest_burnperf.core.text import escape_strings
from pytest_burnperf.storage.jsonfile import FileFormatError, read_bytes

#: Keys that are not options.
EXTRA_KEYS = ("benches", "strict")


class ConfigError(Exception):
    """A configuration file that cannot be used; ``str()`` names the file and the key."""


@dataclass(frozen=True)
class ProjectConfig:
    path: Path | None = None
    #: ini name (``perf_threshold``) -> parsed value
    values: Mapping[str, object] = field(default_factory=dict)
    benches: tuple[str, ...] | None = None
    strict: bool | None = None
    environment: Mapping[str, object] = field(default_factory=dict)


def _toml(path: Path) -> dict[str, object]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

    try:
        data = read_bytes(path, max_bytes=4 * 1024 * 1024)
    except FileFormatError as exc:
        raise ConfigError(str(exc)) from None
    try:
        doc: dict[str, object] = tomllib.loads((data or b"").decode("utf-8"))
        return doc
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: is not valid TOML ({exc})") from None
    except RecursionError:
        raise ConfigError(
            f"{path}: nests arrays or tables too deeply to read; a settings file is flat"
        ) from None


def find(rootdir: Path) -> tuple[Path, dict[str, object], dict[str, object]] | None:
    """``(file, settings table, environment table)`` of the project, or None."""
    bench = rootdir / "benchmarks.toml"
    pyproject = rootdir / "pyproject.toml"
    found = []
    if bench.is_file():
        doc = _toml(bench)
        unknown = sorted(set(doc) - {"burnperf", "environment"})
        if unknown:
            raise ConfigError(
                f"{bench}: unknown table or top-level key {', '.join(unknown)}; allowed: "
                "[burnperf] (settings such as rounds = 3 go under it), [environment]"
            )
        found.append((bench, doc.get("burnperf", {}), doc.get("environment", {}), "[burnperf]"))
    if pyproject.is_file():
        tool = _toml(pyproject).get("tool", {})
        table = tool.get("burnperf") if isinstance(tool, dict) else None
        if table is not None:
            if not isinstance(table, dict):
                raise ConfigError(f"{pyproject}: [tool.burnperf] must be a table")
            table = dict(table)
            env = table.pop("environment", {})
            found.append((pyproject, table, env, "[tool.burnperf]"))
    if len(found) > 1:
        raise ConfigError(
            f"both {bench} and [tool.burnperf] in {pyproject} configure pytest-burnperf; keep one"
        )
    if not found:
        return None
    path, table, env, name = found[0]
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: {name} must be a table")
    if not isinstance(env, dict):
        raise ConfigError(f"{path}: the environment table must be a table of values")
    # free metadata that reaches reports and stores: no control character is kept raw
    return path, table, escape_strings(env)


def load(rootdir: Path, parsers: Mapping[str, Callable[[Any, str], Any]]) -> ProjectConfig:
    """The project's configuration, every value parsed; ``parsers`` maps ini names
    (``perf_threshold``) to the option parsers."""
    hit = find(rootdir)
    if hit is None:
        return ProjectConfig()
    path, table, env = hit
    allowed = {ini.removeprefix("perf_"): ini for ini in parsers}
    values: dict[str, object] = {}
    benches: tuple[str, ...] | None = None
    strict: bool | None = None
    for key, raw in table.items():
        where = f"{path}: {key}"
        try:
            if key == "benches":
                if not (
                    isinstance(raw, list) and raw and all(isinstance(b, str) and b for b in raw)
                ):
                    raise SettingsError(
                        f"{where}: must be a non-empty list of test function names, got {raw!r}"
                    )
                benches = tuple(raw)
            elif key == "strict":
                strict = parse_flag(raw, where, "strict")
            elif key == "versions":
                raise SettingsError(
                    f"{where}: comparing versions in one session is not supported by this "
                    "version of pytest-burnperf"
                )
            elif key in allowed:
                values[allowed[key]] = parsers[allowed[key]](raw, where)
            else:
                raise SettingsError(
                    f"{where}: unknown key; allowed: {', '.join(sorted([*allowed, *EXTRA_KEYS]))}"
                )
        except SettingsError as exc:
            raise ConfigError(str(exc)) from None
    for key, value in env.items():
        if not isinstance(value, (str, int, float, bool)):
            raise ConfigError(
                f"{path}: environment.{key}: must be a string, number or boolean, got {value!r}"
            )
    return ProjectConfig(path, values, benches, strict, dict(env))


@lru_cache(maxsize=8)
def project_name(rootdir: Path) -> str | None:
    """The distribution the project builds (``[project] name`` in the rootdir's
    ``pyproject.toml``), or None where there is none or it cannot be read (a broken file is
    reported by :func:`find`, which reads it for the settings)."""
    pyproject = rootdir / "pyproject.toml"
    if not pyproject.is_file():
        return None
    try:
        table = _toml(pyproject).get("project")
    except ConfigError:
        return None
    name = table.get("name") if isinstance(table, dict) else None
    return name if isinstance(name, str) and name else None

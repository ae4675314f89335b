"""The one strict reader and writer of every JSON file the plugin touches: baselines, results
(``--perf-json``), the peak cache and the files of process rounds.

Reading: regular files only (a FIFO, a device or a directory is refused without opening it for
long), at most :data:`MAX_BYTES`, UTF-8, strict JSON (no ``NaN``/``Infinity``, no number that
overflows to infinity, no integer of more than :data:`MAX_INT_DIGITS` digits, no duplicate key,
no nesting deep enough to exhaust the parser). Every problem is a :class:`FileFormatError` whose text is
``path: field: what is wrong``; the file is never touched.

Checking: :class:`Fields` walks a loaded document field by field and names the field at fault
(``benchmarks["test_mm[numpy-cpu-f32]"].samples[3]``).

Writing: :func:`atomic_write_text` writes a temporary file beside the target, fsyncs it, keeps the
target's mode and renames it over the target, so a reader sees the old file or the new one.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NoReturn

from pytest_burnperf.core.text import escape, has_control

#: Largest file read (baselines of a big suite with 3 rounds are a few MiB).
MAX_BYTES = 64 * 1024 * 1024
#: Longest integer literal accepted.
MAX_INT_DIGITS = 30
#: Prefix and suffix of the temporary files of :func:`atomic_write_text`; a killed process can
#: leave one behind, and :func:`stale_temporaries` finds them.
TMP_PREFIX = ".burnperf-"
TMP_SUFFIX = ".tmp"


class FileFormatError(Exception):
    """A file that cannot be used. ``str()`` is ``path: field: problem`` (field may be empty)."""

    def __init__(self, path: Path, problem: str, field: str = "") -> None:
        # a field's name may hold a key from the file: escaped, so no line of its own
        field, problem = escape(field), escape(problem)
        super().__init__(f"{path}: {field + ': ' if field else ''}{problem}")
        self.path = path
        self.field = field
        self.problem = problem


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, object]:
    doc: dict[str, object] = {}
    for key, value in pairs:
        if key in doc:
            raise ValueError(f"duplicate key {key!r}")
        doc[key] = value
    return doc


def _constant(name: str) -> NoReturn:
    raise ValueError(f"{name} is not a JSON number")


def _float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text[:40]!r} is out of range")
    return value


def _int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"integer of {len(text)} digits is out of range")
    return int(text)


def read_bytes(path: Path, *, max_bytes: int = MAX_BYTES) -> bytes | None:
    """The bytes of a regular file; None when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise FileFormatError(path, f"cannot be read ({_why(exc)})") from None
    if not stat.S_ISREG(st.st_mode):
        raise FileFormatError(path, f"is not a regular file ({_kind(st.st_mode)})")
    if st.st_size > max_bytes:
        raise FileFormatError(path, f"is {st.st_size} bytes, more than the {max_bytes} allowed")
    try:
        # O_NONBLOCK: should the path have become a FIFO since the stat, open does not wait
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError as exc:
        raise FileFormatError(path, f"cannot be read ({_why(exc)})") from None
    with os.fdopen(fd, "rb") as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise FileFormatError(path, "is not a regular file")
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise FileFormatError(path, f"is more than the {max_bytes} bytes allowed")
    return data


def loads(path: Path, data: bytes) -> Any:
    """Strict JSON from ``data`` (read from ``path``, named in errors)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileFormatError(path, f"is not UTF-8 text (byte {exc.start})") from None
    try:
        return json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_constant,
            parse_float=_float,
            parse_int=_int,
        )
    except json.JSONDecodeError as exc:
        raise FileFormatError(
            path, f"is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except RecursionError:
        raise FileFormatError(path, "is nested too deeply to be one of its files") from None
    except ValueError as exc:
        raise FileFormatError(path, f"is not valid JSON ({exc})") from None


def read_json(path: Path, *, max_bytes: int = MAX_BYTES) -> Any:
    """The parsed document at ``path``; None when the file does not exist."""
    data = read_bytes(path, max_bytes=max_bytes)
    return None if data is None else loads(path, data)


def _why(exc: BaseException) -> str:
    """An exception in a few words for a message (the OS's words for an OSError)."""
    return (exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)) or type(
        exc
    ).__name__


def _kind(mode: int) -> str:
    for test, name in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(mode):
            return name
    return "not a plain file"


# --------------------------------------------------------------------------------------------
# field-by-field checks

#: Shortest and longest time per call a file may hold, in seconds: below a picosecond no timer
#: measures; above a day no benchmark runs. Anything outside is a corrupt file, not a timing.
MIN_SECONDS = 1e-12
MAX_SECONDS = 86400.0


class Fields:
    """Checks of one loaded document; each failure names the file and the field."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, field: str, problem: str) -> NoReturn:
        raise FileFormatError(self.path, problem, field)

    def obj(self, value: object, field: str) -> dict[str, object]:
        if not isinstance(value, dict):
            self.fail(field, f"must be an object, got {_describe(value)}")
        return value

    def opt_obj(self, value: object, field: str) -> dict[str, object] | None:
        return None if value is None else self.obj(value, field)

    def text(self, value: object, field: str, *, allowed: Sequence[str] = ()) -> str:
        if not isinstance(value, str):
            self.fail(field, f"must be a string, got {_describe(value)}")
        if has_control(value):
            self.fail(field, f"contains a control character: {escape(value)[:80]}")
        if allowed and value not in allowed:
            self.fail(field, f"must be one of {', '.join(allowed)}, got {escape(value)[:80]!r}")
        return value

    def opt_text(self, value: object, field: str, *, allowed: Sequence[str] = ()) -> str | None:
        return None if value is None else self.text(value, field, allowed=allowed)

    def flag(self, value: object, field: str) -> bool:
        if not isinstance(value, bool):
            self.fail(field, f"must be true or false, got {_describe(value)}")
        return value

    def integer(self, value: object, field: str, *, low: int = 0, high: int = 2**62) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            self.fail(field, f"must be a whole number, got {_describe(value)}")
        if not low <= value <= high:
            self.fail(field, f"must be between {low} and {high}, got {value}")
        return value

    def number(
        self, value: object, field: str, *, low: float = -math.inf, high: float = math.inf
    ) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.fail(field, f"must be a number, got {_describe(value)}")
        if not low <= value <= high:
            self.fail(field, f"must be between {low:g} and {high:g}, got {value!r}")
        return float(value)

    def seconds(self, value: object, field: str) -> float:
        return self.number(value, field, low=MIN_SECONDS, high=MAX_SECONDS)

    def samples(self, value: object, field: str) -> list[float]:
        if not isinstance(value, list) or not value:
            self.fail(field, f"must be a non-empty list of seconds, got {_describe(value)}")
        return [self.seconds(v, f"{field}[{i}]") for i, v in enumerate(value)]

    def counts(self, value: object, field: str) -> list[float]:
        """A non-empty list of counts (estimated cycles, instructions): numbers >= 1."""
        if not isinstance(value, list) or not value:
            self.fail(field, f"must be a non-empty list of counts, got {_describe(value)}")
        return [self.number(v, f"{field}[{i}]", low=1.0, high=1e18) for i, v in enumerate(value)]

    def strings(self, value: object, field: str) -> dict[str, str | None]:
        """An object of strings or nulls (library versions, ...)."""
        return {
            self.text(k, f"{field} key"): None if v is None else self.text(v, f"{field}.{k}")
            for k, v in self.obj(value, field).items()
        }

    def plain(self, value: object, field: str) -> object:
        """Any JSON whose strings (keys included) carry no control characters."""
        stack: list[tuple[object, str]] = [(value, field)]
        while stack:
            v, f = stack.pop()
            if isinstance(v, str):
                self.text(v, f)
            elif isinstance(v, dict):
                for k, x in v.items():
                    self.text(k, f"{f} key")
                    stack.append((x, f"{f}.{k}"))
            elif isinstance(v, list):
                stack.extend((x, f"{f}[{i}]") for i, x in enumerate(v))
        return value


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f"the string {escape(value)[:60]!r}"
    if isinstance(value, (int, float)):
        return f"the number {value!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# --------------------------------------------------------------------------------------------
# text for terminals, Markdown and HTML


def finite(obj: Any) -> Any:
    """``obj`` with every NaN or infinite float replaced by null, so the JSON written is valid."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, Mapping):
        return {k: finite(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [finite(v) for v in obj]
    return obj


# --------------------------------------------------------------------------------------------
# writing


def dumps(doc: Any, **kwargs: Any) -> str:
    """JSON text that is always valid: NaN and infinities are refused (ValueError), not written."""
    return json.dumps(doc, allow_nan=False, **kwargs)


def _mode_for(path: Path) -> int:
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_temporary(path: Path, text: str) -> Path:
    """``text`` in a new temporary file beside ``path`` (fsynced, with the mode ``path`` has or a
    new file would get); the caller renames it over ``path`` or removes it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f"{TMP_PREFIX}{path.name}.", suffix=TMP_SUFFIX, dir=path.parent
    )
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
            fh.write(text)
            fh.flush()
            os.fchmod(fh.fileno(), _mode_for(path))
            os.fsync(fh.fileno())
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return Path(tmp)


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that readers see the old file or the new one, nothing between;
    no temporary file is left behind on any exception."""
    tmp = write_temporary(path, text)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def stale_temporaries(directory: Path) -> list[Path]:
    """Temporary files of :func:`write_temporary` under ``directory`` (left by killed runs)."""
    if not directory.is_dir():
        return []
    return sorted(
        p
        for p in directory.rglob(f"{TMP_PREFIX}*{TMP_SUFFIX}")
        if p.is_file() and not p.is_symlink()
    )

"""Reference environments for same-session comparisons (``--perf-against``, ``--perf-versions``):
what a REF names, and an interpreter that runs the benchmarks with that version. No pytest here.

A REF is one of

* ``current``: this interpreter as it is;
* a path to another Python interpreter (a venv the user or nox made): used as it is, after a
  check that it can import pytest and pytest-burnperf;
* ``name==version``: a published release, e.g. ``numpy==2.2.6``;
* ``local=PATH``: a source tree;
* anything else: a git revision of the repository under test (``main``, a tag, a hash), whose
  tree at that commit is installed. The benchmark files always come from the current checkout.

**How a reference environment is made.** The release, source tree or commit is installed with
``--no-deps --target`` into a directory of its own (uv where it is on PATH, else this
interpreter's pip), and the rounds run this same interpreter with that directory first on
``PYTHONPATH``. Everything else, pytest, the array libraries, the device runtimes, is the current
environment's: the two sides differ in the one thing being compared, and nothing of several GB
is installed twice. A reference that needs a dependency the current environment lacks fails in
its first round with the import error shown. The directories are cached by what they hold (the
commit hash, the release, the tree's file list with sizes and times) and this interpreter, under
:func:`cache_root`, built under a lock into a temporary name and renamed, so concurrent runs
share one build and an interrupted build leaves nothing behind. A build that fails keeps its
log beside the cache entry and names it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_burnperf.core.text import has_control, quoted, tail

#: Environment variable that moves the cache of reference environments.
CACHE_ENV = "BURNPERF_ENV_CACHE"
CURRENT = "current"
#: Kinds of REF.
KINDS = ("current", "python", "release", "local", "git")
_RELEASE = re.compile(
    r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?(?:\[[A-Za-z0-9_,.-]*\])?==[A-Za-z0-9._+!-]+$"
)
#: Lines of a failed step's output shown in the error (the whole output is kept in a log file).
TAIL_LINES = 15


class EnvError(Exception):
    """A REF that cannot be used: the message names the REF, the step and what to do."""


@dataclass(frozen=True)
class Env:
    """One side of a same-session comparison: how to start a round's process in it."""

    label: str
    kind: str
    python: str
    #: A directory put first on PYTHONPATH (the installed reference), or None.
    overlay: str | None = None
    #: What the label resolved to: ``git main = 1a2b3c4d5e6f``, ``numpy==2.2.6``, an interpreter.
    detail: str = ""
    #: The installed project's version (overlay environments), when it could be read.
    version: str | None = None

    def environ(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        env = dict(os.environ if base is None else base)
        if self.overlay is not None:
            rest = env.get("PYTHONPATH")
            env["PYTHONPATH"] = self.overlay + (os.pathsep + rest if rest else "")
        return env

    def as_json(self) -> dict[str, object]:
        return {
            "label": self.label,
            "kind": self.kind,
            "python": self.python,
            "installed": self.overlay is not None,
            "detail": self.detail,
            "version": self.version,
        }


def cache_root() -> Path:
    """``$BURNPERF_ENV_CACHE``, else ``$XDG_CACHE_HOME/pytest-burnperf/envs`` (``~/.cache``)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return Path(explicit)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pytest-burnperf" / "envs"


#: How an interpreter REF begins: a path form. ``main``, ``origin/main`` and ``feature/x`` are
#: git revisions, whatever files of those names exist here.
PATH_FORMS = ("/", "./", "../", "~")


def kind_of(ref: str) -> str:
    """Which kind of REF ``ref`` is (see the module docstring); the git kind is the fallback."""
    if ref == CURRENT:
        return "current"
    if ref.startswith("local="):
        return "local"
    if "==" in ref:
        return "release"
    # a path form only: a bare word is a git revision even where a file of that name exists
    # here (an executable ./main must not run for --perf-against main)
    if ref.startswith(PATH_FORMS) or (os.sep != "/" and ref.startswith(os.sep)):
        return "python"
    return "git"


def parse_refs(text: str, option: str) -> tuple[str, ...]:
    """``A,B,C`` of ``--perf-versions``: at least two, no repeats, none empty."""
    refs = tuple(p.strip() for p in text.split(","))
    if any(not r for r in refs):
        raise ValueError(f"{option} {text!r}: an empty entry; give REF,REF[,...]")
    if len(refs) < 2:
        raise ValueError(f"{option} {text!r}: give at least two, e.g. {option} main,current")
    seen = [r for i, r in enumerate(refs) if r in refs[:i]]
    if seen:
        raise ValueError(f"{option} {text!r}: {seen[0]!r} is given twice")
    for r in refs:
        check_ref(r, option)
    return refs


def check_ref(ref: str, option: str) -> str:
    """The REF's form, checked without touching git, the network or the disk's contents."""
    ref = ref.strip()
    if not ref:
        raise ValueError(
            f"{option}: an empty REF; give a git revision, name==version, local=PATH, "
            "a Python interpreter or 'current'"
        )
    if has_control(ref):
        raise ValueError(f"{option} {ref!r}: a REF holds no control characters")
    kind = kind_of(ref)
    if kind == "release" and not _RELEASE.match(ref):
        raise ValueError(
            f"{option} {ref!r}: a release is written name==version (e.g. numpy==2.2.6); other "
            "version specifiers are not a single version"
        )
    if kind != "release" and re.search(r"\s", ref):
        raise ValueError(
            f"{option} {ref!r}: a REF holds no spaces (a git revision, name==version, "
            "local=PATH, a Python interpreter or 'current')"
        )
    if kind == "git" and re.search(r"[<>!,;]|~=", ref):
        raise ValueError(
            f"{option} {ref!r}: a release is written name==version (e.g. numpy==2.2.6); other "
            "version specifiers are not a single version"
        )
    if kind == "local" and not ref.removeprefix("local="):
        raise ValueError(f"{option} {ref!r}: local= needs a path to a source tree")
    return ref


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def _run(cmd: Sequence[str], **kw: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(  # type: ignore[call-overload,no-any-return]
        list(cmd),
        capture_output=True,
        text=True,
        errors="replace",
        stdin=subprocess.DEVNULL,
        check=False,
        **kw,
    )


def resolve(
    ref: str,
    *,
    repo: Path,
    python: str = sys.executable,
    cache: Path | None = None,
    say: Callable[[str], None] = lambda _line: None,
    run: Runner = _run,
) -> Env:
    """The environment ``ref`` names, built (or found in the cache) when it must be installed.

    ``repo`` is where the benchmarks were collected: the git repository of a revision REF.
    Raises :class:`EnvError` naming ``ref`` and the failing step.
    """
    kind = kind_of(ref)
    if kind == "current":
        return Env(CURRENT, "current", python, detail=f"this interpreter ({python})")
    if kind == "python":
        path = Path(ref).expanduser()
        if not path.is_file() or not os.access(path, os.X_OK):
            raise EnvError(
                f"{ref}: no such Python interpreter (not an executable file); a REF is a git "
                "revision, name==version, local=PATH, a Python interpreter or 'current'"
            )
        env = Env(ref, "python", str(path.absolute()), detail=f"interpreter {path}")
        check_plugin(env, run=run)
        return env
    root = cache if cache is not None else cache_root()
    if kind == "release":
        return _installed(ref, "release", ref, ref, python=python, cache=root, say=say, run=run)
    if kind == "local":
        tree = Path(ref.removeprefix("local=")).expanduser()
        if not tree.is_dir():
            raise EnvError(f"{ref}: {tree} is not a directory (local= needs a source tree)")
        tree = tree.resolve()
        _check_installable(ref, tree, "the source tree")
        ident = f"{tree}:{_tree_stamp(tree)}"
        return _installed(
            ref,
            "local",
            ident,
            str(tree),
            python=python,
            cache=root,
            say=say,
            run=run,
            detail=f"source tree {tree}",
        )
    commit = _git_commit(ref, repo, run)
    return _installed(
        ref,
        "git",
        commit,
        commit,
        python=python,
        cache=root,
        say=say,
        run=run,
        detail=f"git {ref} = {commit[:12]}",
        repo=repo,
    )


def _git_commit(ref: str, repo: Path, run: Runner) -> str:
    top = run(["git", "-C", str(repo), "rev-parse", "--show-toplevel"])
    if top.returncode != 0:
        raise EnvError(
            f"{ref}: not a git revision here: {repo} is not in a git repository "
            f"({tail(top.stderr, 2) or 'git failed'}); a REF is a git revision, name==version, "
            "local=PATH, a Python interpreter or 'current'"
        )
    got = run(["git", "-C", str(repo), "rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}"])
    if got.returncode != 0 or not got.stdout.strip():
        raise EnvError(
            f"{ref}: no such git revision in {top.stdout.strip()} (nor an interpreter, "
            "name==version or local=PATH); `git log --oneline` lists the revisions"
        )
    return got.stdout.strip()


def _check_installable(ref: str, tree: Path, what: str) -> None:
    if not any((tree / f).is_file() for f in ("pyproject.toml", "setup.py")):
        raise EnvError(
            f"{ref}: {what} has no pyproject.toml or setup.py at its top ({tree}), so there is "
            "nothing to install"
        )


def _tree_stamp(tree: Path) -> str:
    """A digest of a source tree's files (path, size, modification time), .git and caches left
    out: a changed file builds the reference again."""
    h = hashlib.sha256()
    skip = {".git", "__pycache__", ".nox", ".venv", ".tox", "build", "dist", ".pytest_cache"}
    for dirpath, dirnames, filenames in os.walk(tree):
        dirnames[:] = sorted(d for d in dirnames if d not in skip and not d.endswith(".egg-info"))
        for name in sorted(filenames):
            p = Path(dirpath, name)
            with contextlib.suppress(OSError):
                st = p.stat()
                h.update(f"{p.relative_to(tree)}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
    return h.hexdigest()[:16]


def _key(kind: str, ident: str, python: str) -> str:
    text = f"{kind}\0{ident}\0{os.path.realpath(python)}\0{sys.version}"
    return hashlib.sha256(text.encode()).hexdigest()[:20]


def _installer(python: str) -> list[str]:
    uv = shutil.which("uv")
    if uv:
        return [uv, "pip", "install", "--python", python]
    return [python, "-m", "pip", "install", "--no-input", "--disable-pip-version-check"]


def _installed(
    ref: str,
    kind: str,
    ident: str,
    what: str,
    *,
    python: str,
    cache: Path,
    say: Callable[[str], None],
    run: Runner,
    detail: str = "",
    repo: Path | None = None,
) -> Env:
    """Install ``what`` (a requirement, a source directory or a git commit of ``repo``) into a
    cached overlay directory; the :class:`Env` that puts it first on PYTHONPATH."""
    from filelock import FileLock

    key = _key(kind, ident, python)
    try:
        cache.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EnvError(f"{ref}: cannot create the environment cache {cache}: {exc}") from None
    final = cache / key
    log = cache / f"{key}.log"
    detail = detail or what
    with FileLock(str(cache / f"{key}.lock")):
        # with the key's lock held no other process builds it: a .tmp-* directory of this key
        # is what a killed build left
        for stale in cache.glob(f"{key}.tmp-*"):
            shutil.rmtree(stale, ignore_errors=True)
        if not (final / "burnperf-env.json").is_file():
            say(f"pytest-burnperf: building the reference environment for {ref} ({detail}) ...")
            _build(ref, kind, what, final, log, python=python, run=run, repo=repo)
        else:
            say(f"pytest-burnperf: reference environment for {ref} from the cache ({final})")
    meta = json.loads((final / "burnperf-env.json").read_text(encoding="utf-8"))
    env = Env(
        ref, kind, python, overlay=str(final / "site"), detail=detail, version=meta.get("version")
    )
    check_plugin(env, run=run)
    return env


def _build(
    ref: str,
    kind: str,
    what: str,
    final: Path,
    log: Path,
    *,
    python: str,
    run: Runner,
    repo: Path | None,
) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=final.name + ".tmp-", dir=final.parent))
    try:
        source = what
        if kind == "git":
            assert repo is not None
            source = str(tmp / "src")
            _export(ref, repo, what, Path(source), log, run)
            _check_installable(ref, Path(source), f"the tree at {what[:12]}")
        cmd = [*_installer(python), "--no-deps", "--target", str(tmp / "site"), source]
        extra: dict[str, str] = {}
        if kind == "git":
            assert repo is not None
            # an exported tree has no .git: projects versioned by setuptools-scm or hatch-vcs
            # (most) get the version from here instead
            extra = {"SETUPTOOLS_SCM_PRETEND_VERSION": _scm_version(repo, what, run)}
        done = run(cmd, cwd=str(tmp), **({"env": {**os.environ, **extra}} if extra else {}))
        if done.returncode != 0:
            _fail(ref, "installing it", cmd, done, log)
        version = _installed_version(tmp / "site", ref if kind == "release" else None)
        (tmp / "burnperf-env.json").write_text(
            json.dumps(
                {"ref": ref, "kind": kind, "what": what, "python": python, "version": version},
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
        shutil.rmtree(tmp / "src", ignore_errors=True)
        if final.exists():  # a half-made entry of an older version: replace it
            shutil.rmtree(final, ignore_errors=True)
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


_VERSION_TAG = re.compile(r"^v?([0-9]+(?:\.[0-9]+)*(?:(?:a|b|rc|\.post|\.dev)[0-9]+)?)$")


def _scm_version(repo: Path, commit: str, run: Runner) -> str:
    """A version for an exported commit: its release tag where it has one (``v1.2.3`` ->
    ``1.2.3``), else ``0+g<hash>``."""
    done = run(["git", "-C", str(repo), "tag", "--points-at", commit])
    for tag in (done.stdout or "").split() if done.returncode == 0 else []:
        m = _VERSION_TAG.match(tag)
        if m:
            return m.group(1)
    return f"0+g{commit[:12]}"


def _export(ref: str, repo: Path, commit: str, dest: Path, log: Path, run: Runner) -> None:
    """The tree of ``commit`` (``git archive``) into ``dest``."""
    archive = dest.with_suffix(".tar")
    cmd = ["git", "-C", str(repo), "archive", "--format=tar", "-o", str(archive), commit]
    done = run(cmd)
    if done.returncode != 0:
        _fail(ref, "exporting the commit with git archive", cmd, done, log)
    dest.mkdir(parents=True)
    with tarfile.open(archive) as tar:
        tar.extractall(dest, filter="data")
    archive.unlink()


def _installed_version(site: Path, release: str | None) -> str | None:
    if release is not None:
        return release.split("==", 1)[1]
    infos = sorted(site.glob("*.dist-info"))
    if not infos:
        return None
    # name-version.dist-info: the project's own (the only one, --no-deps)
    return infos[0].name.removesuffix(".dist-info").split("-", 1)[-1]


def _fail(
    ref: str,
    step: str,
    cmd: Sequence[str],
    done: subprocess.CompletedProcess[str],
    log: Path,
) -> None:
    output = (done.stdout or "") + (done.stderr or "")
    with contextlib.suppress(OSError):
        log.write_text(f"$ {' '.join(cmd)}\n{output}", encoding="utf-8")
    raise EnvError(
        f"{ref}: the reference environment could not be built: {step} failed "
        f"(exit {done.returncode}); its whole output is in {log}. Last lines:\n{quoted(output)}"
    )


#: What a round's process must be able to import.
_PROBE = (
    "import json, sys, pytest, pytest_burnperf; "
    "print(json.dumps({'python': sys.version.split()[0], 'pytest': pytest.__version__, "
    "'burnperf': pytest_burnperf.__version__}))"
)


def check_plugin(env: Env, *, run: Runner = _run) -> dict[str, str]:
    """The versions of Python, pytest and pytest-burnperf ``env`` runs; :class:`EnvError` when
    it cannot run the benchmarks at all."""
    done = run([env.python, "-c", _PROBE], env=env.environ())
    if done.returncode != 0:
        why = tail(done.stderr or done.stdout, 3) or f"exit {done.returncode}"
        raise EnvError(
            f"{env.label}: {env.python} cannot import pytest and pytest-burnperf ({why}); "
            "a reference interpreter needs both installed (pip install pytest-burnperf)"
        )
    try:
        got = json.loads(done.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise EnvError(f"{env.label}: {env.python} did not answer the version check") from None
    return {str(k): str(v) for k, v in got.items()}

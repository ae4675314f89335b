"""What ``--perf-against auto`` compares with, and why: a run always has something to judge by.

Stored baselines are kept per hardware class, and rightly so: a baseline from another CPU says
nothing about this one. But a CI runner's class changes from run to run, and a laptop is never
the machine that recorded the project's baselines. ``auto`` chooses, in this order:

1. the **stored baselines** where this hardware class has them (a fixed runner, the machine
   that recorded them), unless this host runs the reference probe (``probe.py``) further from
   their host's than ``probe.TOLERANCE`` (then the baselines would judge the host of the day,
   not the code: docs/validation.md measured a same-class host whose memory ran half as fast
   fail four unchanged benchmarks), or they were recorded so noisily that half of them cannot
   see a slowdown below :data:`NOISY_FLOOR` (then they judge little: the committed baselines of
   2026-11 had a median floor of +49%, and a run against them judged 8 of 119 benchmarks). In
   those two cases the steps below are tried first, falling back to the baselines, with that
   said, where none applies;
2. on a **pull or merge request**, the merge base of ``HEAD`` with the target branch
   (GitHub's ``GITHUB_BASE_REF``; GitLab's ``CI_MERGE_REQUEST_DIFF_BASE_SHA``, else
   ``CI_MERGE_REQUEST_TARGET_BRANCH_NAME``): the code before the change under review;
3. on a **branch** other than the default one, its merge base with the default branch
   (``origin/HEAD``, else ``main`` or ``master``);
4. elsewhere (the default branch, a scheduled run), ``--perf-base`` where the project names one
   (ini ``perf_base``, ``base`` in benchmarks.toml or ``[tool.burnperf]``);
5. else the **last release tag** before ``HEAD`` (``v1.2.3`` or ``1.2.3``): what users have now.

2-5 are same-session comparisons: both sides measured here, interleaved, so the hardware class
does not matter. Where none applies the choice says so, with the command that would give one
(a shallow clone gets the fetch command). No pytest here; git runs through an injectable
runner so that unit tests choose without a repository.
"""

from __future__ import annotations

import statistics
import subprocess
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_burnperf.core.judging.assess import baseline_runs
from pytest_burnperf.core.judging.more_rounds import recording_floor
from pytest_burnperf.core.judging.verdict import Policy
from pytest_burnperf.core.records.stored_baseline import StoredBaseline
from pytest_burnperf.core.text import escape
from pytest_burnperf.host import probe
from pytest_burnperf.storage.baselines import BaselineError, load_file

AUTO = "auto"
#: Tags that count as releases for step 5 (git describe --match patterns).
RELEASE_TAGS = ("v[0-9]*", "[0-9]*")

Runner = Callable[[Sequence[str]], "subprocess.CompletedProcess[str]"]


def _git(cmd: Sequence[str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        list(cmd),
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        check=False,
        timeout=60,
    )


@dataclass(frozen=True)
class Choice:
    """The reference of a run: stored baselines, a git revision to measure beside this code, or
    nothing (``problem`` says why and what would give one)."""

    #: A git revision (a commit hash or a tag) for a same-session comparison, else None.
    ref: str | None
    #: Compare with the stored baselines of this hardware class.
    baselines: bool
    #: For the header: what was chosen and why.
    why: str
    problem: str | None = None


def has_baselines(directory: Path) -> bool:
    """Whether a baselines directory of one machine group holds any baseline file."""
    try:
        return directory.is_dir() and any(directory.rglob("*.json"))
    except OSError:
        return False


class _Repo:
    def __init__(self, repo: Path, run: Runner) -> None:
        self.repo, self.run = repo, run

    def out(self, *args: str) -> str | None:
        done = self.run(["git", "-C", str(self.repo), *args])
        text = (done.stdout or "").strip()
        return text if done.returncode == 0 and text else None

    def commit(self, ref: str) -> str | None:
        return self.out("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}")

    def merge_base(self, a: str, b: str) -> str | None:
        return self.out("merge-base", a, b)


def _entries(directory: Path) -> list[StoredBaseline]:
    """Every baseline under ``directory``; a file that cannot be read is skipped here and
    left as it is (the run reports it when it reads it)."""
    entries: list[StoredBaseline] = []
    try:
        files = sorted(directory.rglob("*.json"))
    except OSError:
        return entries
    for path in files:
        try:
            entries.extend(StoredBaseline.from_entry(e) for e in load_file(path).values())
        except (BaselineError, OSError):
            continue
    return entries


def stored_host_off(directory: Path, current: Mapping[str, float]) -> str | None:
    """How far this host is from the one that recorded the baselines under ``directory``, where
    beyond ``probe.TOLERANCE`` (``current``: this host's probe parts, ``probe.host_parts()``);
    None where within it or where no baseline recorded a probe. Only the host parts (pure
    Python, memory copy) are compared: they are the same for every device. A corrupt baseline
    file is skipped here; the run reports it when it reads it."""

    host = {"python", "copy"}
    recorded = []
    for entry in _entries(directory):
        doc = entry.host_probe
        if doc is not None:
            recorded.append({k: v for k, v in doc.items() if k in host or k == "version"})
    theirs = probe.pooled(recorded)
    ratio = probe.host_ratio(theirs, {"version": probe.VERSION, **current})
    if ratio is None or not probe.differs(ratio[0]):
        return None
    return probe.describe(*ratio, than="the baselines' host")


#: The median noise floor (core.judging.more_rounds.recording_floor) of a hardware class's baselines above
#: which ``auto`` measures the base of the change in the session instead: same-session pairs
#: reached floors of +6-12% on the same host (docs/validation.md), so baselines that cannot see
#: a +15% slowdown in half their benchmarks judge less than the alternative.
NOISY_FLOOR = 0.15


def stored_noisy(directory: Path) -> str | None:
    """Why the baselines under ``directory`` are too noisy to judge by (their median recording
    floor above :data:`NOISY_FLOOR`), or None. A corrupt baseline file is skipped here; the run
    reports it when it reads it."""
    entries = _entries(directory)
    policy = Policy(alpha=0.01, threshold=0.05, comparisons=max(1, len(entries)))
    floors = [f for e in entries if (f := recording_floor(baseline_runs(e), policy)) is not None]
    if len(floors) < 3:
        return None
    floor = statistics.median(floors)
    if floor <= NOISY_FLOOR:
        return None
    return (
        f"half of its {len(floors)} baselines see no slowdown below +{100 * floor:.0f}% "
        "(their rounds scattered that much when they were recorded)"
    )


def choose(
    *,
    stored: bool,
    machine: str,
    repo: Path,
    base: str | None = None,
    environ: Mapping[str, str] | None = None,
    run: Runner = _git,
    host_off: str | None = None,
    noisy: str | None = None,
) -> Choice:
    """The reference ``--perf-against auto`` takes (module docstring). ``stored``: this hardware
    class has baselines; ``machine``: its id, for messages; ``host_off``: how this host differs
    from the baselines' host, where it does (``stored_host_off``); ``noisy``: why the baselines
    are too noisy to judge by, where they are (``stored_noisy``)."""
    stored_why = f"the stored baselines of this hardware class ({machine})"
    if stored and host_off is None and noisy is None:
        return Choice(None, True, stored_why)
    if stored and host_off is not None:
        lead = f"{stored_why} came from another host: {host_off}"
    elif stored:
        lead = f"{stored_why} are too noisy to judge by: {noisy}"
    else:
        lead = f"no baselines for this hardware class ({machine})"
    found = _same_session(lead, repo, base, environ, run)
    if stored and found.problem:
        return Choice(
            None,
            True,
            f"{stored_why}, as no earlier version could be measured beside this one: "
            f"{found.problem}. "
            + (
                "Verdicts that host could explain stay inconclusive"
                if host_off is not None
                else f"They are noisy: {noisy}"
            ),
        )
    return found


def _same_session(
    lead: str, repo: Path, base: str | None, environ: Mapping[str, str] | None, run: Runner
) -> Choice:
    """Steps 2-5 of the module docstring; ``lead`` says why stored baselines were not taken. A
    merge request's base that names no commit here is said beside whatever was chosen instead."""
    import dataclasses
    import os

    env = os.environ if environ is None else environ
    choice = _steps(lead, repo, base, env, run)
    given = env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA", "").strip()
    if given and not choice.why.startswith("the merge request's base"):
        shown = escape(given[:60])
        note = f"CI_MERGE_REQUEST_DIFF_BASE_SHA {shown!r} names no commit here"
        return dataclasses.replace(choice, why=f"{choice.why}; {note}")
    return choice


def _steps(lead: str, repo: Path, base: str | None, env: Mapping[str, str], run: Runner) -> Choice:
    git = _Repo(repo, run)
    if git.out("rev-parse", "--show-toplevel") is None:
        return Choice(
            None,
            False,
            "nothing",
            problem=(
                f"{lead}, and {repo} is not in a git "
                "repository, so there is no earlier version to measure beside this one; record "
                "baselines on this machine (pytest --perf --perf-update) or name a "
                "reference (--perf-against REF)"
            ),
        )
    head = git.commit("HEAD")
    shallow = git.out("rev-parse", "--is-shallow-repository") == "true"
    unshallow = (
        " This clone is shallow: fetch the history first (git fetch --unshallow --tags; with "
        "actions/checkout, fetch-depth: 0)."
        if shallow
        else ""
    )

    # 2. a pull or merge request: the code before the change under review
    gitlab_base = env.get("CI_MERGE_REQUEST_DIFF_BASE_SHA", "").strip()
    if gitlab_base and all(c in "0123456789abcdefABCDEF" for c in gitlab_base):
        found = git.commit(gitlab_base)
        if found:
            return Choice(found, False, f"the merge request's base {found[:12]} ({lead})")
    target = (
        env.get("GITHUB_BASE_REF", "").strip()
        or env.get("CI_MERGE_REQUEST_TARGET_BRANCH_NAME", "").strip()
    )
    if target.startswith("-") or any(c.isspace() for c in target):
        return Choice(
            None,
            False,
            "nothing",
            problem=f"{lead}, and the pull request's target branch {target!r} is no branch name",
        )
    if target:
        branch = next((c for c in (f"origin/{target}", target) if git.commit(c) is not None), None)
        if branch is None:
            return Choice(
                None,
                False,
                "nothing",
                problem=(
                    f"{lead}, and this pull request's target branch {target!r} is not in this "
                    f"clone: fetch it first (git fetch --no-tags origin "
                    f"{target}:refs/remotes/origin/{target}).{unshallow}"
                ),
            )
        mb = git.merge_base("HEAD", branch)
        if mb is None:
            return Choice(
                None,
                False,
                "nothing",
                problem=(
                    f"{lead}, and HEAD has no common ancestor with {branch} in this clone, so "
                    f"the pull request's base cannot be found.{unshallow or ' Fetch more history.'}"
                ),
            )
        return Choice(
            mb, False, f"the merge base {mb[:12]} of this pull request with {branch} ({lead})"
        )

    # 3. a branch other than the default one
    default = _default_branch(git)
    if default is not None and head is not None:
        mb = git.merge_base("HEAD", default)
        if mb is not None and mb != head:
            return Choice(mb, False, f"the merge base {mb[:12]} with {default} ({lead})")

    # 4. the project's own choice off a pull request or branch
    if base:
        found = git.commit(base)
        if found is None:
            return Choice(
                None,
                False,
                "nothing",
                problem=(
                    f"{lead}, and --perf-base {base!r} is no git revision here (`git log "
                    f"--oneline` lists them; a tag may need git fetch --tags).{unshallow}"
                ),
            )
        return Choice(base, False, f"--perf-base {base} = {found[:12]} ({lead})")

    # 5. the last release
    if head is not None:
        matches = [a for p in RELEASE_TAGS for a in ("--match", p)]
        tag = git.out("describe", "--tags", "--abbrev=0", *matches, "HEAD")
        if tag is not None and git.commit(tag) == head:  # HEAD is the release: the one before
            tag = git.out("describe", "--tags", "--abbrev=0", *matches, "HEAD^")
        if tag is not None:
            return Choice(tag, False, f"the last release tag {tag} ({lead})")
    return Choice(
        None,
        False,
        "nothing",
        problem=(
            f"{lead}; not a pull request, HEAD is on the default branch, and no release tag "
            "(v1.2.3 or 1.2.3) lies before it, so --perf-against auto has nothing to compare "
            'with: name a git revision with --perf-base REF (or base = "REF" in '
            "benchmarks.toml), or record baselines on this machine (pytest --perf "
            f"--perf-update).{unshallow}"
        ),
    )


def _default_branch(git: _Repo) -> str | None:
    origin = git.out("symbolic-ref", "--quiet", "--short", "refs/remotes/origin/HEAD")
    if origin is not None and git.commit(origin) is not None:
        return origin
    for name in ("main", "master", "origin/main", "origin/master"):
        if git.commit(name) is not None:
            return name
    return None

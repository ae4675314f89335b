"""Does ``--perf-profile`` name what changed? Planted changes in the shipped suite, profiled.

In a scratch copy of the shipped suite (perf_tests/) and of the package (src/):

1. baselines recorded with ``--perf-update --perf-profile`` (a profile summary beside each);
2. unchanged code judged ``--runs`` times each without ``--perf-profile`` and with
   ``--perf-profile=regressed``, interleaved: the wall time of both (nothing regressed, so
   nothing should be profiled and nothing added);
3. two planted changes: an extra elementwise pass (``+ 0.0 * sin(x)``) in the shipped
   elementwise chain (torch and numpy), and a slower Python loop in the plugin's own
   ``core/judging/stats.summarize``, which the shipped ``test_verdict`` benchmark times; judged with
   ``--perf-profile=regressed``: each regressed benchmark's note should name the changed
   function or kernel first.

``python -m validation.profile_plant --out docs/data/profile-plant.json``

With ``--against``, the same in a same-session comparison instead of stored baselines: the
scratch copy is a git repository whose commit holds the unchanged code; unchanged code is judged
``--runs`` times each with ``--perf-against HEAD`` without and with ``--perf-profile=regressed``,
then the planted working tree against that commit, where both environments are profiled.

``python -m validation.profile_plant --against --runs 2 --out docs/data/profile-plant-against.json``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from validation.common import machine

ROOT = Path(__file__).resolve().parents[1]
SELECT = "test_elementwise_chain or test_verdict"
ARGS = ("--perf-backends", "numpy,torch", "--perf-min-judged", "0", "-p", "no:cacheprovider")

#: (file in the scratch copy, text, planted text)
PLANTS = (
    (
        "perf_tests/test_ops.py",
        "    return xp.tanh(x * y + 5.0) - xp.abs(x) / (1.0 + y * y)\n",
        "    return xp.tanh(x * y + 5.0) - xp.abs(x) / (1.0 + y * y) + 0.0 * xp.sin(x)\n",
    ),
    (
        "src/pytest_burnperf/core/judging/stats.py",
        "def summarize(values: Sequence[float]) -> Summary:\n",
        "def summarize(values: Sequence[float]) -> Summary:\n"
        "    for _ in range(100):  # planted: a slower Python loop\n"
        "        sorted(float(v) for v in values)\n",
    ),
)


def git(work: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.name=v", "-c", "user.email=v@example.invalid", *args],
        cwd=work,
        check=True,
        capture_output=True,
    )


def run(work: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(work / "src"), "PYTHONDONTWRITEBYTECODE": "1"}
    env["BURNPERF_ENV_CACHE"] = str(work / ".env-cache")
    env.pop("CI", None)
    t0 = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "perf_tests", "-q", "--perf", *ARGS, "-k", SELECT, *args],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return {"rc": proc.returncode, "wall_s": time.perf_counter() - t0, "out": proc.stdout}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3, help="unchanged runs of each kind")
    ap.add_argument("--out", type=Path, default=None, help="raw JSON to write")
    ap.add_argument(
        "--against",
        action="store_true",
        help="a same-session comparison (--perf-against HEAD) instead of stored baselines",
    )
    args = ap.parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    work = Path(tempfile.mkdtemp(prefix="burnperf-profile-plant-"))
    try:
        shutil.copytree(ROOT / "perf_tests", work / "perf_tests")
        shutil.copytree(ROOT / "src", work / "src")
        for name in ("pyproject.toml", "conftest.py", "README.md", "LICENSE"):
            if (ROOT / name).exists():
                shutil.copy(ROOT / name, work / name)
        judge: tuple[str, ...] = ()
        if args.against:  # the unchanged code committed: the reference of every run
            (work / ".gitignore").write_text(
                "__pycache__/\n.env-cache/\nperf-profiles/\nbaselines/\n*.json\n"
            )
            git(work, "init", "-q", "-b", "main")
            git(work, "add", "-A")
            git(work, "commit", "-q", "-m", "unchanged")
            judge = ("--perf-against", "HEAD")
            rec = {"rc": 0, "wall_s": 0.0}
        else:
            rec = run(work, "--perf-update", "--perf-profile")
        print(f"recorded (exit {rec['rc']}) in {rec['wall_s']:.0f} s", file=sys.stderr)
        recorded_profiles = sorted(p.name for p in (work / "perf-profiles").glob("*"))
        shutil.rmtree(work / "perf-profiles", ignore_errors=True)
        timings: dict[str, list[float]] = {"off": [], "regressed": []}
        unchanged_rc: list[int] = []
        summaries: dict[str, list[str]] = {"off": [], "regressed": []}
        for _ in range(args.runs):
            for kind in ("off", "regressed"):
                extra = () if kind == "off" else ("--perf-profile=regressed",)
                got = run(work, *judge, *extra)
                timings[kind].append(round(got["wall_s"], 2))
                unchanged_rc.append(got["rc"])
                lines = got["out"].splitlines()
                summaries[kind].append(" | ".join(x for x in lines if x.startswith("perf: ")))
                print(
                    f"unchanged, profile {kind}: exit {got['rc']}, {got['wall_s']:.1f} s",
                    file=sys.stderr,
                )
        profiled_unchanged = (
            sorted(p.name for p in (work / "perf-profiles").glob("*"))
            if (work / "perf-profiles").exists()
            else []
        )
        shutil.rmtree(work / "perf-profiles", ignore_errors=True)
        for rel, old, new in PLANTS:
            path = work / rel
            text = path.read_text()
            assert old in text, f"{rel}: the text to plant into is gone: {old!r}"
            path.write_text(text.replace(old, new, 1))
        planted = run(work, *judge, "--perf-profile=regressed", "--perf-json", "planted.json")
        doc = json.loads((work / "planted.json").read_text())
        results = [
            {
                "test": r["test"] if "test" in r else r.get("name"),
                "status": r["verdict"]["status"],
                "change": r["verdict"].get("ratio"),
                "note": (r.get("profile") or {}).get("note"),
                "files": [
                    f
                    for f in (
                        (r.get("profile") or {}).get("against_file"),
                        (r.get("profile") or {}).get("file"),
                    )
                    if f
                ],
            }
            for r in doc["results"]
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)
    raw = {
        "started": started,
        "machine": machine(),
        "command": "python -m validation.profile_plant"
        + (" --against" if args.against else "")
        + f" --runs {args.runs}",
        "judged_against": "HEAD (the unchanged commit), same session"
        if args.against
        else "baselines",
        "select": SELECT,
        "plants": [{"file": rel, "from": old, "to": new} for rel, old, new in PLANTS],
        "record_s": round(rec["wall_s"], 1),
        "unchanged_wall_s": timings,
        "unchanged_exit_codes": unchanged_rc,
        "unchanged_summaries": summaries,
        "profiles_written_recording": recorded_profiles,
        "profiles_written_unchanged": profiled_unchanged,
        "planted_exit_code": planted["rc"],
        "planted": results,
    }
    print(json.dumps(raw, indent=1))
    if args.out:
        args.out.write_text(json.dumps(raw, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

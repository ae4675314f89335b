"""Do counts baselines judge on another CPU? The committed counts baselines judged with valgrind
run under QEMU's user-mode emulation of other CPU models.

valgrind sees the host's CPU only through CPUID (it picks its simulated CPU's table by the host's
capability level, and passes a few host bits through). QEMU's user mode (``qemu-x86_64 -cpu
MODEL``) runs valgrind itself on an emulated CPU of that model, so what valgrind sees is that
model's CPUID: an AMD EPYC-Rome (family 23, AVX2, no AVX-512) on this Intel AVX-512 host, or a
Sandy Bridge (AVX, no AVX2). For each model, ``pytest --perf --perf-measure counts --perf-against
baselines`` judges the selected shipped benchmarks against the committed counts baselines
(recorded natively on this host), with ``BURNPERF_VALGRIND`` naming a wrapper that starts
callgrind under QEMU. The counts should be unchanged where valgrind presents the same simulated
CPU, and the key should refuse (``incomparable``, naming the field) where it does not. Everything
runs about ten times slower under QEMU than under valgrind alone.

Needs ``qemu-user`` (Debian: ``apt-get install qemu-user``) and valgrind.

``python -m validation.counts_classes --models native,EPYC-Rome --out docs/data/counts-classes.json``
``python -m validation.counts_classes --models SandyBridge --select test_sum --append --out ...``
``python -m validation.counts_classes --models EPYC-Rome --backends numpy,torch --select ''`` (every
shipped CPU benchmark: an empty ``--select`` selects all)
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
SELECT = "test_sum or test_vector_add or test_elementwise_chain or (test_reduce and sum)"
MODELS = ("native", "EPYC-Rome", "SandyBridge")
LIBEXEC = Path("/usr/libexec/valgrind")

WRAPPER = """#!/bin/bash
# callgrind under QEMU's user-mode emulation of one CPU model (valgrind sees its CPUID)
export VALGRIND_LIB={lib} VALGRIND_LAUNCHER={launcher}
exec {qemu} -cpu {model} {tool} "$@" 2> >(grep -v "TCG doesn't support" >&2)
"""


def wrapper(folder: Path, model: str) -> Path:
    qemu, valgrind = shutil.which("qemu-x86_64"), shutil.which("valgrind")
    if qemu is None or valgrind is None:
        raise SystemExit("needs qemu-user (qemu-x86_64) and valgrind")
    launcher = Path(valgrind).with_name("valgrind.bin")  # Debian's wrapper script execs it
    path = folder / f"valgrind-{model}"
    path.write_text(
        WRAPPER.format(
            lib=LIBEXEC,
            launcher=launcher if launcher.exists() else valgrind,
            qemu=qemu,
            model=model,
            tool=LIBEXEC / "callgrind-amd64-linux",
        )
    )
    path.chmod(0o755)
    return path


def judge(model: str, folder: Path, select: str, backends: str = "numpy") -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("CI", None)
    if model != "native":
        env["BURNPERF_VALGRIND"] = str(wrapper(folder, model))
    out = folder / f"{model}.json"
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "perf_tests",
        "-q",
        "-p",
        "no:randomly",
        "-p",
        "no:cacheprovider",
        "--perf",
        "--perf-measure",
        "counts",
        "--perf-against",
        "baselines",
        "--perf-backends",
        backends,
        "--perf-min-judged",
        "0",
        "--perf-json",
        str(out),
        *(["-k", select] if select else []),
    ]
    # the counted processes' folders land here: under QEMU one does not exit after writing its
    # counts (QEMU user mode and valgrind's threads at exit), so each is ended once its file is
    # written (the file is written whole at its end; its path is on the process's command line)
    tmp = folder / f"tmp-{model}"
    tmp.mkdir()
    env["TMPDIR"] = str(tmp)
    t0 = time.perf_counter()
    ended = False
    log = folder / f"{model}.log"
    with (
        log.open("w") as sink,
        subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=sink, stderr=subprocess.STDOUT) as proc,
    ):
        while proc.poll() is None:
            time.sleep(5)
            if model == "native":
                continue
            for written in tmp.glob("burnperf-counts-*/pass-*/round-process.json"):
                if time.time() - written.stat().st_mtime > 30:
                    ended = (
                        not subprocess.run(
                            ["pkill", "-9", "-f", "--", f"--perf-round-process-out={written}"],
                            check=False,
                        ).returncode
                        or ended
                    )
    stdout = log.read_text(errors="replace")
    wall = time.perf_counter() - t0
    doc = json.loads(out.read_text()) if out.exists() else {"results": []}
    results = [
        {
            "test": r.get("name"),
            "status": r["verdict"]["status"],
            "change_pct": r["verdict"].get("change_pct"),
            "reason": r["verdict"].get("reason"),
            "key": {
                k: (r.get("counts") or {}).get("key", {}).get(k) for k in ("cpuid", "simulated_cpu")
            },
        }
        for r in doc["results"]
    ]
    print(f"{model}: exit {proc.returncode}, {wall:.0f} s", file=sys.stderr)
    lines = stdout.splitlines()
    return {
        "model": model,
        "select": select,
        "backends": backends,
        "exit": proc.returncode,
        "wall_s": round(wall, 1),
        "summary": [x for x in lines if x.startswith("perf: ")],
        "counted_process_ended_after_writing": ended,
        "results": results,
        "tail": lines[-30:] if proc.returncode > 1 else [],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--models", default=",".join(MODELS), help="QEMU CPU models, and native")
    ap.add_argument(
        "--select", default=SELECT, help="a -k expression of shipped benchmarks ('': all)"
    )
    ap.add_argument("--backends", default="numpy", help="--perf-backends of the judged runs")
    ap.add_argument("--out", type=Path, default=None, help="raw JSON to write")
    ap.add_argument("--append", action="store_true", help="add these runs to --out's")
    args = ap.parse_args(argv)
    started = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    with tempfile.TemporaryDirectory(prefix="burnperf-counts-classes-") as tmp:
        runs = [
            judge(m, Path(tmp), args.select, args.backends) for m in args.models.split(",") if m
        ]
    command = (
        f"python -m validation.counts_classes --models {args.models} --select '{args.select}'"
        f" --backends {args.backends}"
    )
    if args.append and args.out and args.out.exists():
        raw = json.loads(args.out.read_text())
        raw["runs"] += runs
        raw["commands"].append(command)
        raw["started"] += f", {started}"
        args.out.write_text(json.dumps(raw, indent=1) + "\n")
        return 0
    raw = {
        "started": started,
        "machine": machine(),
        "commands": [command],
        "qemu": subprocess.run(
            ["qemu-x86_64", "--version"], capture_output=True, text=True, check=False
        ).stdout.splitlines()[:1],
        "runs": runs,
    }
    print(json.dumps(raw, indent=1))
    if args.out:
        args.out.write_text(json.dumps(raw, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

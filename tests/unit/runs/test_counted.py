"""runs/counted.py: the counted process started, read back, and started again after a benchmark
that killed it, with a fake valgrind that plays the counted process (no valgrind needed)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pytest_burnperf.host import leftovers
from pytest_burnperf.runs import counted, round_launcher

#: A counted process: every benchmark noted before it starts and journalled as it finishes,
#: the whole file written at its end; a benchmark named ``crash-exit`` ends it with os._exit,
#: one named ``crash-segv`` with a segfault (SIGSEGV), as a broken extension would, and one
#: named ``crash-sigill`` with SIGILL, as valgrind ends code built for AVX-512 (torch.compile's);
#: one named ``fails`` fails its test: not recorded, and the process ends with pytest's exit 1.
FAKE = """
import json, os, signal, sys
from pathlib import Path
from pytest_burnperf.runs.round_launcher import note_record, note_started

arg = lambda name: next(a.split("=", 1)[1] for a in sys.argv if a.startswith(name + "="))
out = Path(arg("--perf-round-process-out"))
wanted = Path(arg("--perf-round-process-only")).read_text().split()
Path("starts").open("a").write("start " + " ".join(wanted) + "\\n")
picked = [a.split("=", 1)[1] for a in sys.argv if a.startswith("--perf-backends=")]
Path("backends").open("a").write((picked[-1] if picked else "-") + " " + " ".join(wanted) + "\\n")
print("==1== valgrind cache warning")
records = {}
for n in wanted:
    note_started(out, n)
    if "crash-exit" in n:
        os._exit(3)
    if "crash-segv" in n:
        os.kill(os.getpid(), signal.SIGSEGV)
    if "crash-sigill" in n:
        os.kill(os.getpid(), signal.SIGILL)
    if "fails" in n:
        continue
    rec = {"values": [100.0], "counts": {"instructions": [100, 100], "cycles": [150, 150]},
           "key": {"python": "x"}}
    records[n] = rec
    note_record(out, n, rec)
out.write_text(json.dumps(records))
failed = [n for n in wanted if "fails" in n]
if failed:
    print("=========================== short test summary info ============================")
    for n in failed:
        print(f"FAILED {n} - AttributeError")
    print(f"{len(failed)} failed, {len(records)} passed in 19.22s")
    sys.exit(1)
"""


def _valgrind(tmp_path: Path) -> str:
    script = tmp_path / "fake_valgrind.py"
    script.write_text(FAKE, encoding="utf-8")
    runner = tmp_path / "valgrind"
    runner.write_text(f'#!/bin/sh\nexec {sys.executable} {script} "$@"\n', encoding="utf-8")
    runner.chmod(0o755)
    return str(runner)


def _run(
    tmp_path: Path, wanted: list[str], jobs: int = 1, devices: dict[str, str] | None = None
) -> counted.CountedRun:
    said: list[int] = []
    got = counted.run(
        valgrind=_valgrind(tmp_path),
        python=sys.executable,
        args=[],
        wanted=wanted,
        cwd=tmp_path,
        say=said.append,
        jobs=jobs,
        devices=devices,
    )
    assert all(n <= len(wanted) for n in said)
    assert not said or said[-1] == len(got.counts) + len(got.missing) + len(got.timed_instead)
    return got


def test_every_benchmark_counted_in_one_process(tmp_path: Path) -> None:
    got = _run(tmp_path, ["t.py::a", "t.py::b"])
    assert sorted(got.counts) == ["t.py::a", "t.py::b"] and not got.missing and not got.problems


@pytest.mark.parametrize(
    ("name", "how"),
    [
        ("crash-exit", "exit 3"),
        ("crash-segv", "killed by SIGSEGV"),
        ("crash-sigill", "killed by SIGILL"),
    ],
)
def test_a_benchmark_that_kills_the_process_costs_only_itself(
    tmp_path: Path, name: str, how: str
) -> None:
    """The process dies on the second of four benchmarks: the first keeps its counts (from the
    journal), the dying one is named with how the process ended, the last two are counted in
    a fresh process."""
    wanted = ["t.py::a", f"t.py::{name}", "t.py::c", "t.py::d"]
    got = _run(tmp_path, wanted)
    assert sorted(got.counts) == ["t.py::a", "t.py::c", "t.py::d"]
    assert list(got.missing) == [f"t.py::{name}"]
    assert got.missing[f"t.py::{name}"].startswith(
        f"the counted process died while counting it ({how})"
    )
    (problem,) = got.problems
    assert problem.startswith(f"t.py::{name}: the counted process died while counting it")
    assert (tmp_path / "starts").read_text().count("start") == 2
    # an instruction valgrind cannot run: said, with what to do
    advice = "an instruction valgrind cannot run" in got.missing[f"t.py::{name}"]
    assert advice == (name == "crash-sigill")


def test_a_benchmark_that_fails_in_the_counted_process_is_named_and_its_output_quoted(
    tmp_path: Path,
) -> None:
    """A benchmark whose test fails under the counted process (exit 1) is not judged by counts;
    the note names it and quotes the process's last lines, so that its pytest summary never reads
    as the run's own."""
    got = _run(tmp_path, ["t.py::a", "t.py::fails", "t.py::b"])
    assert sorted(got.counts) == ["t.py::a", "t.py::b"]
    assert got.missing == {
        "t.py::fails": "not counted: it failed or was skipped in the counted process"
    }
    (problem,) = got.problems
    head, *quoted_lines = problem.splitlines()
    assert head == (
        "not judged by counts: 1 benchmark(s) failed or were skipped in the counted process "
        "(t.py::fails); its output ends:"
    )
    assert quoted_lines and all(line.startswith("    | ") for line in quoted_lines)
    assert "    | 1 failed, 2 passed in 19.22s" in quoted_lines
    assert (tmp_path / "starts").read_text().count("start") == 1  # no fresh process for it


def test_every_benchmark_crashing_stops_after_the_restart_limit(tmp_path: Path) -> None:
    wanted = [f"t.py::crash-exit{i}" for i in range(counted.MAX_RESTARTS + 3)]
    got = _run(tmp_path, wanted)
    assert not got.counts and sorted(got.missing) == sorted(wanted)
    died_on = [n for n, why in got.missing.items() if "died while counting it" in why]
    assert len(died_on) == counted.MAX_RESTARTS + 1
    assert (tmp_path / "starts").read_text().count("start") == counted.MAX_RESTARTS + 1


def test_a_process_that_dies_before_any_benchmark_fails_them_all_once(tmp_path: Path) -> None:
    runner = tmp_path / "valgrind"
    runner.write_text("#!/bin/sh\necho 'ImportError: no module'\nexit 4\n", encoding="utf-8")
    runner.chmod(0o755)
    got = counted.run(
        valgrind=str(runner),
        python=sys.executable,
        args=[],
        wanted=["t.py::a", "t.py::b"],
        cwd=tmp_path,
        say=lambda n: None,
    )
    assert got.missing == dict.fromkeys(
        ["t.py::a", "t.py::b"], "the counted process failed (exit 4)"
    )
    assert "ImportError: no module" in got.problems[0]


def test_the_counted_process_gets_its_parent_and_the_pins(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONHASHSEED", "random")
    env = counted.environment()
    assert env[leftovers.PARENT_ENV] == str(os.getpid())
    assert env["MALLOC_MMAP_THRESHOLD_"] == "131072"


def test_counted_processes_run_the_portable_kernels_unless_the_run_names_its_own() -> None:
    """No FMA kernels under valgrind (each FMA runs lane by lane there): OpenBLAS's Sandybridge
    kernels where the host has AVX, its SSE4.2 ones where not, nothing off x86-64; a run's own
    choice stays (the key records the kernel chosen)."""
    avx = counted.kernel_env("x86_64", ["avx", "avx2", "fma"])
    assert avx["OPENBLAS_CORETYPE"] == "Sandybridge" and avx["ATEN_CPU_CAPABILITY"] == "default"
    assert avx["MKL_ENABLE_INSTRUCTIONS"] == "AVX" == avx["ONEDNN_MAX_CPU_ISA"]
    sse = counted.kernel_env("AMD64", ["sse4_2"])
    assert sse["OPENBLAS_CORETYPE"] == "Nehalem"
    # torch.compile's kernels, built by a native gcc: for the same CPU, never -march=native
    # (an AVX-512 host's gcc vectorised them with instructions valgrind cannot run: SIGILL)
    assert avx[counted.COMPILED_MARCH_ENV] == "sandybridge"
    assert sse[counted.COMPILED_MARCH_ENV] == "nehalem"
    avx512 = counted.kernel_env("x86_64", ["avx", "avx2", "fma", "avx512f"])
    assert avx512[counted.COMPILED_MARCH_ENV] == "sandybridge"
    assert counted.kernel_env("aarch64", ["asimd"]) == {}
    env = counted.environment({"OPENBLAS_CORETYPE": "Haswell"})
    assert env["OPENBLAS_CORETYPE"] == "Haswell"
    if counted.platform.machine() == "x86_64":
        assert env["MKL_ENABLE_INSTRUCTIONS"] in ("AVX", "SSE4_2")


def test_torch_compile_in_a_counted_process_uses_a_cache_of_its_own(tmp_path: Path) -> None:
    """Inductor writes C++ for the CPU capability it sees: a counted process (capability
    ``default``) must not find what a native run wrote for AVX-512, so it gets its own cache
    under this tool's cache folder, whatever the run's environment names, one per set of kernel
    settings."""
    base = {"BURNPERF_CACHE_DIR": str(tmp_path), "TORCHINDUCTOR_CACHE_DIR": "/shared/inductor"}
    env = counted.environment(base)
    cache = Path(env[counted.INDUCTOR_CACHE_ENV])
    assert cache.parent == tmp_path / "inductor-counted"
    assert counted.environment(base)[counted.INDUCTOR_CACHE_ENV] == str(cache)  # kept
    other = counted.environment({**base, "ATEN_CPU_CAPABILITY": "avx2"})
    assert other[counted.INDUCTOR_CACHE_ENV] != str(cache)


def test_benchmarks_are_dealt_over_the_processes_in_turn() -> None:
    assert counted.shares(["a", "b", "c", "d", "e"], 2) == [["a", "c", "e"], ["b", "d"]]
    assert counted.shares(["a", "b"], 8) == [["a"], ["b"]]  # never an empty process
    assert counted.shares(["a", "b"], 0) == [["a", "b"]]


def test_each_devices_benchmarks_go_to_as_few_processes_as_the_balance_allows() -> None:
    """A process imports the libraries of its own devices only (torch alone took 16 s of CPU to
    import under valgrind): a device's benchmarks are not spread over every process, the
    processes stay within one benchmark of each other, and in turn within a device."""
    numpy = {f"n{i}": "numpy-cpu" for i in range(6)}
    torch = {"t0": "torch-cpu", "t1": "torch-cpu"}
    devices = {**numpy, **torch}
    # torch's two benchmarks among numpy's, as "cpu" parametrises them: one process gets both
    wanted = ["n0", "t0", "n1", "n2", "n3", "t1", "n4", "n5"]
    got = counted.shares(wanted, 2, devices)
    assert [sorted({devices[n] for n in share}) for share in got] == [
        ["numpy-cpu"],
        ["numpy-cpu", "torch-cpu"],
    ]
    assert sorted(n for share in got for n in share) == sorted(wanted)
    assert [len(share) for share in got] == [4, 4]
    assert got[0][:2] == ["n0", "n2"]  # in turn within numpy: neighbours to different ones
    # one benchmark a device: each process one device
    assert counted.shares(["a", "b"], 2, {"a": "numpy-cpu", "b": "torch-cpu"}) == [["a"], ["b"]]
    # a device with fewer benchmarks than its place spans stays whole: y in one of four
    got = counted.shares(list("abcdef"), 4, dict(zip("abcdef", "xxxxyy", strict=True)))
    assert got == [["a"], ["b", "d"], ["c"], ["e", "f"]]


def test_processes_side_by_side_each_count_their_share(tmp_path: Path) -> None:
    wanted = [f"t.py::b{i}" for i in range(5)]
    got = _run(tmp_path, wanted, jobs=2)
    assert sorted(got.counts) == wanted and not got.missing and not got.problems
    starts = sorted((tmp_path / "starts").read_text().splitlines())
    assert starts == ["start t.py::b0 t.py::b2 t.py::b4", "start t.py::b1 t.py::b3"]


def test_each_process_probes_only_the_devices_of_its_own_benchmarks(tmp_path: Path) -> None:
    """``--perf-backends`` (the last given wins) names each process's own devices, a fresh
    process after a crash the rest's; where one benchmark's device is unknown (a
    pytest-benchmark test's interpreter), none is named and nothing is restricted."""
    devices = {"t.py::a": "numpy-cpu", "t.py::crash-segv": "torch-cpu", "t.py::t": "torch-cpu"}
    devices |= {"t.py::b": "numpy-cpu", "t.py::c": "numpy-cpu"}
    wanted = ["t.py::a", "t.py::crash-segv", "t.py::t", "t.py::b", "t.py::c"]
    got = _run(tmp_path, wanted, jobs=2, devices=devices)
    assert sorted(got.counts) == ["t.py::a", "t.py::b", "t.py::c", "t.py::t"]
    lines = sorted((tmp_path / "backends").read_text().splitlines())
    assert lines == [
        "numpy-cpu t.py::a t.py::c",  # numpy's alone: no torch imported there
        "numpy-cpu,torch-cpu t.py::b t.py::crash-segv t.py::t",
        "torch-cpu t.py::t",  # after the crash: torch's alone
    ]
    assert round_launcher.backends_option({"t.py::a": "numpy-cpu"}, ["t.py::a", "t.py::x"]) == []
    assert round_launcher.backends_option(None, ["t.py::a"]) == []


def test_a_crash_beside_costs_only_its_benchmark(tmp_path: Path) -> None:
    """Two processes side by side; one dies on its second benchmark: that benchmark is named,
    its share goes on in a fresh process, the other share is untouched."""
    wanted = ["t.py::a", "t.py::b", "t.py::crash-segv", "t.py::d", "t.py::e", "t.py::f"]
    got = _run(tmp_path, wanted, jobs=2)
    assert sorted(got.counts) == ["t.py::a", "t.py::b", "t.py::d", "t.py::e", "t.py::f"]
    assert list(got.missing) == ["t.py::crash-segv"] and len(got.problems) == 1
    starts = (tmp_path / "starts").read_text().splitlines()
    assert sorted(starts) == [
        "start t.py::a t.py::crash-segv t.py::e",
        "start t.py::b t.py::d t.py::f",
        "start t.py::e",
    ]


def test_each_counted_process_has_its_own_temporary_folder_the_same_for_every_child(
    tmp_path: Path,
) -> None:
    """pytest's numbered temporary folders grew over a long counted run (each benchmark's child
    made the next one), and a suite whose session fixture writes there counted a path that
    changed: the counted process gets one folder of its own, inside its scratch folder, given
    after the run's own --basetemp so that it wins."""
    here = tmp_path / "pass-0-0"
    (option,) = round_launcher.basetemp_option(here)
    assert option == f"--basetemp={here / 'basetemp'}"
    assert round_launcher.basetemp_option(here) == [option]  # the same for every child of it

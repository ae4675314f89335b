"""host/callgrind.py without running valgrind: its command line, version and dump parsing, the
platforms it refuses, and the client requests on a real CPU (they must do nothing)."""

from __future__ import annotations

import platform
import tracemalloc
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_burnperf.host import callgrind


def test_version_of() -> None:
    assert callgrind.version_of("valgrind-3.19.0\n") == "3.19.0"
    assert callgrind.version_of("valgrind-3.22.0.GIT") == "3.22.0"
    assert callgrind.version_of("something else") is None


def test_command_counts_nothing_until_asked_and_simulates_no_cache(tmp_path: Path) -> None:
    cmd = callgrind.command("/usr/bin/valgrind", tmp_path)
    # instructions judge and do not depend on the caches: no simulation, no model
    assert "--cache-sim=no" in cmd and not any(a.startswith(("--I1", "--D1", "--LL")) for a in cmd)
    assert callgrind.cache_text(caches=False) == callgrind.NO_CACHE


def test_command_fixes_the_cache_and_counts_nothing_until_asked(tmp_path: Path) -> None:
    cmd = callgrind.command("/usr/bin/valgrind", tmp_path, caches=True)
    assert "--cache-sim=yes" in cmd
    assert cmd[0] == "/usr/bin/valgrind" and "--tool=callgrind" in cmd
    # nothing instrumented until asked; then every thread collects, taking turns first come
    # first served (the calling thread switches its own collection around each call)
    assert "--instr-atstart=no" in cmd and "--collect-atstart=yes" in cmd
    assert "--fair-sched=yes" in cmd
    assert "--vgdb=no" in cmd  # issue 74: no vgdb-pipe FIFOs left behind by a killed run
    assert "--I1=32768,8,64" in cmd and "--D1=32768,8,64" in cmd and "--LL=8388608,16,64" in cmd
    assert f"--callgrind-out-file={tmp_path / 'callgrind'}.%p" in cmd
    assert callgrind.cache_text() == "I1=32768,8,64 D1=32768,8,64 LL=8388608,16,64"


@pytest.mark.parametrize(
    ("system", "machine", "says"),
    [
        ("Darwin", "arm64", "macOS and Windows have none"),
        ("Windows", "AMD64", "Linux only"),
        ("Linux", "aarch64", "supports x86-64 Linux; this machine is aarch64"),
    ],
)
def test_platforms_without_counting_are_named(system: str, machine: str, says: str) -> None:
    reason = callgrind.unsupported_reason(system, machine)
    assert reason is not None and says in reason and "--perf-measure time" in reason


def test_linux_x86_64_is_supported() -> None:
    assert callgrind.unsupported_reason("Linux", "x86_64") is None


def test_find_valgrind_honours_the_variable(tmp_path: Path) -> None:
    exe = tmp_path / "valgrind"
    exe.write_text("#!/bin/sh\necho valgrind-3.99.1\n", encoding="utf-8")
    exe.chmod(0o755)
    assert callgrind.find_valgrind({callgrind.VALGRIND_ENV: str(exe)}) == str(exe)
    assert callgrind.find_valgrind({callgrind.VALGRIND_ENV: str(tmp_path / "none")}) is None
    assert callgrind.valgrind_version(str(exe)) == "3.99.1"
    bad = tmp_path / "bad"
    bad.write_text("#!/bin/sh\necho hello\n", encoding="utf-8")
    bad.chmod(0o755)
    with pytest.raises(callgrind.CountingUnavailable, match="not a valgrind version"):
        callgrind.valgrind_version(str(bad))


def test_a_bad_valgrind_variable_is_said_as_it_is(tmp_path: Path) -> None:
    """$BURNPERF_VALGRIND naming a bare name finds it on $PATH; a path that does not exist, a
    folder or a file that cannot run is named with its value, never "valgrind not found"."""
    exe = tmp_path / "valgrind"
    exe.write_text("#!/bin/sh\necho valgrind-3.99.1\n", encoding="utf-8")
    exe.chmod(0o755)
    on_path = {callgrind.VALGRIND_ENV: "valgrind", "PATH": str(tmp_path)}
    assert callgrind.find_valgrind(on_path) == str(exe)
    plain = tmp_path / "plain"
    plain.write_text("not a program", encoding="utf-8")
    cases = {
        "nothing-here": "a name that is not an executable on $PATH",
        str(tmp_path / "none"): "a path that does not exist",
        str(tmp_path): "a folder, not the valgrind executable",
        str(plain): "a file that is not executable (chmod +x it)",
    }
    for value, problem in cases.items():
        env = {callgrind.VALGRIND_ENV: value, "PATH": str(tmp_path / "empty")}
        assert callgrind.find_valgrind(env) is None
        text = callgrind.valgrind_problem(env)
        assert text.startswith(f"$BURNPERF_VALGRIND is {value!r}: {problem}"), text
        assert "install" not in text
    assert "install it" in callgrind.valgrind_problem({"PATH": str(tmp_path / "empty")})


@pytest.mark.skipif(
    callgrind.unsupported_reason() is not None, reason="client requests: x86-64 Linux only"
)
def test_requests_do_nothing_on_a_real_cpu(tmp_path: Path) -> None:
    requests = callgrind.Requests(tmp_path)
    assert requests.running() is False
    requests.start()
    requests.zero()
    requests.toggle()
    requests.toggle()
    requests.stop()
    assert list(tmp_path.iterdir()) == []
    assert platform.machine() in ("x86_64", "AMD64")


@pytest.mark.skipif(
    callgrind.unsupported_reason() is not None, reason="client requests: x86-64 Linux only"
)
def test_the_requests_around_a_counted_call_are_fixed_functions_that_allocate_nothing(
    tmp_path: Path,
) -> None:
    """The toggles around a counted call are inside its counts: each is a function of its own,
    the same one every time, that allocates nothing (an argument array made per request moved
    small calls' counts by up to 4%)."""
    requests = callgrind.Requests(tmp_path)
    stubs = {code: requests.fixed(code) for code in callgrind.FIXED_REQUESTS}
    assert len({id(f) for f in stubs.values()}) == len(callgrind.FIXED_REQUESTS)
    assert all(requests.fixed(code) is f for code, f in stubs.items())

    def loop(f: Callable[[], object]) -> int:
        tracemalloc.reset_peak()
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(100):
            f()
        return tracemalloc.get_traced_memory()[1] - before

    # the same requests with each machine-code call swapped for a builtin that allocates
    # nothing (``int()`` is the cached 0): what the Python around the calls takes
    bare = callgrind.Requests(tmp_path)
    bare._fixed = dict.fromkeys(callgrind.FIXED_REQUESTS, int)

    def generic() -> None:
        requests._request(callgrind.TOGGLE_COLLECT)

    for _ in range(20):  # the interpreter settled on each loop before they are traced
        for f in (requests.toggle, requests.zero, bare.toggle, bare.zero, generic):
            loop(f)
    tracemalloc.start()
    try:
        peaks = {f: loop(f) for f in (requests.toggle, requests.zero, bare.toggle, bare.zero)}
        peaks = {f: loop(f) for f in peaks}
        per_request = loop(generic)
    finally:
        tracemalloc.stop()
    # nothing beyond what the Python around them takes
    assert peaks[requests.toggle] <= peaks[bare.toggle]
    assert peaks[requests.zero] <= peaks[bare.zero]
    assert per_request > peaks[bare.toggle]  # the generic request's argument array
    assert list(tmp_path.iterdir()) == []


def _cpu(**regs: tuple[int, int, int, int]) -> dict[tuple[int, int], tuple[int, int, int, int]]:
    """A fake CPUID table: valgrind's simulated Haswell's vendor and brand, one cache leaf."""
    brand = b"Intel(R) Core(TM) i7-4910MQ CPU @ 2.90GHz".ljust(48, b"\0")
    words = [int.from_bytes(brand[i : i + 4], "little") for i in range(0, 48, 4)]
    table = {
        (0, 0): (0xD, *(int.from_bytes(s, "little") for s in (b"Genu", b"ntel", b"ineI"))),
        (1, 0): (0x306C3, 0x02100800, 0x7FFAFBFF, 0xBFEBFBFF),
        (4, 0): (0x1C004121, 0x01C0003F, 0x3F, 0),
        (0x80000000, 0): (0x80000008, 0, 0, 0),
        (0x80000002, 0): tuple(words[0:4]),
        (0x80000003, 0): tuple(words[4:8]),
        (0x80000004, 0): tuple(words[8:12]),
    }
    for name, value in regs.items():
        leaf, _, sub = name.removeprefix("leaf").partition("_")
        table[(int(leaf, 16), int(sub or 0))] = value
    return table  # type: ignore[return-value]


def _signature(table: dict[tuple[int, int], tuple[int, int, int, int]]) -> str:
    return callgrind.cpuid_signature(lambda leaf, sub: table.get((leaf, sub), (0, 0, 0, 0)))


def test_cpuid_signature_names_the_cpu_and_ignores_which_core_read_it() -> None:
    sig = _signature(_cpu())
    assert sig.startswith("GenuineIntel 'Intel(R) Core(TM) i7-4910MQ CPU @ 2.90GHz' 0x306c3 #")
    # another initial APIC ID (leaf 1 ebx bits 24-31) and other core counts in leaf 4: the same
    assert _signature(_cpu(leaf1=(0x306C3, 0x05100800, 0x7FFAFBFF, 0xBFEBFBFF))) == sig
    assert _signature(_cpu(leaf4=(0x3C004121, 0x01C0003F, 0x3F, 0))) == sig
    # RDRAND and RDSEED, the host's bits in valgrind's table, decide no code path: the same
    assert _signature(_cpu(leaf1=(0x306C3, 0x02100800, 0x3FFAFBFF, 0xBFEBFBFF))) == sig
    assert _signature(_cpu(leaf7=(0, 0x427AA, 0, 0))) == _signature(_cpu(leaf7=(0, 0x27AA, 0, 0)))


def test_cpuid_signature_differs_where_libraries_choose_differently() -> None:
    sig = _signature(_cpu())
    # another L1 size (glibc sizes its copy thresholds by the caches), another feature bit
    assert _signature(_cpu(leaf4=(0x1C004121, 0x01C0003F, 0x7F, 0))) != sig
    assert _signature(_cpu(leaf1=(0x306C3, 0x02100800, 0x7FFAFBFE, 0xBFEBFBFF))) != sig
    # leaves above the CPU's highest are not read (a CPU that answers them anyway: the same)
    assert _signature(_cpu(leaf7=(0, 0xFFFF, 0, 0))) != sig
    assert _signature(_cpu(leaf20=(1, 2, 3, 4))) == sig


@pytest.mark.skipif(
    platform.machine().lower() not in ("x86_64", "amd64"), reason="CPUID is x86-64's"
)
def test_cpuid_signature_of_this_cpu_is_steady() -> None:
    sig = callgrind.cpuid_signature()
    if not sig:  # a kernel that refuses executable maps: counting is unavailable there too
        pytest.skip("machine code cannot be mapped executable here")
    assert sig == callgrind.cpuid_signature()
    assert "#" in sig

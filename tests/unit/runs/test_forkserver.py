"""The round server's protocol (forkserver.py) without pytest: when auto forks, the request and
answer files, a real fork per round, and the parent's handle on a server process."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

import pytest

from pytest_burnperf.runs.forkserver import (
    ForkServer,
    can_fork,
    done_fd_path,
    done_path,
    read_request,
    request_path,
    resident_ack_path,
    resident_path,
    serve,
    stop_path,
    write_request,
)

needs_fork = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")


def test_auto_forks_on_linux_for_cpu_devices_of_numpy_torch_and_plain_python_only() -> None:
    # ("python", "cpu"): pytest-benchmark tests (python-cpu); it forked no round before, so each
    # of their rounds paid a fresh interpreter (about 1.5 s a round for a 10 us benchmark)
    cpu = [("numpy", "cpu"), ("torch", "cpu"), ("python", "cpu")]
    assert can_fork(cpu, platform="linux") is hasattr(os, "fork")
    assert not can_fork(cpu, platform="darwin")  # fork without exec is unsafe under macOS libraries
    assert not can_fork(cpu, platform="win32")
    for gpu in [("torch", "cuda"), ("cupy", "cuda"), ("torch", "rocm"), ("torch", "metal")]:
        assert not can_fork([*cpu, gpu], platform="linux")
    # OpenCL through PoCL and Vulkan through lavapipe run on the CPU but keep driver threads
    assert not can_fork([("pyopencl", "opencl")], platform="linux")
    assert not can_fork([("wgpu", "vulkan")], platform="linux")


def test_requests_are_written_whole_and_read_back(tmp_path: Path) -> None:
    write_request(tmp_path, 1, tmp_path / "r1.json", None)
    write_request(tmp_path, 2, tmp_path / "r2.json", {"b", "a"})
    seat = {"address": "\0burnperf-turns-1", "label": "current", "cpu": 1}
    write_request(tmp_path, 3, tmp_path / "r3.json", None, seat)
    assert read_request(request_path(tmp_path, 1)) == (tmp_path / "r1.json", None, None)
    assert read_request(request_path(tmp_path, 2)) == (
        tmp_path / "r2.json",
        frozenset({"a", "b"}),
        None,
    )
    assert read_request(request_path(tmp_path, 3))[2] == seat
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "1.req",
        "2.req",
        "3.req",
    ]  # no temporary left


@needs_fork
def test_serve_forks_one_child_per_round_and_answers_with_its_exit_status(tmp_path: Path) -> None:
    write_request(tmp_path, 1, tmp_path / "r1.json", None)
    write_request(tmp_path, 2, tmp_path / "r2.json", {"t1"})
    write_request(tmp_path, 3, tmp_path / "r3.json", None)
    stop_path(tmp_path).touch()
    me = os.getpid()

    def one_round(out: Path, only: frozenset[str] | None, turns: object) -> None:
        if out.name == "r3.json":
            raise RuntimeError("this round fails")
        # the child is another process, and its work stays there
        out.write_text(f"{os.getpid() != me} {sorted(only) if only else None}")

    served = serve(tmp_path, one_round)
    assert served == 3
    assert (tmp_path / "r1.json").read_text() == "True None"
    assert (tmp_path / "r2.json").read_text() == "True ['t1']"
    assert not (tmp_path / "r3.json").exists()
    assert [done_path(tmp_path, n).read_text() for n in (1, 2, 3)] == ["0", "0", "1"]


def test_a_resident_server_measures_every_round_itself_and_goes_on_after_a_failure(
    tmp_path: Path,
) -> None:
    """--perf-round-start resident: no fork (a GPU's context, an OpenCL or Vulkan driver stay
    usable), every round in the server's own process, state kept between rounds."""
    resident_path(tmp_path).touch()
    for n in (1, 2, 3):
        write_request(tmp_path, n, tmp_path / f"r{n}.json", {"t1"} if n == 2 else None)
    stop_path(tmp_path).touch()
    me = os.getpid()
    seen: list[str] = []

    def one_round(out: Path, only: frozenset[str] | None, turns: object) -> None:
        seen.append(out.name)
        if out.name == "r2.json":
            raise RuntimeError("this round fails")
        out.write_text(f"{os.getpid() == me} {len(seen)}")

    def no_fork() -> int:
        raise AssertionError("a resident server never forks")

    assert serve(tmp_path, one_round, fork=no_fork) == 3
    assert resident_ack_path(tmp_path).exists()  # the parent can tell it was resident
    assert (tmp_path / "r1.json").read_text() == "True 1"
    assert (tmp_path / "r3.json").read_text() == "True 3"  # the failed round did not end it
    assert [done_path(tmp_path, n).read_text() for n in (1, 2, 3)] == ["0", "1", "0"]


def test_serve_ends_when_the_parent_is_gone(tmp_path: Path) -> None:
    naps: list[float] = []
    alive = iter([True, True, False])
    served = serve(
        tmp_path,
        lambda out, only, turns: None,
        parent_alive=lambda: next(alive),
        sleep=naps.append,
    )
    assert served == 0 and len(naps) == 2


SERVER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pytest_burnperf.runs.forkserver import serve

    ctl = Path(next(a for a in sys.argv if a.startswith("--perf-round-process-serve=")).split("=", 1)[1])
    if "die" in sys.argv:
        print("server refused to start")
        raise SystemExit(4)

    def one_round(out, only, turns):
        print("measuring", out.name)
        out.write_text("samples")

    serve(ctl, one_round)
    """
)


@needs_fork
def test_the_parent_handle_runs_rounds_and_closes_the_server(tmp_path: Path) -> None:
    server = ForkServer([sys.executable, "-c", SERVER], cwd=tmp_path, tmp=tmp_path)
    waits: list[int] = []

    def wait(running: object) -> None:
        import time

        while running():  # type: ignore[operator]
            time.sleep(0.01)
        waits.append(1)

    try:
        for n in (1, 2):
            status, output = server.round(tmp_path / f"r{n}.json", None, wait)
            assert status == 0
            assert (tmp_path / f"r{n}.json").read_text() == "samples"
            assert f"measuring r{n}.json" in output
    finally:
        server.close()
    assert server.proc.returncode == 0 and waits == [1, 1]


def test_the_parent_handle_starts_a_resident_server(tmp_path: Path) -> None:
    server = ForkServer([sys.executable, "-c", SERVER], cwd=tmp_path, tmp=tmp_path, resident=True)
    try:
        assert resident_path(server.ctl).exists()
        status, output = server.round(tmp_path / "r1.json", None, lambda running: _wait(running))
        assert status == 0 and "measuring r1.json" in output
        assert server.forked_instead("current") is None
    finally:
        server.close()
    assert server.proc.returncode == 0


def _wait(running: object) -> None:
    import time

    while running():  # type: ignore[operator]
        time.sleep(0.01)


@needs_fork
def test_a_server_that_dies_answers_every_round_with_its_exit_status(tmp_path: Path) -> None:
    server = ForkServer([sys.executable, "-c", SERVER, "die"], cwd=tmp_path, tmp=tmp_path)

    def wait(running: object) -> None:
        while running():  # type: ignore[operator]
            pass

    try:
        status, output = server.round(tmp_path / "r1.json", None, wait)
    finally:
        server.close()
    assert status == 4 and "server refused to start" in output


@needs_fork
def test_a_server_that_predates_resident_rounds_is_told_apart(tmp_path: Path) -> None:
    """A reference environment's older pytest-burnperf ignores the request to stay resident and
    forks its rounds: the parent can say so."""
    old = SERVER.replace("serve(ctl, one_round)", "serve(ctl, one_round); import os")
    old = old.replace(
        "from pytest_burnperf.runs.forkserver import serve",
        "from pytest_burnperf.runs import forkserver\n"
        "forkserver.resident_path = lambda ctl: ctl / 'not-asked'\n"
        "serve = forkserver.serve",
    )
    server = ForkServer([sys.executable, "-c", old], cwd=tmp_path, tmp=tmp_path, resident=True)
    try:
        status, _ = server.round(tmp_path / "r1.json", None, lambda running: _wait(running))
        assert status == 0
        assert "does not serve resident rounds" in (server.forked_instead("main") or "")
    finally:
        server.close()


def test_the_server_writes_a_byte_to_the_parents_pipe_after_each_answer(tmp_path: Path) -> None:
    """The parent waits on a pipe rather than looking for the answer file every 0.5 s; a pipe
    nobody drains never blocks the server (non-blocking writes, dropped when full)."""
    answered, answers = os.pipe()
    try:
        done_fd_path(tmp_path).write_text(str(answers))
        resident_path(tmp_path).touch()  # in this process: no fork needed for the logic
        for n in (1, 2, 3):
            write_request(tmp_path, n, tmp_path / f"r{n}.json", None)
        stop_path(tmp_path).touch()
        assert serve(tmp_path, lambda out, only, turns: None) == 3
        assert os.read(answered, 64) == b"..."
        assert not os.get_blocking(answers)
    finally:
        os.close(answered)
        os.close(answers)
    # no descriptor given (a server started by hand): it answers by its files alone
    plain = tmp_path / "plain"
    plain.mkdir()
    resident_path(plain).touch()
    write_request(plain, 1, plain / "r1.json", None)
    stop_path(plain).touch()
    assert serve(plain, lambda out, only, turns: None) == 1
    assert done_path(plain, 1).read_text() == "0"


@needs_fork
def test_the_parents_wait_ends_when_the_server_answers(tmp_path: Path) -> None:
    """A wait of a minute ends soon after a round that takes no time (far sooner than the
    minute, whatever the machine's load)."""
    import time

    server = ForkServer([sys.executable, "-c", SERVER], cwd=tmp_path, tmp=tmp_path)
    try:
        running = server.start(tmp_path / "r1.json", None)
        started = time.monotonic()
        while running():
            server.wait(60.0)
        assert time.monotonic() - started < 30.0
        assert server.result()[0] == 0
    finally:
        server.close()


@needs_fork
def test_without_posix_descriptors_the_parent_looks_at_the_answer_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where descriptors cannot be passed down (Windows), no pipe is made: the parent's wait
    sleeps its interval and sees the answer file, as before."""
    from pytest_burnperf.runs import forkserver

    monkeypatch.setattr(forkserver, "PASS_FDS", False)
    server = ForkServer([sys.executable, "-c", SERVER], cwd=tmp_path, tmp=tmp_path)
    try:
        assert not done_fd_path(server.ctl).exists()
        running = server.start(tmp_path / "r1.json", None)
        while running():
            server.wait(0.01)
        assert server.result()[0] == 0
    finally:
        server.close()

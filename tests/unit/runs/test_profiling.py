"""The profilers behind --perf-profile (runs/profiling.py): cProfile on plain Python for real,
torch.profiler where torch is installed, and the message where torch has no profiler."""

from __future__ import annotations

import enum
import json
import pstats
import sys
import types
import warnings
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.core.records.profiles import what_grew
from pytest_burnperf.runs import profiling


def test_calls_are_sized_to_the_minimum_time_within_bounds() -> None:
    assert profiling.calls_for(0.01) == 5
    assert profiling.calls_for(1.0) == 1
    assert profiling.calls_for(1e-9) == profiling.MAX_CALLS
    assert profiling.calls_for(float("nan")) == 1


@pytest.mark.parametrize("key", ["test_x[numpy-cpu-f32]", "../../etc/passwd", "a/b\\c\x00d", ""])
def test_a_file_stem_is_never_a_path(key: str) -> None:
    stem = profiling.file_stem(key, "current")
    assert "/" not in stem and "\\" not in stem and "\x00" not in stem and stem
    assert not stem.startswith(".")


def test_file_stems_are_one_per_benchmark_and_side() -> None:
    """Ids that differ only in characters a file name cannot hold, after the readable prefix,
    or in their module, and the two sides of a comparison, each get a file of their own; the
    same benchmark and side get the same name in every run."""
    long = "test_x[" + "a" * 200
    ids = [
        "t.py::test_x[a/b]",
        "t.py::test_x[a b]",
        "t.py::test_x[a$b]",
        "t.py::test_x[a_b]",
        "u.py::test_x[a_b]",
        long + "1]",
        long + "2]",
    ]
    stems = {
        profiling.file_stem(i, side) for i in ids for side in ("main", "current", "a/b", "a b")
    }
    assert len(stems) == len(ids) * 4
    assert profiling.file_stem(ids[0], "current") == profiling.file_stem(ids[0], "current")
    assert profiling.file_stem(ids[0], "current").endswith(".current")
    assert all(len(s) < 150 for s in stems)
    assert profiling.file_stem("t.py::test_x[a/b]", "main").startswith("test_x_a_b-")


def _planted(n: int) -> int:
    return sum(i * i for i in range(n))


def test_cprofile_names_the_function_that_grew(tmp_path: Path) -> None:
    def before() -> None:
        _planted(10)

    def after() -> None:
        _planted(20_000)

    a, path = profiling.profile(
        before, lambda: None, library="numpy", kind="cpu", calls=3, out_dir=tmp_path, stem="b"
    )
    b, _ = profiling.profile(
        after, lambda: None, library="numpy", kind="cpu", calls=3, out_dir=tmp_path, stem="a"
    )
    assert path == tmp_path / "b.pstats" and pstats.Stats(str(path)).total_calls > 0
    assert a.tool == "cProfile" and a.calls == 3
    assert not [e for e in a.entries if "_lsprof" in e.name]  # the profiler's own calls left out
    # 10 against 20,000 iterations: the generator's calls tell them apart deterministically,
    # and its time grows three orders of magnitude beyond any noise
    calls_a = {e.name: e.calls for e in a.entries}
    calls_b = {e.name: e.calls for e in b.entries}
    genexpr = "<genexpr> (test_profiling.py)"
    assert calls_a[genexpr] == pytest.approx(11) and calls_b[genexpr] == pytest.approx(20_001)
    assert genexpr in [g.name for g in what_grew(a, b, top=10)]
    assert not list(tmp_path.glob(".*tmp*"))  # written whole, then renamed


def _setup_work() -> list[int]:
    return [_planted(50) for _ in range(3)]


def test_pedantic_rounds_are_profiled_each_with_its_own_setup_outside(tmp_path: Path) -> None:
    """A pedantic benchmark was profiled for one cold call; now as many rounds as a profile
    needs, each from its setup, with only the call profiled."""
    done: list[str] = []

    def one_round() -> tuple[Any, Any]:
        data = _setup_work()  # the round's setup: never in the profile
        done.append("setup")
        return (lambda: _planted(len(data) * 100)), (lambda: done.append("teardown"))

    summary, path = profiling.profile_rounds(
        one_round, lambda: None, library="python", kind="cpu", calls=4, out_dir=tmp_path, stem="p"
    )
    assert done == ["setup", "teardown"] * 4
    assert summary.tool == "cProfile" and summary.calls == 4 and path.name == "p.pstats"
    names = {e.name: e.calls for e in summary.entries}
    assert names["_planted (test_profiling.py)"] == pytest.approx(1)  # per round
    assert not [n for n in names if "_setup_work" in n]
    assert (tmp_path / profiling.MARK).is_file()


def test_torch_profiler_names_the_operator_that_was_added(tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    x = torch.rand(100_000)

    def chain() -> None:
        torch.sqrt(x * 2 + 1)

    def chain_extra() -> None:
        torch.sqrt(x * 2 + 1) * 1.5

    run = dict(library="torch", kind="cpu", calls=5, out_dir=tmp_path)
    profiling.profile(chain, lambda: None, stem="warm", **run)  # type: ignore[arg-type]
    a, _ = profiling.profile(chain, lambda: None, stem="a", **run)  # type: ignore[arg-type]
    b, path = profiling.profile(chain_extra, lambda: None, stem="b", **run)  # type: ignore[arg-type]
    assert path.name == "b.trace.json" and path.stat().st_size > 0
    # call counts, not times: deterministic however busy the machine is
    calls_a = {e.name: e.calls for e in a.entries}
    calls_b = {e.name: e.calls for e in b.entries}
    assert calls_a["aten::mul"] == pytest.approx(1) and calls_b["aten::mul"] == pytest.approx(2)


def test_torchs_notice_that_a_profile_keeps_one_cycle_is_not_raised(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """torch 2.11 on CUDA warns at the end of every profile that it "clears events at the end of
    each cycle" (seen on an H100): one profile is one cycle here, and a suite that turns warnings
    into errors must not fail its profiled benchmarks for it."""
    notice = (
        "Warning: Profiler clears events at the end of each cycle.Only events from the current "
        "cycle will be reported.To keep events across cycles, set acc_events=True."
    )

    class Averages:
        key, count = "aten::add", 1
        self_cpu_time_total = cpu_time_total = 3.0

    class Profile:
        def __init__(self, activities: list[object]) -> None:
            self.activities = activities

        def __enter__(self) -> Profile:
            return self

        def __exit__(self, *exc: object) -> None:
            import warnings

            warnings.warn(notice, UserWarning, stacklevel=2)

        def key_averages(self) -> list[Averages]:
            import warnings

            warnings.warn(notice, UserWarning, stacklevel=2)
            return [Averages()]

        def export_chrome_trace(self, path: str) -> None:
            Path(path).write_text("{}")

    fake = types.ModuleType("torch.profiler")
    fake.ProfilerActivity = enum.Enum("ProfilerActivity", "CPU CUDA")  # type: ignore[attr-defined]
    fake.profile = Profile  # type: ignore[attr-defined]
    torch = types.ModuleType("torch")
    torch.profiler = fake  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    monkeypatch.setitem(sys.modules, "torch.profiler", fake)
    run = dict(library="torch", kind="cuda", calls=1, out_dir=tmp_path, stem="s")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        summary, path = profiling.profile(lambda: None, lambda: None, **run)  # type: ignore[arg-type]
    assert [e.name for e in summary.entries] == ["aten::add"] and path.is_file()
    with pytest.warns(UserWarning, match="clears events"):  # outside a profile, said as ever
        Profile([]).__exit__()


def test_a_torch_without_its_profiler_is_said_with_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "torch", types.ModuleType("torch"))
    monkeypatch.delitem(sys.modules, "torch.profiler", raising=False)
    with pytest.raises(profiling.ProfilerMissing, match=r"pytest-burnperf\[torch\]"):
        profiling.profile(
            lambda: None,
            lambda: None,
            library="torch",
            kind="cpu",
            calls=1,
            out_dir=tmp_path,
            stem="x",
        )


def test_profiles_never_go_into_a_folder_of_other_files(tmp_path: Path) -> None:
    (tmp_path / "data.csv").write_text("1,2\n")
    with pytest.raises(profiling.ProfileFolderError, match="holds other files"):
        profiling.profile(
            lambda: None,
            lambda: None,
            library="numpy",
            kind="cpu",
            calls=1,
            out_dir=tmp_path,
            stem="x",
        )
    assert [p.name for p in tmp_path.iterdir()] == ["data.csv"]
    new = tmp_path / "new"
    profiling.profile(
        lambda: None, lambda: None, library="numpy", kind="cpu", calls=1, out_dir=new, stem="x"
    )
    assert (new / profiling.MARK).is_file() and (new / "x.pstats").is_file()


class _FakeCupti:
    """CUPTI's activity API as cupti-python binds it: kinds enabled, buffers handed back on a
    flush. The benchmark "launches" by appending records to :attr:`pending`."""

    class ActivityKind(enum.IntEnum):
        MEMCPY = 1
        MEMSET = 2
        CONCURRENT_KERNEL = 10
        RUNTIME = 5

    def __init__(self, refuse: int | None = None) -> None:
        self.enabled: set[int] = set()
        self.pending: list[types.SimpleNamespace] = []
        self.refuse = refuse
        self._completed: Any = None
        self.clock = 1_000_000

    def activity_register_callbacks(self, requested: Any, completed: Any) -> None:
        size, most = requested()
        assert size > 0 and most == 0
        self._completed = completed

    def activity_enable(self, kind: int) -> None:
        if kind == self.refuse:
            raise RuntimeError("CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED")
        self.enabled.add(int(kind))

    def activity_disable(self, kind: int) -> None:
        self.enabled.discard(int(kind))

    def activity_flush_all(self, flag: int) -> None:
        got, self.pending = self.pending, []
        self._completed([r for r in got if r.kind in self.enabled])

    def launch(self, kind: int, ns: int, **fields: Any) -> None:
        if kind in self.enabled:
            self.pending.append(
                types.SimpleNamespace(kind=kind, start=self.clock, end=self.clock + ns, **fields)
            )
        self.clock += ns + 500


def _with_cupti(monkeypatch: pytest.MonkeyPatch, fake: _FakeCupti) -> None:
    package = types.ModuleType("cupti")
    package.cupti = fake  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupti", package)


def test_cupy_on_cuda_is_profiled_per_kernel_with_cupti(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake = _FakeCupti()
    _with_cupti(monkeypatch, fake)
    K = fake.ActivityKind

    def chain(extra: bool) -> None:
        fake.launch(K.MEMCPY, 4_000, copy_kind=1, bytes=1 << 20, stream_id=7, device_id=0)
        fake.launch(K.CONCURRENT_KERNEL, 20_000, name="cupy_multiply__float32", stream_id=7)
        if extra:
            fake.launch(K.CONCURRENT_KERNEL, 18_000, name="cupy_add__float32", stream_id=7)
        fake.launch(K.CONCURRENT_KERNEL, 9_000, name="cupy_sqrt__float32", stream_id=7)
        fake.launch(K.RUNTIME, 1_000, name="cudaLaunchKernel")  # not asked for: left out

    fake.launch(K.CONCURRENT_KERNEL, 5_000, name="before")  # before the window: never seen
    run = dict(library="cupy", kind="cuda", calls=4, out_dir=tmp_path)
    a, _ = profiling.profile(lambda: chain(False), lambda: None, stem="a", **run)  # type: ignore[arg-type]
    b, path = profiling.profile(lambda: chain(True), lambda: None, stem="b", **run)  # type: ignore[arg-type]
    assert a.tool == b.tool == "cupti" and b.calls == 4
    assert not fake.enabled  # recording stopped after the calls
    per_call = {e.name: (e.seconds, e.calls) for e in b.entries}
    assert per_call["cupy_add__float32"] == (pytest.approx(18e-6), pytest.approx(1))
    assert per_call["[memcpy HtoD]"] == (pytest.approx(4e-6), pytest.approx(1))
    assert "cudaLaunchKernel" not in per_call and "before" not in per_call
    assert b.total_s == pytest.approx((4_000 + 20_000 + 18_000 + 9_000) * 1e-9)
    assert what_grew(a, b)[0].name == "cupy_add__float32"
    trace = json.loads(path.read_text())
    assert path.name == "b.trace.json" and len(trace["traceEvents"]) == 4 * 4
    first = trace["traceEvents"][0]
    assert first["ph"] == "X" and first["tid"] == "stream 7" and first["args"] == {"bytes": 1 << 20}
    assert not list(tmp_path.glob(".*tmp*"))


def test_cupti_missing_or_refusing_is_said_and_leaves_nothing_recording(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cupti", None)  # not installed
    run = dict(library="cupy", kind="cuda", calls=1, out_dir=tmp_path, stem="x")
    with pytest.raises(profiling.ProfilerMissing, match=r"cupti-cuda12.*cupti-cuda13"):
        profiling.profile(lambda: None, lambda: None, **run)  # type: ignore[arg-type]
    fake = _FakeCupti(refuse=_FakeCupti.ActivityKind.MEMSET)
    _with_cupti(monkeypatch, fake)
    ran: list[int] = []
    with pytest.raises(profiling.ProfileError, match="MULTIPLE_SUBSCRIBERS"):
        profiling.profile(lambda: ran.append(1), lambda: None, **run)  # type: ignore[arg-type]
    assert not fake.enabled and not ran
    assert not list(tmp_path.glob("x.*"))


def test_cupy_on_rocm_and_numpy_keep_cprofile() -> None:
    assert profiling.profiler_for("cupy", "rocm") == "cProfile"
    assert profiling.profiler_for("cupy", "cuda") == "cupti"
    assert profiling.profiler_for("numpy", "cpu") == "cProfile"
    assert profiling.profiler_for("torch", "cuda") == "torch.profiler"

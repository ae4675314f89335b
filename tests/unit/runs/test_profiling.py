"""The profilers behind --perf-profile (runs/profiling.py): cProfile on plain Python for real,
torch.profiler where torch is installed, and the message where torch has no profiler."""

from __future__ import annotations

import pstats
import sys
import types
from pathlib import Path

import pytest

from pytest_burnperf.core.profiles import what_grew
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

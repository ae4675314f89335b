from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_burnperf.cli import main


def results_file(path: Path, factor: float) -> Path:
    samples = [factor * (1.0 + 0.001 * i) for i in range(20)]
    path.write_text(
        json.dumps(
            {
                "schema": "pytest-burnperf-results",
                "version": 1,
                "results": [{"test": "t.py::test_a", "samples": samples}],
            }
        )
    )
    return path


def test_compare_exit_code_and_message(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    old = results_file(tmp_path / "old.json", 1.0)
    assert main(["compare", str(old), str(results_file(tmp_path / "same.json", 1.0))]) == 0
    # one process a side: between-process noise is not measured, so the default prior applies
    # (+20% is inside its floor: inconclusive) and only a far larger change fails
    assert main(["compare", str(old), str(results_file(tmp_path / "slow.json", 1.2))]) == 0
    assert "inconclusive   +20.0%" in capsys.readouterr().out
    assert main(["compare", str(old), str(results_file(tmp_path / "slower.json", 1.5))]) == 1
    assert "t.py::test_a: 1.01 s -> 1.51 s (+50.0%" in capsys.readouterr().out


def test_compare_bad_files_exit_2_with_the_path(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    assert main(["compare", str(bad), str(bad)]) == 2
    assert f"burnperf compare: {bad}: is not valid JSON" in capsys.readouterr().err
    assert main(["compare", str(tmp_path / "missing.json"), str(bad)]) == 2
    assert "missing.json: does not exist" in capsys.readouterr().err
    other = tmp_path / "other.json"
    other.write_text("[]")
    assert main(["compare", str(other), str(other)]) == 2
    assert "is not a pytest-burnperf --perf-json file" in capsys.readouterr().err
    with pytest.raises(SystemExit) as usage:  # argparse: usage errors exit 2 too
        main(["compare", str(bad)])
    assert usage.value.code == 2


def test_closed_pipe_is_quiet(tmp_path: Path) -> None:
    """`burnperf compare ... | head -c 1` on a long listing: no BrokenPipeError traceback."""
    import subprocess
    import sys

    samples = [1.0 + 0.001 * i for i in range(5)]
    results = [{"test": f"t.py::test_{i}", "samples": samples} for i in range(20000)]
    big = tmp_path / "big.json"
    big.write_text(
        json.dumps({"schema": "pytest-burnperf-results", "version": 1, "results": results})
    )
    script = (
        "import sys; from pytest_burnperf.cli import main; "
        f"sys.exit(main(['compare', {str(big)!r}, {str(big)!r}]))"
    )
    reader = subprocess.Popen(["head", "-c", "1"], stdin=subprocess.PIPE, stdout=subprocess.DEVNULL)
    writer = subprocess.run(
        [sys.executable, "-c", script], stdout=reader.stdin, stderr=subprocess.PIPE, check=False
    )
    assert reader.stdin is not None
    reader.stdin.close()
    reader.wait()
    assert b"Traceback" not in writer.stderr, writer.stderr.decode()[-2000:]
    assert writer.returncode == 0


def test_machines_lists_classes_and_marks_this_host(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_burnperf.host.hardware import hardware_class
    from pytest_burnperf.host.machine import default_machine_id, legacy_machine_id

    def write(
        machine_dir: str,
        machine: dict[str, object],
        entry: dict[str, str] | None = None,
        root: Path = tmp_path,
    ) -> None:
        path = root / machine_dir / "perf_tests" / "test_x.json"
        path.parent.mkdir(parents=True)
        doc = {
            "schema": "pytest-burnperf-baselines",
            "version": 1,
            "machine": machine,
            "benchmarks": {
                "test_a[numpy-cpu-f32]": entry or {},
                "test_b[numpy-cpu-f32]": entry or {},
            },
        }
        path.write_text(json.dumps(doc))

    here = default_machine_id()
    write(here, {"id": here, "hardware_class": hardware_class()})
    # another class: a model no host has (family 25 model 17 is a real AVX-512 EPYC, which
    # this test may run on)
    write(
        "linux-x86-64-amd-epyc-2cpu-x86-64-v4-f25m255",
        {
            "hardware_class": "x86-64-v4-f25m255",
            "cpu_identity": {
                "vendor": "AuthenticAMD",
                "family": "25",
                "model": "255",
                "level": "x86-64-v4",
                "features": ["avx512f"],
                "logical": 2,
            },
        },
    )
    write(legacy_machine_id(), {"id": legacy_machine_id(), "cpu": "AMD EPYC"})
    assert main(["machines", "--baselines", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert f"this host: {here}" in out
    assert f" * {here}: 2 benchmark(s) in 1 file(s); class {hardware_class()}: this host's" in out
    assert "x86-64-v4-f25m255: 2 benchmark(s) in 1 file(s); class x86-64-v4-f25m255: another" in out
    assert "(AVX-512)" in out
    assert (
        f"{legacy_machine_id()}: 2 benchmark(s) in 1 file(s); recorded before the hardware" in out
    )

    assert main(["machines", "--baselines", str(tmp_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [m["this_host"] for m in doc["machines"]].count(True) == 1
    assert main(["machines", "--baselines", str(tmp_path / "none")]) == 0
    assert "no time baselines for this host's class: pytest" in capsys.readouterr().out
    # counts baselines are no class's: said for what they judge, never offered as a machine id
    import platform

    from pytest_burnperf.core.counting.counts_key import store_name

    counts_dir = store_name(platform.system(), platform.machine())
    only = tmp_path / "only-counts"
    write(counts_dir, {"id": here, "hardware_class": hardware_class()}, {"timer": "counts"}, only)
    write("counts-other-arch", {"hardware_class": "x"}, {"timer": "counts"}, only)
    assert main(["machines", "--baselines", str(only)]) == 0
    out = capsys.readouterr().out
    assert f" * {counts_dir}: 2 benchmark(s) in 1 file(s); counts baselines (instructions" in out
    assert "   counts-other-arch: 2 benchmark(s) in 1 file(s); counts baselines" in out
    assert "of another OS or architecture" in out and "--perf-machine" not in out
    assert "no time baselines for this host's class (the counts baselines judge its CPU" in out
    assert main(["machines", "--baselines", str(only), "--json"]) == 0
    assert [m["counts"] for m in json.loads(capsys.readouterr().out)["machines"]] == [True, True]


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_burnperf import __version__

    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"burnperf {__version__}"


def test_an_html_report_without_plotly_is_a_usage_error_naming_the_extra(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "plotly", None)  # as if not installed: import fails
    res = results_file(tmp_path / "r.json", 1.0)
    out = tmp_path / "r.html"
    assert main(["report", str(res), "-o", str(out)]) == 2  # usage/input, not "regressed" (1)
    err = capsys.readouterr().err
    assert err.startswith("burnperf report: the HTML report needs plotly")
    assert "pip install 'pytest-burnperf[report]'" in err and "Traceback" not in err
    assert not out.exists()


def test_github_publishes_even_a_run_whose_results_are_corrupt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``burnperf github`` never fails the job itself (the action's last step does, with
    pytest's code): a corrupt results file is named in the comment and the summary, untouched."""
    for name in ("GITHUB_OUTPUT", "GITHUB_EVENT_NAME"):
        monkeypatch.delenv(name, raising=False)
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    bad = tmp_path / "r.json"
    bad.write_text('{"schema": "pytest-burnperf-results", "version": 1, "results": 3}')
    (tmp_path / "out.txt").write_text("ran\nFAILED something\n")
    comment = tmp_path / "c.md"
    code = main(
        ["github", "--results", str(bad), "--exit-code", "1", "--output-file",
         str(tmp_path / "out.txt"), "--comment-file", str(comment)]
    )  # fmt: skip
    assert code == 0
    out = capsys.readouterr().out
    assert "total=0" in out and "comment=false" in out and "results-path=\n" in out
    text = comment.read_text()
    assert "No results to show" in text and "results: must be a list" in text
    assert "FAILED something" in text and "results: must be a list" in summary.read_text()
    assert bad.read_text().endswith('"results": 3}')


@pytest.mark.parametrize(
    ("fullname", "problem"),
    [
        ("../../../../elsewhere/evil.py::test_a", "'..' part"),
        ("tests/../../outside.py::t", "'..' part"),
        ("::test_a", "is empty"),
        ("/abs/t.py::test_a", "absolute path"),
    ],
)
def test_import_refuses_a_fullname_that_leads_outside_the_project(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fullname: str, problem: str
) -> None:
    project = tmp_path / "deep" / "er" / "project"
    project.mkdir(parents=True)
    saved = project / "run.json"
    bench = {
        "fullname": fullname,
        "name": "test_a",
        "stats": {"data": [1e-3, 1.1e-3], "iterations": 1},
    }
    saved.write_text(json.dumps({"machine_info": {}, "benchmarks": [bench]}))
    before = sorted(p for p in tmp_path.rglob("*"))
    code = main(["import-pytest-benchmark", str(saved), "--baselines", str(project / "baselines")])
    assert code == 2
    err = capsys.readouterr().err
    assert "benchmarks[0].fullname" in err and problem in err and "Traceback" not in err
    assert sorted(p for p in tmp_path.rglob("*")) == before  # nothing written anywhere


def test_import_refuses_a_duplicate_fullname(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bench = {"fullname": "t.py::test_a", "name": "test_a", "stats": {"data": [1e-3, 1.1e-3]}}
    saved = tmp_path / "run.json"
    saved.write_text(json.dumps({"machine_info": {}, "benchmarks": [bench, bench]}))
    assert main(["import-pytest-benchmark", str(saved), "--baselines", str(tmp_path / "b")]) == 2
    assert "benchmarks[1].fullname: 't.py::test_a' appears twice (also benchmarks[0])" in (
        capsys.readouterr().err
    )
    assert not (tmp_path / "b").exists()


def test_github_refuses_to_overwrite_what_it_did_not_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """issue 42: --comment-file overwrote any file, the results file included; unwritable
    $GITHUB_OUTPUT / $GITHUB_STEP_SUMMARY and odd event payloads gave tracebacks."""
    for name in ("GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY", "GITHUB_EVENT_NAME"):
        monkeypatch.delenv(name, raising=False)
    results = tmp_path / "r.json"
    results.write_text('{"schema": "pytest-burnperf-results", "version": 1, "results": []}')
    before = results.read_text()
    base = ["github", "--results", str(results), "--exit-code", "0"]
    assert main([*base, "--comment-file", str(results)]) == 2
    assert "--comment-file " in capsys.readouterr().err and results.read_text() == before
    mine = tmp_path / "notes.md"
    mine.write_text("my notes\n")
    assert main([*base, "--comment-file", str(mine)]) == 2
    assert "was not written by pytest-burnperf" in capsys.readouterr().err
    assert mine.read_text() == "my notes\n"
    comment = tmp_path / "c.md"
    assert main([*base, "--comment-file", str(comment)]) == 0
    assert main([*base, "--comment-file", str(comment)]) == 0  # its own comment: replaced
    capsys.readouterr()
    # $GITHUB_OUTPUT a folder, in a missing folder; $GITHUB_STEP_SUMMARY a folder
    for where in (tmp_path, tmp_path / "no" / "out"):
        monkeypatch.setenv("GITHUB_OUTPUT", str(where))
        assert main(base) == 2
        err = capsys.readouterr().err
        assert f"$GITHUB_OUTPUT {where}: cannot append to it: " in err and "Traceback" not in err
    monkeypatch.delenv("GITHUB_OUTPUT")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(tmp_path))
    assert main(base) == 2
    assert f"$GITHUB_STEP_SUMMARY {tmp_path}: cannot append" in capsys.readouterr().err
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")
    # an event payload whose pull_request is not an object: no pull request, no traceback
    event = tmp_path / "event.json"
    monkeypatch.setenv("GITHUB_EVENT_NAME", "pull_request")
    monkeypatch.setenv("GITHUB_EVENT_PATH", str(event))
    for payload in ('{"pull_request": "x"}', '{"pull_request": {"head": 3}}', "[1, 2]"):
        event.write_text(payload)
        assert main(base) == 0
        assert "comment-why=the event names no pull request head" in capsys.readouterr().out
    # --limit below what the fixed text needs
    with pytest.raises(SystemExit):
        main([*base, "--limit", "10"])
    assert "--limit: must be at least 2000" in capsys.readouterr().err


def memory_file(path: Path, peak: int, *, key: str = "2.1.0", tracked: bool = True) -> Path:
    """A results file whose one benchmark's memory per call was tracked (peak = bytes)."""
    results_file(path, 1.0)
    doc = json.loads(path.read_text())
    doc["results"][0]["memory"] = {
        "status": "no-baseline",
        "figures": {"allocated_bytes": peak, "allocations": 2, "peak_bytes": peak}
        if tracked
        else None,
        "key": {"meter": "memray", "versions": {"numpy": key}},
        "sites": {"add (t.py:9) [c = a + b]": peak},
        "reason": "" if tracked else "its calls allocate differently (peak 1 MiB / 2 MiB)",
        "max_memory_bytes": None,
    }
    doc["machine"] = {"hardware_class": "x86-64-v3-f23m49"}
    doc["created"] = f"2026-11-29T10:{peak % 60:02d}:00+00:00"
    path.write_text(json.dumps(doc))
    return path


def test_compare_judges_memory_per_call_beside_the_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The time is the same; the memory per call doubled: exit 1, the growth and where it was
    allocated said; the same figures pass; what cannot be compared is counted, not failed."""
    mib = 1 << 20
    old = memory_file(tmp_path / "old.json", 8 * mib)
    assert main(["compare", str(old), str(memory_file(tmp_path / "same.json", 8 * mib))]) == 0
    out = capsys.readouterr().out
    assert "memory per call: 1 unchanged" in out and "memory regressed" not in out
    assert main(["compare", str(old), str(memory_file(tmp_path / "big.json", 16 * mib))]) == 1
    out = capsys.readouterr().out
    assert out.startswith("inconclusive    +0.0%")  # the time passed (one process a side)
    assert "t.py::test_a: memory regressed: peak +8.0 MiB (+100.0%)" in out
    assert "memory per call: 1 regressed" in out
    # a growth under the threshold given is no change; a memory key of another numpy is not compared
    assert main(["compare", "--threshold", "150%", str(old), str(tmp_path / "big.json")]) == 0
    other = memory_file(tmp_path / "other.json", 16 * mib, key="2.2.0")
    assert main(["compare", str(old), str(other)]) == 0
    assert "1 memory baseline of another key" in capsys.readouterr().out
    varied = memory_file(tmp_path / "varied.json", 16 * mib, tracked=False)
    assert main(["compare", str(old), str(varied)]) == 0
    assert "memory per call: 1 calls vary" in capsys.readouterr().out
    assert main(["compare", str(results_file(tmp_path / "none.json", 1.0)), str(other)]) == 0
    assert "1 no memory baseline" in capsys.readouterr().out


def test_compare_names_a_memory_figure_that_is_not_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = memory_file(tmp_path / "bad.json", 1 << 20)
    doc = json.loads(bad.read_text())
    doc["results"][0]["memory"]["figures"]["peak_bytes"] = -5
    bad.write_text(json.dumps(doc))
    assert main(["compare", str(bad), str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}: results[0].memory.figures: peak_bytes must be a whole number" in err


def test_compare_history_judges_memory_against_the_newest_stored_run_that_tracked_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("ruptures")
    mib = 1 << 20
    store = ["--store", str(tmp_path / "h.sqlite")]
    for i, peak in enumerate((4 * mib, 8 * mib)):
        f = memory_file(tmp_path / f"run{i}.json", peak + i)
        assert main(["import-results", *store, str(f)]) == 0
    capsys.readouterr()
    now = memory_file(tmp_path / "now.json", 8 * mib + 2)  # not run1 itself (8 MiB + 1)
    assert main(["compare-history", *store, str(now)]) == 0
    out = capsys.readouterr().out
    assert (
        "memory per call: 1 unchanged (each against the newest stored run that tracked it)" in out
    )
    grown = memory_file(tmp_path / "grown.json", 12 * mib)
    assert main(["compare-history", *store, str(grown)]) == 1
    out = capsys.readouterr().out
    assert "t.py::test_a: memory regressed: peak +4.0 MiB (+50.0%)" in out
    assert "grew at add (t.py:9) [c = a + b] +4.0 MiB" in out


def test_compare_history_of_a_stored_run_leaves_the_run_itself_out(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run recorded in the store (--perf-store) and then judged by compare-history is no
    baseline of its own: its memory is judged against the run before, not itself, and its
    rounds do not count as stored runs; the newest ``--last`` others are the baseline."""
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("ruptures")
    mib = 1 << 20
    store = ["--store", str(tmp_path / "h.sqlite")]
    before = memory_file(tmp_path / "before.json", 4 * mib)
    grown = memory_file(tmp_path / "grown.json", 12 * mib)
    for f in (before, grown):
        assert main(["import-results", *store, str(f)]) == 0
    capsys.readouterr()
    assert main(["compare-history", *store, str(grown)]) == 1
    out = capsys.readouterr().out
    assert f"{grown} is stored itself: judged against the other stored runs" in out
    assert "(1 stored runs)" in out
    assert "t.py::test_a: memory regressed: peak +8.0 MiB (+200.0%)" in out
    # --last 1 is the newest run other than itself
    assert main(["compare-history", *store, "--last", "1", str(grown)]) == 1
    assert "(1 stored runs)" in capsys.readouterr().out
    # a run not stored says nothing of it
    other = memory_file(tmp_path / "other.json", 4 * mib + 7)
    assert main(["compare-history", *store, str(other)]) == 0
    assert "is stored itself" not in capsys.readouterr().out


def _counts_key() -> dict[str, object]:
    from pytest_burnperf.core.counting.counts_key import KEY_FIELDS

    return {name: f"{name} here" for name in KEY_FIELDS}


COUNTS_KEY = _counts_key()


def counted_file(path: Path, factor: float, *, numpy: str = "2.4.6") -> Path:
    """A results file whose one benchmark was counted (instructions per counted call)."""
    calls = [factor * 1_000_000 + i for i in range(8)]
    path.write_text(
        json.dumps(
            {
                "schema": "pytest-burnperf-results",
                "version": 1,
                "results": [
                    {
                        "test": "t.py::test_a",
                        "timer": "counts",
                        "samples": calls,
                        "runs": [calls],
                        "counts": {
                            "instructions": calls,
                            "interpreter": 0.1,
                            "key": {**COUNTS_KEY, "libraries": {"numpy": numpy}},
                        },
                    }
                ],
            }
        )
    )
    return path


def test_compare_judges_counted_results_by_the_counts_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Counts are judged as the run judged them (their minimum effect, no between-process
    prior): the same counts are unchanged, +5% regressed; another key or a timed side is said."""
    old = counted_file(tmp_path / "old.json", 1.0)
    assert main(["compare", str(old), str(counted_file(tmp_path / "same.json", 1.0))]) == 0
    assert capsys.readouterr().out.startswith("unchanged      +0.00% 1.00 M instr")
    assert main(["compare", str(old), str(counted_file(tmp_path / "more.json", 1.05))]) == 1
    out = capsys.readouterr().out
    assert out.startswith("regressed      +5.00%")
    assert "t.py::test_a: instructions per call 1.00 M -> 1.05 M (+5.00%" in out
    other = counted_file(tmp_path / "other.json", 1.05, numpy="2.5.0")
    assert main(["compare", str(old), str(other)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("incomparable")
    assert "  counts baseline recorded with numpy 2.4.6, this run has 2.5.0" in out
    timed = results_file(tmp_path / "timed.json", 1.0)
    assert main(["compare", str(timed), str(old)]) == 0
    out = capsys.readouterr().out
    assert f"  {timed} timed it, {old} counted it" in out
    # each file's median in its own unit
    assert "  1.01 s -> 1.00 M instr  t.py::test_a" in out
    assert main(["compare", str(old), str(timed)]) == 0  # seconds against instructions: never
    out = capsys.readouterr().out
    assert f"  {old} counted it, {timed} timed it" in out
    assert "1.00 M instr ->     1.01 s  t.py::test_a" in out
    bad = counted_file(tmp_path / "bad.json", 1.0)
    doc = json.loads(bad.read_text())
    doc["results"][0]["counts"]["key"] = "numpy"
    bad.write_text(json.dumps(doc))
    assert main(["compare", str(old), str(bad)]) == 2
    assert "results[0].counts.key: must be an object" in capsys.readouterr().err


def test_compare_pairs_counted_calls_by_their_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Calls drawn afresh (8% apart) whose files say each call's place are judged call by call
    (core/counting/paired_counts.py): +2% on every call is regressed; without the places the
    same files leave it open; places that are not whole numbers are refused, named."""
    drawn = [6_700_000 * (1 + 0.04 * ((7 * i) % 9 - 4) / 4) for i in range(7)]
    places = [12, 13, 15, 16, 17, 18, 19]

    def write(name: str, factor: float, positions: object) -> Path:
        path = counted_file(tmp_path / name, 1.0)
        doc = json.loads(path.read_text())
        calls = [round(v * factor) for v in drawn]
        result = doc["results"][0]
        result["samples"], result["runs"] = calls, [calls]
        result["counts"].update(instructions=calls, interpreter=0.0, positions=positions)
        path.write_text(json.dumps(doc))
        return path

    old = write("old.json", 1.0, places)
    assert main(["compare", str(old), str(write("same.json", 1.0, places))]) == 0
    assert capsys.readouterr().out.startswith("unchanged      +0.00%")
    assert main(["compare", str(old), str(write("more.json", 1.02, places))]) == 1
    out = capsys.readouterr().out
    assert out.startswith("regressed      +2.00%")
    said = " ".join(out.split())  # the line as wrapped, joined
    assert "(+2.00% the median call against the baseline's call at the same place, every" in said
    assert main(["compare", str(write("o.json", 1.0, None)), str(write("n.json", 1.02, None))]) == 0
    assert capsys.readouterr().out.startswith("inconclusive")
    assert main(["compare", str(old), str(write("bad.json", 1.0, [12, "x"]))]) == 2
    assert "results[0].counts.positions[1]: must be a whole number" in capsys.readouterr().err


def stored_run(path: Path, day: str) -> dict[str, Any]:
    """The results file at ``path`` as a run of one hardware class, created on ``day`` at a
    second set by the file's name (so each run of a test is another run)."""
    doc: dict[str, Any] = json.loads(path.read_text())
    doc["machine"] = {"hardware_class": "x86-64-v3-f23m49"}
    doc["created"] = f"{day}T10:00:{len(path.name):02d}+00:00"
    return doc


def test_compare_history_pairs_the_stored_calls_by_their_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Calls drawn afresh (8% apart), stored with their places by import-results: a run with
    +2% on every call fails compare-history call by call, its line saying so."""
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("ruptures")
    store = ["--store", str(tmp_path / "h.sqlite")]
    drawn = [6_700_000 * (1 + 0.04 * ((7 * i) % 9 - 4) / 4) for i in range(7)]

    def run(name: str, factor: float) -> Path:
        path = counted_file(tmp_path / name, 1.0)
        doc = stored_run(path, "2026-12-02")
        calls = [round(v * factor) for v in drawn]
        result = doc["results"][0]
        result["samples"], result["runs"] = calls, [calls]
        places = [12, 13, 15, 16, 17, 18, 19]
        result["counts"].update(instructions=calls, interpreter=0.0, positions=places)
        path.write_text(json.dumps(doc))
        return path

    for name in ("a.json", "bb.json"):
        assert main(["import-results", *store, str(run(name, 1.0))]) == 0
    capsys.readouterr()
    assert main(["compare-history", *store, str(run("now.json", 1.0))]) == 0
    assert capsys.readouterr().out.startswith("unchanged      +0.00%")
    assert main(["compare-history", *store, str(run("more.json", 1.02))]) == 1
    said = " ".join(capsys.readouterr().out.split())
    assert said.startswith("regressed +2.00%"), said
    assert "(+2.00% the median call against the baseline's call at the same place, every" in said


def test_compare_history_judges_counted_results_by_the_counts_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("sqlalchemy")
    pytest.importorskip("ruptures")
    store = ["--store", str(tmp_path / "h.sqlite")]

    def run(name: str, factor: float) -> Path:
        path = counted_file(tmp_path / name, factor)
        path.write_text(json.dumps(stored_run(path, "2026-11-29")))
        return path

    for name in ("a.json", "bb.json"):
        assert main(["import-results", *store, str(run(name, 1.0))]) == 0
    capsys.readouterr()
    assert main(["compare-history", *store, str(run("now.json", 1.0))]) == 0
    out = capsys.readouterr().out
    assert out.startswith("unchanged      +0.00% 1.00 M instr -> 1.00 M instr  t.py::test_a")
    assert "(2 stored runs)" in out
    assert main(["compare-history", *store, str(run("more.json", 1.05))]) == 1
    assert "t.py::test_a: instructions per call 1.00 M -> 1.05 M (+5.00%" in capsys.readouterr().out

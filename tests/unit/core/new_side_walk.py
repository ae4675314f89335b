"""Run by test_a_new_side.py in a fresh interpreter: registers the example's energy side in one
line (what a contributor adds to core/sides/side_registry.py) before any module that carries
the sides is imported, then follows one benchmark's energy verdict through every layer that
carries a side, and prints what each layer made of it as one JSON document. Argument: a new
folder to write the store, the site and the results files into."""

from __future__ import annotations

import contextlib
import io
import json
import re
import sys
import types
from pathlib import Path

HERE = Path(__file__).resolve().parent
work = Path(sys.argv[1])
out: dict[str, object] = {}

import pytest_burnperf  # noqa: E402
from pytest_burnperf.core.sides import side_registry  # noqa: E402

# the modules that carry the sides (they import the registry) are not loaded yet, so each
# reads the registry with the new side in it, as it would with the line in the registry
src = Path(pytest_burnperf.__file__).parent
carriers = sorted(
    "pytest_burnperf." + ".".join(p.relative_to(src).with_suffix("").parts)
    for p in src.rglob("*.py")
    if re.search(r"side_registry import", p.read_text(encoding="utf-8"))
    and p.name != "side_registry.py"
)
out["carriers"] = carriers
out["carriers_loaded_before"] = [m for m in carriers if m in sys.modules]

sys.path.insert(0, str(HERE))
import energy_side_example as example  # noqa: E402

side_registry.SIDES = (*side_registry.SIDES, example.ENERGY)  # the one registration line

from pytest_burnperf import cli  # noqa: E402
from pytest_burnperf.core.judging.outcome import outcome  # noqa: E402
from pytest_burnperf.core.judging.verdict import UNCHANGED, Verdict  # noqa: E402
from pytest_burnperf.core.options.shards import selection_id  # noqa: E402
from pytest_burnperf.core.records.results import Result  # noqa: E402
from pytest_burnperf.core.records.stored_baseline import StoredBaseline  # noqa: E402
from pytest_burnperf.plugin.measuring.side_processes import attach_tracked  # noqa: E402
from pytest_burnperf.report import (  # noqa: E402
    csv,
    github,
    html,
    markdown,
    merge,
    run_header,
    site,
    terminal,
)
from pytest_burnperf.report.results_json import json_document  # noqa: E402
from pytest_burnperf.runs.tracked_sides import Tracked, read_tracked  # noqa: E402
from pytest_burnperf.storage.baselines import check_entry  # noqa: E402
from pytest_burnperf.storage.history.query import series, text  # noqa: E402
from pytest_burnperf.storage.history.store import Store  # noqa: E402
from pytest_burnperf.storage.jsonfile import Fields, FileFormatError  # noqa: E402

sys.path.insert(0, str(HERE.parents[2]))  # the repository: tests/unit/_results.py
from tests.unit._results import NODE, numpy_result  # noqa: E402


def result(sides: dict[str, object]) -> Result:
    return numpy_result(Verdict(UNCHANGED, 3e-3, ratio=1.0), sides=sides)


def document(r: Result, hour: int) -> dict[str, object]:
    return json_document(
        [r],
        machine={"id": "m", "hardware_class": "hw"},
        created=f"2026-11-30T{hour:02d}:00:00+00:00",
        git={"commit": f"{hour:040x}", "branch": "main", "dirty": False},
        settings={},
    )


before, now = (
    result({"energy": example.judge(1.0, None)}),
    result({"energy": example.judge(2.0, 1.0)}),
)
regressed = now.sides["energy"]

# the result, its JSON and the baseline entry it records
out["result_json"] = now.as_json().get("energy")
entry = now.baseline_entry({"date": "2026-11-30"})
out["kept"] = entry.get("energy")
# the baseline file's check, the stored baseline read back
out["stored_baseline"] = StoredBaseline.from_entry(
    check_entry(Fields(Path("b.json")), "t", entry)
).sides
try:
    check_entry(Fields(Path("b.json")), "t", {**entry, "energy": {"joules": -1}})
    out["bad_kept"] = None
except FileFormatError as exc:
    out["bad_kept"] = str(exc)
# the one outcome rule, and recording, which accepts it
got = outcome(Verdict(UNCHANGED, 1.0), test_id="t[x]", strict=False, records=False,
              regression=lambda: "slower", sides={"energy": regressed})  # fmt: skip
out["outcome"] = [got.fails, got.message]
out["recording_fails"] = outcome(
    Verdict(UNCHANGED, 1.0), test_id="t[x]", strict=False, records=True,
    regression=lambda: "slower", sides={"energy": regressed},
).fails  # fmt: skip

# the reports of a run
doc = document(now, 2)
out["side_lines"] = run_header.side_lines([now])
out["terminal"] = [line for line, _ in terminal.table_rows([now])]
out["github_energy_regressed"] = github.counts(doc).get("energy-regressed")
out["markdown"] = markdown.render(doc)
out["html_results_column"] = "energy/call" in html.render(doc)
out["csv"] = csv.results_csv(doc).splitlines()
# a one-shard run merged (burnperf merge): its verdict and JUnit file
one = {"index": 1, "count": 1, "comparisons": 1, "selection": selection_id([NODE])}
shard = {**doc, "settings": {"shard": one}}
merged, _ = merge.merge([("shard1.json", shard)])
out["merged_verdict"] = list(merge.verdict(merged))
out["merged_junit"] = merge.junit(merged)

# the results store and its views
url = f"sqlite:///{work / 'runs.sqlite'}"
with Store(url) as store:
    store.record(document(before, 1))
    store.record(doc)
    points = store.points()
    whole = store.points(with_sides=True)
out["stored_figures"] = [p.get("energy_millijoules") for p in points]
out["stored_records"] = [p.get("energy") for p in whole]
shown = series(points)
out["history_text"] = text(shown)
out["history_csv"] = csv.history_csv(points).splitlines()
out["history_html_chart"] = "energy per call: test_k" in html.render(history=shown)
site.publish(shown, work / "site")
index = (work / "site" / "index.html").read_text(encoding="utf-8")
out["site_index"] = ["latest energy/call" in index, "2000 mJ" in index]

# a same-session comparison: a tracking process's file read back by each side, the
# candidate's energy judged against the reference's beside the verdict
(work / "tracked.json").write_text(
    json.dumps({NODE: {"energy": {"joules": 2.0}, "memory_error": "not tracked on opencl-x"}})
)
found, _ = read_tracked(work / "tracked.json")
out["tracked_read"] = [found[NODE].records, found[NODE].gaps]
state = types.SimpleNamespace(
    run=types.SimpleNamespace(
        plan=types.SimpleNamespace(reference="main", candidate="current"), memory=True
    ),
    findings=types.SimpleNamespace(
        measured=types.SimpleNamespace(
            tracked={"main": {NODE: Tracked({"energy": 1.0})}, "current": found},
            tracked_gaps={},
        )
    ),
)
compared = attach_tracked(state, result({}), None)  # type: ignore[arg-type]
out["compared"] = {name: v.as_json() for name, v in compared.sides.items()}

# burnperf compare and compare-history judge the recorded energy again
(work / "old.json").write_text(json.dumps(document(before, 1)))
(work / "new.json").write_text(json.dumps(doc))
earlier = f"sqlite:///{work / 'earlier.sqlite'}"
with Store(earlier) as store:
    store.record(document(before, 1))
for name, argv in (
    ("compare", ["compare", str(work / "old.json"), str(work / "new.json")]),
    ("compare_history", ["compare-history", str(work / "new.json"), "--store", earlier]),
):
    said = io.StringIO()
    with contextlib.redirect_stdout(said), contextlib.redirect_stderr(said):
        rc = cli.main(argv)
    out[name] = [rc, said.getvalue()]

print(json.dumps(out))

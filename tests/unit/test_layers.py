"""The package's layers (docs/architecture.md): imports point down only, only ``plugin/`` imports
pytest, the ``burnperf`` command never imports the plugin, and no two modules import each other
in a circle. Read from the source with ``ast``, so a new violation fails here, in ``nox -s tests``
and ``nox -s lint``, whichever runs first."""

from __future__ import annotations

import ast
import io
import tokenize
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "src" / "pytest_burnperf"

#: Each part of the package and the parts it may import (besides itself).
MAY_IMPORT: dict[str, frozenset[str]] = {
    "_version": frozenset(),
    # reading JSON fields with their types checked: a leaf every part may use
    "json_fields": frozenset(),
    "host": frozenset({"json_fields", "_version"}),
    "core": frozenset({"json_fields", "_version", "host"}),
    "devices": frozenset({"json_fields", "host", "core"}),
    "storage": frozenset({"json_fields", "host", "core"}),
    "runs": frozenset({"json_fields", "host", "core", "devices", "storage"}),
    "report": frozenset({"json_fields", "_version", "host", "core", "storage"}),
    "instruments": frozenset({"json_fields", "host", "core", "devices", "storage", "runs"}),
    "plugin": frozenset(
        {"json_fields", "host", "core", "devices", "storage", "runs", "instruments", "report"}
    ),
    "cli": frozenset(
        {"json_fields", "_version", "host", "core", "devices", "storage", "runs", "report"}
    ),
    # the public API, and the deprecated module that re-exports its roofline helpers
    "__init__": frozenset({"_version", "core", "devices"}),
    "roofline": frozenset({"core"}),
}


def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _part(module: str) -> str:
    pieces = module.split(".")
    return pieces[1] if len(pieces) > 1 else "__init__"


def _imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module or ``module.name``, line, at module level) for every import of ours."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    top = {id(n) for n in tree.body} | {
        id(sub) for n in tree.body if isinstance(n, ast.If) for sub in ast.walk(n)
    }
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}:{node.lineno}: relative import; write it absolute")
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pytest_burnperf"):
            for alias in node.names:
                out.append((f"{node.module}.{alias.name}", node.lineno, id(node) in top))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pytest_burnperf"):
                    out.append((alias.name, node.lineno, id(node) in top))
    return out


def _imported(node: ast.AST) -> list[str]:
    """The modules an import statement names (none for any other node)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom):
        return [node.module or ""]
    return []


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _resolve(target: str, modules: dict[str, Path]) -> str:
    """``pytest_burnperf.core.judging.stats.summarize`` -> ``pytest_burnperf.core.judging.stats``."""
    while target not in modules and "." in target:
        target = target.rsplit(".", 1)[0]
    return target


def test_every_part_is_known() -> None:
    parts = {_part(m) for m in _modules()}
    assert parts <= set(MAY_IMPORT), f"parts without a layer: {sorted(parts - set(MAY_IMPORT))}"


def test_imports_point_down_only() -> None:
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        here = _part(name)
        for target, line, _ in _imports(path):
            there = _part(_resolve(target, modules))
            if there != here and there not in MAY_IMPORT[here]:
                wrong.append(f"{path.relative_to(PACKAGE)}:{line}: {here} imports {there}")
    assert not wrong, "imports against the layers (docs/architecture.md):\n" + "\n".join(wrong)


@pytest.mark.parametrize("library", ["pytest", "_pytest", "pluggy"])
def test_only_the_plugin_imports_pytest(library: str) -> None:
    wrong = []
    for name, path in _modules().items():
        if _part(name) == "plugin":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = _imported(node)
            if any(n == library or n.startswith(library + ".") for n in names):
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not wrong, f"{library} imported outside plugin/: {wrong}"


#: The longest a module may grow: past it, it holds more than one concern (docs/architecture.md).
MAX_MODULE_LINES = 500


def test_no_module_is_longer_than_the_limit() -> None:
    long = {
        str(path.relative_to(PACKAGE)): n
        for path in _modules().values()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert not long, f"modules over {MAX_MODULE_LINES} lines (split them by concern): {long}"


#: The most ``Any`` a thousand lines of the package may hold: data crosses the layers typed
#: (JSON documents as ``object``, read through ``json_fields``; the libraries' own types), and
#: ``Any`` is left where a value is truly any library's (an array through the Device protocol).
MAX_ANY_PER_1000_LINES = 10


def _any_names(source: str) -> int:
    """The ``Any`` names in ``source`` (not in its comments or strings)."""
    tokens = tokenize.generate_tokens(io.StringIO(source).readline)
    return sum(1 for t in tokens if t.type == tokenize.NAME and t.string == "Any")


def test_any_is_rare() -> None:
    texts = [path.read_text(encoding="utf-8") for path in _modules().values()]
    lines = sum(len(t.splitlines()) for t in texts)
    found = sum(_any_names(t) for t in texts)
    assert 1000 * found / lines <= MAX_ANY_PER_1000_LINES, (
        f"{found} Any in {lines} lines of src/ ({1000 * found / lines:.1f} per 1,000, the most "
        f"is {MAX_ANY_PER_1000_LINES}): give the value its type, or object and a check"
    )


def test_the_any_count_skips_comments_and_strings() -> None:
    assert _any_names('from typing import Any\nx: Any = "Any"  # Any\n') == 2


#: The most modules one folder of src/ may hold: past it, a newcomer cannot see its rooms.
MAX_FOLDER = 12


def test_no_folder_holds_more_than_the_limit() -> None:
    folders: dict[str, int] = defaultdict(int)
    for path in _modules().values():
        if path.name != "__init__.py":
            folders[str(path.relative_to(PACKAGE).parent)] += 1
    assert len(folders) > 10 and all(n > 0 for n in folders.values())
    crowded = {f: n for f, n in folders.items() if n > MAX_FOLDER}
    assert not crowded, f"folders of src/ over {MAX_FOLDER} modules: {crowded}"


#: The plugin's own rooms, lowest first: each may import the rooms below it, never one above.
#: ``session`` holds the run's state and configuration types; ``measuring`` the fixtures;
#: ``rounds`` and ``output`` what the session the user started (or a round process) does around
#: them; ``configuration`` builds the run and registers its mode's objects; the modules in
#: plugin/ itself (``hooks.py``, ``collection.py``) hand each hook its work.
PLUGIN_ROOMS = ("session", "measuring", "output", "rounds", "configuration", "")


def _room(module: str) -> str:
    """``pytest_burnperf.plugin.session.cases`` -> ``session``; a module in plugin/ -> ``""``."""
    pieces = module.split(".")
    return pieces[2] if len(pieces) > 3 else ""


def test_the_plugins_rooms_import_down_only() -> None:
    modules = _modules()
    wrong = []
    for name, path in modules.items():
        if _part(name) != "plugin":
            continue
        here = PLUGIN_ROOMS.index(_room(name))
        for target, line, _ in _imports(path):
            resolved = _resolve(target, modules)
            if _part(resolved) == "plugin" and PLUGIN_ROOMS.index(_room(resolved)) > here:
                wrong.append(f"{path.relative_to(PACKAGE)}:{line} imports {resolved}")
    assert not wrong, "imports up the plugin's rooms (PLUGIN_ROOMS):\n" + "\n".join(wrong)


#: The modules that write what a run finds out (plugin/session/findings.py), each its own part:
#: the collection its selection, the outcome watch each test's outcome and an interrupt, the
#: result record what each benchmark leaves behind, the rounds what they measured, the run's
#: files what it judged. Everything else reads it, or adds a line to ``state.notes``.
FINDINGS_WRITERS = {
    "plugin/collection.py",
    "plugin/session/outcome_watch.py",
    "plugin/measuring/result_record.py",
    "plugin/rounds/round_control.py",
    "plugin/output/run_files.py",
}


def _writes_findings(tree: ast.AST) -> list[int]:
    """Lines that assign to, or call a mutating method on, something under ``.findings``."""
    mutating = {"append", "extend", "add", "discard", "update", "setdefault", "pop", "clear"}
    lines = []
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
            targets = [node.target]
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in mutating
        ):
            targets = [node.func.value]
        if any(".findings." in ast.unparse(t) + "." for t in targets):
            lines.append(node.lineno)
    return sorted(lines)


def test_what_a_run_finds_out_is_written_in_few_named_places() -> None:
    wrong = []
    for path in _modules().values():
        rel = str(path.relative_to(PACKAGE))
        if rel not in FINDINGS_WRITERS:
            lines = _writes_findings(ast.parse(path.read_text(encoding="utf-8")))
            wrong += [f"{rel}:{n}" for n in lines]
    assert not wrong, f"Findings written outside {sorted(FINDINGS_WRITERS)}: {wrong}"
    assert len(FINDINGS_WRITERS) <= 5


def test_the_findings_check_finds_a_write() -> None:
    code = "state.findings.results[n] = r\nx.findings.notes.append(1)\nstate.findings.ok = 1\n"
    assert _writes_findings(ast.parse(code)) == [1, 2, 3]
    assert _writes_findings(ast.parse("y = state.findings.results[n]\n")) == []


def test_no_file_name_in_two_layers() -> None:
    """A file name says which module it is: ``state.py`` in two layers made readers write
    ``import state as hoststate``. The package's entry points are the only names used twice."""
    seen: dict[str, list[str]] = defaultdict(list)
    for path in _modules().values():
        if path.name not in ("__init__.py", "__main__.py"):
            seen[path.name].append(str(path.relative_to(PACKAGE)))
    twice = {name: paths for name, paths in seen.items() if len(paths) > 1}
    assert not twice, f"file names used in more than one place: {twice}"


def test_the_run_mode_is_asked_not_compared() -> None:
    """A run's mode is decided once (core/options/run_mode.py) and asked by what it decides
    (``state.mode.in_round``); only plugin/configuration/modes.py and core/options/run_mode.py
    name the modes."""
    allowed = {
        "pytest_burnperf.core.options.run_mode",
        "pytest_burnperf.plugin.configuration.modes",
    }
    wrong = []
    for name, path in _modules().items():
        if name in allowed:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Attribute) and ast.unparse(node.value) == "Mode":
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: Mode.{node.attr}")
            if (
                isinstance(node, ast.Attribute)
                and node.attr in ("enabled", "smoke", "update")
                and ast.unparse(node.value).endswith("state")
            ):
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {ast.unparse(node)}")
    assert not wrong, (
        "mode checks outside core/options/run_mode.py (ask state.mode.X):\n" + "\n".join(wrong)
    )


#: Names only core/measures.py compares: what judged a result (``time``, ``counts``) and the
#: values of --perf-measure (``auto``, ``time``, ``counts``, ``both``). ``time`` and ``auto``
#: name other things too (a table column, --perf-against auto): those count where the other
#: side of the comparison is a measure or a timer.
_MEASURE_NAMES = {"counts", "counted", "both"}
_MEASURE_NAMES_BESIDE = {"time", "auto"}


def _measure_name_compares(tree: ast.AST) -> list[int]:
    """Lines comparing a measure's name as a string (``r.measure == "counts"``)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        texts: set[str] = set()
        others = []
        for side in (node.left, *node.comparators):
            items = side.elts if isinstance(side, (ast.Tuple, ast.Set, ast.List)) else [side]
            for item in items:
                if isinstance(item, ast.Constant) and isinstance(item.value, str):
                    texts.add(item.value)
                else:
                    others.append(ast.unparse(item))
        beside = any("measure" in o or "timer" in o for o in others)
        if texts & _MEASURE_NAMES or (beside and texts & _MEASURE_NAMES_BESIDE):
            lines.append(node.lineno)
    return lines


def test_no_measure_name_is_compared_outside_its_registry() -> None:
    """What a measure's name means is asked of core/measures.py (``r.judged_by.counted``,
    ``choice.per_benchmark``), never spelled out again: 36 string compares in 18 files had
    the meaning of "counts" and "auto" written where each was used."""
    found = []
    for module, path in _modules().items():
        if module.endswith("core.measures"):
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{module}:{n}" for n in _measure_name_compares(tree)]
    assert not found, found


def _instrument_dispatch(tree: ast.AST, classes: set[str]) -> list[int]:
    """Lines of an ``isinstance`` whose class is one of the instruments' ``classes``."""
    lines = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id == "isinstance"
            and len(node.args) == 2
        ):
            named = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            named |= {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
            if named & classes:
                lines.append(node.lineno)
    return lines


def test_outside_instruments_no_code_asks_which_instrument_it_has() -> None:
    """The plugin calls every instrument the same way (``instrument.measure(calls)``): a
    branch on an instrument's class outside instruments/ is what a new measure would have to
    find and extend (timed_perf.py had three)."""
    from pytest_burnperf.instruments.registry import INSTRUMENTS

    classes = {type(i).__name__ for i in INSTRUMENTS}
    found = []
    for module, path in _modules().items():
        if _part(module) == "instruments":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        found += [f"{module}:{n}" for n in _instrument_dispatch(tree, classes)]
    assert not found, found
    code = "a = isinstance(x, CountsHere)\nb = isinstance(x, (int, m.ProfileHere))\nc = isinstance(x, int)\n"
    assert _instrument_dispatch(ast.parse(code), {"CountsHere", "ProfileHere"}) == [1, 2]


def test_the_measure_name_check_finds_a_compare() -> None:
    code = (
        'a = r.measure == "counts"\n'
        'b = c.measure != "auto"\n'
        'd = timer in ("counts", "host")\n'
        'e = "time" in chosen_columns\n'  # a column's name: not a measure
        'f = against == "auto"\n'  # --perf-against auto: not a measure
    )
    assert _measure_name_compares(ast.parse(code)) == [1, 2, 3]


#: The verdict statuses whose test a run may fail; only core/judging/outcome.py maps them to an outcome.
_FAILING = {"REGRESSED", "INCONCLUSIVE", "NO_BASELINE", "STRICT_FAILS"}


def _fails_on_a_status(tree: ast.AST) -> list[int]:
    """Lines of an ``if`` that tests a verdict status and fails or skips the test in its body."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If):
            continue
        names = {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)}
        if not names & _FAILING and "--perf-strict" not in ast.unparse(node.test):
            continue
        for stmt in node.body:
            for call in ast.walk(stmt):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr in ("fail", "xfail")
                ):
                    lines.append(node.lineno)
    return lines


def test_one_rule_maps_a_verdict_to_its_outcome() -> None:
    """No module but core/judging/outcome.py decides from a verdict's status whether its test fails
    (four copies of that rule had drifted apart: --perf-strict failed a timed no-baseline and
    passed a counted one)."""
    found = []
    for module, path in _modules().items():
        if module.endswith("core.judging.outcome"):
            continue
        text = path.read_text(encoding="utf-8")
        found += [f"{module}:{n}" for n in _fails_on_a_status(ast.parse(text))]
        if "; --perf-strict fails it" in text:
            found.append(f"{module}: words the strict failure itself")
    assert not found, found


#: What carries the verdicts judged beside without naming one (core/sides/): their modules
#: reach a side through its field and core/sides/side_registry.SIDES, never core/memory/.
CARRY_SIDES = (
    "pytest_burnperf.core.records.",
    "pytest_burnperf.core.judging.",
    "pytest_burnperf.core.sides.side_kind",
    "pytest_burnperf.report.",
    "pytest_burnperf.plugin.output.",
    "pytest_burnperf.plugin.session.",
    "pytest_burnperf.core.options.",
    "pytest_burnperf.storage.",
    "pytest_burnperf.cli.",
    "pytest_burnperf.runs.scheduler",
    "pytest_burnperf.runs.tracked_sides",
    "pytest_burnperf.plugin.measuring.side_processes",
)


def _side_names() -> set[str]:
    """Every name a registered side gives its figures: its field, its store columns, its CSV
    columns and headers (``memory``, ``memory_peak``, ``memory_peak_bytes``...)."""
    from pytest_burnperf.core.sides.side_registry import SIDES

    return {
        name
        for side in SIDES
        for name in (
            side.field,
            *(column for column, _ in side.stored_columns),
            *side.csv_columns,
            *(f.csv_header for f in side.history.figures),
        )
    }


def test_what_carries_the_sides_names_none() -> None:
    """A result, a stored baseline, the outcome, the reports, the options, the results store,
    the command line, a comparison's tracking processes and their findings, baseline writing
    and the session carry memory per call as a side
    (``Result.sides``, core/sides/side_kind.Side): none imports a side's module or spells one
    of its names (a field, a store or CSV column) as a string, so a measure judged beside is
    its own module, its ``Side`` and one line of core/sides/side_registry.py
    (tests/unit/core/test_a_new_side.py follows one through them)."""
    names = _side_names()
    assert {"memory", "memory_peak", "memory_peak_bytes"} <= names
    wrong = []
    for module, path in _modules().items():
        if not module.startswith(CARRY_SIDES):
            continue
        for name, line, _ in _imports(path):
            if name.startswith("pytest_burnperf.core.memory"):
                wrong.append(f"{module}:{line} imports {name}")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and node.value in names:
                wrong.append(f"{module}:{node.lineno} spells {node.value!r}")
    assert not wrong, "\n".join(wrong)


def test_the_outcome_check_finds_a_copy_of_the_rule() -> None:
    copy = "if v.status == REGRESSED:\n    pytest.fail('slower')\n"
    assert _fails_on_a_status(ast.parse(copy)) == [1]


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Every strongly connected group of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                found.append(sorted(group))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return found


def test_cycles_finds_a_circle() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle() -> None:
    """Counting the imports inside functions too: a lazy import hides a cycle, it does not
    remove it."""
    modules = _modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for target, _, _ in _imports(path):
            other = _resolve(target, modules)
            if other != name and other in modules and other != "pytest_burnperf":
                edges[name].add(other)
    assert cycles(edges) == []


# --------------------------------------------------------------------------------------------
# validation/: a package of its own above the plugin, under the same rules

VALIDATION = PACKAGE.parents[1] / "validation"


def _validation_modules() -> dict[str, Path]:
    out = {}
    for path in sorted(VALIDATION.rglob("*.py")):
        parts = path.relative_to(VALIDATION.parent).with_suffix("").parts
        out[".".join(p for p in parts if p != "__init__")] = path
    return out


def test_validation_edits_no_import_path() -> None:
    wrong = []
    for path in _validation_modules().values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and ast.unparse(node.func.value) == "sys.path"
            ):
                wrong.append(f"{path.relative_to(VALIDATION.parent)}:{node.lineno}")
    assert not wrong, f"sys.path edited (import validation.NAME instead): {wrong}"


def test_validation_has_no_import_cycle() -> None:
    modules = _validation_modules()
    edges: dict[str, set[str]] = defaultdict(set)
    for name, path in modules.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("validation"):
                for alias in node.names:
                    other = _resolve(f"{node.module}.{alias.name}", modules)
                    if other != name and other in modules and other != "validation":
                        edges[name].add(other)
    assert edges, "no import between the harnesses found: the walk is broken"
    assert cycles(edges) == []


def test_the_package_never_imports_the_harnesses() -> None:
    wrong = []
    for path in _modules().values():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = _imported(node)
            if any(n == "validation" or n.startswith("validation.") for n in names):
                wrong.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    assert not wrong


def test_the_measuring_child_process_has_one_name() -> None:
    """The child process that measures for its parent is a round process (docs/architecture.md):
    its options are ``--perf-round-process-*``, its file ``round-process.json``; it was also a
    "worker" (9 hidden options, worker.json, run_worker), which pytest-xdist's workers made
    ambiguous."""
    old = ("perf-worker-", "perf_worker_", "worker.json", "run_worker", "worker.only")
    found = [
        f"{module}: {name}"
        for module, path in _modules().items()
        for name in old
        if name in path.read_text(encoding="utf-8")
    ]
    assert not found, found

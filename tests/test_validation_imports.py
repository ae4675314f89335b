"""Every name the validation harnesses import from this package or from each other exists,
those imported inside functions included: a harness runs for minutes before it reaches a lazy
import, and a renamed helper once lost a whole run's data at its end (validation/pedantic_suite.py)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_import_of_the_validation_harnesses_resolves() -> None:
    missing = []
    files = sorted((ROOT / "validation").glob("*.py"))
    assert files
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom) or not node.module:
                continue
            if not node.module.startswith(("pytest_burnperf", "validation")):
                continue
            module = importlib.import_module(node.module)
            for alias in node.names:
                if hasattr(module, alias.name):
                    continue
                try:
                    importlib.import_module(f"{node.module}.{alias.name}")
                except ImportError:
                    missing.append(f"{path.name}: from {node.module} import {alias.name}")
    assert not missing, missing

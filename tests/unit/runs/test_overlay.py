"""The reference's packages first in a round's process (overlay.py): a flat layout's checkout on
sys.path does not shadow the installed reference; benchmark modules come from the checkout."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from pytest_burnperf.runs.comparison.overlay import OVERLAY_ENV, install, top_level_names


def _tree(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return root


def test_top_level_names_of_an_overlay(tmp_path: Path) -> None:
    _tree(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "single.py": "",
            "pkg-1.0.dist-info/METADATA": "",
            "bin/tool": "",
            "pkg.pth": "",
        },
    )
    assert top_level_names(tmp_path) == {"pkg", "single"}
    assert top_level_names(tmp_path / "absent") == frozenset()


def test_no_finder_outside_a_reference_round() -> None:
    meta: list[object] = []
    assert install({}, meta) is None and meta == []


def test_the_overlay_wins_over_the_checkout_first_on_sys_path(tmp_path: Path) -> None:
    """A child interpreter with the checkout first on sys.path, as `python -m pytest` from a
    flat layout's root has it: the package, its modules and a benchmark module the reference
    ships resolve to the reference; a module only the checkout has comes from the checkout and
    imports the reference's code. pytest's importlib mode, which asks with the collected file's
    directory and wants that file as the origin, gets the reference's copy under that name."""
    overlay = _tree(
        tmp_path / "overlay",
        {
            "pkg/__init__.py": "WHO = 'reference'\n",
            "pkg/core.py": "WHO = 'reference core'\n",
            "pkg/bench/__init__.py": "",
            "pkg/bench/test_shipped.py": "from .. import core\nWHO = 'reference benchmark'\n",
        },
    )
    checkout = _tree(
        tmp_path / "checkout",
        {
            "pkg/__init__.py": "WHO = 'checkout'\n",
            "pkg/core.py": "WHO = 'checkout core'\n",
            "pkg/bench/__init__.py": "",
            "pkg/bench/test_shipped.py": "from .. import core\nWHO = 'checkout benchmark'\n",
            "pkg/tests/__init__.py": "",
            "pkg/tests/test_new.py": "from ..core import WHO as CORE\nWHO = 'checkout test'\n",
        },
    )
    script = textwrap.dedent(
        """
        import json, os, sys
        sys.path.insert(0, '.')
        from pytest_burnperf.runs.comparison.overlay import install
        finder = install()
        assert finder is not None and 'pkg' in sys.modules  # imported before collection
        import pkg, pkg.core, pkg.bench.test_shipped as shipped, pkg.tests.test_new as new
        asked = finder.find_spec('pkg.bench.test_other', [os.path.abspath('pkg/bench')])
        spec = finder.find_spec('pkg.bench.test_shipped', [os.path.abspath('pkg/bench')])
        print(json.dumps([pkg.WHO, pkg.core.WHO, shipped.WHO, shipped.core.WHO, new.WHO,
                          new.CORE, asked is None, spec.origin, spec.loader.path]))
        """
    )
    env = {OVERLAY_ENV: str(overlay), "PATH": "/usr/bin:/bin"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        cwd=checkout,
        env={**env, "PYTHONPATH": ":".join(p for p in sys.path if p)},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout.strip().splitlines()[-1])
    assert got[:7] == [
        "reference",
        "reference core",
        "reference benchmark",
        "reference core",
        "checkout test",
        "reference core",
        True,
    ]
    assert Path(got[7]) == checkout / "pkg" / "bench" / "test_shipped.py"
    assert Path(got[8]) == overlay / "pkg" / "bench" / "test_shipped.py"

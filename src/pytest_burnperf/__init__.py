"""pytest-burnperf: performance regression testing of numeric and tensor code on every device.

Importing this package is cheap on purpose: it pulls in no array library, no scipy and no
device runtime. Those load only when a perf run needs them.
"""

from __future__ import annotations

__all__ = ["__version__"]

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("pytest-burnperf")
except PackageNotFoundError:  # running from a source tree that is not installed
    __version__ = "0+unknown"

"""Repository-wide pytest configuration.

The plugin itself is loaded through its ``pytest11`` entry point once the package is installed;
this file only enables ``pytester``, which the plugin tests in ``tests/plugin`` use to run pytest as a
user would, and keeps torch.compile's compile workers out of the test processes.
"""

import os

# torch.compile compiles in a pool of worker processes whose log file (/dev/null by default) is
# closed only when the pool shuts down; left to the garbage collector, it surfaced as an
# unraisable ResourceWarning in whichever later test of the same process the collection ran in
# (a Vulkan benchmark failed with "Exception ignored in: <_io.FileIO name='/dev/null'>"), which
# this suite's filterwarnings = error makes a failure. Compiling in the calling process (one
# thread) leaves nothing behind; child processes inherit the setting.
os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")

pytest_plugins = ["pytester"]

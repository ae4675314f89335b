"""Repository-wide pytest configuration.

The plugin itself is loaded through its ``pytest11`` entry point once the package is installed;
this file only enables ``pytester``, which the plugin tests in ``tests/plugin`` use to run pytest as a
user would.
"""

pytest_plugins = ["pytester"]

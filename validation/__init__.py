"""The validation harnesses of pytest-burnperf: how often the gate cries wolf, how often it
catches a real slowdown, and what the host does to both. Run each as a module from the
repository root, with the package installed: ``python -m validation.run --help``."""

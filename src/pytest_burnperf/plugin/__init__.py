"""The pytest plugin, the only layer that imports pytest: options, the session state, the
``perf`` fixture, pytest-benchmark compatibility and the hook implementations (``hooks``, the
``pytest11`` entry point).
"""

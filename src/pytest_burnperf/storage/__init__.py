"""Files and databases: the strict JSON reader and writer, baselines (locked merge-save), the
project's configuration, the history store and its change points.

Imports ``core`` and ``host``.
"""

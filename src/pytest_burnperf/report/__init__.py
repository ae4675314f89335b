"""Rendering results: the terminal table, the JSON document, Markdown, CSV, HTML and
pytest-benchmark's JSON.

Imports ``core``, ``host`` and ``storage``; never pytest.
"""

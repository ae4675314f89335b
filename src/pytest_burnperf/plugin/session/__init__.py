"""One pytest session with the plugin: its state (``perf_state.py``), what it finds out as it goes
(``findings.py``), each test's outcome as pytest reports it (``outcome_watch.py``), and the
collection that turns a ``@pytest.mark.perf`` test into its cases (``collection.py``,
``cases.py``)."""

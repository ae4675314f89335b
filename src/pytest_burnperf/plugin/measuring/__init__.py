"""The ``perf`` fixture and what measures a benchmark: which perf object a test gets
(``fixture.py``), the smoke, timed and same-session perf objects, what measures the calls
(``instrument_choice.py``), counting and profiling as the plugin wires them, and the result each
benchmark leaves behind (``result_record.py``)."""

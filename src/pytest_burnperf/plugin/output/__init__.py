"""What the session the user started prints and writes: the header and summary
(``reporter.py``), the files at its end (``run_files.py``, ``baseline_writing.py``), written
with signals held (``session_end.py``)."""

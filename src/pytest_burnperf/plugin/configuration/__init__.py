"""The run's configuration, made once in ``pytest_configure``: the options and their table, the
checks and precedence (``configure.py``), the frozen records (``run_config.py``) and which plugin
objects the run's mode registers (``modes.py``)."""

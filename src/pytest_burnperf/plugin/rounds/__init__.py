"""Rounds of measurement in other processes, as the plugin wires them: the parent's side (starting
the rounds, deciding whether another would help: ``round_control.py``) and the round process's
own side (telling the parent what it finished, its samples file: ``report_back.py``). The
processes themselves are started by ``runs/round_launcher.py``."""

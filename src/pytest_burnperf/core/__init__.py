"""The numbers and the verdicts: statistics, sampling, the verdict (against a baseline or paired
in one session), comparability, coverage, the result model, roofline figures, settings parsers.

Plain Python, no pytest, no files written: imports ``host`` only (numpy and scipy lazily).
"""

"""The plugin's side of counted CPU cost: which benchmarks are counted and the counted processes
started (counting.py), the benchmarks counted again in fresh processes where one process's
memory layout may move their counts (recounting.py), the verdict from counts (counts_judging.py)
and, in a same-session comparison, which are judged by counts there (session_counts.py)."""

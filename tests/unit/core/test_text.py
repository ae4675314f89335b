"""core/text.py's message helpers: what a dead process's output shows (issue 74: a segfault's
message ended in the dump's outer frames, an ``os._exit`` one in a lone ".")."""

from __future__ import annotations

from pytest_burnperf.core.text import quoted, tail

SEGFAULT = (
    """..
Fatal Python error: Segmentation fault

Current thread 0x00007f (most recent call first):
  File "/p/ext.py", line 12 in crashing_kernel
  File "/p/test_k.py", line 30 in test_k
"""
    + "".join(f'  File "/venv/pluggy/_callers.py", line {i} in _multicall\n' for i in range(40))
    + ("\nExtension modules: numpy.core._multiarray_umath (total: 1)\n")
)


def test_a_fatal_error_shows_the_crashing_frame_not_the_outer_ones() -> None:
    shown = tail(SEGFAULT)
    assert shown.startswith("Fatal Python error: Segmentation fault")
    assert "in crashing_kernel" in shown and "in test_k" in shown
    assert len(shown.splitlines()) == 15


def test_valgrinds_own_account_of_a_signal_is_shown_from_its_start() -> None:
    out = "==7== warning\n" * 30 + "==7== Process terminating with default action of signal 11\n"
    out += "==7==  at 0x4: kernel (ext.c:3)\n" + "==7== HEAP SUMMARY: x\n" * 30
    shown = tail(out)
    assert shown.splitlines()[0].endswith("default action of signal 11")
    assert "kernel (ext.c:3)" in shown


def test_progress_dots_at_the_end_are_not_the_last_word() -> None:
    assert tail("==1== valgrind cache warning\n.\n") == "==1== valgrind cache warning"
    assert tail("..F.  [ 50%]\n") == "(no output of its own)"
    assert tail("") == "(no output of its own)"
    plain = "\n".join(f"line {i}" for i in range(30))
    assert tail(plain).splitlines() == [f"line {i}" for i in range(15, 30)]


def test_a_process_output_is_quoted_line_by_line() -> None:
    out = "collected 2 items\n==== short test summary info ====\n1 failed in 2.0s\n..\n"
    assert quoted(out) == (
        "    | collected 2 items\n    | ==== short test summary info ====\n    | 1 failed in 2.0s"
    )
    assert quoted("") == "    | (no output of its own)"

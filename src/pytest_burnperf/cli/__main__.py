"""``python -m pytest_burnperf.cli``: the ``burnperf`` command."""

import sys

from pytest_burnperf.cli import main

sys.exit(main())

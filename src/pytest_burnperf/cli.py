"""``burnperf``: the plugin's building blocks without pytest.

* ``burnperf devices [--json]`` lists the devices this machine offers and, for each kind a library
  could serve but does not, why.
* ``burnperf compare OLD.json NEW.json`` judges two ``--perf-json`` result files with the same gate the
  plugin uses, and exits 1 if any benchmark regressed.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .spec import SpecError, parse_alpha, parse_threshold


def _spec_type(parser: Any, name: str) -> Any:
    def convert(value: str) -> Any:
        try:
            return parser(value, name)
        except SpecError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return convert


def cmd_devices(args: argparse.Namespace) -> int:
    from .devices import Registry

    probes = Registry().probe_all()
    if args.json:
        doc = {
            "devices": [d.fingerprint() for p in probes for d in p.devices],
            "absent": {p.library: p.absent for p in probes if p.absent},
        }
        print(json.dumps(doc, indent=1, sort_keys=True))
        return 0
    print(f"{'id':<16} {'kind':<8} {'library':<8} name")
    for p in probes:
        for d in p.devices:
            print(f"{d.id:<16} {d.kind:<8} {d.library:<8} {d.name}")
    print()
    print("not available:")
    for p in probes:
        for kind, reason in p.absent.items():
            print(f"  {p.library} {kind}: {reason}")
    return 0


def _load_results(path: Path) -> dict[str, list[float]]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise SystemExit(f"burnperf compare: cannot read {path}: {exc.strerror}") from None
    except json.JSONDecodeError as exc:
        raise SystemExit(f"burnperf compare: {path} is not valid JSON ({exc.msg})") from None
    if not isinstance(doc, dict) or doc.get("schema") != "pytest-burnperf-results":
        raise SystemExit(f"burnperf compare: {path} is not a pytest-burnperf --perf-json file")
    return {r["test"]: r["samples"] for r in doc.get("results", [])}


def cmd_compare(args: argparse.Namespace) -> int:
    from .compare import REGRESSED, Policy, failure_message, format_time, judge

    old = _load_results(args.old)
    new = _load_results(args.new)
    policy = Policy(alpha=args.alpha, threshold=args.threshold)
    regressed = 0
    for test in sorted(new):
        v = judge(old.get(test), new[test], policy)
        change = "-" if v.change_pct is None else f"{v.change_pct:+.1f}%"
        base = "-" if v.baseline_median is None else format_time(v.baseline_median)
        print(
            f"{v.status:<12} {change:>8} {base:>10} -> {format_time(v.current_median):>10}  {test}"
        )
        if v.status == REGRESSED:
            regressed += 1
            print(f"  {failure_message(test, v, policy)}")
    return 1 if regressed else 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="burnperf", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    dev = sub.add_parser("devices", help="list the devices found here, and why others are missing")
    dev.add_argument("--json", action="store_true", help="print JSON instead of a table")
    dev.set_defaults(func=cmd_devices)
    cmp_ = sub.add_parser("compare", help="judge two --perf-json result files")
    cmp_.add_argument("old", type=Path, help="results recorded before the change")
    cmp_.add_argument("new", type=Path, help="results recorded after the change")
    cmp_.add_argument(
        "--alpha",
        type=_spec_type(parse_alpha, "--alpha"),
        default=0.01,
        help="significance level. Default: 0.01",
    )
    cmp_.add_argument(
        "--threshold",
        type=_spec_type(parse_threshold, "--threshold"),
        default=0.05,
        help="minimum slowdown of the median (0.05 or 5%%). Default: 0.05",
    )
    cmp_.set_defaults(func=cmd_compare)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())

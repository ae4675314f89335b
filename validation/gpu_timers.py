"""The plugin's device time against triton's ``do_bench`` and torch's ``Timer`` on a CUDA GPU.

The same kernels timed by each tool, in alternating order, several repetitions each:

* ``burnperf``          - the plugin's engine (``timing.measure``) on the device's ``EventTimer``
                          (CUDA events behind a ``torch.cuda._sleep`` pad), loop calibrated: what a
                          benchmark gets by default;
* ``burnperf-nopad``    - the same without the pad (start event recorded on an idle device), to
                          show what the pad takes out of the span;
* ``burnperf-flush``    - one call per sample after an L2 flush (``flush_l2=True``), the shape
                          of ``do_bench``;
* ``burnperf-host``     - the host clock around the loop and a synchronise (``timer="host"``);
* ``burnperf-graph``    - the calls captured into a CUDA graph, events around each replay
                          (``timer="graph"``);
* ``do_bench``          - ``triton.testing.do_bench(fn, return_mode="median")`` (clears the L2
                          before every call, events around each call);
* ``do_bench_cudagraph``- ``triton.testing.do_bench_cudagraph(fn, return_mode="median")`` on a
                          side stream (a graph of ~20 ms of calls, replayed 10 times);
* ``torch-timer``       - ``torch.utils.benchmark.Timer(...).blocked_autorange()`` median (host
                          clock, one synchronise per block);
* ``cupyx``             - ``cupyx.profiler.benchmark`` GPU times (the cupy kernels only);
* ``burnperf-hostside`` - the host time the plugin keeps beside ``burnperf``'s device time.

Kernels: a large f32 and bf16 matmul, an elementwise add that is memory-bound, a tiny add whose
time is mostly launch, and a launch-bound chain of 64 small operations.

    python -m validation.gpu_timers --json OUT.json [--reps 5]

Needs a CUDA GPU, torch and triton (cupy optional). Prints a table (microseconds, median over the
repetitions of each tool's median) and writes every repetition to the JSON file.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from pytest_burnperf.core.timing import measure
from pytest_burnperf.devices.backends.torch_backend import TorchDevice
from pytest_burnperf.devices.event_timer import EventTimer


def torch_kernels(torch: Any) -> dict[str, Callable[[], Any]]:
    dev = torch.device("cuda", 0)
    g = torch.Generator(device=dev).manual_seed(0)

    def rnd(n: int, m: int | None = None, dtype: Any = torch.float32) -> Any:
        shape = (n,) if m is None else (n, m)
        return torch.randn(shape, generator=g, device=dev, dtype=dtype)

    a32, b32 = rnd(4096, 4096), rnd(4096, 4096)
    a16, b16 = rnd(8192, 8192, torch.bfloat16), rnd(8192, 8192, torch.bfloat16)
    x, y = rnd(1 << 26), rnd(1 << 26)  # 256 MiB each
    s, t = rnd(1024), rnd(1024)
    c = rnd(4096)

    def chain() -> Any:
        z = c
        for _ in range(64):
            z = z * 1.0001 + 0.5
        return z

    return {
        "matmul-f32-4096": lambda: a32 @ b32,
        "matmul-bf16-8192": lambda: a16 @ b16,
        "add-f32-64M": lambda: x + y,
        "add-f32-1k": lambda: s + t,
        "chain-64-ops-4k": chain,
    }


def run_burnperf(
    device: TorchDevice,
    fn: Callable[[], Any],
    *,
    pad: bool,
    flush: bool,
    host: bool,
    graph: bool = False,
) -> float:
    if host:
        timer = None
    elif pad:
        timer = device.timer()
    else:
        torch = device.lib
        timer = EventTimer(
            lambda: torch.cuda.Event(enable_timing=True),
            lambda: torch.cuda.current_stream(0),
            device_sync=device.sync,
        )
    _, sample = measure(
        fn,
        samples=20,
        warmup=0.2,
        min_time=0.005,
        sync=device.sync,
        timer=timer,
        flush=device.l2_flusher() if flush else None,
        capture=device.graph_capture() if graph else None,
    )
    LAST["host"] = statistics.median(sample.host_values) if sample.host_values else None
    LAST["loops"] = sample.loops
    return statistics.median(sample.values)


#: The host-side median and the loop count of the last run_burnperf call.
LAST: dict[str, Any] = {}


def run_do_bench(fn: Callable[[], Any]) -> float:
    import triton.testing

    return float(triton.testing.do_bench(fn, return_mode="median")) * 1e-3


def run_do_bench_cudagraph(torch: Any, fn: Callable[[], Any]) -> float:
    import triton.testing

    with torch.cuda.stream(torch.cuda.Stream()):  # older tritons refuse the default stream
        return float(triton.testing.do_bench_cudagraph(fn, return_mode="median")) * 1e-3


def run_torch_timer(torch: Any, fn: Callable[[], Any]) -> float:
    from torch.utils.benchmark import Timer

    m = Timer(stmt="fn()", globals={"fn": fn}).blocked_autorange(min_run_time=0.5)
    return float(m.median)


def cupy_kernels(cp: Any) -> dict[str, Callable[[], Any]]:
    rs = cp.random.RandomState(0)
    a32, b32 = (
        rs.standard_normal((4096, 4096), dtype=cp.float32),
        rs.standard_normal((4096, 4096), dtype=cp.float32),
    )
    x, y = (
        rs.standard_normal(1 << 26, dtype=cp.float32),
        rs.standard_normal(1 << 26, dtype=cp.float32),
    )
    s, t = rs.standard_normal(1024, dtype=cp.float32), rs.standard_normal(1024, dtype=cp.float32)
    return {
        "matmul-f32-4096": lambda: a32 @ b32,
        "add-f32-64M": lambda: x + y,
        "add-f32-1k": lambda: s + t,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--json", required=True)
    ap.add_argument("--reps", type=int, default=5)
    args = ap.parse_args(argv)

    import torch

    if not torch.cuda.is_available():
        print("no CUDA GPU", file=sys.stderr)
        return 2
    device = TorchDevice(torch, "cuda", 0)
    tools: dict[str, Callable[[Callable[[], Any]], float]] = {
        "burnperf": lambda f: run_burnperf(device, f, pad=True, flush=False, host=False),
        "burnperf-nopad": lambda f: run_burnperf(device, f, pad=False, flush=False, host=False),
        "burnperf-flush": lambda f: run_burnperf(device, f, pad=True, flush=True, host=False),
        "burnperf-host": lambda f: run_burnperf(device, f, pad=False, flush=False, host=True),
        "burnperf-graph": lambda f: run_burnperf(
            device, f, pad=True, flush=False, host=False, graph=True
        ),
        "do_bench": run_do_bench,
        "do_bench_cudagraph": lambda f: run_do_bench_cudagraph(torch, f),
        "torch-timer": lambda f: run_torch_timer(torch, f),
    }
    rows: list[dict[str, Any]] = []
    kernels = torch_kernels(torch)
    for name, fn in kernels.items():
        names = list(tools)
        for rep in range(args.reps):
            order = names if rep % 2 == 0 else names[::-1]
            for tool in order:
                t0 = time.perf_counter()
                LAST.clear()
                value = tools[tool](fn)
                rows.append(
                    dict(
                        library="torch",
                        kernel=name,
                        tool=tool,
                        rep=rep,
                        seconds=value,
                        wall=time.perf_counter() - t0,
                        loops=LAST.get("loops"),
                    )
                )
                if tool == "burnperf" and LAST.get("host") is not None:
                    rows.append(
                        dict(
                            library="torch",
                            kernel=name,
                            tool="burnperf-hostside",
                            rep=rep,
                            seconds=LAST["host"],
                        )
                    )
        print(name, "done", flush=True)

    try:
        import cupy as cp
        import cupyx.profiler

        from pytest_burnperf.devices.backends.cupy_backend import CupyDevice

        cdev = CupyDevice(cp, "cuda", 0)
        for name, fn in cupy_kernels(cp).items():
            for rep in range(args.reps):
                _, sample = measure(
                    fn, samples=20, warmup=0.2, min_time=0.005, sync=cdev.sync, timer=cdev.timer()
                )
                rows.append(
                    dict(
                        library="cupy",
                        kernel=name,
                        tool="burnperf",
                        rep=rep,
                        seconds=statistics.median(sample.values),
                    )
                )
                res = cupyx.profiler.benchmark(fn, n_repeat=200, n_warmup=10)
                rows.append(
                    dict(
                        library="cupy",
                        kernel=name,
                        tool="cupyx",
                        rep=rep,
                        seconds=float(statistics.median(res.gpu_times[0])),
                    )
                )
            print("cupy", name, "done", flush=True)
    except Exception as exc:
        print(f"cupy part failed: {type(exc).__name__}: {exc}", flush=True)

    table: dict[tuple[str, str], dict[str, float]] = {}
    for r in rows:
        table.setdefault((r["library"], r["kernel"]), {}).setdefault(r["tool"], [])  # type: ignore[arg-type]
        table[(r["library"], r["kernel"])][r["tool"]].append(r["seconds"])  # type: ignore[attr-defined]
    all_tools = [*tools, "burnperf-hostside", "cupyx"]
    print("library kernel " + " ".join(all_tools) + "  (us, median of reps)")
    summary = []
    for (lib, kernel), per in table.items():
        cells = []
        entry: dict[str, Any] = {"library": lib, "kernel": kernel}
        for tool in all_tools:
            vals = per.get(tool)
            if vals:
                med = statistics.median(vals) * 1e6
                entry[tool] = {
                    "median_us": med,
                    "min_us": min(vals) * 1e6,
                    "max_us": max(vals) * 1e6,
                }
                cells.append(f"{med:.2f}")
            else:
                cells.append("-")
        summary.append(entry)
        print(lib, kernel, " ".join(cells))
    meta = {
        "gpu": torch.cuda.get_device_name(0),
        "torch": torch.__version__,
        "python": platform.python_version(),
        "command": "python -m validation.gpu_timers " + " ".join(argv or sys.argv[1:]),
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
    }
    try:
        import triton

        meta["triton"] = triton.__version__
    except Exception:
        pass
    with open(args.json, "w") as f:
        json.dump({"meta": meta, "summary": summary, "rows": rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())

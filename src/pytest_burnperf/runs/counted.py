"""The counted process: the selected CPU benchmarks run once more, in one process under
callgrind, each counted around its calls only (plugin/measuring/counts/counting.py counts inside
it); this module starts it and reads what it wrote.

One process per CPU (``--perf-count-jobs``), each over its share of the benchmarks: counts do not
depend on the host's load, so the processes do not disturb each other's figures; valgrind makes
everything it runs 20-100x slower, and each process pays valgrind's start-up and the imports
once. A benchmark that kills it costs only itself: the process notes each benchmark before it
starts and each record as it finishes, and a fresh one counts the rest. The process dies with
the run (host/leftovers.py), and the scratch folders of runs killed before their end are
removed by the next. Nothing is instrumented until the first benchmark asks
(``--instr-atstart=no``), so the imports and pytest's collection run at valgrind's
uninstrumented speed.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import signal
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from pytest_burnperf.core.counting.counts import Counted
from pytest_burnperf.core.text import quoted
from pytest_burnperf.host import callgrind, hardware, memory_layout
from pytest_burnperf.host.leftovers import PARENT_ENV, dying_with_parent, mark_owner, sweep
from pytest_burnperf.runs.round_launcher import (
    backends_option,
    basetemp_option,
    journal_path,
    pooled,
    read_journal,
    run_round_process,
)
from pytest_burnperf.storage.jsonfile import Fields, FileFormatError, read_json
from pytest_burnperf.storage.paths import cache_root

#: The hidden option that makes a pytest process a counted one: the directory of its dumps.
COUNT_OPTION = "--perf-round-process-count-dir"
#: What a counted process's environment pins: hash seeds (dict and set order, hence the
#: interpreter's work, the same in every run), how idle pool threads wait (GNU and Intel OpenMP
#: sleep at once instead of spinning; OpenBLAS's workers spin for the shortest time it allows,
#: 2^4 TSC cycles, before they sleep: a spinning thread's instructions depend on the host's
#: speed and valgrind's turns, a sleeping one's do not), and glibc's
#: mmap threshold: left dynamic, it rises when a large block is freed, so what ran before decides
#: whether a large array comes from mmap (page-aligned) or the heap, and with that how two
#: buffers sit to each other in a page, which picks glibc's memcpy loop (a 2 MiB copy counted
#: 250 k or 201 k instructions in two full runs). Fixed, every block over 128 KiB is mmapped.
PINNED_ENV = {
    "OMP_WAIT_POLICY": "PASSIVE",
    "KMP_BLOCKTIME": "0",
    "OPENBLAS_THREAD_TIMEOUT": "4",
    "MALLOC_MMAP_THRESHOLD_": "131072",
}
#: The array libraries' kernels in a counted process, where the run's environment names none:
#: their portable ones, without FMA. Valgrind runs an FMA instruction lane by lane through
#: helper calls, so the FMA kernels the libraries pick by CPUID ran 100-5000x slower there than
#: natively (a 256x256 float32 matmul: 1.1 s a call under valgrind with OpenBLAS's Haswell
#: kernel, 4.8 ms with its Sandybridge one; torch's 256x256 matmul 861 ms and 7 ms, its exp of
#: 1 M floats 407 ms and 13 ms, without the cache simulation). With these, BLAS and LAPACK calls
#: run 6-22x their native time uninstrumented (a counted call 1.25-1.5x that, 6-8x with the
#: cache simulation of --perf-count-cycles), and x86-64 hosts of every vendor run the same
#: kernels. Counts see these kernels, not the FMA ones the host runs natively (valgrind already
#: hid AVX-512): a change in an FMA kernel alone is the clock's to see. The key holds OpenBLAS's
#: core and torch's capability (``blas=``, ``torch:``) and, with torch, MKL's and oneDNN's caps
#: (``mkl:``, ``onednn:``). Hosts without AVX get the SSE4.2 ones (:func:`kernel_env`).
#: torch.compile's C++ is built by a native gcc with ``-march=native`` unless
#: ``TORCHINDUCTOR_CPP_MARCH`` says otherwise: AVX-512 code on such a host, which valgrind cannot
#: run (SIGILL); built for the portable kernels' CPU here (instruction_counts.compiled_for).
PORTABLE_KERNELS = {
    "OPENBLAS_CORETYPE": "Sandybridge",
    "MKL_ENABLE_INSTRUCTIONS": "AVX",
    "ONEDNN_MAX_CPU_ISA": "AVX",
    "ATEN_CPU_CAPABILITY": "default",
    "TORCHINDUCTOR_CPP_MARCH": "sandybridge",
}
#: The same without AVX (x86-64-v2 hosts).
SSE_KERNELS = {
    "OPENBLAS_CORETYPE": "Nehalem",
    "MKL_ENABLE_INSTRUCTIONS": "SSE4_2",
    "ONEDNN_MAX_CPU_ISA": "SSE41",
    "ATEN_CPU_CAPABILITY": "default",
    "TORCHINDUCTOR_CPP_MARCH": "nehalem",
}
#: The setting of :data:`PORTABLE_KERNELS` that says what torch.compile's kernels were built for.
COMPILED_MARCH_ENV = "TORCHINDUCTOR_CPP_MARCH"


def kernel_env(machine: str, features: Sequence[str]) -> dict[str, str]:
    """The kernel settings a counted process gets on a host of architecture ``machine`` with
    the CPU ``features`` (host/hardware.cpu_identity): none off x86-64."""
    if machine.lower() not in ("x86_64", "amd64"):
        return {}
    return dict(PORTABLE_KERNELS if "avx" in features else SSE_KERNELS)


#: glibc's tunables for its copy and fill functions, the same on every host: left to glibc,
#: the loop a ``memcpy`` or ``memset`` takes is chosen by the host's cache sizes (read through
#: CPUID: 480 MiB of "shared cache" on one host, 32 MiB on another, so a large copy ran
#: non-temporal stores on one and not the other) and by ``rep movsb`` thresholds, and ``rep
#: movsb``'s path depends on how the buffers sit to each other (a JSON round trip's copies
#: counted 76 k or 93 k instructions in two processes). Fixed here: the cache sizes of the
#: simulated caches (host/callgrind.CACHE_MODEL), no ``rep movsb``/``rep stosb`` and no
#: non-temporal stores, so a copy's instructions follow its length.
GLIBC_TUNABLES = ":".join(
    (
        "glibc.cpu.x86_data_cache_size=32768",
        "glibc.cpu.x86_shared_cache_size=8388608",
        "glibc.cpu.x86_non_temporal_threshold=0xfffffffffffffff",
        "glibc.cpu.x86_rep_movsb_threshold=0xffffffffffffffff",
        "glibc.cpu.x86_rep_stosb_threshold=0xffffffffffffffff",
    )
)
#: What a counted process always gets, whatever the run's environment says: the hash seed
#: decides the order of every dict and set of strings, hence the interpreter's work
#: (``PYTHONHASHSEED=random`` moved a pure-Python benchmark's counts between processes), and
#: :data:`GLIBC_TUNABLES`.
FORCED_ENV = {"PYTHONHASHSEED": "0", "GLIBC_TUNABLES": GLIBC_TUNABLES}
#: torch.compile's code cache in a counted process: a folder of its own under this tool's cache
#: (:func:`inductor_cache`), kept between runs (compiling under valgrind takes about a minute a
#: graph). Inductor writes C++ for the CPU capability it sees, and a counted process runs
#: ``ATEN_CPU_CAPABILITY=default``: code a native run had written for AVX-512 into the shared
#: cache failed to compile there (``BackendCompilerFailed``, every compiled benchmark failed).
INDUCTOR_CACHE_ENV = "TORCHINDUCTOR_CACHE_DIR"
#: What a counted process does not get from the run's environment: each changes the
#: instructions that all Python code runs, not the code under test (``PYTHONMALLOC=malloc``
#: counted an unchanged pure-Python benchmark +34%): another allocator or its debug hooks and
#: statistics, dev mode's checks, tracing of every allocation, asyncio's debug mode, import
#: timing, perf's trampolines, verbose imports. What the code under test may depend on
#: (optimisation, -X options, warnings, the GIL) is kept and held in the counts key instead
#: (core/counting/counts_key.interpreter_settings).
DROPPED_ENV = (
    *("PYTHONMALLOC", "PYTHONMALLOCSTATS", "PYTHONDEVMODE", "PYTHONTRACEMALLOC"),
    *("PYTHONASYNCIODEBUG", "PYTHONPROFILEIMPORTTIME", "PYTHONPERFSUPPORT"),
    *("PYTHON_PERF_JIT_SUPPORT", "PYTHONVERBOSE", "PYTHONDEBUG", "PYTHONINSPECT"),
)


#: pytest options of every counted process: warnings that only valgrind's simulated CPU
#: raises, never the code under test. Valgrind computes x87 80-bit long doubles in 64 bits, so
#: numpy before 2.4 warns "Signature b'...' for <class 'numpy.longdouble'> does not match any
#: known type" as it probes ``np.finfo(np.longdouble)``: under a project's
#: ``filterwarnings = error`` that failed the benchmark in the counted process alone (seen with
#: numpy 2.3.5). pytest reads a -W message literally, as the start of the warning's message.
VALGRIND_WARNINGS = ("-W", "ignore:Signature b:UserWarning")


@dataclass
class CountedRun:
    """What a counted process measured: counts and key per node id, and what went wrong."""

    counts: dict[str, Counted] = field(default_factory=dict)
    keys: dict[str, dict[str, object]] = field(default_factory=dict)
    #: node id -> why it has no counts (the process failed, the test failed in it, ...).
    missing: dict[str, str] = field(default_factory=dict)
    #: node id -> why it was not counted but is timed instead: its calls run more instructions
    #: than --perf-count-limit (core/counting/counted_calls.TooSlow).
    timed_instead: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    seconds: float = 0.0


@dataclass(frozen=True)
class _Launch:
    """What every counted process of one run is started with: the valgrind, the Python and
    pytest's arguments, the run's scratch folder, where it runs and its environment."""

    valgrind: str
    python: str
    args: Sequence[str]
    work: Path
    cwd: Path
    env: Mapping[str, str] | None
    #: Simulate the caches (estimated cycles): host/callgrind.command.
    caches: bool = False
    #: Each benchmark's device id, where every one has one (:func:`backends_option`).
    devices: Mapping[str, str] | None = None


#: The scratch folders of counted processes under the temporary directory.
SCRATCH_PREFIX = "burnperf-counts-"


def environment(base: Mapping[str, str] | None = None) -> dict[str, str]:
    """The counted process's environment: the run's (or ``base``), with :data:`PINNED_ENV`
    and the portable kernels (:func:`kernel_env`) where unset, :data:`FORCED_ENV` always,
    :data:`DROPPED_ENV` left out, this process's id (the process dies with it:
    host/leftovers.py) and a seed of its own for its memory layout (host/memory_layout.py)."""
    env = dict(os.environ if base is None else base)
    ident = hardware.cpu_identity()
    features = ident.get("features")
    kernels = kernel_env(platform.machine(), features if isinstance(features, list) else [])
    for name, value in {**PINNED_ENV, **kernels}.items():
        env.setdefault(name, value)
    env.update(FORCED_ENV)
    env[INDUCTOR_CACHE_ENV] = str(inductor_cache(env))
    for name in DROPPED_ENV:
        env.pop(name, None)
    env[PARENT_ENV] = str(os.getpid())
    env[memory_layout.SEED_ENV] = str(int.from_bytes(os.urandom(4), "little"))
    return env


def inductor_cache(environ: Mapping[str, str]) -> Path:
    """The torch.compile cache of counted processes (:data:`INDUCTOR_CACHE_ENV`), one per set
    of kernel settings they run with."""
    kernels = ",".join(f"{k}={environ.get(k, '')}" for k in sorted(PORTABLE_KERNELS))
    digest = hashlib.sha256(kernels.encode()).hexdigest()[:12]
    return cache_root(environ) / "inductor-counted" / digest


def left_out(base: Mapping[str, str] | None = None) -> str | None:
    """The run's note on the settings of its environment that the counted process does not
    get, or None where there are none."""
    env = os.environ if base is None else base
    gone = [f"{n}={env[n]}" for n in DROPPED_ENV if env.get(n)]
    seed = env.get("PYTHONHASHSEED")
    if seed is not None and seed != FORCED_ENV["PYTHONHASHSEED"]:
        gone.append(f"PYTHONHASHSEED={seed} (counted with 0)")
    tunables = env.get("GLIBC_TUNABLES")
    if tunables and tunables != GLIBC_TUNABLES:
        gone.append(f"GLIBC_TUNABLES={tunables} (counted with fixed copy tunables)")
    if not gone:
        return None
    return (
        f"counted without {', '.join(gone)} from this run's environment: each changes the "
        "instructions all Python code runs, so counts are always taken with the interpreter's "
        "defaults there"
    )


def read_counts(
    path: Path,
) -> tuple[dict[str, Counted], dict[str, dict[str, object]], dict[str, str]]:
    """The counts and keys a counted process wrote (``{nodeid: {"counts": ..., "key": ...}}``)
    and the benchmarks it timed instead (``{nodeid: {"timed_instead": why}}``), each field
    checked (``FileFormatError`` names a bad one)."""
    return check_records(read_json(path), path)


def check_records(
    doc: object, path: Path
) -> tuple[dict[str, Counted], dict[str, dict[str, object]], dict[str, str]]:
    """:func:`read_counts` of a document already parsed (the process's file, or the journal of
    one that died), ``path`` named in its errors."""
    f = Fields(path)
    counts: dict[str, Counted] = {}
    keys: dict[str, dict[str, object]] = {}
    slow: dict[str, str] = {}
    for nodeid, value in f.obj(doc, "document").items():
        where = f"[{json.dumps(nodeid)}]"
        rec = f.obj(value, where)
        if "timed_instead" in rec:
            slow[nodeid] = f.text(rec["timed_instead"], f"{where}.timed_instead")
            continue
        c = f.obj(rec.get("counts"), f"{where}.counts")
        for name in ("instructions", "cycles"):  # cycles: empty where no caches were simulated
            values = c.get(name)
            if not isinstance(values, list) or (name == "instructions" and not values):
                f.fail(f"{where}.counts.{name}", "must be a non-empty list of counts")
            for v in values:
                f.integer(v, f"{where}.counts.{name}[]")
        counts[nodeid] = Counted.from_json(c)
        key = f.obj(rec.get("key"), f"{where}.key")
        f.plain(key, f"{where}.key")
        keys[nodeid] = key
    return counts, keys, slow


def ended(code: int) -> str:
    """How a process ended, in words: ``exit 3``, ``killed by SIGSEGV``."""
    if code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


#: A counted process that dies on a benchmark is started again for the ones after it, at most
#: this many times in a run (each start pays valgrind's start-up and the imports again).
MAX_RESTARTS = 8


def run(
    *,
    valgrind: str,
    python: str,
    args: Sequence[str],
    wanted: Sequence[str],
    cwd: Path,
    say: Callable[[int], None],
    env: Mapping[str, str] | None = None,
    jobs: int = 1,
    caches: bool = False,
    devices: Mapping[str, str] | None = None,
) -> CountedRun:
    """Count the benchmarks ``wanted`` (node ids) in ``jobs`` processes of ``python -m pytest
    args`` under callgrind, each over its share (:func:`shares`): counts do not depend on the
    host's load, so they may run side by side; with ``devices`` (each benchmark's device id)
    each probes only its own benchmarks' devices (:func:`backends_option`). A benchmark that
    kills its process (a segfault, ``os._exit``) costs only itself: the process notes each
    benchmark before it starts and each record as it finishes (plugin/rounds/report_back.py),
    so the run names the benchmark it died on, keeps what it had counted, and counts the rest
    in a fresh process."""
    got = CountedRun()
    t0 = time.monotonic()
    sweep(SCRATCH_PREFIX)  # what counted runs killed before their end left on disk
    note = left_out(env)
    if note is not None:
        got.problems.append(note)
    work = Path(tempfile.mkdtemp(prefix=SCRATCH_PREFIX))
    try:
        mark_owner(work)
        (work / "dumps").mkdir()
        launch = _Launch(valgrind, python, args, work, cwd, env, caches, devices)
        parts = shares(wanted, jobs, devices)
        if len(parts) == 1:
            _count_share(launch, got, parts[0], 0, say)
        else:
            tells = pooled(len(parts), say)  # one line per interval, not one per process
            each = [CountedRun() for _ in parts]
            with ThreadPoolExecutor(max_workers=len(parts)) as pool:
                for future in [
                    pool.submit(_count_share, launch, each[i], part, i, tells[i])
                    for i, part in enumerate(parts)
                ]:
                    future.result()
            for one in each:
                got.counts.update(one.counts)
                got.keys.update(one.keys)
                got.missing.update(one.missing)
                got.timed_instead.update(one.timed_instead)
                got.problems.extend(one.problems)
    finally:
        got.seconds = time.monotonic() - t0
        shutil.rmtree(work, ignore_errors=True)
    return got


def shares(
    wanted: Sequence[str], jobs: int, devices: Mapping[str, str] | None = None
) -> list[list[str]]:
    """``wanted`` dealt over at most ``jobs`` processes, none of them empty, their sizes within
    one of each other. Without ``devices``, in turn (neighbours, often of one module and alike
    in cost, go to different processes). With each benchmark's device, a device's benchmarks go
    to as few processes as that balance allows (the devices in the order they first come,
    each over the next processes in line), and in turn among those: a process imports only
    the libraries of its own devices."""
    n = max(1, min(jobs, len(wanted)))
    if devices is None:
        return [list(wanted[i::n]) for i in range(n)]
    device = {nodeid: devices.get(nodeid, "") for nodeid in wanted}
    # process i takes the places [bounds[i], bounds[i + 1]) of the benchmarks grouped by device
    bounds = [len(wanted) * i // n for i in range(n + 1)]
    out: list[list[str]] = [[] for _ in range(n)]
    start = 0
    for d in dict.fromkeys(device.values()):
        mine = [nodeid for nodeid in wanted if device[nodeid] == d]
        end = start + len(mine)
        room = [max(0, min(end, bounds[i + 1]) - max(start, bounds[i])) for i in range(n)]
        turns = sorted((k, i) for i in range(n) for k in range(room[i]))  # in turn
        for nodeid, (_, i) in zip(mine, turns, strict=True):
            out[i].append(nodeid)
        start = end
    return out


def _count_share(
    launch: _Launch, got: CountedRun, wanted: list[str], share: int, say: Callable[[int], None]
) -> None:
    """One share of the benchmarks, in one counted process and the fresh ones that follow a
    benchmark that killed it."""
    try:
        todo = list(wanted)
        for attempt in range(MAX_RESTARTS + 1):
            todo = _one_process(launch, got, todo, f"{share}-{attempt}", say)
            if not todo:
                break
        else:
            why = (
                f"not counted: the counted process died {MAX_RESTARTS + 1} times in this run; "
                "the benchmarks after the last it died on were not started again"
            )
            got.missing.update({n: why for n in todo})
    except OSError as exc:  # its scratch folder went away (a cleaner of /tmp), or it cannot start
        why = f"the counted process could not run ({exc})"
        got.problems.append(why)
        got.missing.update(
            {n: why for n in wanted if n not in got.counts and n not in got.timed_instead}
        )


def _one_process(
    launch: _Launch, got: CountedRun, todo: Sequence[str], attempt: str, say: Callable[[int], None]
) -> list[str]:
    """One counted process over ``todo``; what it counted goes into ``got``. Returns the
    benchmarks still to count: after it died on one, those it had not reached."""
    work = launch.work
    here = work / f"pass-{attempt}"
    here.mkdir()
    already = len(got.counts) + len(got.timed_instead) + len(got.missing)
    code, output, out = run_round_process(
        launch.python,
        launch.args,
        wanted=todo,
        work=here,
        cwd=launch.cwd,
        say=lambda done: say(already + done),
        options=[
            f"{COUNT_OPTION}={work / 'dumps'}",
            *VALGRIND_WARNINGS,
            *backends_option(launch.devices, todo),
            *basetemp_option(here),
        ],
        prefix=[
            *dying_with_parent(),
            *callgrind.command(launch.valgrind, work / "dumps", launch.caches),
        ],
        env=environment(launch.env),
    )
    if out.exists():
        try:
            counts, keys, slow = read_counts(out)
        except FileFormatError as exc:
            why = f"the counted process wrote a bad counts file ({exc})"
            got.problems.append(why)
            got.missing.update({n: why for n in todo})
            return []
        _keep(got, counts, keys, slow)
        left = [n for n in todo if n not in counts and n not in slow]
        for n in left:
            got.missing[n] = "not counted: it failed or was skipped in the counted process" + (
                f" ({ended(code)})" if code not in (0, 1) else ""
            )
        if code == 1 and left:
            got.problems.append(
                f"not judged by counts: {len(left)} benchmark(s) failed or were skipped in the "
                f"counted process ({', '.join(left)}); its output ends:\n{quoted(output)}"
            )
        elif code not in (0, 1):
            got.problems.append(
                f"the counted process ended with {ended(code)}; benchmarks it did not count "
                f"are not judged by counts:\n{quoted(output)}"
            )
        return []
    if not here.is_dir():
        why = (
            f"the counted process's scratch folder {work} was removed while it ran (a cleaner "
            "of the temporary directory?)"
        )
        got.problems.append(why)
        got.missing.update({n: why for n in todo})
        return []
    records, dying = read_journal(out)
    try:
        counts, keys, slow = check_records(records, journal_path(out))
    except FileFormatError as exc:
        counts, keys, slow = {}, {}, {}
        got.problems.append(f"the counted process's journal was unreadable ({exc})")
    _keep(got, counts, keys, slow)
    if dying is None:
        why = f"the counted process failed ({ended(code)})"
        got.problems.append(f"{why} before or between benchmarks:\n{quoted(output)}")
        got.missing.update({n: why for n in todo if n not in counts and n not in slow})
        return []
    why = (
        f"the counted process died while counting it ({ended(code)}); the benchmarks after it "
        "were counted in a fresh process"
    )
    if code == -signal.SIGILL:
        why += (
            ". SIGILL under valgrind: the benchmark ran an instruction valgrind cannot run "
            "(code built for this CPU's newest extensions, such as AVX-512; torch.compile "
            "builds its kernels so); time it (--perf-measure time, or no counts baseline for "
            "it under auto)"
        )
    got.missing[dying] = why
    got.problems.append(f"{dying}: {why}:\n{quoted(output)}")
    return [n for n in todo if n not in counts and n not in slow and n != dying]


def _keep(
    got: CountedRun,
    counts: Mapping[str, Counted],
    keys: Mapping[str, dict[str, object]],
    slow: Mapping[str, str],
) -> None:
    got.counts.update(counts)
    got.keys.update(keys)
    got.timed_instead.update(slow)

"""valgrind's callgrind as a counter: where it is, the command line of a counted process, the
client requests a process running under it sends, and the counts it dumps.

A counted process runs under ``valgrind --tool=callgrind`` with instrumentation off from the
start; every thread collects while instrumentation is on (so a BLAS or OpenMP pool's threads
count), except the calling thread, which switches its collection on and off around each counted
call; the process then asks for a dump (callgrind's client requests), so imports, setup,
calibration and the plugin's own bookkeeping are never counted. Threads take turns under
valgrind's fair (first come, first served) scheduler, and what a thread executes while it only
waits for another (host/callgrind_dumps.py) is left out of the counts: how long a wait spins
depends on the host, not on the work. Client requests are a magic instruction sequence
that does nothing on a real CPU and that valgrind recognises; they are issued here from a few
bytes of machine code mapped executable at run time (no C compiler, no extension module).

The cache simulation is off unless estimated cycles are asked for (``--perf-count-cycles``):
instructions judge, and they do not depend on it, while it made each counted call 2.5-8 times
slower (a BLAS call 7x its uninstrumented time under valgrind with it, 1.25x without:
docs/validation.md). Where it is on, the simulated cache is fixed (:data:`CACHE_MODEL`: 32 KiB
8-way L1 instruction and data caches, an 8 MiB 16-way last level, 64-byte lines, CodSpeed's and
iai-callgrind's usual model): callgrind would otherwise size it from the host's CPU, and cycles
would differ between runners. System calls are not counted (callgrind counts user-space
instructions only).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import mmap
import os
import platform
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: The simulated caches: (size in bytes, associativity, line size).
CACHE_MODEL: dict[str, tuple[int, int, int]] = {
    "I1": (32768, 8, 64),
    "D1": (32768, 8, 64),
    "LL": (8388608, 16, 64),
}
#: The events callgrind reports with the cache simulation on, in its order.
EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
#: Functions each of whose contexts callgrind tells apart by up to this many callers
#: (``--separate-callers<N>=``: ``_Py_dict_lookup'_PyDict_GetItem_KnownHash'find_name_in_mro``):
#: the hash tables' lookups, counted at a fixed cost a call, except where the type cache's
#: miss path made them (two calls down in CPython 3.11-3.13), which is left out whole
#: (host/callgrind_dumps.HASH_PROBE_CALLS).
SEPARATED_CALLERS: Mapping[str, int] = {
    "_Py_dict_lookup": 3,
    "find_empty_slot": 3,
    "set_lookkey": 3,
    "set_add_entry": 3,
}
#: Environment variable naming the valgrind executable (else ``valgrind`` on $PATH).
VALGRIND_ENV = "BURNPERF_VALGRIND"
#: The prefix of a counted process's dump files in its dump directory.
DUMP_PREFIX = "callgrind"
# callgrind's requests: VG_USERREQ_TOOL_BASE('C', 'T') + n (valgrind/callgrind.h)
_CT = (ord("C") << 24) | (ord("T") << 16)
DUMP_STATS_AT = _CT + 3
ZERO_STATS = _CT + 1
TOGGLE_COLLECT = _CT + 2
START_INSTRUMENTATION = _CT + 4
STOP_INSTRUMENTATION = _CT + 5
RUNNING_ON_VALGRIND = 0x1001

#: x86-64: ``f(uint64_t *args) -> uint64_t``: the request block's address into rax, the default
#: result 0 in rdx, the special sequence (rol rdi by 3, 13, 61, 51; xchg rbx, rbx), the result
#: from rdx. On a real CPU the sequence changes nothing (the rotations add up to 128 bits).
_X86_64 = bytes.fromhex(
    "4889f8"  # mov rax, rdi
    "31d2"  # xor edx, edx
    "48c1c703"
    "48c1c70d"
    "48c1c73d"
    "48c1c733"  # rol rdi, 3 / 13 / 61 / 51
    "4887db"  # xchg rbx, rbx
    "4889d0"  # mov rax, rdx
    "c3"  # ret
)
#: x86-64: ``movabs rdi, <imm64>``: put before :data:`_X86_64`, a request whose argument block
#: is built in (:meth:`Requests.fixed`): a function of no arguments.
_MOVABS_RDI = bytes.fromhex("48bf")
#: Bytes each fixed request takes in their shared page (10 + 28, rounded up).
_FIXED_SIZE = 64

#: x86-64: ``f(uint32_t leaf, uint32_t subleaf, uint32_t out[4])``: CPUID, its four registers
#: stored to ``out`` (rbx saved and restored).
_CPUID_X86_64 = bytes.fromhex(
    "53"  # push rbx
    "4989d0"  # mov r8, rdx
    "89f8"  # mov eax, edi
    "89f1"  # mov ecx, esi
    "0fa2"  # cpuid
    "418900"  # mov [r8], eax
    "41895804"  # mov [r8+4], ebx
    "41894808"  # mov [r8+8], ecx
    "4189500c"  # mov [r8+12], edx
    "5b"  # pop rbx
    "c3"  # ret
)


#: Dumps this process asked for so far (callgrind numbers them per process).
_DUMPS: dict[int, int] = {}


class CountingUnavailable(Exception):
    """Counting cannot run here; ``str()`` says why and what to do."""


def unsupported_reason(system: str | None = None, machine: str | None = None) -> str | None:
    """Why counted runs cannot work on this platform at all, or None."""
    system = system or platform.system()
    machine = (machine or platform.machine()).lower()
    if system != "Linux":
        return (
            f"--perf-measure counts needs valgrind, which runs on Linux only (this is {system}: "
            "macOS and Windows have none); count on a Linux runner or in a Linux container, or "
            "use --perf-measure time here"
        )
    if machine not in ("x86_64", "amd64"):
        return (
            f"--perf-measure counts supports x86-64 Linux; this machine is {machine}. Use "
            "--perf-measure time here"
        )
    return None


def find_valgrind(environ: Mapping[str, str] | None = None) -> str | None:
    """The valgrind executable: $BURNPERF_VALGRIND (a path, or a name looked up on $PATH),
    else ``valgrind`` on $PATH, else None (:func:`valgrind_problem` says why)."""
    env = os.environ if environ is None else environ
    given = env.get(VALGRIND_ENV)
    if given:
        if os.sep not in given:
            return shutil.which(given, path=env.get("PATH"))
        return given if os.path.isfile(given) and os.access(given, os.X_OK) else None
    return shutil.which("valgrind", path=env.get("PATH"))


def valgrind_problem(environ: Mapping[str, str] | None = None, *, measure: str = "") -> str:
    """Why :func:`find_valgrind` found none: what $BURNPERF_VALGRIND holds and what is wrong
    with it, or that valgrind is not installed; ``measure`` (counts, both) names the option
    that needs it."""
    env = os.environ if environ is None else environ
    given = env.get(VALGRIND_ENV)
    if not given:
        return missing_text().replace("counts", measure, 1) if measure else missing_text()
    where = f"--perf-measure {measure}: " if measure else ""
    where += f"${VALGRIND_ENV} is {given!r}"
    if os.sep not in given:
        problem = "a name that is not an executable on $PATH"
    elif not os.path.exists(given):
        problem = "a path that does not exist"
    elif os.path.isdir(given):
        problem = "a folder, not the valgrind executable"
    else:
        problem = "a file that is not executable (chmod +x it)"
    return (
        f"{where}: {problem}; point it at valgrind's executable (a path or a name on $PATH), "
        "or unset it to use valgrind from $PATH"
    )


def missing_text() -> str:
    return (
        "--perf-measure counts needs valgrind and found none on $PATH (or in $"
        f"{VALGRIND_ENV}): install it with `sudo apt-get install valgrind` (Debian, Ubuntu), "
        "`sudo dnf install valgrind` (Fedora) or your distribution's package"
    )


_VERSION = re.compile(r"valgrind-(\d+(?:\.\d+)*)")


def version_of(text: str) -> str | None:
    """``3.19.0`` from ``valgrind --version``'s output (``valgrind-3.19.0``)."""
    m = _VERSION.search(text)
    return m.group(1) if m else None


def valgrind_version(valgrind: str) -> str:
    """The version of the valgrind at ``valgrind``, or :class:`CountingUnavailable`."""
    try:
        out = subprocess.run(
            [valgrind, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CountingUnavailable(f"{valgrind} --version failed: {exc}") from None
    version = version_of(out.stdout)
    if version is None:
        raise CountingUnavailable(
            f"{valgrind} --version printed {out.stdout.strip()[:80]!r}, not a valgrind version"
        )
    return version


#: The key's ``cache`` without the cache simulation (no estimated cycles).
NO_CACHE = "none"


def cache_text(caches: bool = True) -> str:
    """``I1=32768,8,64 D1=32768,8,64 LL=8388608,16,64``: the cache model, as a key holds it
    (:data:`NO_CACHE` where the caches are not simulated)."""
    if not caches:
        return NO_CACHE
    return " ".join(f"{k}={','.join(str(n) for n in v)}" for k, v in CACHE_MODEL.items())


def command(valgrind: str, dump_dir: Path, caches: bool = False) -> list[str]:
    """The command line before the counted program: callgrind with nothing instrumented until
    the program asks (every thread collects then; the calling thread toggles its own), threads
    scheduled first come first served, no gdbserver (nothing left in the temporary folder by a
    killed process), the caches simulated with the fixed model where
    ``caches`` (for estimated cycles), the hash tables' lookups told apart by their callers
    (:data:`SEPARATED_CALLERS`), dumps into ``dump_dir``."""
    return [
        valgrind,
        "--tool=callgrind",
        "--quiet",
        "--instr-atstart=no",
        "--collect-atstart=yes",
        "--fair-sched=yes",
        # no gdbserver: its vgdb FIFOs in the temporary folder outlived every SIGKILLed counted
        # process (six a run); the dumps are asked for by client requests, not through vgdb
        "--vgdb=no",
        f"--cache-sim={'yes' if caches else 'no'}",
        *(f"--{k}={','.join(str(n) for n in v)}" for k, v in CACHE_MODEL.items() if caches),
        "--dump-instr=yes",  # each instruction: a function's entry counts its calls
        "--compress-strings=no",
        "--compress-pos=no",
        *(f"--separate-callers{depth}={name}" for name, depth in SEPARATED_CALLERS.items()),
        f"--callgrind-out-file={dump_dir / DUMP_PREFIX}.%p",
    ]


#: The requests without an argument, each made a function of its own (:meth:`Requests.fixed`).
FIXED_REQUESTS = (ZERO_STATS, TOGGLE_COLLECT, START_INSTRUMENTATION, STOP_INSTRUMENTATION)


@dataclass
class Requests:
    """callgrind's client requests, sent from this process (under valgrind: the requests act;
    on a real CPU: they do nothing and :meth:`running` is False).

    The toggles around a counted call are inside what it counts: the return from the request
    that switches collection on and the way into the one that switches it off. They are made
    as small and as steady as a call from Python can be: each request without an argument is a
    few bytes of its own with its argument block built in (:meth:`fixed`), called without
    arguments and without releasing the GIL (``ctypes.PYFUNCTYPE``). Built per request from
    Python (an argument array made and freed, a foreign call that drops and takes the GIL),
    the two toggles counted 15.8 k instructions around an empty call, and their allocations
    and the GIL's lock moved a small call's counts by up to 4% between calls and processes
    (docs/gate.md, "The plugin's own instructions")."""

    dump_dir: Path
    _call: ctypes._CFuncPtr | None = None  # type: ignore[name-defined]
    _mem: mmap.mmap | None = None
    _fixed: dict[int, Callable[[], None]] | None = None
    _kept: tuple[object, ...] = ()

    def _request(self, code: int, arg: int = 0) -> int:
        if self._call is None:
            self._call, self._mem = _machine_code(_X86_64, (ctypes.c_void_p,), ctypes.c_uint64)
        block = (ctypes.c_uint64 * 6)(code, arg, 0, 0, 0, 0)
        return int(self._call(ctypes.addressof(block)))

    def fixed(self, code: int) -> Callable[[], None]:
        """The request ``code`` (one of :data:`FIXED_REQUESTS`) as a function of no arguments
        that allocates nothing: all of them are built on the first use of any, in one page."""
        if self._fixed is None:
            blocks = (ctypes.c_uint64 * (6 * len(FIXED_REQUESTS)))()
            code_bytes = b""
            for i, request in enumerate(FIXED_REQUESTS):
                blocks[6 * i] = request
                address = ctypes.addressof(blocks) + 6 * 8 * i
                stub = _MOVABS_RDI + struct.pack("<Q", address) + _X86_64
                code_bytes += stub.ljust(_FIXED_SIZE, b"\xc3")
            first, mem = _machine_code(code_bytes, (), None, python_api=True)
            base = ctypes.cast(first, ctypes.c_void_p).value or 0
            kind = ctypes.PYFUNCTYPE(None)
            self._fixed = {r: kind(base + _FIXED_SIZE * i) for i, r in enumerate(FIXED_REQUESTS)}
            self._kept = (blocks, mem)  # the blocks and the code live as long as the requests
        return self._fixed[code]

    def running(self) -> bool:
        """Whether this process runs under valgrind."""
        return self._request(RUNNING_ON_VALGRIND) != 0

    def start(self) -> None:
        self.fixed(START_INSTRUMENTATION)()

    def stop(self) -> None:
        self.fixed(STOP_INSTRUMENTATION)()

    def zero(self) -> None:
        self.fixed(ZERO_STATS)()

    def toggle(self) -> None:
        self.fixed(TOGGLE_COLLECT)()

    def dump(self, label: str) -> Path:
        """Write the counts since the last zero to a new dump file and return its path."""
        text = ctypes.create_string_buffer(label.encode("utf-8", "replace")[:200])
        self._request(DUMP_STATS_AT, ctypes.addressof(text))
        # callgrind numbers a process's dumps 1, 2, ... whoever asked for them
        _DUMPS[os.getpid()] = number = _DUMPS.get(os.getpid(), 0) + 1
        return self.dump_dir / f"{DUMP_PREFIX}.{os.getpid()}.{number}"


#: The environment settings that choose MKL's and oneDNN's kernels in a process with torch
#: loaded (a counted process sets them to the portable kernels where the run names none:
#: runs/counted.PORTABLE_KERNELS), as the key names them.
TORCH_KERNEL_SETTINGS = (("mkl", "MKL_ENABLE_INSTRUCTIONS"), ("onednn", "ONEDNN_MAX_CPU_ISA"))


def simulated_cpu() -> str:
    """The CPU features the array libraries see in this process (under valgrind: the simulated
    CPU's, which decide their kernels): numpy's dispatch features and torch's CPU capability,
    where loaded, with torch the caps on MKL's and oneDNN's kernels (``mkl:AVX``)."""
    parts: list[str] = []
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        features = None
        for name in ("numpy._core._multiarray_umath", "numpy.core._multiarray_umath"):
            with contextlib.suppress(Exception):
                features = getattr(__import__(name, fromlist=["x"]), "__cpu_features__", None)
            if features:
                break
        if features:
            parts.append("numpy:" + ",".join(sorted(k for k, v in features.items() if v)))
    torch = sys.modules.get("torch")
    if torch is not None:
        with contextlib.suppress(Exception):
            parts.append("torch:" + str(torch.backends.cpu.get_cpu_capability()))
        # the kernels MKL and oneDNN pick inside torch: what the environment caps them at
        for name, variable in TORCH_KERNEL_SETTINGS:
            parts.append(f"{name}:{os.environ.get(variable) or 'default'}")
    return " ".join(parts)


def _machine_code(
    code: bytes, argtypes: tuple[Any, ...], restype: Any, python_api: bool = False
) -> tuple[Any, mmap.mmap]:
    """A function made of ``code``, mapped executable (no C compiler, no extension module);
    ``python_api``: called holding the GIL (a few instructions that never block)."""
    if unsupported_reason() is not None:
        raise CountingUnavailable(str(unsupported_reason()))
    try:
        mem = mmap.mmap(-1, mmap.PAGESIZE, prot=mmap.PROT_READ | mmap.PROT_WRITE | mmap.PROT_EXEC)
    except (OSError, AttributeError) as exc:  # a kernel that refuses executable maps
        raise CountingUnavailable(f"cannot map machine code executable here ({exc})") from None
    mem.write(code)
    address = ctypes.addressof(ctypes.c_char.from_buffer(mem))
    kind = ctypes.PYFUNCTYPE if python_api else ctypes.CFUNCTYPE
    return kind(restype, *argtypes)(address), mem


#: (leaf, subleaf, mask of eax, ebx, ecx, edx) read into the CPUID signature: what glibc,
#: numpy, OpenBLAS and torch choose their code paths by (vendor, family/model, features, cache
#: descriptors, XSAVE sizes, brand). Masked out: the initial APIC ID (leaf 1 ebx bits 24-31:
#: which core ran the read), leaf 4's core and thread counts (eax bits 14-31), and the random
#: number instructions RDRAND (leaf 1 ecx bit 30) and RDSEED (leaf 7 ebx bit 18): valgrind
#: passes the host's bits of those through, and no kernel picks its code path by them.
_FULL = 0xFFFFFFFF
_CPUID_LEAVES: tuple[tuple[int, int, tuple[int, int, int, int]], ...] = (
    (0x0, 0, (_FULL, _FULL, _FULL, _FULL)),
    (0x1, 0, (_FULL, 0x00FFFFFF, _FULL & ~(1 << 30), _FULL)),
    (0x2, 0, (_FULL, _FULL, _FULL, _FULL)),
    *((0x4, i, (0x3FFF, _FULL, _FULL, _FULL)) for i in range(8)),
    (0x7, 0, (_FULL, _FULL & ~(1 << 18), _FULL, _FULL)),
    (0xD, 0, (_FULL, _FULL, _FULL, _FULL)),
    (0xD, 1, (_FULL, _FULL, _FULL, _FULL)),
    *((0x80000000 + i, 0, (_FULL, _FULL, _FULL, _FULL)) for i in range(9)),
)


def cpuid_signature(read: Callable[[int, int], tuple[int, int, int, int]] | None = None) -> str:
    """The CPU this process sees through CPUID, as libraries that pick code paths by it see
    it: vendor, brand, family/model/stepping and a digest of the leaves that decide (features,
    cache descriptors, XSAVE sizes). Under valgrind this is valgrind's simulated CPU, which it
    takes from a fixed table chosen by the host's capability level (valgrind 3.19 on an AVX2 or
    AVX-512 host presents an "Intel(R) Core(TM) i7-4910MQ"), not the host's own CPUID; so the
    same signature on two runners means glibc's string functions and every CPUID-dispatched
    kernel chose alike. ``read(leaf, subleaf)`` gives the four registers (default: the CPUID
    instruction, x86-64 only; elsewhere, or where machine code cannot be mapped, an empty
    string)."""
    if read is not None:
        return _signature(read)
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return ""
    try:
        call, mem = _machine_code(
            _CPUID_X86_64, (ctypes.c_uint32, ctypes.c_uint32, ctypes.c_void_p), None
        )
    except CountingUnavailable:
        return ""

    def instruction(leaf: int, sub: int) -> tuple[int, int, int, int]:
        out = (ctypes.c_uint32 * 4)()
        call(leaf, sub, ctypes.addressof(out))
        return (out[0], out[1], out[2], out[3])

    try:
        return _signature(instruction)
    finally:
        with contextlib.suppress(BufferError):
            mem.close()  # the function is not called again


def _signature(read: Callable[[int, int], tuple[int, int, int, int]]) -> str:
    top, ext_top = read(0, 0)[0], read(0x80000000, 0)[0]
    digest = hashlib.sha256()
    for leaf, sub, masks in _CPUID_LEAVES:
        if leaf > (ext_top if leaf >= 0x80000000 else top):
            continue
        regs = read(leaf, sub)
        digest.update(
            struct.pack("<II4I", leaf, sub, *(r & m for r, m in zip(regs, masks, strict=True)))
        )
    _, b, c, d = read(0, 0)
    vendor = struct.pack("<III", b, d, c).decode("ascii", "replace").strip("\0 ")
    brand = ""
    if ext_top >= 0x80000004:
        raw = b"".join(struct.pack("<4I", *read(leaf, 0)) for leaf in range(0x80000002, 0x80000005))
        brand = " ".join(raw.split(b"\0", 1)[0].decode("ascii", "replace").split())
    family_model = read(1, 0)[0] & 0x0FFF3FFF
    return f"{vendor} {brand!r} {family_model:#x} #{digest.hexdigest()[:12]}"

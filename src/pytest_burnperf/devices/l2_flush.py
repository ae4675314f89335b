"""How much memory a flush of the device's last-level cache must touch (``flush_l2``): twice the
cache, at least 256 MiB, and AMD's Infinity Cache counted where the architecture has one."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    pass


#: The L2 flush zeroes at least this much (as triton's do_bench).
FLUSH_MIN_BYTES = 256 * 1024 * 1024


#: AMD GPUs with an Infinity Cache (MALL) behind the L2, by gfx architecture: the flush must
#: clear it too. The runtime reports the L2 only; sizes from AMD's product specifications (the
#: largest part of each architecture).
INFINITY_CACHE_BYTES = {
    "gfx942": 256 * 2**20,  # MI300X / MI300A / MI325X
    "gfx950": 256 * 2**20,  # MI350 / MI355X
    "gfx1030": 128 * 2**20,  # RX 6800 / 6900 (RDNA 2)
    "gfx1031": 96 * 2**20,
    "gfx1032": 32 * 2**20,
    "gfx1100": 96 * 2**20,  # RX 7900 (RDNA 3)
    "gfx1101": 64 * 2**20,
    "gfx1102": 32 * 2**20,
    "gfx1200": 32 * 2**20,  # RX 9060 (RDNA 4)
    "gfx1201": 64 * 2**20,  # RX 9070
}


def flush_bytes(l2_bytes: int, arch: str = "") -> int:
    """How much the L2 flush zeroes: twice the last-level cache (the L2, plus the Infinity
    Cache of the AMD architectures that have one: ``gfx942:sramecc+:xnack-`` counts as
    ``gfx942``), and at least :data:`FLUSH_MIN_BYTES`."""
    base = arch.split(":", 1)[0].strip().lower()
    return max(FLUSH_MIN_BYTES, 2 * (max(l2_bytes, 0) + INFINITY_CACHE_BYTES.get(base, 0)))

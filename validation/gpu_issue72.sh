#!/usr/bin/env bash
# Issue 72's GPU measurements in one run on a lent GPU (about 9 minutes; the device tool's
# 10-minute limit a command). Writes everything under $OUT (or ./gpu-issue72): the real-GPU
# tests, the gate against stored baselines at a 1% threshold (the device prior's floor), the
# same with another process's kernels beside (--shared), and same-session A/A and planted
# sessions with resident sides. Prepare the environment first (torch, cupy, nvidia-ml-py and
# this package installed); each step is bounded so that one slow step does not eat the rest.
# Everything ends up in one archive, $OUT/issue72.tgz (the device tool brings back 8 files).
set -u
cd "$(dirname "$0")/.."
dest=${OUT:-gpu-issue72}
out=$(mktemp -d)/issue72
mkdir -p "$out" "$dest"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$out/gpu.txt" 2>&1
step() {  # step NAME SECONDS COMMAND...
    local name=$1 secs=$2
    shift 2
    echo "== $name ($(date -u +%H:%M:%S))"
    timeout "$secs" "$@" > "$out/$name.log" 2>&1
    echo "   exit $?"
}
step tests 90 python -m pytest -q -p no:randomly tests/unit/devices tests/unit/core/test_clock_priors.py
step stored 210 python -m validation.gpu_gate --mode stored --sessions 6 --minutes 2.5 \
    --threshold 1% --out "$out/stored.md"
step shared 90 python -m validation.gpu_gate --mode stored --sessions 2 --minutes 0.8 --shared \
    --threshold 1% --out "$out/shared.md"
step resident 150 python -m validation.gpu_gate --mode same-session --sessions 2 --minutes 1.8 \
    --round-start resident --threshold 1% --out "$out/resident.md"
tar czf "$dest/issue72.tgz" -C "$(dirname "$out")" issue72
ls -la "$out" "$dest"

#!/usr/bin/env bash
# Issue 72's GPU measurements in one run on a lent GPU (about 9 minutes; the device tool's
# 10-minute limit a command). Writes everything under $OUT (or ./gpu-issue72): the real-GPU
# tests, the gate against stored baselines at the plugin's defaults (a device-bound kernel
# judged at 2%, its device prior), a planted +3% on every workload of the odd sessions; the same
# baselines judged with another process's kernels beside (--shared); and same-session sessions
# with resident sides. Torch's device-, memory-bound and graph-replayed benchmarks only (the
# lease is short). Prepare the environment first (torch, nvidia-ml-py and this package
# installed; for the same-session step, a folder of wheels holding setuptools and
# PIP_/UV_ FIND_LINKS pointing at it); each step is bounded so that one slow step does not eat
# the rest. Everything ends up in one archive, $OUT/issue72.tgz.
set -u
cd "$(dirname "$0")/.."
dest=${OUT:-gpu-issue72}
out=$(mktemp -d)/issue72
mkdir -p "$out" "$dest"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
python3 -c "import torch, sys; print(sys.version.split()[0], torch.__version__, torch.version.cuda)" >> "$out/gpu.txt" 2>&1
step() {  # step NAME SECONDS COMMAND...
    local name=$1 secs=$2
    shift 2
    echo "== $name ($(date -u +%H:%M:%S))"
    timeout "$secs" "$@" > "$out/$name.log" 2>&1
    echo "   exit $? ($(date -u +%H:%M:%S))"
    tail -3 "$out/$name.log"
}
sel="torch and (matmul or axpy or reduce or graph)"
work=$(mktemp -d)/stored
step tests 80 python3 -m pytest -q -p no:randomly -p no:cacheprovider tests/unit/devices \
    tests/unit/core/test_clock_priors.py tests/unit/host/test_nvml.py
step stored 250 python3 -m validation.gpu_gate --mode stored --sessions 10 --minutes 3.3 \
    --plant 1.03 --select "$sel" --work "$work" --out "$out/stored.md"
step shared 75 python3 -m validation.gpu_gate --mode stored --sessions 2 --minutes 0.4 --shared \
    --keep-baselines --select "$sel" --work "$work" --out "$out/shared.md"
step resident 115 python3 -m validation.gpu_gate --mode same-session --sessions 3 --minutes 1.1 \
    --round-start resident --plant 1.03 --select "$sel" --work "$work-same" \
    --out "$out/resident.md"
# the raw results of every session (each round's samples) beside the reports
mkdir -p "$out/raw-stored" "$out/raw-resident"
cp "$work"/s*.json "$out/raw-stored/" 2>/dev/null
cp "$work-same"/s*.json "$out/raw-resident/" 2>/dev/null
cp -r "$work/baselines" "$out/stored-baselines" 2>/dev/null
tar czf "$dest/issue72.tgz" -C "$(dirname "$out")" issue72
ls -la "$out" "$dest"

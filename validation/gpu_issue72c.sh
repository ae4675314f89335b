#!/usr/bin/env bash
# Issue 72's third GPU run, for the next session with a lent GPU (about 10 minutes): what the
# H200 runs of 2026-11-28 left (docs/validation.md, "The gate at the GPU's own noise").
#  1. another-day: the H200's baselines of that day (kept in docs/data/gpu-gate-h200.json)
#     judged here: on an H200 of the same host class an A/A comparison across days and cards;
#     on another GPU model every verdict must be `incomparable`, naming both models (item 4).
#  2. stored: torch and cupy at the plugin's defaults (a device-bound kernel judged at 1.5%),
#     A/A and +3% on every workload alternating, as many sessions as the step's time allows.
#  3. shared: the same baselines with another process's kernels beside, live.
#  4. memory (issue 75): memory per call on torch-cuda from the caching allocator's counters,
#     recorded, then 2 A/A and 2 planted sessions (a tensor of the input's size held).
# Prepare as for gpu_issue72.sh (the package's wheel and array-api-compat installed). The
# archive $OUT/issue72c.tgz is rewritten after every step.
set -u
cd "$(dirname "$0")/.."
dest=${OUT:-gpu-issue72c}
out=$(mktemp -d)/issue72c
mkdir -p "$out" "$dest"
export PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
step() {  # step NAME SECONDS COMMAND...
    local name=$1 secs=$2
    shift 2
    echo "== $name ($(date -u +%H:%M:%S))"
    timeout "$secs" "$@" > "$out/$name.log" 2>&1
    echo "   exit $? ($(date -u +%H:%M:%S))"
    tail -4 "$out/$name.log"
    tar czf "$dest/issue72c.tgz" -C "$(dirname "$out")" issue72c
}
old=$(mktemp -d)/old
mkdir -p "$old/baselines/linux-x86-64-intel-xeon-16cpu-x86-64-v4-f6m207"
python3 -c "import json,sys; d=json.load(open('docs/data/gpu-gate-h200.json')); json.dump(d['run1']['baselines'], open(sys.argv[1], 'w'))" \
    "$old/baselines/linux-x86-64-intel-xeon-16cpu-x86-64-v4-f6m207/test_gpu_gate.json"
python3 -c "from pytest_burnperf.host.machine import default_machine_id as m; print('machine', m())" | tee -a "$out/gpu.txt"
step another-day 70 python3 -m validation.gpu_gate --mode stored --sessions 1 --keep-baselines \
    --select "torch and (matmul or axpy or reduce or graph)" --machine-id \
    linux-x86-64-intel-xeon-16cpu-x86-64-v4-f6m207 --work "$old" --out "$out/another-day.md"
sel="matmul or axpy or reduce or graph"
work=$(mktemp -d)/stored
step stored 300 python3 -m validation.gpu_gate --mode stored --sessions 16 --minutes 3.8 \
    --plant 1.03 --select "$sel" --work "$work" --out "$out/stored.md"
step shared 130 python3 -m validation.gpu_gate --mode stored --sessions 2 --minutes 0.6 --shared \
    --keep-baselines --select "$sel" --work "$work" --out "$out/shared.md"
step memory 120 python3 -m validation.memory_gate --json "$out/memory-gate-gpu.json" --gpu \
    --sessions 2 --walls 0 --hog 0
mkdir -p "$out/raw"
for f in "$work"/s*.json; do cp "$f" "$out/raw/stored-$(basename "$f")"; done 2>/dev/null
for f in "$old"/s*.json; do cp "$f" "$out/raw/another-day-$(basename "$f")"; done 2>/dev/null
cp -r "$work/baselines" "$out/stored-baselines" 2>/dev/null
tar czf "$dest/issue72c.tgz" -C "$(dirname "$out")" issue72c

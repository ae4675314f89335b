#!/usr/bin/env bash
# Issue 72's second GPU run (after gpu_issue72.sh): another process's kernels beside the
# benchmarks (--shared) against baselines recorded by the first run (carried in BASELINES, a
# folder holding <machine id>/test_gpu_gate.json; recorded afresh where this machine's id
# differs), then more stored-baseline sessions (A/A and +3% on every workload alternating).
# The archive $OUT/issue72b.tgz is rewritten after every step, so a run cut short keeps what
# it measured.
set -u
cd "$(dirname "$0")/.."
dest=${OUT:-gpu-issue72b}
out=$(mktemp -d)/issue72b
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
    tar czf "$dest/issue72b.tgz" -C "$(dirname "$out")" issue72b
}
sel="torch and (matmul or axpy or reduce or graph)"
work=$(mktemp -d)/stored
mkdir -p "$work"
id=$(python3 -c "from pytest_burnperf.host.machine import default_machine_id as m; print(m())")
echo "machine $id" | tee -a "$out/gpu.txt"
keep=()
if [ -d "${BASELINES:-}/$id" ]; then
    cp -r "$BASELINES" "$work/baselines"
    keep=(--keep-baselines)
fi
step shared 150 python3 -m validation.gpu_gate --mode stored --sessions 2 --minutes 0.5 --shared \
    "${keep[@]}" --select "$sel" --work "$work" --out "$out/shared.md"
step stored 190 python3 -m validation.gpu_gate --mode stored --sessions 6 --minutes 1.9 \
    --first 2 --plant 1.03 --keep-baselines --select "$sel" --work "$work" --out "$out/stored.md"
mkdir -p "$out/raw"
cp "$work"/s*.json "$out/raw/" 2>/dev/null
tar czf "$dest/issue72b.tgz" -C "$(dirname "$out")" issue72b

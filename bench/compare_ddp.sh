#!/usr/bin/env bash
# Side-by-side throughput of the harness and PyTorch DDP (gloo) on the same model, data, batch,
# ranks and threads, alternating runs so both see the same machine noise. Prints the median
# samples/s of each over ROUNDS rounds and their ratio. DDP runs twice: as a PyTorch user writes
# it, and tuned as the harness is (its CNN layout, gradient_as_bucket_view, its malloc settings),
# so that the second ratio compares the frameworks alone.
#
#   bash bench/compare_ddp.sh            # needs ./build/harness and python3-torch
#   ROUNDS=5 bash bench/compare_ddp.sh
#   ONLY=mnist_cnn bash bench/compare_ddp.sh   # configurations whose line contains this (also ONLY=gpt)
#   VERBOSE=1 bash bench/compare_ddp.sh        # also every run's samples/s
#   BACKEND=shm bash bench/compare_ddp.sh      # the harness's backend (default allreduce)
#   CNN_BATCH=128 bash bench/compare_ddp.sh    # the CNN's batch per rank (default 64)
#   RANKS='1 4 8 16' bash bench/compare_ddp.sh # the rank counts (default 1 2), as experiments/scale.json
#   HARNESS=/tmp/b/harness PYTHON=python3 bash bench/compare_ddp.sh   # another build, another interpreter
#                                              # (defaults ./build/harness, /usr/bin/python3)
#
# Configurations: mnist_cnn (CNN_BATCH images per rank and 64 × CNN_BATCH Fashion-MNIST images,
# 4096 by default; lr 0.05, 1 epoch),
# iris_mlp (120 rows, batch 4 per rank, lr 0.5, 20 epochs; harness engines torch and blas)
# and gpt (the tiny default model: 2 layers, 2 heads, d_model 64, 64 tokens, vocabulary 256;
# 2048 synthetic sequences, 8 per rank, lr 0.5, 1 epoch; its tuned DDP differs only in
# gradient_as_bucket_view and the malloc settings, there being no CNN to lay out),
# each on 1 and 2 ranks with one thread per rank.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${ROUNDS:-3}
cnn_batch=${CNN_BATCH:-64}
harness=${HARNESS:-./build/harness}
# Debian's interpreter, where python3-torch installs (not a pyenv or venv earlier on PATH).
python=${PYTHON:-/usr/bin/python3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

"$python" -c 'import torch' 2>/dev/null || {
  echo "compare_ddp.sh: needs PyTorch (apt-get install -y python3-torch)" >&2
  exit 2
}

# MODEL: a configuration's model settings, "key=value,..." (gpt's n_layer=2,...; empty for the
# others), written once for both sides: the harness's JSON settings, ddp_baseline.py's flags
# (n_layer=2 -> --n-layer 2).
model_json() {
  local kv
  for kv in ${1//,/ }; do printf ', "%s": %s' "${kv%%=*}" "${kv#*=}"; done
}

# harness_throughput WORKLOAD ENGINE RANKS BATCH DATASET EPOCHS LR MODEL -> samples/s
harness_throughput() {
  local out="$work/h-$RANDOM"
  cat > "$work/exp.json" <<EOF
{"name": "ddp_compare", "settings": {"workload": "$1", "engine": "$2", "ranks": $3,
 "backend": "${BACKEND:-allreduce}",
 "batch_size": $4, "dataset_size": $5, "epochs": $6, "lr": $7, "threads_per_rank": 1,
 "test_size": 100$(model_json "$8")}}
EOF
  "$harness" run "$work/exp.json" --out "$out" > /dev/null
  python3 - "$out/summary.csv" <<'EOF'
import csv, sys
print(next(csv.DictReader(open(sys.argv[1])))["throughput_samples_per_s"])
EOF
}

# ddp_throughput WORKLOAD RANKS BATCH DATASET EPOCHS LR MODEL [--tuned] -> samples/s
# --tuned: the harness's CNN layout (mnist_cnn), gradient_as_bucket_view, and the malloc settings
# a harness rank gives itself (harness/rank/allocator.cpp), so that what is left is the framework.
ddp_throughput() {
  local tunables=() flags=() kv key
  for kv in ${7//,/ }; do
    key=${kv%%=*}
    flags+=("--${key//_/-}" "${kv#*=}")
  done
  [[ "${8:-}" == --tuned ]] &&
    tunables=(-x GLIBC_TUNABLES=glibc.malloc.mmap_threshold=33554432:glibc.malloc.trim_threshold=2147483647)
  # The harness sets these per rank too: without them OpenBLAS starts its own pool of threads.
  mpirun -n "$2" --bind-to none -x MASTER_PORT=$((29500 + RANDOM % 400)) \
    -x OMP_NUM_THREADS=1 -x OPENBLAS_NUM_THREADS=1 -x MKL_NUM_THREADS=1 "${tunables[@]}" \
    "$python" bench/ddp_baseline.py --workload "$1" --batch-size "$3" --dataset-size "$4" \
    --epochs "$5" --lr "$6" --threads 1 "${flags[@]}" ${8:-} |
    python3 -c 'import json, sys; print(json.loads(sys.stdin.read())["samples_per_s"])'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

printf '%-10s %-6s %5s %12s %12s %7s %12s %7s\n' workload engine ranks harness/s ddp/s ratio \
  ddp-tuned/s ratio
for config in "mnist_cnn torch $cnn_batch $((64 * cnn_batch)) 1 0.05" "iris_mlp torch 4 120 20 0.5" \
  "iris_mlp blas 4 120 20 0.5" \
  "gpt torch 8 2048 1 0.5 n_layer=2,n_head=2,d_model=64,seq_len=64,vocab=256"; do
  [[ "$config" == *"${ONLY:-}"* ]] || continue
  read -r workload engine batch dataset epochs lr model <<< "$config"
  for ranks in ${RANKS:-1 2}; do
    : > "$work/h" && : > "$work/d" && : > "$work/t"
    for _ in $(seq "$rounds"); do
      harness_throughput "$workload" "$engine" "$ranks" "$batch" "$dataset" "$epochs" "$lr" "$model" >> "$work/h"
      ddp_throughput "$workload" "$ranks" "$batch" "$dataset" "$epochs" "$lr" "$model" >> "$work/d"
      ddp_throughput "$workload" "$ranks" "$batch" "$dataset" "$epochs" "$lr" "$model" --tuned >> "$work/t"
    done
    h=$(median < "$work/h")
    d=$(median < "$work/d")
    t=$(median < "$work/t")
    printf '%-10s %-6s %5s %12.0f %12.0f %7.2f %12.0f %7.2f\n' "$workload" "$engine" "$ranks" \
      "$h" "$d" "$(awk -v h="$h" -v d="$d" 'BEGIN { print h / d }')" \
      "$t" "$(awk -v h="$h" -v t="$t" 'BEGIN { print h / t }')"
    if [[ -n "${VERBOSE:-}" ]]; then
      echo "  harness runs:   $(xargs printf '%.0f ' < "$work/h")"
      echo "  ddp runs:       $(xargs printf '%.0f ' < "$work/d")"
      echo "  ddp-tuned runs: $(xargs printf '%.0f ' < "$work/t")"
    fi
  done
done

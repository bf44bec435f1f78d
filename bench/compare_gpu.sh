#!/usr/bin/env bash
# One GPU, one rank: the harness's training loop against PyTorch's own (DDP over NCCL, the same
# model, batch, optimizer and synthetic or Fashion-MNIST data; bench/ddp_baseline.py), alternating
# runs so both see the same machine. Prints the median samples/s of each over ROUNDS rounds and
# their ratio, with the GPU's name. docs/gpus.md shows the measured table.
#
#   bash bench/compare_gpu.sh              # needs a CUDA build (HARNESS=path, default ./build/harness)
#   ROUNDS=5 bash bench/compare_gpu.sh
#   ONLY=resnet bash bench/compare_gpu.sh  # configurations whose line contains this
#   VERBOSE=1 bash bench/compare_gpu.sh    # also every run's samples/s
#   PYTHON=/usr/bin/python3 bash bench/compare_gpu.sh   # the interpreter with torch (default python3)
#
# Configurations: mnist_cnn (batch 64, 12800 Fashion-MNIST images, 2 epochs; needs the dataset,
# DATA=folder, default /usr/share/datasets/fashion-mnist) and ResNet-50 (224x224 synthetic images,
# 1000 classes, batch 64, 1280 images, 3 epochs). Both loops count every epoch, the first one's
# warm-up (cuDNN's algorithm search) included.
set -euo pipefail
cd "$(dirname "$0")/.."

rounds=${ROUNDS:-3}
harness=${HARNESS:-./build/harness}
python=${PYTHON:-python3}
data=${DATA:-/usr/share/datasets/fashion-mnist}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1

"$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null || {
  echo "compare_gpu.sh: needs PyTorch with CUDA and a GPU ($python)" >&2
  exit 2
}

# harness_throughput SETTINGS_JSON -> samples/s (one rank, device cuda)
harness_throughput() {
  local out="$work/h-$RANDOM"
  printf '{"name": "gpu_compare", "settings": {"device": "cuda", "ranks": 1, "threads_per_rank": 1, %s}}\n' \
    "$1" > "$work/exp.json"
  "$harness" run "$work/exp.json" --out "$out" > /dev/null
  "$python" - "$out/summary.csv" <<'PYTHON'
import csv, sys
print(next(csv.DictReader(open(sys.argv[1])))["throughput_samples_per_s"])
PYTHON
}

# pytorch_throughput ARGS... -> samples/s
pytorch_throughput() {
  mpirun -n 1 --bind-to none -x MASTER_PORT=$((29500 + RANDOM % 400)) -x OMP_NUM_THREADS=1 \
    "$python" bench/ddp_baseline.py --device cuda --threads 1 --data "$data" "$@" |
    "$python" -c 'import json, sys; print(json.loads(sys.stdin.read())["samples_per_s"])'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

echo "GPU: $("$python" -c 'import torch; print(torch.cuda.get_device_name(0))'), PyTorch $("$python" -c 'import torch; print(torch.__version__)')"
printf '%-10s %12s %12s %7s\n' workload harness/s pytorch/s ratio
configurations=(
  'mnist_cnn|"workload": "mnist_cnn", "data_path": "'"$data"'", "batch_size": 64, "dataset_size": 12800, "test_size": 1000, "epochs": 2, "lr": 0.05|--workload mnist_cnn --batch-size 64 --dataset-size 12800 --epochs 2 --lr 0.05'
  'resnet50|"workload": "resnet", "resnet_depth": 50, "image_size": 224, "num_classes": 1000, "batch_size": 64, "dataset_size": 1280, "test_size": 64, "epochs": 3, "lr": 0.01|--workload resnet --resnet-depth 50 --image-size 224 --num-classes 1000 --batch-size 64 --dataset-size 1280 --epochs 3 --lr 0.01'
)
for configuration in "${configurations[@]}"; do
  IFS='|' read -r label settings arguments <<< "$configuration"
  [[ "$configuration" == *"${ONLY:-}"* ]] || continue
  : > "$work/h" && : > "$work/p"
  for _ in $(seq "$rounds"); do
    harness_throughput "$settings" >> "$work/h"
    # shellcheck disable=SC2086  # the arguments are words
    pytorch_throughput $arguments >> "$work/p"
  done
  h=$(median < "$work/h")
  p=$(median < "$work/p")
  printf '%-10s %12.0f %12.0f %7.2f\n' "$label" "$h" "$p" "$(awk -v h="$h" -v p="$p" 'BEGIN { print h / p }')"
  if [[ -n "${VERBOSE:-}" ]]; then
    echo "  harness runs: $(xargs printf '%.0f ' < "$work/h")"
    echo "  pytorch runs: $(xargs printf '%.0f ' < "$work/p")"
  fi
done

#!/usr/bin/env bash
# Makes the reports a user opens (a comm run with its cost model; a traced training run with its
# prediction), then opens both in Debian's headless chromium (report_test.mjs). CTest runs it as
# report_in_browser; run by hand: tests/browser/report_in_browser.sh build/harness /tmp/reports
set -euo pipefail
harness=$1 out=$2
here=$(cd "$(dirname "$0")" && pwd)
[ -d "$here/node_modules/playwright-core" ] ||
  { echo "report_in_browser: no playwright-core in $here/node_modules; run bash .ci/install-deps" >&2; exit 2; }
rm -rf "$out" && mkdir -p "$out"
cat > "$out/comm.json" <<'JSON'
{"name": "report_comm",
 "settings": {"kind": "comm", "ranks": 2, "comm_max_bytes": 1048576, "comm_size_factor": 16,
              "comm_iterations": 5, "comm_warmup_iterations": 2},
 "sweep": {"backend": ["allreduce", "ring"]}}
JSON
cat > "$out/train.json" <<'JSON'
{"name": "report_train",
 "settings": {"workload": "iris_mlp", "epochs": 3, "batch_size": 4, "lr": 0.5, "threads_per_rank": 1},
 "sweep": {"ranks": [1, 2]}}
JSON
"$harness" run "$out/comm.json" --out "$out/comm" > "$out/comm.log"
"$harness" run "$out/train.json" --out "$out/train" --timeline > "$out/train.log"
"$harness" model "$out/comm" --predict "$out/train" > "$out/model.log"
# FILE=plot,plot: plots that page must show (besides rendering every one it has).
node "$here/report_test.mjs" "$out/comm/report.html=bandwidth,latency,model_fit" \
  "$out/train/report.html=speedup,efficiency,loss_samples,efficiency_loss,timeline,prediction"

#!/usr/bin/env bash
# A build against MPICH through the slurm launcher, on the test cluster's two nodes
# (slurm/local-cluster.sh, the CTest fixture SlurmCluster; SLURM_CONF set): every backend that
# spans nodes reduces exactly on 2 nodes x 2 ranks with ranks started by srun --mpi=pmi2 (SLURM's
# pmi2 plugin serves the PMI of Debian's hydra-built MPICH), hier trains the Iris MLP there to
# allreduce's loss, and hydra's own mpiexec, which reads the allocation and starts its proxies
# through srun, runs a point too (its proxies reach it by the address of HYDRA_IFACE: the test
# cluster's node names resolve nowhere).
#   tests/slurm/mpich_slurm_test.sh HARNESS SCRATCH_DIR
set -euo pipefail
harness=$1 scratch=$2
fail() { echo "mpich_slurm_test: $*" >&2; exit 1; }
rm -rf "$scratch" && mkdir -p "$scratch"

run() {  # NAME EXPERIMENT_JSON
  printf '%s\n' "$2" > "$scratch/$1.json"
  local status=0
  "$harness" run "$scratch/$1.json" --out "$scratch/$1" > "$scratch/$1.log" 2>&1 || status=$?
  if [[ $status != 0 ]]; then cat "$scratch/$1.log"; fail "$1: harness run exited $status"; fi
}
check() {  # NAME LAUNCH_WORD: every record ok on hnode1 and hnode2, sums exact, started by LAUNCH_WORD
  python3 - "$scratch/$1" "$2" <<'PY' || fail "$1: the records above are not what they should be"
import csv, glob, json, os, sys
out, launch_word = sys.argv[1], sys.argv[2]
two_nodes = [{"host": "hnode1", "ranks": [0, 1]}, {"host": "hnode2", "ranks": [2, 3]}]
bad = []
for path in sorted(glob.glob(os.path.join(out, "points", "*.json"))):
    record = json.load(open(path))
    name = record["settings"]["backend"]
    if record["status"] != "ok": bad.append(f"{name}: {record['status']} {record.get('reason', '')}")
    m = record.get("measurements", {})
    if "MPICH" not in m.get("mpi_library", ""): bad.append(f"{name}: library {m.get('mpi_library')}")
    if m.get("nodes") != two_nodes: bad.append(f"{name}: nodes {m.get('nodes')}")
    if launch_word not in record["launch"]["command"]: bad.append(f"{name}: command {record['launch']['command']}")
    for size in m.get("sizes", []):
        if size["wrong"] != 0: bad.append(f"{name}: {size['wrong']} wrong at {size['bytes']} B")
    print(f"{name}: ok on {[n['host'] for n in m.get('nodes', [])]}")
rows = list(csv.DictReader(open(os.path.join(out, "summary.csv"))))
losses = [float(row["final_loss"]) for row in rows if row.get("final_loss")]
if len(losses) > 1 and max(losses) - min(losses) > 1e-3: bad.append(f"final losses differ: {losses}")
print("\n".join(bad))
sys.exit(1 if bad else 0)
PY
}

srun_launcher='"launcher": {"name": "slurm", "mode": "pack", "setup": ["export GLOO_SOCKET_IFNAME=eth0"]}'
run comm '{"name": "mpich_across", '"$srun_launcher"',
  "settings": {"kind": "comm", "ranks": 4, "nodes": 2, "timeout_s": 120, "comm_min_bytes": 4,
               "comm_max_bytes": 4194304, "comm_size_factor": 32, "comm_iterations": 3, "comm_warmup_iterations": 1},
  "sweep": {"backend": ["allreduce", "ring", "ps", "hier", "gloo"]}}'
check comm --mpi=pmi2
run train '{"name": "mpich_across_train", '"$srun_launcher"',
  "settings": {"workload": "iris_mlp", "epochs": 20, "ranks": 4, "nodes": 2, "timeout_s": 120, "threads_per_rank": 1},
  "sweep": {"backend": ["hier", "allreduce"]}}'
check train --mpi=pmi2
run hydra '{"name": "mpich_hydra", "launcher": {"name": "slurm", "mode": "pack", "start_ranks_with": "mpirun",
  "setup": ["export HYDRA_IFACE=eth0"]},
  "settings": {"kind": "comm", "ranks": 4, "nodes": 2, "ranks_per_node": 2, "timeout_s": 120, "comm_min_bytes": 4,
               "comm_max_bytes": 65536, "comm_size_factor": 32, "comm_iterations": 3, "comm_warmup_iterations": 1,
               "backend": "hier"}}'
check hydra -ppn
echo "mpich_slurm_test: every backend across two SLURM nodes on MPICH, through srun --mpi=pmi2 and hydra"

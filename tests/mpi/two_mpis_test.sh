#!/usr/bin/env bash
# One sweep, two builds of the harness against two MPIs (docs/mpi.md): every point runs, each
# started by its own build's launcher (Open MPI's mpirun, hydra's mpiexec), and each record names
# its build's MPI library: the comm benchmark of three backends per build; and harness check
# compares the two MPIs when told to.
#   tests/mpi/two_mpis_test.sh OPENMPI_HARNESS MPICH_HARNESS SCRATCH_DIR
set -euo pipefail
openmpi_harness=$1 mpich_harness=$2 scratch=$3
fail() { echo "two_mpis_test: $*" >&2; exit 1; }

rm -rf "$scratch" && mkdir -p "$scratch"
cat > "$scratch/two_mpis.json" <<'JSON'
{
  "name": "two_mpis",
  "settings": {"kind": "comm", "ranks": 2, "threads_per_rank": 1, "comm_min_bytes": 4, "comm_max_bytes": 65536,
               "comm_size_factor": 16, "comm_iterations": 5, "comm_warmup_iterations": 1, "timeout_s": 120},
  "sweep": {"backend": ["allreduce", "shm", "hier"]}
}
JSON
# The orchestrator is the MPICH build's; the Open MPI build's points start with Open MPI's mpirun.
status=0
"$mpich_harness" run "$scratch/two_mpis.json" --out "$scratch/out" \
    --build "openmpi=$openmpi_harness" --build "mpich=$mpich_harness" > "$scratch/run.log" 2>&1 || status=$?
if [[ $status != 0 ]]; then cat "$scratch/run.log"; fail "harness run exited $status"; fi

records=("$scratch"/out/points/*.json)
((${#records[@]} == 6)) || fail "expected 6 records, found ${#records[@]}"
python3 - "${records[@]}" <<'PY' || fail "the records above do not say what they should"
import json, os, sys
seen = set()
for path in sys.argv[1:]:
    record = json.load(open(path))
    build = record["build"]["name"]
    library = record["measurements"]["mpi_library"]
    command = " ".join(record["launch"]["command"])
    problems = []
    if record["status"] != "ok": problems.append("status " + record["status"])
    if build == "openmpi" and "Open MPI" not in library: problems.append("library " + library)
    if build == "mpich" and "MPICH" not in library: problems.append("library " + library)
    # Each build's ranks start with its own MPI's launcher: hydra's takes -genv, Open MPI's -x.
    launcher = os.path.basename(record["launch"]["command"][0])
    if build == "openmpi" and ("mpirun" not in launcher or "-genv" in command): problems.append("started by " + command)
    if build == "mpich" and ("mpiexec" not in launcher or " -x " in command): problems.append("started by " + command)
    for size in record["measurements"].get("sizes", []):
        if size["wrong"] != 0: problems.append(f"{size['wrong']} wrong at {size['bytes']} B")
    if problems: print(path, build, "; ".join(problems))
    seen.add((build, record["settings"]["backend"]))
    if problems: sys.exit(1)
if len(seen) != 6: print("points seen:", sorted(seen)); sys.exit(1)
PY
# harness check compares the two MPIs' timings only when asked to (--allow-other-mpi): exit 0 or 1
# (MPICH may be slower), a note per configuration naming both libraries, nothing not comparable.
status=0
"$mpich_harness" check "$scratch/out" --against '{"build": "openmpi"}' > "$scratch/refused.log" 2>&1 || status=$?
[[ $status == 2 ]] && grep -q 'MPI library "MPICH Version: 4.0" against "Open MPI v4.1"' "$scratch/refused.log" ||
  { cat "$scratch/refused.log"; fail "check without --allow-other-mpi: expected exit 2 naming both libraries, got $status"; }
status=0
"$mpich_harness" check "$scratch/out" --against '{"build": "openmpi"}' --allow-other-mpi > "$scratch/check.log" 2>&1 ||
  status=$?
notes=$(grep -c 'compared with "Open MPI v4.1" (.*; --allow-other-mpi)' "$scratch/check.log" || true)
if [[ $status -gt 1 || $notes != 3 ]] || grep -q 'NOT COMPARABLE' "$scratch/check.log"; then
  cat "$scratch/check.log"; fail "check --allow-other-mpi: expected exit 0 or 1 and 3 notes, got exit $status and $notes"
fi
# One mpirun_args list cannot speak both launchers' languages: refused before anything runs.
sed 's/"name": "two_mpis",/"name": "two_mpis", "launcher": {"name": "local", "mpirun_args": ["--mca", "btl", "self,vader"]},/' \
    "$scratch/two_mpis.json" > "$scratch/with_arguments.json"
status=0
output=$("$mpich_harness" run "$scratch/with_arguments.json" --out "$scratch/refused" \
         --build "openmpi=$openmpi_harness" --build "mpich=$mpich_harness" 2>&1) || status=$?
if [[ $status != 2 || $output != *"launcher.mpirun_args: the sweep's builds start with two MPIs' launchers (mpich, openmpi)"* ||
      $(wc -l <<<"$output") != 1 || -e $scratch/refused ]]; then
  echo "$output"; fail "mpirun_args across two MPIs: expected one line and exit 2 before anything ran, got exit $status"
fi
echo "two_mpis_test: 6 points ok, each record naming its build's MPI"

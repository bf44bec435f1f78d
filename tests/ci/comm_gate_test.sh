#!/usr/bin/env bash
# .ci/comm-gate's decisions (docs/ci-gate.md), against a fake harness: what it does when points
# fail or sum wrong, when check finds a regression once or twice, when too many rows are
# inconclusive, when head is the base commit, and when a run cannot start. The gate runs
# ./build/harness from its own tree, so each case copies the script into a scratch tree whose
# build/harness prints a canned check and exits as the case says.
#
#   bash tests/ci/comm_gate_test.sh SOURCE_DIR SCRATCH_DIR
set -uo pipefail
source_dir=$1
scratch=$2
rm -rf "$scratch"
mkdir -p "$scratch"
failures=0

# Rows as check prints them (its console table), for the fake's canned output.
header='verdict        point         configuration                against           metric           size   baseline    current unit       change       95% interval         n note'
busbw_row='REGRESSION     p003-46232bb6 comm ring build=head         build=base        busbw           4 KiB     0.4096     0.1441 GB/s       -64.8%  [-96.0%, -20.8%]      5/5p'
other_size_row='REGRESSION     p003-46232bb6 comm ring build=head         build=base        busbw          16 KiB     0.8193     0.2882 GB/s       -64.8%  [-96.0%, -20.8%]      5/5p'
status_row='REGRESSION     p003-46232bb6 comm ring build=head         build=base        status                         -          -                 -                  -         - failing where its reference does not: 1 of 3 repeat(s) failed: failed (rank 1: Killed)'
wrong_row='REGRESSION     p003-46232bb6 comm ring build=head         build=base        wrong                          -          -                 -                  -         - summing wrong where its reference does not: #wrong 3 at 4 KiB in 1 of 4 repeat(s)'
pass_row='PASS           p001-0a0b0c0d comm allreduce build=head    build=base        busbw           4 KiB     0.4096     0.4100 GB/s        +0.1%  [-2.0%, +2.2%]      6/6p'
undecided_row='INCONCLUSIVE   p001-0a0b0c0d comm allreduce build=head    build=base        busbw          16 KiB     0.8193     0.7000 GB/s       -14.6%  [-40.0%, +10.0%]     6/6p'
missing_row='MISSING        p005-11112222 comm ps build=head           build=base        all                            -          -                 -                  -         - not in the baseline'
both_failed_row='FAILED         p003-46232bb6 comm ring build=head         build=base        status                         -          -                 -                  -         - failing on both sides'

# make_tree NAME RUN_EXIT_1 CHECK_EXIT_1 CHECK_ROWS_1 [RUN_EXIT_2 CHECK_EXIT_2 CHECK_ROWS_2 ...]: a
#   scratch tree with the gate's scripts and a fake harness whose n-th run and check answer with
#   the n-th triple (rows separated by newlines). The fake's own commit is HEAD_COMMIT (default
#   0123456789ab), the base commit in its tree's ci-comm.commit 89abcdef0123...
make_tree() {
  local tree="$scratch/$1"
  shift
  mkdir -p "$tree/.ci" "$tree/build" "$tree/experiments/baselines" "$tree/answers"
  cp "$source_dir/.ci/comm-gate" "$source_dir/.ci/gate-proof" "$tree/.ci/"
  printf '# base\n89abcdef0123456789abcdef0123456789abcdef\n' > "$tree/experiments/baselines/ci-comm.commit"
  echo "${HEAD_COMMIT:-0123456789ab}" > "$tree/answers/head_commit"
  local call=1
  while (($# >= 3)); do
    printf '%s\n' "$1" > "$tree/answers/run_exit_$call"
    printf '%s\n' "$2" > "$tree/answers/check_exit_$call"
    printf '%s\n%s\n' "$header" "$3" > "$tree/answers/check_rows_$call"
    shift 3
    call=$((call + 1))
  done
  cat > "$tree/build/harness" <<'FAKE'
#!/usr/bin/env bash
# The n-th `run` and `check` of the gate answer with answers/*_n.
answers=$(dirname "$0")/../answers
command=$1
if [[ $command == --version ]]; then echo "harness 0.3.0 ($(cat "$answers/head_commit"))"; exit 0; fi
if [[ $command == check && $2 == --help ]]; then
  echo "  reduce_time    median time of one allreduce per message size (us, lower is better; 15%, 0.5 us)"
  exit 0
fi
count_file=$answers/${command}_calls
n=$(( $(cat "$count_file" 2>/dev/null || echo 0) + 1 )); echo $n > "$count_file"
case $command in
  run)
    # The results directory, as harness run makes it.
    previous=""
    for argument in "$@"; do
      if [[ $previous == --out ]]; then mkdir -p "$argument"; fi
      previous=$argument
    done
    echo "fake run $n"
    printf '%s\n' "$*" > "$answers/run_arguments_$n"
    exit "$(cat "$answers/run_exit_$n")" ;;
  check)
    # The gate holds base's records to the base commit.
    [[ " $* " == *" --expect-commit base=89abcdef0123456789abcdef0123456789abcdef "* ]] || { echo "no --expect-commit"; exit 2; }
    cat "$answers/check_rows_$n"
    exit "$(cat "$answers/check_exit_$n")" ;;
esac
exit 2
FAKE
  chmod +x "$tree/build/harness"
}

# gate_case NAME EXPECTED_EXIT ANSWERS...: comm-gate in a tree of its own.
gate_case() {
  local name=$1 expected=$2
  shift 2
  local tree="$scratch/$name"
  make_tree "$name" "$@"
  local status=0
  (cd "$tree" && bash .ci/comm-gate "$tree/out" /base/harness > "$tree/gate.log" 2>&1) || status=$?
  if [[ $status != "$expected" ]]; then
    echo "FAIL $name: comm-gate exited $status, expected $expected" >&2
    sed 's/^/    /' "$tree/gate.log" >&2
    failures=$((failures + 1))
  else
    echo "ok   $name (exit $status)"
  fi
}

# A slower size in both runs: confirmed.
gate_case regressed_twice 1 0 1 "$busbw_row" 0 1 "$busbw_row"
# Regressed in the first run only, or at another size in the second: not confirmed.
gate_case regressed_once 0 0 1 "$busbw_row" 0 0 ""
gate_case regressed_elsewhere 0 0 1 "$busbw_row" 0 1 "$other_size_row"
# Head's points fail where base's do not (harness run exits 1): a regression, which check must be
# run to see, and which fails the gate at once: the fake has no answer for a second run.
gate_case head_fails 1 1 1 "$status_row"
# So does a head summing wrong where base does not, beside a timing regression to confirm.
gate_case head_sums_wrong 1 0 1 "$wrong_row
$busbw_row"
# A timing regression not confirmed, and a failing head in the confirming run: fails.
gate_case head_fails_in_the_confirming_run 1 0 1 "$busbw_row" 1 1 "$status_row"
# Points failing on both sides (check exits 4 under --strict): the machine, not the change; nothing
# to judge. So is a configuration missing, even beside a timing regression (check exits 1 then).
gate_case both_fail 2 1 4 "$both_failed_row"
gate_case missing_beside_a_regression 2 0 1 "$busbw_row
$missing_row"
# Base alone failed a repeat (check compares without it, notes it, and exits 0): judged as usual.
gate_case base_fails_once 0 1 0 "$pass_row"
# A run that cannot start at all.
gate_case run_refused 2 2 0 ""
# Inconclusive rows only warn, up to 20% of the rows; above, the run is undecided (exit 2).
gate_case inconclusive_few 0 0 3 "$undecided_row
$pass_row
$pass_row
$pass_row
$pass_row"
gate_case inconclusive_many 2 0 3 "$undecided_row
$undecided_row
$pass_row
$pass_row" 0 3 "$undecided_row
$undecided_row
$pass_row
$pass_row"
# An undecided first run without a regression is made again, and the second run decides.
gate_case inconclusive_then_decided 0 0 3 "$undecided_row
$undecided_row
$pass_row
$pass_row" 0 0 "$pass_row
$pass_row
$pass_row
$pass_row"
gate_case inconclusive_then_regressed 2 0 3 "$undecided_row
$undecided_row
$pass_row" 0 1 "$busbw_row
$pass_row
$pass_row"
# A regression confirmed in both runs fails the gate (1), however many rows were inconclusive.
gate_case confirmed_among_many_inconclusive 1 0 1 "$busbw_row
$undecided_row
$undecided_row" 0 1 "$busbw_row
$undecided_row
$undecided_row"
# Head built from the base commit: nothing to compare.
HEAD_COMMIT=89abcdef0123 gate_case head_is_base 2 0 0 "$pass_row"

# gate-proof: the delay is sized from the gate's run (the fastest 4 KiB time, 0.7 us: 4 x 15% is
# 0.42 us, below twice reduce_time's 0.5 us floor, so 1.00 us), head alone gets it, and the gate
# must fail; a gate that passes fails the proof.
proof_rows='PASS           p001-0a0b0c0d comm allreduce build=head    build=base        reduce_time     4 KiB      2.000      2.010 us         +0.5%    [-2.0%, +3.0%]      6/6p
PASS           p007-3c959309 comm shm build=head          build=base        reduce_time     4 KiB      0.700      0.690 us         -1.4%    [-3.0%, +1.0%]      6/6p
PASS           p007-3c959309 comm shm build=head          build=base        reduce_time    16 KiB      0.650      0.660 us         +1.5%    [-3.0%, +4.0%]      6/6p'
proof_case() {
  local name=$1 expected=$2
  shift 2
  local tree="$scratch/$name"
  make_tree "$name" "$@"
  mkdir -p "$tree/gate"
  printf '%s\n%s\n' "$header" "$proof_rows" > "$tree/gate/check.txt"
  local status=0
  (cd "$tree" && bash .ci/gate-proof gate "$tree/proof" /base/harness > "$tree/proof.log" 2>&1) || status=$?
  if [[ $status != "$expected" ]] || ! grep -q '"inject_comm_delay_us": \[0, 1.00\]' "$tree/answers/run_arguments_1"; then
    echo "FAIL $name: gate-proof exited $status, expected $expected, with a 1.00 us delay" >&2
    sed 's/^/    /' "$tree/proof.log" "$tree/answers/run_arguments_1" >&2
    failures=$((failures + 1))
  else
    echo "ok   $name (exit $status)"
  fi
}
proof_case proof_fires 0 0 1 "$busbw_row" 0 1 "$busbw_row"
proof_case proof_does_not_fire 1 0 0 "$pass_row"

if ((failures > 0)); then
  echo "$failures case(s) failed" >&2
  exit 1
fi

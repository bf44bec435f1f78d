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
both_failed_row='FAILED         p003-46232bb6 comm ring build=head         build=base        status                         -          -                 -                  -         - failing on both sides'

# gate_case NAME EXPECTED_EXIT RUN_EXIT_1 CHECK_EXIT_1 CHECK_ROWS_1 [RUN_EXIT_2 CHECK_EXIT_2 CHECK_ROWS_2]
#   the fake's answers for the first measurement and, if the gate makes one, the confirmation
#   (rows separated by newlines). The fake's own commit is HEAD_COMMIT (default 0123456789ab), the
#   base commit in its tree's ci-comm.commit 89abcdef0123...
gate_case() {
  local name=$1 expected=$2
  shift 2
  local tree="$scratch/$name"
  mkdir -p "$tree/.ci" "$tree/build" "$tree/experiments/baselines" "$tree/answers"
  cp "$source_dir/.ci/comm-gate" "$tree/.ci/comm-gate"
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
# Points failing on both sides: the machine, not the change; nothing to judge.
gate_case both_fail 2 1 0 "$both_failed_row"
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
$pass_row"
# Head built from the base commit: nothing to compare.
HEAD_COMMIT=89abcdef0123 gate_case head_is_base 2 0 0 "$pass_row"

if ((failures > 0)); then
  echo "$failures case(s) failed" >&2
  exit 1
fi

#!/usr/bin/env bash
# .ci/comm-gate's decisions (docs/ci-gate.md), against a fake harness: what it does when points
# fail, when check finds a regression once or twice, and when a run cannot start. The gate runs
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
both_failed_row='FAILED         p003-46232bb6 comm ring build=head         build=base        status                         -          -                 -                  -         - failing on both sides'

# gate_case NAME EXPECTED_EXIT RUN_EXIT_1 CHECK_EXIT_1 CHECK_ROWS_1 [RUN_EXIT_2 CHECK_EXIT_2 CHECK_ROWS_2]
#   the fake's answers for the first measurement and, if the gate makes one, the confirmation.
gate_case() {
  local name=$1 expected=$2
  shift 2
  local tree="$scratch/$name"
  mkdir -p "$tree/.ci" "$tree/build" "$tree/experiments" "$tree/answers"
  cp "$source_dir/.ci/comm-gate" "$tree/.ci/comm-gate"
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
# Head's points fail where base's do not, in both runs (harness run exits 1): a regression, which
# check must be run to see.
gate_case head_fails_twice 1 1 1 "$status_row" 1 1 "$status_row"
gate_case head_fails_once 0 1 1 "$status_row" 0 0 ""
# Points failing on both sides: the machine, not the change; nothing to judge.
gate_case both_fail 2 1 0 "$both_failed_row"
# A run that cannot start at all.
gate_case run_refused 2 2 0 ""
# Inconclusive rows only warn.
gate_case inconclusive 0 0 3 ""

if ((failures > 0)); then
  echo "$failures case(s) failed" >&2
  exit 1
fi

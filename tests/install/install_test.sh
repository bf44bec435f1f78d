#!/usr/bin/env bash
# `cmake --install` into a temporary prefix, then the installed harness run with the build and
# source trees hidden (a private mount namespace mounts an empty tmpfs over each): it must find
# everything it reads at run time under PREFIX/share/harness. It runs a small sweep with the
# local launcher (the Iris CSV, mpirun of the installed `harness worker`, gnuplot's plots, the
# report) and a SLURM dry run of a shipped experiment (the job script starts the installed binary).
#
#   install_test.sh BUILD_DIR SOURCE_DIR
# Needs root (unshare --mount); exits 77 (CTest: skipped) without it.
set -euo pipefail
build=$(realpath "$1")
source=$(realpath "$2")
if [[ $(id -u) != 0 ]]; then
  echo "skipped: hiding the build and source trees needs root (unshare --mount)"
  exit 77
fi
# Under /tmp itself, never $TMPDIR: a TMPDIR inside the source tree would be hidden with it.
work=$(mktemp -d /tmp/harness-install-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
case $work/ in "$source"/* | "$build"/*)
  echo "FAIL: $work lies inside the trees the test hides"; exit 1 ;;
esac
prefix=$work/opt/harness
cmake --install "$build" --prefix "$prefix" > "$work/install.log"

fail() { echo "FAIL: $*" >&2; exit 1; }
for file in bin/harness bin/harness-worker bin/harness-comm-worker bin/harness-simulated-node share/harness/experiments/speedup.json share/harness/experiments/schema.json \
            share/harness/data/iris.csv share/harness/data/models/fashion_convnet.pt share/harness/slurm/job.sh.in \
            share/doc/harness/README.md; do
  [[ -e $prefix/$file ]] || fail "cmake --install put no $file under $prefix"
done
# The installed documentation's links between its pages resolve, as they do in the source tree.
while IFS= read -r page; do
  while IFS= read -r target; do
    [[ -e $(dirname "$page")/$target ]] || fail "${page#$prefix/} links to $target, which is not installed"
  done < <(grep -o '](\([^)#:]*\.md\)' "$page" | sed 's/^](//')
done < <(find "$prefix/share/doc/harness" -name '*.md')

cat > "$work/small.json" <<'JSON'
{"name": "installed", "settings": {"workload": "iris_mlp", "epochs": 3, "threads_per_rank": 1, "timeout_s": 120},
 "sweep": {"ranks": [1, 2]}}
JSON
# A comm point runs in the other installed rank program, harness-comm-worker.
cat > "$work/comm.json" <<'JSON'
{"name": "installed_comm", "settings": {"kind": "comm", "ranks": 2, "comm_max_bytes": 65536, "timeout_s": 120}}
JSON

# Everything below runs where the trees are empty folders.
export prefix work build source
unshare --mount --propagation private bash -euo pipefail -c '
  fail() { echo "FAIL: $*" >&2; exit 1; }
  mount -t tmpfs harness-hidden "$source"
  if [[ $build != "$source"/* ]]; then mount -t tmpfs harness-hidden "$build"; fi
  [[ -z $(ls -A "$source") ]] || fail "the source tree is still visible"
  harness=$prefix/bin/harness
  cd "$work"

  version=$("$harness" --version)
  echo "$version"
  [[ $version == *"resources: $prefix/share/harness (installed)"* ]] ||
    fail "--version does not say the resources are the installed ones: $version"
  "$harness" schema | cmp -s - "$prefix/share/harness/experiments/schema.json" ||
    fail "harness schema differs from the installed experiments/schema.json"

  "$harness" run small.json --out "$work/out" > run.log 2>&1 || { cat run.log; fail "the small sweep failed"; }
  [[ $(wc -l < "$work/out/summary.csv") == 3 ]] || { cat run.log; fail "summary.csv does not hold 2 runs"; }
  for file in report.html plots/speedup.svg; do
    [[ -s $work/out/$file ]] || { cat run.log; fail "no $file"; }
  done
  grep -q "$harness" "$work/out/points/"*.json || fail "the records do not name the installed binary"
  "$harness" run comm.json --out "$work/comm" > comm.log 2>&1 || { cat comm.log; fail "the comm point failed"; }

  # A relative model_path is found in the installed data folder (docs/own-model.md).
  "$harness" run "$prefix/share/harness/experiments/own_model.json" --dry-run > own.log 2>&1 ||
    { cat own.log; fail "own_model.json does not find its installed model"; }
  "$harness" run "$prefix/share/harness/experiments/speedup.json" --launcher slurm --dry-run \
      > dry.log 2>&1 || { cat dry.log; fail "the SLURM dry run failed"; }
  grep -q "^#SBATCH" dry.log || { cat dry.log; fail "the SLURM dry run shows no job script"; }
  grep -q "'"'"'$harness'"'"' '"'"'worker'"'"'" dry.log || { cat dry.log; fail "the job script does not start the installed harness worker"; }
  echo "the installed harness ran from $prefix with the build and source trees hidden"
'

#!/bin/bash
# A real two-node SLURM cluster on one machine, for the tests (CTest fixture) and for trying the
# SLURM launcher locally. Needs root, iproute2 (`ip netns`), util-linux (`unshare`), munge and
# Debian's SLURM 22.05 (slurmctld, slurmd, slurm-client).
#
#   slurm/local-cluster.sh start|stop|status|env [DIR]
#   slurm/local-cluster.sh stop-node|start-node NODE [DIR]      (NODE: hnode1 or hnode2)
#
# DIR defaults to $HARNESS_SLURM_DIR, else ./build/slurm-cluster. Everything but munged's socket
# (/run/harness-munge-*) lives under DIR: slurm.conf and gres.conf, the munge key, state and spool
# dirs, pid files, logs (DIR/log), the job completion file (DIR/jobcomp.txt) and the recorded PIDs
# (DIR/pids). Each node has 2 GPUs as SLURM counts them (Gres=gpu:2, no GPU behind them). Clients only need
#   eval "$(slurm/local-cluster.sh env DIR)"        # export SLURM_CONF=DIR/slurm.conf
# `start` reads HARNESS_SLURM_MAX_ARRAY_SIZE (default 4: tests split arrays at this limit),
# HARNESS_SLURM_MIN_JOB_AGE (default 60: finished jobs stay in squeue 60-120 s; 0 = never purge,
# else >= 2), HARNESS_SLURM_PORT (slurmctld port, default 6917: not the stock 6817, so a real
# SLURM on the same machine does not clash) and HARNESS_SLURM_SUBNET (default 10.213.47); they
# apply when the cluster is (re)created: `start` on a running cluster changes nothing (it still
# refuses a bad value).
#
# Layout: slurmctld and munged run in the root namespace. Each node's slurmd runs in its own
# network namespace (own IP, own port 6818) AND UTS namespace (hostname = node name), so jobs see
# two hosts and Open MPI talks TCP between them. A bridge in the root namespace (NET.1, also the
# controller's address) joins one veth pair per node (NET.11, NET.12). No routing, no ip_forward:
# traffic only goes between addresses this script assigned. Only one such cluster per machine
# (fixed names); the bridge's ifalias records which DIR owns the network pieces.
set -euo pipefail

NODES=(hnode1 hnode2)
NET=${HARNESS_SLURM_SUBNET:-10.213.47}
PORT=${HARNESS_SLURM_PORT:-6917}
BR=hcbr0                               # bridge; root-side veths are hc-NODE; namespaces are hc-NODE

die() { echo "local-cluster.sh: $*" >&2; exit 1; }
usage() { sed -n '6,7p' "$0" | sed 's/^#  */usage: /' >&2; exit 2; }

cmd=${1:-}; [ $# -ge 1 ] && shift || usage
case $cmd in
  stop-node|start-node) node=${1:-}; [ $# -ge 1 ] && shift || usage
    [[ " ${NODES[*]} " == *" $node "* ]] || die "unknown node '$node' (nodes: ${NODES[*]})" ;;
  start|stop|status|env) ;;
  *) usage ;;
esac
[ $# -le 1 ] || usage
DIR=$(realpath -m -- "${1:-${HARNESS_SLURM_DIR:-./build/slurm-cluster}}")
CONF=$DIR/slurm.conf PIDS=$DIR/pids LOG=$DIR/log
# munged wants every directory above its socket open to all (x), which DIR's need not be (a clone
# in a mktemp -d folder): the socket lives under /run, in a folder named after DIR.
MSOCK=/run/harness-munge-$(printf %s "$DIR" | md5sum | cut -c1-12)/munge.socket

need_root() {
  [ "$(id -u)" = 0 ] || die "must run as root (it creates network namespaces and a bridge)"
  ip netns list >/dev/null 2>&1 || die "'ip netns' is unavailable (iproute2 with netns support)"
  local c; for c in unshare munged munge slurmctld slurmd sinfo ss; do
    command -v $c >/dev/null || die "'$c' not found (need munge, slurmctld, slurmd, slurm-client)"
  done
}
slurm() { SLURM_CONF=$CONF timeout 10 "$@"; }     # a client command against this cluster
# Recorded PIDs: lines "NAME PID". A PID counts only if it is alive (not a zombie) and runs the
# expected program, so a recycled PID is never killed.
pid_of() {
  local p; p=$(awk -v n="$1" '$1 == n { print $2 }' "$PIDS" 2>/dev/null | tail -1)
  [ -n "$p" ] && [ "$(ps -o stat= -p "$p" 2>/dev/null | cut -c1)" != Z ] || return 1
  [ "$(cat /proc/"$p"/comm 2>/dev/null)" = "${1%%-*}" ] && echo "$p"
}
forget() { [ -f "$PIDS" ] && sed -i "/^$1 /d" "$PIDS" || true; }
# Start a daemon in the foreground of a new session, detached from the caller: stdin from
# /dev/null, output to a log file, and EVERY inherited fd above 2 closed. Otherwise a caller that
# reads our output through a pipe (CTest, `| cat`) never sees EOF. The daemons' -F/-D flags keep
# them from forking, and `nsenter`, `unshare`, `bash -c exec` and setsid all exec in place,
# so $! is the daemon's own PID.
spawn() {
  local name=$1 out=$2; shift 2
  ( for fd in /proc/$BASHPID/fd/*; do fd=${fd##*/}; [ "$fd" -gt 2 ] && eval "exec $fd>&-"; done
    exec setsid "$@" </dev/null >>"$out" 2>&1 ) &
  forget "$name"; echo "$name $!" >>"$PIDS"
}
terminate() {          # TERM, then KILL whatever is still alive after 5 s
  [ $# -gt 0 ] || return 0
  kill -TERM "$@" 2>/dev/null || true
  local i p; for i in $(seq 50); do
    for p; do [ -d /proc/$p ] && [ "$(ps -o stat= -p $p | cut -c1)" != Z ] && break; p=; done
    [ -z "$p" ] && return 0; sleep 0.1
  done
  kill -KILL "$@" 2>/dev/null || true
}
has_ns() { [ -e /run/netns/hc-$1 ]; }
ns_pids() { ip netns pids hc-$1 2>/dev/null || true; }   # slurmd, slurmstepd and job processes
owner() { cat /sys/class/net/$BR/ifalias 2>/dev/null || true; }
# Ready = all daemons alive and both nodes registered and responding (idle, mixed, allocated or
# completing; a trailing '*' means not responding, and down/drain/unknown are not ready).
node_ok() { slurm sinfo -h -N -n "$1" -o '%t' 2>/dev/null | grep -qxE 'idle|mix|alloc|comp'; }
all_up() {
  local n; pid_of munged >/dev/null && pid_of slurmctld >/dev/null || return 1
  for n in "${NODES[@]}"; do pid_of slurmd-$n >/dev/null && node_ok $n || return 1; done
}
wait_for() {           # wait_for SECONDS DAEMON LOGS CMD...: poll CMD while DAEMON lives
  local t=$1 d=$2 log=$3 end=$((SECONDS + $1)); shift 3
  until "$@"; do
    pid_of $d >/dev/null || die "$d exited during start; read $log"
    [ $SECONDS -lt $end ] || die "$d not ready within $t s; read $log"; sleep 0.2
  done
}

net_up() {
  ip link add $BR type bridge && ip link set $BR alias "$DIR"
  ip addr add $NET.1/24 dev $BR && ip link set $BR up
  local i=11 n; for n in "${NODES[@]}"; do
    ip netns add hc-$n
    ip link add hc-$n type veth peer name eth0 netns hc-$n
    ip link set hc-$n master $BR up
    ip -n hc-$n addr add $NET.$i/24 dev eth0
    ip -n hc-$n link set eth0 up; ip -n hc-$n link set lo up   # lo: Open MPI, PMIx use it
    i=$((i + 1))
  done
}
net_down() {           # only our own pieces: the bridge must be ours or gone
  local o n; o=$(owner); [ -z "$o" ] || [ "$o" = "$DIR" ] || return 0
  for n in "${NODES[@]}"; do
    terminate $(ns_pids $n)
    ip netns del hc-$n 2>/dev/null || true        # deletes eth0 and so its peer hc-NODE
    ip link del hc-$n 2>/dev/null || true
  done
  ip link del $BR 2>/dev/null || true
}
# nsenter, not `ip netns exec`: the latter also makes a mount namespace with a fresh /sys, where
# /sys/fs/cgroup is missing and slurmd 22.05 then refuses to start (even without cgroup plugins).
# SLURM_CONF as well as -f: slurmd looks for gres.conf next to $SLURM_CONF (or in /etc/slurm), not
# next to the file -f names; without it the nodes report no GPUs and the controller sets them INVAL.
start_slurmd() {
  spawn slurmd-$1 "$LOG/slurmd-$1.out" env SLURM_CONF="$CONF" nsenter --net=/run/netns/hc-$1 unshare --uts \
    bash -c 'hostname "$1" && exec slurmd -D -N "$1" -f "$2"' slurmd "$1" "$CONF"
}

write_conf() {
  local hw mem
  # Each node declares the machine's real CPU topology (slurmd refuses a node that claims more
  # than it has) and half its memory (memory is not a consumable resource here anyway).
  hw=$(slurmd -C | head -1 | sed -E 's/^NodeName=[^ ]+ //; s/ RealMemory=[0-9]+//')
  mem=$(( $(slurmd -C | sed -nE 's/.*RealMemory=([0-9]+).*/\1/p') / 2 ))
  cat >"$CONF" <<EOF
# Generated by slurm/local-cluster.sh; rewritten at each start.
ClusterName=harness
SlurmctldHost=$(hostname -s)($NET.1)
SlurmctldPort=$PORT
SlurmdPort=6818
# Daemons and clients all use DIR's munged, not the system one.
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$MSOCK
SlurmUser=root
SlurmdUser=root
MailProg=/bin/true
StateSaveLocation=$DIR/state
SlurmdSpoolDir=$DIR/spool/%n
# The nodes share /tmp. PMIx puts each step's client dir (spmix_appdir_UID_JOB.STEP) under TmpFS:
# with /tmp the second node of a step finds it already there and the step fails.
TmpFS=$DIR/spool/%n/tmp
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd-%n.pid
SlurmctldLogFile=$LOG/slurmctld.log
SlurmdLogFile=$LOG/slurmd-%n.log
# No slurmdbd: sacct has nothing to show; final job states go to the jobcomp file instead.
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/filetxt
JobCompLoc=$DIR/jobcomp.txt
# No cgroups here (no systemd); linuxproc tracks processes by parent PID.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
# srun works with Debian's Open MPI through PMIx (pmi2 does not).
MpiDefault=pmix
# Consumable CPUs: several jobs share a node, a job may take both CPUs of one node. More ranks
# than CPUs on a node: submit with --overcommit (-O).
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerParameters=batch_sched_delay=0,sched_min_interval=0
MaxArraySize=$MAX
MinJobAge=$AGE
# Quick failure handling for tests. A killed slurmd refuses connections, and slurmctld retries
# each connect once a second for MessageTimeout, so detection takes about SlurmdTimeout + 2 x
# MessageTimeout: measured 28-30 s with 10/10 (defaults 300/10), 18-20 s with 10/5, 15-16 s with
# 5/5. Its jobs then end NODE_FAIL (JobRequeue=0: not requeued) and the node returns by itself
# when its slurmd registers again (ReturnToService=2). KillWait: KILL 5 s after a time-limit TERM.
SlurmdTimeout=10
MessageTimeout=5
ReturnToService=2
JobRequeue=0
KillWait=5
# Both nodes share this machine's cores: MPI ranks that poll for messages keep the core the rank
# they wait for needs (a 1 KiB MPI_Allreduce on 2 nodes x 2 ranks took 16 ms instead of 30 us).
# The task prolog tells Open MPI to yield while it waits, as mpirun does by itself when it knows
# the ranks outnumber the cores.
TaskProlog=$DIR/task-prolog.sh
# GPUs as SLURM counts them, with no GPU behind them (gres.conf), so that jobs asking for GPUs
# (sbatch --gpus-per-node) are scheduled, and refused, as on a GPU cluster.
GresTypes=gpu
NodeName=hnode1 NodeAddr=$NET.11 $hw RealMemory=$mem Gres=gpu:$GPUS State=UNKNOWN
NodeName=hnode2 NodeAddr=$NET.12 $hw RealMemory=$mem Gres=gpu:$GPUS State=UNKNOWN
PartitionName=debug Nodes=hnode1,hnode2 Default=YES MaxTime=INFINITE State=UP
EOF
  # slurmd reads gres.conf next to $SLURM_CONF; no autodetection (it would look for NVML). Each GPU
  # needs a File=: SLURM 22.05's gres/gpu drops GPUs without one ("Removing file-less GPU gpu:(null)
  # from final GRES list", and the controller then sets the nodes INVAL), and wants a character
  # device there. No device files: links to /dev/null, which nothing opens (no cgroups here); the
  # digits at their ends are the indices SLURM puts in a job's CUDA_VISIBLE_DEVICES.
  rm -rf "$DIR/gpus"; mkdir -p "$DIR/gpus"
  local g; for ((g = 0; g < GPUS; g++)); do ln -s /dev/null "$DIR/gpus/gpu$g"; done
  cat >"$DIR/gres.conf" <<EOF
# Generated by slurm/local-cluster.sh; rewritten at each start.
AutoDetect=off
NodeName=hnode1,hnode2 Name=gpu File=$DIR/gpus/gpu[0-$((GPUS - 1))]
EOF
}

cmd_stop() {
  local n p pids=()
  for n in "${NODES[@]/#/slurmd-}" slurmctld munged; do p=$(pid_of $n) && pids+=("$p"); done
  terminate "${pids[@]}"
  net_down
  rm -f "$PIDS"; rm -rf "$(dirname "$MSOCK")"
}

cmd_start() {
  need_root
  MAX=${HARNESS_SLURM_MAX_ARRAY_SIZE:-4} AGE=${HARNESS_SLURM_MIN_JOB_AGE:-60} GPUS=2
  [[ $MAX =~ ^[0-9]+$ ]] || die "HARNESS_SLURM_MAX_ARRAY_SIZE must be a number"
  [[ $AGE =~ ^[0-9]+$ ]] && [ "$AGE" != 1 ] || die "HARNESS_SLURM_MIN_JOB_AGE must be 0 or >= 2"
  [[ $PORT =~ ^[0-9]+$ ]] && [ "$PORT" -lt 65536 ] || die "HARNESS_SLURM_PORT must be a port"
  local b='(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])'
  [[ $NET =~ ^$b\.$b\.$b$ ]] ||
    die "HARNESS_SLURM_SUBNET must be the first three octets of a /24, e.g. 10.213.47"
  if all_up; then echo "SLURM cluster in $DIR is already up"; exit 0; fi
  local o n; o=$(owner)
  if [ -n "$o" ] && [ "$o" != "$DIR" ] && SLURM_CONF=$o/slurm.conf timeout 5 sinfo >/dev/null 2>&1
  then die "another local cluster (DIR $o) is up; stop it first: $0 stop $o"; fi
  cmd_stop; [ "$o" = "$DIR" ] || DIR=$o net_down       # clean stale pieces (ours or a dead one's)
  [ -z "$(ss -Hltn "sport = :$PORT")" ] || die "port $PORT is in use; set HARNESS_SLURM_PORT"
  ip -4 route show root $NET.0/24 | grep -q . &&
    die "$NET.0/24 is already in use on this machine; set HARNESS_SLURM_SUBNET"
  trap 'cmd_stop >/dev/null 2>&1' EXIT   # a failed start leaves nothing running (logs stay)
  # A fresh cluster each time: old jobs, spools and job-completion records go (job ids restart
  # at 1); logs are kept (appended). Munged's directories must not be group/world-writable.
  mkdir -p "$DIR" "$LOG" "$DIR/run" "$DIR/munge"
  rm -rf "$DIR/state" "$DIR/spool"; rm -f "$DIR/jobcomp.txt"
  mkdir -p "$DIR/state"; for n in "${NODES[@]}"; do mkdir -p "$DIR/spool/$n/tmp"; done
  mkdir -p "$(dirname "$MSOCK")"
  chmod 755 "$DIR" "$DIR/munge" "$LOG" "$(dirname "$MSOCK")"
  if [ ! -s "$DIR/munge/munge.key" ]; then
    dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none
  fi
  chmod 600 "$DIR/munge/munge.key"
  write_conf
  printf '#!/bin/sh\necho export OMPI_MCA_mpi_yield_when_idle=1\n' >"$DIR/task-prolog.sh"
  chmod 755 "$DIR/task-prolog.sh"
  spawn munged "$LOG/munged.log" munged -F --socket="$MSOCK" --key-file="$DIR/munge/munge.key" \
    --pid-file="$DIR/munge/munged.pid" --seed-file="$DIR/munge/munged.seed"
  wait_for 10 munged "$LOG/munged.log" eval 'munge -n -S "$MSOCK" >/dev/null 2>&1'
  net_up
  # Node-to-node traffic crosses the bridge (the root namespace only talks to each node). A host
  # firewall that filters bridged packets (br_netfilter + FORWARD DROP, as Docker sets up) would
  # break MPI between nodes: check here rather than in a hanging job. Port 9 is closed in the
  # fresh namespace, so "Connection refused" proves the path.
  local err; err=$(nsenter --net=/run/netns/hc-${NODES[0]} timeout 3 bash -c \
    "exec 3<>/dev/tcp/$NET.12/9" 2>&1) || [[ $err == *refused* ]] ||
    die "hnode1 cannot reach hnode2 ($NET.12) across bridge $BR; is bridged traffic firewalled?"
  # The daemons' *.out files catch what they print before their log files open (with -D they
  # also copy their logs there).
  spawn slurmctld "$LOG/slurmctld.out" slurmctld -D -f "$CONF"
  wait_for 20 slurmctld "$LOG/slurmctld.log and .out" \
    eval 'slurm scontrol ping 2>/dev/null | grep -q UP'
  for n in "${NODES[@]}"; do start_slurmd $n; done
  for n in "${NODES[@]}"; do wait_for 30 slurmd-$n "$LOG/slurmd-$n.log and .out" node_ok $n; done
  trap - EXIT
  echo "SLURM cluster up in $DIR (nodes ${NODES[*]}); clients: export SLURM_CONF=$CONF"
}

cmd_status() {
  local n p rc=0
  for n in munged slurmctld "${NODES[@]/#/slurmd-}"; do
    if p=$(pid_of $n); then echo "$n: running (pid $p)"; else echo "$n: not running"; rc=1; fi
  done
  for n in "${NODES[@]}"; do has_ns $n || { echo "namespace hc-$n: missing"; rc=1; }; done
  if slurm sinfo -N -o '%N %P %t %C' 2>/dev/null; then
    for n in "${NODES[@]}"; do node_ok $n || rc=1; done
  else echo "slurmctld: not answering"; rc=1; fi
  return $rc
}

case $cmd in
  start) cmd_start ;;
  stop) need_root; cmd_stop; echo "SLURM cluster in $DIR stopped" ;;
  status) cmd_status ;;
  env) printf 'export SLURM_CONF=%q\n' "$CONF" ;;
  stop-node)            # a node crash: slurmd and everything in the namespace dies at once
    need_root; p=$(pid_of slurmd-$node) || true
    kill -KILL $p $(ns_pids $node) 2>/dev/null || true; forget slurmd-$node
    echo "$node killed; slurmctld sets it DOWN (its jobs NODE_FAIL) in about 20 s" ;;
  start-node)
    need_root
    pid_of slurmctld >/dev/null && has_ns $node || die "cluster in $DIR is not up; run start first"
    pid_of slurmd-$node >/dev/null || start_slurmd $node
    wait_for 30 slurmd-$node "$LOG/slurmd-$node.log and .out" node_ok $node
    echo "node $node is up" ;;
esac

#!/usr/bin/env bash
# Open MPI's remote-shell agent for simulated nodes: `mpirun --mca plm_rsh_agent THIS --host
# nodea:2,nodeb:2 ...` calls it as `THIS HOST COMMAND...` (as it would call ssh) and it runs the
# command here, in a UTS namespace of its own named HOST. The ranks of each "node" then see their
# own host name, MPI_COMM_TYPE_SHARED groups them by it, and ranks of different nodes talk TCP
# over the loopback (--mca btl_tcp_if_include lo). Needs root (unshare).
set -euo pipefail
host=$1
shift
# Like ssh, the command arrives as words for a shell to read (mpirun given by its full path
# sends "PATH=... ; export PATH ; ... orted ...", so it is run as a script, not exec-ed).
exec unshare --uts bash -c "hostname '$host' && $*"

// `harness simulated-node HOST WORDS...`: Open MPI's remote-shell agent for nodes simulated on
// this machine. The local launcher with "simulate_hosts" passes `--mca plm_rsh_agent "<harness>
// simulated-node"`, so mpirun calls it as it would call `ssh HOST WORDS...` for every host of the
// job; it runs the words with /bin/sh here, in a UTS namespace of its own named HOST. The ranks
// started there see HOST as their host name, the backends group nodes by it (node_place,
// backends/communicator.h), and ranks of different hosts talk TCP over the loopback. Needs root
// (or CAP_SYS_ADMIN) for the namespace.
#pragma once

namespace harness {

// argv[0] is HOST, the rest the command's words. Returns only on error (exit status 2, with a
// one-line message on stderr); on success the process becomes the command.
int simulated_node_main(int argc, char** argv);

}  // namespace harness

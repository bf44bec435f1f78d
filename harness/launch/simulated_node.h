// `harness simulated-node HOST WORDS...` (and `harness-simulated-node HOST WORDS...`, the same as
// a program of its own): the remote-shell agent for nodes simulated on this machine. The local
// launcher with "simulate_hosts" passes Open MPI's mpirun `--mca plm_rsh_agent "<harness>
// simulated-node"`, hydra's mpiexec `-launcher rsh -launcher-exec <harness-simulated-node>`, so the
// launcher calls it as it would call `ssh HOST WORDS...` for every host of the job; it runs the
// words with /bin/sh here, in a UTS namespace of its own named HOST. The ranks started there see
// HOST as their host name, the backends group nodes by it (node_place, backends/communicator.h),
// and the MPI counts each host as a node. Needs root (or CAP_SYS_ADMIN) for the namespace.
#pragma once

namespace harness {

// The agent as a program of its own, beside harness (harness/cli/simulated_node_main.cpp), for
// hydra's mpiexec, which runs its -launcher-exec as one word.
inline constexpr const char* kSimulatedNodeAgent = "harness-simulated-node";

// argv[0] is HOST, the rest the command's words. Returns only on error (exit status 2, with a
// one-line message on stderr); on success the process becomes the command.
int simulated_node_main(int argc, char** argv);

}  // namespace harness

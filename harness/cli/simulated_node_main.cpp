// harness-simulated-node HOST COMMAND...: the simulated hosts' remote-shell agent as a program of
// its own, for launchers that run their agent as one word: hydra's -launcher-exec (MPICH and its
// family) runs `AGENT HOST hydra_pmi_proxy ...` and does not split AGENT into words, so `harness
// simulated-node`, which Open MPI's plm_rsh_agent takes, cannot be it. Same code, same behaviour
// (harness/launch/simulated_node.h).
#include "harness/launch/simulated_node.h"

int main(int argc, char** argv) { return harness::simulated_node_main(argc - 1, argv + 1); }

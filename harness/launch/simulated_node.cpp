#include "harness/launch/simulated_node.h"

#include <sched.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include <fmt/format.h>

#include "harness/common/machine.h"

namespace harness {

int simulated_node_main(int argc, char** argv) {
  if (argc < 2) {
    std::cerr << "harness simulated-node: expected HOST COMMAND... (it is mpirun's remote-shell agent)\n";
    return 2;
  }
  const std::string host = argv[0];
  // The ranks' records say which machine they ran on (common/machine.h): this one, whatever the
  // simulated host is called.
  if (std::getenv(kPhysicalHostVariable) == nullptr) {
    char physical[256] = {};
    ::gethostname(physical, sizeof(physical) - 1);
    ::setenv(kPhysicalHostVariable, physical, 0);
  }
  if (::unshare(CLONE_NEWUTS) != 0) {
    std::cerr << fmt::format(
        "harness simulated-node: cannot simulate host {}: unshare(CLONE_NEWUTS) failed: {} (simulated "
        "hosts need root; without it, list real hosts without \"simulate_hosts\")\n",
        host, std::strerror(errno));
    return 2;
  }
  if (::sethostname(host.c_str(), host.size()) != 0) {
    std::cerr << fmt::format("harness simulated-node: sethostname({}) failed: {}\n", host, std::strerror(errno));
    return 2;
  }
  // As ssh does, the words arrive for a shell to read: mpirun sends "PATH=... ; export PATH ;
  // ... orted ...", which is a script rather than one program.
  std::string command;
  for (int i = 1; i < argc; ++i) {
    if (i > 1) command += ' ';
    command += argv[i];
  }
  ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
  std::cerr << fmt::format("harness simulated-node: cannot run /bin/sh: {}\n", std::strerror(errno));
  return 2;
}

}  // namespace harness

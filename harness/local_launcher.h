// The default launcher: one `mpirun -n R` per point on this machine.
#pragma once

#include "harness/launcher.h"

namespace harness {

class LocalLauncher : public Launcher {
 public:
  // `cores` and `is_root` are parameters so tests can check the flags for any machine.
  LocalLauncher(int cores, bool is_root) : cores_(cores), is_root_(is_root) {}
  LocalLauncher();

  std::string name() const override { return "local"; }
  void check_available() const override;
  std::vector<std::string> command_for(const LaunchRequest& request) const override;
  LaunchOutcome launch(const LaunchRequest& request) override;

 private:
  int cores_;
  bool is_root_;
};

}  // namespace harness

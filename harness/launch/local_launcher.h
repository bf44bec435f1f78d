// The default launcher: one `mpirun -n R` per point on this machine.
#pragma once

#include "harness/launch/launcher.h"

namespace harness {

class LocalLauncher : public Launcher {
 public:
  // `cores` and `is_root` are parameters so tests can check the flags for any machine.
  LocalLauncher(int cores, bool is_root) : cores_(cores), is_root_(is_root) {}
  LocalLauncher();

  std::string name() const override { return "local"; }
  void check_available() const override;
  // Oversubscription lets mpirun start any number of ranks, but past a few per core each rank's
  // LibTorch memory and time slices make the measurement meaningless: 8 per core at most.
  int max_ranks() const override { return kRanksPerCore * cores_; }
  std::string max_ranks_reason() const override;
  std::vector<std::string> command_for(const LaunchRequest& request) const override;
  LaunchOutcome launch(const LaunchRequest& request) override;

 private:
  static constexpr int kRanksPerCore = 8;
  int cores_;
  bool is_root_;
};

}  // namespace harness

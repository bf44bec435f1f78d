// The IDX files of a mnist_cnn point, and their checks before launch: no LibTorch, so validation
// (the orchestrator) reads them as the rank program does.
#pragma once

#include <cstdint>
#include <string>

#include "harness/study/settings.h"

namespace harness {

struct MnistFiles {
  std::string images;
  std::string labels;
};

// The training (`train`) or held-out files of the point's data_path (default
// kDefaultMnistDirectory), each "<name>" or "<name>.gz". Throws ConfigError "data_path: ..." when
// one is missing.
MnistFiles mnist_files(const PointSettings& settings, bool train);

// Checks that the images are N×28×28 and the labels N; returns N.
int64_t mnist_checked_count(const MnistFiles& files);

}  // namespace harness

#include "harness/rank/torch_version.h"

#include <torch/version.h>  // macros only; this file alone sees LibTorch's include folders

namespace harness {

const char* built_torch_version() { return TORCH_VERSION; }

}  // namespace harness

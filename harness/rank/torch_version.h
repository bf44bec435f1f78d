// The LibTorch version this build compiled against (torch/version.h's TORCH_VERSION), which
// every record names, known without linking LibTorch: harness-comm-worker records it too.
#pragma once

namespace harness {

const char* built_torch_version();

}  // namespace harness

// make_gloo_allreduce in harness-comm-worker, the rank program without LibTorch (gloo's
// ProcessGroupGloo is LibTorch's code): it never runs a gloo point, since `harness worker` execs
// harness-worker for those (harness/cli/main.cpp); this says so should one reach it.
#include "backends/gloo_allreduce.h"
#include "harness/common/errors.h"

namespace harness {

std::unique_ptr<GradientSync> make_gloo_allreduce(const Communicator& /*communicator*/) {
  throw NotSupported("gloo: harness-comm-worker is built without LibTorch, whose ProcessGroupGloo gloo is; "
                     "`harness worker` runs gloo points in harness-worker");
}

}  // namespace harness

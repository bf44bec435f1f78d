#include "backends/gloo_allreduce.h"

namespace harness {

bool gloo_available() {
#ifdef HARNESS_WITH_GLOO
  return true;
#else
  return false;
#endif
}

}  // namespace harness

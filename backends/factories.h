// The rank program's half of the backend table: each backend's constructor, by name. What the
// orchestrator may know of a backend is in registry.h, linked without LibTorch; gloo's
// constructor needs LibTorch, so the constructors live apart, in harness_backend_factories.
// make_gradient_sync (gradient_sync.h), defined beside them, goes through both tables.
#pragma once

#include <memory>
#include <string_view>
#include <vector>

#include "backends/backend_options.h"
#include "backends/gradient_sync.h"

namespace harness {

struct BackendFactory {
  std::string_view name;  // as in backend_table()
  // Collective over the communicator's ranks; reads the backend's own settings from `options`.
  std::unique_ptr<GradientSync> (*make)(const Communicator& communicator, const BackendOptions& options) = nullptr;
};

// One per entry of backend_table(), in its order (checked by a unit test).
const std::vector<BackendFactory>& backend_factories();

}  // namespace harness

#include "harness/rank/training_scheme.h"

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/rank/async_ps.h"
#include "harness/rank/pipeline.h"
#include "harness/rank/trainer.h"

namespace harness {

bool scheme_uses_backend(const PointSettings& settings) {
  return settings.scheme != "async_ps" && settings.scheme != "pipeline";
}

std::unique_ptr<TrainingScheme> make_training_scheme(Workload& workload, GradientSync* backend,
                                                     const Communicator& communicator, const PointSettings& settings,
                                                     const BackendMaker& make_backend) {
  if (settings.scheme == "async_ps") return std::make_unique<AsyncParameterServer>(workload, communicator, settings);
  if (settings.scheme == "pipeline") {
    return std::make_unique<PipelineScheme>(workload, communicator, settings, make_backend);
  }
  if (backend == nullptr) {
    throw NotSupported(fmt::format("scheme \"{}\": needs the point's backend", settings.scheme));
  }
  // sync and local_sgd (which the trainer refuses any other scheme as).
  return std::make_unique<DataParallelTrainer>(workload, *backend, communicator, settings);
}

}  // namespace harness

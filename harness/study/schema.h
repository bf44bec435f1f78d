// The JSON Schema of experiment files (experiments/schema.json), generated from the settings
// table so that editors complete and check exactly what the harness accepts. The harness's own
// validation stays the authority: it also checks what a schema cannot (data sizes, rank counts).
#pragma once

#include <string>
#include <vector>

#include "harness/study/settings.h"

namespace harness {

// `workloads` and `backends` become the enums of those keys, `launcher` and `check` the schemas of
// those properties (the tables live outside the study: launch/scheduler.h and check/ make them).
Json experiment_schema(const std::vector<std::string>& workloads,
                       const std::vector<std::string>& backends, const Json& launcher, const Json& check);

}  // namespace harness

// One row of the settings table (see settings.h): how a key of an experiment's "settings" and
// "sweep" is read, written back and documented. Header-only, so that the workloads and backends
// that own rows define them without linking the study.
#pragma once

#include "harness/common/option_table.h"

namespace harness {

struct PointSettings;

using SettingRow = OptionRow<PointSettings>;

}  // namespace harness

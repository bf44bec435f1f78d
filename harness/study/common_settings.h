// The rows of the settings every point has, whatever its kind, backend and workload.
#pragma once

#include <vector>

#include "harness/study/setting_row.h"

namespace harness {

std::vector<SettingRow> common_setting_rows();

}  // namespace harness

// Helpers for the .dat files the plot templates read: gnuplot blocks titled by the settings that
// tell the curves apart.
#pragma once

#include <string>
#include <vector>

#include "harness/study/settings.h"

namespace harness {

// Setting keys whose values differ between these settings (timeout_s aside): they label curves.
std::vector<std::string> varying_keys(const std::vector<PointSettings>& settings);

// "backend=ring ranks=2": the values of `keys` (ranks only when asked, and then always).
std::string curve_label(const PointSettings& settings, const std::vector<std::string>& keys,
                        bool include_ranks);

// A gnuplot data block's first line, which `columnheader` reads as its title.
std::string block_title(const std::string& title);
// `label` in double quotes as gnuplot reads it back (a row's label in the breakdown's data).
std::string quoted_label(const std::string& label);

}  // namespace harness

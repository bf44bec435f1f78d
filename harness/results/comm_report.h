// The reports of communication benchmark points (kind "comm"): summary.csv and the console table
// with a row per point and message size, and the bandwidth and latency plots.
#pragma once

#include "harness/results/report.h"

namespace harness {

class CommReport final : public KindReport {
 public:
  std::string failure(const Measurements& measurements) const override;
  std::string remark(const Measurements& measurements) const override;
  std::map<std::string, std::string> tables(const ResultSet& set) const override;
  std::string console_table(const ResultSet& set) const override;
  std::map<std::string, std::string> plot_data(const ResultSet& set) const override;
};

}  // namespace harness

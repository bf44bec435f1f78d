// Plots made from stored results only, each as .png and .svg with the .dat it plots and the
// complete .gp script that drew it (rerun it with gnuplot to restyle a figure by hand):
// training experiments get speedup, efficiency and throughput against ranks (medians with
// bootstrap 95% error bars when points repeat), the Karp-Flatt serial fraction, throughput against
// batch size (when it varies), loss and accuracy against epoch and samples seen (when points
// train two epochs or more), and a stacked
// compute / exposed communication / other breakdown of the step; communication benchmarks (kind
// "comm") get bandwidth and latency against message size.
#pragma once

#include <string>
#include <vector>

#include "harness/results/results.h"

namespace harness {

// The plot templates compiled into the binary (from plots/*.gp), by name.
const std::string& plot_template(const std::string& name);

// Writes the data files and scripts and runs gnuplot. Returns the image paths written. A plot
// with no data (every point failed) is skipped. Throws Error when gnuplot is missing or fails.
std::vector<std::string> write_plots(const ResultsLayout& layout, const Experiment& experiment,
                                     const std::vector<SummaryRow>& rows);

}  // namespace harness

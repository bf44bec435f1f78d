// Plots drawn with gnuplot from the reports' data, each as .png and .svg with the .dat it plots
// and the complete .gp script that drew it (rerun it with gnuplot to restyle a figure by hand).
// The templates are plots/*.gp, compiled into the binary.
#pragma once

#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "harness/results/result_set.h"

namespace harness {

// The plot templates compiled into the binary (from plots/*.gp), by name.
const std::string& plot_template(const std::string& name);
// Every plot there is a template for ("render" is shared by all, not a plot).
std::vector<std::string> plot_names();

// Writes plots_dir/<name>.dat and .gp for each entry of `data` (plot name -> data) and runs
// gnuplot; the templates' variables (title, tics, scaling) come from `set`, and `variables` adds
// more (name -> text value, for one plot's title). Returns the images written. Throws Error when
// gnuplot is missing or fails; with `failures`, a plot that fails is said there instead ("loss: gnuplot
// loss.gp failed ..."), its earlier images are removed (they would pass for this run's), and the
// others are still drawn.
std::vector<std::string> draw_plots(const std::map<std::string, std::string>& data,
                                    const ResultSet& set, const std::string& plots_dir,
                                    const std::map<std::string, std::string>& variables = {},
                                    std::vector<std::string>* failures = nullptr);

// Removes plots_dir/<name>.{svg,png,dat,gp} (regular files only): a plot that this run does not draw.
void remove_plot(const std::string& plots_dir, const std::string& name);

// Whether gnuplot wrote the whole image at `path` (.png or .svg): it exits 0 when a full disk cut
// the file short. An SVG ends with its closing tag, a PNG with its IEND chunk and that chunk's CRC.
bool whole_image(const std::string& path);

// Removes the drawing folders (plots_dir/.drawing-*) that a harness killed while it drew left
// behind. Only those older than `older_than`: another harness may be drawing in this folder now
// (`harness plot` during a run), and one plot takes at most gnuplot's minute.
void remove_stale_drawings(const std::string& plots_dir,
                           std::chrono::seconds older_than = std::chrono::minutes(10));

}  // namespace harness

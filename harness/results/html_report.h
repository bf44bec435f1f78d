// DIR/report.html: one self-contained page per results directory, for a person to open. It
// holds the experiment, the console table (with the breakdown and the convergence flags), every
// plot of DIR/plots inlined as SVG, the cost model's files when `harness model` wrote them, the
// provenance (commits, MPI libraries, hosts, command lines) and a row per point linking its
// record, log and timeline. Nothing is fetched: no scripts, no fonts, no images by URL, so it
// opens from a file, a CI artifact or a mail attachment alike. Rebuilt by every `harness run`,
// `harness plot` and `harness model` from what the directory holds.
#pragma once

#include <string>

#include "harness/results/result_set.h"

namespace harness {

// Writes DIR/report.html and returns its path; `plots_note` says which plots were not drawn and why
// ("" = all were). Throws Error when it cannot be written.
std::string write_html_report(const ResultSet& set, const ResultsDirectory& directory,
                              const std::string& plots_note = "");

// `text` with &, <, >, " and ' escaped for HTML.
std::string html_escape(const std::string& text);

}  // namespace harness

#include "harness/results/html_report.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "harness/common/files.h"
#include "harness/common/version.h"
#include "harness/results/provenance.h"
#include "harness/results/report.h"
#include "harness/results/train_report.h"

namespace harness {
namespace fs = std::filesystem;
namespace {

// The plots in the order a reader wants them; any other plot follows by name.
constexpr const char* kPlotOrder[] = {"speedup",         "efficiency",   "efficiency_loss", "throughput",
                                      "throughput_batch", "breakdown",    "compute_by_rank", "karp_flatt",
                                      "loss_samples",     "loss",         "accuracy_samples", "accuracy",
                                      "accuracy_time",    "loss_time",    "pipeline_throughput",
                                      "pipeline_bubble",  "pipeline_memory",
                                      "bandwidth",        "latency",      "model_fit",       "prediction",
                                      "timeline"};

// A plot's file, never read through a link (a link planted in plots/ would have its target inlined
// into the page): "" when it is not a regular file.
std::string slurp(const fs::path& path) {
  const PlainFile file = open_plain_file(path.string());
  std::string text;
  if (!file) return text;
  char chunk[65536];
  std::size_t got = 0;
  while ((got = std::fread(chunk, 1, sizeof(chunk), file.get())) > 0) text.append(chunk, got);
  return text;
}

void replace_all(std::string& text, const std::string& from, const std::string& to) {
  for (std::size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
}

// gnuplot's SVG as an element of the page: without the XML prolog, with its ids made unique to
// this plot (every gnuplot SVG names its canvas and markers alike) and scaled to the column.
std::string inline_svg(std::string svg, const std::string& prefix) {
  const std::size_t start = svg.find("<svg");
  if (start == std::string::npos) return "";
  svg.erase(0, start);
  // gnuplot 5.4 quotes its markers' ids with ' and its canvas's with ".
  for (const char* quote : {"\"", "'"}) {
    replace_all(svg, std::string(" id=") + quote, std::string(" id=") + quote + prefix);
    replace_all(svg, std::string("href=") + quote + "#", std::string("href=") + quote + "#" + prefix);
  }
  replace_all(svg, "url(#", "url(#" + prefix);
  replace_all(svg, "<svg ", "<svg class=\"plot\" role=\"img\" ");
  return svg;
}

std::vector<fs::path> plots_in(const std::string& plots_dir) {
  std::vector<fs::path> plots;
  std::error_code error;
  for (const auto& entry : fs::directory_iterator(plots_dir, error)) {
    // Not through a link: the page would inline whatever it points to.
    if (entry.path().extension() == ".svg" && entry.is_regular_file(error) && !entry.is_symlink(error)) {
      plots.push_back(entry.path());
    }
  }
  const auto rank = [](const fs::path& path) {
    const std::string name = path.stem().string();
    const auto* found = std::find(std::begin(kPlotOrder), std::end(kPlotOrder), name);
    return std::pair(static_cast<int>(found - std::begin(kPlotOrder)), name);
  };
  std::sort(plots.begin(), plots.end(), [&](const fs::path& a, const fs::path& b) { return rank(a) < rank(b); });
  return plots;
}

// The distinct values of one fact over the runs, joined.
template <typename Get>
std::string distinct(const ResultSet& set, Get get) {
  std::vector<std::string> values;
  for (const Run& run : set.runs()) {
    for (const std::string& value : get(run)) {
      if (!value.empty() && std::find(values.begin(), values.end(), value) == values.end()) values.push_back(value);
    }
  }
  std::string text;
  for (const auto& value : values) text += (text.empty() ? "" : "\n") + value;
  return text;
}

std::string provenance_rows(const ResultSet& set) {
  using Values = std::vector<std::string>;
  const std::vector<std::pair<const char*, std::string>> rows = {
      {"harness", distinct(set, [](const Run& r) {
         return Values{r.record.provenance.harness_version + " (" + r.record.provenance.git_commit + ")"};
       })},
      {"builds (rank programs)", distinct(set, [](const Run& r) {
         if (!r.record.build) return Values{};
         const BuildProvenance& build = *r.record.build;
         return Values{fmt::format("{}: {} ({}), {}", build.name, build.version, build.commit, build.path)};
       })},
      {"machine", distinct(set, [](const Run& r) {
         return r.record.measurements && r.record.measurements->machine
                    ? Values{describe_machine(*r.record.measurements->machine)}
                    : Values{};
       })},
      {"MPI library", distinct(set, [](const Run& r) {
         return r.record.measurements ? Values{r.record.measurements->mpi_library} : Values{};
       })},
      {"LibTorch", distinct(set, [](const Run& r) {
         return r.record.measurements ? Values{r.record.measurements->torch_version} : Values{};
       })},
      {"exchange path", distinct(set, [](const Run& r) {
         const std::string path = run_exchange_path(r);
         return path.empty() ? Values{} : Values{r.record.settings.backend + ": " + path};
       })},
      {"GPUs", distinct(set, [](const Run& r) { return Values{run_gpus(r)}; })},
      {"oversubscribed", distinct(set, [](const Run& r) {
         const std::string layout = run_oversubscribed(r);
         return layout.empty() ? Values{} : Values{r.record.id + ": " + layout};
       })},
      {"ranks ran on", distinct(set, [](const Run& r) {
         return r.record.measurements ? r.record.measurements->hosts : Values{};
       })},
      {"harness ran on", distinct(set, [](const Run& r) { return Values{r.record.provenance.host}; })},
      {"command lines", distinct(set, [](const Run& r) {
         std::string line;
         for (const auto& word : r.record.provenance.command_line) line += (line.empty() ? "" : " ") + word;
         return Values{line};
       })},
      {"started", distinct(set, [](const Run& r) { return Values{r.record.provenance.started_at}; })},
  };
  std::string html;
  for (const auto& [name, value] : rows) {
    html += fmt::format("<tr><th>{}</th><td><pre>{}</pre></td></tr>\n", name, html_escape(value));
  }
  return html;
}

std::string link_if(const ResultsDirectory& directory, const std::string& path, const std::string& text) {
  std::error_code error;
  if (!fs::exists(path, error)) return "";
  return fmt::format("<a href=\"{}\">{}</a>", html_escape(fs::relative(path, directory.path(), error).string()), text);
}

std::string point_rows(const ResultSet& set, const ResultsDirectory& directory) {
  std::string html;
  for (const Run& run : set.runs()) {
    const PointRecord& record = run.record;
    std::string settings;
    for (const auto& axis : set.experiment().sweep) {
      settings += fmt::format("{}{}={}", settings.empty() ? "" : " ", axis.key, to_json(record.settings)[axis.key].dump());
    }
    std::string links = link_if(directory, directory.record_path(record.id), "record");
    for (const std::string& more : {link_if(directory, directory.log_path(record.id), "log"),
                                    link_if(directory, directory.timeline_path(record.id), "timeline")}) {
      if (!more.empty()) links += " · " + more;
    }
    html += fmt::format("<tr class=\"{}\"><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>\n",
                        record.ok() ? "ok" : "not-ok", html_escape(record.id), record.repeat,
                        html_escape(settings), html_escape(std::string(status_name(record.status)) +
                                                           (record.reason.empty() ? "" : ": " + record.reason)),
                        links);
  }
  return html;
}

constexpr const char* kStyle = R"(
body { font-family: "DejaVu Sans", sans-serif; margin: 1.5em auto; max-width: 1100px; color: #222; padding: 0 1em; }
h1 { margin-bottom: 0.2em; } h2 { border-bottom: 1px solid #ccc; padding-bottom: 0.2em; margin-top: 1.6em; }
pre { background: #f6f6f6; padding: 0.6em; overflow-x: auto; font-size: 12px; margin: 0; }
table { border-collapse: collapse; font-size: 13px; } td, th { border: 1px solid #ddd; padding: 0.25em 0.5em; text-align: left; vertical-align: top; }
tr.not-ok td { background: #fde8e8; }
p.warning { background: #fff3cd; border-left: 4px solid #e0a800; padding: 0.4em 0.6em; }
figure { margin: 1em 0; } figcaption { font-size: 13px; color: #555; }
svg.plot { width: 100%; height: auto; max-width: 960px; display: block; border: 1px solid #eee; }
nav a { margin-right: 1em; }
)";

}  // namespace

std::string html_escape(const std::string& text) {
  std::string escaped;
  escaped.reserve(text.size());
  for (const char c : text) {
    switch (c) {
      case '&': escaped += "&amp;"; break;
      case '<': escaped += "&lt;"; break;
      case '>': escaped += "&gt;"; break;
      case '"': escaped += "&quot;"; break;
      case '\'': escaped += "&#39;"; break;
      default: escaped += c;
    }
  }
  return escaped;
}

std::string write_html_report(const ResultSet& set, const ResultsDirectory& directory, const std::string& plots_note) {
  const Experiment& experiment = set.experiment();
  const std::size_t ok = static_cast<std::size_t>(
      std::count_if(set.runs().begin(), set.runs().end(), [](const Run& run) { return run.record.ok(); }));
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n";
  html += fmt::format("<title>{} — harness report</title>\n<style>{}</style>\n</head>\n<body>\n",
                      html_escape(experiment.name), kStyle);
  html += "<h1>" + html_escape(experiment.name) + "</h1>\n";
  if (!experiment.description.empty()) html += "<p>" + html_escape(experiment.description) + "</p>\n";
  html += fmt::format("<p>{} point(s) with a record: {} ok, {} not ok; {} without a record. Page made {} by harness {} "
                      "from {}.</p>\n",
                      set.runs().size(), ok, set.runs().size() - ok, set.missing(), utc_timestamp(), kHarnessVersion,
                      html_escape(directory.path()));
  html += "<nav><a href=\"#table\">table</a><a href=\"#plots\">plots</a><a href=\"#model\">model</a>"
          "<a href=\"#points\">points</a><a href=\"#provenance\">provenance</a><a href=\"#experiment\">experiment</a>"
          "</nav>\n";

  html += "<h2 id=\"table\">Results</h2>\n";
  if (set.kind() == Kind::kTrain) {
    // A straggler is said first: it explains the numbers below it.
    std::istringstream flagged(straggler_lines(set));
    for (std::string line; std::getline(flagged, line);) {
      html += "<p class=\"warning\" id=\"straggler\">" + html_escape(line) + " — see the plot compute_by_rank</p>\n";
    }
  }
  html += "<pre>" + html_escape(console_text(set)) + "</pre>\n";
  std::string files;
  for (const char* name : {"summary.csv", "stats.csv", "model.json", "model.csv", "prediction.json", "prediction.csv"}) {
    const std::string link = link_if(directory, directory.path() + "/" + name, name);
    if (!link.empty()) files += (files.empty() ? "" : " · ") + link;
  }
  if (!files.empty()) html += "<p>Files: " + files + "</p>\n";

  html += "<h2 id=\"plots\">Plots</h2>\n";
  if (!plots_note.empty()) {
    html += "<p class=\"warning\" id=\"plots-not-drawn\">Not drawn: " + html_escape(plots_note) +
            ". Any such plot below is from an earlier drawing and may not match these records.</p>\n";
  }
  int index = 0;
  for (const fs::path& plot : plots_in(directory.plots_dir())) {
    const std::string svg = inline_svg(slurp(plot), fmt::format("plot{}-", index++));
    if (svg.empty()) continue;
    const std::string png = plot.parent_path().string() + "/" + plot.stem().string() + ".png";
    html += fmt::format("<figure id=\"plot-{0}\">{1}<figcaption>{0} · {2} · {3}</figcaption></figure>\n",
                        html_escape(plot.stem().string()), svg,
                        link_if(directory, plot.string(), "svg"), link_if(directory, png, "png"));
  }
  if (index == 0) html += "<p>No plots (gnuplot draws them when the records are in).</p>\n";

  html += "<h2 id=\"model\">Cost model</h2>\n";
  std::string model_files;
  for (const char* name : {"model.json", "prediction.json"}) {
    const std::string link = link_if(directory, directory.path() + "/" + name, name);
    if (!link.empty()) model_files += (model_files.empty() ? "" : " and ") + link;
  }
  std::string model_plots;
  for (const char* name : {"model_fit", "prediction"}) {
    if (fs::exists(directory.plots_dir() + "/" + name + ".svg")) {
      model_plots += fmt::format("{}<a href=\"#plot-{}\">{}</a>", model_plots.empty() ? "" : " and ", name, name);
    }
  }
  html += model_files.empty()
              ? "<p>None yet: <code>harness model COMM_RUN</code> fits one to a comm benchmark, and "
                "<code>--predict TRAIN_RUN</code> predicts a training run with it (plots model_fit and "
                "prediction above, when made).</p>\n"
              : "<p>See " + model_files + (model_plots.empty() ? "" : ", and the plot(s) " + model_plots + " above") +
                    ".</p>\n";

  html += "<h2 id=\"points\">Points</h2>\n<table>\n<tr><th>point</th><th>repeat</th><th>settings</th><th>status</th>"
          "<th>files</th></tr>\n" +
          point_rows(set, directory) + "</table>\n";
  html += "<h2 id=\"provenance\">Provenance</h2>\n<table>\n" + provenance_rows(set) + "</table>\n";
  html += "<h2 id=\"experiment\">Experiment</h2>\n<pre>" + html_escape(slurp(directory.experiment_copy())) +
          "</pre>\n</body>\n</html>\n";
  const std::string path = directory.path() + "/report.html";
  write_file_atomically(path, html);
  return path;
}

}  // namespace harness

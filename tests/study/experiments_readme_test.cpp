// experiments/README.md's table says how many points each shipped experiment expands to; a sweep
// changed without its row (it happened: gpu/comm_cuda.json grew to 9 points while the row said 8)
// is caught here. GPU files are expanded too: expansion needs no device.
#include <gtest/gtest.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "harness/study/experiment.h"
#include "harness/study/sweep.h"

namespace harness {
namespace {

const std::filesystem::path kExperiments = std::filesystem::path(HARNESS_SOURCE_DIR) / "experiments";

struct Row {
  std::vector<std::string> files;  // the backticked .json names of the first column
  std::vector<std::size_t> points;  // the numbers of the points column, in order, before any "("
};

// The rows of the table whose header is "| file | what it shows | points | time |".
std::vector<Row> readme_rows() {
  std::ifstream in(kExperiments / "README.md");
  std::vector<Row> rows;
  std::string line;
  bool in_table = false;
  const std::regex file_name("`([A-Za-z0-9_./-]+\\.json)`");
  const std::regex number("[0-9]+");
  while (std::getline(in, line)) {
    if (line.starts_with("| file | what it shows | points |")) {
      in_table = true;
      continue;
    }
    if (!in_table || line.starts_with("| ---")) continue;
    if (!line.starts_with("|")) break;
    std::vector<std::string> cells;
    std::stringstream cells_in(line.substr(1));
    for (std::string cell; std::getline(cells_in, cell, '|');) cells.push_back(cell);
    if (cells.size() < 3) continue;
    Row row;
    for (std::sregex_iterator it(cells[0].begin(), cells[0].end(), file_name), end; it != end; ++it) {
      row.files.push_back((*it)[1]);
    }
    const std::string counts = cells[2].substr(0, cells[2].find('('));
    for (std::sregex_iterator it(counts.begin(), counts.end(), number), end; it != end; ++it) {
      row.points.push_back(std::stoul(it->str()));
    }
    rows.push_back(row);
  }
  return rows;
}

TEST(ExperimentsReadme, EachRowsPointsAreWhatItsFilesExpandTo) {
  const std::vector<Row> rows = readme_rows();
  ASSERT_GE(rows.size(), 15U) << "the table of experiments/README.md was not found";
  std::size_t files_checked = 0;
  for (const Row& row : rows) {
    ASSERT_EQ(row.files.size(), row.points.size()) << "a row's files and point counts differ in number: "
                                                   << testing::PrintToString(row.files);
    for (std::size_t i = 0; i < row.files.size(); ++i) {
      const Experiment experiment = load_experiment((kExperiments / row.files[i]).string());
      EXPECT_EQ(expand(experiment).size(), row.points[i]) << row.files[i];
      ++files_checked;
    }
  }
  // Every shipped experiment has its row.
  std::size_t shipped = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(kExperiments)) {
    const std::string name = entry.path().filename().string();
    if (entry.path().extension() == ".json" && name != "schema.json" &&
        entry.path().parent_path().filename() != "baselines") {
      ++shipped;
    }
  }
  EXPECT_EQ(files_checked, shipped);
}

}  // namespace
}  // namespace harness

#include "workloads/iris_data.h"

#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"
#include "harness/common/resources.h"
#include "harness/common/text.h"
#include "harness/common/shuffle.h"

namespace harness {
namespace {

constexpr const char* kSpecies[IrisData::kClasses] = {"setosa", "versicolor", "virginica"};
constexpr const char* kHeader = "sepal_length,sepal_width,petal_length,petal_width,species";

}  // namespace

std::string default_iris_path() { return (data_folder() / "iris.csv").string(); }

IrisData load_iris_csv(const std::string& path) {
  // The classic file is 4.6 KB; a megabyte is any Iris-shaped file, and a bound keeps a wrong
  // data_path (a device, a binary file) from filling memory or the terminal.
  constexpr ExpectedFile kIrisCsv{"Iris CSV file", "an Iris CSV file", 1 << 20, 1024};
  std::istringstream in(read_text_file(path, kIrisCsv));
  // Messages say where (line, field) and what was expected, never what was found: a data_path may
  // name a file its user did not mean to show (`--set data_path=/etc/shadow` in a CI log), and
  // whether it is private cannot be told from the file (a 0644 file in a 0700 directory is).
  IrisData data;
  std::string line;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line_number == 1) {
      // A spreadsheet's UTF-8 byte-order mark is no part of the header.
      if (line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);
      if (line != kHeader) {
        throw ConfigError(
            fmt::format("{}:1: not an Iris CSV file: expected the header \"{}\" and then rows of 4 "
                        "numbers and a species (the line is not shown: the file may be private)",
                        path, kHeader));
      }
      continue;
    }
    if (line.empty()) continue;
    std::vector<std::string> fields;
    std::stringstream row(line);
    std::string field;
    while (std::getline(row, field, ',')) fields.push_back(field);
    if (line.back() == ',') fields.emplace_back();  // getline drops a last, empty field
    if (fields.size() != IrisData::kFeatures + 1) {
      throw ConfigError(fmt::format("{}:{}: expected 5 comma-separated fields, got {}", path,
                                    line_number, fields.size()));
    }
    for (int i = 0; i < IrisData::kFeatures; ++i) {
      char* end = nullptr;
      const float value = std::strtof(fields[i].c_str(), &end);
      if (fields[i].empty() || *end != '\0' || !std::isfinite(value)) {
        throw ConfigError(fmt::format("{}:{}: field {}: expected a number (a row is 4 numbers and a species)", path,
                                      line_number, i + 1));
      }
      data.features.push_back(value);
    }
    int64_t label = -1;
    for (int c = 0; c < IrisData::kClasses; ++c) {
      if (fields[4] == kSpecies[c]) label = c;
    }
    if (label < 0) {
      throw ConfigError(
          fmt::format("{}:{}: field 5: expected the species setosa, versicolor or virginica", path, line_number));
    }
    data.labels.push_back(label);
  }
  if (data.rows() == 0) throw ConfigError(fmt::format("{}: no data rows", path));
  return data;
}

IrisSplit split_iris(const IrisData& data, double test_fraction, uint64_t seed) {
  IrisSplit split;
  for (int c = 0; c < IrisData::kClasses; ++c) {
    std::vector<int64_t> rows;
    for (int64_t i = 0; i < data.rows(); ++i) {
      if (data.labels[i] == c) rows.push_back(i);
    }
    deterministic_shuffle(rows, seed, /*stream=*/1000 + c);
    const auto held_out = static_cast<std::size_t>(std::lround(test_fraction * rows.size()));
    split.test.insert(split.test.end(), rows.begin(), rows.begin() + held_out);
    split.train.insert(split.train.end(), rows.begin() + held_out, rows.end());
  }
  // Mix the classes, so that a dataset_size prefix of the training rows holds all of them.
  deterministic_shuffle(split.train, seed, /*stream=*/2000);
  return split;
}

void standardize(IrisData& data, const std::vector<int64_t>& reference) {
  for (int f = 0; f < IrisData::kFeatures; ++f) {
    double sum = 0;
    double sum_squares = 0;
    for (const int64_t row : reference) {
      const double x = data.features[row * IrisData::kFeatures + f];
      sum += x;
      sum_squares += x * x;
    }
    const double n = static_cast<double>(reference.size());
    const double mean = sum / n;
    const double deviation = std::sqrt(std::max(sum_squares / n - mean * mean, 1e-12));
    for (int64_t row = 0; row < data.rows(); ++row) {
      float& x = data.features[row * IrisData::kFeatures + f];
      x = static_cast<float>((x - mean) / deviation);
    }
  }
}

}  // namespace harness

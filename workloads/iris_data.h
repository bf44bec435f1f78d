// The Iris data set (Fisher 1936; data/iris.csv, see data/README.md): reading, a stratified
// train/test split and feature standardisation. No LibTorch, so it can be checked before launch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace harness {

struct IrisData {
  static constexpr int kFeatures = 4;
  static constexpr int kClasses = 3;
  std::vector<float> features;  // rows × kFeatures, row-major, in cm
  std::vector<int64_t> labels;  // 0 setosa, 1 versicolor, 2 virginica
  int64_t rows() const { return static_cast<int64_t>(labels.size()); }
};

// The CSV shipped with the harness: $HARNESS_DATA_DIR/iris.csv, else data/iris.csv of the
// harness's resources (PREFIX/share/harness when installed, the source tree otherwise).
std::string default_iris_path();

// Reads "sepal_length,sepal_width,petal_length,petal_width,species" rows (header first).
// Throws ConfigError "path:line: what is wrong" for a missing file or a malformed row.
IrisData load_iris_csv(const std::string& path);

struct IrisSplit {
  std::vector<int64_t> train;  // row numbers, shuffled
  std::vector<int64_t> test;
};

// Holds out `test_fraction` of each class (stratified), shuffled with `seed`; the same seed gives
// the same split on every rank and machine.
IrisSplit split_iris(const IrisData& data, double test_fraction, uint64_t seed);

// Replaces each feature by (x - mean) / std over the rows in `reference` (the training rows).
void standardize(IrisData& data, const std::vector<int64_t>& reference);

}  // namespace harness

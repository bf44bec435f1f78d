#include "workloads/iris_data.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "harness/common/errors.h"
#include "workloads/iris_mlp.h"

namespace harness {
namespace {

std::string write_csv(const std::string& name, const std::string& text) {
  const auto path = std::filesystem::temp_directory_path() / ("harness_iris_" + name + ".csv");
  std::ofstream(path) << text;
  return path.string();
}

TEST(IrisData, ShippedFileHas150RowsFiftyPerSpecies) {
  const IrisData data = load_iris_csv(default_iris_path());
  ASSERT_EQ(data.rows(), 150);
  for (int c = 0; c < IrisData::kClasses; ++c) {
    EXPECT_EQ(std::count(data.labels.begin(), data.labels.end(), c), 50);
  }
  EXPECT_FLOAT_EQ(data.features[0], 5.1F);  // first row: 5.1,3.5,1.4,0.2,setosa
  EXPECT_FLOAT_EQ(data.features[3], 0.2F);
}

TEST(IrisData, SplitIsStratifiedDisjointAndDeterministic) {
  const IrisData data = load_iris_csv(default_iris_path());
  const IrisSplit split = split_iris(data, 0.2, 7);
  EXPECT_EQ(split.test.size(), 30U);
  EXPECT_EQ(split.train.size(), 120U);
  std::set<int64_t> all(split.train.begin(), split.train.end());
  all.insert(split.test.begin(), split.test.end());
  EXPECT_EQ(all.size(), 150U);
  for (int c = 0; c < IrisData::kClasses; ++c) {
    EXPECT_EQ(std::count_if(split.test.begin(), split.test.end(),
                            [&](int64_t row) { return data.labels[row] == c; }),
              10);
  }
  EXPECT_EQ(split_iris(data, 0.2, 7).train, split.train);
  EXPECT_NE(split_iris(data, 0.2, 8).train, split.train);
}

TEST(IrisData, StandardizedTrainingFeaturesHaveZeroMeanUnitVariance) {
  IrisData data = load_iris_csv(default_iris_path());
  const IrisSplit split = split_iris(data, 0.2, 1);
  standardize(data, split.train);
  for (int f = 0; f < IrisData::kFeatures; ++f) {
    double sum = 0;
    double squares = 0;
    for (const int64_t row : split.train) {
      const double x = data.features[row * IrisData::kFeatures + f];
      sum += x;
      squares += x * x;
    }
    EXPECT_NEAR(sum / 120, 0.0, 1e-5);
    EXPECT_NEAR(squares / 120, 1.0, 1e-4);
  }
}

// The ConfigError that loading `path` throws, or "".
std::string message(const std::string& path) {
  try {
    load_iris_csv(path);
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

// Too few rows of each species for its held-out share: the accuracy would be 0 / 0, refused before
// any rank starts.
TEST(IrisData, AFileThatLeavesNoHeldOutRowIsRefused) {
  std::string text = "sepal_length,sepal_width,petal_length,petal_width,species\n";
  for (const char* species : {"setosa", "versicolor", "virginica"}) {
    for (int row = 0; row < 2; ++row) text += std::string("5.1,3.5,1.4,0.2,") + species + "\n";
  }
  PointSettings settings;
  settings.data_path = write_csv("no_held_out", text);
  try {
    iris_mlp_train_samples(settings);
    FAIL() << "accepted";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("data_path: " + settings.data_path + ": 6 rows leave no held-out row"),
              std::string::npos)
        << error.what();
  }
  EXPECT_EQ(iris_mlp_train_samples(PointSettings{}), 120);  // the shipped file: 30 held out
}

TEST(IrisData, MalformedFilesGiveLineNumbers) {
  const std::string header = "sepal_length,sepal_width,petal_length,petal_width,species\n";
  EXPECT_NE(message(write_csv("bad_number", header + "5.1,x,1.4,0.2,setosa\n"))
                .find(":2: field 2: expected a number (a row is 4 numbers and a species)"),
            std::string::npos);
  EXPECT_NE(message(write_csv("bad_species", header + "5.1,3.5,1.4,0.2,rose\n"))
                .find(":2: field 5: expected the species setosa, versicolor or virginica"),
            std::string::npos);
  EXPECT_NE(message(write_csv("trailing_comma", header + "5.1,3.5,1.4,0.2,setosa,\n")).find(":2: expected 5 comma-separated "
                                                                                         "fields, got 6"),
            std::string::npos);
  EXPECT_EQ(message(write_csv("byte_order_mark", "\xEF\xBB\xBF" + header + "5.1,3.5,1.4,0.2,setosa\n")), "");
  EXPECT_NE(message(write_csv("short_row", header + "5.1,3.5\n")).find(":2: expected 5"),
            std::string::npos);
  EXPECT_NE(message(write_csv("no_header", "1,2,3,4,setosa\n")).find(":1: not an Iris CSV file: expected the header"),
            std::string::npos);
  EXPECT_NE(message("/nonexistent.csv").find("cannot open"), std::string::npos);
}

// A data_path may name anything: each of these gets one short line at once, never a hang, a full
// memory or raw bytes on the terminal.
TEST(IrisData, WrongKindsOfFilesAreRefusedQuicklyInOneShortLine) {
  const std::string fifo = (std::filesystem::temp_directory_path() / "harness_iris_fifo").string();
  std::filesystem::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& path : {fifo, std::string("/dev/zero"),
                                  write_csv("binary", std::string("\x7f" "ELF\0\0\x01\xff", 8)),
                                  write_csv("long_line", std::string(200000, 'x') + "\n")}) {
    const std::string text = message(path);
    EXPECT_EQ(text.rfind(path + ": ", 0), 0U) << text;
    EXPECT_EQ(text.find('\n'), std::string::npos) << text;
    EXPECT_LT(text.size(), 400U) << text;
    EXPECT_EQ(text.find("\xff"), std::string::npos) << "raw bytes echoed: " << text;
  }
  std::filesystem::remove(fifo);
}

// `--set data_path=/etc/shadow` once printed the file's first line ("root:*:20228:...") into
// the error, and so into CI logs; then a file readable by everyone inside a directory only its
// owner may enter (0644 in 0700) still had its first line printed, since whether a file is private
// cannot be told from the file. No message quotes any of a data file: it says what is wrong.
TEST(IrisData, NoMessageQuotesTheFile) {
  const std::string secret = "root:$6$saltsalt$hashhashhash:20228:0:99999:7:::";
  const std::filesystem::path closed = std::filesystem::temp_directory_path() / "harness_iris_closed";
  std::filesystem::create_directories(closed);
  std::ofstream(closed / "data.csv") << secret << "\n";
  std::filesystem::permissions(closed / "data.csv",
                               std::filesystem::perms::owner_read | std::filesystem::perms::owner_write |
                                   std::filesystem::perms::group_read | std::filesystem::perms::others_read,
                               std::filesystem::perm_options::replace);
  std::filesystem::permissions(closed, std::filesystem::perms::owner_all, std::filesystem::perm_options::replace);
  const std::string private_copy = write_csv("private", secret + "\n");
  std::filesystem::permissions(private_copy, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write,
                               std::filesystem::perm_options::replace);
  std::vector<std::string> paths = {(closed / "data.csv").string(), private_copy, write_csv("shadow", secret + "\n")};
  if (std::filesystem::exists("/etc/shadow")) paths.emplace_back("/etc/shadow");
  for (const std::string& path : paths) {
    const std::string text = message(path);
    EXPECT_EQ(text.rfind(path + ":1: not an Iris CSV file: expected the header", 0), 0U) << text;
    EXPECT_NE(text.find("rows of 4 numbers and a species"), std::string::npos) << text;
    for (const char* part : {"root", "hash", "20228", "99999"}) EXPECT_EQ(text.find(part), std::string::npos) << text;
  }
  // A row's fields: where and what was expected, not the field.
  const std::string header = "sepal_length,sepal_width,petal_length,petal_width,species\n";
  for (const std::string& row :
       {std::string("5.1,root:$6$salt,1.4,0.2,setosa"), std::string("5.1,3.5,1.4,0.2,root:$6$salt")}) {
    const std::string text = message(write_csv("secret_field", header + row + "\n"));
    EXPECT_NE(text.find(":2: field "), std::string::npos) << text;
    EXPECT_EQ(text.find("root"), std::string::npos) << text;
    EXPECT_EQ(text.find("salt"), std::string::npos) << text;
  }
}

}  // namespace
}  // namespace harness

#include "workloads/idx_reader.h"

#include <gtest/gtest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "workloads/mnist_cnn.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

// An IDX file of unsigned bytes with `shape`, data 0, 1, 2, ... (mod 256), plain or gzipped.
std::string write_idx(const std::string& name, const std::vector<uint32_t>& shape, bool gzip,
                      std::size_t drop_bytes = 0) {
  std::string bytes = {0, 0, 0x08, static_cast<char>(shape.size())};
  std::size_t items = 1;
  for (const uint32_t size : shape) {
    for (int shift = 24; shift >= 0; shift -= 8) bytes += static_cast<char>((size >> shift) & 0xFF);
    items *= size;
  }
  for (std::size_t i = 0; i < items; ++i) bytes += static_cast<char>(i % 256);
  bytes.resize(bytes.size() - drop_bytes);
  const fs::path path = fs::temp_directory_path() / ("harness_idx_" + name + (gzip ? ".gz" : ""));
  if (gzip) {
    gzFile file = gzopen(path.c_str(), "wb");
    gzwrite(file, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(file);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
  return path.string();
}

// The ConfigError message of reading `path` whole, or only its header; "" if none.
std::string error_of(const std::string& path, bool header_only = false) {
  try {
    if (header_only) {
      read_idx_shape(path);
    } else {
      read_idx(path);
    }
  } catch (const ConfigError& error) {
    return error.what();
  }
  return "";
}

TEST(IdxReader, ReadsPlainAndGzippedFiles) {
  for (const bool gzip : {false, true}) {
    const IdxArray array = read_idx(write_idx("images", {3, 4, 5}, gzip));
    EXPECT_EQ(array.shape, (std::vector<int64_t>{3, 4, 5}));
    ASSERT_EQ(array.data.size(), 60U);
    EXPECT_EQ(array.data[59], 59);
  }
}

TEST(IdxReader, ReadsOnlyTheFirstItemsWhenAsked) {
  const IdxArray array = read_idx(write_idx("first", {10, 2}, true), 3);
  EXPECT_EQ(array.shape, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(array.data.size(), 6U);
}

TEST(IdxReader, CorruptOrMissingFilesGiveClearErrors) {
  EXPECT_NE(error_of("/nonexistent/train-images-idx3-ubyte").find("cannot open IDX file"),
            std::string::npos);
  const std::string bad_magic = (fs::temp_directory_path() / "harness_idx_bad_magic").string();
  std::ofstream(bad_magic, std::ios::binary) << "GIF89a, not an IDX file";
  EXPECT_NE(error_of(bad_magic).find("not an IDX file: expected the magic number 00 00 08 0D"), std::string::npos)
      << error_of(bad_magic);
  const std::string truncated = write_idx("truncated", {4, 28, 28}, true, 100);
  EXPECT_NE(error_of(truncated).find("corrupt or truncated IDX file: the data ends after"),
            std::string::npos)
      << error_of(truncated);
}

// A data_path naming a file its user did not mean to show (`train-images-idx3-ubyte` linked to
// /etc/shadow once printed "72 6f 6f 74", that is "root"): what is wrong, none of its bytes.
TEST(IdxReader, AFileThatIsNotIdxIsRefusedWithoutItsBytes) {
  const auto bytes_in = [](const std::string& text, const std::string& content) {
    for (std::size_t i = 0; i + 4 <= content.size() && i < 8; ++i) {
      const std::string piece = content.substr(i, 4);
      if (text.find(piece) != std::string::npos) return true;
      const std::string hex = fmt::format("{:02x} {:02x} {:02x} {:02x}", static_cast<unsigned char>(piece[0]),
                                          static_cast<unsigned char>(piece[1]), static_cast<unsigned char>(piece[2]),
                                          static_cast<unsigned char>(piece[3]));
      if (text.find(hex) != std::string::npos) return true;
    }
    return false;
  };
  const fs::path dir = fs::temp_directory_path() / "harness_idx_not_shown";
  fs::create_directories(dir);
  const std::string secret = "root:$6$saltsalt$hashhashhash:20228:0:99999:7:::\n";
  std::ofstream(dir / "train-images-idx3-ubyte", std::ios::binary) << secret;
  std::string text = error_of((dir / "train-images-idx3-ubyte").string(), true);
  EXPECT_NE(text.find(": not an IDX file: expected the magic number 00 00 08 0D"), std::string::npos) << text;
  EXPECT_FALSE(bytes_in(text, secret)) << text;
  EXPECT_EQ(text.find("72 6f 6f 74"), std::string::npos) << text;
  // Starting as an IDX file does but with another type (floats) or too many dimensions: the
  // magic number is wrong, and still not shown.
  for (const std::string& magic : {std::string("\0\0\x0d\x03", 4), std::string("\0\0\x08\x09", 4)}) {
    std::ofstream(dir / "other", std::ios::binary) << magic << std::string(64, '\x01');
    text = error_of((dir / "other").string(), true);
    EXPECT_NE(text.find(": wrong magic number: expected the magic number 00 00 08 0D"), std::string::npos) << text;
    EXPECT_FALSE(bytes_in(text, magic + std::string(4, '\x01'))) << text;
  }
  if (fs::exists("/etc/shadow")) {
    text = error_of("/etc/shadow", true);
    EXPECT_NE(text.find("/etc/shadow: not an IDX file"), std::string::npos) << text;
    EXPECT_EQ(text.find("72 6f 6f 74"), std::string::npos) << text;
    EXPECT_EQ(text.find("root"), std::string::npos) << text;
  }
}

// Sizes that the file cannot hold are refused from the header alone (what validation reads
// before launch), not by a failed allocation or read in the ranks.
TEST(IdxReader, HeaderLargerThanTheFileIsRefusedFromTheHeader) {
  const std::string plain = write_idx("short_plain", {100, 28, 28}, false, 70000);
  EXPECT_NE(error_of(plain, true).find("its header says 78400 bytes of data, more than the 8400 "
                                       "bytes after the header"),
            std::string::npos)
      << error_of(plain, true);

  // 4294967295 images: more than any gzip file this small can inflate to.
  const fs::path huge = fs::temp_directory_path() / "harness_idx_huge_count.gz";
  const std::string header = {0, 0, 0x08, 3, '\xff', '\xff', '\xff', '\xff', 0, 0, 0, 28, 0, 0, 0, 28};
  gzFile file = gzopen(huge.c_str(), "wb");
  gzwrite(file, header.data(), static_cast<unsigned>(header.size()));
  gzclose(file);
  EXPECT_NE(error_of(huge.string(), true).find("more than a gzip file of"), std::string::npos)
      << error_of(huge.string(), true);
}

TEST(MnistCnn, DebianFashionMnistHas60000TrainingImages) {
  if (!fs::exists(kDefaultMnistDirectory)) GTEST_SKIP() << "dataset-fashion-mnist not installed";
  PointSettings settings;
  settings.workload = "mnist_cnn";
  EXPECT_EQ(mnist_cnn_train_samples(settings), 60000);
}

// A label that is no class is found before any rank starts, as the rank would find it.
TEST(MnistCnn, ALabelOutOfRangeIsRefusedBeforeLaunch) {
  fs::create_directories(fs::temp_directory_path() / "harness_idx_labels");
  write_idx("labels/train-images-idx3-ubyte", {12, 28, 28}, false);
  const std::string labels = write_idx("labels/train-labels-idx1-ubyte", {12}, false);  // 0..11
  write_idx("labels/t10k-images-idx3-ubyte", {2, 28, 28}, false);
  write_idx("labels/t10k-labels-idx1-ubyte", {2}, false);
  PointSettings settings;
  settings.workload = "mnist_cnn";
  settings.data_path = (fs::temp_directory_path() / "harness_idx_labels").string();
  try {
    mnist_cnn_train_samples(settings);
    FAIL() << "accepted";
  } catch (const ConfigError& error) {
    EXPECT_EQ(std::string(error.what()),
              "data_path: " + labels + ": the label of item 10 is above 9, expected a class 0..9");
  }
}

TEST(MnistCnn, DirectoryWithoutIdxFilesNamesTheSetting) {
  PointSettings settings;
  settings.data_path = fs::temp_directory_path().string();
  try {
    mnist_cnn_train_samples(settings);
    FAIL() << "no error";
  } catch (const ConfigError& error) {
    EXPECT_NE(std::string(error.what()).find("data_path: "), std::string::npos) << error.what();
    EXPECT_NE(std::string(error.what()).find("train-images-idx3-ubyte"), std::string::npos);
  }
}

}  // namespace
}  // namespace harness

// What the drawing keeps and cleans up around gnuplot: an image a full disk cut short is not
// taken for a whole one, and the drawing folders a killed harness left behind go.
#include "harness/results/plots.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/common/scratch_dir.h"

namespace harness {
namespace {

namespace fs = std::filesystem;

fs::path plots_scratch(const std::string& name) { return empty_scratch_dir("plots_test_" + name); }

void write_bytes(const fs::path& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

TEST(Plots, AnImageCutShortIsNotWhole) {
  const fs::path dir = plots_scratch("whole");
  const std::string svg = "<?xml version=\"1.0\"?>\n<svg width=\"600\">\n<g>\n</g>\n</svg>\n\n";
  write_bytes(dir / "whole.svg", svg);
  EXPECT_TRUE(whole_image((dir / "whole.svg").string()));
  write_bytes(dir / "cut.svg", svg.substr(0, svg.size() / 2));
  EXPECT_FALSE(whole_image((dir / "cut.svg").string()));
  // A PNG's last chunk: length 0, "IEND", its CRC.
  const std::string signature = "\x89PNG\r\n\x1a\n";
  const std::string iend = std::string("\0\0\0\0IEND\xae\x42\x60\x82", 12);
  write_bytes(dir / "whole.png", signature + std::string(100, 'x') + iend);
  EXPECT_TRUE(whole_image((dir / "whole.png").string()));
  write_bytes(dir / "cut.png", signature + std::string(100, 'x'));
  EXPECT_FALSE(whole_image((dir / "cut.png").string()));
  write_bytes(dir / "empty.svg", "");
  EXPECT_FALSE(whole_image((dir / "empty.svg").string()));
  EXPECT_FALSE(whole_image((dir / "missing.svg").string()));
}

TEST(Plots, OnlyOldDrawingFoldersAreRemoved) {
  const fs::path dir = plots_scratch("stale");
  fs::create_directories(dir / ".drawing-old" / "inside");
  write_bytes(dir / ".drawing-old" / "inside" / "half.png", "x");
  fs::create_directories(dir / ".drawing-now");
  fs::create_directories(dir / "kept-old");
  const auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
  fs::last_write_time(dir / ".drawing-old", an_hour_ago);
  fs::last_write_time(dir / "kept-old", an_hour_ago);
  write_bytes(dir / "speedup.svg", "<svg></svg>");
  remove_stale_drawings(dir.string());
  EXPECT_FALSE(fs::exists(dir / ".drawing-old")) << "a killed harness's drawing stayed";
  EXPECT_TRUE(fs::exists(dir / ".drawing-now")) << "a drawing in progress was removed";
  EXPECT_TRUE(fs::exists(dir / "kept-old"));
  EXPECT_TRUE(fs::exists(dir / "speedup.svg"));
}

}  // namespace
}  // namespace harness

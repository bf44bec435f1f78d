// An empty folder of a unit test's own, harness_<name> under the temporary directory.
#pragma once

#include <filesystem>
#include <string>

namespace harness {

inline std::filesystem::path empty_scratch_dir(const std::string& name) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("harness_" + name);
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace harness

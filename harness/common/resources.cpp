#include "harness/common/resources.h"

#include <cstdlib>
#include <system_error>

#include <fmt/format.h>

namespace harness {

ResourceDirectory resource_directory_for(const std::filesystem::path& executable,
                                         const std::filesystem::path& source_tree) {
  const std::filesystem::path bin = executable.parent_path();
  if (bin.filename() == "bin") {
    const std::filesystem::path shared = bin.parent_path() / "share" / "harness";
    std::error_code error;
    // The experiments folder marks an install: a build tree's bin/ (or a user's ~/bin holding a
    // copied binary) has none beside it, and then the source tree it was built from is used.
    if (std::filesystem::is_directory(shared / "experiments", error)) return {shared, true};
  }
  return {source_tree, false};
}

std::filesystem::path running_executable() {
  std::error_code error;
  std::filesystem::path executable = std::filesystem::read_symlink("/proc/self/exe", error);
  return error ? std::filesystem::path() : executable;
}

ResourceDirectory resource_directory() { return resource_directory_for(running_executable(), HARNESS_SOURCE_DIR); }

std::filesystem::path data_folder() {
  if (const char* directory = std::getenv("HARNESS_DATA_DIR"); directory != nullptr) return directory;
  return resource_directory().path / "data";
}

std::string describe_resources(const ResourceDirectory& resources) {
  return fmt::format("resources: {} ({})", resources.path.string(),
                     resources.installed ? "installed" : "source tree");
}

}  // namespace harness

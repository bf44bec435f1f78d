// Where the files the harness reads at run time live: the Iris CSV (data/), the shipped
// experiments and experiments/schema.json, the SLURM job template (slurm/). An installed harness
// (`cmake --install build --prefix P`: P/bin/harness) reads them from P/share/harness; a harness
// run from its build tree reads them from the source tree it was built from. No environment
// variable is needed for either; HARNESS_DATA_DIR still overrides the data folder alone.
#pragma once

#include <filesystem>
#include <string>

namespace harness {

struct ResourceDirectory {
  std::filesystem::path path;
  bool installed = false;  // PREFIX/share/harness beside PREFIX/bin/harness, else the source tree
};

// The running binary (/proc/self/exe); empty where it cannot be read.
std::filesystem::path running_executable();

// The directory for the running binary (/proc/self/exe).
ResourceDirectory resource_directory();

// The same rule for a binary at `executable`: PREFIX/share/harness when `executable` is
// PREFIX/bin/NAME and PREFIX/share/harness/experiments exists, else `source_tree`.
ResourceDirectory resource_directory_for(const std::filesystem::path& executable,
                                         const std::filesystem::path& source_tree);

// The folder of the data the harness ships (data/: the Iris CSV, models/): $HARNESS_DATA_DIR when
// set, else the resources' data/.
std::filesystem::path data_folder();

// "resources: PATH (installed)" or "resources: PATH (source tree)", for `harness --version`.
std::string describe_resources(const ResourceDirectory& resources);

}  // namespace harness

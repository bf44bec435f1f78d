// SHA-256 of a file, for records that name the exact file a point used (a TorchScript model).
#pragma once

#include <filesystem>
#include <string>

namespace harness {

// Lower-case hex SHA-256 of the file's bytes. Throws std::runtime_error "PATH: why" when it
// cannot be read.
std::string sha256_of_file(const std::filesystem::path& path);

}  // namespace harness

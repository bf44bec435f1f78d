// Reader for the IDX files of MNIST and Fashion-MNIST (http://yann.lecun.com/exdb/mnist/ format):
// a big-endian header (magic 0x0000080D: unsigned bytes, D dimensions; then D 32-bit sizes)
// followed by the data. Files may be gzip-compressed (as Debian's dataset-fashion-mnist ships
// them); zlib reads both. No LibTorch, so data can be checked before launch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace harness {

struct IdxArray {
  std::vector<int64_t> shape;  // e.g. {60000, 28, 28} for images, {60000} for labels
  std::vector<uint8_t> data;   // row-major
};

// Reads the header and the first `max_items` items (all when 0). Throws ConfigError
// "path: what is wrong" for a missing file, a bad magic number, or a file shorter than its header
// says.
IdxArray read_idx(const std::string& path, int64_t max_items = 0);

// Reads only the header: the shape. Same errors.
std::vector<int64_t> read_idx_shape(const std::string& path);

}  // namespace harness

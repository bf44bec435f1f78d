#include "workloads/idx_reader.h"

#include <zlib.h>

#include <algorithm>
#include <filesystem>
#include <memory>

#include <fmt/format.h>

#include "harness/common/errors.h"
#include "harness/common/files.h"

namespace harness {
namespace {

using GzFile = std::unique_ptr<gzFile_s, decltype(&gzclose)>;

GzFile open_idx(const std::string& path) {
  // gzopen would read a FIFO or a device until it ends, which may be never.
  require_regular_file(path, "an IDX file (gzipped or not)");
  GzFile file(gzopen(path.c_str(), "rb"), &gzclose);
  if (!file) throw ConfigError(fmt::format("{}: cannot open IDX file", path));
  return file;
}

void read_exactly(gzFile file, void* buffer, std::size_t bytes, const std::string& path,
                  const char* what) {
  std::size_t done = 0;
  auto* out = static_cast<unsigned char*>(buffer);
  while (done < bytes) {
    // gzread takes an unsigned count: read in pieces below 1 GiB.
    const auto piece = static_cast<unsigned>(std::min<std::size_t>(bytes - done, 1U << 30));
    const int got = gzread(file, out + done, piece);
    if (got <= 0) {
      int code = 0;
      const char* message = gzerror(file, &code);
      throw ConfigError(fmt::format("{}: corrupt or truncated IDX file: {} ends after {} of {} "
                                    "bytes{}",
                                    path, what, done, bytes,
                                    code < 0 ? fmt::format(" ({})", message) : ""));
    }
    done += static_cast<std::size_t>(got);
  }
}

// The header's sizes against the file on disk, so that a corrupt header is refused from the
// header alone, before any rank starts, instead of by a failed allocation or read later:
// uncompressed, the file must hold every byte; gzip-compressed, deflate cannot shrink data more
// than 1032:1.
void check_size_against_file(gzFile file, const std::string& path,
                             const std::vector<int64_t>& shape) {
  std::error_code error;
  const auto on_disk = std::filesystem::file_size(path, error);
  if (error) return;  // not a regular file: the reads will tell
  const auto header_bytes = 4 + 4 * static_cast<std::uintmax_t>(shape.size());
  const auto after_header = on_disk - std::min(on_disk, header_bytes);
  long double data_bytes = 1;
  for (const int64_t size : shape) data_bytes *= static_cast<long double>(size);
  const bool compressed = gzdirect(file) == 0;
  const long double most = compressed ? 1032.0L * static_cast<long double>(on_disk)
                                      : static_cast<long double>(after_header);
  if (data_bytes > most) {
    throw ConfigError(fmt::format(
        "{}: corrupt or truncated IDX file: its header says {:.0Lf} bytes of data, more than {}",
        path, data_bytes,
        compressed ? fmt::format("a gzip file of {} bytes can hold", on_disk)
                   : fmt::format("the {} bytes after the header", after_header)));
  }
}

std::vector<int64_t> read_header(gzFile file, const std::string& path) {
  unsigned char magic[4] = {};
  read_exactly(file, magic, sizeof(magic), path, "the header");
  // What is wrong, never the bytes themselves: a data_path may name a file its user did not mean
  // to show (/etc/shadow's first four bytes are "root").
  constexpr const char* kExpected =
      "expected the magic number 00 00 08 0D of an IDX file of unsigned bytes, D its number of dimensions (1 to 4); "
      "the file's bytes are not shown";
  if (magic[0] != 0 || magic[1] != 0) throw ConfigError(fmt::format("{}: not an IDX file: {}", path, kExpected));
  if (magic[2] != 0x08 || magic[3] == 0 || magic[3] > 4) {
    throw ConfigError(fmt::format("{}: wrong magic number: {}", path, kExpected));
  }
  std::vector<int64_t> shape;
  for (int d = 0; d < magic[3]; ++d) {
    unsigned char size[4] = {};
    read_exactly(file, size, sizeof(size), path, "the header");
    shape.push_back((int64_t{size[0]} << 24) | (int64_t{size[1]} << 16) | (int64_t{size[2]} << 8) |
                    int64_t{size[3]});
  }
  check_size_against_file(file, path, shape);
  return shape;
}

}  // namespace

std::vector<int64_t> read_idx_shape(const std::string& path) {
  const GzFile file = open_idx(path);
  return read_header(file.get(), path);
}

IdxArray read_idx(const std::string& path, int64_t max_items) {
  const GzFile file = open_idx(path);
  IdxArray array;
  array.shape = read_header(file.get(), path);
  if (max_items > 0 && max_items < array.shape[0]) array.shape[0] = max_items;
  std::size_t bytes = 1;
  for (const int64_t size : array.shape) bytes *= static_cast<std::size_t>(size);
  array.data.resize(bytes);
  read_exactly(file.get(), array.data.data(), bytes, path, "the data");
  return array;
}

}  // namespace harness

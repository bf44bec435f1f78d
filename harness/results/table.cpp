#include "harness/results/table.h"

#include <cmath>

#include <fmt/format.h>

namespace harness {

std::string csv_field(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (const char c : text) {
    if (c == '"') quoted += '"';
    quoted += c;
  }
  return quoted + "\"";
}

std::string csv_number(std::optional<double> value) {
  // A value that is not a number (a diverged run's loss) is no measurement to compute with: empty,
  // as an unmeasured one; the convergence column says why.
  return value && std::isfinite(*value) ? fmt::format("{:.6g}", *value) : std::string();
}

std::string pad(const std::string& text, int width, bool left) {
  const auto length = static_cast<int>(text.size());
  if (length >= width) return text;
  const std::string spaces(static_cast<std::size_t>(width - length), ' ');
  return left ? text + spaces : spaces + text;
}

}  // namespace harness

#include "harness/common/text.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>

#include <fmt/format.h>

#include "harness/common/errors.h"

namespace harness {
namespace {

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string closest_name(std::string_view unknown, const std::vector<std::string_view>& candidates) {
  std::string best;
  std::size_t best_distance = std::max<std::size_t>(2, unknown.size() / 3) + 1;
  for (const auto candidate : candidates) {
    const std::size_t distance = edit_distance(unknown, candidate);
    if (distance < best_distance) {
      best_distance = distance;
      best = std::string(candidate);
    }
  }
  return best;
}

std::string shortened(std::string_view text, std::size_t max_bytes) {
  if (text.size() <= max_bytes) return std::string(text);
  constexpr std::string_view kEllipsis = "...";
  const std::size_t budget = max_bytes > kEllipsis.size() ? max_bytes - kEllipsis.size() : 0;
  // Whole units only: half a UTF-8 character or half of "\u000a" would garble the message.
  std::size_t end = 0;
  while (end < text.size()) {
    const auto c = static_cast<unsigned char>(text[end]);
    std::size_t unit = 1;
    if (c == '\\' && end + 1 < text.size()) {
      unit = text[end + 1] == 'u' ? 6 : 2;
    } else if (c >= 0xF0) {
      unit = 4;
    } else if (c >= 0xE0) {
      unit = 3;
    } else if (c >= 0xC0) {
      unit = 2;
    }
    if (end + unit > budget) break;
    end += unit;
  }
  return std::string(text.substr(0, end)) + std::string(kEllipsis);
}

std::string describe_json(const Json& value) {
  constexpr std::size_t kMaxChars = 60;
  // `replace`: a string that is not UTF-8 (not from a parsed file) must not make dump() throw.
  return shortened(value.dump(-1, ' ', false, Json::error_handler_t::replace), kMaxChars);
}

std::string describe_text(std::string_view text) { return describe_json(Json(std::string(text))); }

bool is_plain_name(std::string_view name, std::size_t max_length) {
  if (name.empty() || name.size() > max_length || name[0] == '.' || name[0] == '-') return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_' || c == '.' || c == '-';
  });
}

bool is_host_name(std::string_view name) {
  constexpr std::size_t kMaxNameLength = 253;
  constexpr std::size_t kMaxLabelLength = 63;
  if (name.empty() || name.size() > kMaxNameLength) return false;
  std::size_t start = 0;
  while (true) {
    const std::size_t dot = name.find('.', start);
    const std::string_view label = name.substr(start, dot == std::string_view::npos ? dot : dot - start);
    const bool valid = !label.empty() && label.size() <= kMaxLabelLength && label.front() != '-' &&
                       label.back() != '-' && std::all_of(label.begin(), label.end(), [](char c) {
                         return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
                       });
    if (!valid) return false;
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

std::vector<std::string> split_comma_list(std::string_view list, std::string_view option) {
  std::vector<std::string> items;
  std::size_t start = 0;
  while (true) {
    const std::size_t comma = list.find(',', start);
    items.emplace_back(list.substr(start, comma == std::string_view::npos ? comma : comma - start));
    if (items.back().empty()) {
      throw ConfigError(fmt::format("{} {}: expected items separated by single commas, got an empty item {}", option,
                                    describe_text(list), items.size()));
    }
    if (comma == std::string_view::npos) return items;
    start = comma + 1;
  }
}

std::string format_duration(double seconds) {
  if (seconds < 9.95) return fmt::format("{:.1f} s", std::max(0.0, seconds));
  const auto total = static_cast<int64_t>(std::llround(seconds));
  if (total < 60) return fmt::format("{} s", total);
  if (total < 3600) return fmt::format("{} min {:02} s", total / 60, total % 60);
  return fmt::format("{} h {:02} min", total / 3600, (total % 3600) / 60);
}

std::string shell_quoted(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& argument : argv) {
    if (!line.empty()) line += ' ';
    const bool plain = !argument.empty() && std::all_of(argument.begin(), argument.end(), [](char c) {
      return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
             std::string_view("@%_+=:,./-").find(c) != std::string_view::npos;
    });
    if (plain) {
      line += argument;
      continue;
    }
    line += '\'';
    for (const char c : argument) {
      if (c == '\'') {
        line += "'\\''";  // close the quote, an escaped quote, reopen
      } else {
        line += c;
      }
    }
    line += '\'';
  }
  return line;
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> lines;
  while (!text.empty()) {
    const auto end = text.find('\n');
    const std::string_view line = text.substr(0, end);
    if (!line.empty()) lines.emplace_back(line);
    if (end == std::string_view::npos) break;
    text.remove_prefix(end + 1);
  }
  return lines;
}

}  // namespace harness

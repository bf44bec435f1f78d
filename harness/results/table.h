// Tables defined once as a list of columns: a CSV file (header and rows from the same list) and a
// console table with a units row (as nccl-tests prints), so that a header and its values cannot
// drift apart.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace harness {

template <typename Row>
struct CsvColumn {
  std::string_view name;
  std::function<std::string(const Row&)> value;  // already formatted; quoted by write_csv
};

template <typename Row>
struct ConsoleColumn {
  std::string_view header;
  std::string_view unit;  // second header line
  int width = 0;
  bool left = false;      // aligned left (ids), otherwise right
  std::function<std::string(const Row&)> value;
};

// A field quoted as RFC 4180 asks when it holds a comma, a quote or a line break.
std::string csv_field(const std::string& text);
// A measured number with enough digits to round-trip timings; empty when not measured.
std::string csv_number(std::optional<double> value);

// `columns` without the one named `name`: a column only some studies have (`build`, when the
// experiment names builds) leaves the others' files as they were.
template <typename Row>
std::vector<CsvColumn<Row>> without_column(std::vector<CsvColumn<Row>> columns, std::string_view name) {
  std::erase_if(columns, [name](const CsvColumn<Row>& column) { return column.name == name; });
  return columns;
}

template <typename Row>
std::string format_csv(const std::vector<CsvColumn<Row>>& columns, const std::vector<Row>& rows) {
  std::string out;
  // Appended piece by piece: `"," + text` trips GCC 12's -Wrestrict false positive.
  for (std::size_t c = 0; c < columns.size(); ++c) {
    if (c > 0) out += ',';
    out += columns[c].name;
  }
  out += '\n';
  for (const auto& row : rows) {
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c > 0) out += ',';
      out += csv_field(columns[c].value(row));
    }
    out += '\n';
  }
  return out;
}

std::string pad(const std::string& text, int width, bool left);

template <typename Row>
std::string format_console_table(const std::vector<ConsoleColumn<Row>>& columns,
                                 const std::vector<Row>& rows) {
  std::string out;
  const auto line = [&](const std::function<std::string(const ConsoleColumn<Row>&)>& cell) {
    std::string text;
    for (std::size_t c = 0; c < columns.size(); ++c) {
      if (c > 0) text += ' ';
      text += pad(cell(columns[c]), columns[c].width, columns[c].left);
    }
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + '\n';
  };
  line([](const auto& column) { return std::string(column.header); });
  line([](const auto& column) { return std::string(column.unit); });
  for (const auto& row : rows) line([&row](const auto& column) { return column.value(row); });
  return out;
}

}  // namespace harness

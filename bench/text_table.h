// A plain-text table with fixed-width columns sized to their widest cell:
// first column left-aligned (names), the others right-aligned (numbers).
#pragma once

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

namespace kjit::bench {

class TextTable {
 public:
  explicit TextTable(std::vector<std::string> headers) : headers_(std::move(headers)) {}

  void add_row(std::vector<std::string> cells) {
    cells.resize(headers_.size());
    rows_.push_back(std::move(cells));
  }

  void print(std::FILE* out = stdout) const {
    std::vector<size_t> widths(headers_.size());
    for (size_t c = 0; c < headers_.size(); ++c) {
      widths[c] = headers_[c].size();
      for (const auto& row : rows_) widths[c] = std::max(widths[c], row[c].size());
    }
    print_row(out, headers_, widths);
    std::string rule;
    for (size_t c = 0; c < widths.size(); ++c) rule += (c ? "  " : "") + std::string(widths[c], '-');
    std::fprintf(out, "%s\n", rule.c_str());
    for (const auto& row : rows_) print_row(out, row, widths);
  }

 private:
  static void print_row(std::FILE* out, const std::vector<std::string>& cells, const std::vector<size_t>& widths) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      std::string pad(widths[c] - cells[c].size(), ' ');
      line += (c ? "  " : "") + (c == 0 ? cells[c] + pad : pad + cells[c]);
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    std::fprintf(out, "%s\n", line.c_str());
  }

  std::vector<std::string> headers_;
  std::vector<std::vector<std::string>> rows_;
};

// "12.34" with `decimals` digits after the point.
inline std::string fixed(double value, int decimals = 2) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

}  // namespace kjit::bench

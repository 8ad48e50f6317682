#include "support/metrics_scrape.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "support/loopback.h"

namespace kjit::test {

std::string scrape_metrics(uint16_t port) {
  auto [status, body] = http_get(port, "/metrics");
  return status.find(" 200 ") == std::string::npos ? std::string() : body;
}

std::multimap<std::string, std::pair<MetricLabels, double>> metric_samples(const std::string& text) {
  std::multimap<std::string, std::pair<MetricLabels, double>> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t brace = line.find('{');
    const size_t space = line.rfind(' ');
    MetricLabels labels;
    if (brace != std::string::npos) {
      std::istringstream pairs(line.substr(brace + 1, line.rfind('}') - brace - 1));
      std::string pair;
      while (std::getline(pairs, pair, ',')) {
        const size_t eq = pair.find('=');
        if (eq != std::string::npos) labels[pair.substr(0, eq)] = pair.substr(eq + 2, pair.size() - eq - 3);
      }
    }
    out.emplace(line.substr(0, std::min(brace, space)), std::make_pair(std::move(labels), std::stod(line.substr(space + 1))));
  }
  return out;
}

double metric_total(const std::string& text, const std::string& name, const MetricLabels& labels) {
  double sum = -1;
  const auto samples = metric_samples(text);
  auto [begin, end] = samples.equal_range(name);
  for (auto it = begin; it != end; ++it) {
    const MetricLabels& found = it->second.first;
    bool matches = true;
    for (const auto& [key, value] : labels) matches = matches && found.count(key) && found.at(key) == value;
    if (matches) sum = (sum < 0 ? 0 : sum) + it->second.second;
  }
  return sum;
}

double metric_sample(const std::string& text, const std::string& name, const MetricLabels& labels) {
  const auto samples = metric_samples(text);
  auto [begin, end] = samples.equal_range(name);
  for (auto it = begin; it != end; ++it)
    if (it->second.first == labels) return it->second.second;
  return std::nan("");
}

}  // namespace kjit::test

#include "support/metrics_scrape.h"

#include <algorithm>
#include <sstream>

#include "support/loopback.h"

namespace kjit::test {

std::string scrape_metrics(uint16_t port) {
  auto [status, body] = http_get(port, "/metrics");
  return status.find(" 200 ") == std::string::npos ? std::string() : body;
}

double metric_total(const std::string& text, const std::string& name, const MetricLabels& labels) {
  double sum = -1;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t brace = line.find('{');
    const size_t space = line.rfind(' ');
    if (line.substr(0, std::min(brace, space)) != name) continue;
    MetricLabels found;
    if (brace != std::string::npos) {
      std::istringstream pairs(line.substr(brace + 1, line.rfind('}') - brace - 1));
      std::string pair;
      while (std::getline(pairs, pair, ',')) {
        const size_t eq = pair.find('=');
        if (eq != std::string::npos) found[pair.substr(0, eq)] = pair.substr(eq + 2, pair.size() - eq - 3);
      }
    }
    bool matches = true;
    for (const auto& [key, value] : labels) matches = matches && found.count(key) && found[key] == value;
    if (!matches) continue;
    sum = (sum < 0 ? 0 : sum) + std::stod(line.substr(space + 1));
  }
  return sum;
}

}  // namespace kjit::test

// The metrics reference (docs/metrics-reference.md), read from what kjitd's
// own Metrics exports: every family it registers and every family its
// scrape-time sources add, each fed one sample so its labels show.
#pragma once

#include <string>
#include <vector>

namespace kjit {

struct MetricDescription {
  std::string name;  // "kjit_cache_hits_total"
  std::string type;  // counter, gauge, histogram
  std::vector<std::string> labels;
  std::string help;
};

// Every series kjitd can export, by name.
std::vector<MetricDescription> metric_descriptions();

// docs/metrics-reference.md, as kjitd --print-metrics-reference writes it.
std::string metrics_reference_markdown();

}  // namespace kjit

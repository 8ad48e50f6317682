// The metrics read from other parts' own counters at each scrape (cache
// tiers, coalescer, blobs, workers, the compile queue, draining), as a
// prometheus Collectable: nothing is copied between scrapes.
#pragma once

#include <mutex>
#include <vector>

#include <prometheus/collectable.h>
#include <prometheus/metric_family.h>

#include "server/observe/metrics.h"

namespace kjit {

class MetricsSourcesCollector : public prometheus::Collectable {
 public:
  void set(MetricsSources sources);
  std::vector<prometheus::MetricFamily> Collect() const override;

 private:
  mutable std::mutex mutex_;
  MetricsSources sources_;
};

}  // namespace kjit

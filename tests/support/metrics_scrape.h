// kjitd's Prometheus metrics as a test reads them: a scrape of
// --metrics-port over loopback HTTP, and the value of one metric in it.
#pragma once

#include <cstdint>
#include <map>
#include <utility>
#include <string>

namespace kjit::test {

using MetricLabels = std::map<std::string, std::string>;

// GET /metrics on 127.0.0.1:port: the body, or "" when the answer is not a 200.
std::string scrape_metrics(uint16_t port);

// The samples of an exposition text: name -> each sample's labels and value.
// kjit's label values hold no quotes or commas, so a plain split reads them.
std::multimap<std::string, std::pair<MetricLabels, double>> metric_samples(const std::string& text);

// The sum over every sample of `name` whose labels include `labels`; -1
// when there is none.
double metric_total(const std::string& text, const std::string& name, const MetricLabels& labels = {});

// The value of the sample of `name` with exactly these labels; NaN when
// there is none.
double metric_sample(const std::string& text, const std::string& name, const MetricLabels& labels = {});

}  // namespace kjit::test

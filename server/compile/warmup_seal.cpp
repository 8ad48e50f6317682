#include "server/compile/warmup_seal.h"

#include <ctime>

namespace kjit {

std::optional<AfterWarmup> parse_after_warmup(std::string_view text) {
  if (text == "off") return AfterWarmup::off;
  if (text == "count") return AfterWarmup::count;
  if (text == "warn") return AfterWarmup::warn;
  if (text == "refuse") return AfterWarmup::refuse;
  return std::nullopt;
}

std::string_view to_string(AfterWarmup mode) {
  switch (mode) {
    case AfterWarmup::off:
      return "off";
    case AfterWarmup::count:
      return "count";
    case AfterWarmup::warn:
      return "warn";
    case AfterWarmup::refuse:
      return "refuse";
  }
  return "off";
}

WarmupSeal::WarmupSeal(AfterWarmup configured)
    : default_mode_(configured == AfterWarmup::off ? AfterWarmup::count : configured) {
  if (configured != AfterWarmup::off) seal(true, {}, configured);
}

void WarmupSeal::seal(bool all_namespaces, std::string ns, AfterWarmup mode) {
  std::lock_guard lock(mutex_);
  SealState state{all_namespaces, all_namespaces ? std::string() : std::move(ns),
                  mode == AfterWarmup::off ? default_mode_ : mode, static_cast<int64_t>(std::time(nullptr))};
  if (state.all_namespaces)
    all_ = std::move(state);
  else
    by_ns_[state.ns] = std::move(state);
  any_.store(true, std::memory_order_release);
}

void WarmupSeal::unseal(bool all_namespaces, std::string_view ns) {
  std::lock_guard lock(mutex_);
  if (all_namespaces) {
    all_.reset();
    by_ns_.clear();
  } else if (auto it = by_ns_.find(ns); it != by_ns_.end()) {
    by_ns_.erase(it);
  }
  any_.store(all_ || !by_ns_.empty(), std::memory_order_release);
}

void WarmupSeal::reconfigure(AfterWarmup configured) {
  std::lock_guard lock(mutex_);
  default_mode_ = configured == AfterWarmup::off ? AfterWarmup::count : configured;
  if (configured == AfterWarmup::off)
    all_.reset();
  else
    all_ = SealState{true, {}, configured, static_cast<int64_t>(std::time(nullptr))};
  any_.store(all_ || !by_ns_.empty(), std::memory_order_release);
}

std::vector<SealState> WarmupSeal::seals() const {
  std::lock_guard lock(mutex_);
  std::vector<SealState> out;
  if (all_) out.push_back(*all_);
  for (const auto& [ns, state] : by_ns_) out.push_back(state);
  return out;
}

std::optional<SealState> WarmupSeal::sealed(std::string_view ns) const {
  if (!any_.load(std::memory_order_acquire)) return std::nullopt;
  std::lock_guard lock(mutex_);
  if (auto it = by_ns_.find(ns); it != by_ns_.end()) return it->second;
  return all_;
}

void WarmupSeal::count_miss(std::string_view tenant) {
  std::lock_guard lock(mutex_);
  auto it = misses_.find(tenant);
  if (it == misses_.end()) it = misses_.emplace(std::string(tenant), 0).first;
  ++it->second;
}

std::map<std::string, uint64_t> WarmupSeal::misses_by_tenant() const {
  std::lock_guard lock(mutex_);
  return {misses_.begin(), misses_.end()};
}

}  // namespace kjit

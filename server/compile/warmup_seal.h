// Sealing: the operator declares warm-up over (kjit warm --seal, or
// after_warmup in the configuration), for the whole daemon or one
// namespace. After that every miss, a compile that no tier could answer,
// is counted per tenant (kjit_compiles_after_warmup_total) and logged with
// the recipe that missed; with "refuse" it is answered FAILED_PRECONDITION
// naming the seal. Hits are served as ever: the seal is looked at only on
// the way to a compile.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kjit {

enum class AfterWarmup { off, count, warn, refuse };

std::optional<AfterWarmup> parse_after_warmup(std::string_view text);  // "off", "count", "warn", "refuse"
std::string_view to_string(AfterWarmup mode);

struct SealState {
  bool all_namespaces = false;
  std::string ns;  // when not all_namespaces
  AfterWarmup mode = AfterWarmup::count;
  int64_t sealed_unix = 0;
};

class WarmupSeal {
 public:
  // configured: the configuration's after_warmup; other than off, every
  // namespace is sealed with it from the start, and it is what a seal that
  // names no mode uses (else count).
  explicit WarmupSeal(AfterWarmup configured = AfterWarmup::off);

  // mode off: the default one. A seal replaces the one of the same scope.
  void seal(bool all_namespaces, std::string ns, AfterWarmup mode);
  // all_namespaces: every seal goes; else namespace ns's own.
  void unseal(bool all_namespaces, std::string_view ns);
  // The configuration's after_warmup changed (a reload): it becomes what a
  // seal naming no mode uses, and the seal of every namespace: off lifts
  // that seal, another mode puts it in force. Namespaces' own seals stay.
  // This is how a fleet seals every daemon at once: the configuration they
  // share, then a reload of each.
  void reconfigure(AfterWarmup configured);
  std::vector<SealState> seals() const;

  // The seal a miss in ns meets (its namespace's own first); nullopt when
  // unsealed, which costs one atomic load.
  std::optional<SealState> sealed(std::string_view ns) const;

  void count_miss(std::string_view tenant);
  std::map<std::string, uint64_t> misses_by_tenant() const;

 private:
  AfterWarmup default_mode_;
  mutable std::mutex mutex_;
  std::atomic<bool> any_{false};
  std::optional<SealState> all_;
  std::map<std::string, SealState, std::less<>> by_ns_;
  std::map<std::string, uint64_t, std::less<>> misses_;
};

}  // namespace kjit

// SettingsState: the settings in force on this rank and, on rank 0, the
// proposal the next cycle's control vector carries (a user's
// propose_settings or the online tuner's). Every rank applies the agreed
// settings at the same cycle: the fusion threshold and cycle time at the
// cycle's start (they shape its execution), the cache switch at its end
// (after the cycle's responses touched the cache). Read from any thread
// (current_settings(), the loop), written by the loop and by proposals;
// one lock. Invariant: with no response cache (capacity 0) neither the
// settings in force nor the proposal have the cache on.
#pragma once

#include <mutex>

#include "ringscope/status.h"
#include "ringscope/types.h"

namespace ringscope {

class SettingsState {
 public:
  SettingsState(const Settings& initial, bool cache_available);

  // A proposal checked for range (kInvalidArgument naming the limits).
  Status propose(const Settings& settings);
  Settings in_force() const;
  Settings proposal() const;

  // What applying the agreed settings changed: the settings before and
  // after (the trace records each field that differs).
  struct Change {
    Settings before, after;
    bool cache_turned_off() const { return before.cache_enabled && !after.cache_enabled; }
  };
  // The agreed settings at the cycle's start (fusion threshold, cycle time)
  // or end (the cache switch).
  Change apply(const Settings& agreed, bool at_cycle_end);

  // The invariant above (tests; debug builds assert it at every change).
  bool check_invariants() const;

 private:
  bool invariants_hold() const;  // with mu_ held
  const bool cache_available_;
  mutable std::mutex mu_;
  Settings in_force_;  // guarded by mu_
  Settings proposed_;  // guarded by mu_
};

}  // namespace ringscope

// For benches that time whole ringscope ops through a Runtime: submit one
// and wait for its callback.
#pragma once

#include <future>

#include "runtime.h"

namespace ringscope::bench {

inline Status submit_and_wait(Runtime& rt, TensorEntry entry) {
  std::promise<Status> done;
  auto result = done.get_future();
  entry.done = [&done](const Status& s) { done.set_value(s); };
  Status s = rt.submit(std::move(entry));
  if (!s.ok()) return s;
  return result.get();
}

}  // namespace ringscope::bench

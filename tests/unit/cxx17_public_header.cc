// Compiled as C++17 (TensorFlow's flags): the public runtime header that
// tf_ops includes must stay C++17-clean even where TensorFlow, and so
// tf_ops, is not built. Running it also checks two of its helpers link.
#include "ringscope/ringscope.h"

#include <cstring>

static_assert(__cplusplus == 201703L, "this file must be compiled as C++17");

int main() {
  ringscope::Options options;
  const bool ok = ringscope::dtype_size(ringscope::DataType::kBFloat16) == 2 &&
                  std::strcmp(ringscope::cpu_allreduce_name(options.cpu_allreduce), "auto") == 0;
  return ok ? 0 : 1;
}

// The gradient tensors of ResNet-50 (Keras layout: conv kernels, batch-norm
// gamma/beta, the final dense layer): 161 tensors from 256 B to 9 MiB,
// 25.6 M parameters. Used by the synthetic example and the benchmarks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringscope::examples {

struct GradientSpec {
  std::string name;
  std::vector<int64_t> shape;
};

// In forward order; backprop produces them in reverse.
inline std::vector<GradientSpec> resnet50_gradients() {
  std::vector<GradientSpec> g;
  auto conv = [&](const std::string& n, int64_t k, int64_t in, int64_t out) {
    g.push_back({n + "/kernel", {k, k, in, out}});
    g.push_back({n + "_bn/gamma", {out}});
    g.push_back({n + "_bn/beta", {out}});
  };
  conv("conv1", 7, 3, 64);
  const int blocks[4] = {3, 4, 6, 3};
  int64_t in = 64;
  for (int stage = 0; stage < 4; ++stage) {
    const int64_t width = int64_t{64} << stage, out = width * 4;
    for (int b = 0; b < blocks[stage]; ++b) {
      const std::string p = "conv" + std::to_string(stage + 2) + "_block" + std::to_string(b + 1);
      if (b == 0) conv(p + "_0", 1, in, out);  // projection shortcut
      conv(p + "_1", 1, b == 0 ? in : out, width);
      conv(p + "_2", 3, width, width);
      conv(p + "_3", 1, width, out);
    }
    in = out;
  }
  g.push_back({"predictions/kernel", {2048, 1000}});
  g.push_back({"predictions/bias", {1000}});
  return g;
}

}  // namespace ringscope::examples

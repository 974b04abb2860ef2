// DeviceAdmission alone, with a faked GPU probe: no GPU is refused with the
// reason, a device not visible or a second device on one rank is refused,
// the local rank's ordinal means the one device of per-rank
// CUDA_VISIBLE_DEVICES, the probe runs once, and finished device bytes are
// counted once.
#include <catch2/catch.hpp>

#include "device_admission.h"

using namespace ringscope;

namespace {
Request on_device(const std::string& name, int device) {
  Request r;
  r.name = name;
  r.device = device;
  return r;
}
GpuInfo devices_visible(int count) {
  GpuInfo info;
  info.built_with_cuda = true;
  info.device_count = count;
  return info;
}
}  // namespace

TEST_CASE("device admission: one visible device per rank", "[runtime][parts][gpu]") {
  int probes = 0;
  DeviceAdmission devices(3, 1, "", [&] {
    ++probes;
    return devices_visible(2);
  });
  CHECK(devices.device_in_use() == -1);
  Request a = on_device("a", 1);
  CHECK(devices.admit(&a).ok());
  CHECK(a.device == 1);
  CHECK(devices.device_in_use() == 1);
  Request b = on_device("b", 1);
  CHECK(devices.admit(&b).ok());
  Request c = on_device("c", 0);
  Status second = devices.admit(&c);
  CHECK(second.code() == StatusCode::kInvalidArgument);
  CHECK(second.message().find("already uses cuda:1") != std::string::npos);
  Request d = on_device("d", 2);
  Status hidden = devices.admit(&d);
  CHECK(hidden.message().find("only 2 CUDA device(s) are visible") != std::string::npos);
  CHECK(probes == 1);
  devices.count_done(100);
  devices.count_done(28);
  CHECK(devices.take_done() == 128);
  CHECK(devices.take_done() == 0);
}

TEST_CASE("device admission: without a usable GPU the reason is given", "[runtime][parts][gpu]") {
  DeviceAdmission devices(0, 0, "", [] {
    GpuInfo info;
    info.problem = "built without CUDA";
    return info;
  });
  Request grad = on_device("grad", 0);
  Status s = devices.admit(&grad);
  CHECK(s.code() == StatusCode::kUnimplemented);
  CHECK(s.message().find("built without CUDA") != std::string::npos);
  CHECK(s.message().find("grad") != std::string::npos);
}

TEST_CASE("device admission: the local rank means the one device of per-rank visibility",
          "[runtime][parts][gpu]") {
  // Local rank 2 of a node whose launcher gave each rank its own GPU.
  DeviceAdmission devices(6, 2, "2", [] { return devices_visible(1); });
  Request grad = on_device("grad", 2);
  REQUIRE(devices.admit(&grad).ok());
  CHECK(grad.device == 0);
  CHECK(devices.device_in_use() == 0);
  Request zero = on_device("w", 0);  // the same device, by CUDA's number
  CHECK(devices.admit(&zero).ok());
  // Another ordinal is not this rank's device: refused, naming the setting.
  Request other = on_device("x", 3);
  Status s = devices.admit(&other);
  CHECK(s.code() == StatusCode::kInvalidArgument);
  CHECK(s.message().find("only 1 CUDA device(s) are visible (CUDA_VISIBLE_DEVICES=2)") !=
        std::string::npos);
}

TEST_CASE("device admission: one visible device without per-rank visibility is not remapped",
          "[runtime][parts][gpu]") {
  // One GPU for the whole machine (no CUDA_VISIBLE_DEVICES, or a list):
  // local rank 1 asking for cuda:1 would share cuda:0 with rank 0.
  for (const char* visible : {"", "0,1"}) {
    DeviceAdmission devices(1, 1, visible, [] { return devices_visible(1); });
    Request grad = on_device("grad", 1);
    CHECK(devices.admit(&grad).code() == StatusCode::kInvalidArgument);
    CHECK(grad.device == 1);
  }
}

// DeviceAdmission alone, with a faked GPU probe: no GPU is refused with the
// reason, a device not visible or a second device on one rank is refused,
// the probe runs once, and finished device bytes are counted once.
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
}  // namespace

TEST_CASE("device admission: one visible device per rank", "[runtime][parts][gpu]") {
  int probes = 0;
  DeviceAdmission devices(3, [&] {
    ++probes;
    GpuInfo info;
    info.built_with_cuda = true;
    info.device_count = 2;
    return info;
  });
  CHECK(devices.device_in_use() == -1);
  CHECK(devices.admit(on_device("a", 1)).ok());
  CHECK(devices.device_in_use() == 1);
  CHECK(devices.admit(on_device("b", 1)).ok());
  Status second = devices.admit(on_device("c", 0));
  CHECK(second.code() == StatusCode::kInvalidArgument);
  CHECK(second.message().find("already uses cuda:1") != std::string::npos);
  Status hidden = devices.admit(on_device("d", 2));
  CHECK(hidden.message().find("only 2 CUDA device(s) are visible") != std::string::npos);
  CHECK(probes == 1);
  devices.count_done(100);
  devices.count_done(28);
  CHECK(devices.take_done() == 128);
  CHECK(devices.take_done() == 0);
}

TEST_CASE("device admission: without a usable GPU the reason is given", "[runtime][parts][gpu]") {
  DeviceAdmission devices(0, [] {
    GpuInfo info;
    info.problem = "built without CUDA";
    return info;
  });
  Status s = devices.admit(on_device("grad", 0));
  CHECK(s.code() == StatusCode::kUnimplemented);
  CHECK(s.message().find("built without CUDA") != std::string::npos);
  CHECK(s.message().find("grad") != std::string::npos);
}

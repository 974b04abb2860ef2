// The environment variable of a ctest variant ("mpi: runtime np=3, ring
// only (RINGSCOPE_CPU_ALLREDUCE=ring)") took effect: CMake passes the same
// setting again as RINGSCOPE_TEST_VARIANT, and this checks it against the
// runtime, so a variable renamed in config.cc cannot leave the variant
// quietly re-testing the defaults.
#include <mpi.h>

#include <catch2/catch.hpp>
#include <cstdlib>
#include <string>

#include "mpi_test_options.h"
#include "mpi_transport.h"
#include "runtime.h"

using namespace ringscope;
using namespace ringscope::testing;

TEST_CASE("the ctest variant's setting took effect", "[mpi][variant]") {
  const char* variant = std::getenv("RINGSCOPE_TEST_VARIANT");
  const Options o = test_options();
  std::unique_ptr<MpiTransport> t;
  REQUIRE(MpiTransport::create(MPI_COMM_WORLD, &t).ok());
  const Topology topo = t->topology();
  std::unique_ptr<Runtime> rt;
  REQUIRE(Runtime::create(std::move(t), topo, o, &rt).ok());
  const std::string v = variant ? variant : "";
  INFO("RINGSCOPE_TEST_VARIANT=" << v);
  if (v.empty()) {  // the defaults
    CHECK(o.cpu_allreduce == CpuAllreduce::kAuto);
    CHECK(o.shared_memory);
  } else if (v == "RINGSCOPE_SHARED_MEMORY=0") {
    CHECK_FALSE(o.shared_memory);
    CHECK_FALSE(rt->negotiates_in_shared_memory());
  } else if (v == "RINGSCOPE_CPU_ALLREDUCE=ring") {
    CHECK(o.cpu_allreduce == CpuAllreduce::kRing);
  } else if (v == "RINGSCOPE_CPU_ALLREDUCE=mpi") {
    CHECK(o.cpu_allreduce == CpuAllreduce::kMpi);
  } else if (v == "RINGSCOPE_DATA_THREADS=3") {
    CHECK(rt->data_threads() == 3);
  } else {
    FAIL("no check for this variant: add one to test_mpi_variant.cc");
  }
  rt->shutdown();
}

// grouped_allreduce_async through the public API on one rank: every member
// reduced (in place or not), `done` once with the group's first error, and a
// group refused at submit whole (nothing of it queued, `done` not called).
#include <catch2/catch.hpp>

#include <atomic>
#include <future>
#include <vector>

#include "api_internal.h"  // init_single_rank
#include "ringscope/ringscope.h"

using namespace ringscope;

TEST_CASE("grouped allreduce: one completion for the group, refused whole", "[api][grouped]") {
  Options o;
  o.log_level = 0;
  REQUIRE(init_single_rank(o).ok());
  std::vector<std::vector<float>> in(5, std::vector<float>(7, 2.0f)), out(5, std::vector<float>(7));
  std::vector<AllreduceItem> items;
  for (int i = 0; i < 5; ++i)
    items.push_back({"group/" + std::to_string(i), {7}, in[i].data(),
                     i == 0 ? static_cast<void*>(in[i].data()) : out[i].data()});  // 0: in place
  std::atomic<int> calls{0};
  std::promise<Status> finished;
  Status s = grouped_allreduce_async(
      items, DataType::kFloat32, ReduceOp::kSum,
      [&](const Status& st) {
        ++calls;
        finished.set_value(st);
      },
      /*prescale=*/3.0);
  REQUIRE(s.ok());
  REQUIRE(finished.get_future().get().ok());
  CHECK(calls == 1);
  CHECK(in[0][6] == 6.0f);
  for (int i = 1; i < 5; ++i) CHECK(out[i][0] == 6.0f);

  // A member with no buffer: the whole group is refused, done never runs,
  // and the others' names are free afterwards.
  items[3].input = nullptr;
  bool ran = false;
  s = grouped_allreduce_async(items, DataType::kFloat32, ReduceOp::kSum,
                              [&](const Status&) { ran = true; });
  CHECK(s.code() == StatusCode::kInvalidArgument);
  items[3].input = in[3].data();
  std::promise<Status> again;
  REQUIRE(grouped_allreduce_async(items, DataType::kFloat32, ReduceOp::kSum,
                                  [&](const Status& st) { again.set_value(st); })
              .ok());
  CHECK(again.get_future().get().ok());
  CHECK_FALSE(ran);
  // An empty group completes at once.
  bool empty_done = false;
  CHECK(grouped_allreduce_async({}, DataType::kFloat32, ReduceOp::kSum,
                                [&](const Status& st) { empty_done = st.ok(); })
            .ok());
  CHECK(empty_done);
  shutdown();
}

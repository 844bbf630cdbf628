#include "atl/core/log_stream.hpp"

#include <gtest/gtest.h>

#include <set>
#include <vector>

#include "atl/core/job_spec.hpp"

using atl::StreamId;
using atl::StreamKind;

TEST(LogStream, EachKindHasItsNameAndPrefix) {
  const std::vector<std::tuple<StreamId, std::string, std::string>> cases = {
      {StreamId::of_rank(3), "rank-3", "[rank 3] "},
      {StreamId::driver(), "driver", "[driver] "},
      {StreamId::ray_head(), "ray-head", "[ray-head] "},
      {StreamId::of_run(2, 3), "run-2-rank-3", "[rank 3] "},
      {StreamId::of_task(7), "task-7", "[task 7] "},
      {StreamId::head_log(), "head", "[head] "},
      {StreamId::pod_log(1), "pod-worker-1", "[pod worker-1] "},
  };
  for (const auto& [id, name, prefix] : cases) {
    EXPECT_EQ(atl::stream_name(id), name);
    EXPECT_EQ(atl::stream_prefix(id), prefix);
    EXPECT_EQ(atl::parse_stream_name(name), id) << name;
  }
}

TEST(LogStream, UserCodeKeysMapBothWays) {
  for (std::int32_t key : {0, 5, atl::kDriverStream, atl::kRayHeadStream}) {
    auto id = atl::user_code_stream(key);
    EXPECT_TRUE(id.is_user_code());
    EXPECT_EQ(atl::user_code_key(id), key);
  }
  EXPECT_EQ(atl::user_code_stream(atl::kDriverStream), StreamId::driver());
  EXPECT_EQ(atl::user_code_stream(atl::kRayHeadStream), StreamId::ray_head());
  for (auto other :
       {StreamId::of_run(1, 0), StreamId::of_task(1), StreamId::head_log(), StreamId::pod_log(0)}) {
    EXPECT_FALSE(other.is_user_code()) << atl::stream_name(other);
    EXPECT_FALSE(atl::user_code_key(other).has_value()) << atl::stream_name(other);
  }
  EXPECT_TRUE(StreamId::head_log().is_agent_log());
  EXPECT_TRUE(StreamId::pod_log(3).is_agent_log());
  EXPECT_FALSE(StreamId::of_rank(3).is_agent_log());
}

// The packed int32 of before: rank 70,000 of run 1 was stream -2-(65536+70000),
// the same as rank 4,464 of run 2; run 32,768 overflowed. Typed ids cannot.
TEST(LogStream, NoWorldSizeOrRunCountMakesTwoStreamsCollide) {
  std::set<StreamId> seen;
  std::set<std::string> names;
  for (std::int32_t run : {1, 2, 32767, 32768, 2147483647}) {
    for (std::int32_t rank : {0, 4464, 65535, 65536, 70000, 1048575}) {
      auto id = StreamId::of_run(run, rank);
      EXPECT_TRUE(seen.insert(id).second) << run << " " << rank;
      EXPECT_TRUE(names.insert(atl::stream_name(id)).second) << atl::stream_name(id);
      EXPECT_EQ(atl::parse_stream_name(atl::stream_name(id)), id);
      EXPECT_EQ(id.kind, StreamKind::run);  // never taken for a task or a rank
    }
  }
  EXPECT_EQ(atl::stream_name(StreamId::of_run(1, 70000)), "run-1-rank-70000");
  EXPECT_EQ(atl::stream_name(StreamId::of_run(32768, 0)), "run-32768-rank-0");
  for (std::int32_t n : {0, 65536, 70000, 1073741824})
    EXPECT_TRUE(seen.insert(StreamId::of_rank(n)).second) << n;
  for (std::int32_t n : {1, 65536, 70000, 1073741824})
    EXPECT_TRUE(seen.insert(StreamId::of_task(n)).second) << n;
}

TEST(LogStream, ARunsStreamsBelongToItAlone) {
  EXPECT_TRUE(StreamId::of_run(2, 5).in_run_of(StreamId::of_run(2, 0)));
  EXPECT_FALSE(StreamId::of_run(3, 5).in_run_of(StreamId::of_run(2, 5)));
  EXPECT_FALSE(StreamId::of_task(2).in_run_of(StreamId::of_run(2, 0)));
  EXPECT_TRUE(StreamId::of_task(2).in_run_of(StreamId::of_task(2)));
  EXPECT_FALSE(StreamId::of_rank(2).in_run_of(StreamId::of_rank(2)));  // user code: no run
}

TEST(LogStreamRejects, NamesOfNoStream) {
  for (const char* bad : {"",
                          "rank",
                          "rank-",
                          "rank--1",
                          "rank-01",
                          "rank-3x",
                          "rank-3 ",
                          " rank-3",
                          "rank-2147483648",
                          "task-0",
                          "task-",
                          "run-0-rank-1",
                          "run-1",
                          "run-1-rank-",
                          "run-1-rank-1-",
                          "run-x-rank-1",
                          "pod-worker-",
                          "pod-worker-a",
                          "Driver",
                          "head ",
                          "stream-9",
                          "rank-99999999999999999999"})
    EXPECT_FALSE(atl::parse_stream_name(bad).has_value()) << bad;
  EXPECT_EQ(atl::parse_stream_name("rank-0"), StreamId::of_rank(0));
  EXPECT_EQ(atl::parse_stream_name("rank-2147483647"), StreamId::of_rank(2147483647));
}

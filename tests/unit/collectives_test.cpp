// The flight recorder's dumps, read and compared: on records taken from a
// real torch 2.9.1 over gloo by atl's own hook (tests/unit/data/flight_recorder,
// made by record.py there), 3 ranks stuck each a different way.
#include "atl/core/collectives.hpp"

#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "test_data.hpp"

namespace atl {
namespace {

std::string recorded(const std::string& name) { return test_data("flight_recorder/" + name); }

std::map<std::int32_t, RankCollectives> scenario(const std::string& name) {
  std::map<std::int32_t, RankCollectives> out;
  for (int rank = 0; rank < 3; ++rank) {
    auto r = parse_flight_record(recorded(name + "-rank" + std::to_string(rank) + ".json"));
    EXPECT_TRUE(r) << r.error();
    if (r) out[rank] = *r;
  }
  return out;
}

const std::vector<std::int32_t> kAll{0, 1, 2};

TEST(Collectives, AHookRecordIsCondensedToEachGroupsLastCollective) {
  auto r = parse_flight_record(recorded("skipped-rank0.json"));
  ASSERT_TRUE(r) << r.error();
  EXPECT_EQ(r->torch, "2.9.1+cu128");
  ASSERT_EQ(r->groups.size(), 2u);
  EXPECT_EQ(r->groups[0].id, "0");
  EXPECT_EQ(r->groups[0].name, "default_pg");
  EXPECT_EQ(r->groups[0].enqueued, 11);
  EXPECT_EQ(r->groups[0].completed, 10);
  EXPECT_EQ(r->groups[0].op, "all_reduce");
  EXPECT_EQ(r->groups[1].id, "1");
  EXPECT_EQ(r->groups[1].enqueued, 5);
  EXPECT_EQ(r->groups[1].completed, 5);
  EXPECT_EQ(r->groups[1].op, "all_reduce");
  // The head gets the condensed form and reads it back the same.
  auto back = parse_collectives(to_json(*r));
  ASSERT_TRUE(back) << back.error();
  EXPECT_EQ(*back, *r);
}

TEST(Collectives, ABareTorchDumpIsReadToo) {
  // What `_dump_fr_trace_json()` returns, without the hook's wrapper.
  const auto hook = nlohmann::json::parse(recorded("skipped-rank2.json"));
  ASSERT_EQ(hook["dumps"][0]["source"], "_dump_fr_trace_json");
  auto r = parse_flight_record(hook["dumps"][0]["trace"].dump());
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->groups.size(), 1u);
  EXPECT_EQ(r->groups[0].enqueued, 10);
  EXPECT_EQ(r->groups[0].op, "broadcast");
}

TEST(Collectives, WithoutPgStatusTheEntriesSayWhereEachGroupIs) {
  // torch 2.2-2.3's NCCL dumps: entries only, with "completed" states.
  const std::string dump = R"({"version": "2.1", "entries": [
    {"process_group": ["0", "default_pg"], "collective_seq_id": 7, "is_p2p": false,
     "profiling_name": "nccl:all_reduce", "state": "completed"},
    {"process_group": ["0", "default_pg"], "collective_seq_id": 8, "is_p2p": false,
     "profiling_name": "nccl:all_gather", "state": "started"},
    {"process_group": ["0", "default_pg"], "collective_seq_id": 0, "p2p_seq_id": 3, "is_p2p": true,
     "profiling_name": "nccl:send 0->1", "state": "started"}]})";
  auto r = parse_flight_record(dump);
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->groups.size(), 1u);
  EXPECT_EQ(r->groups[0].enqueued, 8);
  EXPECT_EQ(r->groups[0].completed, 7);
  EXPECT_EQ(r->groups[0].op, "all_gather");
}

TEST(Collectives, WhatIsNotARecordSaysWhy) {
  EXPECT_EQ(parse_flight_record("garbage").error(), "not a flight record (not JSON)");
  EXPECT_EQ(parse_flight_record(R"({"pid": 1, "torch": null, "dumps": [], "errors": []})").error(),
            "no torch in the process");
  EXPECT_EQ(
      parse_flight_record(R"({"pid": 1, "torch": "1.13.1", "dumps": [], "errors": []})").error(),
      "torch 1.13.1 has no flight recorder (2.5 or later has)");
  EXPECT_EQ(parse_flight_record(R"({"torch": "2.9.1", "dumps": [{"source": "x",
              "trace": {"version": "2.10", "pg_status": {}, "entries": []}}]})")
                .error(),
            "the flight recorder saw no collective (off: TORCH_FR_BUFFER_SIZE=0, or none yet)");
  EXPECT_FALSE(parse_collectives("[]"));
  EXPECT_FALSE(parse_collectives(R"({"groups": [1]})"));
}

TEST(Collectives, ARankThatSkippedACollectiveIsTheOneTheOthersWaitOn) {
  auto d = diagnose_collectives(scenario("skipped"), kAll);
  EXPECT_EQ(d.culprits, std::vector<std::int32_t>{2});
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0],
            "ranks 0,1 wait in all_reduce #11 on the default group; rank 2 never entered it");
  EXPECT_EQ(collective_reason(d, {{2, "rank 2 in sleep (rank.py)"}}),
            "ranks 0,1 wait in all_reduce #11 on the default group; rank 2 never entered it; "
            "rank 2 in sleep (rank.py)");
}

TEST(Collectives, ADdpRankThatNeverReachedBackwardIsNamed) {
  auto d = diagnose_collectives(scenario("ddp"), kAll);
  EXPECT_EQ(d.culprits, std::vector<std::int32_t>{2});
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0],
            "ranks 0,1 wait in all_reduce #9 on the default group; rank 2 never entered it");
}

TEST(Collectives, ARankInAnotherCollectiveAtTheSameNumberIsOutOfStep) {
  auto d = diagnose_collectives(scenario("desync"), kAll);
  EXPECT_EQ(d.culprits, std::vector<std::int32_t>{1});
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0],
            "rank 1 entered broadcast #11 on the default group where ranks 0,2 entered all_reduce");
}

TEST(Collectives, TwoRanksWaitingOnEachOtherAcrossGroupsAreBothNamed) {
  // rank 0 waits in the subgroup's all_reduce #6, which rank 1 never
  // entered: rank 1 waits in the default group's #11, which rank 0 never
  // entered.
  auto d = diagnose_collectives(scenario("crossed"), kAll);
  EXPECT_EQ(d.culprits, (std::vector<std::int32_t>{0, 1}));
  ASSERT_EQ(d.findings.size(), 2u);
  EXPECT_EQ(d.findings[0],
            "ranks 1,2 wait in all_reduce #11 on the default group; rank 0 never entered it "
            "(rank 0 waits in all_reduce #6 on group 1 (ranks 0,1))");
  EXPECT_EQ(d.findings[1],
            "rank 0 waits in all_reduce #6 on group 1 (ranks 0,1); rank 1 never entered it "
            "(rank 1 waits in all_reduce #11 on the default group)");
}

TEST(Collectives, ARankWithoutARecordIsSaidAndNotBlamedByTheRecords) {
  // rank 2 stopped (SIGSTOP): it cannot answer; the others all wait in #11.
  auto records = scenario("skipped");
  records.erase(2);
  auto d = diagnose_collectives(records, kAll);
  EXPECT_TRUE(d.culprits.empty());
  EXPECT_EQ(d.without_record, std::vector<std::int32_t>{2});
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0], "ranks 0,1 wait in all_reduce #11 on the default group");
  EXPECT_EQ(collective_reason(d, {}),
            "ranks 0,1 wait in all_reduce #11 on the default group; rank 2 gave no flight record");
}

TEST(Collectives, AHealthyJobBetweenCollectivesHasNoFinding) {
  std::map<std::int32_t, RankCollectives> records;
  for (int rank = 0; rank < 3; ++rank)
    records[rank] = {"2.9.1", {{"0", "default_pg", 40, 40, "all_reduce"}}};
  auto d = diagnose_collectives(records, kAll);
  EXPECT_TRUE(d.culprits.empty());
  EXPECT_TRUE(d.findings.empty());
  // One rank a collective ahead, its peers not yet there: they are behind
  // but not waiting on it, it waits on them; nobody else in flight.
  records[0].groups[0] = {"0", "default_pg", 41, 40, "all_reduce"};
  d = diagnose_collectives(records, kAll);
  EXPECT_EQ(d.culprits, (std::vector<std::int32_t>{1, 2}));
  EXPECT_EQ(d.findings[0],
            "rank 0 waits in all_reduce #41 on the default group; ranks 1,2 never entered it");
}

TEST(Collectives, ATieOfOpsAtOneNumberBlamesNobodyByOp) {
  std::map<std::int32_t, RankCollectives> records;
  records[0] = {"2.9.1", {{"0", "default_pg", 5, 4, "all_reduce"}}};
  records[1] = {"2.9.1", {{"0", "default_pg", 5, 4, "broadcast"}}};
  auto d = diagnose_collectives(records, {0, 1});
  EXPECT_TRUE(d.culprits.empty());
  ASSERT_EQ(d.findings.size(), 1u);
  EXPECT_EQ(d.findings[0],
            "the default group is out of step at #5: rank 0 in all_reduce, rank 1 in broadcast");
}

}  // namespace
}  // namespace atl

namespace atl {
namespace {

TEST(Collectives, TheRecordsNameTheCulpritWhereTheStacksCannot) {
  // Ranks 0,1 wait in all_reduce, rank 2 waits on its DataLoader: the stacks
  // name rank 2's worker; the records say what the others wait in.
  std::vector<RankStack> ranks{
      {0, "w0", "all_reduce (c10d.py) < step (t.py)", "all_reduce (c10d.py)", 'S', ""},
      {1, "w1", "all_reduce (c10d.py) < step (t.py)", "all_reduce (c10d.py)", 'S', ""},
      {2, "w2", "_recv (connection.py) < __next__ (dataloader.py)", "_recv (connection.py)", 'S',
       "rank 2's DataLoader worker 0 in __getitem__ (t.py)"}};
  auto stacks = group_stacks(ranks);
  auto d = with_collectives(stacks, ranks, diagnose_collectives(scenario("skipped"), kAll));
  EXPECT_EQ(d.outliers, std::vector<std::int32_t>{2});
  EXPECT_EQ(d.why,
            "ranks 0,1 wait in all_reduce #11 on the default group; rank 2 never entered it; "
            "rank 2's DataLoader worker 0 in __getitem__ (t.py)");
  EXPECT_EQ(d.groups.size(), stacks.groups.size());  // the stacks' groups are kept

  // Every rank in the same stack, one out of step: only the records tell.
  for (auto& r : ranks) r = {r.rank, r.pod, ranks[0].signature, ranks[0].top, 'S', ""};
  stacks = group_stacks(ranks);
  EXPECT_TRUE(stacks.outliers.empty());
  d = with_collectives(stacks, ranks, diagnose_collectives(scenario("desync"), kAll));
  EXPECT_EQ(d.outliers, std::vector<std::int32_t>{1});
  EXPECT_EQ(d.why,
            "rank 1 entered broadcast #11 on the default group where ranks 0,2 entered "
            "all_reduce; rank 1 in all_reduce (c10d.py)");
}

TEST(Collectives, WithoutCulpritsInTheRecordsTheStacksStandAndSayWhatTheRecordsSaw) {
  // rank 2 stopped: no record from it; the others all wait in #11.
  std::vector<RankStack> ranks{{0, "w0", "a < b", "a", 'S', ""},
                               {1, "w1", "a < b", "a", 'S', ""},
                               {2, "w2", "sleep < main", "sleep", 'T', ""}};
  auto records = scenario("skipped");
  records.erase(2);
  auto d = with_collectives(group_stacks(ranks), ranks, diagnose_collectives(records, kAll));
  EXPECT_EQ(d.outliers, std::vector<std::int32_t>{2});
  EXPECT_EQ(d.why,
            "rank 2 in sleep; rank 2 stopped (T) while 2 ranks are in a; ranks 0,1 wait in "
            "all_reduce #11 on the default group; rank 2 gave no flight record");
  // No record at all (torch without one, or turned off): the stacks alone,
  // without a word of what nobody has.
  auto alone = with_collectives(group_stacks(ranks), ranks, diagnose_collectives({}, kAll));
  EXPECT_EQ(alone.why, "rank 2 in sleep; rank 2 stopped (T) while 2 ranks are in a");
}

}  // namespace
}  // namespace atl

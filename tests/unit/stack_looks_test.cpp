// StackLooks: a look at the stacks is done once every pod asked answered,
// once; what comes late or from elsewhere is nothing.
#include "atl/supervisor/stack_looks.hpp"

#include <gtest/gtest.h>

#include <string>

namespace atl::supervisor {
namespace {

using Looks = StackLooks<int, std::string>;

StackReport rank(int r) {
  StackReport s;
  s.rank = r;
  return s;
}

std::vector<int> ranks_of(const std::vector<StackReport>& reports) {
  std::vector<int> out;
  for (const auto& r : reports) out.push_back(r.rank);
  return out;
}

TEST(StackLooks, ALookIsDoneWhenEveryAgentAskedAnsweredWithAllTheirReports) {
  Looks looks;
  const LookId id = looks.begin("round 1", {10, 11, 12});
  EXPECT_FALSE(looks.answer(id, 11, {rank(2), rank(3)}));
  EXPECT_FALSE(looks.answer(id, 10, {rank(0), rank(1)}));
  auto done = looks.answer(id, 12, {});  // failed or timed out: no stacks
  ASSERT_TRUE(done);
  EXPECT_EQ(done->purpose, "round 1");
  EXPECT_EQ(ranks_of(done->reports), (std::vector<int>{2, 3, 0, 1}));
  EXPECT_EQ(looks.under_way(), 0u);
}

TEST(StackLooks, ASecondAnswerFromOneAgentCannotEndTheLookEarly) {
  Looks looks;
  const LookId id = looks.begin("diagnose", {1, 2});
  EXPECT_FALSE(looks.answer(id, 1, {rank(0)}));
  EXPECT_FALSE(looks.answer(id, 1, {rank(0)}));  // again: nothing
  EXPECT_FALSE(looks.answer(id, 3, {rank(9)}));  // never asked: nothing
  auto done = looks.answer(id, 2, {rank(1)});
  ASSERT_TRUE(done);
  EXPECT_EQ(ranks_of(done->reports), (std::vector<int>{0, 1}));
}

TEST(StackLooks, AnAnswerToALookDoneOrNeverBegunIsNothing) {
  Looks looks;
  const LookId id = looks.begin("a", {1});
  ASSERT_TRUE(looks.answer(id, 1, {}));
  EXPECT_FALSE(looks.answer(id, 1, {rank(0)}));  // late
  EXPECT_FALSE(looks.answer(id + 7, 1, {}));     // unknown
}

TEST(StackLooks, LooksAreApartAndTheirIdsNeverReused) {
  Looks looks;
  const LookId a = looks.begin("hang", {1, 2});
  const LookId b = looks.begin("diagnose", {2});
  EXPECT_NE(a, b);
  auto done_b = looks.answer(b, 2, {rank(5)});
  ASSERT_TRUE(done_b);
  EXPECT_EQ(done_b->purpose, "diagnose");
  EXPECT_EQ(looks.under_way(), 1u);
  EXPECT_FALSE(looks.answer(a, 2, {}));
  ASSERT_TRUE(looks.answer(a, 1, {}));
  EXPECT_GT(looks.begin("next", {1}), b);
}

TEST(StackLooks, TakeAllHandsBackWhatStillWaits) {
  Looks looks;
  looks.begin("x", {1});
  const LookId y = looks.begin("y", {2});
  ASSERT_TRUE(looks.answer(y, 2, {}));
  looks.begin("z", {3});
  EXPECT_EQ(looks.take_all(), (std::vector<std::string>{"x", "z"}));
  EXPECT_EQ(looks.under_way(), 0u);
}

}  // namespace
}  // namespace atl::supervisor

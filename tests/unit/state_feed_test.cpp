#include "atl/supervisor/state_feed.hpp"

#include <gtest/gtest.h>

#include <string>

using atl::Millis;
using atl::supervisor::Answer;
using atl::supervisor::ArmWaitTimer;
using atl::supervisor::FeedEffects;
using atl::supervisor::StateFeed;

namespace {

// The answers in `out`, as "reply: text".
std::vector<std::string> answers(const FeedEffects& out) {
  std::vector<std::string> said;
  for (const auto& e : out)
    if (const auto* a = std::get_if<Answer>(&e))
      said.push_back(std::to_string(a->reply) + ": " + a->text);
  return said;
}

std::vector<ArmWaitTimer> timers(const FeedEffects& out) {
  std::vector<ArmWaitTimer> armed;
  for (const auto& e : out)
    if (const auto* t = std::get_if<ArmWaitTimer>(&e)) armed.push_back(*t);
  return armed;
}

}  // namespace

TEST(StateFeed, AFirstWatchHearsTheStateNowAndThenWaitsForTheNextChange) {
  StateFeed feed("initializing");
  FeedEffects out;
  feed.changed("command", out);
  EXPECT_TRUE(out.empty());                 // nobody waits
  auto first = feed.answer_now(0, 10'000);  // kubectl get -w: the state now, not its past
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->text, "2 command");
  EXPECT_FALSE(feed.answer_now(2, 10'000).has_value());  // up to date: it waits
}

TEST(StateFeed, AHeldWatchHearsAChangeThatLastedNoTimeAtAll) {
  // A restart that leaves `command` and comes back within one poll's period:
  // the watch still hears both changes, in order.
  StateFeed feed("command");
  FeedEffects out;
  feed.await(1, 7, Millis(10'000), out);
  ASSERT_EQ(timers(out).size(), 1u);
  EXPECT_EQ(timers(out)[0].after, Millis(10'000));
  out.clear();
  feed.changed("restarting", out);
  EXPECT_EQ(answers(out), std::vector<std::string>{"7: 2 restarting"});
  EXPECT_EQ(feed.held(), 0u);
  out.clear();
  feed.changed("command", out);  // before the watch asked again
  EXPECT_TRUE(out.empty());
  auto next = feed.answer_now(2, 10'000);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->text, "3 command");
}

TEST(StateFeed, EveryHeldWatchHearsWhatItHasNotSeen) {
  StateFeed feed("command");
  FeedEffects out;
  feed.await(1, 1, Millis(5'000), out);
  feed.await(1, 2, Millis(5'000), out);
  out.clear();
  feed.changed("debugStop", out);
  EXPECT_EQ(answers(out), (std::vector<std::string>{"1: 2 debugStop", "2: 2 debugStop"}));
}

TEST(StateFeed, ADeadlineAnswersWithNothingNewOnceAndALateTimerFindsNothing) {
  StateFeed feed("command");
  FeedEffects out;
  feed.await(1, 4, Millis(10'000), out);
  const auto waiter = timers(out).at(0).waiter;
  out.clear();
  feed.on_wait_timer(waiter, out);
  EXPECT_EQ(answers(out), std::vector<std::string>{"4: 1"});  // the newest change, no states
  out.clear();
  feed.on_wait_timer(waiter, out);
  EXPECT_TRUE(out.empty());
  feed.changed("failed", out);
  EXPECT_TRUE(out.empty());  // answered already: not twice
}

TEST(StateFeed, ALongWaitIsCutToTheMaximumAndNoWaitAnswersNow) {
  StateFeed feed("command");
  FeedEffects out;
  feed.await(1, 1, std::chrono::hours(1), out);
  EXPECT_EQ(timers(out).at(0).after, StateFeed::kMaxWait);
  auto now = feed.answer_now(1, 0);
  ASSERT_TRUE(now.has_value());
  EXPECT_EQ(now->text, "1");
  EXPECT_TRUE(feed.answer_now(1, -5).has_value());
}

TEST(StateFeed, AWatchFromAnotherHeadsCountHearsTheStateNow) {
  StateFeed feed("initializing");
  FeedEffects out;
  feed.changed("command", out);
  auto from_future = feed.answer_now(40, 10'000);
  ASSERT_TRUE(from_future.has_value());
  EXPECT_EQ(from_future->text, "2 command");
}

TEST(StateFeed, AWatchFarBehindHearsTheKeptChangesAndHowManyItMissed) {
  StateFeed feed("command");
  FeedEffects out;
  for (std::size_t i = 0; i < StateFeed::kKept + 9; ++i)
    feed.changed(i % 2 ? "command" : "restarting", out);
  EXPECT_EQ(feed.newest(), StateFeed::kKept + 10);
  auto behind = feed.answer_now(1, 10'000);
  ASSERT_TRUE(behind.has_value());
  // Changes 2..10 dropped (9 of them), 11..kKept+10 kept.
  EXPECT_EQ(behind->text.rfind(std::to_string(StateFeed::kKept + 10) + " missed 9 ", 0), 0u)
      << behind->text;
  std::size_t states = 0;
  for (char c : behind->text) states += c == ' ';
  EXPECT_EQ(states, 2 + StateFeed::kKept);  // "missed N" and one per kept change
  auto near = feed.answer_now(StateFeed::kKept + 9, 10'000);
  ASSERT_TRUE(near.has_value());
  EXPECT_EQ(near->text, std::to_string(StateFeed::kKept + 10) + " restarting");
}

TEST(StateFeed, AbandonAnswersEveryHeldWatchWithTheFeedAsItIs) {
  StateFeed feed("command");
  FeedEffects out;
  feed.await(1, 3, Millis(10'000), out);
  out.clear();
  feed.abandon(out);
  EXPECT_EQ(answers(out), std::vector<std::string>{"3: 1"});
  EXPECT_EQ(feed.held(), 0u);
}

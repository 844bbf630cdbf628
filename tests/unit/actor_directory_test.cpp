#include "atl/supervisor/actor_directory.hpp"

#include <gtest/gtest.h>

#include <string>
#include <variant>
#include <vector>

using atl::ReplyCode;
using atl::supervisor::CallId;
using atl::supervisor::Refusal;

namespace {

// Hosts are ints, replies the name of who waits.
using Directory = atl::supervisor::ActorDirectory<int, std::string>;

CallId id_of(const std::variant<CallId, Refusal>& v) {
  if (const auto* r = std::get_if<Refusal>(&v)) ADD_FAILURE() << r->text;
  return std::holds_alternative<CallId>(v) ? std::get<CallId>(v) : 0;
}

}  // namespace

TEST(ActorDirectory, NamesAreCheckedAndTakenOnceWithTheRefusalsLines) {
  Directory d;
  EXPECT_FALSE(d.add("counter", 7, true, "rank 0"));
  auto twice = d.add("counter", 8, true, "rank 1");
  ASSERT_TRUE(twice);
  EXPECT_EQ(twice->code, ReplyCode::refused);
  EXPECT_EQ(twice->text, "an actor named 'counter' exists already (hosted by rank 0)");
  EXPECT_EQ(d.find("counter")->handle, 7);
  auto bad = d.add("two words", 9, true, "x");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->code, ReplyCode::usage);
  EXPECT_EQ(bad->text, "bad actor name 'two words' (1 to 128 printable characters, no spaces)");
  EXPECT_TRUE(d.add("", 9, true, "x"));
  EXPECT_TRUE(d.add(std::string(129, 'a'), 9, true, "x"));
  EXPECT_FALSE(d.add(std::string(128, 'a'), 9, true, "x"));
  EXPECT_EQ(d.add("h", 0, false, "x")->text, "no actor given for 'h'");
  auto closed = d.add("late", 10, true, "x", std::string("job is in state succeeded"));
  EXPECT_EQ(closed->code, ReplyCode::refused);
  EXPECT_EQ(closed->text, "job is in state succeeded");
  EXPECT_EQ(d.entries().size(), 2u);
}

TEST(ActorDirectory, ACallsReplyIsHandedBackOnceAndCallsAreCounted) {
  Directory d;
  ASSERT_FALSE(d.add("a", 1, true, "rank 0"));
  CallId first = id_of(d.call("a", 1000, [] { return std::string("caller-1"); }));
  CallId second = id_of(d.call("a", 1000, [] { return std::string("caller-2"); }));
  EXPECT_NE(first, second);
  EXPECT_EQ(d.find("a")->calls, 2);
  EXPECT_EQ(d.find("a")->pending.size(), 2u);
  EXPECT_EQ(d.answered("a", second), "caller-2");
  EXPECT_FALSE(d.answered("a", second));  // a late timeout after the answer: nothing
  EXPECT_EQ(d.find("a")->pending.size(), 1u);
  EXPECT_EQ(d.call("nope", 1000, [] { return std::string("x"); }).index(), 1u);
  auto no_timeout = std::get<Refusal>(d.call("a", 0, [] { return std::string("x"); }));
  EXPECT_EQ(no_timeout.text, "a call needs a timeout above 0");
  EXPECT_EQ(d.find("a")->calls, 2);  // refused calls are not counted
  bool made = false;
  d.call("nope", 1000, [&] {
    made = true;
    return std::string();
  });
  EXPECT_FALSE(made);  // no reply is made for a refused call
}

TEST(ActorDirectory, AnActorThatLeavesHandsBackEveryReplyStillOwed) {
  Directory d;
  ASSERT_FALSE(d.add("a", 1, true, "rank 0"));
  CallId c = id_of(d.call("a", 1000, [] { return std::string("caller"); }));
  auto removed = d.remove("a");
  ASSERT_TRUE(std::holds_alternative<Directory::Entry>(removed));
  EXPECT_EQ(std::get<Directory::Entry>(removed).pending.at(c), "caller");
  EXPECT_FALSE(d.answered("a", c));  // the host's late answer finds nobody
  EXPECT_EQ(std::get<Refusal>(d.remove("a")).text, "no actor named 'a'");
}

TEST(ActorDirectory, OnePingAtATimeAndADeadHostIsDroppedUnlessReplaced) {
  Directory d;
  ASSERT_FALSE(d.add("a", 1, true, "x"));
  ASSERT_FALSE(d.add("b", 2, true, "y"));
  EXPECT_EQ(d.to_ping().size(), 2u);
  EXPECT_TRUE(d.to_ping().empty());  // both still out
  d.pong("a", 1);
  auto again = d.to_ping();
  ASSERT_EQ(again.size(), 1u);
  EXPECT_EQ(again[0].first, "a");
  // b's host died, and "a" was re-registered by another host meanwhile.
  EXPECT_TRUE(d.drop_if("b", 2));
  d.remove("a");
  ASSERT_FALSE(d.add("a", 3, true, "z"));
  EXPECT_FALSE(d.drop_if("a", 1));  // the old host's death is not the new one's
  EXPECT_EQ(d.find("a")->handle, 3);
}

TEST(ActorDirectory, ADownHostIsFoundByItsHandleAndTheJobsEndTakesEveryReply) {
  Directory d;
  ASSERT_FALSE(d.add("a", 1, true, "x"));
  ASSERT_FALSE(d.add("b", 2, true, "y"));
  id_of(d.call("a", 10, [] { return std::string("r1"); }));
  id_of(d.call("b", 10, [] { return std::string("r2"); }));
  id_of(d.call("b", 10, [] { return std::string("r3"); }));
  auto gone = d.drop_where([](int h) { return h == 2; });
  ASSERT_TRUE(gone);
  EXPECT_EQ(gone->first, "b");
  EXPECT_EQ(gone->second.pending.size(), 2u);
  EXPECT_FALSE(d.drop_where([](int h) { return h == 2; }));
  EXPECT_EQ(d.take_all_pending(), (std::vector<std::string>{"r1"}));
  EXPECT_TRUE(d.find("a")->pending.empty());
}

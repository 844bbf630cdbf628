// HandleMap: the shell's ids for CAF handles, here over plain strings.
#include "atl/supervisor/handle_map.hpp"

#include <gtest/gtest.h>

#include <string>

#include "atl/supervisor/supervisor.hpp"

namespace atl::supervisor {
namespace {

using Map = HandleMap<AgentId, std::string>;

TEST(HandleMap, EachHandleKeptUnderAFreshIdNeverReused) {
  Map m;
  const AgentId a = m.add("a");
  const AgentId b = m.add("b");
  EXPECT_NE(a, b);
  ASSERT_NE(m.find(a), nullptr);
  EXPECT_EQ(*m.find(a), "a");
  EXPECT_EQ(m.take(a), "a");
  EXPECT_EQ(m.find(a), nullptr);
  EXPECT_EQ(m.take(a), "");  // let go once: a second take finds nothing
  const AgentId c = m.add("a");
  EXPECT_NE(c, a);  // the same handle again: a new id, the old one stays gone
  EXPECT_EQ(m.size(), 2u);
}

TEST(HandleMap, IdOfGivesTheIdAHandleAlreadyHasOrANewOne) {
  Map m;
  const AgentId a = m.id_of("bridge-1");
  EXPECT_EQ(m.id_of("bridge-1"), a);
  EXPECT_NE(m.id_of("bridge-2"), a);
  EXPECT_TRUE(m.holds("bridge-2"));
  EXPECT_FALSE(m.holds("bridge-3"));
  EXPECT_EQ(m.find_id("bridge-1"), a);
  EXPECT_EQ(m.find_id("bridge-3"), std::nullopt);
}

TEST(HandleMap, TakeAllLetsGoOfEveryIdAHandleStoodFor) {
  Map m;
  const AgentId a1 = m.add("host-a");
  const AgentId b = m.add("host-b");
  const AgentId a2 = m.add("host-a");  // one host, two names
  auto gone = m.take_all([](const std::string& h) { return h == "host-a"; });
  EXPECT_EQ(gone, (std::vector<AgentId>{a1, a2}));  // in the order they came
  EXPECT_EQ(m.find(a1), nullptr);
  EXPECT_EQ(m.find(a2), nullptr);
  ASSERT_NE(m.find(b), nullptr);
  EXPECT_TRUE(m.take_all([](const std::string& h) { return h == "host-a"; }).empty());
}

}  // namespace
}  // namespace atl::supervisor

#include "atl/core/taints.hpp"

#include <gtest/gtest.h>

using atl::PodView;
using atl::TaintSet;
using atl::TaintSource;

namespace {

const std::vector<std::string> kNodes = {"n0", "n1", "n2"};

std::vector<PodView> pods(int count, std::vector<bool> joined = {}) {
  std::vector<PodView> out;
  for (int i = 0; i < count; ++i)
    out.push_back({"w" + std::to_string(i), i, "n" + std::to_string(i),
                   joined.empty() ? true : bool(joined[static_cast<size_t>(i)])});
  return out;
}

}  // namespace

TEST(NodeList, ParsesNamesAndAll) {
  EXPECT_EQ(*atl::parse_node_list("all"), std::vector<std::string>{"all"});
  EXPECT_EQ(*atl::parse_node_list("a,b"), (std::vector<std::string>{"a", "b"}));
  // A node named twice is a slip (taint -n a,a): refused, naming it.
  EXPECT_EQ(atl::parse_node_list("a,b,a").error(),
            "node 'a' named twice in 'a,b,a': name each node once");
  for (const char* bad : {"", ",", "a,,b", "a,", "all,a", "a,a"}) {
    auto r = atl::parse_node_list(bad);
    EXPECT_FALSE(r.ok()) << bad;
  }
  EXPECT_NE(atl::parse_node_list("a,,b").error().find("empty node name"), std::string::npos);
}

TEST(TaintSet, SetRefusesUnknownNodesAndChangesNothing) {
  TaintSet t;
  auto st = t.set({"n0", "nope"}, kNodes, TaintSource::user, "by hand", 1);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("unknown node 'nope'"), std::string::npos) << st.error();
  EXPECT_NE(st.error().find("n0, n1, n2"), std::string::npos) << st.error();
  EXPECT_TRUE(t.all().empty());
  ASSERT_TRUE(t.set({"n0", "n2"}, kNodes, TaintSource::user, "by hand", 5).ok());
  EXPECT_TRUE(t.tainted("n0"));
  EXPECT_FALSE(t.tainted("n1"));
  EXPECT_EQ(t.all().at("n2").since_unix_ms, 5);
  EXPECT_EQ(t.all().at("n2").source, TaintSource::user);
}

TEST(TaintSet, SetAllTaintsEveryKnownNode) {
  TaintSet t;
  ASSERT_TRUE(t.set({"all"}, kNodes, TaintSource::user, "", 1).ok());
  EXPECT_EQ(t.all().size(), 3u);
  EXPECT_FALSE(TaintSet().set({"all"}, {}, TaintSource::user, "", 1).ok());
}

TEST(TaintSet, RemoveIsAllOrNothing) {
  TaintSet t;
  ASSERT_TRUE(t.set({"n0", "n1"}, kNodes, TaintSource::user, "", 1).ok());
  auto st = t.remove({"n0", "n2"});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().find("'n2' is not tainted"), std::string::npos);
  EXPECT_TRUE(t.tainted("n0"));
  ASSERT_TRUE(t.remove({"n0"}).ok());
  EXPECT_FALSE(t.tainted("n0"));
  ASSERT_TRUE(t.remove({"all"}).ok());
  EXPECT_TRUE(t.all().empty());
  EXPECT_TRUE(t.remove({"all"}).ok()) << "clearing nothing is fine";
}

TEST(TaintSet, PlatformMarksNeverReplaceAUserMarkButAUserMarkReplacesThem) {
  TaintSet t;
  t.mark("n1", "failed its check", 1);
  EXPECT_EQ(t.all().at("n1").source, TaintSource::platform);
  t.mark("n1", "lost twice", 2);
  EXPECT_EQ(t.all().at("n1").reason, "failed its check") << "the first reason stays";
  ASSERT_TRUE(t.set({"n1"}, kNodes, TaintSource::user, "mine", 3).ok());
  EXPECT_EQ(t.all().at("n1").source, TaintSource::user);
  t.mark("n1", "again", 4);
  EXPECT_EQ(t.all().at("n1").reason, "mine");
  t.mark("", "no node", 5);
  EXPECT_EQ(t.all().size(), 1u);
}

TEST(ChooseActive, LowestIndicesOnUntaintedNodesThenSpares) {
  TaintSet t;
  auto c = atl::choose_active(pods(4), 2, t);
  ASSERT_TRUE(c.ok()) << c.error();
  EXPECT_EQ(c->active, (std::vector<std::string>{"w0", "w1"}));
  EXPECT_EQ(c->spares, (std::vector<std::string>{"w2", "w3"}));
  t.mark("n0", "bad", 1);
  c = atl::choose_active(pods(4), 2, t);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->active, (std::vector<std::string>{"w1", "w2"}));
  EXPECT_EQ(c->spares, (std::vector<std::string>{"w3"}));
  EXPECT_EQ(c->quarantined, (std::vector<std::string>{"w0"}));
}

TEST(ChooseActive, AMissingPodIsReplacedByASpare) {
  auto c = atl::choose_active(pods(3, {true, false, true}), 2, TaintSet());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->active, (std::vector<std::string>{"w0", "w2"}));
  EXPECT_TRUE(c->spares.empty());
}

TEST(ChooseActive, TooFewSaysWhatIsMissingAndWhatIsTainted) {
  TaintSet t;
  t.mark("n2", "bad", 1);
  auto c = atl::choose_active(pods(3, {true, false, true}), 2, t);
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().find("1 of 2 pods"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("not joined: w1"), std::string::npos) << c.error();
  EXPECT_NE(c.error().find("on tainted nodes: w2 (node n2)"), std::string::npos) << c.error();
}

TEST(ChooseActive, OrderIsByIndexNotByListOrder) {
  auto p = pods(3);
  std::swap(p[0], p[2]);
  auto c = atl::choose_active(p, 3, TaintSet());
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->active, (std::vector<std::string>{"w0", "w1", "w2"}));
}

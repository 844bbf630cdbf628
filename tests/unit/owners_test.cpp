// Owners: what each driver connection made, ended with it unless detached.
#include "atl/supervisor/owners.hpp"

#include <gtest/gtest.h>

namespace atl::supervisor {
namespace {

using Groups = std::vector<Owners::GroupId>;
using Tasks = std::vector<Owners::TaskNumber>;

TEST(Owners, WhatADriverMadeIsLeftWhenItGoesAndOnlyItsOwn) {
  Owners o;
  o.own_group({1}, 10);
  o.own_group({1}, 11);
  o.own_task({1}, 5);
  o.own_group({2}, 12);
  o.own_task({2}, 6);
  EXPECT_EQ(o.owners(), 2u);
  auto left = o.gone({1});
  EXPECT_EQ(left.groups, (Groups{10, 11}));
  EXPECT_EQ(left.tasks, (Tasks{5}));
  EXPECT_EQ(o.owner_of_group(10), nullptr);
  ASSERT_NE(o.owner_of_group(12), nullptr);
  EXPECT_EQ(o.owner_of_group(12)->value, 2);
  EXPECT_TRUE(o.gone({1}).groups.empty());  // once
  EXPECT_EQ(o.owned(), 2u);
}

TEST(Owners, DetachedOrEndedIsNotLeftBehind) {
  Owners o;
  o.own_group({1}, 10);
  o.own_group({1}, 11);
  o.own_task({1}, 5);
  o.own_task({1}, 7);
  EXPECT_TRUE(o.disown_group(11));   // lifetime="detached"
  EXPECT_TRUE(o.disown_task(7));     // a detached actor's process
  EXPECT_FALSE(o.disown_task(7));    // once
  EXPECT_FALSE(o.disown_group(99));  // never owned
  o.forget_task(5);                  // ended on its own
  auto left = o.gone({1});
  EXPECT_EQ(left.groups, (Groups{10}));
  EXPECT_TRUE(left.tasks.empty());
  EXPECT_EQ(o.owned(), 0u);
  EXPECT_EQ(o.owners(), 0u);
}

TEST(Owners, AnOwnerWithNothingLeftIsForgotten) {
  Owners o;
  o.own_task({3}, 1);
  o.forget_task(1);
  EXPECT_EQ(o.owners(), 0u);  // no record kept per driver that ever called
  o.own_group({3}, 2);
  o.forget_group(2);
  EXPECT_EQ(o.owners(), 0u);
  EXPECT_TRUE(o.gone({3}).groups.empty());
}

}  // namespace
}  // namespace atl::supervisor

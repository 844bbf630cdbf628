#include "atl/core/lifecycle.hpp"

#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <optional>
#include <set>

using S = atl::JobState;
using E = atl::JobEvent;

// The whole transition table; every pair not listed must be refused.
const std::map<std::pair<S, E>, S> kLegal = {
    {{S::pending, E::all_joined}, S::initializing},
    {{S::pending, E::ready_timeout}, S::failed},
    {{S::pending, E::node_lost}, S::pending},
    {{S::pending, E::restart}, S::restarting},
    {{S::pending, E::cancelled}, S::failed},
    {{S::pending, E::head_failed}, S::failed},
    {{S::pending, E::aborted}, S::failed},
    {{S::initializing, E::checks_passed}, S::command},
    {{S::initializing, E::check_failed}, S::failed},
    {{S::initializing, E::node_lost}, S::failed},
    {{S::initializing, E::restart}, S::restarting},
    {{S::initializing, E::cancelled}, S::failed},
    {{S::initializing, E::head_failed}, S::failed},
    {{S::initializing, E::aborted}, S::failed},
    {{S::command, E::ranks_succeeded}, S::succeeded},
    {{S::command, E::rank_failed}, S::failed},
    {{S::command, E::node_lost}, S::failed},
    {{S::command, E::restart}, S::restarting},
    {{S::command, E::cancelled}, S::failed},
    {{S::command, E::head_failed}, S::failed},
    {{S::command, E::aborted}, S::failed},
    {{S::command, E::debug_stop}, S::debugStop},
    {{S::debugStop, E::debug_stop}, S::debugStop},
    {{S::debugStop, E::debug_run}, S::debugCommand},
    {{S::debugStop, E::recover}, S::command},
    {{S::debugStop, E::node_lost}, S::debugStop},
    {{S::debugStop, E::restart}, S::restarting},
    {{S::debugStop, E::cancelled}, S::failed},
    {{S::debugStop, E::head_failed}, S::failed},
    {{S::debugStop, E::aborted}, S::failed},
    {{S::debugCommand, E::debug_stop}, S::debugStop},
    {{S::debugCommand, E::node_lost}, S::debugCommand},
    {{S::debugCommand, E::restart}, S::restarting},
    {{S::debugCommand, E::cancelled}, S::failed},
    {{S::debugCommand, E::head_failed}, S::failed},
    {{S::debugCommand, E::aborted}, S::failed},
    {{S::restarting, E::cancelled}, S::failed},
    {{S::restarting, E::head_failed}, S::failed},
    {{S::restarting, E::aborted}, S::failed},
    {{S::restarting, E::checks_passed}, S::command},
    {{S::restarting, E::restart}, S::restarting},
    {{S::restarting, E::node_lost}, S::restarting},
    {{S::restarting, E::check_failed}, S::failed},
    {{S::restarting, E::ready_timeout}, S::failed},
};

TEST(Lifecycle, EveryStateEventPairMatchesTheTable) {
  for (S from : atl::kAllJobStates) {
    for (E event : atl::kAllJobEvents) {
      auto next = atl::next_state(from, event);
      auto it = kLegal.find({from, event});
      std::string label =
          std::string(atl::to_string(from)) + " + " + std::string(atl::to_string(event));
      if (it == kLegal.end()) {
        ASSERT_FALSE(next.ok()) << label << " should be refused";
        EXPECT_NE(next.error().find(atl::to_string(from)), std::string::npos) << next.error();
        EXPECT_NE(next.error().find(atl::to_string(event)), std::string::npos) << next.error();
      } else {
        ASSERT_TRUE(next.ok()) << label << ": " << next.error();
        EXPECT_EQ(*next, it->second) << label;
      }
    }
  }
}

TEST(Lifecycle, TerminalStatesAcceptNothing) {
  for (S from : {S::succeeded, S::failed}) {
    EXPECT_TRUE(atl::is_terminal(from));
    for (E event : atl::kAllJobEvents) EXPECT_FALSE(atl::next_state(from, event).ok());
  }
  EXPECT_FALSE(atl::is_terminal(S::command));
}

TEST(Lifecycle, IllegalEventLeavesTheStateAlone) {
  atl::Lifecycle lc;
  EXPECT_EQ(lc.state(), S::pending);
  EXPECT_FALSE(lc.apply(E::ranks_succeeded).ok());
  EXPECT_EQ(lc.state(), S::pending);
  EXPECT_TRUE(lc.apply(E::all_joined).ok());
  EXPECT_TRUE(lc.apply(E::checks_passed).ok());
  EXPECT_EQ(lc.state(), S::command);
  EXPECT_TRUE(lc.apply(E::ranks_succeeded).ok());
  EXPECT_EQ(lc.state(), S::succeeded);
  EXPECT_FALSE(lc.apply(E::rank_failed).ok());
  EXPECT_EQ(lc.state(), S::succeeded);
}

TEST(Lifecycle, StateNamesAreTheSeeds) {
  EXPECT_EQ(atl::to_string(S::command), "command");
  EXPECT_EQ(atl::to_string(S::debugStop), "debugStop");
  EXPECT_EQ(atl::to_string(S::debugCommand), "debugCommand");
}

// Every state and event has a name of its own (log lines and errors show them).
TEST(Lifecycle, EveryStateAndEventHasADistinctName) {
  std::set<std::string> names;
  for (S s : atl::kAllJobStates) {
    EXPECT_NE(atl::to_string(s), "unknown");
    names.insert(std::string(atl::to_string(s)));
  }
  for (E e : atl::kAllJobEvents) {
    EXPECT_NE(atl::to_string(e), "unknown");
    names.insert(std::string(atl::to_string(e)));
  }
  EXPECT_EQ(names.size(), std::size(atl::kAllJobStates) + std::size(atl::kAllJobEvents));
}

using C = atl::DebugCommand;

// The seed's rules: which atlctl command is allowed in which state.
TEST(AllowDebugCommand, EveryCommandInEveryState) {
  const std::set<std::pair<C, S>> allowed = {
      {C::stop, S::command},      {C::stop, S::debugStop},  {C::stop, S::debugCommand},
      {C::run, S::debugStop},     {C::check, S::debugStop}, {C::burn, S::debugStop},
      {C::recover, S::debugStop},
  };
  for (C command : {C::stop, C::run, C::check, C::burn, C::recover}) {
    for (S state : atl::kAllJobStates) {
      auto st = atl::allow(command, state);
      std::string label =
          std::string(atl::to_string(command)) + " in " + std::string(atl::to_string(state));
      if (allowed.count({command, state})) {
        EXPECT_TRUE(st.ok()) << label << ": " << st.error();
      } else {
        ASSERT_FALSE(st.ok()) << label << " should be refused";
        EXPECT_NE(st.error().find(atl::to_string(state)), std::string::npos) << st.error();
        EXPECT_EQ(st.error().find('\n'), std::string::npos) << st.error();
      }
    }
  }
}

TEST(AllowDebugCommand, RunForcedWorksWhereverUserCodeWasPlaced) {
  for (S state : {S::command, S::debugStop, S::debugCommand})
    EXPECT_TRUE(atl::allow(C::run, state, true).ok()) << atl::to_string(state);
  for (S state : {S::pending, S::initializing, S::succeeded, S::failed})
    EXPECT_FALSE(atl::allow(C::run, state, true).ok()) << atl::to_string(state);
  // -f is for run only.
  EXPECT_FALSE(atl::allow(C::check, S::command, true).ok());
}

TEST(AllowDebugCommand, RefusalsSayWhatToDo) {
  EXPECT_NE(atl::allow(C::run, S::debugCommand).error().find("atlctl stop"), std::string::npos);
  EXPECT_NE(atl::allow(C::recover, S::command).error().find("debugStop"), std::string::npos);
  EXPECT_NE(atl::allow(C::run, S::command).error().find("run -f"), std::string::npos);
}

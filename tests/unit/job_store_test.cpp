// JobStore on a real SQLite file: what is saved is what a new process reads.
#include "atl/os/job_store.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/atl-store-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

atl::os::JobRecord sample() {
  atl::os::JobRecord r;
  r.state = "restarting";
  r.attempt = 3;
  r.restarts = 2;
  r.faults = {{atl::FaultKind::pod_lost, "w1", "pod w1 was lost", 1},
              {atl::FaultKind::pod_hung, "w0", "pod w0 stopped answering", 3}};
  r.taints["local-1"] = {atl::TaintSource::platform, "lost twice in a row", 42};
  r.taints["local-2"] = {atl::TaintSource::user, "set by atlctl taint", 43};
  return r;
}

}  // namespace

TEST(JobStore, WhatIsSavedIsReadBackByANewOpen) {
  TempDir dir;
  std::string path = dir.path + "/state.db";
  {
    auto store = atl::os::JobStore::open(path);
    ASSERT_TRUE(store.ok()) << store.error();
    auto none = (*store)->load("jo-a");
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());
    ASSERT_TRUE((*store)->save("jo-a", sample()).ok());
    ASSERT_TRUE((*store)->add_event("jo-a", {1, "state", "pending -> initializing"}).ok());
    ASSERT_TRUE((*store)->add_event("jo-a", {2, "fault", "pod w1 was lost"}).ok());
    ASSERT_TRUE((*store)->add_event("jo-b", {3, "state", "another job"}).ok());
  }
  auto store = atl::os::JobStore::open(path);
  ASSERT_TRUE(store.ok());
  auto loaded = (*store)->load("jo-a");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ASSERT_TRUE(loaded->has_value());
  const auto& r = **loaded;
  EXPECT_EQ(r.state, "restarting");
  EXPECT_EQ(r.attempt, 3);
  EXPECT_EQ(r.restarts, 2);
  ASSERT_EQ(r.faults.size(), 2u);
  EXPECT_EQ(r.faults[1].kind, atl::FaultKind::pod_hung);
  EXPECT_EQ(r.faults[1].detail, "pod w0 stopped answering");
  EXPECT_EQ(r.faults[1].attempt, 3);
  ASSERT_EQ(r.taints.size(), 2u);
  EXPECT_EQ(r.taints.at("local-1").source, atl::TaintSource::platform);
  EXPECT_EQ(r.taints.at("local-2").since_unix_ms, 43);
  ASSERT_EQ(r.events.size(), 2u) << "only this job's events, in order";
  EXPECT_EQ(r.events[1].text, "pod w1 was lost");
}

// A new store is made without syncs, but what it becomes is an ordinary one:
// WAL, every table (the attempt column too), its commits readable.
TEST(JobStore, ANewStoreIsInWalModeWithNormalSyncsAndAllItsTables) {
  TempDir dir;
  std::string path = dir.path + "/state.db";
  auto store = atl::os::JobStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error();
  ASSERT_TRUE((*store)->save("jo-a", sample()).ok());
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  auto one = [&](const char* sql) {
    sqlite3_stmt* stmt = nullptr;
    std::string value;
    if (sqlite3_prepare_v2(db, sql, -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW)
      value = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    sqlite3_finalize(stmt);
    return value;
  };
  EXPECT_EQ(one("PRAGMA journal_mode;"), "wal");
  EXPECT_EQ(one("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name IN "
                "('jobs', 'faults', 'taints', 'events');"),
            "4");
  EXPECT_EQ(one("SELECT max(attempt) FROM faults;"), "3");
  sqlite3_close(db);
}

// The close does not checkpoint (~1.5 ms of every job's end): the WAL stays
// beside the file, and any reader (a resumed head, the sqlite3 tool) reads
// through it.
TEST(JobStore, TheCloseLeavesTheWalWhichEveryReaderReadsThrough) {
  TempDir dir;
  std::string path = dir.path + "/state.db";
  {
    auto store = atl::os::JobStore::open(path);
    ASSERT_TRUE(store.ok()) << store.error();
    ASSERT_TRUE((*store)->save("jo-a", sample()).ok());
  }
  std::ifstream wal(path + "-wal", std::ios::binary | std::ios::ate);
  ASSERT_TRUE(wal.good()) << "no WAL left by the close";
  EXPECT_GT(static_cast<long>(wal.tellg()), 0);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr), SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM faults;", -1, &stmt, nullptr), SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  EXPECT_EQ(sqlite3_column_int(stmt, 0), 2);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  auto again = atl::os::JobStore::open(path);
  ASSERT_TRUE(again.ok());
  auto loaded = (*again)->load("jo-a");
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  EXPECT_EQ((**loaded).attempt, 3);
}

// A state dir written before faults had their attempt: opened, it gains the
// column, keeps its rows (attempt 0: not known) and takes new ones.
TEST(JobStore, AStoreOfAnOlderHeadGainsTheAttemptColumn) {
  TempDir dir;
  std::string path = dir.path + "/state.db";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const char* old_schema =
      "CREATE TABLE faults (job_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, "
      "pod TEXT NOT NULL, detail TEXT NOT NULL, PRIMARY KEY (job_id, seq)); CREATE TABLE jobs "
      "(job_id TEXT PRIMARY KEY, state TEXT NOT NULL, attempt INTEGER NOT NULL, restarts INTEGER "
      "NOT NULL); INSERT INTO jobs VALUES ('jo-old', 'command', 2, 1); INSERT INTO faults VALUES "
      "('jo-old', 0, 'pod_lost', 'w0', 'pod w0 was lost');";
  EXPECT_EQ(sqlite3_exec(db, old_schema, nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  auto store = atl::os::JobStore::open(path);
  ASSERT_TRUE(store.ok()) << store.error();
  auto loaded = (*store)->load("jo-old");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ASSERT_TRUE(loaded->has_value());
  ASSERT_EQ((*loaded)->faults.size(), 1u);
  EXPECT_EQ((*loaded)->faults[0].attempt, 0);
  auto r = **loaded;
  r.faults.push_back({atl::FaultKind::pod_hung, "w1", "pod w1 hung", 2});
  ASSERT_TRUE((*store)->save("jo-old", r).ok());
  auto again = (*store)->load("jo-old");
  ASSERT_TRUE(again.ok() && again->has_value());
  EXPECT_EQ((*again)->faults.at(1).attempt, 2);
}

TEST(JobStore, SaveReplacesFaultsAndTaintsAndResetForgetsTheJob) {
  TempDir dir;
  auto store = atl::os::JobStore::open(dir.path + "/state.db");
  ASSERT_TRUE(store.ok());
  ASSERT_TRUE((*store)->save("jo-a", sample()).ok());
  atl::os::JobRecord fewer = sample();
  fewer.faults.resize(1);
  fewer.taints.erase("local-1");
  ASSERT_TRUE((*store)->save("jo-a", fewer).ok());
  auto r = (*store)->load("jo-a");
  EXPECT_EQ((*r)->faults.size(), 1u);
  EXPECT_EQ((*r)->taints.size(), 1u);
  ASSERT_TRUE((*store)->reset("jo-a").ok());
  EXPECT_FALSE((*store)->load("jo-a")->has_value());
}

TEST(JobStore, AnUnwritablePlaceOrAFileThatIsNotADatabaseIsAnError) {
  auto missing = atl::os::JobStore::open("/nonexistent/dir/state.db");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().find("/nonexistent/dir/state.db"), std::string::npos);
  TempDir dir;
  std::string junk = dir.path + "/state.db";
  std::ofstream(junk) << "this is not a database, just text that is long enough to matter\n";
  auto bad = atl::os::JobStore::open(junk);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.error().find(junk), std::string::npos) << bad.error();
}

TEST(JobStore, AnUnknownFaultKindIsRefusedOnRead) {
  EXPECT_FALSE(atl::os::parse_fault_kind("gremlins").ok());
  for (auto k : {atl::FaultKind::pod_lost, atl::FaultKind::head_restarted})
    EXPECT_EQ(*atl::os::parse_fault_kind(std::string(atl::to_string(k))), k);
}

// The timeline is bounded on disk and on resume: a long job's events were
// never trimmed and were all read back into a resumed head.
TEST(JobStore, TheTimelineIsTrimmedAndOnlyItsNewestAreReadBack) {
  TempDir dir;
  auto store = atl::os::JobStore::open(dir.path + "/state.db");
  ASSERT_TRUE(store.ok()) << store.error();
  (*store)->limit_events(100, 30);
  ASSERT_TRUE((*store)->save("jo-a", sample()).ok());
  ASSERT_TRUE((*store)->save("jo-b", sample()).ok());
  std::vector<atl::os::StoredEvent> batch;
  for (int i = 0; i < 250; ++i) {
    batch.push_back({i, "note", "event " + std::to_string(i)});
    if (batch.size() == 7) {
      ASSERT_TRUE((*store)->add_events("jo-a", batch).ok());
      batch.clear();
    }
  }
  ASSERT_TRUE((*store)->add_events("jo-a", batch).ok());
  ASSERT_TRUE((*store)->add_event("jo-b", {1, "note", "b's own"}).ok());
  auto loaded = (*store)->load("jo-a");
  ASSERT_TRUE(loaded.ok()) << loaded.error();
  ASSERT_TRUE(loaded->has_value());
  const auto& events = (*loaded)->events;
  ASSERT_EQ(events.size(), 30u);  // the newest 30, oldest first
  EXPECT_EQ(events.front().text, "event 220");
  EXPECT_EQ(events.back().text, "event 249");
  // On disk: at most the bound, and a tenth of it more between trims.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open_v2((dir.path + "/state.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr),
            SQLITE_OK);
  sqlite3_stmt* stmt = nullptr;
  ASSERT_EQ(sqlite3_prepare_v2(db, "SELECT count(*) FROM events WHERE job_id = 'jo-a'", -1, &stmt,
                               nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_step(stmt), SQLITE_ROW);
  const auto rows = sqlite3_column_int64(stmt, 0);
  sqlite3_finalize(stmt);
  sqlite3_close(db);
  EXPECT_GE(rows, 100);
  EXPECT_LE(rows, 110);
  // Another job's timeline is its own.
  auto b = (*store)->load("jo-b");
  ASSERT_TRUE(b.ok() && b->has_value());
  ASSERT_EQ((*b)->events.size(), 1u);
  EXPECT_EQ((*b)->events[0].text, "b's own");
}

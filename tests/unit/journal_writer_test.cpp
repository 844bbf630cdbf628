// JournalWriter on a real SQLite file: the caller never waits on the
// database, writes land in order, and errors come back instead of blocking.
#include "atl/os/journal_writer.hpp"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace {

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/atl-journal-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { std::system(("rm -rf '" + path + "'").c_str()); }
};

atl::os::JobRecord state(const std::string& s, int attempt) {
  atl::os::JobRecord r;
  r.state = s;
  r.attempt = attempt;
  return r;
}

std::shared_ptr<atl::os::JobStore> open_store(const std::string& path) {
  auto store = atl::os::JobStore::open(path);
  EXPECT_TRUE(store.ok()) << store.error();
  return std::shared_ptr<atl::os::JobStore>(std::move(store).value());
}

// Another process's write lock on the database, as long as it lives.
struct WriteLock {
  sqlite3* db = nullptr;
  explicit WriteLock(const std::string& path) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, "BEGIN IMMEDIATE;", nullptr, nullptr, nullptr), SQLITE_OK);
  }
  ~WriteLock() {
    sqlite3_exec(db, "ROLLBACK;", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
};

}  // namespace

TEST(JournalWriter, WritesLandInOrderAndSurviveTheWriter) {
  TempDir dir;
  const std::string path = dir.path + "/state.db";
  {
    atl::os::JournalWriter journal(open_store(path), "jo-a", nullptr);
    journal.save(state("pending", 1));
    for (int i = 0; i < 50; ++i) journal.add_event({i, "state", "event " + std::to_string(i)});
    journal.save(state("command", 2));
  }  // the destructor writes what is queued
  auto loaded = open_store(path)->load("jo-a");
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  EXPECT_EQ((*loaded)->state, "command");
  EXPECT_EQ((*loaded)->attempt, 2);
  ASSERT_EQ((*loaded)->events.size(), 50u);
  for (int i = 0; i < 50; ++i) EXPECT_EQ((*loaded)->events[i].text, "event " + std::to_string(i));
}

// While another writer holds the database (SQLite waits up to 5 s for it), the
// caller goes on: if save/add_event waited, this thread (which holds the
// lock) would never release it and the test would hang. What queued meanwhile
// is written in a few transactions, the newest state winning.
TEST(JournalWriter, ABusyDatabaseNeverHoldsUpTheCallerAndQueuedWritesCoalesce) {
  TempDir dir;
  const std::string path = dir.path + "/state.db";
  atl::os::JournalWriter journal(open_store(path), "jo-b", nullptr);
  journal.save(state("pending", 1));
  journal.flush();
  const std::size_t before = journal.transactions();
  {
    WriteLock lock(path);
    for (int i = 0; i < 200; ++i) {
      journal.save(state("command", i));
      journal.save(state("command", i + 1000));
    }
    for (int i = 0; i < 200; ++i) journal.add_event({i, "fault", "f" + std::to_string(i)});
    journal.save(state("debugStop", 7));
  }
  journal.flush();
  // One save may have been taken before the lock; the rest coalesced: a save,
  // the events in one batch, the last save.
  EXPECT_LE(journal.transactions() - before, 5u);
  auto loaded = open_store(path)->load("jo-b");
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  EXPECT_EQ((*loaded)->state, "debugStop");
  EXPECT_EQ((*loaded)->attempt, 7);
  EXPECT_EQ((*loaded)->events.size(), 200u);
}

TEST(JournalWriter, AWriteThatFailsIsReportedAndTheWriterGoesOn) {
  TempDir dir;
  const std::string path = dir.path + "/state.db";
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::string> errors;
  atl::os::JournalWriter journal(open_store(path), "jo-c", [&](const std::string& why) {
    std::lock_guard<std::mutex> lock(m);
    errors.push_back(why);
    cv.notify_all();
  });
  {
    WriteLock lock(path);  // past SQLite's 5 s busy timeout
    journal.save(state("command", 1));
    std::unique_lock<std::mutex> l(m);
    ASSERT_TRUE(cv.wait_for(l, std::chrono::seconds(60), [&] { return !errors.empty(); }));
  }
  EXPECT_NE(errors[0].find("locked"), std::string::npos) << errors[0];
  journal.save(state("command", 2));  // the lock is gone: it works again
  journal.flush();
  auto loaded = open_store(path)->load("jo-c");
  ASSERT_TRUE(loaded.ok() && loaded->has_value());
  EXPECT_EQ((*loaded)->attempt, 2);
  EXPECT_EQ(errors.size(), 1u);
}

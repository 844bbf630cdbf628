#include "atl/os/job_store.hpp"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>

namespace atl::os {

namespace {

// A prepared statement that finalizes itself.
class Statement {
 public:
  Statement(sqlite3* db, const char* sql) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &stmt_, nullptr) != SQLITE_OK) stmt_ = nullptr;
  }
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;

  bool ok() const { return stmt_ != nullptr; }
  Statement& bind(int i, const std::string& v) {
    sqlite3_bind_text(stmt_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Statement& bind(int i, std::int64_t v) {
    sqlite3_bind_int64(stmt_, i, v);
    return *this;
  }
  int step() { return sqlite3_step(stmt_); }
  std::string text(int col) const {
    const unsigned char* t = sqlite3_column_text(stmt_, col);
    return t ? std::string(reinterpret_cast<const char*>(t),
                           static_cast<size_t>(sqlite3_column_bytes(stmt_, col)))
             : std::string();
  }
  std::int64_t integer(int col) const { return sqlite3_column_int64(stmt_, col); }
  std::string error() const { return sqlite3_errmsg(db_); }

 private:
  sqlite3* db_;
  sqlite3_stmt* stmt_ = nullptr;
};

constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS jobs (
  job_id TEXT PRIMARY KEY, state TEXT NOT NULL, attempt INTEGER NOT NULL,
  restarts INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS faults (
  job_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL, pod TEXT NOT NULL,
  detail TEXT NOT NULL, PRIMARY KEY (job_id, seq));
CREATE TABLE IF NOT EXISTS taints (
  job_id TEXT NOT NULL, node TEXT NOT NULL, source TEXT NOT NULL, reason TEXT NOT NULL,
  since_ms INTEGER NOT NULL, PRIMARY KEY (job_id, node));
CREATE TABLE IF NOT EXISTS events (
  seq INTEGER PRIMARY KEY AUTOINCREMENT, job_id TEXT NOT NULL, time_ms INTEGER NOT NULL,
  kind TEXT NOT NULL, text TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS events_by_job ON events (job_id, seq);
)sql";

}  // namespace

Expected<FaultKind> parse_fault_kind(const std::string& text) {
  for (FaultKind k : {FaultKind::pod_lost, FaultKind::pod_hung, FaultKind::pod_deleted,
                      FaultKind::gpu_lost, FaultKind::preflight_failed, FaultKind::rank_failed,
                      FaultKind::head_restarted, FaultKind::ready_timeout, FaultKind::job_hung})
    if (to_string(k) == text) return k;
  return make_error("unknown fault kind '" + text + "'");
}

Expected<std::unique_ptr<JobStore>> JobStore::open(const std::string& path) {
  struct stat before {};
  const bool fresh = ::stat(path.c_str(), &before) != 0 || before.st_size == 0;
  sqlite3* db = nullptr;
  if (sqlite3_open_v2(path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    std::string why = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    return make_error("cannot open " + path + ": " + why);
  }
  std::unique_ptr<JobStore> store(new JobStore(db));
  sqlite3_busy_timeout(db, 5000);
  // The close leaves the WAL as it is: the next open reads it. Its checkpoint
  // (the WAL copied into the file, with two fsyncs) cost ~1.5 ms of every
  // job's end; commits are as durable without it (synchronous=NORMAL below).
  sqlite3_db_config(db, SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE, 1, nullptr);
  // WAL: a crash (kill -9) never leaves a half-written state behind. A new
  // store is made without a sync (its header, the switch to WAL, its tables:
  // ~1 ms of fsyncs on the way to every new job's start): it holds nothing
  // yet, and only a power loss within that millisecond could tear it (the
  // next head then refuses the file, naming it). Its state is synced as any
  // store's from the first commit on.
  for (const char* pragma : {fresh ? "PRAGMA synchronous=OFF;" : "PRAGMA synchronous=NORMAL;",
                             "PRAGMA journal_mode=WAL;", "BEGIN;", kSchema})
    if (auto st = store->exec(pragma); !st) return make_error(path + ": " + st.error());
  // A store made before faults had their attempt gains the column (0: not known).
  if (!store->exec("SELECT attempt FROM faults LIMIT 0;"))
    if (auto st = store->exec("ALTER TABLE faults ADD COLUMN attempt INTEGER NOT NULL DEFAULT 0;");
        !st)
      return make_error(path + ": " + st.error());
  for (const char* pragma : {"COMMIT;", "PRAGMA synchronous=NORMAL;"})
    if (auto st = store->exec(pragma); !st) return make_error(path + ": " + st.error());
  return store;
}

JobStore::~JobStore() { sqlite3_close(db_); }

Status JobStore::exec(const std::string& sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string why = err ? err : sqlite3_errmsg(db_);
    sqlite3_free(err);
    return make_error("state store: " + why);
  }
  return Ok{};
}

Expected<std::vector<std::string>> JobStore::job_ids() {
  Statement ids(db_, "SELECT job_id FROM jobs ORDER BY job_id");
  if (!ids.ok()) return make_error("state store: " + ids.error());
  std::vector<std::string> out;
  int rc;
  while ((rc = ids.step()) == SQLITE_ROW) out.push_back(ids.text(0));
  if (rc != SQLITE_DONE) return make_error("state store: " + ids.error());
  return out;
}

Expected<std::optional<JobRecord>> JobStore::load(const std::string& job_id) {
  Statement job(db_, "SELECT state, attempt, restarts FROM jobs WHERE job_id = ?");
  if (!job.ok()) return make_error("state store: " + job.error());
  job.bind(1, job_id);
  int rc = job.step();
  if (rc == SQLITE_DONE) return std::optional<JobRecord>();
  if (rc != SQLITE_ROW) return make_error("state store: " + job.error());
  JobRecord r;
  r.state = job.text(0);
  r.attempt = static_cast<int>(job.integer(1));
  r.restarts = static_cast<int>(job.integer(2));

  Statement faults(db_,
                   "SELECT kind, pod, detail, attempt FROM faults WHERE job_id = ? ORDER BY seq");
  faults.bind(1, job_id);
  while ((rc = faults.step()) == SQLITE_ROW) {
    auto kind = parse_fault_kind(faults.text(0));
    if (!kind) return make_error("state store: " + kind.error());
    r.faults.push_back(
        {*kind, faults.text(1), faults.text(2), static_cast<std::int32_t>(faults.integer(3))});
  }
  if (rc != SQLITE_DONE) return make_error("state store: " + faults.error());

  Statement taints(db_, "SELECT node, source, reason, since_ms FROM taints WHERE job_id = ?");
  taints.bind(1, job_id);
  while ((rc = taints.step()) == SQLITE_ROW) {
    std::string source = taints.text(1);
    if (source != "user" && source != "platform")
      return make_error("state store: unknown taint source '" + source + "'");
    r.taints[taints.text(0)] = Taint{source == "user" ? TaintSource::user : TaintSource::platform,
                                     taints.text(2), taints.integer(3)};
  }
  if (rc != SQLITE_DONE) return make_error("state store: " + taints.error());

  // The newest events_loaded_ only, oldest first: a long job's whole timeline
  // was read into the resumed head.
  Statement events(db_,
                   "SELECT time_ms, kind, text FROM (SELECT seq, time_ms, kind, text FROM events "
                   "WHERE job_id = ? ORDER BY seq DESC LIMIT ?) ORDER BY seq");
  events.bind(1, job_id).bind(2, static_cast<std::int64_t>(events_loaded_));
  while ((rc = events.step()) == SQLITE_ROW)
    r.events.push_back({events.integer(0), events.text(1), events.text(2)});
  if (rc != SQLITE_DONE) return make_error("state store: " + events.error());
  return std::optional<JobRecord>(std::move(r));
}

Status JobStore::save(const std::string& job_id, const JobRecord& r) {
  if (auto st = exec("BEGIN IMMEDIATE;"); !st) return st;
  auto fail = [&](const std::string& why) -> Status {
    exec("ROLLBACK;");
    return make_error("state store: " + why);
  };
  Statement job(db_,
                "INSERT INTO jobs (job_id, state, attempt, restarts) VALUES (?, ?, ?, ?) "
                "ON CONFLICT(job_id) DO UPDATE SET state = excluded.state, "
                "attempt = excluded.attempt, restarts = excluded.restarts");
  job.bind(1, job_id)
      .bind(2, r.state)
      .bind(3, std::int64_t{r.attempt})
      .bind(4, std::int64_t{r.restarts});
  if (job.step() != SQLITE_DONE) return fail(job.error());
  for (const char* sql :
       {"DELETE FROM faults WHERE job_id = ?", "DELETE FROM taints WHERE job_id = ?"}) {
    Statement del(db_, sql);
    del.bind(1, job_id);
    if (del.step() != SQLITE_DONE) return fail(del.error());
  }
  for (size_t i = 0; i < r.faults.size(); ++i) {
    Statement f(
        db_,
        "INSERT INTO faults (job_id, seq, kind, pod, detail, attempt) VALUES (?, ?, ?, ?, ?, "
        "?)");
    f.bind(1, job_id)
        .bind(2, static_cast<std::int64_t>(i))
        .bind(3, std::string(to_string(r.faults[i].kind)))
        .bind(4, r.faults[i].pod)
        .bind(5, r.faults[i].detail)
        .bind(6, static_cast<std::int64_t>(r.faults[i].attempt));
    if (f.step() != SQLITE_DONE) return fail(f.error());
  }
  for (const auto& [node, t] : r.taints) {
    Statement ins(
        db_, "INSERT INTO taints (job_id, node, source, reason, since_ms) VALUES (?, ?, ?, ?, ?)");
    ins.bind(1, job_id)
        .bind(2, node)
        .bind(3, std::string(to_string(t.source)))
        .bind(4, t.reason)
        .bind(5, t.since_unix_ms);
    if (ins.step() != SQLITE_DONE) return fail(ins.error());
  }
  return exec("COMMIT;");
}

Status JobStore::insert_event(const std::string& job_id, const StoredEvent& e) {
  Statement ins(db_, "INSERT INTO events (job_id, time_ms, kind, text) VALUES (?, ?, ?, ?)");
  ins.bind(1, job_id).bind(2, e.unix_ms).bind(3, e.kind).bind(4, e.text);
  if (ins.step() != SQLITE_DONE) return make_error("state store: " + ins.error());
  ++added_since_trim_;
  return Ok{};
}

// Past events_kept_ of the job, the oldest go; looked at once per tenth of
// that many added (a delete by the (job_id, seq) index), not at each insert.
Status JobStore::trim_events(const std::string& job_id) {
  if (added_since_trim_ < std::max<std::size_t>(events_kept_ / 10, 1)) return Ok{};
  added_since_trim_ = 0;
  Statement del(db_,
                "DELETE FROM events WHERE job_id = ?1 AND seq < (SELECT seq FROM events WHERE "
                "job_id = ?1 ORDER BY seq DESC LIMIT 1 OFFSET ?2)");
  del.bind(1, job_id).bind(2, static_cast<std::int64_t>(events_kept_ - 1));
  if (del.step() != SQLITE_DONE) return make_error("state store: " + del.error());
  return Ok{};
}

Status JobStore::add_event(const std::string& job_id, const StoredEvent& e) {
  if (auto st = insert_event(job_id, e); !st) return st;
  return trim_events(job_id);
}

Status JobStore::add_events(const std::string& job_id, const std::vector<StoredEvent>& events) {
  if (events.empty()) return Ok{};
  if (auto st = exec("BEGIN IMMEDIATE;"); !st) return st;
  for (const auto& e : events) {
    if (auto st = insert_event(job_id, e); !st) {
      exec("ROLLBACK;");
      return st;
    }
  }
  if (auto st = trim_events(job_id); !st) {
    exec("ROLLBACK;");
    return st;
  }
  return exec("COMMIT;");
}

void JobStore::limit_events(std::size_t kept, std::size_t loaded) {
  events_kept_ = std::max<std::size_t>(kept, 1);
  events_loaded_ = std::max<std::size_t>(loaded, 1);
}

Status JobStore::reset(const std::string& job_id) {
  for (const char* sql :
       {"DELETE FROM jobs WHERE job_id = ?", "DELETE FROM faults WHERE job_id = ?",
        "DELETE FROM taints WHERE job_id = ?"}) {
    Statement del(db_, sql);
    del.bind(1, job_id);
    if (del.step() != SQLITE_DONE) return make_error("state store: " + del.error());
  }
  return Ok{};
}

}  // namespace atl::os

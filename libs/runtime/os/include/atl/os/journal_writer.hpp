// JournalWriter: the job's durable record (JobStore, SQLite) written on a
// thread of its own, in the order asked. The supervisor is an actor on CAF's
// scheduler threads; a transaction may wait up to SQLite's 5 s busy timeout or
// a slow disk, and must never stall the job's one mailbox. Writes are queued
// and return at once; events that queue up meanwhile go in one transaction;
// a state save that has not been written yet is replaced by the newer one
// (only the latest state matters; events and resets keep their order around
// it). Errors come back through `on_error` (on the writer's thread): the
// supervisor turns them into a message to itself.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "atl/os/job_store.hpp"

namespace atl::os {

class JournalWriter {
 public:
  using OnError = std::function<void(const std::string& why)>;

  JournalWriter(std::shared_ptr<JobStore> store, std::string job_id, OnError on_error);
  // Writes everything still queued, then joins the thread: nothing asked is lost.
  ~JournalWriter();
  JournalWriter(const JournalWriter&) = delete;
  JournalWriter& operator=(const JournalWriter&) = delete;

  void save(JobRecord record);
  void add_event(StoredEvent event);
  void reset();  // forgets the job's state, faults and taints (a job submitted anew)

  // Blocks until everything queued before the call is written (tests).
  void flush();
  // Transactions run so far (a batch of events counts once).
  std::size_t transactions() const;

 private:
  struct Op {
    enum class Kind { save, events, reset } kind;
    JobRecord record;                 // save
    std::vector<StoredEvent> events;  // events
  };
  void run();

  std::shared_ptr<JobStore> store_;
  std::string job_id_;
  OnError on_error_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<Op> queue_;
  bool writing_ = false;
  bool closing_ = false;
  std::size_t transactions_ = 0;
  std::thread thread_;
};

}  // namespace atl::os

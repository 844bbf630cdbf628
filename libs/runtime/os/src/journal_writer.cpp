#include "atl/os/journal_writer.hpp"

#include <utility>

namespace atl::os {

JournalWriter::JournalWriter(std::shared_ptr<JobStore> store, std::string job_id, OnError on_error)
    : store_(std::move(store)), job_id_(std::move(job_id)), on_error_(std::move(on_error)) {
  thread_ = std::thread([this] { run(); });
}

JournalWriter::~JournalWriter() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    closing_ = true;
  }
  wake_.notify_all();
  thread_.join();
}

void JournalWriter::save(JobRecord record) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!queue_.empty() && queue_.back().kind == Op::Kind::save) {
      queue_.back().record = std::move(record);  // not written yet: the newer state wins
    } else {
      queue_.push_back(Op{Op::Kind::save, std::move(record), {}});
    }
  }
  wake_.notify_one();
}

void JournalWriter::add_event(StoredEvent event) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!queue_.empty() && queue_.back().kind == Op::Kind::events) {
      queue_.back().events.push_back(std::move(event));  // one transaction for the batch
    } else {
      queue_.push_back(Op{Op::Kind::events, {}, {std::move(event)}});
    }
  }
  wake_.notify_one();
}

void JournalWriter::reset() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(Op{Op::Kind::reset, {}, {}});
  }
  wake_.notify_one();
}

void JournalWriter::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [this] { return queue_.empty() && !writing_; });
}

std::size_t JournalWriter::transactions() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return transactions_;
}

void JournalWriter::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (true) {
    wake_.wait(lock, [this] { return closing_ || !queue_.empty(); });
    if (queue_.empty()) {
      if (closing_) return;
      continue;
    }
    Op op = std::move(queue_.front());
    queue_.pop_front();
    writing_ = true;
    lock.unlock();
    Status done = op.kind == Op::Kind::save     ? store_->save(job_id_, op.record)
                  : op.kind == Op::Kind::events ? store_->add_events(job_id_, op.events)
                                                : store_->reset(job_id_);
    if (!done && on_error_) on_error_(done.error());
    lock.lock();
    writing_ = false;
    ++transactions_;
    if (queue_.empty()) idle_.notify_all();
  }
}

}  // namespace atl::os

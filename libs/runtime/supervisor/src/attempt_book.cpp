#include "atl/supervisor/attempt_book.hpp"

namespace atl::supervisor {

const char* to_string(AttemptEnd how) {
  switch (how) {
    case AttemptEnd::running:
      return "running";
    case AttemptEnd::fault:
      return "fault";
    case AttemptEnd::recovered:
      return "stopped and recovered";
    case AttemptEnd::head_restart:
      return "head restarted";
    case AttemptEnd::succeeded:
      return "succeeded";
    case AttemptEnd::failed:
      return "failed";
    case AttemptEnd::cancelled:
      return "cancelled";
  }
  return "running";
}

void AttemptBook::submitted(std::int64_t now) {
  if (!submitted_) submitted_ = now;
}

void AttemptBook::resumed_after(std::int32_t attempt, std::int64_t now) {
  if (attempt < 1) return;
  attempts_.push_back({attempt, -1, now, AttemptEnd::head_restart, "the head restarted"});
  if (attempts_.size() > kKept) attempts_.pop_front();
}

AttemptRecord* AttemptBook::running() {
  if (attempts_.empty() || attempts_.back().how != AttemptEnd::running) return nullptr;
  return &attempts_.back();
}

void AttemptBook::began(std::int32_t attempt, std::int64_t now, AttemptEnd before,
                        const std::string& why) {
  if (AttemptRecord* r = running()) {
    if (r->attempt == attempt) return;  // a relaunch of the same attempt
    r->how = before;
    r->detail = why;
    r->ended_ms = now;
  }
  if (!started_) started_ = now;
  attempts_.push_back({attempt, now, -1, AttemptEnd::running, ""});
  if (attempts_.size() > kKept) attempts_.pop_front();
}

void AttemptBook::ended(AttemptEnd how, const std::string& detail, std::int64_t now) {
  AttemptRecord* r = running();
  if (!r) return;
  r->how = how;
  r->detail = detail;
  r->ended_ms = now;
}

void AttemptBook::job_ended(AttemptEnd how, const std::string& detail, std::int64_t now) {
  ended(how, detail, now);
  if (!ended_) ended_ = now;
}

}  // namespace atl::supervisor

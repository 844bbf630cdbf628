// ReplyBook: the shell's side of "pieces hold ReplyIds, never promises". A
// request the supervisor answers later (a stop_wait, a recover) is kept here
// under a ReplyId; the pieces hold the id and answer it with an effect, the
// shell takes the promise back by its id and delivers. An id is answered once:
// a second answer (a late timer, a piece that forgot) finds nothing.
//
// Plain C++: `Reply` is a CAF response promise in the supervisor, anything
// in tests.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <utility>
#include <vector>

namespace atl::supervisor {

using ReplyId = std::uint64_t;

template <class Reply>
class ReplyBook {
 public:
  // Keeps `reply` until it is answered: its id, never reused for the book's life.
  ReplyId keep(Reply reply) {
    const ReplyId id = next_++;
    waiting_.emplace(id, std::move(reply));
    return id;
  }

  // The reply kept as `id`, once.
  std::optional<Reply> take(ReplyId id) {
    auto it = waiting_.find(id);
    if (it == waiting_.end()) return std::nullopt;
    std::optional<Reply> out{std::move(it->second)};
    waiting_.erase(it);
    return out;
  }

  // The supervisor ends: every reply still kept, oldest first.
  std::vector<Reply> take_all() {
    std::vector<Reply> out;
    for (auto& [id, reply] : waiting_) out.push_back(std::move(reply));
    waiting_.clear();
    return out;
  }

  std::size_t size() const { return waiting_.size(); }

 private:
  ReplyId next_ = 1;
  std::map<ReplyId, Reply> waiting_;  // ordered: oldest first
};

}  // namespace atl::supervisor

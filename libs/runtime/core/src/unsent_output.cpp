#include "atl/core/unsent_output.hpp"

#include <utility>

namespace atl {

void UnsentOutput::keep(UnsentChunk chunk) {
  if (chunk.bytes.empty()) return;
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes_ + chunk.bytes.size() > limit_) {
    dropped_ += static_cast<std::int64_t>(chunk.bytes.size());
    return;
  }
  bytes_ += chunk.bytes.size();
  for (auto it = chunks_.rbegin(); it != chunks_.rend(); ++it) {
    if (it->stream != chunk.stream || it->attempt != chunk.attempt) continue;
    // The last one of its stream: merged only if this one follows it directly.
    if (it->offset + static_cast<std::int64_t>(it->bytes.size()) == chunk.offset &&
        it->bytes.size() + chunk.bytes.size() <= kMaxChunkBytes) {
      it->bytes += chunk.bytes;
      it->lines += chunk.lines;
      return;
    }
    break;
  }
  chunks_.push_back(std::move(chunk));
}

std::optional<UnsentChunk> UnsentOutput::take() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (chunks_.empty()) return std::nullopt;
  UnsentChunk out = std::move(chunks_.front());
  chunks_.pop_front();
  bytes_ -= out.bytes.size();
  return out;
}

void UnsentOutput::give_back(UnsentChunk chunk) {
  std::lock_guard<std::mutex> lock(mutex_);
  bytes_ += chunk.bytes.size();
  chunks_.push_front(std::move(chunk));
}

bool UnsentOutput::empty() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return chunks_.empty();
}

std::size_t UnsentOutput::bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return bytes_;
}

std::size_t UnsentOutput::chunks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return chunks_.size();
}

std::int64_t UnsentOutput::dropped_bytes() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return dropped_;
}

std::size_t bytes_already_kept(std::int64_t have, std::int64_t offset, std::size_t length) {
  if (have <= offset || offset < 0) return 0;
  const auto held = static_cast<std::uint64_t>(have - offset);
  return held >= length ? length : static_cast<std::size_t>(held);
}

}  // namespace atl

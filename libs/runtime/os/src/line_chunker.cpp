#include "atl/os/line_chunker.hpp"

#include <algorithm>
#include <cstring>

namespace atl::os {

void LineChunker::feed(std::string_view bytes) {
  buffer_.append(bytes.data(), bytes.size());
  scan();
}

char* LineChunker::prepare(size_t n) {
  if (n > room_size_) {
    room_.reset(new char[n]);  // default-initialized: not zeroed
    room_size_ = n;
  }
  return room_.get();
}

void LineChunker::commit(size_t n) {
  if (n > 0) feed({room_.get(), std::min(n, room_size_)});
}

void LineChunker::scan() {
  // Find new line ends; cut over-long lines so memory stays bounded.
  size_t line_start = complete_end_;
  size_t pos = scan_from_;
  while (pos < buffer_.size()) {
    const void* nl = std::memchr(buffer_.data() + pos, '\n', buffer_.size() - pos);
    size_t end = nl ? static_cast<const char*>(nl) - buffer_.data() : buffer_.size();
    if (end - line_start >= max_line_) {
      size_t cut = line_start + max_line_;
      buffer_.insert(cut, 1, '\n');
      line_start = cut + 1;
      complete_end_ = line_start;
      ++complete_lines_;
      pos = line_start;
      continue;
    }
    if (!nl) {
      pos = buffer_.size();
      break;
    }
    line_start = end + 1;
    complete_end_ = line_start;
    ++complete_lines_;
    pos = line_start;
  }
  scan_from_ = pos;
}

LineChunk LineChunker::take(size_t max_bytes) {
  LineChunk chunk;
  if (complete_end_ == 0) return chunk;
  size_t end = complete_end_;
  size_t lines = complete_lines_;
  if (end > max_bytes) {
    // Cut after the last newline at or before max_bytes (or after the first line).
    size_t cut = buffer_.rfind('\n', max_bytes - 1);
    if (cut == std::string::npos) cut = buffer_.find('\n');
    end = cut + 1;
    lines = 0;
    for (const char* p = buffer_.data();
         (p = static_cast<const char*>(std::memchr(p, '\n', buffer_.data() + end - p))); ++p)
      ++lines;
  }
  if (end >= buffer_.size() - end) {
    // The chunk is most of the buffer (a fast writer's read): the buffer
    // itself goes, only what follows it is copied (it was the other way
    // round: a copy of every byte of output on the pump's thread).
    std::string rest;
    // Room for what follows without a regrowth per read (reserve does not
    // touch the bytes).
    rest.reserve(std::max(end, buffer_.size() - end));
    rest.append(buffer_, end);
    buffer_.resize(end);
    chunk.data = std::move(buffer_);
    buffer_ = std::move(rest);
  } else {
    chunk.data.assign(buffer_, 0, end);
    buffer_.erase(0, end);
  }
  chunk.lines = static_cast<int>(lines);
  complete_end_ -= end;
  complete_lines_ -= lines;
  scan_from_ -= end;
  return chunk;
}

LineChunk LineChunker::take_rest() {
  LineChunk chunk = take(buffer_.size() + 1);
  if (!buffer_.empty()) {
    chunk.data += buffer_;
    chunk.data += '\n';
    ++chunk.lines;
    buffer_.clear();
    complete_end_ = complete_lines_ = scan_from_ = 0;
  }
  return chunk;
}

LineChunk LineChunker::take_partial() {
  LineChunk chunk = take(buffer_.size() + 1);
  if (!buffer_.empty()) {
    chunk.data += buffer_;
    buffer_.clear();
    complete_end_ = complete_lines_ = scan_from_ = 0;
  }
  return chunk;
}

}  // namespace atl::os

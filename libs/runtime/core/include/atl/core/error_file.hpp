// A rank's own account of why it failed: the file torchelastic's @record
// (torch.distributed.elastic.multiprocessing.errors) writes to
// $TORCHELASTIC_ERROR_FILE when the rank's main raises, as torchrun reads it.
// atl gives every rank that variable and puts the file's first line in the
// failure ("job failed: rank 3 on pod … exited with code 1: RuntimeError: …").
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace atl {

// Longest summary kept (a message can be a whole tensor's repr).
constexpr std::size_t kErrorSummaryMax = 300;

// The first non-blank line of the file's message, trimmed, at most
// kErrorSummaryMax bytes (then "…"): from {"message": {"message": "T: m",
// "extraInfo": {...}}} (Python's @record) or {"message": "text"} (what a
// C++ rank may write). None for anything else: no file, not JSON, no message.
std::optional<std::string> error_file_summary(std::string_view text);

}  // namespace atl

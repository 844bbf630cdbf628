// Refusal: why a piece said no to a request, as the caller (atlctl, a
// driver, a joining pod) is told: a ReplyCode and one line.
#pragma once

#include <string>

#include "atl/core/reply_code.hpp"

namespace atl::supervisor {

struct Refusal {
  ReplyCode code = ReplyCode::refused;
  std::string text;
  // A refusal only for now (a join whose pod's old self is still registered
  // and about to be declared lost): the caller should try again.
  bool retry = false;
};

}  // namespace atl::supervisor

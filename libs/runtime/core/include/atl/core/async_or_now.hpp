// Work on a thread of its own, or, where no thread can be made (a pod at its
// pid limit), now on the caller's: slower, never a crash.
#pragma once

#include <future>
#include <system_error>
#include <type_traits>
#include <utility>

namespace atl {

template <class Work>
std::future<std::invoke_result_t<Work>> async_or_now(Work work) {
  try {
    return std::async(std::launch::async, work);
  } catch (const std::system_error&) {
    std::promise<std::invoke_result_t<Work>> done;
    done.set_value(work());
    return done.get_future();
  }
}

}  // namespace atl

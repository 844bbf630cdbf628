// Calls into a shared object from any thread, and the one that ends it: a
// call holds a Pass from its first read of the object to its last, close()
// refuses new passes, wait_idle() returns once the last pass is released.
// libatl's client frees itself only then: a call that had its answer (or its
// "disconnected") but had not yet returned still read the client, and a
// driver's thread did so after atl_disconnect had freed it (a segfault).
#pragma once

#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <optional>

namespace atl {

class CallGate {
 public:
  // Held for the length of one call; released by its destructor.
  class Pass {
   public:
    Pass(Pass&& other) noexcept : gate_(other.gate_) { other.gate_ = nullptr; }
    Pass(const Pass&) = delete;
    Pass& operator=(const Pass&) = delete;
    Pass& operator=(Pass&&) = delete;
    ~Pass() {
      if (gate_) gate_->leave();
    }

   private:
    friend class CallGate;
    explicit Pass(CallGate* gate) : gate_(gate) {}
    CallGate* gate_;
  };

  CallGate() = default;
  CallGate(const CallGate&) = delete;
  CallGate& operator=(const CallGate&) = delete;

  // A pass, or none once close() was called.
  std::optional<Pass> enter() {
    std::lock_guard<std::mutex> lock(mutex_);
    if (closed_) return std::nullopt;
    ++inside_;
    return Pass(this);
  }

  // Refuses every later enter(); passes already held stay valid. True the
  // first time only.
  bool close() {
    std::lock_guard<std::mutex> lock(mutex_);
    bool first = !closed_;
    closed_ = true;
    return first;
  }

  // Returns once no pass is held (at once when none is). Callers close()
  // first, or new passes may keep it waiting.
  void wait_idle() {
    std::unique_lock<std::mutex> lock(mutex_);
    idle_.wait(lock, [this] { return inside_ == 0; });
  }

  bool closed() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return closed_;
  }

  std::size_t inside() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return inside_;
  }

 private:
  void leave() {
    std::lock_guard<std::mutex> lock(mutex_);
    // Notified under the lock: the waiter may free this gate as soon as it
    // sees zero, and must not find the condition variable gone mid-notify.
    if (--inside_ == 0) idle_.notify_all();
  }

  mutable std::mutex mutex_;
  std::condition_variable idle_;
  std::size_t inside_ = 0;
  bool closed_ = false;
};

}  // namespace atl

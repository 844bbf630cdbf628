#include "atl/os/logging.hpp"

#include <spdlog/sinks/base_sink.h>
#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>
#include <mutex>

namespace atl {

namespace {

// Hands each formatted line to the forwarder, when one is set.
class ForwardSink : public spdlog::sinks::base_sink<std::mutex> {
 public:
  void set(std::function<void(const std::string&)> forward) {
    std::lock_guard<std::mutex> lock(forward_mutex_);
    forward_ = std::move(forward);
  }

 protected:
  void sink_it_(const spdlog::details::log_msg& msg) override {
    std::function<void(const std::string&)> forward;
    {
      std::lock_guard<std::mutex> lock(forward_mutex_);
      forward = forward_;
    }
    if (!forward) return;
    spdlog::memory_buf_t formatted;
    formatter_->format(msg, formatted);
    std::string line(formatted.data(), formatted.size());
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.pop_back();
    forward(line);
  }
  void flush_() override {}

 private:
  std::mutex forward_mutex_;
  std::function<void(const std::string&)> forward_;
};

std::shared_ptr<ForwardSink>& forward_sink() {
  static auto sink = std::make_shared<ForwardSink>();
  return sink;
}

}  // namespace

void set_log_forwarder(std::function<void(const std::string& line)> forward) {
  forward_sink()->set(std::move(forward));
}

std::shared_ptr<spdlog::logger> component_logger(const std::string& name) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = spdlog::stderr_logger_mt(name);
  logger->sinks().push_back(forward_sink());
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v");
  const char* level = std::getenv("ATL_LOG_LEVEL");
  logger->set_level(level ? spdlog::level::from_str(level) : spdlog::level::info);
  return logger;
}

}  // namespace atl

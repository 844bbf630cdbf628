#include "atl/os/logging.hpp"

#include <spdlog/sinks/stdout_sinks.h>

#include <cstdlib>
#include <mutex>

namespace atl {

std::shared_ptr<spdlog::logger> component_logger(const std::string& name) {
  static std::mutex mutex;
  std::lock_guard<std::mutex> lock(mutex);
  if (auto existing = spdlog::get(name)) return existing;
  auto logger = spdlog::stderr_logger_mt(name);
  logger->set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%n] [%l] %v");
  const char* level = std::getenv("ATL_LOG_LEVEL");
  logger->set_level(level ? spdlog::level::from_str(level) : spdlog::level::info);
  return logger;
}

}  // namespace atl

// One spdlog logger per component, on stderr; level from ATL_LOG_LEVEL.
// User output never goes through these loggers.
#pragma once

#include <spdlog/spdlog.h>

#include <functional>
#include <memory>
#include <string>

namespace atl {

std::shared_ptr<spdlog::logger> component_logger(const std::string& name);

// Every line any component logger writes (as on stderr, without the newline)
// also goes to `forward`, from whatever thread logged it; it must not log
// itself. An empty function stops forwarding. (The head's and node agents'
// own logs reach the head's log directory this way.)
void set_log_forwarder(std::function<void(const std::string& line)> forward);

}  // namespace atl

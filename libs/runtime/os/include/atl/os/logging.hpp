// One spdlog logger per component, on stderr; level from ATL_LOG_LEVEL.
// User output never goes through these loggers.
#pragma once

#include <spdlog/spdlog.h>

#include <memory>
#include <string>

namespace atl {

std::shared_ptr<spdlog::logger> component_logger(const std::string& name);

}  // namespace atl

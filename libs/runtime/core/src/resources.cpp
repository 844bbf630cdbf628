#include "atl/core/resources.hpp"

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "atl/core/json_errors.hpp"
#include "atl/core/quote.hpp"

namespace atl {

namespace {

constexpr double kMaxAmount = 1e15;
constexpr size_t kMaxNameLength = 64;

bool valid_name(std::string_view name) {
  if (name.empty() || name.size() > kMaxNameLength) return false;
  for (char c : name) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.' || c == ':';
    if (!ok) return false;
  }
  return true;
}

}  // namespace

Expected<Resources> parse_resources(std::string_view json_text) {
  auto j = nlohmann::json::parse(json_text.begin(), json_text.end(), nullptr, false);
  if (j.is_discarded())
    return make_error("resources must be a JSON object of name -> amount, got " + quote(json_text) +
                      ": " + json_syntax_error(json_text));
  if (!j.is_object())
    return make_error("resources must be a JSON object of name -> amount, got " + quote(json_text));
  Resources out;
  for (const auto& [name, value] : j.items()) {
    if (!valid_name(name))
      return make_error("bad resource name " + quote(name) +
                        " (letters, digits, _ - . : and at most 64 characters)");
    if (!value.is_number()) return make_error("resource " + quote(name) + " must be a number");
    double amount = value.get<double>();
    if (!std::isfinite(amount) || amount < 0 || amount > kMaxAmount)
      return make_error("resource " + quote(name) + " must be between 0 and 1e15");
    double units = amount * kResourceUnit;
    if (std::fabs(units - std::round(units)) > 1e-6 * std::max(1.0, units))
      return make_error("resource " + quote(name) +
                        " must be a multiple of 0.0001 (Ray's precision)");
    out[name] = static_cast<std::int64_t>(std::llround(units));
  }
  return out;
}

Expected<Resources> parse_bundle(std::string_view json_text) {
  auto r = parse_resources(json_text);
  if (!r) return r;
  for (const auto& [name, units] : *r)
    if (units > 0) return r;
  return make_error("a bundle must ask for some resource (all amounts are 0 in " +
                    quote(json_text) + ")");
}

Resources node_resources(int cpus, int gpus, std::int64_t memory, std::int64_t shm,
                         const Resources& custom) {
  Resources r = custom;
  r[kCpu] = std::int64_t{cpus} * kResourceUnit;
  r[kGpu] = std::int64_t{gpus} * kResourceUnit;
  r[kMemory] = memory * kResourceUnit;
  r[kShm] = shm * kResourceUnit;
  return r;
}

std::string format_amount(std::int64_t units) {
  if (units % kResourceUnit == 0) return std::to_string(units / kResourceUnit);
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4f", static_cast<double>(units) / kResourceUnit);
  std::string s = buf;
  while (!s.empty() && s.back() == '0') s.pop_back();
  return s;
}

std::string format_resources(const Resources& r) {
  std::string out = "{";
  for (const auto& [name, units] : r) {
    if (units == 0) continue;
    if (out.size() > 1) out += ", ";
    out += "\"" + name + "\": " + format_amount(units);
  }
  return out + "}";
}

Resources add(const Resources& a, const Resources& b) {
  Resources out = a;
  for (const auto& [name, units] : b) out[name] += units;
  return out;
}

Resources subtract(const Resources& a, const Resources& b) {
  Resources out = a;
  for (const auto& [name, units] : b) out[name] -= units;
  return out;
}

std::string first_shortfall(const Resources& need, const Resources& have) {
  for (const auto& [name, units] : need) {
    if (units <= 0) continue;
    auto it = have.find(name);
    if (it == have.end() || it->second < units) return name;
  }
  return "";
}

bool fits(const Resources& need, const Resources& have) {
  return first_shortfall(need, have).empty();
}

}  // namespace atl

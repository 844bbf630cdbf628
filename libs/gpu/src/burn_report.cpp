#include "atl/gpu/burn_report.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

namespace atl::gpu {

std::string format_gemm_round(const GemmRound& r, const std::string& elapsed) {
  char line[512];
  std::snprintf(line, sizeof line, "%s GPU %d round %d (%s): gemm %.3f TFLOP/s, %s", r.pod.c_str(),
                r.gpu, r.round, elapsed.c_str(), r.tflops,
                r.verified ? "verified" : "WRONG RESULTS");
  return line;
}

std::string format_transfer_round(const TransferRound& r, const std::string& elapsed) {
  char line[512];
  std::snprintf(line, sizeof line,
                "%s GPU %d round %d (%s): H2D %.1f GB/s, D2H %.1f GB/s, both %.1f GB/s, D2D %.1f "
                "GB/s, %s",
                r.pod.c_str(), r.gpu, r.round, elapsed.c_str(), r.h2d_gbps, r.d2h_gbps, r.both_gbps,
                r.d2d_gbps, r.checksum_ok ? "checksum ok" : "CHECKSUM MISMATCH");
  return line;
}

namespace {

// A cursor over one line: each step consumes what it matched or fails.
struct Cursor {
  std::string_view s;

  bool literal(std::string_view lit) {
    if (s.substr(0, lit.size()) != lit) return false;
    s.remove_prefix(lit.size());
    return true;
  }
  std::optional<int> integer() {
    std::size_t n = 0;
    long long v = 0;
    while (n < s.size() && n < 9 && s[n] >= '0' && s[n] <= '9') v = v * 10 + (s[n++] - '0');
    if (n == 0 || (n < s.size() && s[n] >= '0' && s[n] <= '9')) return std::nullopt;
    s.remove_prefix(n);
    return static_cast<int>(v);
  }
  // A plain decimal number: digits, at most one '.', no sign or exponent,
  // at most 1e12 (no burn figure comes near; what the formatters print for it
  // then fits in the 24 characters read here, so a figure round-trips).
  std::optional<double> number() {
    std::size_t n = 0;
    bool dot = false;
    while (n < s.size() && n < 24 &&
           ((s[n] >= '0' && s[n] <= '9') || (s[n] == '.' && !dot && n > 0))) {
      if (s[n] == '.') dot = true;
      ++n;
    }
    if (n == 0 || s[n - 1] == '.') return std::nullopt;
    std::string text(s.substr(0, n));
    char* end = nullptr;
    errno = 0;
    double v = std::strtod(text.c_str(), &end);
    if (errno != 0 || end != text.c_str() + text.size() || !std::isfinite(v) || v > 1e12)
      return std::nullopt;
    s.remove_prefix(n);
    return v;
  }
  // Up to (not including) `stop`, which must follow and must not be first.
  std::optional<std::string_view> until(std::string_view stop) {
    auto at = s.find(stop);
    if (at == std::string_view::npos || at == 0) return std::nullopt;
    auto got = s.substr(0, at);
    s.remove_prefix(at);
    return got;
  }
};

bool plain_word(std::string_view w) {
  for (char c : w)
    if (c <= ' ' || c > '~') return false;
  return !w.empty();
}

// "<pod> GPU <gpu> round <n> (<elapsed>): " then the rest.
bool gpu_prefix(Cursor& c, std::string& pod, int& gpu, int& round) {
  auto name = c.until(" GPU ");
  if (!name || !plain_word(*name) || !c.literal(" GPU ")) return false;
  auto g = c.integer();
  if (!g || !c.literal(" round ")) return false;
  auto r = c.integer();
  if (!r || !c.literal(" (")) return false;
  auto elapsed = c.until("): ");
  if (!elapsed || elapsed->find(')') != std::string_view::npos || !c.literal("): ")) return false;
  pod = std::string(*name);
  gpu = *g;
  round = *r;
  return true;
}

std::optional<GemmRound> parse_gemm(std::string_view line) {
  Cursor c{line};
  GemmRound r;
  if (!gpu_prefix(c, r.pod, r.gpu, r.round) || !c.literal("gemm ")) return std::nullopt;
  auto t = c.number();
  if (!t || !c.literal(" TFLOP/s, ")) return std::nullopt;
  if (c.s != "verified" && c.s != "WRONG RESULTS") return std::nullopt;
  r.tflops = *t;
  r.verified = c.s == "verified";
  return r;
}

std::optional<TransferRound> parse_transfer(std::string_view line) {
  Cursor c{line};
  TransferRound r;
  if (!gpu_prefix(c, r.pod, r.gpu, r.round)) return std::nullopt;
  double* fields[] = {&r.h2d_gbps, &r.d2h_gbps, &r.both_gbps, &r.d2d_gbps};
  const char* names[] = {"H2D ", "D2H ", "both ", "D2D "};
  for (int i = 0; i < 4; ++i) {
    if (i > 0 && !c.literal(", ")) return std::nullopt;
    if (!c.literal(names[i])) return std::nullopt;
    auto v = c.number();
    if (!v || !c.literal(" GB/s")) return std::nullopt;
    *fields[i] = *v;
  }
  if (!c.literal(", ")) return std::nullopt;
  if (c.s != "checksum ok" && c.s != "CHECKSUM MISMATCH") return std::nullopt;
  r.checksum_ok = c.s == "checksum ok";
  return r;
}

std::optional<AllreduceRound> parse_allreduce(std::string_view line) {
  Cursor c{line};
  AllreduceRound r;
  if (!c.literal("Round ")) return std::nullopt;
  auto n = c.integer();
  if (!n || !c.literal(": AllReduce Perf(GB/s): Size=")) return std::nullopt;
  auto size = c.until(", BusBW=");
  if (!size || !plain_word(*size) || !c.literal(", BusBW=")) return std::nullopt;
  auto bus = c.number();
  if (!bus || !c.literal(" GB/s, AlgBW=")) return std::nullopt;
  auto alg = c.number();
  if (!alg || !c.literal(" GB/s, MasterAddr=") || !plain_word(c.s)) return std::nullopt;
  r.round = *n;
  r.size = std::string(*size);
  r.busbw_gbps = *bus;
  r.algbw_gbps = *alg;
  r.master = std::string(c.s);
  return r;
}

// One line (without its '\n') into the report, when it is one of its lines.
void add_line(BurnReport& report, std::string_view line) {
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (auto a = parse_allreduce(line)) {
    report.allreduce.push_back(std::move(*a));
  } else if (auto g = parse_gemm(line)) {
    report.gemm.push_back(std::move(*g));
  } else if (auto t = parse_transfer(line)) {
    report.transfer.push_back(std::move(*t));
  }
}

}  // namespace

BurnReport parse_burn_report(std::string_view text) {
  BurnReport report;
  while (!text.empty()) {
    auto nl = text.find('\n');
    add_line(report, text.substr(0, nl));
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
  }
  return report;
}

void BurnReportReader::feed(std::string_view bytes) {
  offset_ += static_cast<std::int64_t>(bytes.size());
  while (!bytes.empty()) {
    auto nl = bytes.find('\n');
    if (nl == std::string_view::npos) {
      // A line still being written waits for its end; one longer than any
      // report line is not one, and is dropped up to its end.
      if (!skipping_) partial_.append(bytes);
      if (partial_.size() > kMaxLine) {
        partial_.clear();
        skipping_ = true;
      }
      return;
    }
    if (!skipping_) {
      if (partial_.empty()) {
        add_line(report_, bytes.substr(0, nl));
      } else {
        partial_.append(bytes.substr(0, nl));
        if (partial_.size() <= kMaxLine) add_line(report_, partial_);
      }
    }
    partial_.clear();
    skipping_ = false;
    bytes.remove_prefix(nl + 1);
  }
}

std::string burn_report_json(const BurnReport& report) {
  nlohmann::json j{{"gemm", nlohmann::json::array()},
                   {"transfer", nlohmann::json::array()},
                   {"allreduce", nlohmann::json::array()}};
  for (const auto& g : report.gemm)
    j["gemm"].push_back({{"pod", g.pod},
                         {"gpu", g.gpu},
                         {"round", g.round},
                         {"tflops", g.tflops},
                         {"verified", g.verified}});
  for (const auto& t : report.transfer)
    j["transfer"].push_back({{"pod", t.pod},
                             {"gpu", t.gpu},
                             {"round", t.round},
                             {"h2d_gbps", t.h2d_gbps},
                             {"d2h_gbps", t.d2h_gbps},
                             {"both_gbps", t.both_gbps},
                             {"d2d_gbps", t.d2d_gbps},
                             {"checksum_ok", t.checksum_ok}});
  for (const auto& a : report.allreduce)
    j["allreduce"].push_back({{"round", a.round},
                              {"size", a.size},
                              {"busbw_gbps", a.busbw_gbps},
                              {"algbw_gbps", a.algbw_gbps},
                              {"master", a.master}});
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace atl::gpu

// libFuzzer targets for every parser that takes outside input. One binary;
// ATL_FUZZ_TARGET picks the parser (tests/fuzz/run.sh runs each in turn).
// A target fails by crashing, by a sanitizer report, or by an assert below:
// a parse that succeeds must give a value that the same parser takes again.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "atl/core/byte_size.hpp"
#include "atl/core/dashboard_auth.hpp"
#include "atl/core/duration.hpp"
#include "atl/core/env.hpp"
#include "atl/core/host_port.hpp"
#include "atl/core/http_proxy.hpp"
#include "atl/core/job_spec.hpp"
#include "atl/core/metrics.hpp"
#include "atl/core/placement.hpp"
#include "atl/core/rank_set.hpp"
#include "atl/core/sse.hpp"
#include "atl/core/stacks.hpp"
#include "atl/gpu/burn_types.hpp"
#include "atl/gpu/rendezvous.hpp"
#include "atl/gpu/xid.hpp"
#include "atl/os/job_pointer.hpp"

namespace {

[[noreturn]] void broken(const char* what) {
  std::fprintf(stderr, "fuzz invariant broken: %s\n", what);
  std::abort();
}

void one_line_error(const std::string& error) {
  if (error.empty()) broken("an error without a message");
  if (error.find('\n') != std::string::npos) broken("an error of more than one line");
  if (error.size() > 4096) broken("an error line of more than 4 KiB");
}

template <class T>
void check_error(const atl::Expected<T>& r) {
  if (!r) one_line_error(r.error());
}

void fuzz_spec(std::string_view in) {
  auto spec = atl::parse_job_spec_json(in);
  check_error(spec);
  if (spec) check_error(atl::Expected<atl::Ok>(atl::validate_job_spec(*spec)));
}

void fuzz_ranks(std::string_view in) {
  // The first byte picks the world size, the rest is the rank set.
  int world = in.empty() ? 1 : static_cast<unsigned char>(in[0]) * 40 + 1;
  auto ranks = atl::parse_rank_set(in.empty() ? in : in.substr(1), world);
  check_error(ranks);
  if (ranks)
    for (int r : *ranks)
      if (r < 0 || r >= world) broken("a rank outside the world");
}

void fuzz_envs(std::string_view in) {
  check_error(atl::parse_env_spec(in));
  check_error(atl::parse_env_assignment(in));
  check_error(atl::parse_worker_list(in));
}

void fuzz_duration(std::string_view in) {
  auto d = atl::parse_duration(in);
  check_error(d);
  if (d) {
    if (d->count() < 0 || *d > atl::kMaxDuration) broken("a duration out of bounds");
    auto again = atl::parse_duration(atl::format_duration(*d));
    if (!again || *again != *d) broken("format_duration does not round-trip");
  }
}

void fuzz_size(std::string_view in) {
  auto s = atl::parse_byte_size(in);
  check_error(s);
  if (s && *s < 0) broken("a negative size");
  check_error(atl::gpu::parse_burn_size(in));
  // atlctl burn --sizes / atl-burn --sizes: a list or a BEGIN:END[:FACTOR] sweep.
  auto spec = atl::gpu::parse_size_spec(in);
  check_error(spec);
  if (spec) {
    if (spec->empty() || spec->size() > 64) broken("a size spec outside 1..64 sizes");
    for (auto size : *spec)
      if (size < 4) broken("a size spec below one float");
    auto again = atl::gpu::parse_size_spec(atl::gpu::format_size_list(*spec));
    if (!again || *again != *spec) broken("format_size_list does not round-trip");
  }
}

void fuzz_host_port(std::string_view in) {
  auto hp = atl::parse_host_port(in);
  check_error(hp);
  if (hp) {
    auto again = atl::parse_host_port(hp->to_string());
    if (!again || again->host != hp->host || again->port != hp->port)
      broken("host:port does not round-trip");
  }
}

void fuzz_control(std::string_view in) {
  check_error(atl::gpu::decode_hello(in));
  check_error(atl::gpu::decode_reply(in));
  auto figure = atl::gpu::decode_figure(in);
  check_error(figure);
  if (figure) {  // what decodes encodes to a line that decodes again
    auto line = atl::gpu::encode_figure(*figure);
    auto again =
        atl::gpu::decode_figure(std::string_view(line).substr(atl::gpu::kFigureVerb.size()));
    if (!again || again->gpu != figure->gpu || again->metric != figure->metric ||
        again->size != figure->size || again->round != figure->round)
      broken("a figure that does not survive its own encoding");
  }
  (void)atl::gpu::parse_xid_line(in);
}

// Resources and placement: the first byte picks the strategy and how many
// copies of the bundle (the rest, as JSON) go on three nodes of 4 CPUs, 2
// GPUs and one "slot". A placement found must fit and obey the strategy.
void fuzz_placement(std::string_view in) {
  check_error(atl::parse_resources(in));
  check_error(atl::parse_placement_strategy(in));
  if (in.empty()) return;
  const auto strategy = static_cast<atl::PlacementStrategy>(static_cast<unsigned char>(in[0]) % 4);
  const size_t copies = static_cast<unsigned char>(in[0]) / 4 % 8 + 1;
  auto bundle = atl::parse_bundle(in.substr(1));
  check_error(bundle);
  if (!bundle) return;
  std::vector<atl::PlacementNode> nodes;
  for (int i = 0; i < 3; ++i) {
    atl::Resources total = atl::node_resources(4, 2, 1 << 30, 0, {{"slot", atl::kResourceUnit}});
    nodes.push_back({"n" + std::to_string(i), total, total, i == 2 ? "tainted" : ""});
  }
  std::vector<atl::Resources> bundles(copies, *bundle);
  auto placed = atl::place_bundles(bundles, strategy, nodes);
  check_error(placed);
  if (!placed) return;
  std::vector<atl::Resources> used(nodes.size());
  for (size_t b = 0; b < placed->size(); ++b) {
    size_t n = (*placed)[b];
    if (n >= nodes.size() || !nodes[n].unavailable.empty())
      broken("a bundle on a node that takes none");
    used[n] = atl::add(used[n], bundles[b]);
  }
  for (size_t n = 0; n < nodes.size(); ++n)
    if (!atl::fits(used[n], nodes[n].total)) broken("a node given more than it has");
}

// The job file a pod's shell reads (/run/atl/job.json): a pointer parsed
// must render to JSON that parses back to the same pointer.
void fuzz_job_file(std::string_view in) {
  auto p = atl::os::parse_job_pointer(in);
  check_error(p);
  if (!p) return;
  auto again = atl::os::parse_job_pointer(atl::os::to_json(*p));
  if (!again || again->address != p->address || again->tls_dir != p->tls_dir ||
      again->insecure != p->insecure || again->job_id != p->job_id || again->pod != p->pod)
    broken("a job file that does not survive its own JSON");
}

// /metrics: status JSON, a NUL, log counters JSON. Rendered text has only
// whole lines, each a comment or a sample "name{labels} value".
void fuzz_metrics(std::string_view in) {
  auto cut = in.find('\0');
  std::string_view status = in.substr(0, cut);
  std::string_view logs = cut == std::string_view::npos ? "{}" : in.substr(cut + 1);
  auto text = atl::prometheus_text(status, logs);
  check_error(text);
  if (!text) return;
  if (!text->empty() && text->back() != '\n') broken("metrics text without a final newline");
  size_t start = 0;
  while (start < text->size()) {
    size_t end = text->find('\n', start);
    std::string_view line(text->data() + start, end - start);
    if (line.empty()) broken("an empty metrics line");
    if (line[0] != '#' && line.find(' ') == std::string_view::npos)
      broken("a sample without value");
    start = end + 1;
  }
}

// A rank's stack as py-spy or gdb printed it (or anything else): parsed
// without a crash, and its signature stable under a second parse of the
// same text; grouping never blames every rank.
void fuzz_stacks(std::string_view in) {
  for (auto threads : {atl::parse_py_spy(in), atl::parse_gdb(in)}) {
    auto sig = atl::stack_signature(threads);
    if (!sig.empty() && atl::stack_top(threads).empty()) broken("a signature without a top frame");
  }
  auto first = atl::stack_signature(atl::parse_py_spy(in));
  if (first != atl::stack_signature(atl::parse_py_spy(in))) broken("an unstable signature");
  std::vector<atl::RankStack> ranks;
  for (size_t i = 0; i < in.size() && i < 16; ++i)
    ranks.push_back({static_cast<std::int32_t>(i), "p", std::string(1, in[i]), "t",
                     "STDR"[static_cast<unsigned char>(in[i]) % 4]});
  auto d = atl::group_stacks(ranks);
  if (!ranks.empty() && d.outliers.size() >= ranks.size()) broken("every rank blamed");
}

// What the dashboard takes from a request: a Cookie header, an Authorization
// header, a Last-Event-ID; and what it sends a follower, built from a log.
void fuzz_dashboard(std::string_view in) {
  if (auto c = atl::cookie_value(in, "atl_session"); c && c->empty())
    broken("an empty session cookie");
  if (auto b = atl::bearer_token(in); b && (b->empty() || b->find(' ') != std::string::npos))
    broken("a bearer token that is empty or holds a space");
  if (auto id = atl::parse_event_id(in); id && *id < 0) broken("a negative event id");
  (void)atl::validate_dashboard_token(in);
  std::string event = atl::sse_log_event(in, 42, 0);
  if (event.find('\r') != std::string::npos) broken("a CR inside an event");
  if (event.find("\n\n") != event.size() - 2) broken("a log piece that ends its event early");
  if (event.rfind("id: 42\ndata: ", 0) != 0) broken("an event without its id first");
  // The /ray/ relay: a target it sends on is under the prefix, free of
  // controls and spaces (a request line's bytes); atl's credentials never go.
  if (auto t = atl::proxied_target(in, "/ray")) {
    if (t->empty() || ((*t)[0] != '/')) broken("a relayed target that does not start with /");
    for (unsigned char c : *t)
      if (c <= 0x20 || c == 0x7f) broken("a control or space in a relayed target");
  }
  atl::HeaderList h = {
      {"Cookie", std::string(in)}, {"Connection", std::string(in)}, {std::string(in), "x"}};
  for (const auto& [k, v] : atl::upstream_request_headers(h, "Bearer t", "1.2.3.4", "/ray"))
    if (v == std::string(in) && (k == "Cookie" || k == "Connection"))
      broken("a browser's cookie or hop-by-hop header relayed");
  auto next = atl::login_next(in);
  if (!next.empty() && (next[0] != '/' || (next.size() > 1 && next[1] == '/') ||
                        next.find_first_of("\"'<> ") != std::string::npos))
    broken("a login next that leaves the dashboard or needs escaping");
}

using Target = void (*)(std::string_view);

Target chosen() {
  static Target target = [] {
    const char* name = std::getenv("ATL_FUZZ_TARGET");
    std::string n = name ? name : "";
    if (n == "spec") return &fuzz_spec;
    if (n == "ranks") return &fuzz_ranks;
    if (n == "envs") return &fuzz_envs;
    if (n == "duration") return &fuzz_duration;
    if (n == "size") return &fuzz_size;
    if (n == "hostport") return &fuzz_host_port;
    if (n == "control") return &fuzz_control;
    if (n == "placement") return &fuzz_placement;
    if (n == "jobfile") return &fuzz_job_file;
    if (n == "metrics") return &fuzz_metrics;
    if (n == "stacks") return &fuzz_stacks;
    if (n == "dashboard") return &fuzz_dashboard;
    std::fprintf(stderr,
                 "set ATL_FUZZ_TARGET to spec, ranks, envs, duration, size, hostport, control, "
                 "placement, jobfile, metrics, stacks or dashboard\n");
    std::exit(2);
  }();
  return target;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  chosen()(std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}

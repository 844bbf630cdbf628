#include "atl/core/collectives.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <set>

#include "atl/core/stacks.hpp"

namespace atl {

namespace {

using nlohmann::json;

// pg_status holds numbers as strings ("10") in format 2.10, numbers elsewhere.
std::int64_t number(const json& v, std::int64_t otherwise = -1) {
  if (v.is_number_integer()) return v.get<std::int64_t>();
  if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    char* end = nullptr;
    const long long n = std::strtoll(s.c_str(), &end, 10);
    if (!s.empty() && end && *end == '\0') return n;
  }
  return otherwise;
}

std::string text(const json& v) { return v.is_string() ? v.get<std::string>() : std::string(); }

// "gloo:all_reduce", "nccl:all_reduce" -> "all_reduce"
std::string op_name(const std::string& profiling) {
  const size_t colon = profiling.find(':');
  return colon == std::string::npos ? profiling : profiling.substr(colon + 1);
}

bool by_id(const GroupProgress& a, const GroupProgress& b) {
  const long long x = std::strtoll(a.id.c_str(), nullptr, 10);
  const long long y = std::strtoll(b.id.c_str(), nullptr, 10);
  return x != y ? x < y : a.id < b.id;
}

// One torch dump: pg_status where it has one (2.4+), the entries for the
// ops' names (and for the sequence numbers where there is no pg_status).
void read_dump(const json& trace, std::map<std::string, GroupProgress>& groups) {
  if (!trace.is_object()) return;
  const json& status = trace.contains("pg_status") ? trace["pg_status"] : json();
  if (status.is_object())
    for (const auto& [id, s] : status.items()) {
      if (!s.is_object()) continue;
      GroupProgress& g = groups[id];
      g.id = id;
      g.enqueued = std::max(g.enqueued, number(s.value("last_enqueued_collective", json())));
      g.completed = std::max(g.completed, number(s.value("last_completed_collective", json())));
    }
  const json& entries = trace.contains("entries") ? trace["entries"] : json();
  if (!entries.is_array()) return;
  // Where there is no pg_status, the entries say it.
  const bool derive = !status.is_object() || status.empty();
  for (const auto& e : entries) {
    if (!e.is_object() || e.value("is_p2p", false)) continue;
    const json& pg = e.contains("process_group") ? e["process_group"] : json();
    std::string id = pg.is_array() && !pg.empty() ? text(pg[0]) : std::string();
    if (id.empty() && e.contains("pg_id")) id = std::to_string(number(e["pg_id"]));
    if (id.empty() || id == "-1") continue;
    const std::int64_t seq = number(e.value("collective_seq_id", json()));
    if (derive) {
      GroupProgress& g = groups[id];
      g.id = id;
      g.enqueued = std::max(g.enqueued, seq);
      if (text(e.value("state", json())) == "completed") g.completed = std::max(g.completed, seq);
    }
    auto found = groups.find(id);
    if (found == groups.end()) continue;
    GroupProgress& g = found->second;
    if (pg.is_array() && pg.size() > 1 && g.name.empty()) g.name = text(pg[1]);
    if (seq == g.enqueued) g.op = op_name(text(e.value("profiling_name", json())));
  }
}

bool is_default(const GroupProgress& g) { return g.id == "0" || g.name == "default_pg"; }

std::string group_words(const GroupProgress& g, const std::vector<std::int32_t>& members) {
  if (is_default(g)) return "the default group";
  const bool named = !g.name.empty() && g.name != "undefined";
  std::string ranks = rank_words(members);
  return "group " + (named ? g.name : g.id) + " (" + ranks + ")";
}

std::string collective_words(const std::string& op, std::int64_t seq) {
  return (op.empty() ? std::string("collective") : op) + " #" + std::to_string(seq);
}

}  // namespace

Expected<RankCollectives> parse_flight_record(std::string_view text_in) {
  json doc = json::parse(text_in.begin(), text_in.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return make_error("not a flight record (not JSON)");
  RankCollectives out;
  std::map<std::string, GroupProgress> groups;
  if (doc.contains("dumps")) {  // atl's hook
    if (!doc["torch"].is_string()) return make_error("no torch in the process");
    out.torch = doc["torch"].get<std::string>();
    const json& dumps = doc["dumps"];
    if (!dumps.is_array() || dumps.empty())
      return make_error("torch " + out.torch + " has no flight recorder (2.5 or later has)");
    for (const auto& d : dumps)
      if (d.is_object() && d.contains("trace")) read_dump(d["trace"], groups);
  } else {
    read_dump(doc, groups);
  }
  for (auto& [id, g] : groups)
    if (g.enqueued >= 0) out.groups.push_back(std::move(g));
  if (out.groups.empty())
    return make_error(
        "the flight recorder saw no collective (off: TORCH_FR_BUFFER_SIZE=0, "
        "or none yet)");
  std::sort(out.groups.begin(), out.groups.end(), by_id);
  return out;
}

std::string to_json(const RankCollectives& r) {
  json groups = json::array();
  for (const auto& g : r.groups)
    groups.push_back({{"id", g.id},
                      {"name", g.name},
                      {"enqueued", g.enqueued},
                      {"completed", g.completed},
                      {"op", g.op}});
  return json{{"torch", r.torch}, {"groups", groups}}.dump();
}

Expected<RankCollectives> parse_collectives(std::string_view text_in) {
  json doc = json::parse(text_in.begin(), text_in.end(), nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc["groups"].is_array())
    return make_error("not a collectives summary");
  RankCollectives out;
  out.torch = text(doc["torch"]);
  for (const auto& g : doc["groups"]) {
    if (!g.is_object()) return make_error("not a collectives summary");
    out.groups.push_back({text(g.value("id", json())), text(g.value("name", json())),
                          number(g.value("enqueued", json())), number(g.value("completed", json())),
                          text(g.value("op", json()))});
  }
  return out;
}

CollectiveDiagnosis diagnose_collectives(const std::map<std::int32_t, RankCollectives>& records,
                                         const std::vector<std::int32_t>& asked) {
  CollectiveDiagnosis d;
  for (auto rank : asked)
    if (!records.count(rank)) d.without_record.push_back(rank);
  std::sort(d.without_record.begin(), d.without_record.end());

  // Each group's members, and where each rank waits (a collective it
  // entered that has not finished).
  struct Member {
    std::int32_t rank;
    GroupProgress g;
  };
  std::map<std::string, std::vector<Member>> members;
  std::map<std::int32_t, std::string> waits_in;  // rank -> "all_reduce #6 on group 1 (...)"
  std::vector<GroupProgress> order;
  for (const auto& [rank, r] : records)
    for (const auto& g : r.groups) {
      auto& m = members[g.id];
      if (m.empty()) order.push_back(g);
      m.push_back({rank, g});
    }
  std::sort(order.begin(), order.end(), [](const GroupProgress& a, const GroupProgress& b) {
    if (is_default(a) != is_default(b)) return is_default(a);
    return by_id(a, b);
  });
  auto ranks_of = [](const std::vector<Member>& ms) {
    std::vector<std::int32_t> out;
    for (const auto& m : ms) out.push_back(m.rank);
    return out;
  };
  for (const auto& g : order) {
    const auto& ms = members[g.id];
    const std::string where = group_words(g, ranks_of(ms));
    for (const auto& m : ms)
      if (m.g.completed < m.g.enqueued && !waits_in.count(m.rank))
        waits_in[m.rank] = collective_words(m.g.op, m.g.enqueued) + " on " + where;
  }

  std::set<std::int32_t> culprits;
  for (const auto& g : order) {
    const auto& ms = members[g.id];
    std::int64_t top = -1;
    for (const auto& m : ms) top = std::max(top, m.g.enqueued);
    std::vector<std::int32_t> behind, waiting;
    std::map<std::string, std::vector<std::int32_t>> by_op;  // at `top`
    for (const auto& m : ms) {
      if (m.g.enqueued < top) {
        behind.push_back(m.rank);
      } else {
        by_op[m.g.op].push_back(m.rank);
        if (m.g.completed < top) waiting.push_back(m.rank);
      }
    }
    if (waiting.empty()) continue;  // nothing of this group in flight
    const std::string where = group_words(g, ranks_of(ms));
    // The op the most ranks entered at `top`, if one is the most.
    std::string major;
    std::size_t most = 0;
    bool tie = false;
    for (const auto& [op, rs] : by_op) {
      if (rs.size() > most) {
        major = op, most = rs.size(), tie = false;
      } else if (rs.size() == most) {
        tie = true;
      }
    }
    std::vector<std::int32_t> at_major = tie ? waiting : by_op[major];
    if (!behind.empty()) {
      std::vector<std::int32_t> roots;
      std::string elsewhere;
      for (auto rank : behind) {
        auto w = waits_in.find(rank);
        if (w == waits_in.end()) {
          roots.push_back(rank);
        } else if (elsewhere.size() < 200) {
          elsewhere += std::string(elsewhere.empty() ? " (" : "; ") + "rank " +
                       std::to_string(rank) + " waits in " + w->second;
        }
      }
      if (!elsewhere.empty()) elsewhere += ")";
      std::vector<std::int32_t> waiters;
      for (auto rank : waiting)
        if (tie || std::find(at_major.begin(), at_major.end(), rank) != at_major.end())
          waiters.push_back(rank);
      d.findings.push_back(rank_words(waiters) +
                           (waiters.size() == 1 ? " waits in " : " wait in ") +
                           collective_words(tie ? std::string() : major, top) + " on " + where +
                           "; " + rank_words(behind) + " never entered it" + elsewhere);
      // The ones the rest wait on: behind and in no collective themselves;
      // where every one behind waits elsewhere (a cycle), all of them.
      for (auto rank : roots.empty() ? behind : roots) culprits.insert(rank);
    }
    if (by_op.size() > 1 && !tie) {
      std::vector<std::int32_t> apart;
      std::string ops;
      for (const auto& [op, rs] : by_op)
        if (op != major) {
          apart.insert(apart.end(), rs.begin(), rs.end());
          ops += std::string(ops.empty() ? "" : ", ") + (op.empty() ? "another collective" : op);
        }
      std::sort(apart.begin(), apart.end());
      d.findings.push_back(rank_words(apart) + " entered " + ops + " #" + std::to_string(top) +
                           " on " + where + " where " + rank_words(by_op[major]) + " entered " +
                           (major.empty() ? std::string("another collective") : major));
      culprits.insert(apart.begin(), apart.end());
    } else if (by_op.size() > 1) {
      // Out of step, no side larger: said, nobody named by the records.
      std::string sides;
      for (const auto& [op, rs] : by_op)
        sides += std::string(sides.empty() ? "" : ", ") + rank_words(rs) + " in " +
                 (op.empty() ? std::string("another collective") : op);
      d.findings.push_back(where + " is out of step at #" + std::to_string(top) + ": " + sides);
    } else if (behind.empty()) {
      // All in the same collective: the fault is below them (a link, a
      // GPU) or in a rank without a record; nobody here to name.
      d.findings.push_back(rank_words(waiting) +
                           (waiting.size() == 1 ? " waits in " : " wait in ") +
                           collective_words(major, top) + " on " + where);
    }
  }
  d.culprits.assign(culprits.begin(), culprits.end());
  return d;
}

std::string collective_reason(const CollectiveDiagnosis& d,
                              const std::map<std::int32_t, std::string>& where) {
  std::string out;
  for (const auto& f : d.findings) out += (out.empty() ? "" : "; ") + f;
  std::size_t said = 0;
  for (auto rank : d.culprits) {
    auto w = where.find(rank);
    if (w == where.end() || w->second.empty() || said == 2) continue;
    out += "; " + w->second;
    ++said;
  }
  if (!d.without_record.empty())
    out += "; " + rank_words(d.without_record) + " gave no flight record";
  return out;
}

StackDiagnosis with_collectives(StackDiagnosis stacks, const std::vector<RankStack>& ranks,
                                const CollectiveDiagnosis& c) {
  if (c.culprits.empty()) {
    if (!stacks.outliers.empty() && !c.findings.empty())
      stacks.why += "; " + collective_reason(c, {});
    return stacks;
  }
  std::map<std::int32_t, std::string> where;
  for (const auto& r : ranks) {
    const std::string who = "rank " + std::to_string(r.rank);
    if (!r.blame.empty())
      where[r.rank] = r.blame;
    else if (r.state == 'T')
      where[r.rank] = who + " stopped (T)";
    else if (r.state == 'D')
      where[r.rank] = who + " in uninterruptible sleep (D)";
    else if (!r.top.empty())
      where[r.rank] = who + " in " + r.top;
  }
  stacks.outliers = c.culprits;
  stacks.why = collective_reason(c, where);
  return stacks;
}

}  // namespace atl

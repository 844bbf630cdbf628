#include "atl/core/stacks.hpp"

#include <algorithm>
#include <map>

namespace atl {

namespace {

// Calls `f(line)` for each line of `text` (without its '\n' or '\r').
template <class F>
void for_each_line(std::string_view text, F&& f) {
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    f(line);
    start = end + 1;
  }
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool starts_with(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }

// "file:123" -> file and 123; a tail that is not a number stays in the file.
void split_file_line(std::string_view text, StackFrame& f) {
  const size_t colon = text.rfind(':');
  if (colon != std::string_view::npos && colon + 1 < text.size()) {
    std::string_view digits = text.substr(colon + 1);
    if (digits.size() <= 9 &&
        std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) {
      f.file = std::string(text.substr(0, colon));
      f.line = std::stoi(std::string(digits));
      return;
    }
  }
  f.file = std::string(text);
}

// The text between the first '"' and the last '"' of `s`, or empty.
std::string quoted(std::string_view s) {
  const size_t a = s.find('"');
  const size_t b = s.rfind('"');
  if (a == std::string_view::npos || b <= a) return {};
  return std::string(s.substr(a + 1, b - a - 1));
}

std::string frame_text(const StackFrame& f) {
  return f.file.empty() ? f.function : f.function + " (" + f.file + ")";
}

const ThreadStack* main_thread(const std::vector<ThreadStack>& threads) {
  for (const auto& t : threads)
    if (t.main) return &t;
  return threads.empty() ? nullptr : &threads.front();
}

}  // namespace

std::string rank_words(const std::vector<std::int32_t>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size() && i < 8; ++i)
    out += (i ? "," : "") + std::to_string(ranks[i]);
  if (ranks.size() > 8) out += ",... (" + std::to_string(ranks.size()) + ")";
  return out;
}

std::vector<ThreadStack> parse_py_spy(std::string_view text) {
  std::vector<ThreadStack> threads;
  for_each_line(text, [&](std::string_view line) {
    if (starts_with(line, "Thread ")) {
      // Thread 7150 (idle): "MainThread"   |   Thread 0x7F2A1C (active+gil)
      ThreadStack t;
      std::string_view rest = line.substr(7);
      const size_t space = rest.find(' ');
      t.id = std::string(rest.substr(0, space));
      const size_t open = rest.find('(');
      const size_t close = rest.find(')', open == std::string_view::npos ? 0 : open);
      if (open != std::string_view::npos && close != std::string_view::npos)
        t.state = std::string(rest.substr(open + 1, close - open - 1));
      t.name = quoted(rest.substr(close == std::string_view::npos ? 0 : close));
      t.main = t.name == "MainThread";
      threads.push_back(std::move(t));
      return;
    }
    // Frames are indented by four spaces; deeper lines (--locals) are not frames.
    if (threads.empty() || !starts_with(line, "    ") || line.size() < 5 || line[4] == ' ') return;
    std::string_view body = trim(line);
    if (body.empty() || body.back() != ')') return;
    const size_t open = body.rfind(" (");
    if (open == std::string_view::npos) return;
    StackFrame f;
    f.function = std::string(trim(body.substr(0, open)));
    if (f.function.empty()) f.function = "??";  // a frame is never nameless
    split_file_line(body.substr(open + 2, body.size() - open - 3), f);
    threads.back().frames.push_back(std::move(f));
  });
  return threads;
}

std::vector<ThreadStack> parse_gdb(std::string_view text) {
  std::vector<ThreadStack> threads;
  for_each_line(text, [&](std::string_view line) {
    if (starts_with(line, "Thread ") && line.find("(LWP ") != std::string_view::npos) {
      // Thread 1 (Thread 0x7f90e6fe62c0 (LWP 7150) "python3"):
      ThreadStack t;
      std::string_view rest = line.substr(7);
      t.id = std::string(rest.substr(0, rest.find(' ')));
      t.name = quoted(rest);
      t.main = t.id == "1";
      threads.push_back(std::move(t));
      return;
    }
    if (threads.empty() || !starts_with(line, "#")) return;
    // #5  0x00007f90e2ca5023 in c10d::Reducer::finalize_backward() () from /lib/x.so
    // #0  __futex_abstimed_wait_common64 (private=0, ...) at ./nptl/futex-internal.c:57
    std::string_view body = line.substr(1);
    while (!body.empty() && body.front() >= '0' && body.front() <= '9') body.remove_prefix(1);
    body = trim(body);
    if (starts_with(body, "0x")) {
      const size_t in = body.find(" in ");
      if (in == std::string_view::npos) return;
      body = body.substr(in + 4);
    }
    StackFrame f;
    std::string_view head = body;
    const size_t at = body.rfind(") at ");
    const size_t from = body.rfind(") from ");
    if (at != std::string_view::npos) {
      head = body.substr(0, at + 1);
      split_file_line(body.substr(at + 5), f);
    } else if (from != std::string_view::npos) {
      head = body.substr(0, from + 1);
      f.file = std::string(body.substr(from + 7));
    }
    // The arguments are the last parenthesised group of the head.
    if (!head.empty() && head.back() == ')') {
      int depth = 0;
      size_t i = head.size();
      while (i > 0) {
        --i;
        if (head[i] == ')') ++depth;
        if (head[i] == '(' && --depth == 0) break;
      }
      head = trim(head.substr(0, i));
    }
    f.function = head.empty() ? std::string("??") : std::string(head);
    threads.back().frames.push_back(std::move(f));
  });
  return threads;
}

std::string stack_signature(const std::vector<ThreadStack>& threads) {
  const ThreadStack* t = main_thread(threads);
  if (!t) return {};
  std::string out;
  for (const auto& f : t->frames) out += (out.empty() ? "" : " < ") + frame_text(f);
  return out;
}

std::string stack_top(const std::vector<ThreadStack>& threads) {
  const ThreadStack* t = main_thread(threads);
  if (!t || t->frames.empty()) return {};
  return frame_text(t->frames.front());
}

std::string stuck_loader_worker(std::int32_t rank, const std::vector<ThreadStack>& main,
                                const std::vector<std::vector<ThreadStack>>& helpers) {
  auto runs = [](const std::vector<ThreadStack>& threads, std::string_view file_part,
                 std::string_view function) {
    const ThreadStack* t = main_thread(threads);
    if (!t) return false;
    for (const auto& f : t->frames)
      if (f.file.find(file_part) != std::string::npos &&
          (function.empty() || f.function == function))
        return true;
    return false;
  };
  if (!runs(main, "torch/utils/data/", "")) return {};
  int index = 0;
  for (const auto& helper : helpers) {
    if (!runs(helper, "torch/utils/data/_utils/worker.py", "_worker_loop")) continue;
    if (runs(helper, "torch/utils/data/_utils/fetch.py", ""))
      return "rank " + std::to_string(rank) + "'s DataLoader worker " + std::to_string(index) +
             " in " + stack_top(helper);
    ++index;
  }
  return {};
}

bool same_grouping(const StackDiagnosis& a, const StackDiagnosis& b) {
  if (a.outliers != b.outliers || a.groups.size() != b.groups.size()) return false;
  for (size_t i = 0; i < a.groups.size(); ++i)
    if (a.groups[i].signature != b.groups[i].signature || a.groups[i].ranks != b.groups[i].ranks)
      return false;
  return true;
}

StackDiagnosis group_stacks(const std::vector<RankStack>& ranks) {
  StackDiagnosis d;
  std::map<std::string, StackGroup> by_signature;
  std::map<std::int32_t, std::string> blame;
  for (const auto& r : ranks) {
    if (!r.blame.empty()) blame[r.rank] = r.blame;
    if (r.signature.empty()) {
      d.unknown.push_back(r.rank);
      continue;
    }
    StackGroup& g = by_signature[r.signature];
    g.signature = r.signature;
    if (g.top.empty()) g.top = r.top;
    g.ranks.push_back(r.rank);
  }
  for (auto& [sig, g] : by_signature) {
    std::sort(g.ranks.begin(), g.ranks.end());
    d.groups.push_back(std::move(g));
  }
  std::sort(d.groups.begin(), d.groups.end(), [](const StackGroup& a, const StackGroup& b) {
    if (a.ranks.size() != b.ranks.size()) return a.ranks.size() > b.ranks.size();
    return a.ranks.front() < b.ranks.front();
  });
  std::sort(d.unknown.begin(), d.unknown.end());

  const bool dominant = !d.groups.empty() && (d.groups.size() == 1 ||
                                              d.groups[0].ranks.size() > d.groups[1].ranks.size());
  std::vector<std::int32_t> apart;  // outside the dominant group
  std::vector<std::string> apart_words;
  if (dominant) {
    for (size_t i = 1; i < d.groups.size(); ++i) {
      const StackGroup& g = d.groups[i];
      apart.insert(apart.end(), g.ranks.begin(), g.ranks.end());
      if (apart_words.size() >= 2) continue;
      auto named = g.ranks.size() == 1 ? blame.find(g.ranks[0]) : blame.end();
      apart_words.push_back(named != blame.end() ? named->second
                                                 : rank_words(g.ranks) + " in " + g.top);
    }
  }
  // Stopped or uninterruptible ranks stand apart whatever their stacks,
  // unless every rank is (then nobody is to blame).
  std::vector<std::int32_t> stopped, sleeping;
  for (const auto& r : ranks) {
    if (r.state == 'T') stopped.push_back(r.rank);
    if (r.state == 'D') sleeping.push_back(r.rank);
  }
  std::sort(stopped.begin(), stopped.end());
  std::sort(sleeping.begin(), sleeping.end());
  std::vector<std::int32_t> stuck;
  std::vector<std::string> stuck_words;
  if (stopped.size() + sleeping.size() < ranks.size()) {
    stuck.insert(stuck.end(), stopped.begin(), stopped.end());
    stuck.insert(stuck.end(), sleeping.begin(), sleeping.end());
    if (!stopped.empty()) stuck_words.push_back(rank_words(stopped) + " stopped (T)");
    if (!sleeping.empty())
      stuck_words.push_back(rank_words(sleeping) + " in uninterruptible sleep (D)");
  }
  std::vector<std::int32_t> both = apart;
  both.insert(both.end(), stuck.begin(), stuck.end());
  std::sort(both.begin(), both.end());
  both.erase(std::unique(both.begin(), both.end()), both.end());
  // Never every rank: when the majority itself is stuck and the rest stand
  // apart, the stuck ones are what is known (a state is stronger evidence).
  const bool blame_all = both.size() >= ranks.size();
  std::vector<std::string> parts = stuck_words;
  if (!blame_all) parts.insert(parts.begin(), apart_words.begin(), apart_words.end());
  d.outliers = blame_all ? stuck : both;
  std::sort(d.outliers.begin(), d.outliers.end());
  if (!d.outliers.empty()) {
    for (size_t i = 0; i < parts.size(); ++i) d.why += (i ? "; " : "") + parts[i];
    if (dominant && !blame_all) {
      const StackGroup& main = d.groups[0];
      d.why += " while " + std::to_string(main.ranks.size()) +
               (main.ranks.size() == 1 ? " rank is in " : " ranks are in ") + main.top;
    }
  }
  return d;
}

}  // namespace atl

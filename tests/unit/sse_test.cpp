// The dashboard's log events: lines become data lines, the id is where to go
// on, and what EventSource would join back is the log's text.
#include "atl/core/sse.hpp"

#include <gtest/gtest.h>

using namespace atl;

namespace {

// What a browser's EventSource hands the page: data lines joined with "\n".
std::string joined_data(const std::string& event) {
  std::string out;
  size_t at = 0;
  bool first = true;
  while (at < event.size()) {
    auto nl = event.find('\n', at);
    std::string line = event.substr(at, nl - at);
    at = nl + 1;
    if (line.rfind("data: ", 0) == 0) {
      if (!first) out += "\n";
      out += line.substr(6);
      first = false;
    }
  }
  return out;
}

}  // namespace

TEST(Sse, LinesBecomeDataLinesAndTheIdIsTheNextOffset) {
  EXPECT_EQ(sse_log_event("a\nbb\n", 42, 0), "id: 42\ndata: a\ndata: bb\n\n");
  EXPECT_EQ(sse_log_event("no end", 6, 0), "id: 6\ndata: no end\n\n");
  EXPECT_EQ(sse_log_event("", 0, 0), "id: 0\ndata: \n\n");
  EXPECT_EQ(sse_log_event("\n", 1, 0), "id: 1\ndata: \n\n");
  EXPECT_EQ(sse_log_event("a\n\nb\n", 5, 0), "id: 5\ndata: a\ndata: \ndata: b\n\n");
}

TEST(Sse, WhatTheBrowserJoinsIsTheText) {
  for (std::string text : {"one\ntwo\nthree\n", "x\n", "  spaced  \n\ttab\n", "data: inside\n"})
    EXPECT_EQ(joined_data(sse_log_event(text, 1, 0)) + "\n", text);
}

TEST(Sse, CarriageReturnsSplitLinesNeverEndTheEvent) {
  auto e = sse_log_event("progress 10%\rprogress 20%\r\ndone\n", 9, 0);
  EXPECT_EQ(e, "id: 9\ndata: progress 10%\ndata: progress 20%\ndata: \ndata: done\n\n");
  EXPECT_EQ(e.find("\r"), std::string::npos);
  EXPECT_EQ(e.find("\n\n"), e.size() - 2);  // one event: the only blank line is its end
}

TEST(Sse, SkippedBytesComeAsTheirOwnEventFirst) {
  EXPECT_EQ(sse_log_event("z\n", 100, 90), "event: skipped\ndata: 90\n\nid: 100\ndata: z\n\n");
}

TEST(Sse, EventIds) {
  EXPECT_EQ(parse_event_id("0"), 0);
  EXPECT_EQ(parse_event_id("123456"), 123456);
  EXPECT_EQ(parse_event_id("999999999999999999"), 999999999999999999LL);
  EXPECT_EQ(parse_event_id(""), std::nullopt);
  EXPECT_EQ(parse_event_id("-1"), std::nullopt);
  EXPECT_EQ(parse_event_id("1e3"), std::nullopt);
  EXPECT_EQ(parse_event_id(" 1"), std::nullopt);
  EXPECT_EQ(parse_event_id("1234567890123456789"), std::nullopt);
}

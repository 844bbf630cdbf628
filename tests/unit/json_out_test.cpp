// JsonOut: the text it writes is nlohmann's dump of the same values (what
// status answered before its rows were written straight into text), for
// every kind of value and the strings that need escaping.
#include "atl/core/json_out.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>

namespace atl {
namespace {

using nlohmann::json;

std::string dumped(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

TEST(JsonOut, StringsAreEscapedAsNlohmannDumpsThem) {
  const std::string cases[] = {
      "",
      "jo-xxx-worker-3",
      "say \"hi\"",
      "back\\slash",
      std::string("nul\0byte", 8),
      "tab\tnew\nline\rcr\bbs\fff",
      "\x01\x1f\x7f",
      "UTF-8: caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x9a\x80",
      "not UTF-8: \xff\xfe and a cut \xe4\xb8",
  };
  for (const auto& s : cases) {
    std::string out;
    append_json_string(out, s);
    EXPECT_EQ(out, dumped(json(s))) << json(s).dump(-1, ' ', true, json::error_handler_t::replace);
    EXPECT_EQ(json::parse(out).get<std::string>(), json::parse(dumped(json(s))).get<std::string>());
  }
}

TEST(JsonOut, NumbersReadAsNlohmannWritesThem) {
  const double doubles[] = {0.0, -0.0, 5.0, 12.3, 0.1, 99.9, -3.5, 1e-7, 2.5e-5, 1234567.8, 1e300};
  for (double d : doubles) {
    std::string out;
    JsonOut(out).value(d);
    // The same number, and a float to a reader ("5.0", not "5").
    EXPECT_EQ(json::parse(out), json::parse(dumped(json(d)))) << out;
    EXPECT_TRUE(json::parse(out).is_number_float()) << out;
    if (std::abs(d) >= 0.001 && std::abs(d) < 1e15) {
      EXPECT_EQ(out, dumped(json(d)));
    }
  }
  for (double d : {std::nan(""), std::numeric_limits<double>::infinity(),
                   -std::numeric_limits<double>::infinity()}) {
    std::string out;
    JsonOut(out).value(d);
    EXPECT_EQ(out, dumped(json(d)));  // null
  }
  const std::int64_t ints[] = {0, -1, 42, std::numeric_limits<std::int64_t>::min(),
                               std::numeric_limits<std::int64_t>::max()};
  for (auto i : ints) {
    std::string out;
    JsonOut(out).value(i);
    EXPECT_EQ(out, dumped(json(i)));
  }
  std::string out;
  JsonOut(out).value(std::numeric_limits<std::uint64_t>::max());
  EXPECT_EQ(out, dumped(json(std::numeric_limits<std::uint64_t>::max())));
  out.clear();
  JsonOut(out).value(std::int32_t{-7});
  EXPECT_EQ(out, "-7");
}

TEST(JsonOut, ObjectsAndArraysNestWithTheirCommas) {
  std::string out;
  JsonOut w(out);
  w.begin_object();
  w.key("a").begin_array().end_array();
  w.key("b").begin_object().end_object();
  w.member("c", true).member("d", false).key("e").null();
  w.key("f").begin_array();
  w.value(1).value("two").begin_object().member("x", 3.5).end_object().begin_array().end_array();
  w.raw("{\"y\":[1,2]}").null();
  w.end_array();
  w.key("g").raw("7");
  w.end_object();
  const json expected = {{"a", json::array()},
                         {"b", json::object()},
                         {"c", true},
                         {"d", false},
                         {"e", nullptr},
                         {"f", {1, "two", {{"x", 3.5}}, json::array(), {{"y", {1, 2}}}, nullptr}},
                         {"g", 7}};
  EXPECT_EQ(out, dumped(expected));
  // Arrays of objects, as the status's rows.
  std::string rows;
  JsonOut r(rows);
  r.begin_array();
  for (int i = 0; i < 3; ++i) r.begin_object().member("i", i).member("s", "row").end_object();
  r.end_array();
  EXPECT_EQ(rows, R"([{"i":0,"s":"row"},{"i":1,"s":"row"},{"i":2,"s":"row"}])");
}

TEST(JsonOut, CompactTextIsIndentedAsDumpTwoWritesIt) {
  // Members in name order (as a dump writes them): the same text as a parse
  // and dump(2), empty objects and arrays, strings with brackets, commas,
  // colons, quotes and backslashes in them, nested rows.
  const json doc = {{"a", json::array()},
                    {"b", json::object()},
                    {"c", {{"d", {1, 2.5, "x,y:z"}}, {"e", nullptr}}},
                    {"f", "brace { bracket [ \"quote\" back\\slash ] }"},
                    {"g", {{{"h", true}}, {{"i", false}}, json::array({json::array()})}},
                    {"j", "UTF-8 caf\xc3\xa9, tab\t"}};
  const std::string compact = dumped(doc);
  auto indented = indent_json(compact);
  ASSERT_TRUE(indented.has_value());
  EXPECT_EQ(*indented, doc.dump(2));
  EXPECT_EQ(*indent_json("[]"), "[]");
  EXPECT_EQ(*indent_json("{\"k\":{}}"), json::parse("{\"k\":{}}").dump(2));
  // The order they came in is kept (a dump(2) of a parse would sort it).
  EXPECT_EQ(*indent_json(R"({"z":1,"a":[2]})"), "{\n  \"z\": 1,\n  \"a\": [\n    2\n  ]\n}");
  // Text that does not balance: nothing (the caller's parser says why).
  for (const char* bad : {"{\"a\":1", "[1,2]]", "{\"a\":\"open}", "\"\\\""})
    EXPECT_FALSE(indent_json(bad).has_value()) << bad;
}

}  // namespace
}  // namespace atl

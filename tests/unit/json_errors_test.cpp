// Where a user's JSON stops being JSON, in the user's words.
#include "atl/core/json_errors.hpp"

#include <gtest/gtest.h>

#include "atl/core/job_spec.hpp"

using atl::json_syntax_error;

TEST(JsonErrors, ValidJsonHasNone) {
  EXPECT_EQ(json_syntax_error(R"({"a": [1, 2], "b": null})"), "");
}

TEST(JsonErrors, TheUsualSlipsAreNamedWithLineColumnAndWhatToChange) {
  EXPECT_EQ(
      json_syntax_error("{\n  \"workers\": 2,\n  \"mode\": \"spmd\"\n  \"entrypoint\": \"x\"\n}"),
      "line 4, column 14: unexpected string; expected '}' (a ',' missing before it?)");
  EXPECT_EQ(json_syntax_error("{\"a\": 1,\n}"),
            "line 2, column 1: unexpected '}'; expected string (a ',' after the last item? "
            "JSON allows none)");
  EXPECT_EQ(json_syntax_error("[1,]"),
            "line 1, column 4: unexpected ']'; expected '[', '{', or a literal (a ',' after the "
            "last item? JSON allows none)");
  EXPECT_EQ(json_syntax_error("{'a': 1}"),
            "line 1, column 2: invalid literal; expected string (JSON takes double quotes: "
            "\"key\")");
  EXPECT_EQ(json_syntax_error("{a: 1}"),
            "line 1, column 2: invalid literal; expected string (keys take double quotes: "
            "\"key\")");
  EXPECT_EQ(json_syntax_error("{\"a\": True}"),
            "line 1, column 7: invalid literal (strings take double quotes; true, false and null "
            "are lower case)");
  EXPECT_EQ(json_syntax_error("{\"a\": [1, 2}"),
            "line 1, column 12: unexpected '}'; expected ']' (a ']' missing before it?)");
  EXPECT_EQ(json_syntax_error("{\"a\": 1"),
            "line 1, column 8: unexpected end of input; expected '}' (the text ends early: a "
            "'}', ']' or '\"' missing?)");
  EXPECT_EQ(json_syntax_error("  \n"),
            "line 2, column 1: unexpected end of input; expected '[', '{', or a literal (the "
            "text is empty)");
  EXPECT_EQ(json_syntax_error("{} x"),
            "line 1, column 4: invalid literal; expected end of input (more text after the "
            "JSON value's end)");
}

TEST(JsonErrors, NoLibraryInternalsInAnyAnswer) {
  for (const char* text : {"{", "}", "[", "{\"a\"}", "{\"a\":}", "nul", "\"\\x\"", "1e", "{,}"}) {
    const std::string said = json_syntax_error(text);
    EXPECT_EQ(said.rfind("line 1, column ", 0), 0u) << text << ": " << said;
    EXPECT_EQ(said.find("json.exception"), std::string::npos) << said;
    EXPECT_EQ(said.find("parse_error"), std::string::npos) << said;
    EXPECT_EQ(said.find("syntax error while parsing"), std::string::npos) << said;
  }
}

TEST(JsonErrors, AJobFileSaysWhereItStopsBeingJson) {
  auto spec = atl::parse_job_spec_json("{\n  \"workers\": 2,\n}\n");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error(),
            "job spec: not valid JSON: line 3, column 1: unexpected '}'; expected string (a ',' "
            "after the last item? JSON allows none)");
}

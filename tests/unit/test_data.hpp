// A file of tests/unit/data (ATL_TEST_DATA), whole: outputs and dumps
// recorded from real tools, read by the parsers' tests.
#pragma once

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

namespace atl {

inline std::string test_data(const std::string& path) {
  std::ifstream in(std::string(ATL_TEST_DATA) + "/" + path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace atl

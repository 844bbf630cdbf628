// The command-line plumbing atl's programs share (Boost.Program_options): a
// usage error is one line "PROGRAM: reason" and exit 2; --help prints the
// options and exits 0, as --version its version; flag values parsed by core
// come back or exit 2.
#pragma once

#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>
#include <string>
#include <utility>

#include "atl/core/expected.hpp"
#include "atl/core/suggest.hpp"

namespace atl::cli {

namespace po = boost::program_options;

inline constexpr int kExitUsage = 2;

// "PROGRAM (atl 0.1.0)": what --version prints.
inline std::string version_line(const std::string& program) {
  return program + " (atl " + ATL_VERSION + ")";
}

[[noreturn]] inline void usage_error(const std::string& program, const std::string& message) {
  std::cerr << program << ": " << message << "\n";
  std::exit(kExitUsage);
}

template <class T>
T value_or_exit(const std::string& program, Expected<T> value, const std::string& flag) {
  if (!value) usage_error(program, flag + ": " + value.error());
  return std::move(value).value();
}

// " (did you mean '--X'?)" for an option `desc` does not have, or "".
inline std::string option_hint(const std::string& given, const po::options_description& desc) {
  std::vector<std::string> names;
  for (const auto& o : desc.options())
    if (!o->long_name().empty()) names.push_back("--" + o->long_name());
  return did_you_mean(given, names);
}

// Runs `parser` with `desc`; exits on a bad flag (2), --help or --version (0).
inline po::variables_map parse_or_exit(const std::string& program, po::command_line_parser parser,
                                       const po::options_description& desc) {
  po::variables_map vm;
  try {
    po::store(parser.options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    usage_error(program, e.what() + option_hint(e.get_option_name(), desc));
  } catch (const po::error& e) {
    usage_error(program, e.what());
  }
  if (vm.count("help")) {
    std::cout << desc << "\n";
    std::exit(0);
  }
  if (vm.count("version")) {
    std::cout << version_line(program) << "\n";
    std::exit(0);
  }
  return vm;
}

}  // namespace atl::cli

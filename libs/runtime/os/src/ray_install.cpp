#include "atl/os/ray_install.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>

#include "atl/os/run_capture.hpp"

namespace atl::os {

std::string script_python(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  if (!in || !std::getline(in, line) || line.rfind("#!", 0) != 0) return {};
  const auto begin = line.find_first_not_of(" \t", 2);
  if (begin == std::string::npos || line[begin] != '/') return {};
  const auto end = line.find_first_of(" \t\r", begin);
  const std::string interpreter = line.substr(begin, end == std::string::npos ? end : end - begin);
  const std::string name = interpreter.substr(interpreter.rfind('/') + 1);
  return name.rfind("python", 0) == 0 ? interpreter : std::string();
}

Status check_ray(const std::string& ray_bin) {
  const std::string path = find_program(ray_bin);
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode))
    return make_error("'" + ray_bin + "' is not there" +
                      (ray_bin.find('/') == std::string::npos ? " (not on the PATH)"
                                                              : " (or not an executable file)"));
  const std::string python = script_python(path);
  if (python.empty()) return Ok{};  // not a Python script: taken as it is
  if (::access(python.c_str(), X_OK) != 0)
    return make_error("'" + path + "' runs " + python + ", which is not there");
  auto found = run_capture(
      {python, "-c",
       "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('ray') else 3)"},
      std::chrono::seconds(30), 4096);
  if (!found) return make_error("'" + path + "': " + found.error());
  if (!found->status || !found->status->success())
    return make_error("'" + path + "' runs " + python + ", which has no ray module");
  return Ok{};
}

}  // namespace atl::os

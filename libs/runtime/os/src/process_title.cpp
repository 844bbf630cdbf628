#include "atl/os/process_title.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "proc_stat.hpp"

namespace atl::os {

std::string process_title_bytes(const std::vector<std::string>& argv, std::size_t arg_bytes) {
  if (arg_bytes == 0 || argv.empty()) return {};
  std::string first = argv[0];
  if (first.size() + 1 > arg_bytes) first = first.substr(first.rfind('/') + 1);
  if (first.size() + 1 > arg_bytes) first.resize(arg_bytes - 1);
  std::string title = first + '\0';
  for (std::size_t i = 1; i < argv.size() && title.size() + argv[i].size() + 1 <= arg_bytes; ++i)
    title += argv[i] + '\0';
  title.resize(arg_bytes, '\0');
  return title;
}

std::vector<std::string> own_stat_fields() {
  int fd = ::open("/proc/self/stat", O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[2048];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return {};
  buf[n] = '\0';
  const char* after = std::strrchr(buf, ')');
  if (!after) return {};
  std::istringstream in(after + 1);
  std::vector<std::string> fields;
  for (std::string field; in >> field;) fields.push_back(field);
  return fields;
}

namespace {

// /proc/self/stat's fields 48 and 49: arg_start, arg_end.
bool argument_area(std::uintptr_t* start, std::uintptr_t* end) {
  const auto fields = own_stat_fields();
  if (fields.size() < 47) return false;
  *start = std::strtoull(fields[45].c_str(), nullptr, 10);
  *end = std::strtoull(fields[46].c_str(), nullptr, 10);
  return *start != 0 && *end > *start;
}

}  // namespace

std::vector<std::string> title_without_command(const std::vector<std::string>& argv,
                                               const std::vector<std::string>& valued) {
  std::vector<std::string> out;
  for (std::size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (i > 0 && a == "--") break;
    bool skip = false;
    for (const auto& flag : valued) {
      if (a == flag) {
        ++i;  // and its value
        skip = true;
      } else if (a.rfind(flag + "=", 0) == 0) {
        skip = true;
      }
    }
    if (!skip) out.push_back(a);
  }
  return out;
}

bool set_process_title(const std::vector<std::string>& argv) {
  std::uintptr_t start = 0, end = 0;
  if (!argument_area(&start, &end)) return false;
  std::string bytes = process_title_bytes(argv, end - start);
  if (bytes.empty()) return false;
  std::memcpy(reinterpret_cast<void*>(start), bytes.data(), bytes.size());
  return true;
}

}  // namespace atl::os

// Whether atl's interpositions hold in this process.
//
// atl replaces a few functions that CAF's libraries call through their PLT
// (OpenSSL's I/O and credential loaders for libcaf_openssl, epoll_ctl and
// accept for libcaf_io, two of CAF's own functions: src/*_interpose.cpp).
// Each replacement works only if the dynamic linker binds the caller's
// reference to atl's definition: a library loaded RTLD_GLOBAL before atl
// (libssl for a Python that loads it so), a symbol atl's object does not
// export, or a CAF built with -Bsymbolic-functions each silently undo one.
// So each is checked where it matters, in the caller's own relocation: the
// slot that libcaf_io or libcaf_openssl will jump through.
#pragma once

#include <string>
#include <vector>

namespace atl {

// One function atl replaces, and the library whose calls must reach atl's.
struct Interposed {
  std::string symbol;            // as the dynamic linker names it (C++ mangled)
  std::string caller;            // the start of the calling library's file name: "libcaf_io.so"
  std::string why;               // what is lost without it, for the line that says so
  bool executable_only = false;  // not checked in libatl.so
};

// The interpositions every atl process with CAF has (headnode adds accept).
std::vector<Interposed> caf_interpositions();

// One line for each of `wanted` that does not bind to the object this code
// is in (the executable, or libatl.so): which library's call goes where, and
// what is lost. A caller library not loaded is no problem.
std::vector<std::string> interposition_problems(const std::vector<Interposed>& wanted);

// One more for this process (before the first interposition_report()):
// headnode's accept.
void register_interposition(Interposed extra);

// This process's problems, found once (the first call, from AtlSystemConfig)
// and each said then on stderr in one line; status --json shows the head's.
const std::vector<std::string>& interposition_report();

}  // namespace atl

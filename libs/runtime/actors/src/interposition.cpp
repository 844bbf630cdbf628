#include "atl/actors/interposition.hpp"

#include <cxxabi.h>
#include <dlfcn.h>
#include <elf.h>
#include <link.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <vector>

namespace atl {

namespace {

// What the dynamic linker tells of one loaded object.
struct Loaded {
  ElfW(Addr) base = 0;
  const ElfW(Dyn) * dynamic = nullptr;
  std::string path;
};

std::string base_name(const std::string& path) {
  auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The loaded object whose file name starts with `prefix` ("libcaf_io.so").
bool find_loaded(const std::string& prefix, Loaded& out) {
  struct Search {
    const std::string* prefix;
    Loaded* out;
    bool found;
  } search{&prefix, &out, false};
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        if (!info->dlpi_name || base_name(info->dlpi_name).rfind(*s->prefix, 0) != 0) return 0;
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          if (info->dlpi_phdr[i].p_type != PT_DYNAMIC) continue;
          s->out->base = info->dlpi_addr;
          s->out->dynamic =
              reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
          s->out->path = info->dlpi_name;
          s->found = true;
          return 1;
        }
        return 0;
      },
      &search);
  return search.found;
}

// A dynamic entry's address: glibc relocates them in place on x86-64, but
// not everywhere; an unrelocated one is below the object's base.
ElfW(Addr) dyn_address(const Loaded& obj, ElfW(Addr) value) {
  return value < obj.base ? value + obj.base : value;
}

// Where `symbol`'s references in `obj` will go: the slot of its first
// relocation against it (a JUMP_SLOT or GLOB_DAT, a vtable's word), or null
// when `obj` has none (it binds its own definition: -Bsymbolic). `own` is
// `obj`'s own definition of it, if it has one.
struct Slot {
  bool found = false;
  void* target = nullptr;
  void* own = nullptr;
};

// The slots of `symbols` in `obj`, found in one pass over its relocations
// (a few thousand in CAF's libraries; this runs in every atl process's start).
// A relocation's name is compared with the few wanted ones in place, each
// comparison ending at the first byte that differs: no strlen of every
// (long, mangled) name, no allocation per relocation.
using Names = std::set<std::string>;

std::map<std::string, Slot> slots_of(const Loaded& obj, const Names& symbols) {
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  ElfW(Addr) rela = 0, jmprel = 0;
  ElfW(Xword) rela_size = 0, jmprel_size = 0;
  for (const ElfW(Dyn)* d = obj.dynamic; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB:
        symtab = reinterpret_cast<const ElfW(Sym)*>(dyn_address(obj, d->d_un.d_ptr));
        break;
      case DT_STRTAB:
        strtab = reinterpret_cast<const char*>(dyn_address(obj, d->d_un.d_ptr));
        break;
      case DT_RELA:
        rela = dyn_address(obj, d->d_un.d_ptr);
        break;
      case DT_RELASZ:
        rela_size = d->d_un.d_val;
        break;
      case DT_JMPREL:
        jmprel = dyn_address(obj, d->d_un.d_ptr);
        break;
      case DT_PLTRELSZ:
        jmprel_size = d->d_un.d_val;
        break;
      default:
        break;
    }
  }
  std::map<std::string, Slot> slots;
  if (!symtab || !strtab) return slots;
  std::vector<const std::string*> left;
  for (const auto& name : symbols) left.push_back(&name);
  for (auto [table, size] : {std::pair{jmprel, jmprel_size}, std::pair{rela, rela_size}}) {
    const auto* r = reinterpret_cast<const ElfW(Rela)*>(table);
    for (std::size_t i = 0; table && i < size / sizeof(ElfW(Rela)) && !left.empty(); ++i) {
      if (ELF64_R_SYM(r[i].r_info) == 0) continue;
      const ElfW(Sym)& sym = symtab[ELF64_R_SYM(r[i].r_info)];
      const char* name = strtab + sym.st_name;
      auto wanted = std::find_if(left.begin(), left.end(), [name](const std::string* w) {
        return (*w)[0] == name[0] && std::strcmp(w->c_str(), name) == 0;
      });
      if (wanted == left.end()) continue;
      Slot& slot = slots[**wanted];
      left.erase(wanted);  // the first one counts
      slot.found = true;
      slot.target = *reinterpret_cast<void* const*>(obj.base + r[i].r_offset);
      if (sym.st_shndx != SHN_UNDEF) slot.own = reinterpret_cast<void*>(obj.base + sym.st_value);
    }
  }
  return slots;
}

// The base of the loaded object whose segments hold `address` (null: none).
// dladdr would say as much, but it also looks for the nearest symbol, a walk
// of the object's whole symbol table (headnode's, libcrypto's) per call.
void* base_of(const void* address) {
  struct Search {
    ElfW(Addr) address;
    void* base;
  } search{reinterpret_cast<ElfW(Addr)>(address), nullptr};
  if (!address) return nullptr;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        auto* s = static_cast<Search*>(data);
        for (int i = 0; i < info->dlpi_phnum; ++i) {
          const auto& ph = info->dlpi_phdr[i];
          const ElfW(Addr) start = info->dlpi_addr + ph.p_vaddr;
          if (ph.p_type == PT_LOAD && s->address >= start && s->address < start + ph.p_memsz) {
            s->base = reinterpret_cast<void*>(info->dlpi_addr);
            return 1;
          }
        }
        return 0;
      },
      &search);
  return search.base;
}

// The file of the object that holds `address` (for a problem's line).
std::string object_of(const void* address) {
  Dl_info info{};
  if (!address || ::dladdr(address, &info) == 0 || !info.dli_fname) return "";
  return info.dli_fname;
}

// The object this code is in: the executable, or libatl.so.
void* our_base() {
  static void* base = base_of(reinterpret_cast<const void*>(&our_base));
  return base;
}

// Whether this code is in the executable (not libatl.so in a Python).
bool in_executable() {
  ElfW(Addr) first = 0;
  ::dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        *static_cast<ElfW(Addr)*>(data) = info->dlpi_addr;
        return 1;  // the first object is the executable
      },
      &first);
  return reinterpret_cast<void*>(first) == our_base();
}

std::string describe(const void* address) {
  std::string file = object_of(address);
  return file.empty() ? "an unknown object" : base_name(file) + "'s";
}

// A C++ symbol as its source names it ("caf::detail::get_root_uuid[abi:cxx11]()").
std::string readable(const std::string& symbol) {
  int status = 0;
  char* plain = abi::__cxa_demangle(symbol.c_str(), nullptr, nullptr, &status);
  std::string out = status == 0 && plain ? plain : symbol;
  std::free(plain);
  return out;
}

std::vector<Interposed>& registered() {
  static std::vector<Interposed> extra;
  return extra;
}

}  // namespace

std::vector<Interposed> caf_interpositions() {
  const std::string tls = "the TLS fixes (error queue, handshake gate, BASP read-along)";
  std::vector<Interposed> list;
  for (const char* f : {"SSL_read", "SSL_write", "SSL_connect", "SSL_accept", "SSL_free"})
    list.push_back({f, "libcaf_openssl.so", tls});
  for (const char* f : {"SSL_CTX_use_certificate_chain_file", "SSL_CTX_use_PrivateKey_file",
                        "SSL_CTX_load_verify_locations"})
    list.push_back({f, "libcaf_openssl.so", "credentials parsed once per process"});
  // Not in libatl.so: a driver accepts no connections, and the C library
  // in the global scope wins the lookup over a library loaded locally.
  list.push_back({"epoll_ctl", "libcaf_io.so", "the handshake gate and BASP read-along", true});
  list.push_back({"_ZN3caf2io11basp_broker16learned_new_nodeERKNS_7node_idE", "libcaf_io.so",
                  "the fix of CAF's per-connection leak"});
  list.push_back({"_ZN3caf6detail13get_root_uuidB5cxx11Ev", "libcaf_core.so",
                  "node ids that tell local pods apart"});
  return list;
}

std::vector<std::string> interposition_problems(const std::vector<Interposed>& wanted) {
  // Grouped: one line per caller and where its calls go instead.
  struct Group {
    std::vector<std::string> names, whys;
  };
  std::vector<std::pair<std::string, Group>> groups;
  auto note = [&](const std::string& line_start, const Interposed& want) {
    auto it = std::find_if(groups.begin(), groups.end(),
                           [&](const auto& g) { return g.first == line_start; });
    if (it == groups.end()) it = groups.insert(groups.end(), {line_start, Group{}});
    it->second.names.push_back(readable(want.symbol));
    if (std::find(it->second.whys.begin(), it->second.whys.end(), want.why) ==
        it->second.whys.end())
      it->second.whys.push_back(want.why);
  };
  // Each caller's relocations are read once, for all of its symbols.
  std::map<std::string, Names> by_caller;
  for (const auto& want : wanted) by_caller[want.caller].insert(want.symbol);
  std::map<std::string, std::pair<Loaded, std::map<std::string, Slot>>> callers;
  for (const auto& [prefix, symbols] : by_caller) {
    Loaded caller;
    if (find_loaded(prefix, caller)) callers[prefix] = {caller, slots_of(caller, symbols)};
  }
  const bool executable = in_executable();
  for (const auto& want : wanted) {
    if (want.executable_only && !executable) continue;
    auto found = callers.find(want.caller);
    if (found == callers.end()) continue;  // not loaded: nothing calls it
    const Loaded& caller = found->second.first;
    const std::string who = base_name(caller.path);
    auto at = found->second.second.find(want.symbol);
    const Slot slot = at == found->second.second.end() ? Slot{} : at->second;
    if (!slot.found) {
      note(who + " binds its own (no relocation: built -Bsymbolic?)", want);
      continue;
    }
    void* target = slot.target;
    void* target_base = base_of(target);
    if (target_base == our_base()) continue;
    if (target_base == reinterpret_cast<void*>(caller.base) && target != slot.own) {
      // Not bound yet (lazy binding: the slot holds the caller's PLT stub):
      // it will bind as a lookup from atl's object does now.
      target = ::dlsym(RTLD_DEFAULT, want.symbol.c_str());
      target_base = base_of(target);
      if (target_base == our_base()) continue;
    }
    if (target_base == reinterpret_cast<void*>(caller.base))
      note(who + " calls its own definition (atl's object does not export it)", want);
    else
      note(who + "'s calls go to " + describe(target) +
               " instead (was that library loaded RTLD_GLOBAL before atl?)",
           want);
  }
  std::vector<std::string> problems;
  for (const auto& [start, group] : groups) {
    std::string names, whys;
    for (const auto& n : group.names) names += (names.empty() ? "" : ", ") + n;
    for (const auto& w : group.whys) whys += (whys.empty() ? "" : "; ") + w;
    problems.push_back("atl's " + names + " not in use: " + start +
                       "; off in this process: " + whys);
  }
  return problems;
}

void register_interposition(Interposed extra) { registered().push_back(std::move(extra)); }

const std::vector<std::string>& interposition_report() {
  static const std::vector<std::string> report = [] {
    auto wanted = caf_interpositions();
    for (const auto& extra : registered()) wanted.push_back(extra);
    auto problems = interposition_problems(wanted);
    for (const auto& line : problems) std::fprintf(stderr, "atl: %s\n", line.c_str());
    return problems;
  }();
  return report;
}

}  // namespace atl

#include "symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace ringside::interpose {
namespace {

const void* selfBase() {
  static const void* base = [] {
    Dl_info info{};
    dladdr(reinterpret_cast<void*>(&findRealSymbol), &info);
    return static_cast<const void*>(info.dli_fbase);
  }();
  return base;
}

bool inSelf(void* p) {
  Dl_info info{};
  return dladdr(p, &info) != 0 && info.dli_fbase == selfBase();
}

int collectNames(dl_phdr_info* info, size_t, void* data) {
  auto* names = static_cast<std::vector<std::string>*>(data);
  // Never ourselves: dlopen of a preloaded library from an exit handler runs
  // its initialisers again (seen with glibc 2.36), and we are not the answer.
  if (info->dlpi_name != nullptr && info->dlpi_name[0] != '\0' &&
      reinterpret_cast<const void*>(info->dlpi_addr) != selfBase())
    names->emplace_back(info->dlpi_name);
  return 0;
}

// Original protection of the mapping that holds `addr`, from /proc/self/maps.
int protectionOf(uintptr_t addr) {
  FILE* f = std::fopen("/proc/self/maps", "r");
  if (f == nullptr) return PROT_READ;
  char line[512];
  int prot = PROT_READ;
  while (std::fgets(line, sizeof line, f) != nullptr) {
    unsigned long lo = 0, hi = 0;
    char perms[8] = {};
    if (std::sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
    if (addr >= lo && addr < hi) {
      prot = (perms[0] == 'r' ? PROT_READ : 0) | (perms[1] == 'w' ? PROT_WRITE : 0) |
             (perms[2] == 'x' ? PROT_EXEC : 0);
      break;
    }
  }
  std::fclose(f);
  return prot;
}

}  // namespace

void* findRealSymbol(const char* name) {
  void* p = dlsym(RTLD_NEXT, name);
  if (p != nullptr && !inSelf(p)) return p;
  // Collect names first: dlopen must not run inside dl_iterate_phdr.
  std::vector<std::string> names;
  dl_iterate_phdr(collectNames, &names);
  for (const auto& n : names) {
    void* h = dlopen(n.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (h == nullptr) continue;
    p = dlsym(h, name);
    dlclose(h);
    if (p != nullptr && !inSelf(p)) return p;
  }
  return nullptr;
}

std::string objectOf(void* addr) {
  Dl_info info{};
  if (dladdr(addr, &info) == 0 || info.dli_fname == nullptr) return "";
  return info.dli_fname;
}

size_t symbolSize(void* addr) {
  Dl_info info{};
  void* extra = nullptr;
  if (dladdr1(addr, &info, &extra, RTLD_DL_SYMENT) == 0 || extra == nullptr) return 0;
  return static_cast<const ElfW(Sym)*>(extra)->st_size;
}

int patchPointerTable(void** table, size_t slots, void* from, void* to) {
  if (table == nullptr || from == nullptr || to == nullptr) return 0;
  long page = sysconf(_SC_PAGESIZE);
  uintptr_t lo = reinterpret_cast<uintptr_t>(table) & ~static_cast<uintptr_t>(page - 1);
  uintptr_t hi = (reinterpret_cast<uintptr_t>(table + slots) + page - 1) & ~static_cast<uintptr_t>(page - 1);
  int prot = protectionOf(reinterpret_cast<uintptr_t>(table));
  int replaced = 0;
  for (size_t i = 0; i < slots; ++i) {
    if (table[i] != from) continue;
    if (replaced == 0 && (prot & PROT_WRITE) == 0 &&
        mprotect(reinterpret_cast<void*>(lo), hi - lo, prot | PROT_WRITE) != 0)
      return 0;
    // One aligned pointer store: a thread calling through the table sees the
    // old or the new function, never a torn pointer.
    __atomic_store_n(&table[i], to, __ATOMIC_RELEASE);
    ++replaced;
  }
  if (replaced > 0 && (prot & PROT_WRITE) == 0) mprotect(reinterpret_cast<void*>(lo), hi - lo, prot);
  return replaced;
}

}  // namespace ringside::interpose

#include "elf_binding.h"

#include <elf.h>
#include <link.h>

#include <cstdint>
#include <cstring>

namespace ringside::interpose {
namespace {

struct Search {
  uintptr_t inside;
  const char* symbol;
  ImportInfo* out;
};

bool contains(const dl_phdr_info* info, uintptr_t addr) {
  for (int i = 0; i < info->dlpi_phnum; ++i) {
    const ElfW(Phdr)& ph = info->dlpi_phdr[i];
    if (ph.p_type != PT_LOAD) continue;
    uintptr_t lo = info->dlpi_addr + ph.p_vaddr;
    if (addr >= lo && addr < lo + ph.p_memsz) return true;
  }
  return false;
}

void scanRelocations(const dl_phdr_info* info, const ElfW(Rela) * rel, size_t bytes,
                     const ElfW(Sym) * symtab, const char* strtab, const char* symbol,
                     ImportInfo* out) {
  if (rel == nullptr || symtab == nullptr || strtab == nullptr) return;
  size_t n = bytes / sizeof(ElfW(Rela));
  for (size_t i = 0; i < n; ++i) {
    auto idx = ELF64_R_SYM(rel[i].r_info);
    if (idx == 0) continue;
    if (std::strcmp(strtab + symtab[idx].st_name, symbol) != 0) continue;
    if (out->relocations++ == 0)
      out->slot = *reinterpret_cast<void* const*>(info->dlpi_addr + rel[i].r_offset);
  }
}

int visit(dl_phdr_info* info, size_t, void* data) {
  auto* s = static_cast<Search*>(data);
  if (!contains(info, s->inside)) return 0;
  ImportInfo* out = s->out;
  out->found = true;
  out->object = info->dlpi_name != nullptr ? info->dlpi_name : "";
  const ElfW(Dyn)* dyn = nullptr;
  for (int i = 0; i < info->dlpi_phnum; ++i)
    if (info->dlpi_phdr[i].p_type == PT_DYNAMIC)
      dyn = reinterpret_cast<const ElfW(Dyn)*>(info->dlpi_addr + info->dlpi_phdr[i].p_vaddr);
  if (dyn == nullptr) return 1;
  // glibc relocates the address entries of a loaded object's dynamic section in place; an
  // entry below the load base was left as a file address.
  auto addr = [info](ElfW(Addr) p) { return p < info->dlpi_addr ? p + info->dlpi_addr : p; };
  const ElfW(Sym)* symtab = nullptr;
  const char* strtab = nullptr;
  const ElfW(Rela)* rela = nullptr;
  const ElfW(Rela)* jmprel = nullptr;
  size_t rela_bytes = 0, jmprel_bytes = 0;
  bool pltrel_is_rela = true;
  for (const ElfW(Dyn)* d = dyn; d->d_tag != DT_NULL; ++d) {
    switch (d->d_tag) {
      case DT_SYMTAB: symtab = reinterpret_cast<const ElfW(Sym)*>(addr(d->d_un.d_ptr)); break;
      case DT_STRTAB: strtab = reinterpret_cast<const char*>(addr(d->d_un.d_ptr)); break;
      case DT_RELA: rela = reinterpret_cast<const ElfW(Rela)*>(addr(d->d_un.d_ptr)); break;
      case DT_RELASZ: rela_bytes = d->d_un.d_val; break;
      case DT_JMPREL: jmprel = reinterpret_cast<const ElfW(Rela)*>(addr(d->d_un.d_ptr)); break;
      case DT_PLTRELSZ: jmprel_bytes = d->d_un.d_val; break;
      case DT_PLTREL: pltrel_is_rela = d->d_un.d_val == DT_RELA; break;
      case DT_SYMBOLIC: out->symbolic = true; break;
      case DT_BIND_NOW: out->bind_now = true; break;
      case DT_FLAGS:
        if ((d->d_un.d_val & DF_SYMBOLIC) != 0) out->symbolic = true;
        if ((d->d_un.d_val & DF_BIND_NOW) != 0) out->bind_now = true;
        break;
      case DT_FLAGS_1:
        if ((d->d_un.d_val & DF_1_NOW) != 0) out->bind_now = true;
        break;
      default: break;
    }
  }
  scanRelocations(info, jmprel, pltrel_is_rela ? jmprel_bytes : 0, symtab, strtab, s->symbol, out);
  scanRelocations(info, rela, rela_bytes, symtab, strtab, s->symbol, out);
  return 1;
}

}  // namespace

ImportInfo inspectImport(const void* inside, const char* symbol) {
  ImportInfo out;
  if (inside == nullptr || symbol == nullptr) return out;
  Search s{reinterpret_cast<uintptr_t>(inside), symbol, &out};
  dl_iterate_phdr(visit, &s);
  return out;
}

}  // namespace ringside::interpose

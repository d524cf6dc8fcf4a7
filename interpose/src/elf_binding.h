// How a loaded object reaches a function: through a relocation (a PLT or GOT
// slot the dynamic linker fills, which LD_PRELOAD can take over) or directly
// (-Bsymbolic, -Bsymbolic-functions, protected visibility, LTO: no preload
// library can see those calls). Read from the object's dynamic section in
// memory (no file access), for honest "inactive" verdicts.
#pragma once

#include <string>

namespace ringside::interpose {

struct ImportInfo {
  bool found = false;     // a loaded object contains `inside`
  std::string object;     // its path
  bool symbolic = false;  // DT_SYMBOLIC or DF_SYMBOLIC: it binds every own symbol to itself
  bool bind_now = false;  // DF_BIND_NOW / DF_1_NOW: slots were filled at load
  int relocations = 0;    // dynamic relocations that name `symbol`
  void* slot = nullptr;   // current value of the first PLT/GOT slot for `symbol`
};

// Inspects the loaded object that contains address `inside` for relocations
// naming `symbol` (a mangled name).
ImportInfo inspectImport(const void* inside, const char* symbol);

}  // namespace ringside::interpose

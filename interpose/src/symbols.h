// Finding the real definitions of the symbols we interpose, and patching
// virtual tables. Not on the hot path: results are cached by the callers.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>

namespace ringside::interpose {

// The definition of `name` in a loaded object other than this library, or
// nullptr. Tries dlsym(RTLD_NEXT) first; when the library was loaded with
// private (RTLD_LOCAL) dlopen, as PyTorch does, RTLD_NEXT finds nothing, so it
// then asks every loaded object in turn.
void* findRealSymbol(const char* name);

// Path of the loaded object that contains `addr` ("" if none).
std::string objectOf(void* addr);

// Size in bytes of the data symbol at `addr` (from the symbol table), 0 if unknown.
size_t symbolSize(void* addr);

// Replaces, in the table of `slots` pointers at `table`, every entry equal to
// `from` by `to`, lifting the page protection for the write (vtables live in
// RELRO memory). Returns the number of entries replaced.
int patchPointerTable(void** table, size_t slots, void* from, void* to);

// A lazily resolved pointer to a real function.
template <class Fn>
class RealFunction {
 public:
  explicit constexpr RealFunction(const char* name) : name_(name) {}
  Fn get() {
    Fn f = fn_.load(std::memory_order_acquire);
    if (f == nullptr) {
      f = reinterpret_cast<Fn>(findRealSymbol(name_));
      fn_.store(f, std::memory_order_release);
    }
    return f;
  }
  const char* name() const { return name_; }

 private:
  const char* name_;
  std::atomic<Fn> fn_{nullptr};
};

}  // namespace ringside::interpose

// Marks the symbols the preload library exports (everything else is hidden).
#define RINGSIDE_EXPORT __attribute__((visibility("default")))

// What ringside knows of each gloo::Context: its rank and size, taken from the
// arguments its constructor was given (gloo::Context::Context(rank, size, base)
// is wrapped), never from fields whose layout was not identified.
//
// The layout differs between Gloo versions: Debian's libgloo.so.0 (2022) has a
// virtual destructor, so a vptr comes first and rank/size sit at offsets 8/12;
// the Gloo that PyTorch 2.8+ pins dropped it (gloo 42139b7), so rank/size sit
// at 0/4. A constructor call shows which one a process has: after the real
// constructor ran, the given rank and size are found at exactly one of the two
// places. Only then may a context that was created unseen be read.
//
// Gloo-independent (contexts are opaque pointers) so unit tests can drive it.
#pragma once

#include <cstdint>

namespace ringside::interpose {

enum class ContextLayout : int {
  kUnknown = 0,   // no constructor seen (or none conclusive)
  kVptr = 1,      // vptr, rank at 8, size at 12 (Gloo before 42139b7: Debian, PyTorch < 2.8)
  kPlain = 2,     // rank at 0, size at 4 (PyTorch 2.8+)
  kConflict = 3,  // constructors disagreed: two Glooes in one process; never read fields
};

const char* contextLayoutName(ContextLayout layout);

// Which layout puts `rank` and `size` where the first 16 bytes of a just
// constructed context have them; kUnknown when neither or both do.
ContextLayout classifyContextLayout(const void* ctx, int rank, int size);

// Called by the constructor wrappers once the real constructor returned.
// Returns the process's layout after this observation.
ContextLayout noteContextConstructed(const void* ctx, int rank, int size);

// The process's layout as identified by the constructors seen so far.
ContextLayout contextLayout();

struct ContextShape {
  int rank = -1;
  int size = -1;
  bool from_constructor = false;  // false: read from the fields (identified layout)
};

// Rank and size of `ctx`: from its constructor's arguments if it was seen, else
// from its fields when this process's layout is identified; false when unknown.
bool contextShape(const void* ctx, ContextShape* out);

// Tests only: forget every context and the layout.
void resetContextsForTest();

}  // namespace ringside::interpose

// gloo::Context's rank and size come from its constructor's arguments; its
// field layout (with or without a vptr, by Gloo version) is identified from a
// constructed object and only then used for contexts created unseen.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

#include "elf_binding.h"
#include "gloo_context.h"

using ringside::interpose::classifyContextLayout;
using ringside::interpose::ContextLayout;
using ringside::interpose::contextLayout;
using ringside::interpose::ContextShape;
using ringside::interpose::contextShape;
using ringside::interpose::noteContextConstructed;
using ringside::interpose::resetContextsForTest;

namespace {

// The two layouts, as Gloo's constructors leave them (the members after base
// are shared_ptrs, timeout and slot in both).
struct VptrContext {  // Debian's libgloo.so.0, PyTorch < 2.8
  const void* vptr;
  int32_t rank, size, base;
  char rest[52];
};
struct PlainContext {  // PyTorch 2.8+
  int32_t rank, size, base;
  char rest[60];
};

VptrContext vptrContext(int rank, int size) {
  VptrContext c{};
  c.vptr = reinterpret_cast<const void*>(0x7f12'3456'7890ULL);
  c.rank = rank;
  c.size = size;
  c.base = 2;
  return c;
}
PlainContext plainContext(int rank, int size) {
  PlainContext c{};
  c.rank = rank;
  c.size = size;
  c.base = 2;
  return c;
}

TEST(GlooContext, ClassifiesBothLayouts) {
  for (int size : {1, 2, 4, 1000}) {
    for (int rank = 0; rank<size; rank += size> 3 ? size / 3 : 1) {
      auto v = vptrContext(rank, size);
      auto p = plainContext(rank, size);
      EXPECT_EQ(classifyContextLayout(&v, rank, size), ContextLayout::kVptr) << rank << "/" << size;
      EXPECT_EQ(classifyContextLayout(&p, rank, size), ContextLayout::kPlain)
          << rank << "/" << size;
    }
  }
}

TEST(GlooContext, AmbiguousOrImplausibleIsUnknown) {
  // rank == base and padding == size: both places match, so neither is trusted.
  int32_t both[16] = {2, 4, 2, 4};
  EXPECT_EQ(classifyContextLayout(both, 2, 4), ContextLayout::kUnknown);
  auto v = vptrContext(1, 2);
  EXPECT_EQ(classifyContextLayout(&v, 1, 3),
            ContextLayout::kUnknown);  // not what the constructor got
  EXPECT_EQ(classifyContextLayout(&v, 2, 2), ContextLayout::kUnknown);  // rank out of range
  EXPECT_EQ(classifyContextLayout(nullptr, 0, 1), ContextLayout::kUnknown);
}

TEST(GlooContext, ShapeFromConstructorThenFromIdentifiedFields) {
  resetContextsForTest();
  auto seen = plainContext(1, 4);
  auto unseen = plainContext(3, 4);
  ContextShape s;
  EXPECT_FALSE(contextShape(&unseen, &s)) << "no layout identified yet: fields must not be read";
  EXPECT_EQ(noteContextConstructed(&seen, 1, 4), ContextLayout::kPlain);
  ASSERT_TRUE(contextShape(&seen, &s));
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.size, 4);
  EXPECT_TRUE(s.from_constructor);
  ASSERT_TRUE(contextShape(&unseen, &s));
  EXPECT_EQ(s.rank, 3);
  EXPECT_EQ(s.size, 4);
  EXPECT_FALSE(s.from_constructor);
  // A vptr-layout context read with the plain layout is implausible: refused.
  auto other = vptrContext(0, 2);
  std::memset(&other, 0xff, 8);
  EXPECT_FALSE(contextShape(&other, &s));
}

TEST(GlooContext, ConflictingLayoutsStopFieldReads) {
  resetContextsForTest();
  auto a = vptrContext(0, 2);
  auto b = plainContext(1, 2);
  EXPECT_EQ(noteContextConstructed(&a, 0, 2), ContextLayout::kVptr);
  EXPECT_EQ(noteContextConstructed(&b, 1, 2), ContextLayout::kConflict);
  EXPECT_EQ(contextLayout(), ContextLayout::kConflict);
  auto unseen = vptrContext(1, 2);
  ContextShape s;
  EXPECT_FALSE(contextShape(&unseen, &s));
  ASSERT_TRUE(contextShape(&b, &s));  // constructor arguments still count
  EXPECT_EQ(s.rank, 1);
}

TEST(GlooContext, ReusedAddressIsANewContext) {
  resetContextsForTest();
  auto c = plainContext(0, 2);
  noteContextConstructed(&c, 0, 2);
  c = plainContext(2, 8);
  noteContextConstructed(&c, 2, 8);
  ContextShape s;
  ASSERT_TRUE(contextShape(&c, &s));
  EXPECT_EQ(s.size, 8);
}

// This test program calls strlen through its PLT (a relocation a preload
// library could take over).
TEST(ElfBinding, FindsARelocationOfAnImportedFunction) {
  auto* inside = reinterpret_cast<const void*>(&classifyContextLayout);
  auto imp = ringside::interpose::inspectImport(inside, "strlen");
  ASSERT_TRUE(imp.found);
  EXPECT_GT(imp.relocations, 0);
  EXPECT_FALSE(imp.symbolic);
  auto none =
      ringside::interpose::inspectImport(inside, "_ZN4gloo9allreduceERKNS_16AllreduceOptionsE");
  EXPECT_EQ(none.relocations, 0);
  EXPECT_FALSE(ringside::interpose::inspectImport(nullptr, "strlen").found);
}

}  // namespace

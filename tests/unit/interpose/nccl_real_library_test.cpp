// The real libnccl.so.2 of this machine, as far as it goes without a GPU:
// it loads, ncclGetVersion answers, every function ringside's wrappers bind
// to is there, and the profiler tables it looks for (the ncclProfiler_vN
// names in its read-only data) are ones ringside's preload library exports.
// A future NCCL that looks for a version ringside does not export (v7, say)
// fails here with that version named, before any job finds out.
//
// NCCL tries its names newest first and takes the first the plugin exports
// (src/plugin/profiler.cc, ncclProfilerPluginLoad): the highest version in
// its read-only data is the first it looks for.
//
// Runs twice: against the CUDA toolkit's (or the system's) libnccl.so.2 ("System"; skips
// where none is installed; RINGSIDE_REAL_NCCL=<path> names another one), and against pip's
// nvidia-nccl wheel in the pip torch environment ("PipWheel":
// <venv>/lib/python*/site-packages/nvidia/nccl/lib/libnccl.so.2, the environment found by
// scripts/setup-pip-torch.sh --cached-only; skips with its reason where there is none).
#include <dlfcn.h>
#include <elf.h>
#include <glob.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#ifndef RINGSIDE_PRELOAD_PATH
#error "RINGSIDE_PRELOAD_PATH: the path of libringside_preload.so"
#endif
#ifndef RINGSIDE_SETUP_PIP_TORCH
#error "RINGSIDE_SETUP_PIP_TORCH: the path of scripts/setup-pip-torch.sh"
#endif

namespace {

std::string findRealNccl() {
  if (const char* p = std::getenv("RINGSIDE_REAL_NCCL"); p != nullptr && p[0] != '\0') return p;
  const char* candidates[] = {
      "/usr/local/cuda/lib64/libnccl.so.2",
      "/usr/local/cuda/targets/x86_64-linux/lib/libnccl.so.2",
      "/usr/local/cuda/targets/sbsa-linux/lib/libnccl.so.2",
      "/usr/local/cuda/targets/aarch64-linux/lib/libnccl.so.2",
      "/usr/lib/x86_64-linux-gnu/libnccl.so.2",
      "/usr/lib/aarch64-linux-gnu/libnccl.so.2",
  };
  for (const char* c : candidates)
    if (access(c, R_OK) == 0) return c;
  return "";
}

// The ncclProfiler_v<N> strings (whole, NUL-terminated) in the named sections
// of an ELF64 file, in the order they lie there. Empty with *err on failure.
std::vector<int> profilerNames(const std::string& path, const std::set<std::string>& sections, std::string* err) {
  std::vector<int> out;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *err = "cannot open " + path;
    return out;
  }
  struct stat st {};
  fstat(fd, &st);
  auto size = static_cast<size_t>(st.st_size);
  void* map = size > sizeof(Elf64_Ehdr) ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : MAP_FAILED;
  close(fd);
  if (map == MAP_FAILED) {
    *err = "cannot map " + path;
    return out;
  }
  const auto* base = static_cast<const unsigned char*>(map);
  Elf64_Ehdr eh;
  std::memcpy(&eh, base, sizeof eh);
  bool ok = std::memcmp(eh.e_ident, ELFMAG, SELFMAG) == 0 && eh.e_ident[EI_CLASS] == ELFCLASS64 &&
            eh.e_shentsize == sizeof(Elf64_Shdr) && eh.e_shoff + uint64_t{eh.e_shnum} * sizeof(Elf64_Shdr) <= size &&
            eh.e_shstrndx < eh.e_shnum;
  if (!ok) {
    *err = path + " is not a 64-bit ELF file with section headers";
    munmap(map, size);
    return out;
  }
  auto shdr = [&](unsigned i) {
    Elf64_Shdr s;
    std::memcpy(&s, base + eh.e_shoff + i * sizeof(Elf64_Shdr), sizeof s);
    return s;
  };
  Elf64_Shdr names = shdr(eh.e_shstrndx);
  static const char kPrefix[] = "ncclProfiler_v";
  const size_t plen = sizeof kPrefix - 1;
  for (unsigned i = 0; i < eh.e_shnum; ++i) {
    Elf64_Shdr s = shdr(i);
    if (s.sh_type == SHT_NOBITS || s.sh_offset + s.sh_size > size || names.sh_offset + s.sh_name >= size) continue;
    std::string name(reinterpret_cast<const char*>(base + names.sh_offset + s.sh_name));
    if (sections.count(name) == 0) continue;
    const auto* p = reinterpret_cast<const char*>(base + s.sh_offset);
    const char* end = p + s.sh_size;
    for (const char* q = p; q + plen < end;) {
      const char* hit = static_cast<const char*>(memmem(q, static_cast<size_t>(end - q), kPrefix, plen));
      if (hit == nullptr) break;
      const char* d = hit + plen;
      int v = 0;
      const char* digits = d;
      while (d < end && *d >= '0' && *d <= '9' && v < 1000) v = v * 10 + (*d++ - '0');
      if (d > digits && d < end && *d == '\0') out.push_back(v);  // whole name, not ncclProfiler_v5_t
      q = hit + 1;
    }
  }
  munmap(map, size);
  return out;
}

std::string join(const std::vector<int>& v) {
  std::string s;
  for (int x : v) s += (s.empty() ? "v" : ", v") + std::to_string(x);
  return s;
}

// pip's nvidia-nccl in the pip torch environment; "" with *why when there is none.
std::string findPipNccl(std::string* why) {
  std::string command = std::string("bash '") + RINGSIDE_SETUP_PIP_TORCH + "' --cached-only 2>&1";
  FILE* p = popen(command.c_str(), "r");
  if (p == nullptr) {
    *why = "cannot run " + command;
    return "";
  }
  std::string out, last;
  char line[4096];
  while (std::fgets(line, sizeof line, p) != nullptr) {
    out += line;
    last = line;
  }
  int status = pclose(p);
  while (!last.empty() && (last.back() == '\n' || last.back() == '\r')) last.pop_back();
  while (!out.empty() && out.back() == '\n') out.pop_back();
  if (status != 0 || last.empty() || last[0] != '/') {
    *why = "no pip torch environment (setup-pip-torch.sh --cached-only: " + out + ")";
    return "";
  }
  // <venv>/bin/python -> <venv>/lib/python*/site-packages/nvidia/nccl/lib/libnccl.so.2
  std::string venv = last.substr(0, last.rfind('/'));
  venv = venv.substr(0, venv.rfind('/'));
  std::string pattern = venv + "/lib/python*/site-packages/nvidia/nccl/lib/libnccl.so.2";
  glob_t g{};
  std::string found;
  if (glob(pattern.c_str(), 0, nullptr, &g) == 0 && g.gl_pathc > 0) found = g.gl_pathv[0];
  globfree(&g);
  if (found.empty()) *why = "the pip torch environment " + venv + " has no nvidia-nccl wheel (" + pattern + ")";
  return found;
}

class RealNccl : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    if (std::string(GetParam()) == "PipWheel") {
      std::string why;
      path_ = findPipNccl(&why);
      if (path_.empty()) GTEST_SKIP() << why;
      return;
    }
    path_ = findRealNccl();
    if (path_.empty())
      GTEST_SKIP() << "no libnccl.so.2 on this machine (looked under /usr/local/cuda/lib64, "
                      "/usr/local/cuda/targets/*/lib, /usr/lib/*-linux-gnu; RINGSIDE_REAL_NCCL names another)";
  }
  std::string path_;
};

INSTANTIATE_TEST_SUITE_P(Library, RealNccl, ::testing::Values("System", "PipWheel"),
                         [](const ::testing::TestParamInfo<const char*>& param) { return param.param; });

TEST_P(RealNccl, LoadsAndHasEverySymbolTheWrappersBindTo) {
  void* dl = dlopen(path_.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (dl == nullptr) GTEST_SKIP() << path_ << " is there but does not load here: " << dlerror();
  using GetVersion = int (*)(int*);
  auto get_version = reinterpret_cast<GetVersion>(dlsym(dl, "ncclGetVersion"));
  ASSERT_NE(get_version, nullptr) << path_ << " has no ncclGetVersion";
  int version = 0;
  ASSERT_EQ(get_version(&version), 0) << "ncclGetVersion failed";  // needs no GPU
  // NCCL_VERSION_CODE: major*10000 + minor*100 + patch since 2.9.
  ASSERT_GE(version, 20900) << "ncclGetVersion: " << version;
  int minor = version / 100 % 100;
  std::printf("%s: NCCL %d.%d.%d\n", path_.c_str(), version / 10000, minor, version % 100);
  // Every function nccl_wrappers.cpp defines and forwards to, or calls itself.
  std::vector<const char*> syms = {
      "ncclAllReduce",     "ncclBroadcast",   "ncclBcast",          "ncclReduce",        "ncclAllGather",
      "ncclReduceScatter", "ncclSend",        "ncclRecv",           "ncclGroupStart",    "ncclGroupEnd",
      "ncclCommInitRank",  "ncclCommInitAll", "ncclCommInitRankConfig", "ncclCommSplit", "ncclCommDestroy",
      "ncclCommAbort",     "ncclCommFinalize", "ncclCommCount",     "ncclCommCuDevice",  "ncclCommUserRank",
      "ncclGetVersion",
  };
  if (version >= 22800) {  // from NCCL 2.28
    syms.push_back("ncclAlltoAll");
    syms.push_back("ncclGather");
    syms.push_back("ncclScatter");
  }
  for (const char* s : syms) EXPECT_NE(dlsym(dl, s), nullptr) << path_ << " lacks " << s;
  dlclose(dl);
}

TEST_P(RealNccl, LooksForAProfilerVersionRingsideExports) {
  std::string err;
  std::vector<int> wanted = profilerNames(path_, {".rodata"}, &err);
  ASSERT_TRUE(err.empty()) << err;
  std::vector<int> exported = profilerNames(RINGSIDE_PRELOAD_PATH, {".dynstr"}, &err);
  ASSERT_TRUE(err.empty()) << err;
  std::printf("%s looks for (in its read-only data, in this order): %s\n", path_.c_str(), join(wanted).c_str());
  std::printf("%s exports: %s\n", RINGSIDE_PRELOAD_PATH, join(exported).c_str());
  ASSERT_FALSE(exported.empty()) << RINGSIDE_PRELOAD_PATH << " exports no ncclProfiler_vN";
  if (wanted.empty()) GTEST_SKIP() << path_ << " names no ncclProfiler_vN (an NCCL before 2.23 has no profiler plugins)";
  std::set<int> ours(exported.begin(), exported.end());
  int newest = *std::max_element(wanted.begin(), wanted.end());
  for (int v : std::set<int>(wanted.begin(), wanted.end()))
    EXPECT_TRUE(ours.count(v) != 0 || v < *ours.begin())
        << path_ << " looks for ncclProfiler_v" << v << ", which ringside does not export (it exports "
        << join(exported) << "): add the v" << v
        << " table from NCCL's released profiler_v" << v << ".h (nccl_profiler_abi.h, nccl_profiler_versions.cpp)";
  // NCCL tries newest first: the table it takes is its newest one, ours.
  EXPECT_TRUE(ours.count(newest) != 0)
      << path_ << " looks for ncclProfiler_v" << newest << " first; ringside exports " << join(exported)
      << ", so NCCL would fall back to an older table: add v" << newest;
  std::printf("NCCL picks ncclProfiler_v%d\n", newest);
}

}  // namespace

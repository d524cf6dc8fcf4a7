// Finding libcuda in the process and libcupti on disk (see cupti_api.h).
#include "cupti_api.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace ringside::collector::detail {
namespace {

std::string baseName(const char* path) {
  const char* slash = std::strrchr(path, '/');
  return slash != nullptr ? slash + 1 : path;
}

bool startsWith(const std::string& s, const char* prefix) {
  return s.compare(0, std::strlen(prefix), prefix) == 0;
}

struct LoadedScan {
  bool cuda = false;                // libcuda.so* is mapped
  std::vector<std::string> dirs;    // folders of the loaded libcudart/libcuda
};

int scanObject(dl_phdr_info* info, size_t, void* data) {
  auto* scan = static_cast<LoadedScan*>(data);
  if (info->dlpi_name == nullptr || info->dlpi_name[0] == '\0') return 0;
  std::string base = baseName(info->dlpi_name);
  bool driver = startsWith(base, "libcuda.so");
  bool runtime = startsWith(base, "libcudart.so");
  if (driver) scan->cuda = true;
  if (driver || runtime) {
    std::string path = info->dlpi_name;
    size_t slash = path.rfind('/');
    if (slash != std::string::npos) scan->dirs.push_back(path.substr(0, slash));
  }
  return 0;
}

LoadedScan scanLoaded() {
  LoadedScan scan;
  dl_iterate_phdr(scanObject, &scan);
  return scan;
}

}  // namespace

bool processUsesCuda() { return scanLoaded().cuda; }

#if RINGSIDE_HAVE_CUPTI

std::string CuptiApi::resultName(CUptiResult r) const {
  const char* s = nullptr;
  if (getResultString != nullptr && getResultString(r, &s) == CUPTI_SUCCESS && s != nullptr) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

namespace {

template <class F>
bool bind(void* handle, const char* name, F* out, std::string* missing) {
  *out = reinterpret_cast<F>(dlsym(handle, name));
  if (*out == nullptr) {
    if (!missing->empty()) *missing += ", ";
    *missing += name;
    return false;
  }
  return true;
}

bool bindAll(void* handle, CuptiApi* api, std::string* missing) {
  bool ok = true;
  ok &= bind(handle, "cuptiGetVersion", &api->getVersion, missing);
  ok &= bind(handle, "cuptiGetResultString", &api->getResultString, missing);
  ok &= bind(handle, "cuptiGetTimestamp", &api->getTimestamp, missing);
  ok &= bind(handle, "cuptiSubscribe", &api->subscribe, missing);
  ok &= bind(handle, "cuptiUnsubscribe", &api->unsubscribe, missing);
  ok &= bind(handle, "cuptiEnableCallback", &api->enableCallback, missing);
  ok &= bind(handle, "cuptiActivityRegisterCallbacks", &api->registerCallbacks, missing);
  ok &= bind(handle, "cuptiActivityEnable", &api->enable, missing);
  ok &= bind(handle, "cuptiActivityDisable", &api->disable, missing);
  ok &= bind(handle, "cuptiActivityFlushAll", &api->flushAll, missing);
  ok &= bind(handle, "cuptiActivityGetNextRecord", &api->getNextRecord, missing);
  ok &= bind(handle, "cuptiActivityGetNumDroppedRecords", &api->getNumDroppedRecords, missing);
  ok &= bind(handle, "cuptiActivityPushExternalCorrelationId", &api->pushExternalCorrelationId, missing);
  ok &= bind(handle, "cuptiActivityPopExternalCorrelationId", &api->popExternalCorrelationId, missing);
  return ok;
}

const char* const kNames[] = {"libcupti.so.13", "libcupti.so.12", "libcupti.so"};

void* tryOpen(const std::string& file, std::string* path) {
  void* h = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (h != nullptr) *path = file;
  return h;
}

void* openCupti(std::string* path, std::string* why) {
  const char* env = std::getenv("RINGSIDE_CUPTI_LIB");
  if (env != nullptr && *env != '\0') {
    void* h = tryOpen(env, path);
    if (h == nullptr) {
      const char* e = dlerror();
      *why = std::string("RINGSIDE_CUPTI_LIB=") + env + ": " + (e != nullptr ? e : "cannot load");
    }
    return h;
  }
  // Another tool (PyTorch's profiler) may have loaded it already: share that copy.
  for (const char* n : kNames) {
    void* h = dlopen(n, RTLD_NOW | RTLD_LOCAL | RTLD_NOLOAD);
    if (h != nullptr) {
      *path = n;
      return h;
    }
  }
  for (const char* n : kNames)
    if (void* h = tryOpen(n, path)) return h;
  std::vector<std::string> dirs;
  for (const std::string& d : scanLoaded().dirs) {
    dirs.push_back(d);
    dirs.push_back(d + "/../extras/CUPTI/lib64");
    dirs.push_back(d + "/../../cuda_cupti/lib");  // pip: nvidia/cuda_runtime/lib -> nvidia/cuda_cupti/lib
  }
  dirs.push_back("/usr/local/cuda/lib64");
  dirs.push_back("/usr/local/cuda/extras/CUPTI/lib64");
  for (const std::string& d : dirs)
    for (const char* n : kNames)
      if (void* h = tryOpen(d + "/" + n, path)) return h;
  *why = "libcupti.so.13/.12 not found (set RINGSIDE_CUPTI_LIB)";
  return nullptr;
}

}  // namespace

bool loadCupti(CuptiApi* api, std::string* why) {
  std::string path;
  void* h = openCupti(&path, why);
  if (h == nullptr) return false;
  std::string missing;
  if (!bindAll(h, api, &missing)) {
    *why = path + " lacks " + missing;
    return false;  // left loaded: dlclose of a CUDA library at run time is not worth the risk
  }
  api->handle = h;
  api->path = path;
  return true;
}

#endif

}  // namespace ringside::collector::detail

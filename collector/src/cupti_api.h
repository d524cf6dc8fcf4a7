// Finding and loading CUPTI at run time (cupti.cpp's helpers).
//
// libcupti is dlopen'ed, never linked: a machine without CUDA runs the same
// preload library. It is looked for only in a process that already has the
// CUDA driver (libcuda.so) mapped, so CPU-only processes never load it.
#pragma once

#include <string>

#if RINGSIDE_HAVE_CUPTI
#include <cupti.h>
#endif

namespace ringside::collector::detail {

// True when the CUDA driver library (libcuda.so*) is mapped in this process.
// Walks the loaded objects (dl_iterate_phdr); loads nothing.
bool processUsesCuda();

#if RINGSIDE_HAVE_CUPTI

// The CUPTI functions ringside calls.
struct CuptiApi {
  void* handle = nullptr;
  std::string path;  // the file that was loaded (for the trace's meta)
  decltype(&cuptiGetVersion) getVersion = nullptr;
  decltype(&cuptiGetResultString) getResultString = nullptr;
  decltype(&cuptiGetTimestamp) getTimestamp = nullptr;
  decltype(&cuptiSubscribe) subscribe = nullptr;
  decltype(&cuptiUnsubscribe) unsubscribe = nullptr;
  decltype(&cuptiEnableCallback) enableCallback = nullptr;
  decltype(&cuptiActivityRegisterCallbacks) registerCallbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityDisable) disable = nullptr;
  decltype(&cuptiActivityFlushAll) flushAll = nullptr;
  decltype(&cuptiActivityGetNextRecord) getNextRecord = nullptr;
  decltype(&cuptiActivityGetNumDroppedRecords) getNumDroppedRecords = nullptr;
  decltype(&cuptiActivityPushExternalCorrelationId) pushExternalCorrelationId = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) popExternalCorrelationId = nullptr;

  // "CUPTI_ERROR_..." for `r` (the number if the library can't say).
  std::string resultName(CUptiResult r) const;
};

// Loads libcupti into *api. RINGSIDE_CUPTI_LIB names the only file tried;
// otherwise an already loaded libcupti, then libcupti.so.13/.12/.so by the
// loader's search path, beside the loaded libcudart/libcuda (and the CUDA
// layouts around them: extras/CUPTI/lib64, pip's nvidia/cuda_cupti/lib), and
// in /usr/local/cuda. Never dlclose'd. False with *why on failure.
bool loadCupti(CuptiApi* api, std::string* why);

#endif

}  // namespace ringside::collector::detail

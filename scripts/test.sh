#!/usr/bin/env bash
# Installs the dependencies, builds ringside and runs every test: unit and end-to-end tests in
# build/, unit tests of a Release build, then the sanitizer builds. Exit status 0 only if every
# stage passed. This is what CI runs (.ci/run); on a 2-core machine it takes about 13-18 minutes
# from a warm apt cache. Every build here has warnings as errors (-DRINGSIDE_WERROR=ON; a plain
# cmake build leaves it OFF).
#
# Stages (one timing line each):
#   deps        scripts/setup-deps.sh (skips apt when everything is installed)
#   pip-torch   scripts/setup-pip-torch.sh: the pip torch environment e2e.pip-torchrun-2 runs on
#               (outside the checkout, cached: minutes and ~5 GB once, then under a second).
#               Where PyPI cannot be reached it is skipped, not failed, and so is that test.
#               RINGSIDE_PIP_TORCH=0 leaves it out.
#   build       build/       Ninja, RelWithDebInfo, -DRINGSIDE_GUI=ON (the viewer; Xvfb tests)
#   test        build/       ctest: unit + e2e (e2e scenarios that can't run here are skipped,
#                            with the reason in the log); the tests labelled `heavy` (minutes of
#                            generated scale, e.g. the 4,096-rank autopsy) are left out: run them
#                            with `ctest --test-dir build -L heavy`
#   release-build build-release/ Release (-O3), -DRINGSIDE_GUI=ON: what a user's
#                            `cmake -DCMAKE_BUILD_TYPE=Release` compiles, kept free of warnings
#   release-test build-release/ unit tests
#   asan-build  build-asan/  -DRINGSIDE_SANITIZE=address (ASan + UBSan), at -O1 -g (the
#                            sanitizers' recommended level; a third less compile time than -O2)
#   asan-test   build-asan/  unit tests, and the e2e scenarios labelled e2e-native (the traced
#                            job is the ASan-built C++ sample or a shell), with the ASan runtime
#                            preloaded into the job (RINGSIDE_E2E_EXTRA_PRELOAD). Python/PyTorch
#                            jobs are not run under ASan: an uninstrumented interpreter with an
#                            instrumented preload library is not a supported ASan setup.
#   tsan-build  build-tsan/  -DRINGSIDE_SANITIZE=thread, at -O1 -g
#   tsan-test   build-tsan/  unit tests
#   nocuda-build build-nocuda/ the CUDA toolkit hidden (-DRINGSIDE_CUDA=OFF, CMAKE_IGNORE_PATH).
#                            Only collector/ compiles differently without it (CUPTI,
#                            RINGSIDE_HAVE_CUPTI); the stage builds what depends on that or on
#                            NCCL's absence: the CLI, the preload library and NCCL plugin, and
#                            the collector, interpose and stand-in tests
#   nocuda-test build-nocuda/ those tests: everything but CUPTI works without CUDA
#
# Environment: JOBS (default 2), RINGSIDE_SKIP_SANITIZERS=1 to skip the asan and tsan stages.
set -uo pipefail
cd "$(dirname "$0")/.."

JOBS=${JOBS:-2}
failed=()
declare -A stage_ok

stage() {  # stage NAME CMD...
  local name=$1
  shift
  echo "==> $name: $*"
  local start=$SECONDS
  if "$@"; then
    stage_ok[$name]=1
    echo "==> $name: ok ($((SECONDS - start)) s)"
  else
    local rc=$?
    stage_ok[$name]=0
    failed+=("$name")
    echo "==> $name: FAILED with status $rc ($((SECONDS - start)) s)"
  fi
}

skip_stage() {  # skip_stage NAME REASON
  failed+=("$1")
  echo "==> $1: not run ($2)"
}

configure_and_build() {  # configure_and_build DIR CMAKE_ARGS... [-- NINJA_TARGETS...]
  local dir=$1
  shift
  local args=() targets=()
  while (($# > 0)) && [[ $1 != -- ]]; do args+=("$1"); shift; done
  (($# > 0)) && shift && targets=("$@")
  set -- "${args[@]}"
  # A folder configured earlier with another generator can't switch to Ninja: start over
  # (only CMake's own state goes; the folder is this script's).
  if [[ -f $dir/CMakeCache.txt ]] && ! grep -q '^CMAKE_GENERATOR:INTERNAL=Ninja$' "$dir/CMakeCache.txt"; then
    echo "$dir was configured with another generator; reconfiguring with Ninja"
    rm -rf "$dir/CMakeCache.txt" "$dir/CMakeFiles"
  fi
  mkdir -p "$dir"
  cmake -S . -B "$dir" -G Ninja -DRINGSIDE_GUI=OFF -DRINGSIDE_WERROR=ON "$@" \
    >"$dir/configure.log" 2>&1 ||
    { cat "$dir/configure.log"; return 1; }
  grep -E '^-- +(ringside|RINGSIDE_)' "$dir/configure.log" || true
  ninja -C "$dir" -j"$JOBS" "${targets[@]}"
}

run_ctest() {  # run_ctest DIR CTEST_ARGS...
  local dir=$1
  shift
  ctest --test-dir "$dir" --output-on-failure -j"$JOBS" --no-tests=error "$@"
}

export CI=${CI:-}
# ccache (installed by setup-deps, used by CMake when found): compile commands rewritten relative
# to the checkout, so another clone or worktree of the same sources hits the same cache.
export CCACHE_BASEDIR=${CCACHE_BASEDIR:-$PWD} CCACHE_NOHASHDIR=${CCACHE_NOHASHDIR:-1}
export CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
total_start=$SECONDS

stage deps bash scripts/setup-deps.sh
if [[ ${stage_ok[deps]} != 1 ]]; then
  echo "==> dependencies missing; stopping"
  exit 1
fi

pip_torch() {
  local rc=0
  bash scripts/setup-pip-torch.sh >/dev/null || rc=$?
  ((rc == 77)) && echo "pip-torch: skipped (see the line above); e2e.pip-torchrun-2 will skip too"
  ((rc == 0 || rc == 77))
}
if [[ ${RINGSIDE_PIP_TORCH:-1} != 0 ]]; then
  stage pip-torch pip_torch
fi

stage build configure_and_build build -DRINGSIDE_GUI=ON
if [[ ${stage_ok[build]} == 1 ]]; then
  stage test run_ctest build -LE heavy
else
  skip_stage test "build failed"
fi

stage release-build configure_and_build build-release -DCMAKE_BUILD_TYPE=Release -DRINGSIDE_GUI=ON
if [[ ${stage_ok[release-build]} == 1 ]]; then
  stage release-test run_ctest build-release -L unit
else
  skip_stage release-test "release-build failed"
fi

if [[ ${RINGSIDE_SKIP_SANITIZERS:-0} != 1 ]]; then
  # -O1: what the sanitizers' own documentation recommends, and a third less compile time.
  sanitizer_flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g"
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g" -DRINGSIDE_PERF_PROGRAMS=OFF)
  stage asan-build configure_and_build build-asan -DRINGSIDE_SANITIZE=address "${sanitizer_flags[@]}"
  if [[ ${stage_ok[asan-build]} == 1 ]]; then
    libasan=$(gcc -print-file-name=libasan.so)
    # detect_leaks=0 only for the e2e run: its jobs include shells and /bin/true, whose own
    # leaks at exit are not ours. verify_asan_link_order=0: `ringside record` puts its preload
    # library before the ASan runtime in LD_PRELOAD; the runtime still precedes libc.
    stage asan-test bash -c "
      ASAN_OPTIONS=abort_on_error=1:halt_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir build-asan --output-on-failure -j$JOBS --no-tests=error -L unit &&
      RINGSIDE_E2E_EXTRA_PRELOAD='$libasan' \
      ASAN_OPTIONS=detect_leaks=0:verify_asan_link_order=0:halt_on_error=1 \
      UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
        ctest --test-dir build-asan --output-on-failure -j$JOBS --no-tests=error -L e2e-native"
  else
    skip_stage asan-test "asan-build failed"
  fi

  stage tsan-build configure_and_build build-tsan -DRINGSIDE_SANITIZE=thread "${sanitizer_flags[@]}"
  if [[ ${stage_ok[tsan-build]} == 1 ]]; then
    stage tsan-test env TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 \
      ctest --test-dir build-tsan --output-on-failure -j"$JOBS" --no-tests=error -L unit
  else
    skip_stage tsan-test "tsan-build failed"
  fi
fi

# A machine without CUDA: the toolkit hidden, the GPU parts off; the NCCL wrapper and
# plugin still build (they need neither CUDA nor NCCL) and are tested on the stand-ins.
nocuda_dirs=(tests/unit/collector tests/unit/interpose tests/standins)
stage nocuda-build configure_and_build build-nocuda -DRINGSIDE_CUDA=OFF -DCMAKE_IGNORE_PATH=/usr/local/cuda \
  -DRINGSIDE_PERF_PROGRAMS=OFF -- cli/all interpose/all collector/all "${nocuda_dirs[@]/%//all}"
nocuda_test() {
  local d
  for d in "${nocuda_dirs[@]}"; do run_ctest "build-nocuda/$d" -L 'unit|standin' || return 1; done
}
if [[ ${stage_ok[nocuda-build]} == 1 ]]; then
  stage nocuda-test nocuda_test
else
  skip_stage nocuda-test "nocuda-build failed"
fi

echo "==> total: $((SECONDS - total_start)) s"
if ((${#failed[@]} > 0)); then
  echo "==> FAILED stages: ${failed[*]}"
  exit 1
fi
echo "==> all stages passed"

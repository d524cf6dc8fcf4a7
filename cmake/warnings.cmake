# Warnings for ringside's own targets (never for third-party sources such as
# the ImGui backends). Call ringside_warnings(<target>) on every target we own.
# They are errors with -DRINGSIDE_WERROR=ON (CI: scripts/test.sh), warnings otherwise.
function(ringside_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow
    -Wnon-virtual-dtor -Wcast-align -Wunused -Woverloaded-virtual
    -Wnull-dereference -Wformat=2 -Wimplicit-fallthrough)
  if(RINGSIDE_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
  if(NOT RINGSIDE_SANITIZE STREQUAL "")
    # Sanitizer instrumentation makes GCC's flow analysis report uninitialised
    # values inside std::function and <regex> that are not there.
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
  endif()
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND CMAKE_CXX_COMPILER_VERSION VERSION_GREATER_EQUAL 12
     AND CMAKE_CXX_COMPILER_VERSION VERSION_LESS 13)
    # GCC 12 at -O3 (Release) reports a memcpy "accessing 9223372036854775809 or more bytes" that
    # "may overlap" inside libstdc++'s basic_string::_M_replace for `"literal" + std::string`
    # and `(c ? "," : "") + std::to_string(n)` (GCC bug 105329): two dozen such expressions in the
    # tree, none of them an overlap. Only the Release configuration drops -Wrestrict; the -O2 and
    # -O0 builds (RelWithDebInfo, Debug, the sanitizer builds) keep it, so a real overlap is still
    # an error in CI.
    target_compile_options(${target} PRIVATE $<$<CONFIG:Release>:-Wno-restrict>)
  endif()
endfunction()

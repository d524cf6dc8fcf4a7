# Warnings for ringside's own targets (never for third-party sources such as
# the ImGui backends). Call ringside_warnings(<target>) on every target we own.
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
endfunction()

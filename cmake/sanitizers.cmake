# Sanitizer builds are one switch away: -DRINGSIDE_SANITIZE=address|thread.
# They apply to everything compiled in the tree so that tests see one runtime.
if(RINGSIDE_SANITIZE STREQUAL "address")
  # vptr is left out: the preload library reads Gloo objects whose type info
  # lives in libgloo, which it must not link.
  add_compile_options(-fsanitize=address,undefined -fno-sanitize=vptr -fno-omit-frame-pointer
                      -fno-sanitize-recover=undefined)
  add_link_options(-fsanitize=address,undefined)
elseif(RINGSIDE_SANITIZE STREQUAL "thread")
  add_compile_options(-fsanitize=thread -fno-omit-frame-pointer)
  add_link_options(-fsanitize=thread)
elseif(NOT RINGSIDE_SANITIZE STREQUAL "")
  message(FATAL_ERROR "RINGSIDE_SANITIZE must be '', 'address' or 'thread' (got '${RINGSIDE_SANITIZE}')")
endif()

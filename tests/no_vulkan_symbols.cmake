# Fails if a library defines a symbol named like a Vulkan command (vk*):
# such a definition would shadow the loader's, or volk's, in a host that
# links the library statically.
foreach(library IN LISTS LIBRARIES)
  execute_process(COMMAND ${NM} --defined-only --extern-only ${library}
                  OUTPUT_VARIABLE symbols RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${library}")
  endif()
  string(REGEX MATCHALL "[ \t][A-Za-z][ \t]vk[A-Z][A-Za-z0-9_]*" found "${symbols}")
  if(found)
    message(FATAL_ERROR "${library} defines Vulkan-named symbols:${found}")
  endif()
  string(REGEX MATCHALL "\n[^\n]*[ \t][A-Za-z][ \t]" lines "${symbols}")
  list(LENGTH lines count)
  message(STATUS "${library}: ${count} external symbols, none named vk*")
endforeach()

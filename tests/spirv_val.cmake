# cmake -DSPIRV_VAL=path "-DFILES=a.spv;b.spv" -P spirv_val.cmake
foreach(f ${FILES})
  execute_process(COMMAND ${SPIRV_VAL} --target-env vulkan1.1 ${f} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "spirv-val rejected ${f}: ${err}")
  endif()
  message(STATUS "spirv-val: ${f} ok")
endforeach()

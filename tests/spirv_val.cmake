# cmake -DSPIRV_VAL=path -DSPIRV_DIS=path "-DFILES=a.spv;b.spv" -P spirv_val.cmake
# Every module passes spirv-val; exactly the *_ucf* modules declare
# SubgroupUniformControlFlowKHR and exactly the *_shuffle modules the
# GroupNonUniformShuffle capability (the engine picks each only on devices
# that have the feature; declaring it elsewhere would be invalid there).
foreach(f ${FILES})
  execute_process(COMMAND ${SPIRV_VAL} --target-env vulkan1.1 ${f} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "spirv-val rejected ${f}: ${err}")
  endif()
  execute_process(COMMAND ${SPIRV_DIS} ${f} RESULT_VARIABLE rc OUTPUT_VARIABLE dis ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "spirv-dis failed on ${f}: ${err}")
  endif()
  string(FIND "${dis}" "OpExecutionMode %main SubgroupUniformControlFlowKHR" at)
  if(f MATCHES "_ucf(_shuffle)?\\.spv$" AND at EQUAL -1)
    message(FATAL_ERROR "${f} lacks the SubgroupUniformControlFlowKHR execution mode")
  elseif(NOT f MATCHES "_ucf(_shuffle)?\\.spv$" AND NOT at EQUAL -1)
    message(FATAL_ERROR "${f} declares SubgroupUniformControlFlowKHR but is meant for devices without it")
  endif()
  string(FIND "${dis}" "OpCapability GroupNonUniformShuffle" shuffle)
  if(f MATCHES "_shuffle\\.spv$" AND shuffle EQUAL -1)
    message(FATAL_ERROR "${f} lacks the GroupNonUniformShuffle capability its rows of a few lanes need")
  elseif(NOT f MATCHES "_shuffle\\.spv$" AND NOT shuffle EQUAL -1)
    message(FATAL_ERROR "${f} declares GroupNonUniformShuffle but is meant for devices without shuffles")
  endif()
  message(STATUS "spirv-val: ${f} ok")
endforeach()

# cmake -DSPIRV_VAL=path -DSPIRV_DIS=path "-DFILES=a.spv;b.spv" -P spirv_val.cmake
# Every module passes spirv-val; exactly the *_ucf* modules (sg_ucf,
# sg_ucf_shuffle, sg_ucf_key) declare
# SubgroupUniformControlFlowKHR and exactly the *_shuffle modules the
# GroupNonUniformShuffle capability (the engine picks each only on devices
# that have the feature; declaring it elsewhere would be invalid there).
# Exactly the single-pass modules (their gather), the bf16 modules
# (softmax_common.glsl's UNROLL_SLOTS), the attention modules
# (UNROLL_TILE_LOADS in the f16 ones, load_attention_tile() in every one)
# and the backward modules (write_tile_rereading_gradient(), whose slots
# are indexed by its loops' counters) ask for a loop to be unrolled:
# NVIDIA's compiler left those slot loops rolled, with the slots in local
# memory, 2-3x slower; the other modules keep their code exactly.
# Every specialization constant a module declares has an id the engine
# fills (below SPEC_ID_COUNT of shaders/specialization_ids.h, SPEC_IDS; the
# copy module's up to SPEC_ID_COPY_MODE): an id past them would keep its
# default whatever the plan.

# FATAL_ERROR unless the disassembly `dis` of `file` holds `text` exactly
# when the file name matches `pattern`.
function(expect_exactly_where file dis text pattern)
  string(FIND "${dis}" "${text}" at)
  if(file MATCHES "${pattern}" AND at EQUAL -1)
    message(FATAL_ERROR "${file} lacks '${text}', which the modules named like ${pattern} carry")
  elseif(NOT file MATCHES "${pattern}" AND NOT at EQUAL -1)
    message(FATAL_ERROR "${file} holds '${text}' but is meant for devices without it (only ${pattern} may)")
  endif()
endfunction()

# The value of `#define NAME value` in SPEC_IDS, into `out`.
function(spec_id_define name out)
  file(STRINGS ${SPEC_IDS} line REGEX "^#define ${name} [0-9]+")
  if(NOT line)
    message(FATAL_ERROR "${SPEC_IDS} has no #define ${name}")
  endif()
  string(REGEX REPLACE "^#define ${name} ([0-9]+).*" "\\1" value "${line}")
  set(${out} ${value} PARENT_SCOPE)
endfunction()
spec_id_define(SPEC_ID_COUNT spec_id_count)
spec_id_define(SPEC_ID_COPY_MODE spec_id_copy_mode)

foreach(f ${FILES})
  execute_process(COMMAND ${SPIRV_VAL} --target-env vulkan1.1 ${f} RESULT_VARIABLE rc ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "spirv-val rejected ${f}: ${err}")
  endif()
  execute_process(COMMAND ${SPIRV_DIS} ${f} RESULT_VARIABLE rc OUTPUT_VARIABLE dis ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "spirv-dis failed on ${f}: ${err}")
  endif()
  expect_exactly_where(${f} "${dis}" "OpExecutionMode %main SubgroupUniformControlFlowKHR" "_ucf(_shuffle|_key)?\\.spv$")
  expect_exactly_where(${f} "${dis}" "OpCapability GroupNonUniformShuffle\n" "_shuffle\\.spv$")
  expect_exactly_where(${f} "${dis}" " Unroll\n" "(single_pass_|_bf16_|_attn_|backward_)")
  set(filled ${spec_id_count})
  if(f MATCHES "/copy\\.spv$")
    math(EXPR filled "${spec_id_copy_mode} + 1")
  endif()
  string(REGEX MATCHALL "SpecId [0-9]+" spec_ids "${dis}")
  foreach(decoration ${spec_ids})
    string(REPLACE "SpecId " "" id "${decoration}")
    if(NOT id LESS filled)
      message(FATAL_ERROR "${f} declares constant_id ${id}, past the ${filled} ids the engine fills")
    endif()
  endforeach()
  message(STATUS "spirv-val: ${f} ok")
endforeach()

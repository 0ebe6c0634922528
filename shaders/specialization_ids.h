// The specialization constant ids of the engine's shaders, one list read
// by both sides: the GLSL modules declare `layout(constant_id = SPEC_ID_X)`
// and the engine (engine/src/pipeline.cpp) fills the value of id X from a
// pipeline's key. Plain #defines, so that glslang and a C++ compiler read
// the same file. An id a module does not declare is ignored by Vulkan
// (VkSpecializationInfo), so every module takes the whole list.
#ifndef VKSOFTMAX_SPECIALIZATION_IDS_H
#define VKSOFTMAX_SPECIALIZATION_IDS_H

// softmax_common.glsl: every softmax, single-pass and backward module.
#define SPEC_ID_WORKGROUP_SIZE 0
#define SPEC_ID_SLOTS 1
#define SPEC_ID_VEC 2
#define SPEC_ID_LOG 3
#define SPEC_ID_SUBGROUP_ROWS 4
#define SPEC_ID_ACCURATE 5
#define SPEC_ID_KIND 6
#define SPEC_ID_ROW_LANES 7  // declared by the shuffle modules alone
#define SPEC_ID_ODD_ROWS 8
#define SPEC_ID_PATIENCE 9
// softmax_attention.glsl (SINKS also softmax_backward.glsl).
#define SPEC_ID_MASK 10
#define SPEC_ID_CAUSAL 11
#define SPEC_ID_SINKS 12
#define SPEC_ID_LSE 13
#define SPEC_ID_ALIBI 14
#define SPEC_ID_MASK_PER_HEAD 15
// softmax_common.glsl.
#define SPEC_ID_LOG_OVERFLOW_GUARD 16
#define SPEC_ID_SCALE_IN_EXP 17
// softmax_attention.glsl.
#define SPEC_ID_QUERY_MAJOR 18
#define SPEC_ID_QUERY_BLOCK_SHIFT 19
// softmax_single_pass.comp.
#define SPEC_ID_HELD_CHUNKS 20
#define SPEC_ID_GATHER_AHEAD 21
// softmax_common.glsl.
#define SPEC_ID_NONFINITE_BY_SUM 22
// softmax_attention.glsl.
#define SPEC_ID_TILE_LOADS_TOGETHER 23
// softmax_backward.comp.
#define SPEC_ID_REREAD_GRADIENT 24
// softmax.comp, attention modules.
#define SPEC_ID_NEXT_ROW_FIRST 25
// softmax_tiles.glsl (KIND_ROW_IN_REGISTERS in softmax.comp).
#define SPEC_ID_WRITE_SHARES 26
// How many ids the softmax modules' list has.
#define SPEC_ID_COUNT 27

// copy.comp: the workgroup size (SPEC_ID_WORKGROUP_SIZE) and which pass.
#define SPEC_ID_COPY_MODE 1

#endif

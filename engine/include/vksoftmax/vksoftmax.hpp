// vksoftmax: softmax and log-softmax with Vulkan compute shaders.
#pragma once
#include "vksoftmax/accuracy.hpp"
#include "vksoftmax/attention.hpp"
#include "vksoftmax/buffer.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/half.hpp"
#include "vksoftmax/pipeline.hpp"
#include "vksoftmax/plan.hpp"
#include "vksoftmax/run.hpp"
#include "vksoftmax/timer.hpp"
#include "vksoftmax/types.hpp"

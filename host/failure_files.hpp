// A failing conformance check's tensors as .npy files, with a JSON file
// that says which check they are and how to run it again: what a driver
// bug report needs.
#pragma once
#include <string>

#include "vksoftmax/conformance.hpp"

namespace vksoftmax::cli {

// Writes `r`'s evidence into `folder` (created if missing) as
// PREFIX-input.npy, -output.npy, -reference.npy, with -gradient.npy
// (backward) and -mask.npy (attention) where the check has them, and
// PREFIX.json. The tensors are (outer, axis, inner) in the check's storage
// type; the mask (mask rows, axis) in its own. Nothing is written for a
// result without evidence. Returns the JSON file's path, or "".
std::string save_failure(const std::string& folder, const std::string& prefix, const conformance::Result& r);

}  // namespace vksoftmax::cli

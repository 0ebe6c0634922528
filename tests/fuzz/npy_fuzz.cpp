// libFuzzer target: the .npy header parser must turn any bytes into either
// a header whose sizes cannot overflow, or a FormatError; never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using namespace vksoftmax::npy;
    try {
        Header h = parse_header(data, size);
        if (h.data_offset > size) std::abort();  // the header must lie inside the bytes given
        (void)(h.elements() * kind_size(h.kind));
    } catch (const FormatError&) {
    }
    return 0;
}

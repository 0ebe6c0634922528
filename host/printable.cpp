#include "printable.hpp"

#include <cstdint>
#include <cstdio>

namespace vksoftmax::cli {
namespace {

// The length of the valid UTF-8 sequence of two to four bytes starting at
// `at`, or 0. Overlong forms, surrogates, code points past U+10FFFF and the
// C1 controls (U+0080-U+009F, which some terminals obey) count as invalid.
size_t utf8_sequence(std::string_view s, size_t at) {
    const auto byte = [&](size_t i) { return static_cast<uint8_t>(s[i]); };
    const uint8_t lead = byte(at);
    size_t length = 0;
    uint32_t code = 0;
    if (lead >= 0xc2 && lead <= 0xdf) length = 2, code = lead & 0x1fu;
    else if (lead >= 0xe0 && lead <= 0xef) length = 3, code = lead & 0x0fu;
    else if (lead >= 0xf0 && lead <= 0xf4) length = 4, code = lead & 0x07u;
    else return 0;
    if (at + length > s.size()) return 0;
    for (size_t i = 1; i < length; ++i) {
        if ((byte(at + i) & 0xc0) != 0x80) return 0;
        code = (code << 6) | (byte(at + i) & 0x3fu);
    }
    const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (code < smallest[length] || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return 0;
    if (code <= 0x9f) return 0;  // C1 control
    return length;
}

}  // namespace

std::string printable(std::string_view text) {
    std::string out;
    out.reserve(text.size());
    for (size_t i = 0; i < text.size();) {
        const auto c = static_cast<uint8_t>(text[i]);
        if ((c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t') {
            out += static_cast<char>(c);
            ++i;
        } else if (const size_t n = c >= 0x80 ? utf8_sequence(text, i) : 0) {
            out.append(text.substr(i, n));
            i += n;
        } else {
            char escaped[5];
            std::snprintf(escaped, sizeof escaped, "\\x%02x", c);
            out += escaped;
            ++i;
        }
    }
    return out;
}

}  // namespace vksoftmax::cli

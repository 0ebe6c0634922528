#include "npy.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>

namespace vksoftmax::npy {
namespace {

const char kMagic[] = "\x93NUMPY";
constexpr uint64_t kMaxHeader = 1u << 20;  // NumPy itself refuses headers past 10 kB by default

struct Descr {
    const char* code;  // the descr without its byte-order character
    Kind kind;
};
const Descr kDescrs[] = {{"f2", Kind::f16}, {"f4", Kind::f32}, {"f8", Kind::f64}, {"i1", Kind::i8},
                         {"i2", Kind::i16}, {"i4", Kind::i32}, {"i8", Kind::i64}, {"u1", Kind::u8},
                         {"u2", Kind::u16}, {"u4", Kind::u32}, {"u8", Kind::u64}, {"b1", Kind::b1},
                         {"V2", Kind::bf16}};

// A tiny parser for the Python literal NumPy writes:
// {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
class Parser {
public:
    explicit Parser(const std::string& s) : s_(s) {}
    void ws() {
        while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n')) ++i_;
    }
    bool eat(char c) {
        ws();
        if (i_ < s_.size() && s_[i_] == c) {
            ++i_;
            return true;
        }
        return false;
    }
    void expect(char c, const char* where) {
        if (!eat(c)) fail(std::string("expected '") + c + "' " + where);
    }
    std::string string() {
        ws();
        if (i_ >= s_.size() || (s_[i_] != '\'' && s_[i_] != '"')) fail("expected a quoted string");
        const char q = s_[i_++];
        const size_t start = i_;
        while (i_ < s_.size() && s_[i_] != q) ++i_;
        if (i_ >= s_.size()) fail("unterminated string");
        return s_.substr(start, i_++ - start);
    }
    bool boolean() {
        ws();
        if (s_.compare(i_, 4, "True") == 0) return i_ += 4, true;
        if (s_.compare(i_, 5, "False") == 0) return i_ += 5, false;
        fail("'fortran_order' is not True or False");
        return false;
    }
    uint64_t integer() {
        ws();
        if (i_ >= s_.size() || !std::isdigit(static_cast<unsigned char>(s_[i_]))) fail("'shape' holds a non-integer");
        uint64_t v = 0;
        while (i_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[i_]))) {
            const uint64_t d = static_cast<uint64_t>(s_[i_++] - '0');
            if (v > (std::numeric_limits<uint64_t>::max() - d) / 10) fail("'shape' holds an absurdly large dimension");
            v = v * 10 + d;
        }
        if (i_ < s_.size() && s_[i_] == 'L') ++i_;  // Python 2 long suffix
        return v;
    }
    std::vector<uint64_t> tuple() {
        expect('(', "to open 'shape'");
        std::vector<uint64_t> dims;
        while (!eat(')')) {
            if (dims.size() > 64) fail("'shape' has more than 64 dimensions");
            dims.push_back(integer());
            if (!eat(',')) {
                expect(')', "to close 'shape'");
                break;
            }
        }
        return dims;
    }
    bool at_end() {
        ws();
        return i_ == s_.size();
    }
    [[noreturn]] void fail(const std::string& what) const {
        // One line: the header's padding and newline are not shown.
        std::string excerpt = s_.substr(0, 120);
        while (!excerpt.empty() && std::isspace(static_cast<unsigned char>(excerpt.back()))) excerpt.pop_back();
        for (char& c : excerpt)
            if (!std::isprint(static_cast<unsigned char>(c))) c = '?';
        throw FormatError("header: " + what + " at offset " + std::to_string(i_) + " of \"" + excerpt + "\"");
    }

private:
    const std::string& s_;
    size_t i_ = 0;
};

// What a path that is not a regular file names, for messages.
const char* file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISFIFO(mode)) return "a pipe";
    if (S_ISSOCK(mode)) return "a socket";
    return "a special file";
}

uint32_t read_le(const uint8_t* p, int n) {
    uint32_t v = 0;
    for (int k = n - 1; k >= 0; --k) v = (v << 8) | p[k];
    return v;
}

}  // namespace

const char* kind_descr(Kind k) {
    switch (k) {
        case Kind::f16: return "<f2";
        case Kind::f32: return "<f4";
        case Kind::f64: return "<f8";
        case Kind::i8: return "|i1";
        case Kind::i16: return "<i2";
        case Kind::i32: return "<i4";
        case Kind::i64: return "<i8";
        case Kind::u8: return "|u1";
        case Kind::u16: return "<u2";
        case Kind::u32: return "<u4";
        case Kind::u64: return "<u8";
        case Kind::b1: return "|b1";
        case Kind::bf16: return "<V2";
    }
    return "?";
}

uint32_t kind_size(Kind k) {
    switch (k) {
        case Kind::i8: case Kind::u8: case Kind::b1: return 1;
        case Kind::f16: case Kind::i16: case Kind::u16: case Kind::bf16: return 2;
        case Kind::f32: case Kind::i32: case Kind::u32: return 4;
        case Kind::f64: case Kind::i64: case Kind::u64: return 8;
    }
    return 0;
}

uint64_t Header::elements() const {
    uint64_t n = 1;
    for (uint64_t d : shape) n *= d;
    return n;
}

namespace {

// The header dictionary's text, after the magic string, version and length;
// `data_offset` set to where the data starts.
std::string header_text(const uint8_t* bytes, size_t size, uint64_t& data_offset) {
    if (size < 10) throw FormatError("not a .npy file: " + std::to_string(size) + " bytes, shorter than any header");
    if (std::memcmp(bytes, kMagic, 6) != 0) throw FormatError("not a .npy file: the magic string \\x93NUMPY is missing");
    const int major = bytes[6], minor = bytes[7];
    if (major < 1 || major > 3 || minor != 0)
        throw FormatError("unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor));
    const int len_bytes = major == 1 ? 2 : 4;
    if (size < static_cast<size_t>(8 + len_bytes)) throw FormatError("truncated header length");
    const uint64_t header_len = read_le(bytes + 8, len_bytes);
    data_offset = 8 + static_cast<uint64_t>(len_bytes) + header_len;
    if (header_len > kMaxHeader) throw FormatError("header length " + std::to_string(header_len) + " is absurd");
    if (data_offset > size)
        throw FormatError("truncated header: it claims " + std::to_string(header_len) + " bytes, the file has " +
                          std::to_string(size - 8 - len_bytes));
    return std::string(reinterpret_cast<const char*>(bytes) + 8 + len_bytes, header_len);
}

// The element kind of a 'descr' value such as '<f4'.
Kind parse_descr(const std::string& d) {
    if (d == "bfloat16") return Kind::bf16;
    const Descr* found = nullptr;
    for (const Descr& e : kDescrs)
        if (d.size() == 3 && d.compare(1, 2, e.code) == 0) found = &e;
    if (!found || std::string("<>|=").find(d[0]) == std::string::npos)
        throw FormatError("header: 'descr' '" + d + "' is not a supported dtype (float16/32/64, bfloat16 as '<V2', integers, bool)");
    // '=' is native order, little-endian on every host we build for;
    // '>' matters only past one byte.
    if (d[0] == '>' && kind_size(found->kind) > 1)
        throw FormatError("header: 'descr' '" + d + "' is big-endian; only little-endian data is supported");
    return found->kind;
}

// The dictionary: every key once at most, all three present, nothing else.
Header parse_dictionary(const std::string& text) {
    Parser p(text);
    Header h;
    bool have_descr = false, have_order = false, have_shape = false;
    p.expect('{', "to open the header dictionary");
    while (!p.eat('}')) {
        const std::string key = p.string();
        p.expect(':', "after a key");
        if (key == "descr") {
            h.kind = parse_descr(p.string());
            have_descr = true;
        } else if (key == "fortran_order") {
            h.fortran_order = p.boolean();
            have_order = true;
        } else if (key == "shape") {
            h.shape = p.tuple();
            have_shape = true;
        } else {
            p.fail("unknown key '" + key + "'");
        }
        if (!p.eat(',')) {
            p.expect('}', "to close the header dictionary");
            break;
        }
    }
    if (!p.at_end()) p.fail("text after the dictionary");
    if (!have_descr || !have_order || !have_shape)
        throw FormatError(std::string("header: missing key '") +
                          (!have_descr ? "descr" : !have_order ? "fortran_order" : "shape") + "'");
    return h;
}

// The byte count must fit in 64 bits, so that no size computed from the
// shape can wrap (an empty dimension anywhere makes it 0).
void check_byte_count(const Header& h) {
    uint64_t data_bytes = kind_size(h.kind);
    bool empty = false;
    for (uint64_t d : h.shape) {
        empty = empty || d == 0;
        if (!empty && data_bytes > std::numeric_limits<uint64_t>::max() / d)
            throw FormatError("header: 'shape' describes more than 2^64 bytes");
        data_bytes = empty ? 0 : data_bytes * d;
    }
}

}  // namespace

Header parse_header(const uint8_t* bytes, size_t size) {
    uint64_t data_offset = 0;
    const std::string text = header_text(bytes, size, data_offset);
    Header h = parse_dictionary(text);
    h.data_offset = data_offset;
    check_byte_count(h);
    return h;
}

Array read(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw std::runtime_error("cannot open '" + path + "': " + std::strerror(errno));
    if (!S_ISREG(st.st_mode)) throw FormatError("'" + path + "' is " + file_kind(st.st_mode) + ", not a .npy file");
    std::ifstream f(path, std::ios::binary);
    if (!f) throw std::runtime_error("cannot open '" + path + "': " + std::strerror(errno));
    f.seekg(0, std::ios::end);
    const std::streamoff size = f.tellg();
    if (size < 0) throw std::runtime_error("cannot read '" + path + "' (not a regular file?)");
    f.seekg(0);
    if (size == 0) throw FormatError("'" + path + "' is empty");
    std::vector<uint8_t> head(static_cast<size_t>(std::min<std::streamoff>(size, 8 + 4 + kMaxHeader)));
    f.read(reinterpret_cast<char*>(head.data()), static_cast<std::streamsize>(head.size()));
    Array a;
    try {
        a.header = parse_header(head.data(), head.size());
    } catch (const FormatError& e) {
        throw FormatError("'" + path + "': " + e.what());
    }
    const uint64_t available = static_cast<uint64_t>(size) - a.header.data_offset;
    const uint64_t n = a.header.elements();
    const uint64_t need = n * kind_size(a.header.kind);
    if (available != need)
        throw FormatError("'" + path + "': shape needs " + std::to_string(need) + " bytes of data, the file has " +
                          std::to_string(available) + (available < need ? " (truncated)" : " (extra bytes)"));
    a.data.resize(need);
    f.seekg(static_cast<std::streamoff>(a.header.data_offset));
    f.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(need));
    if (!f) throw std::runtime_error("cannot read the data of '" + path + "'");
    return a;
}

std::string shape_repr(const std::vector<uint64_t>& shape) {
    std::string tuple = "(";
    for (size_t i = 0; i < shape.size(); ++i) tuple += (i ? ", " : "") + std::to_string(shape[i]);
    return tuple + (shape.size() == 1 ? ",)" : ")");
}

std::vector<uint8_t> encode(Kind kind, const std::vector<uint64_t>& shape, bool fortran_order, const void* data,
                            size_t bytes) {
    std::string dict = std::string("{'descr': '") + kind_descr(kind) + "', 'fortran_order': " +
                       (fortran_order ? "True" : "False") + ", 'shape': " + shape_repr(shape) + ", }";
    // Pad with spaces so that the data start on a 64-byte boundary; end with '\n'.
    const bool v2 = dict.size() + 1 + 10 > 65535;
    const size_t prefix = v2 ? 12 : 10;
    size_t total = prefix + dict.size() + 1;
    dict.append((64 - total % 64) % 64, ' ');
    dict += '\n';
    std::vector<uint8_t> out(kMagic, kMagic + 6);
    out.push_back(v2 ? 2 : 1);
    out.push_back(0);
    const uint32_t len = static_cast<uint32_t>(dict.size());
    for (size_t k = 0; k < (v2 ? 4u : 2u); ++k) out.push_back(static_cast<uint8_t>(len >> (8 * k)));
    out.insert(out.end(), dict.begin(), dict.end());
    const uint8_t* d = static_cast<const uint8_t*>(data);
    out.insert(out.end(), d, d + bytes);
    return out;
}

}  // namespace vksoftmax::npy

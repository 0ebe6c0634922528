// printable(): text that quotes a user's input (a file's bytes, a path) made
// safe for a terminal: control characters and bytes that are not valid UTF-8
// are written as \xNN, so that no input reaches the terminal as a control
// sequence.
#pragma once
#include <string>
#include <string_view>

namespace vksoftmax::cli {

std::string printable(std::string_view text);

}  // namespace vksoftmax::cli

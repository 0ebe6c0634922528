// OutputFile: a temporary file beside the target, renamed into place only by
// commit(); dropped uncommitted, it is removed and the target is untouched.
// SIGINT, SIGTERM or SIGHUP while it exists removes it too, and the process
// then ends by that signal (status 128 + signal in a shell).
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace vksoftmax::cli {

// A file that cannot be read or written: exit code 3.
struct FileError : std::runtime_error {
    using std::runtime_error::runtime_error;
};

class OutputFile {
public:
    // Creates the temporary file now, so that an unwritable folder fails
    // before any work is done.
    explicit OutputFile(const std::string& target);
    ~OutputFile();
    OutputFile(const OutputFile&) = delete;
    OutputFile& operator=(const OutputFile&) = delete;

    void commit(const std::vector<uint8_t>& bytes);

private:
    std::string target_, temp_;
    int fd_ = -1;
    int slot_ = -1;  // its place among the files a signal removes
    bool committed_ = false;
};

}  // namespace vksoftmax::cli

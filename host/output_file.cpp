#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace vksoftmax::cli {

OutputFile::OutputFile(const std::string& target) : target_(target) {
    struct stat st {};
    if (::stat(target.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw FileError("cannot write output '" + target + "': it is a directory");
    temp_ = target + ".tmp-XXXXXX";
    std::vector<char> name(temp_.begin(), temp_.end());
    name.push_back('\0');
    fd_ = ::mkstemp(name.data());
    if (fd_ < 0) throw FileError("cannot write output '" + target + "': " + std::strerror(errno));
    temp_ = name.data();
}

OutputFile::~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(temp_.c_str());
}

void OutputFile::commit(const std::vector<uint8_t>& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd_, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) throw FileError("cannot write output '" + target_ + "': " + std::strerror(errno));
        done += static_cast<size_t>(n);
    }
    // The data reach the disk before the rename makes them the target.
    if (::fsync(fd_) != 0) throw FileError("cannot write output '" + target_ + "': " + std::strerror(errno));
    // mkstemp makes the file 0600; give it the mode a plain create would.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    ::fchmod(fd_, 0666 & ~mask);
    ::close(fd_);
    fd_ = -1;
    if (::rename(temp_.c_str(), target_.c_str()) != 0)
        throw FileError("cannot rename '" + temp_ + "' to '" + target_ + "': " + std::strerror(errno));
    committed_ = true;
}

}  // namespace vksoftmax::cli

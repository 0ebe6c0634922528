#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>

namespace vksoftmax::cli {
namespace {

// The temporary files in progress, for the signal handler: fixed storage
// written before a slot is marked in use, so that the handler reads only
// complete paths and calls only async-signal-safe functions (unlink,
// signal, raise). A process writes a few outputs at most at once.
constexpr int kSlots = 8;
constexpr size_t kPathBytes = 4096;
struct PendingFile {
    char path[kPathBytes];
    volatile sig_atomic_t in_use;
};
PendingFile pending[kSlots];
const int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP};

// Removes every pending temporary file, then dies of the same signal with
// its default action, so that the parent sees it (a shell: 128 + signal).
extern "C" void remove_pending_and_reraise(int signal_number) {
    for (PendingFile& p : pending)
        if (p.in_use) ::unlink(p.path);
    std::signal(signal_number, SIG_DFL);
    std::raise(signal_number);
}

void install_cleanup_handlers() {
    static const bool installed = [] {
        struct sigaction action {};
        action.sa_handler = remove_pending_and_reraise;
        sigemptyset(&action.sa_mask);
        for (int sig : kCleanupSignals) sigaddset(&action.sa_mask, sig);
        for (int sig : kCleanupSignals) {
            struct sigaction previous {};
            // A signal the invoker set to be ignored stays ignored (nohup).
            if (::sigaction(sig, nullptr, &previous) == 0 && previous.sa_handler == SIG_IGN) continue;
            ::sigaction(sig, &action, nullptr);
        }
        return true;
    }();
    (void)installed;
}

// Blocks the cleanup signals for its lifetime.
class SignalsBlocked {
public:
    SignalsBlocked() {
        sigset_t set;
        sigemptyset(&set);
        for (int sig : kCleanupSignals) sigaddset(&set, sig);
        ::pthread_sigmask(SIG_BLOCK, &set, &previous_);
    }
    ~SignalsBlocked() { ::pthread_sigmask(SIG_SETMASK, &previous_, nullptr); }

private:
    sigset_t previous_;
};

int claim_slot(const std::string& path) {
    if (path.size() >= kPathBytes) return -1;
    for (int i = 0; i < kSlots; ++i)
        if (!pending[i].in_use) {
            std::memcpy(pending[i].path, path.c_str(), path.size() + 1);
            pending[i].in_use = 1;
            return i;
        }
    return -1;
}

void release_slot(int slot) {
    if (slot >= 0) pending[slot].in_use = 0;
}

}  // namespace

OutputFile::OutputFile(const std::string& target) : target_(target) {
    struct stat st {};
    if (::stat(target.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
        throw FileError("cannot write output '" + target + "': it is a directory");
    temp_ = target + ".tmp-XXXXXX";
    std::vector<char> name(temp_.begin(), temp_.end());
    name.push_back('\0');
    install_cleanup_handlers();
    // No signal between the file's creation and its registration.
    SignalsBlocked blocked;
    fd_ = ::mkstemp(name.data());
    if (fd_ < 0) throw FileError("cannot write output '" + target + "': " + std::strerror(errno));
    temp_ = name.data();
    slot_ = claim_slot(temp_);
}

OutputFile::~OutputFile() {
    if (fd_ >= 0) ::close(fd_);
    SignalsBlocked blocked;
    if (!committed_) ::unlink(temp_.c_str());
    release_slot(slot_);
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
    SignalsBlocked blocked;  // renamed and released as one step
    if (::rename(temp_.c_str(), target_.c_str()) != 0)
        throw FileError("cannot rename '" + temp_ + "' to '" + target_ + "': " + std::strerror(errno));
    committed_ = true;
    release_slot(slot_);
    slot_ = -1;
}

}  // namespace vksoftmax::cli

#include "child_process.hpp"

#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include "vksoftmax/error.hpp"

extern char** environ;

namespace vksoftmax::cli {
namespace {

// A file descriptor closed when it goes out of scope.
class Descriptor {
  public:
    explicit Descriptor(int fd = -1) : fd_(fd) {}
    Descriptor(const Descriptor&) = delete;
    Descriptor& operator=(const Descriptor&) = delete;
    ~Descriptor() { reset(); }
    int get() const { return fd_; }
    void reset() {
        if (fd_ >= 0) ::close(fd_);
        fd_ = -1;
    }

  private:
    int fd_;
};

// Spawns `args` with its stdout on `write_end` (the read end closed in
// the child); returns its pid.
pid_t spawn(const std::vector<std::string>& args, int write_end, int read_end) {
    std::vector<std::string> words = args;
    std::vector<char*> argv;
    for (std::string& word : words) argv.push_back(word.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, write_end, 1);
    posix_spawn_file_actions_addclose(&actions, read_end);
    pid_t pid = 0;
    const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) throw Error(ErrorKind::unsupported, "cannot start " + args[0] + " as a child process");
    return pid;
}

// Appends what `fd` gives to `out` until it closes (false) or the
// deadline passes (true).
bool read_until(int fd, std::chrono::steady_clock::time_point deadline, std::string& out) {
    for (;;) {
        const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
        if (left.count() <= 0) return true;
        pollfd ready{fd, POLLIN, 0};
        if (::poll(&ready, 1, static_cast<int>(std::min<long long>(left.count(), 1000))) <= 0) continue;
        char buf[4096];
        const ssize_t got = ::read(fd, buf, sizeof buf);
        if (got <= 0) return false;  // the child closed its stdout: it is exiting
        out.append(buf, static_cast<size_t>(got));
    }
}

}  // namespace

std::string this_program() {
    char self[PATH_MAX];
    const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) throw Error(ErrorKind::unsupported, "cannot find this program (/proc/self/exe)");
    return std::string(self, static_cast<size_t>(n));
}

ChildOutput run_with_deadline(const std::vector<std::string>& args, std::chrono::seconds limit) {
    int fds[2];
    if (::pipe(fds) != 0) throw Error(ErrorKind::unsupported, "pipe() failed for the child process " + args.at(0));
    Descriptor read_end(fds[0]), write_end(fds[1]);
    const pid_t pid = spawn(args, write_end.get(), read_end.get());
    write_end.reset();  // the child's copy alone keeps the pipe open
    ChildOutput child;
    child.hung = read_until(read_end.get(), std::chrono::steady_clock::now() + limit, child.out);
    if (child.hung) ::kill(pid, SIGKILL);
    ::waitpid(pid, &child.status, 0);
    return child;
}

}  // namespace vksoftmax::cli

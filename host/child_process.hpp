// A program run as a child process under a deadline, its stdout read
// through a pipe: what the conformance stress case needs so that a driver
// that hangs a dispatch hangs the child, never the process that reports.
#pragma once
#include <chrono>
#include <string>
#include <vector>

namespace vksoftmax::cli {

// What a child gave back.
struct ChildOutput {
    std::string out;   // everything it wrote on stdout
    bool hung = false; // it was still running at the deadline, and was killed
    int status = 0;    // waitpid()'s status
};

// The path of the running program (/proc/self/exe);
// Error(unsupported) where it cannot be read.
std::string this_program();

// Runs `args` (args[0] the program's path; stdin and stderr shared with
// this process, stdout on a pipe) and reads its stdout until it closes it
// or `limit` has passed; then SIGKILL and reaps it. Error(unsupported)
// where the pipe or the process cannot be made.
ChildOutput run_with_deadline(const std::vector<std::string>& args, std::chrono::seconds limit);

}  // namespace vksoftmax::cli

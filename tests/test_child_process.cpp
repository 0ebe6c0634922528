// The conformance stress case's child process: its stdout read back whole,
// a child past its deadline killed and reported as hung, and a program
// that cannot start refused with an error.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>

#include <chrono>
#include <string>
#include <vector>

#include "child_process.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax::cli {
namespace {

TEST(ChildProcess, ReadsStdoutUntilTheChildExits) {
    // 3 x 20000 bytes: more than a pipe's buffer, so the reading loop must
    // take several reads while the child is still writing.
    const ChildOutput child = run_with_deadline(
        {"/bin/sh", "-c", "for i in 1 2 3; do head -c 20000 /dev/zero | tr '\\0' x; done; exit 3"},
        std::chrono::seconds(30));
    EXPECT_FALSE(child.hung);
    ASSERT_TRUE(WIFEXITED(child.status)) << "status " << child.status;
    EXPECT_EQ(WEXITSTATUS(child.status), 3);
    EXPECT_EQ(child.out.size(), 60000u);
    EXPECT_EQ(child.out.find_first_not_of('x'), std::string::npos) << "stdout holds bytes the child did not write";
}

TEST(ChildProcess, KillsAChildStillRunningAtItsDeadline) {
    const auto start = std::chrono::steady_clock::now();
    const ChildOutput child = run_with_deadline({"/bin/sh", "-c", "echo started; exec sleep 60"}, std::chrono::seconds(1));
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_TRUE(child.hung);
    EXPECT_EQ(child.out, "started\n") << "what the child wrote before its deadline is kept";
    ASSERT_TRUE(WIFSIGNALED(child.status)) << "status " << child.status;
    EXPECT_EQ(WTERMSIG(child.status), SIGKILL);
    EXPECT_GE(seconds, 0.9);
    EXPECT_LT(seconds, 10.0) << "the watchdog waited " << seconds << " s on a 1 s deadline";
}

TEST(ChildProcess, RefusesAProgramThatCannotStart) {
    try {
        run_with_deadline({"/nonexistent/vksoftmax-child"}, std::chrono::seconds(5));
        FAIL() << "a missing program started";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/vksoftmax-child"), std::string::npos) << e.what();
    }
}

TEST(ChildProcess, FindsThisProgram) {
    const std::string self = this_program();
    EXPECT_NE(self.find("vksoftmax_cli_tests"), std::string::npos) << self;
}

}  // namespace
}  // namespace vksoftmax::cli

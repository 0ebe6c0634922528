// The engine from several threads at once, on lavapipe or a GPU, meant to
// run under ThreadSanitizer too: plans made at once on one Context, a
// Context per thread created and destroyed together, run() from several
// threads on one shared Context. Every result is checked against the CPU
// reference. Without the validation layer: it is not what is under test,
// and it multiplies the cost of every call under the sanitizer.
//
// Threads that do not all finish within a deadline (VKSOFTMAX_THREADS_DEADLINE_S,
// default 240 s) fail the test and end the process: each unfinished thread's
// step and stack are printed, so that a hang in a driver (one is known on
// NVIDIA 580.159.04, README's "Threads") is a failure that says where,
// never a process that waits for ever.
#include <execinfo.h>
#include <gtest/gtest.h>
#include <pthread.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "vksoftmax/vksoftmax.hpp"

namespace {

using namespace vksoftmax;

constexpr int kThreads = 4;

ContextOptions options() {
    ContextOptions o;
    if (const char* dev = std::getenv("VKSOFTMAX_DEVICE")) o.device = dev;
    return o;
}

Problem rows_of(uint64_t rows, uint64_t cols) {
    Problem p;
    p.shape = {rows, cols, 1};
    return p;
}

// Runs `p` on `ctx` with normal(0, 4) logits from `seed` and returns "" when
// every element is within the fp32 bound of the float64 reference, else
// what differed.
std::string run_and_check(Context& ctx, const Problem& p, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> logits(0.f, 4.f);
    const size_t n = p.shape.elements();
    std::vector<float> x(n), y(n, NAN);
    for (float& v : x) v = logits(rng);
    run(ctx, p, x.data(), y.data());
    std::vector<double> xd(x.begin(), x.end()), ref(n);
    cpu::softmax(p, xd.data(), ref.data());
    round_to(p.dtype, ref);
    const std::vector<double> got(y.begin(), y.end());
    const Accuracy acc = compare(p, got, ref);
    const Bound b = accuracy_bound(p.dtype, p.log);
    return acc.within(b.rel, 0.0) ? "" : to_string(p.shape) + " (seed " + std::to_string(seed) + "): " + acc.describe();
}

// Collects each thread's failure text; the test reports them after join.
struct Failures {
    std::mutex mutex;
    std::vector<std::string> list;
    void add(const std::string& what) {
        if (what.empty()) return;
        std::lock_guard<std::mutex> lock(mutex);
        list.push_back(what);
    }
    std::string all() const {
        std::string s;
        for (const std::string& f : list) s += "\n  " + f;
        return s;
    }
};

// What each thread is doing, for the report of a hang: a string literal
// per thread, set by the thread as it goes (Steps::set).
struct Steps {
    std::array<std::atomic<const char*>, kThreads> now{};
    std::array<std::atomic<int>, kThreads> round{};
    void set(int thread, const char* step, int r = 0) {
        round[thread].store(r);
        now[thread].store(step);
    }
    // Thread t's step as last set (safe in a signal handler).
    const char* step(int thread) const {
        const char* s = now[thread].load();
        return s ? s : "not started";
    }
};

// `header`, then the calling thread's stack, to stderr, from a signal
// handler: the frames name each module and offset (addr2line -e MODULE
// OFFSET gives the line where the module has its symbols).
void write_own_stack(const char* header, size_t length) {
    (void)!write(STDERR_FILENO, header, length);
    void* frames[48];
    backtrace_symbols_fd(frames, backtrace(frames, 48), STDERR_FILENO);
}

// A thread's stack, printed by the thread itself on SIGUSR1.
void print_own_stack(int) {
    const char header[] = "--- stack of a thread that did not finish:\n";
    write_own_stack(header, sizeof header - 1);
}

// A crash in a thread prints that thread's step and stack before the
// process ends as the signal would have ended it: the steps of the running
// test and each thread's index, for the handler.
const Steps* running_steps = nullptr;
thread_local int thread_index = -1;

void print_crash(int signal) {
    char line[256];
    const char* step = "not one of the test's threads";
    int round = 0;
    if (running_steps && thread_index >= 0) {
        step = running_steps->step(thread_index);
        round = running_steps->round[thread_index].load();
    }
    const int n = std::snprintf(line, sizeof line, "--- signal %d in thread %d, %s (round %d):\n", signal, thread_index, step, round);
    write_own_stack(line, static_cast<size_t>(n > 0 ? n : 0));
    std::signal(signal, SIG_DFL);
    std::raise(signal);
}

constexpr std::array<int, 5> kCrashSignals = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
using SignalHandler = void (*)(int);

// Installs print_crash() for `steps`' threads; returns the handlers it
// replaced (a sanitizer's, say), for stop_reporting_crashes().
std::array<SignalHandler, kCrashSignals.size()> report_crashes(const Steps* steps) {
    void* warm[1];
    (void)backtrace(warm, 1);  // loads the unwinder before any handler needs it
    running_steps = steps;
    std::array<SignalHandler, kCrashSignals.size()> previous{};
    for (size_t i = 0; i < kCrashSignals.size(); ++i) previous[i] = std::signal(kCrashSignals[i], print_crash);
    return previous;
}

void stop_reporting_crashes(const std::array<SignalHandler, kCrashSignals.size()>& previous) {
    for (size_t i = 0; i < kCrashSignals.size(); ++i) std::signal(kCrashSignals[i], previous[i]);
    running_steps = nullptr;
}

double deadline_seconds() {
    const char* text = std::getenv("VKSOFTMAX_THREADS_DEADLINE_S");
    const double s = text ? std::atof(text) : 0.0;
    return s > 0.0 ? s : 240.0;
}

// Prints each unfinished thread's step and stack, and ends the process
// with a failure: a hung thread cannot be joined, so the test cannot
// return. Called while report_crashes() is in force, which loaded the
// unwinder the threads' handlers use.
[[noreturn]] void report_hang(const char* test, const Steps& steps, const std::array<std::atomic<bool>, kThreads>& finished,
                              std::vector<std::thread>& threads, double seconds) {
    std::fprintf(stderr, "%s: threads still running after %g s (VKSOFTMAX_THREADS_DEADLINE_S):\n", test, seconds);
    for (int t = 0; t < kThreads; ++t)
        if (!finished[t].load()) std::fprintf(stderr, "  thread %d: %s (round %d)\n", t, steps.step(t), steps.round[t].load());
    std::fflush(stderr);
    std::signal(SIGUSR1, print_own_stack);
    for (int t = 0; t < kThreads; ++t)
        if (!finished[t].load()) {
            pthread_kill(threads[t].native_handle(), SIGUSR1);
            std::this_thread::sleep_for(std::chrono::milliseconds(200));
        }
    std::fprintf(stderr, "[  FAILED  ] %s: hung (see the steps and stacks above)\n", test);
    std::fflush(stderr);
    std::_Exit(1);
}

// Runs body(t) on kThreads threads and joins them, or reports a hang once
// the deadline passes with any still running.
template <typename Body>
void on_threads(Failures& failures, Steps& steps, Body body) {
    std::array<std::atomic<bool>, kThreads> finished{};
    std::mutex mutex;
    std::condition_variable all_done;
    int done = 0;
    std::vector<std::thread> threads;
    const auto previous_handlers = report_crashes(&steps);
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&, t] {
            thread_index = t;
            try {
                body(t);
            } catch (const std::exception& e) {
                failures.add("thread " + std::to_string(t) + " threw: " + e.what());
            }
            finished[t].store(true);
            std::lock_guard<std::mutex> lock(mutex);
            ++done;
            all_done.notify_one();
        });
    const double seconds = deadline_seconds();
    {
        std::unique_lock<std::mutex> lock(mutex);
        if (!all_done.wait_for(lock, std::chrono::duration<double>(seconds), [&] { return done == kThreads; }))
            report_hang(::testing::UnitTest::GetInstance()->current_test_info()->name(), steps, finished, threads, seconds);
    }
    for (std::thread& t : threads) t.join();
    stop_reporting_crashes(previous_handlers);
}

template <typename Body>
void on_threads(Failures& failures, Body body) {
    Steps steps;
    on_threads(failures, steps, [&](int t) {
        steps.set(t, "running");
        body(t);
    });
}

// Plans of many shapes made at once on one Context: each pipeline is
// created once, and every thread gets the same one for the same key.
TEST(Concurrency, PlansMadeAtOnceOnOneContext) {
    Context ctx(options());
    Failures failures;
    const uint64_t kCols[] = {1, 7, 100, 1000, 4097, 70001};
    std::vector<std::vector<const Pipeline*>> seen(kThreads);
    on_threads(failures, [&](int t) {
        for (int round = 0; round < 3; ++round)
            for (uint64_t cols : kCols) {
                const Plan plan = make_plan(ctx, rows_of(3, cols));
                seen[t].push_back(plan.pipeline[0]);
            }
    });
    ASSERT_TRUE(failures.list.empty()) << failures.all();
    for (int t = 1; t < kThreads; ++t)
        EXPECT_EQ(seen[t], seen[0]) << "thread " << t << " got other pipelines for the same plans than thread 0";
}

// When the threads of contexts_per_thread() destroy their contexts: each
// as soon as it is done with its own (while the others still create and
// run theirs), all at once once every thread is done, or one at a time
// once every thread is done.
enum class Teardown { as_each_is_done, together, in_turn };

// Counts threads in and lets them all go once the last has come: a
// barrier for one use.
class StartLine {
public:
    void arrive_and_wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        if (++arrived_ == kThreads) all_.notify_all();
        all_.wait(lock, [&] { return arrived_ >= kThreads; });
    }

private:
    std::mutex mutex_;
    std::condition_variable all_;
    int arrived_ = 0;
};

// A Context per thread, created and used at once, two rounds, destroyed
// as `teardown` says (except as each is done, the next round starts once
// every context is destroyed): nothing process-wide is shared between them.
void contexts_per_thread(Teardown teardown) {
    Failures failures;
    Steps steps;
    StartLine start;
    std::array<StartLine, 2> ran, destroyed;
    std::mutex in_turn;
    on_threads(failures, steps, [&](int t) {
        steps.set(t, "waiting for the others to start");
        start.arrive_and_wait();
        for (int round = 0; round < 2; ++round) {
            steps.set(t, "creating its Context (instance, device, queue)", round);
            std::optional<Context> ctx(std::in_place, options());
            steps.set(t, "planning, running and checking 17 rows", round);
            failures.add(run_and_check(*ctx, rows_of(17, 1000 + 33 * t), 1000u * round + t));
            if (teardown != Teardown::as_each_is_done) {
                steps.set(t, "waiting for the others to finish running", round);
                ran[round].arrive_and_wait();
            }
            {
                std::unique_lock<std::mutex> turn(in_turn, std::defer_lock);
                if (teardown == Teardown::in_turn) turn.lock();
                steps.set(t, "destroying its Context", round);
                ctx.reset();
            }
            if (teardown != Teardown::as_each_is_done) {
                steps.set(t, "waiting for the others to destroy theirs", round);
                destroyed[round].arrive_and_wait();
            }
        }
        steps.set(t, "finished", 1);
    });
    EXPECT_TRUE(failures.list.empty()) << failures.all();
}

TEST(Concurrency, AContextPerThread) { contexts_per_thread(Teardown::as_each_is_done); }
TEST(Concurrency, AContextPerThreadDestroyedTogether) { contexts_per_thread(Teardown::together); }
TEST(Concurrency, AContextPerThreadDestroyedInTurn) { contexts_per_thread(Teardown::in_turn); }

// With no instance left, the driver a Context used stays mapped (the
// loader would unmap it): threads that used it may still end after.
TEST(Concurrency, DriversStayMappedAfterTheLastContext) {
    {
        Context ctx(options());
        ASSERT_FALSE(loaded_vulkan_drivers().empty()) << "no mapped object exports vk_icdGetInstanceProcAddr while a Context lives";
    }
    EXPECT_FALSE(loaded_vulkan_drivers().empty())
        << "the driver was unmapped with the last Context (ContextOptions::keep_drivers_loaded)";
}

// run() from several threads on one Context: they take turns on its
// queue, and each gets its own answer.
TEST(Concurrency, RunOnASharedContext) {
    Context ctx(options());
    Failures failures;
    on_threads(failures, [&](int t) {
        for (int round = 0; round < 3; ++round)
            failures.add(run_and_check(ctx, rows_of(9 + t, 513 + 100 * round), 100u * t + round));
    });
    EXPECT_TRUE(failures.list.empty()) << failures.all();
}

// Device listing (an instance of its own each time) beside contexts.
TEST(Concurrency, ListingDevicesBesideContexts) {
    Failures failures;
    on_threads(failures, [&](int t) {
        if (t % 2 == 0) {
            const DeviceList list = list_devices();
            if (list.default_index < 0) failures.add("thread " + std::to_string(t) + ": no usable device listed");
        } else {
            Context ctx(options());
            failures.add(run_and_check(ctx, rows_of(5, 64), static_cast<uint32_t>(t)));
        }
    });
    EXPECT_TRUE(failures.list.empty()) << failures.all();
}

}  // namespace

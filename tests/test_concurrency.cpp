// The engine from several threads at once, on lavapipe or a GPU, meant to
// run under ThreadSanitizer too: plans made at once on one Context, a
// Context per thread created and destroyed together, run() from several
// threads on one shared Context. Every result is checked against the CPU
// reference. Without the validation layer: it is not what is under test,
// and it multiplies the cost of every call under the sanitizer.
#include <gtest/gtest.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <mutex>
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

template <typename Body>
void on_threads(Failures& failures, Body body) {
    std::vector<std::thread> threads;
    for (int t = 0; t < kThreads; ++t)
        threads.emplace_back([&failures, &body, t] {
            try {
                body(t);
            } catch (const std::exception& e) {
                failures.add("thread " + std::to_string(t) + " threw: " + e.what());
            }
        });
    for (std::thread& t : threads) t.join();
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

// A Context per thread, created, used and destroyed together: nothing
// process-wide is shared between them.
TEST(Concurrency, AContextPerThread) {
    Failures failures;
    std::atomic<int> ready{0};
    on_threads(failures, [&](int t) {
        ready++;
        while (ready.load() < kThreads) std::this_thread::yield();  // start together
        for (int round = 0; round < 2; ++round) {
            Context ctx(options());
            failures.add(run_and_check(ctx, rows_of(17, 1000 + 33 * t), 1000u * round + t));
        }
    });
    EXPECT_TRUE(failures.list.empty()) << failures.all();
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

// The benchmark's rule for when a case's timing counts (bench::settle()):
// it is timed again until two timings in a row agree within 3%, on a GPU
// each with its median within 10% of its fastest repeat, at most four
// times, and the last is reported with the medians set aside.
#include <gtest/gtest.h>

#include <vector>

#include "bench.hpp"

namespace vksoftmax::bench {
namespace {

// A timing of `median_us` whose fastest repeat took `min_us` (its median
// where not given).
Timing timing_of(double median_us, double min_us = 0) {
    Timing t;
    t.median_us = median_us;
    t.min_us = min_us > 0 ? min_us : median_us;
    t.samples_us = {t.min_us, median_us};
    return t;
}

// settle() of `timings` on a device whose clock changes state: the first
// given, the others returned by next() in order; `calls` counts next()'s
// calls.
Timing settle_timings(const std::vector<Timing>& timings, int& calls, bool clock_states = true) {
    calls = 0;
    return settle(timings.at(0), [&] { return timings.at(static_cast<size_t>(++calls)); }, clock_states);
}

Timing settle_medians(const std::vector<double>& medians, int& calls) {
    std::vector<Timing> timings;
    for (double m : medians) timings.push_back(timing_of(m));
    return settle_timings(timings, calls);
}

TEST(BenchTiming, SecondTimingThatAgreesEndsIt) {
    int calls = 0;
    const Timing t = settle_medians({10.0, 10.2, 99.0}, calls);
    EXPECT_EQ(calls, 1) << "10.0 then 10.2 agree within 3%: no third timing";
    EXPECT_DOUBLE_EQ(t.median_us, 10.2) << "the last timing taken is reported";
    EXPECT_TRUE(t.unsettled_medians_us.empty()) << "nothing was set aside";
    EXPECT_TRUE(t.settled);
}

TEST(BenchTiming, SlowFirstTimingIsSetAside) {
    // As an H200 ran f16 backward 1x16777216 after the CPU's check (bench/NOTES.md, v50).
    int calls = 0;
    const Timing t = settle_medians({110.08, 45.0, 45.71, 99.0}, calls);
    EXPECT_EQ(calls, 2) << "110.08 and 45.0 disagree, 45.0 and 45.71 agree";
    EXPECT_DOUBLE_EQ(t.median_us, 45.71);
    ASSERT_EQ(t.unsettled_medians_us.size(), 1u);
    EXPECT_DOUBLE_EQ(t.unsettled_medians_us[0], 110.08) << "the slow first timing is kept in unsettled_medians_us";
    EXPECT_TRUE(t.settled);
}

TEST(BenchTiming, AtMostFourTimingsWhenNoneAgree) {
    int calls = 0;
    const Timing t = settle_medians({10.0, 20.0, 30.0, 40.0, 50.0}, calls);
    EXPECT_EQ(calls, kMaxTimings - 1) << "four timings in all, the first included";
    EXPECT_DOUBLE_EQ(t.median_us, 40.0) << "the last of the four is reported";
    EXPECT_EQ(t.unsettled_medians_us, (std::vector<double>{10.0, 20.0, 30.0}));
    EXPECT_FALSE(t.settled) << "the last two (30, 40) disagreed";
}

TEST(BenchTiming, TimingsThatAgreeButChangeStateWithinAreTakenAgain) {
    // As an H200 ran bf16 backward log-softmax 1024x32764 (bench/NOTES.md,
    // v98): a first timing at 200 us throughout, a second at 200 us for
    // seven repeats and 65 us after; then two at its usual speed.
    int calls = 0;
    const Timing t = settle_timings({timing_of(200.4, 200.2), timing_of(200.26, 65.04), timing_of(65.2, 64.9),
                                     timing_of(65.4, 65.0), timing_of(999.0)},
                                    calls);
    EXPECT_EQ(calls, 3) << "200.4 and 200.26 agree, but the second's fastest repeat took 65.04: not steady";
    EXPECT_DOUBLE_EQ(t.median_us, 65.4) << "the last timing, once two steady ones agreed";
    EXPECT_EQ(t.unsettled_medians_us, (std::vector<double>{200.4, 200.26}));
    EXPECT_TRUE(t.settled);
}

TEST(BenchTiming, SteadyIsAMedianWithinTenPercentOfTheFastestRepeat) {
    EXPECT_TRUE(steady(timing_of(10.99, 10.0))) << "10.99 is within 10% of 10";
    EXPECT_FALSE(steady(timing_of(11.01, 10.0))) << "11.01 is over 10% above 10";
    EXPECT_TRUE(steady(timing_of(58.99, 58.51))) << "an H200's usual spread: 0.8%";
}

TEST(BenchTiming, ACpuDeviceNeedsOnlyAgreement) {
    // lavapipe's repeats spread with its threads' scheduling: two timings
    // that agree end it, however their repeats spread.
    int calls = 0;
    const Timing t = settle_timings({timing_of(30.0, 12.0), timing_of(30.5, 11.0), timing_of(99.0)}, calls, false);
    EXPECT_EQ(calls, 1);
    EXPECT_DOUBLE_EQ(t.median_us, 30.5);
    EXPECT_TRUE(t.settled);
}

TEST(BenchTiming, FirstCaseAgainKeepsItsSecondTimingAndFirstCeilings) {
    // As an H200 ran causal f16 (1, 32, 2048, 2048) first in a run, then elsewhere (bench/NOTES.md, v79).
    Row first, again;
    first.t = timing_of(206.5);
    first.ceiling = timing_of(110.0);
    first.read_ceiling = timing_of(60.0);
    first.write_ceiling = timing_of(55.0);
    first.verified = true;
    first.max_rel_error = 2e-6;
    again.t = timing_of(108.5);
    again.verified = false;
    again.max_rel_error = 5e-1;
    const Row row = reprised(first, again);
    EXPECT_DOUBLE_EQ(row.t.median_us, 108.5) << "the timing taken after the last case is reported";
    EXPECT_DOUBLE_EQ(row.first_median_us, 206.5) << "the first timing is kept beside it";
    EXPECT_DOUBLE_EQ(row.ceiling.median_us, 110.0) << "the copy ceiling timed beside the first is kept";
    EXPECT_DOUBLE_EQ(row.read_ceiling.median_us, 60.0);
    EXPECT_DOUBLE_EQ(row.write_ceiling.median_us, 55.0);
    EXPECT_FALSE(row.verified) << "a wrong result in the second measurement stands";
    EXPECT_DOUBLE_EQ(row.max_rel_error, 5e-1) << "the larger of the two errors";
    Row right = again;
    right.verified = true;
    right.max_rel_error = 1e-6;
    first.verified = false;
    EXPECT_FALSE(reprised(first, right).verified) << "a wrong result in the first measurement stands too";
    EXPECT_DOUBLE_EQ(reprised(first, right).max_rel_error, 2e-6);
}

TEST(BenchTiming, AgreementIsWithinThreePercentOfTheSmaller) {
    EXPECT_TRUE(timings_agree(timing_of(10.0), timing_of(10.29))) << "0.29 is under 3% of 10";
    EXPECT_TRUE(timings_agree(timing_of(10.29), timing_of(10.0))) << "the order does not matter";
    EXPECT_FALSE(timings_agree(timing_of(10.0), timing_of(10.31))) << "0.31 is over 3% of 10";
    EXPECT_FALSE(timings_agree(timing_of(103.05), timing_of(100.0)))
        << "3.05 is under 3% of 103.05 but over 3% of 100: the smaller counts";
    EXPECT_FALSE(timings_agree(timing_of(100.0), timing_of(50.0)));
}

}  // namespace
}  // namespace vksoftmax::bench

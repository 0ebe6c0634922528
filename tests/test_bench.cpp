// The benchmark's rule for when a case's timing counts (bench::settle()):
// it is timed again until two timings in a row agree within 3%, at most
// four times, and the last is reported with the medians set aside.
#include <gtest/gtest.h>

#include <vector>

#include "bench.hpp"

namespace vksoftmax::bench {
namespace {

Timing timing_of(double median_us) {
    Timing t;
    t.median_us = median_us;
    t.min_us = median_us;
    t.samples_us = {median_us};
    return t;
}

// settle() of `medians`: the first given, the others returned by next() in
// order; `calls` counts next()'s calls.
Timing settle_medians(const std::vector<double>& medians, int& calls) {
    calls = 0;
    return settle(timing_of(medians.at(0)), [&] { return timing_of(medians.at(static_cast<size_t>(++calls))); });
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

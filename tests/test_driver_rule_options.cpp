// --nonfinite, --subgroup-max, --tile-loads, --row-fetch and --row-shares:
// parsed into DriverRules, and written back as the words a child process
// parses the same way (conformance's stress case runs in one).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "driver_rule_options.hpp"

namespace vksoftmax::cli {
namespace {

// `words` parsed by a command that has the five options.
DriverRules parsed(std::vector<std::string> words) {
    CLI::App app;
    DriverRuleArgs args;
    add_driver_rule_options(app, args);
    std::vector<std::string> reversed(words.rbegin(), words.rend());  // CLI11 takes the last word first
    app.parse(reversed);
    return parse_driver_rules(args);
}

TEST(DriverRuleOptions, ForcedChoicesSurviveTheWayToAChildProcess) {
    DriverRuleArgs given{"by-sum", "integer-keys", "together", "next-row-first", "shared"};
    const std::vector<std::string> words = driver_rule_arguments(given);
    const std::vector<std::string> expected = {"--nonfinite",   "by-sum",         "--subgroup-max", "integer-keys",
                                               "--tile-loads",  "together",       "--row-fetch",    "next-row-first",
                                               "--row-shares",  "shared"};
    EXPECT_EQ(words, expected) << "the words a child process is given";
    const DriverRules rules = parsed(words);
    EXPECT_EQ(rules.nonfinite, NonfiniteCheck::by_sum) << "--nonfinite in the child";
    EXPECT_EQ(rules.subgroup_max, SubgroupMax::integer_keys) << "--subgroup-max in the child";
    EXPECT_EQ(rules.tile_loads, TileLoads::together) << "--tile-loads in the child";
    EXPECT_EQ(rules.row_fetch, RowFetch::next_row_first) << "--row-fetch in the child";
    EXPECT_EQ(rules.row_shares, RowShares::shared) << "--row-shares in the child";
}

TEST(DriverRuleOptions, AutomaticChoicesAddNoWords) {
    EXPECT_TRUE(driver_rule_arguments(DriverRuleArgs{}).empty()) << "no option given, none passed on";
    DriverRuleArgs one;
    one.tile_loads = "in-branches";
    const std::vector<std::string> expected = {"--tile-loads", "in-branches"};
    EXPECT_EQ(driver_rule_arguments(one), expected) << "only the option given is passed on";
    const DriverRules rules = parsed(driver_rule_arguments(one));
    EXPECT_EQ(rules.nonfinite, NonfiniteCheck::automatic) << "--nonfinite not given";
    EXPECT_EQ(rules.tile_loads, TileLoads::in_branches) << "--tile-loads in the child";
    EXPECT_EQ(rules.row_fetch, RowFetch::automatic) << "--row-fetch not given";
    EXPECT_EQ(rules.row_shares, RowShares::automatic) << "--row-shares not given";
}

}  // namespace
}  // namespace vksoftmax::cli

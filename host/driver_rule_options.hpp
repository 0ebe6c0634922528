// --nonfinite, --subgroup-max, --tile-loads, --row-fetch and --row-shares:
// the per-driver shader-form rules' choices (DriverRules), taken alike by
// `bench` and `conformance`.
#pragma once
#include <CLI/CLI.hpp>

#include <string>
#include <vector>

#include "vksoftmax/plan.hpp"

namespace vksoftmax::cli {

// The options' words as given; empty: automatic.
struct DriverRuleArgs {
    std::string nonfinite, subgroup_max, tile_loads, row_fetch, row_shares;
};

// Adds the five options to `sub`, writing into `args`, in the group of
// `sub`'s option defaults.
void add_driver_rule_options(CLI::App& sub, DriverRuleArgs& args);

// The choices `args` name; a word no rule takes is Error(invalid_argument)
// quoting the option and the words it takes.
DriverRules parse_driver_rules(const DriverRuleArgs& args);

// The options `args` gives, as command-line words ("--nonfinite", "by-sum",
// ...), for a child process to take the same choices; none where all are
// automatic.
std::vector<std::string> driver_rule_arguments(const DriverRuleArgs& args);

}  // namespace vksoftmax::cli

#include "driver_rule_options.hpp"

#include <utility>

#include "commands.hpp"

namespace vksoftmax::cli {

namespace {

constexpr const char* kNonfiniteHelp =
    "How a row's NaN and +inf are found: automatic (default: by-sum on the drivers whose exp2 is known to give 0 for "
    "-inf and NaN for NaN, else each-element), each-element (every element tested), by-sum (the row's sum tested once)";

constexpr const char* kSubgroupMaxHelp =
    "How the single-pass and workgroup-row paths take a subgroup's max: automatic (default: integer keys for single "
    "rows on the drivers where they were measured faster, else float), float, integer-keys (on every forward "
    "single-pass or workgroup-row problem without attention options)";

constexpr const char* kTileLoadsHelp =
    "How attention subgroup rows load a tile: automatic (default: together on the drivers where it was measured "
    "faster, else in-branches), in-branches (each vector's load and logits in a branch of its own), together (a "
    "tile's loads issued before its logits)";

}  // namespace

void add_driver_rule_options(CLI::App& sub, DriverRuleArgs& args, const std::string& help_prefix) {
    sub.add_option("--nonfinite", args.nonfinite, help_prefix + kNonfiniteHelp);
    sub.add_option("--subgroup-max", args.subgroup_max, help_prefix + kSubgroupMaxHelp);
    sub.add_option("--tile-loads", args.tile_loads, help_prefix + kTileLoadsHelp);
}

DriverRules parse_driver_rules(const DriverRuleArgs& args) {
    constexpr NonfiniteCheck checks[] = {NonfiniteCheck::automatic, NonfiniteCheck::each_element, NonfiniteCheck::by_sum};
    constexpr SubgroupMax maxima[] = {SubgroupMax::automatic, SubgroupMax::float_max, SubgroupMax::integer_keys};
    constexpr TileLoads loads[] = {TileLoads::automatic, TileLoads::in_branches, TileLoads::together};
    DriverRules rules;
    rules.nonfinite = parse_choice("--nonfinite", args.nonfinite, checks, nonfinite_check_name);
    rules.subgroup_max = parse_choice("--subgroup-max", args.subgroup_max, maxima, subgroup_max_name);
    rules.tile_loads = parse_choice("--tile-loads", args.tile_loads, loads, tile_loads_name);
    return rules;
}

std::vector<std::string> driver_rule_arguments(const DriverRuleArgs& args) {
    std::vector<std::string> words;
    const std::pair<const char*, const std::string*> options[] = {
        {"--nonfinite", &args.nonfinite}, {"--subgroup-max", &args.subgroup_max}, {"--tile-loads", &args.tile_loads}};
    for (const auto& [option, text] : options)
        if (!text->empty()) words.insert(words.end(), {option, *text});
    return words;
}

}  // namespace vksoftmax::cli

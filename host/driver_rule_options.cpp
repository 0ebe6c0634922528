#include "driver_rule_options.hpp"

#include "commands.hpp"

namespace vksoftmax::cli {

namespace {

// One option: its name, the DriverRuleArgs field it fills, its help text.
// add_driver_rule_options(), parse_driver_rules() and
// driver_rule_arguments() all name the options from here.
struct RuleOption {
    const char* name;
    std::string DriverRuleArgs::*words;
    const char* help;
};

constexpr RuleOption kNonfiniteOption{
    "--nonfinite", &DriverRuleArgs::nonfinite,
    "How a row's NaN and +inf are found: automatic (default: by-sum on the drivers whose exp2 is known to give 0 for "
    "-inf and NaN for NaN, else each-element), each-element (every element tested), by-sum (the row's sum tested "
    "once)"};

constexpr RuleOption kSubgroupMaxOption{
    "--subgroup-max", &DriverRuleArgs::subgroup_max,
    "How the single-pass and workgroup-row paths take a subgroup's max: automatic (default: integer keys for single "
    "rows on the drivers where they were measured faster, else float), float, integer-keys (on every forward "
    "single-pass or workgroup-row problem without attention options)"};

constexpr RuleOption kTileLoadsOption{
    "--tile-loads", &DriverRuleArgs::tile_loads,
    "How attention subgroup rows load a tile: automatic (default: together on the drivers where it was measured "
    "faster, else in-branches), in-branches (each vector's load and logits in a branch of its own), together (a "
    "tile's loads issued before its logits)"};

constexpr RuleOption kRowFetchOption{
    "--row-fetch", &DriverRuleArgs::row_fetch,
    "How masked 16-bit attention rows held by a workgroup are fetched: automatic (default: next-row-first on the "
    "drivers where it was measured faster, else in-turn), in-turn (a row at a time), next-row-first (the next row's "
    "loads issued before the current row is reduced, wherever the plan finds the rows fit it)"};

constexpr RuleOption kRowSharesOption{
    "--row-shares", &DriverRuleArgs::row_shares,
    "How plain rows of 8193-16384 elements in small batches are held: automatic (default: shared on the "
    "drivers where it was measured faster, else whole), whole (one workgroup a row, or the single-pass path), shared "
    "(several workgroups a row, each reading it whole and writing its share)"};

constexpr RuleOption kRuleOptions[] = {kNonfiniteOption, kSubgroupMaxOption, kTileLoadsOption, kRowFetchOption,
                                       kRowSharesOption};

}  // namespace

void add_driver_rule_options(CLI::App& sub, DriverRuleArgs& args) {
    for (const RuleOption& o : kRuleOptions) sub.add_option(o.name, args.*o.words, o.help);
}

DriverRules parse_driver_rules(const DriverRuleArgs& args) {
    constexpr NonfiniteCheck checks[] = {NonfiniteCheck::automatic, NonfiniteCheck::each_element, NonfiniteCheck::by_sum};
    constexpr SubgroupMax maxima[] = {SubgroupMax::automatic, SubgroupMax::float_max, SubgroupMax::integer_keys};
    constexpr TileLoads loads[] = {TileLoads::automatic, TileLoads::in_branches, TileLoads::together};
    constexpr RowFetch fetches[] = {RowFetch::automatic, RowFetch::in_turn, RowFetch::next_row_first};
    constexpr RowShares shares[] = {RowShares::automatic, RowShares::whole, RowShares::shared};
    DriverRules rules;
    rules.nonfinite = parse_choice(kNonfiniteOption.name, args.nonfinite, checks, nonfinite_check_name);
    rules.subgroup_max = parse_choice(kSubgroupMaxOption.name, args.subgroup_max, maxima, subgroup_max_name);
    rules.tile_loads = parse_choice(kTileLoadsOption.name, args.tile_loads, loads, tile_loads_name);
    rules.row_fetch = parse_choice(kRowFetchOption.name, args.row_fetch, fetches, row_fetch_name);
    rules.row_shares = parse_choice(kRowSharesOption.name, args.row_shares, shares, row_shares_name);
    return rules;
}

std::vector<std::string> driver_rule_arguments(const DriverRuleArgs& args) {
    std::vector<std::string> words;
    for (const RuleOption& o : kRuleOptions)
        if (!(args.*o.words).empty()) words.insert(words.end(), {o.name, args.*o.words});
    return words;
}

}  // namespace vksoftmax::cli

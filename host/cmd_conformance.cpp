// vksoftmax conformance: the catalogue on one device or all, a table, a
// one-line summary, and a JSON report that names the device and driver.
#include <fmt/core.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>
#include <random>

#include "child_process.hpp"
#include "commands.hpp"
#include "driver_rule_options.hpp"
#include "failure_files.hpp"
#include "output_file.hpp"
#include "vksoftmax/conformance.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax::cli {
namespace {

struct ConformanceArgs {
    std::string device, json;
    std::vector<std::string> filters;
    bool quick = false, failures_only = false, no_uniform_control_flow = false;
    bool stress_only = false;  // the child's part: the stress case, as JSON on stdout
    std::string single_pass;   // never: leave the single-pass path (and its stress case) out
    DriverRuleArgs rules;      // PlanOptions::rules for every variant and the stress case
    unsigned watchdog_seconds = 120;
    uint32_t seed = 0;         // conformance::Options::seed (0: drawn here, and reported)
    uint32_t repeats = 1;
    std::string save_failures;  // folder for failing checks' tensors
};

nlohmann::json to_json(const conformance::Result& r) {
    return {{"case", r.case_name},
            {"variant", r.variant},
            {"subgroup_size", r.subgroup_size},
            {"max_ulp", r.max_ulp},
            {"max_rel", r.max_rel},
            {"rel_bound", r.rel_bound},
            {"worst_row_sum_error", r.worst_row_sum},
            {"nan_pattern_ok", r.nan_pattern_ok},
            {"pass", r.pass},
            {"skipped", r.skipped},
            {"seed", r.seed},
            {"note", r.note}};
}

conformance::Result from_json(const nlohmann::json& j) {
    conformance::Result r;
    r.case_name = j.at("case");
    r.variant = j.at("variant");
    r.subgroup_size = j.at("subgroup_size");
    r.max_ulp = j.at("max_ulp");
    r.max_rel = j.at("max_rel");
    r.rel_bound = j.at("rel_bound");
    r.worst_row_sum = j.at("worst_row_sum_error");
    r.nan_pattern_ok = j.at("nan_pattern_ok");
    r.pass = j.at("pass");
    r.skipped = j.at("skipped");
    r.note = j.at("note");
    r.seed = j.at("seed");
    return r;
}

// What the stress case's child process gave: its results, or why none.
struct StressOutcome {
    std::vector<conformance::Result> results;
    bool hung = false;
    std::string failure;  // the child hung, crashed or printed no report
};

// This program again (`conformance --stress-only`) on one device, in a
// child process with its stdout on a pipe, killed after `seconds`: a
// driver that does not keep a waiting workgroup's partners running hangs
// the child, never this process.
StressOutcome stress_in_child(const ConformanceArgs& a, const std::string& selector) {
    std::vector<std::string> args = {this_program(), "conformance", "--stress-only", "--device", selector,
                                     "--seed", std::to_string(a.seed)};
    if (a.no_uniform_control_flow) args.push_back("--no-uniform-control-flow");
    if (!a.save_failures.empty()) {
        args.push_back("--save-failures");
        args.push_back(a.save_failures);
    }
    // The forced driver-rule choices reach the stress case as they reach
    // the catalogue's variants.
    for (const std::string& word : driver_rule_arguments(a.rules)) args.push_back(word);
    const ChildOutput child = run_with_deadline(args, std::chrono::seconds(a.watchdog_seconds));
    StressOutcome o;
    o.hung = child.hung;
    if (child.hung) {
        o.failure = "no answer within " + std::to_string(a.watchdog_seconds) + " s (stopped)";
        return o;
    }
    try {
        for (const auto& j : nlohmann::json::parse(child.out)) o.results.push_back(from_json(j));
    } catch (const std::exception&) {
        o.failure = "the stress case's process exited (status " + std::to_string(child.status) + ") with no report";
    }
    return o;
}

// The child's part: the stress case on the device, as a JSON array; its
// failing checks' tensors saved as stress-DEVICE-N with --save-failures
// (the device's index: `--device all` runs one child a device).
int stress_only(const ConformanceArgs& a) {
    ContextOptions co;
    co.device = a.device;
    co.subgroup_uniform_control_flow = !a.no_uniform_control_flow;
    Context ctx(co);
    conformance::Options options;
    options.rules = parse_driver_rules(a.rules);
    options.seed = a.seed;
    options.keep_failures = !a.save_failures.empty();
    nlohmann::json results = nlohmann::json::array();
    int saved = 0;
    for (const auto& r : conformance::stress_single_pass(ctx, options)) {
        if (r.evidence)
            save_failure(a.save_failures,
                         "stress-" + std::to_string(ctx.info().index) + "-" + std::to_string(++saved), r);
        results.push_back(to_json(r));
    }
    fmt::print("{}\n", results.dump());
    return int(Exit::ok);
}

nlohmann::json identity(const DeviceInfo& d) {
    return {{"name", d.name},           {"vendor", d.vendor_name()},   {"vendor_id", d.vendor_id},
            {"device_id", d.device_id}, {"driver", d.driver_name},     {"driver_info", d.driver_info},
            {"driver_version", d.driver_version}, {"api_version", d.api_string()}, {"type", d.type_name()},
            {"subgroup_size", d.subgroup_size},
            {"subgroup_size_range", {d.min_subgroup_size, d.max_subgroup_size}},
            {"subgroup_operations", d.subgroup_ops_string()},
            {"subgroup_uniform_control_flow", d.subgroup_uniform_control_flow}};
}

// The device selectors --device names: one, or every device's index.
std::vector<std::string> selectors_for(const std::string& device) {
    if (device != "all") return {device};
    std::vector<std::string> selectors;
    for (const DeviceInfo& d : list_devices().devices) selectors.push_back(std::to_string(d.index));
    if (selectors.empty()) throw Error(ErrorKind::unsupported, "no Vulkan device found");
    return selectors;
}

struct Counts {
    size_t total = 0, failed = 0, skipped = 0;
    size_t saved = 0;  // failing checks whose tensors were saved
};

// One device's rows as they come: the run's counts, the report's results
// and the worst f32 relative error of the fast and accurate variants.
struct DeviceTally {
    Counts& counts;
    nlohmann::json results = nlohmann::json::array();
    double worst_rel_fast = 0, worst_rel_accurate = 0;

    void add(const conformance::Result& r) {
        ++counts.total;
        counts.failed += !r.pass;
        counts.skipped += r.skipped;
        double& worst = r.variant.find("accurate") != std::string::npos ? worst_rel_accurate : worst_rel_fast;
        worst = std::max(worst, r.case_name.rfind("f32", 0) == 0 ? r.max_rel : 0.0);
        results.push_back(to_json(r));
    }
};

void print_table_head(const DeviceInfo& d, uint32_t seed) {
    fmt::print("device {}: {} ({} {}, Vulkan {}), subgroup uniform control flow: {}, seed {}\n", d.index, d.name,
               d.driver_name, d.driver_info, d.api_string(), d.subgroup_uniform_control_flow ? "on" : "off", seed);
    fmt::print("{:<44} {:<28} {:>3} {:>9} {:>9} {:>7} {:>9} {:>4} {}\n", "case", "variant", "sg", "max ulp", "max rel",
               "bound", "|sum-1|", "nan", "result");
}

// One row of the table (with --failures-only, failing rows alone); a
// failing row names its inputs' seed.
void print_row(const ConformanceArgs& a, const conformance::Result& r) {
    if (a.failures_only && (r.pass || r.skipped)) return;
    const bool failed = !r.pass && !r.skipped;
    const std::string note = failed ? "  (seed " + std::to_string(r.seed) + (r.note.empty() ? "" : ": " + r.note) + ")"
                             : r.note.empty() ? ""
                                              : "  (" + r.note + ")";
    fmt::print("{:<44} {:<28} {:>3} {:>9.0f} {:>9.2e} {:>7.0e} {:>9.2e} {:>4} {}{}\n", r.case_name, r.variant,
               r.subgroup_size, r.max_ulp, r.max_rel, r.rel_bound, r.worst_row_sum, r.nan_pattern_ok ? "ok" : "BAD",
               r.skipped ? "skip" : r.pass ? "pass" : "FAIL", note);
}

// A catalogue row as it comes: printed, and with --save-failures a failing
// check's tensors saved as failure-N.
void report_row(const ConformanceArgs& a, const conformance::Result& r, Counts& counts) {
    print_row(a, r);
    if (!r.evidence) return;
    const std::string path = save_failure(a.save_failures, "failure-" + std::to_string(++counts.saved), r);
    fmt::print("  saved: {}\n", path);
}

// The single-pass stress case, before the rest, under the watchdog. If it
// hangs or fails, the rest of the catalogue leaves the single-pass path
// out (`options.single_pass`), and the report says so: hosts then keep the
// two-dispatch split path (PlanOptions::single_pass = never, vksoftmax
// bench --single-pass never). Returns the report's single_pass object.
nlohmann::json stress_first(const ConformanceArgs& a, const std::string& selector, const DeviceInfo& d,
                            conformance::Options& options, DeviceTally& tally) {
    nlohmann::json single_pass = {{"available", single_pass_rule(d, SinglePass::allowed).allowed},
                                  {"plan_rule", single_pass_rule(d).reason}};
    if (parse_single_pass(a.single_pass) == SinglePass::never) {
        single_pass["checked"] = false;
        options.single_pass = false;
        return single_pass;
    }
    if (!single_pass["available"]) return single_pass;
    const StressOutcome stress = stress_in_child(a, selector);
    bool ok = stress.failure.empty();
    for (const auto& r : stress.results) {
        print_row(a, r);
        tally.add(r);
        ok = ok && r.pass;
    }
    if (!stress.failure.empty()) {
        conformance::Result r;
        r.case_name = "f32 softmax (single-pass stress)";
        r.variant = "single-pass";
        r.subgroup_size = d.subgroup_size;
        r.note = stress.failure + " on " + d.name + " (" + d.driver_name + " " + d.driver_info +
                 "): the rest of the catalogue leaves the single-pass path out";
        print_row(a, r);
        tally.add(r);
    }
    single_pass["stress_passed"] = ok;
    single_pass["stress_hung"] = stress.hung;
    options.single_pass = ok;
    return single_pass;
}

// What each per-driver rule chose on `d` under `rules`, and why: the
// report's "nonfinite", "subgroup_max" (for single rows), "tile_loads",
// "row_fetch" and "row_shares".
nlohmann::json rules_report(const DeviceInfo& d, const DriverRules& rules) {
    const NonfiniteRule nonfinite = nonfinite_rule(d, rules.nonfinite);
    const SubgroupMaxRule single_row_max = subgroup_max_rule(d, 1, rules.subgroup_max);
    const TileLoadsRule tile_loads = tile_loads_rule(d, rules.tile_loads);
    const RowFetchRule row_fetch = row_fetch_rule(d, rules.row_fetch);
    const RowSharesRule row_shares = row_shares_rule(d, rules.row_shares);
    return {{"nonfinite",
             {{"check", nonfinite_check_name(rules.nonfinite)},
              {"by_sum", nonfinite.by_sum},
              {"reason", nonfinite.reason}}},
            {"subgroup_max",
             {{"choice", subgroup_max_name(rules.subgroup_max)},
              {"single_rows_by_key", single_row_max.by_key},
              {"reason", single_row_max.reason}}},
            {"tile_loads",
             {{"choice", tile_loads_name(rules.tile_loads)},
              {"together", tile_loads.together},
              {"reason", tile_loads.reason}}},
            {"row_fetch",
             {{"choice", row_fetch_name(rules.row_fetch)},
              {"next_row_first", row_fetch.next_row_first},
              {"reason", row_fetch.reason}}},
            {"row_shares",
             {{"choice", row_shares_name(rules.row_shares)},
              {"shared", row_shares.shared},
              {"reason", row_shares.reason}}}};
}

// The catalogue on one device: its table on stdout, its part of the report.
nlohmann::json run_on_device(const ConformanceArgs& a, const std::string& selector, const conformance::Options& o,
                             Counts& counts) {
    ContextOptions co;
    co.device = selector;
    co.subgroup_uniform_control_flow = !a.no_uniform_control_flow;
    Context ctx(co);
    const DeviceInfo& d = ctx.info();
    DeviceTally tally{counts};
    conformance::Options options = o;
    print_table_head(d, o.seed);
    const nlohmann::json single_pass = stress_first(a, selector, d, options, tally);
    const auto row = [&](const conformance::Result& r) { report_row(a, r, counts); };
    for (const auto& r : conformance::run(ctx, options, row)) tally.add(r);
    nlohmann::json report = {{"device", identity(d)},
                             {"single_pass", single_pass},
                             {"worst_f32_rel_fast", tally.worst_rel_fast},
                             {"worst_f32_rel_accurate", tally.worst_rel_accurate},
                             {"results", tally.results}};
    report.update(rules_report(d, o.rules));
    return report;
}

int conformance_command(ConformanceArgs a) {
    if (a.stress_only) return stress_only(a);
    const std::vector<std::string> selectors = selectors_for(a.device);
    // Drawn here rather than by each run, so that the table, the report
    // and the stress case's process all have the one seed.
    while (a.seed == 0) a.seed = std::random_device{}();
    conformance::Options o;
    o.quick = a.quick;
    o.filters = a.filters;
    o.rules = parse_driver_rules(a.rules);
    o.seed = a.seed;
    o.repeats = a.repeats;
    o.keep_failures = !a.save_failures.empty();
    nlohmann::json report;
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    report["date"] = date;
    report["catalogue"] = a.quick ? "quick" : "full";
    report["seed"] = a.seed;
    report["repeats"] = a.repeats;
    Counts counts;
    for (const std::string& selector : selectors) report["devices"].push_back(run_on_device(a, selector, o, counts));
    report["summary"] = {{"runs", counts.total}, {"failed", counts.failed}, {"skipped", counts.skipped}};
    if (!a.json.empty()) {
        OutputFile f(a.json);
        const std::string text = report.dump(1) + "\n";
        f.commit(std::vector<uint8_t>(text.begin(), text.end()));
    }
    fmt::print("conformance: {} passed, {} failed, {} skipped\n", counts.total - counts.failed - counts.skipped,
               counts.failed, counts.skipped);
    return counts.failed ? int(Exit::failed_check) : int(Exit::ok);
}

}  // namespace

Command add_conformance(CLI::App& app) {
    auto* sub = app.add_subcommand("conformance", "Check every path, reduction, precision and subgroup size against "
                                                  "the float64 reference, with written-down bounds");
    auto a = std::make_shared<ConformanceArgs>();
    sub->add_option("--device", a->device, "Device index, part of its name, or 'all' (default: the default device)");
    sub->add_flag("--quick", a->quick, "The quick catalogue (fewer row lengths)");
    sub->add_option("--json", a->json, "Write the report, with the device's identity, to this file");
    sub->add_option("--filter", a->filters,
                    "Only cases whose 'case variant' text contains this (a leading ^: begins with the rest, as in "
                    "'^f16 '; a leading !: does not); repeated, every one must hold");
    sub->add_flag("--failures-only", a->failures_only, "Print only the failing rows of the table");
    sub->add_flag("--no-uniform-control-flow", a->no_uniform_control_flow,
                  "Leave VK_KHR_shader_subgroup_uniform_control_flow off even where offered: checks the shaders "
                  "that hosts without it get");
    sub->add_option("--single-pass", a->single_pass,
                    "never: leave the single-pass path and its stress case out (default: check them where the "
                    "device has the Vulkan memory model)");
    add_driver_rule_options(*sub, a->rules);
    sub->add_option("--watchdog", a->watchdog_seconds,
                    "Seconds the single-pass stress case may take (in a child process) before it counts as a hang "
                    "(default 120)");
    sub->add_option("--seed", a->seed,
                    "The inputs' seed (default: one drawn at random, printed with the table and in the report); a "
                    "failing row's seed with the same --filter runs its check again on the same inputs");
    sub->add_option("--repeat", a->repeats,
                    "Run each selected check this many times on fresh inputs (seed, seed + 1, ...; default 1)")
        ->check(CLI::Range(1u, 1000000u));
    sub->add_option("--save-failures", a->save_failures,
                    "Write each failing check's input, output, reference (and mask, gradient) as .npy files with a "
                    "JSON file naming the check and its seed into this folder");
    sub->add_flag("--stress-only", a->stress_only, "Internal: run only the single-pass stress case, report JSON")
        ->group("");
    sub->footer("Example: vksoftmax conformance --device all --json report.json");
    return [a]() { return conformance_command(*a); };
}

}  // namespace vksoftmax::cli

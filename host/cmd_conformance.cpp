// vksoftmax conformance: the catalogue on one device or all, a table, a
// one-line summary, and a JSON report that names the device and driver.
#include <fmt/core.h>

#include <ctime>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "output_file.hpp"
#include "vksoftmax/conformance.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax::cli {
namespace {

struct ConformanceArgs {
    std::string device, json, filter;
    bool quick = false, failures_only = false, no_uniform_control_flow = false;
};

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
};

// The catalogue on one device: its table on stdout, its part of the report.
nlohmann::json run_on_device(const ConformanceArgs& a, const std::string& selector, const conformance::Options& o,
                             Counts& counts) {
    ContextOptions co;
    co.device = selector;
    co.subgroup_uniform_control_flow = !a.no_uniform_control_flow;
    Context ctx(co);
    const DeviceInfo& d = ctx.info();
    fmt::print("device {}: {} ({} {}, Vulkan {}), subgroup uniform control flow: {}\n", d.index, d.name, d.driver_name,
               d.driver_info, d.api_string(), d.subgroup_uniform_control_flow ? "on" : "off");
    fmt::print("{:<44} {:<28} {:>3} {:>9} {:>9} {:>7} {:>9} {:>4} {}\n", "case", "variant", "sg", "max ulp", "max rel",
               "bound", "|sum-1|", "nan", "result");
    auto print = [&](const conformance::Result& r) {
        if (a.failures_only && (r.pass || r.skipped)) return;
        fmt::print("{:<44} {:<28} {:>3} {:>9.0f} {:>9.2e} {:>7.0e} {:>9.2e} {:>4} {}{}\n", r.case_name, r.variant,
                   r.subgroup_size, r.max_ulp, r.max_rel, r.rel_bound, r.worst_row_sum, r.nan_pattern_ok ? "ok" : "BAD",
                   r.skipped ? "skip" : r.pass ? "pass" : "FAIL", r.note.empty() ? "" : "  (" + r.note + ")");
    };
    nlohmann::json results = nlohmann::json::array();
    double worst_rel_fast = 0, worst_rel_accurate = 0;
    for (const auto& r : conformance::run(ctx, o, print)) {
        ++counts.total;
        counts.failed += !r.pass;
        counts.skipped += r.skipped;
        double& worst = r.variant.find("accurate") != std::string::npos ? worst_rel_accurate : worst_rel_fast;
        worst = std::max(worst, r.case_name.rfind("f32", 0) == 0 ? r.max_rel : 0.0);
        results.push_back({{"case", r.case_name},
                           {"variant", r.variant},
                           {"subgroup_size", r.subgroup_size},
                           {"max_ulp", r.max_ulp},
                           {"max_rel", r.max_rel},
                           {"rel_bound", r.rel_bound},
                           {"worst_row_sum_error", r.worst_row_sum},
                           {"nan_pattern_ok", r.nan_pattern_ok},
                           {"pass", r.pass},
                           {"skipped", r.skipped},
                           {"note", r.note}});
    }
    return {{"device", identity(d)},
            {"worst_f32_rel_fast", worst_rel_fast},
            {"worst_f32_rel_accurate", worst_rel_accurate},
            {"results", results}};
}

int conformance_command(const ConformanceArgs& a) {
    const std::vector<std::string> selectors = selectors_for(a.device);
    conformance::Options o;
    o.quick = a.quick;
    o.filter = a.filter;
    nlohmann::json report;
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    report["date"] = date;
    report["catalogue"] = a.quick ? "quick" : "full";
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
    sub->add_option("--filter", a->filter, "Only cases whose 'case variant' text contains this");
    sub->add_flag("--failures-only", a->failures_only, "Print only the failing rows of the table");
    sub->add_flag("--no-uniform-control-flow", a->no_uniform_control_flow,
                  "Leave VK_KHR_shader_subgroup_uniform_control_flow off even where offered: checks the shaders "
                  "that hosts without it get");
    sub->footer("Example: vksoftmax conformance --device all --json report.json");
    return [a]() { return conformance_command(*a); };
}

}  // namespace vksoftmax::cli

// vksoftmax bench: softmax timed with timestamp queries against the device's
// copy ceiling; table on stdout, progress on stderr, JSON/CSV/plot on request.
#include <fmt/core.h>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "bench.hpp"
#include "commands.hpp"
#include "driver_rule_options.hpp"
#include "output_file.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/plan.hpp"

namespace vksoftmax::cli {
namespace {

struct BenchArgs {
    std::string shapes = "suite", dtypes = "f32,f16", device, json, csv, plot, path, from_json, single_pass;
    DriverRuleArgs rules;
    bool log = false, stats = false, fresh_buffers = false, no_uniform_control_flow = false, dependencies = false,
         backward = false, sinks = false, ceilings = false;
    uint32_t iters = 20, repeats = 15, wg = 0, slots = 0, shares = 0, chunk = 0, batch = 0, patience = 0, query_block = 0;
    std::string attention, mask_dtype, row_order;
    std::vector<uint64_t> mask_dims;
    uint64_t heads = 32;
    double warmup_ms = 1000;
    float sigma = 4.f;
    std::optional<uint32_t> queue_family;
};

std::vector<Dtype> parse_dtypes(const std::string& s) {
    std::vector<Dtype> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, ',')) {
        if (item == "f32") out.push_back(Dtype::f32);
        else if (item == "f16") out.push_back(Dtype::f16);
        else if (item == "bf16") out.push_back(Dtype::bf16);
        else throw Error(ErrorKind::invalid_argument, "--dtype: '" + item + "' is not f32, f16 or bf16");
    }
    if (out.empty()) throw Error(ErrorKind::invalid_argument, "--dtype is empty");
    return out;
}

void write_text(const std::string& path, const std::string& text) {
    OutputFile f(path);
    f.commit(std::vector<uint8_t>(text.begin(), text.end()));
}

// Effective GB/s against tensor bytes, one series per path, the copy
// ceiling as a line. gnuplot draws it; without gnuplot, a message.
void plot(const std::string& png, const std::vector<bench::Row>& rows, double ceiling_gbps, const std::string& title) {
    if (std::system("command -v gnuplot >/dev/null 2>&1") != 0) {
        fmt::print(stderr, "vksoftmax: --plot needs gnuplot (apt-get install gnuplot-nox); no plot written, the "
                           "numbers above are complete\n");
        return;
    }
    std::string data;
    for (const char* path : {"subgroup-row", "workgroup-row", "split", "single-pass"}) {
        data += fmt::format("# {}\n", path);
        for (const bench::Row& r : rows)
            if (r.path == path) data += fmt::format("{} {} {}\n", r.bytes / 2, r.t.gbps, dtype_name(r.c.dtype));
        data += "\n\n";
    }
    const std::string dat = png + ".dat";
    write_text(dat, data);
    const std::string script = fmt::format(
        "set terminal pngcairo size 1000,600\nset output '{}'\nset logscale x\nset xlabel 'tensor bytes (input)'\n"
        "set ylabel 'effective GB/s (2 x bytes / GPU time)'\nset title '{}'\nset key left top\nset grid\n"
        "plot '{}' index 0 using 1:2 with points pt 7 title 'subgroup-row', '' index 1 using 1:2 with points pt 5 "
        "title 'workgroup-row', '' index 2 using 1:2 with points pt 9 title 'split', {} with lines lw 2 title "
        "'copy ceiling {:.0f} GB/s'\n",
        png, title, dat, ceiling_gbps, ceiling_gbps);
    FILE* g = popen("gnuplot", "w");
    if (!g) throw FileError("cannot start gnuplot");
    std::fputs(script.c_str(), g);
    const int rc = pclose(g);
    std::remove(dat.c_str());
    if (rc != 0) throw FileError("gnuplot failed to write '" + png + "'");
}

// --from-json: plot a saved run (e.g. one from a machine without gnuplot).
int replot(const BenchArgs& a) {
    if (a.plot.empty()) throw Error(ErrorKind::invalid_argument, "--from-json needs --plot FILE.png");
    std::ifstream f(a.from_json);
    if (!f) throw FileError("cannot open '" + a.from_json + "'");
    nlohmann::json j;
    try {
        f >> j;
        std::vector<bench::Row> rows;
        for (const auto& r : j.at("rows")) {
            bench::Row row;
            const std::string dtype = r.at("dtype");
            row.c.dtype = dtype == "f16" ? Dtype::f16 : dtype == "bf16" ? Dtype::bf16 : Dtype::f32;
            row.path = r.at("path");
            row.bytes = r.at("bytes");
            row.t.gbps = r.at("gbps");
            rows.push_back(row);
        }
        plot(a.plot, rows, j.at("copy_ceiling").at("gbps"),
             "vksoftmax on " + j.at("device").at("name").get<std::string>() + ", " + j.at("date").get<std::string>());
    } catch (const nlohmann::json::exception& e) {
        throw FileError("'" + a.from_json + "' is not a vksoftmax bench JSON: " + e.what());
    }
    return Exit::ok;
}

// --row-order's value (empty: automatic), Error(invalid_argument) for
// another word.
RowOrder parse_row_order(const std::string& text) {
    constexpr RowOrder values[] = {RowOrder::automatic, RowOrder::head_major, RowOrder::query_major};
    return parse_choice("--row-order", text, values, row_order_name);
}

// The timing and plan options of the command line.
bench::Options bench_options(const BenchArgs& a) {
    if (a.iters == 0 || a.repeats == 0) throw Error(ErrorKind::invalid_argument, "--iters and --repeats must be > 0");
    if (!(a.sigma > 0.f) || !std::isfinite(a.sigma)) throw Error(ErrorKind::invalid_argument, "--sigma must be positive");
    bench::Options o;
    o.iters = a.iters;
    o.repeats = a.repeats;
    o.warmup_ms = a.warmup_ms;
    o.sigma = a.sigma;
    o.plan.workgroup_size = a.wg;
    o.plan.slots = a.slots;
    o.plan.write_shares = a.shares;
    o.batch = a.batch;
    o.attention = a.attention;
    o.heads = a.heads;
    o.backward = a.backward;
    o.sinks = a.sinks;
    o.ceilings = a.ceilings;
    o.plan.chunk_elements = a.chunk;
    o.plan.single_pass_patience = a.patience;
    if (a.path == "subgroup-row") o.plan.path = Path::subgroup_row;
    else if (a.path == "workgroup-row") o.plan.path = Path::workgroup_row;
    else if (a.path == "split") o.plan.path = Path::split;
    else if (a.path == "single-pass") o.plan.path = Path::single_pass;
    else if (!a.path.empty())
        throw Error(ErrorKind::invalid_argument,
                    "--path: '" + a.path + "' is not subgroup-row, workgroup-row, split or single-pass");
    o.plan.single_pass = parse_single_pass(a.single_pass);
    o.plan.rules = parse_driver_rules(a.rules);
    o.plan.row_order = parse_row_order(a.row_order);
    o.plan.query_block = a.query_block;
    if (!a.mask_dims.empty()) {
        if (a.mask_dims.size() != 2 || !a.mask_dims[0] || !a.mask_dims[1])
            throw Error(ErrorKind::invalid_argument, "--mask-dims takes BATCH,HEADS, two positive integers");
        o.mask_batch = a.mask_dims[0];
        o.mask_heads = a.mask_dims[1];
    }
    if (!a.mask_dtype.empty()) {
        const std::vector<Dtype> mask = parse_dtypes(a.mask_dtype);
        if (mask.size() != 1) throw Error(ErrorKind::invalid_argument, "--mask-dtype takes one of f32, f16, bf16");
        o.mask_dtype = mask[0];
    }
    return o;
}

struct Measured {
    uint64_t ceiling_bytes = 0;
    bench::Timing ceiling;  // the largest case's bytes (at least 1 MiB): the device's
    bench::Timing floor;    // the fixed cost of a call
    // --dependencies: the floor under each dependency between the calls.
    std::vector<std::pair<bench::Dependency, bench::Timing>> floor_by_dependency;
    std::vector<bench::Row> rows;
};

// The floor's least warm-up, in ms (measure_all()).
constexpr double kFloorWarmupMs = 1000;

// On stderr, where a timing was taken again before two in a row agreed
// (bench::settle()): what was timed, the figure kept, the medians set aside.
void report_retimed(const std::string& what, const bench::Timing& t) {
    if (t.unsettled_medians_us.empty()) return;
    fmt::print(stderr, "bench: {}: {:.2f} us {}; before: {:.2f} us\n", what, t.median_us,
               t.settled ? "once two timings in a row agreed" : "in the last timing, none agreeing",
               fmt::join(t.unsettled_medians_us, ", "));
}

// The run's first case, measured again after the last, its second timing
// kept (bench::reprised()). Where the two disagree, stderr says so; the
// JSON keeps the first as first_median_us.
void reprise_first_case(Context& ctx, const bench::Case& c, const bench::Options& o, const bench::Buffers* buffers,
                        Measured& m) {
    bench::Row again = bench::measure(ctx, c, o, buffers);
    report_retimed(fmt::format("{} {} (again, after the last case)", dtype_name(c.dtype), c.name()), again.t);
    bench::Row& first = m.rows.front();
    if (!bench::timings_agree(first.t, again.t))
        fmt::print(stderr, "bench: {} {}: {:.2f} us first, {:.2f} us after the last case; the second kept\n",
                   dtype_name(c.dtype), c.name(), first.t.median_us, again.t.median_us);
    first = bench::reprised(first, std::move(again));
}

// The floor and the copy ceiling over the largest case, then every case,
// verified and timed, each beside a copy of its own byte count.
Measured measure_all(Context& ctx, const std::vector<bench::Case>& cases, const bench::Options& o, bool fresh_buffers,
                     bool dependencies) {
    const auto start = std::chrono::steady_clock::now();
    auto progress = [&](const std::string& what) {
        if (std::chrono::steady_clock::now() - start > std::chrono::seconds(1)) fmt::print(stderr, "bench: {}\n", what);
    };
    Measured m;
    const bench::Sizes sizes = bench::sizes(ctx, cases, o);
    // Each case is compared with a copy of half the bytes it moves (its
    // tensor forward; 3 x tensor bytes backward, with the sink gradient,
    // halved): the buffers hold the largest such copy, which holds every
    // case's tensor too.
    m.ceiling_bytes = std::max<uint64_t>(sizes.moved / 2, 1 << 20);
    std::unique_ptr<bench::Buffers> buffers;
    if (!fresh_buffers) buffers = std::make_unique<bench::Buffers>(ctx, m.ceiling_bytes, sizes.workspace);
    // The floor comes first in the process, from an idle GPU whose clocks
    // are down, and a one-workgroup dispatch raises them slowly: under a
    // shorter warm-up it read 3.9-7.6 us where it is 2.5 (H100,
    // bench/NOTES.md, v42). So it warms for at least a second, whatever the
    // cases' warm-up.
    bench::Options floor_options = o;
    floor_options.warmup_ms = std::max(o.warmup_ms, kFloorWarmupMs);
    m.floor = bench::measure_floor(ctx, floor_options, buffers.get());
    report_retimed("floor", m.floor);
    if (dependencies)
        for (bench::Dependency d : bench::all_dependencies())
            if (bench::can_record(ctx, d)) m.floor_by_dependency.emplace_back(d, bench::measure_floor(ctx, o, buffers.get(), d));
    m.ceiling = bench::measure_copy(ctx, m.ceiling_bytes, o, buffers.get());
    report_retimed(fmt::format("copy ceiling over {} bytes", m.ceiling_bytes), m.ceiling);
    // A case's own ceiling follows the case: the clocks are up already.
    bench::Options follow = o;
    follow.warmup_ms = bench::follow_warmup_ms(o);
    // Each ceiling at each size, timed once: (bytes, ceiling) -> timing.
    std::map<std::pair<uint64_t, Ceiling>, bench::Timing> ceilings;
    auto ceiling_at = [&](uint64_t bytes, Ceiling c) {
        const auto key = std::make_pair(bytes, c);
        if (!ceilings.count(key)) {
            ceilings[key] = bench::measure_copy(ctx, bytes, follow, buffers.get(), c);
            report_retimed(fmt::format("{} of {} bytes", ceiling_name(c), bytes), ceilings[key]);
        }
        return ceilings[key];
    };
    for (size_t i = 0; i < cases.size(); ++i) {
        progress(fmt::format("[{}/{}] {} {}", i + 1, cases.size(), dtype_name(cases[i].dtype), cases[i].name()));
        bench::Row row = bench::measure(ctx, cases[i], o, buffers.get());
        report_retimed(fmt::format("{} {}", dtype_name(cases[i].dtype), cases[i].name()), row.t);
        const uint64_t bytes = row.bytes / 2;
        row.ceiling = ceiling_at(bytes, Ceiling::copy);
        if (o.ceilings) {
            row.read_ceiling = ceiling_at(bytes, Ceiling::read_only);
            row.write_ceiling = ceiling_at(bytes, Ceiling::write_only);
        }
        m.rows.push_back(row);
    }
    if (!cases.empty() && bench::clock_drops_when_idle(ctx)) reprise_first_case(ctx, cases[0], o, buffers.get(), m);
    return m;
}

std::string driver_string(const DeviceInfo& d) {
    return d.driver_name.empty() ? d.vendor_name() : d.driver_name + " " + d.driver_info;
}

void print_memory_types(const Context& ctx) {
    const auto& mem = ctx.memory_properties();
    std::string types;
    for (uint32_t i = 0; i < mem.memoryTypeCount; ++i) {
        const auto f = mem.memoryTypes[i].propertyFlags;
        types += fmt::format(" {}:heap{}{}{}{}{}", i, mem.memoryTypes[i].heapIndex,
                             f & VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT ? ",DL" : "",
                             f & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT ? ",HV" : "",
                             f & VK_MEMORY_PROPERTY_HOST_COHERENT_BIT ? ",HC" : "",
                             f & VK_MEMORY_PROPERTY_HOST_CACHED_BIT ? ",HCached" : "");
    }
    fmt::print("memory types:{}\n", types);
}

// Time above the floor, and the fraction of the copy ceiling at the case's size.
double above_floor(const bench::Row& r, const Measured& m) { return r.t.median_us - m.floor.median_us; }
double ceiling_fraction(const bench::Row& r) { return r.ceiling.gbps > 0 ? r.t.gbps / r.ceiling.gbps : 0; }

// The table on stdout; false when a case's result was wrong.
bool print_table(const Context& ctx, const bench::Options& o, const Measured& m) {
    const DeviceInfo& d = ctx.info();
    fmt::print("device: {} ({}), {} calls x {} repeats, median{}\n", d.name, driver_string(d), o.iters, o.repeats,
               o.backward ? "; the backward pass (bytes: y, dy and dx)" : "");
    print_memory_types(ctx);
    fmt::print("floor (one-workgroup dispatch + barrier): {:.2f} us per call\n", m.floor.median_us);
    for (const auto& [dependency, t] : m.floor_by_dependency)
        fmt::print("    with {}: {:.2f} us per call (min {:.2f})\n", bench::dependency_name(dependency), t.median_us, t.min_us);
    fmt::print("copy ceiling: {:.1f} us over {} bytes, {:.0f} GB/s\n", m.ceiling.median_us, m.ceiling_bytes,
               m.ceiling.gbps);
    fmt::print("{:<6} {:<15} {:<14} {:>20} {:>10} {:>10} {:>11} {:>7} {:>10} {:>8} {:>10} {:>9}\n", "dtype", "shape",
               "path", "wg/slots/vec[odd][/lanes][ xshares]", "median us", "min us", "over floor", "GB/s", "copy GB/s", "of copy", "max rel",
               "pass 1 us");
    bool all_ok = true;
    for (const auto& r : m.rows) {
        all_ok = all_ok && r.verified;
        std::string geometry = fmt::format("{}/{}/{}{}", r.workgroup_size, r.slots, r.vec, r.odd_rows ? "odd" : "");
        if (r.row_lanes) geometry += fmt::format("/{}", r.row_lanes);
        if (r.write_shares > 1) geometry += fmt::format(" x{}", r.write_shares);
        fmt::print("{:<6} {:<15} {:<14} {:>20} {:>10.2f} {:>10.2f} {:>11.2f} {:>7.0f} {:>10.0f} {:>7.0f}% {:>10.2e} {:>9}{}{}\n",
                   dtype_name(r.c.dtype), r.c.name(), r.path, geometry, r.t.median_us, r.t.min_us, above_floor(r, m),
                   r.t.gbps, r.ceiling.gbps, 100.0 * ceiling_fraction(r), r.max_rel_error,
                   r.pass1_us > 0 ? fmt::format("{:.2f}", r.pass1_us) : "", r.attention.empty() ? "" : "  " + r.attention,
                   r.verified ? "" : "  WRONG RESULT");
        for (const std::string& st : r.stats) fmt::print("    {}\n", st);
        if (o.ceilings)
            fmt::print("    over its {} bytes: read-only {:.2f} us, write-only {:.2f} us, copy {:.2f} us\n", r.bytes / 2,
                       r.read_ceiling.median_us, r.write_ceiling.median_us, r.ceiling.median_us);
        if (r.batch.median_us > 0) {
            all_ok = all_ok && r.batch_verified;
            fmt::print("    {} problems: one batch {:.2f} us ({:.2f} per problem); {} records with a barrier each {:.2f} us{}\n",
                       o.batch, r.batch.median_us, r.batch.median_us / o.batch, o.batch, r.singles.median_us,
                       r.batch_verified ? "" : "  WRONG RESULT IN THE BATCH");
        }
    }
    return all_ok;
}

nlohmann::json row_json(const bench::Row& r, const Measured& m) {
    return {{"shape", r.c.name()},
            {"rows", r.c.shape.outer},
            {"cols", r.c.shape.axis},
            {"dtype", dtype_name(r.c.dtype)},
            {"log", r.c.log},
            {"path", r.path},
            {"attention", r.attention},
            {"passes", r.passes},
            {"workgroup_size", r.workgroup_size},
            {"slots", r.slots},
            {"vec", r.vec},
            {"row_lanes", r.row_lanes},
            {"write_shares", r.write_shares},
            {"odd_rows", r.odd_rows},
            {"pass1_us", r.pass1_us},
            {"groups", r.groups},
            {"stats", r.stats},
            {"bytes", r.bytes},
            {"median_us", r.t.median_us},
            {"min_us", r.t.min_us},
            {"samples_us", r.t.samples_us},
            {"unsettled_medians_us", r.t.unsettled_medians_us},
            {"settled", r.t.settled},
            {"first_median_us", r.first_median_us},
            {"above_floor_us", above_floor(r, m)},
            {"gbps", r.t.gbps},
            {"copy_us", r.ceiling.median_us},
            {"copy_gbps", r.ceiling.gbps},
            {"read_only_us", r.read_ceiling.median_us},
            {"write_only_us", r.write_ceiling.median_us},
            {"ceiling_fraction", ceiling_fraction(r)},
            {"max_rel_error", r.max_rel_error},
            {"verified", r.verified},
            {"batch_us", r.batch.median_us},
            {"batch_singles_us", r.singles.median_us},
            {"batch_verified", r.batch_verified}};
}

void write_json(const std::string& path, const DeviceInfo& d, const bench::Options& o, const Measured& m) {
    nlohmann::json j;
    const std::time_t now = std::time(nullptr);
    char date[32];
    std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
    j["date"] = date;
    j["device"] = {{"name", d.name}, {"driver", driver_string(d)}, {"api_version", d.api_string()},
                   {"subgroup_size", d.subgroup_size}, {"queue_family", d.queue_family},
                   {"subgroup_uniform_control_flow", d.subgroup_uniform_control_flow}};
    j["backward"] = o.backward;
    j["sinks"] = o.sinks;
    j["iters"] = o.iters;
    j["repeats"] = o.repeats;
    j["floor_us"] = m.floor.median_us;
    for (const auto& [dependency, t] : m.floor_by_dependency)
        j["floor_by_dependency_us"][bench::dependency_name(dependency)] = t.median_us;
    j["copy_ceiling"] = {{"bytes", m.ceiling_bytes}, {"median_us", m.ceiling.median_us}, {"gbps", m.ceiling.gbps}};
    for (const auto& r : m.rows) j["rows"].push_back(row_json(r, m));
    write_text(path, j.dump(2) + "\n");
}

// A time for the CSV: empty where it was not measured (0).
std::string csv_us(double us) { return us > 0 ? fmt::format("{:.3f}", us) : ""; }

void write_csv(const std::string& path, const Measured& m) {
    std::string csv = "dtype,shape,path,passes,bytes,median_us,min_us,above_floor_us,gbps,copy_gbps,ceiling_fraction,"
                      "max_rel_error,verified,pass1_us,copy_us,read_only_us,write_only_us\n";
    for (const auto& r : m.rows)
        csv += fmt::format("{},{},{},{},{},{:.3f},{:.3f},{:.3f},{:.1f},{:.1f},{:.4f},{:.3e},{},{},{},{},{}\n",
                           dtype_name(r.c.dtype), r.c.name(), r.path, r.passes, r.bytes, r.t.median_us, r.t.min_us,
                           above_floor(r, m), r.t.gbps, r.ceiling.gbps, ceiling_fraction(r), r.max_rel_error,
                           r.verified ? 1 : 0, csv_us(r.pass1_us), csv_us(r.ceiling.median_us),
                           csv_us(r.read_ceiling.median_us), csv_us(r.write_ceiling.median_us));
    write_text(path, csv);
}

int bench_command(const BenchArgs& a) {
    if (!a.from_json.empty()) return replot(a);
    const bench::Options o = bench_options(a);
    const auto cases = bench::parse_cases(a.shapes, parse_dtypes(a.dtypes), a.log);
    ContextOptions co;
    co.device = a.device;
    co.capture_statistics = a.stats;
    co.subgroup_uniform_control_flow = !a.no_uniform_control_flow;
    co.queue_family = a.queue_family;
    Context ctx(co);
    const Measured m = measure_all(ctx, cases, o, a.fresh_buffers, a.dependencies);
    const bool all_ok = print_table(ctx, o, m);
    if (!a.json.empty()) write_json(a.json, ctx.info(), o, m);
    if (!a.csv.empty()) write_csv(a.csv, m);
    if (!a.plot.empty()) plot(a.plot, m.rows, m.ceiling.gbps, "vksoftmax on " + ctx.info().name);
    return all_ok ? int(Exit::ok) : int(Exit::failed_check);
}

// `bench --help` lists its options in these groups, in this order; each
// add_*_options() sets its group as the default of the options it adds.
constexpr const char* kCasesGroup = "What to time";
constexpr const char* kTimingGroup = "How to time";
constexpr const char* kOutputGroup = "Output";
constexpr const char* kTuningGroup = "Tuning and diagnosis (override the plan's choices)";

void add_case_options(CLI::App& sub, BenchArgs& a) {
    sub.option_defaults()->group(kCasesGroup);
    sub.add_option("--shapes", a.shapes,
                   "'suite' (default: every family), families (" + bench::family_names() +
                       ") and ROWSxCOLS, comma-separated, e.g. core,1024x512");
    sub.add_option("--dtype", a.dtypes, "f32,f16,bf16 (default f32,f16)");
    sub.add_flag("--log", a.log, "log-softmax");
    sub.add_option("--sigma", a.sigma, "Standard deviation of the random logits (default 4, as the peers)");
    sub.add_option("--attention", a.attention,
                   "Attention options on every case, seen as (batch, heads, cols, cols), scale 1/sqrt(128): mask (an "
                   "fp16 (cols, cols) mask, -inf past the diagonal) or causal (from indices, no buffer)");
    sub.add_option("--heads", a.heads, "Heads of --attention (default 32)");
    sub.add_option("--mask-dtype", a.mask_dtype,
                   "The storage of --attention mask: f32, f16 or bf16 (default: bf16 for bf16 cases, else f16)");
    sub.add_option("--mask-dims", a.mask_dims,
                   "The batch and head dimensions of --attention mask, BATCH,HEADS, each dividing the tensor's "
                   "(default 1,1: one (cols, cols) mask for every batch and head)")
        ->delimiter(',')
        ->expected(2);
    sub.add_flag("--backward", a.backward,
                 "Time the backward pass instead (y the softmax of the logits, dy normal(0, 1)), over 3 x tensor bytes");
    sub.add_flag("--sinks", a.sinks,
                 "With --backward: the forward had a sink (one, logit 0); each row's sink gradient is written and "
                 "checked too");
    sub.add_option("--batch", a.batch,
                   "Also time N copies of each case: as one batch (vksm_record_batch), and as N records with a barrier "
                   "each");
    sub.add_option("--device", a.device, "Device index or part of its name");
}

void add_timing_options(CLI::App& sub, BenchArgs& a) {
    sub.option_defaults()->group(kTimingGroup);
    sub.add_option("--iters", a.iters, "Back-to-back calls per timed submission (default 20)");
    sub.add_option("--repeats", a.repeats, "Timed submissions; median and min reported (default 15)");
    sub.add_option("--warmup-ms", a.warmup_ms,
                   "Keep the GPU busy with each case this long before timing "
                   "(default 1000; the floor, timed first, at least 1000)");
    sub.add_flag("--ceilings", a.ceilings,
                 "Also time a pass that only reads each case's bytes and one that only writes them, beside its copy "
                 "(where reads and writes share one bandwidth, the two add up to the copy)");
    sub.add_flag("--dependencies", a.dependencies,
                 "Also time the floor with each dependency between calls (barriers, synchronization2, events, none)");
    sub.add_flag("--stats", a.stats, "Print the driver's pipeline statistics (registers, spills), where offered");
    sub.add_option("--queue-family", a.queue_family,
                   "Submit to a queue of this family (one with compute; default: the first with compute)");
}

void add_output_options(CLI::App& sub, BenchArgs& a) {
    sub.option_defaults()->group(kOutputGroup);
    sub.add_option("--json", a.json, "Write every figure to this JSON file");
    sub.add_option("--csv", a.csv, "Write the table to this CSV file");
    sub.add_option("--plot", a.plot, "Draw GB/s against size to this PNG (needs gnuplot)");
    sub.add_option("--from-json", a.from_json, "Run nothing: plot a saved --json file (with --plot)");
}

void add_tuning_options(CLI::App& sub, BenchArgs& a) {
    sub.option_defaults()->group(kTuningGroup);
    sub.add_option("--path", a.path, "Force subgroup-row, workgroup-row, split or single-pass");
    sub.add_option("--single-pass", a.single_pass, single_pass_help());
    sub.add_option("--wg", a.wg, "Force the workgroup size (power of two)");
    sub.add_option("--slots", a.slots,
                   "Force the vec4 slots per invocation (rows per subgroup for rows held one per slot); past what "
                   "holds the row, cut to it");
    sub.add_option("--write-shares", a.shares,
                   "Force the workgroups that share each row where rows are shared (--row-shares; 1-16, 1: whole)");
    sub.add_option("--chunk", a.chunk, "Split and single-pass paths' elements per chunk (rounded up to a tile)");
    sub.add_option("--patience", a.patience,
                   "Single-pass polling rounds before a workgroup computes its row's missing partials itself");
    sub.add_option("--row-order", a.row_order,
                   "The order attention rows are taken in: automatic (the plan's), head-major or query-major");
    sub.add_option("--query-block", a.query_block,
                   "Query-major order in blocks of this many query rows (a power of two dividing them; default: the "
                   "plan's)");
    add_driver_rule_options(sub, a.rules);
    sub.add_flag("--no-uniform-control-flow", a.no_uniform_control_flow,
                 "Leave VK_KHR_shader_subgroup_uniform_control_flow off even where offered");
    sub.add_flag("--fresh-buffers", a.fresh_buffers,
                 "Allocate each case's buffers anew instead of sharing one set across the run");
}

}  // namespace

Command add_bench(CLI::App& app) {
    auto* sub = app.add_subcommand("bench", "Time softmax with GPU timestamps against the device's copy ceiling");
    auto a = std::make_shared<BenchArgs>();
    add_case_options(*sub, *a);
    add_timing_options(*sub, *a);
    add_output_options(*sub, *a);
    add_tuning_options(*sub, *a);
    sub->footer("Example: vksoftmax bench --shapes 1024x512,8x1048576 --dtype f32 --iters 20 --json out.json");
    return [a]() { return bench_command(*a); };
}

}  // namespace vksoftmax::cli

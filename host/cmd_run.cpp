// vksoftmax run: softmax of a .npy tensor along one axis, on the GPU or CPU.
#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <optional>
#include <nlohmann/json.hpp>

#include "attention_args.hpp"
#include "commands.hpp"
#include "npy.hpp"
#include "output_file.hpp"
#include "tensor.hpp"
#include "vksoftmax/accuracy.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/run.hpp"

namespace vksoftmax::cli {
namespace {

struct RunArgs {
    std::string input, output, backend = "gpu", device;
    int axis = -1;
    bool log = false, check = false, time = false, json = false;
    double temperature = 1.0, scale = 1.0;
    AttentionArgs attention;
};

void check_args(const RunArgs& a) {
    if (!(a.temperature > 0.0) || !std::isfinite(a.temperature))
        throw Error(ErrorKind::invalid_argument,
                    fmt::format("--temperature must be positive and finite, got {}", a.temperature));
    Problem multiplier;  // --scale against --temperature: the engine's rule and message
    multiplier.temperature = a.temperature;
    multiplier.scale = a.scale;
    logit_multiplier(multiplier);
    if (a.backend != "gpu" && a.backend != "cpu")
        throw Error(ErrorKind::invalid_argument, "--backend must be gpu or cpu, got '" + a.backend + "'");
}

// The problem for the tensor along --axis.
Problem problem_for(const RunArgs& a, const Tensor& t) {
    const int rank = static_cast<int>(t.dims.size());
    if (a.axis < -std::max(rank, 1) || a.axis >= std::max(rank, 1))
        throw Error(ErrorKind::invalid_argument, fmt::format("--axis {} is out of range for '{}' of shape {}", a.axis,
                                                             a.input, npy::shape_repr(t.dims)));
    Problem p;
    p.dtype = t.dtype;
    p.log = a.log;
    p.temperature = a.temperature;
    p.scale = a.scale;
    p.shape = memory_shape(t, a.axis);
    return p;
}

struct Execution {
    std::vector<uint8_t> result;
    std::string device_name = "CPU reference";
    RunResult gpu;      // the GPU backend's plan and timings
    double cpu_ms = 0;  // the CPU backend's time
};

Execution execute(const RunArgs& a, const Tensor& t, const Problem& p, const AttentionData& attention) {
    Execution e;
    e.result.resize(t.data.size());
    if (p.shape.elements() == 0) return e;
    if (a.backend == "gpu") {
        Context ctx(ContextOptions{a.device});
        e.device_name = ctx.info().name;
        e.gpu = vksoftmax::run(ctx, p, t.data.data(), e.result.data(), RunOptions{}, attention);
        return e;
    }
    const auto start = std::chrono::steady_clock::now();
    if (p.dtype == Dtype::f32)
        cpu::softmax(p, reinterpret_cast<const float*>(t.data.data()), reinterpret_cast<float*>(e.result.data()),
                     attention);
    else
        cpu::softmax(p, reinterpret_cast<const uint16_t*>(t.data.data()), reinterpret_cast<uint16_t*>(e.result.data()),
                     attention);
    e.cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return e;
}

// --check: the result against the float64 reference; false when over the bound.
bool report_check(const RunArgs& a, const Tensor& t, const Problem& p, const Execution& e, AttentionInputs& attention,
                  nlohmann::json& report) {
    // The reference's own log-sum-exp, beside the result's.
    std::vector<float> lse_ref(attention.lse.size());
    AttentionData ref_data = attention.data();
    if (ref_data.lse) ref_data.lse = lse_ref.data();
    const std::vector<double> ref = reference(t, p, ref_data);
    const std::vector<double> got = to_double(e.result.data(), e.result.size() / dtype_size(p.dtype), p.dtype);
    const double rel = accuracy_bound(p.dtype, p.log).rel;
    const Accuracy acc = compare(p, got, ref);
    // A sink takes its share of each row: rows with sinks sum below 1.
    const bool sums_ok = p.attention.sinks || acc.max_row_sum_error <= rel;
    double lse_error = 0;  // max |lse - ref| / max(1, |ref|), NaN where both are NaN
    bool lse_ok = true;
    for (size_t r = 0; r < lse_ref.size(); ++r) {
        const double value = attention.lse[r], want = lse_ref[r];
        if (std::isnan(value) || std::isnan(want)) {
            lse_ok = lse_ok && std::isnan(value) == std::isnan(want);
            continue;
        }
        lse_error = std::max(lse_error, std::fabs(value - want) / std::max(1.0, std::fabs(want)));
    }
    lse_ok = lse_ok && lse_error <= 1e-5;
    const bool check_ok = acc.within(rel, 0.0) && sums_ok && lse_ok;
    report["check"] = {{"max_abs_error", acc.max_abs},
                       {"max_rel_error", acc.max_rel},
                       {"max_row_sum_error", acc.max_row_sum_error},
                       {"nonfinite_mismatches", acc.nonfinite_mismatches},
                       {"rel_bound", rel},
                       {"rows_sum_to_one", sums_ok},
                       {"ok", check_ok}};
    if (!lse_ref.empty()) report["check"]["max_lse_error"] = lse_error;
    if (!a.json)
        fmt::print("check against the CPU reference (float64): max abs error {:.3g}, max rel error {:.3g} "
                   "(bound {:g}), max |row sum - 1| {:.3g}: rows {} to 1{}; {}\n",
                   acc.max_abs, acc.max_rel, rel, acc.max_row_sum_error,
                   p.attention.sinks ? "with sinks need not sum" : sums_ok ? "sum" : "do NOT sum",
                   acc.nonfinite_mismatches ? fmt::format(", {} non-finite mismatches", acc.nonfinite_mismatches) : "",
                   check_ok ? "ok" : "FAILED");
    if (!a.json && !lse_ref.empty())
        fmt::print("log-sum-exp: max error {:.3g} of max(1, |ref|) (bound 1e-5){}\n", lse_error,
                   lse_ok ? "" : ": FAILED");
    return check_ok;
}

// --time: each GPU pass and the effective bandwidth, or the CPU's time.
void report_time(const RunArgs& a, const Execution& e, nlohmann::json& report) {
    const double bytes = 2.0 * static_cast<double>(e.result.size());
    const RunResult& gpu = e.gpu;
    if (a.backend == "gpu" && gpu.timed) {
        report["gpu_ns"] = gpu.gpu_ns;
        report["pass_ns"] = gpu.pass_ns;
        report["gb_per_s"] = gpu.gpu_ns > 0 ? bytes / gpu.gpu_ns : 0.0;
        if (a.json) return;
        std::string passes;
        for (size_t i = 0; i < gpu.pass_ns.size(); ++i)
            passes += fmt::format("{}pass {}: {:.1f} us", i ? ", " : "", i + 1, gpu.pass_ns[i] / 1e3);
        fmt::print("GPU time {:.1f} us ({}), {:.1f} GB/s effective (2 x {} bytes)\n", gpu.gpu_ns / 1e3, passes,
                   gpu.gpu_ns > 0 ? bytes / gpu.gpu_ns : 0.0, e.result.size());
    } else if (a.backend == "gpu") {
        report["gpu_ns"] = nullptr;
        if (!a.json) fmt::print("GPU time: not available (no timestamps on {})\n", e.device_name);
    } else {
        report["cpu_ms"] = e.cpu_ms;
        if (!a.json) fmt::print("CPU time {:.2f} ms\n", e.cpu_ms);
    }
}

int run_command(const RunArgs& a) {
    check_args(a);
    const Tensor t = load_tensor(a.input);
    Problem p = problem_for(a, t);
    AttentionInputs attention = read_attention(a.attention, t, a.axis);
    p.attention = attention.attention;  // checked against the shape by read_attention()
    OutputFile out(a.output);  // fails now if the output cannot be written
    std::optional<OutputFile> lse_out;
    if (!a.attention.lse.empty()) lse_out.emplace(a.attention.lse);

    const Execution e = execute(a, t, p, attention.data());
    nlohmann::json report = {{"input", a.input},     {"output", a.output},  {"shape", t.dims},
                             {"dtype", dtype_name(p.dtype)}, {"axis", a.axis}, {"log", a.log},
                             {"temperature", a.temperature}, {"scale", a.scale}, {"backend", a.backend}};
    if (a.backend == "gpu" && p.shape.elements() > 0) {
        report["path"] = path_name(e.gpu.plan.path);
        report["passes"] = e.gpu.plan.passes;
    }
    report["device"] = e.device_name;
    const bool check_ok = a.check ? report_check(a, t, p, e, attention, report) : true;
    if (a.time) report_time(a, e, report);

    out.commit(npy::encode(npy_kind(p.dtype), t.dims, t.fortran_order, e.result.data(), e.result.size()));
    if (lse_out)
        lse_out->commit(npy::encode(npy::Kind::f32, attention.lse_dims, false, attention.lse.data(),
                                    attention.lse.size() * sizeof(float)));
    if (a.json)
        fmt::print("{}\n", report.dump(2));
    else
        fmt::print("wrote {}: {} over axis {} of {} {} on {}\n", a.output, a.log ? "log-softmax" : "softmax", a.axis,
                   dtype_name(p.dtype), npy::shape_repr(t.dims), e.device_name);
    return check_ok ? int(Exit::ok) : int(Exit::failed_check);
}

}  // namespace

// --mask, --causal, --alibi, --heads, --sinks, --lse.
void add_attention_options(CLI::App& sub, AttentionArgs& a) {
    sub.add_option("--mask", a.mask,
                   "Additive mask .npy (float32, float16 or bfloat16) of (mask_batch, mask_heads, mask_rows, n), leading 1s "
                   "optional, each dividing the input's (batch, heads, query rows); -inf hides");
    sub.add_option_function<int64_t>(
           "--causal", [&a](const int64_t& offset) { a.causal = offset; },
           "Causal mask: column j of query row q hidden where j > q + OFFSET (default 0: no cached keys)")
        ->expected(0, 1)
        ->default_str("0");
    sub.add_option("--alibi", a.alibi, "ALiBi: the mask scaled by each head's slope from MAX_BIAS (as ggml)");
    sub.add_option("--heads", a.heads,
                   "Heads: the input is (batch, heads, query rows, n) with query rows its second-to-last dimension "
                   "(default: its third-to-last dimension, or 1)");
    sub.add_option("--sinks", a.sinks, "Attention sinks .npy: one logit per head, in the normaliser, no output");
    sub.add_option("--lse", a.lse, "Also write each row's log-sum-exp to this .npy (float32, the input's shape but the last)");
}

Command add_run(CLI::App& app) {
    auto* sub = app.add_subcommand("run", "Softmax of a .npy tensor along one axis");
    auto a = std::make_shared<RunArgs>();
    sub->add_option("-i,--input", a->input, "Input .npy (float32, float16 or bfloat16 saved as '<V2'; float64/integers are converted to float32)")
        ->required();
    sub->add_option("-o,--output", a->output, "Output .npy (same shape; written only on success)")->required();
    sub->add_option("--axis", a->axis, "Axis to normalize; negative counts from the end (default -1)");
    sub->add_flag("--log", a->log, "log-softmax instead of softmax");
    sub->add_option("--temperature", a->temperature, "softmax(x / T), T > 0 (default 1)");
    sub->add_option("--scale", a->scale,
                    "softmax(scale * x), scale > 0 (default 1; attention's 1/sqrt(d)); the same as --temperature 1/scale");
    add_attention_options(*sub, a->attention);
    sub->add_option("--backend", a->backend, "gpu (default) or cpu (the float64 reference)");
    sub->add_option("--device", a->device, "Device index or part of its name (see 'vksoftmax devices')");
    sub->add_flag("--check", a->check, "Also compute the CPU reference and report the error");
    sub->add_flag("--time", a->time, "Report the GPU time of each pass and the effective bandwidth");
    sub->add_flag("--json", a->json, "Print one JSON object with everything above");
    sub->footer("Example: vksoftmax run -i logits.npy -o probs.npy --axis 1 --check --time");
    return [a]() { return run_command(*a); };
}

}  // namespace vksoftmax::cli

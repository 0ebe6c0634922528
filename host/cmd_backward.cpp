// vksoftmax backward: the gradient of softmax (or log-softmax) along one
// axis, from the forward output y and its gradient dy (.npy files), on the
// GPU or CPU; for a forward with sinks, their gradient too.
#include <fmt/core.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>

#include "commands.hpp"
#include "npy.hpp"
#include "output_file.hpp"
#include "printable.hpp"
#include "tensor.hpp"
#include "vksoftmax/accuracy.hpp"
#include "vksoftmax/attention.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/run.hpp"

namespace vksoftmax::cli {
namespace {

struct BackwardArgs {
    std::string y, dy, output, backend = "gpu", device;
    std::string sink_gradient;  // --sink-gradient: .npy of the heads' sink gradients; empty: no sinks
    uint64_t heads = 0;         // --heads; 0: y's third-to-last dimension
    int axis = -1;
    bool log = false, check = false, time = false, json = false;
    double temperature = 1.0, scale = 1.0;
};

// The problem of y along --axis, dy checked against y (FileError naming
// the file and what differs).
Problem problem_for(const BackwardArgs& a, const Tensor& y, const Tensor& dy) {
    if (a.backend != "gpu" && a.backend != "cpu")
        throw Error(ErrorKind::invalid_argument, "--backend must be gpu or cpu, got '" + a.backend + "'");
    if (dy.dims != y.dims || dy.dtype != y.dtype || dy.fortran_order != y.fortran_order)
        throw FileError(fmt::format("'{}': dy is {} {}{}, y ('{}') is {} {}{}: they must match", printable(a.dy),
                                    dtype_name(dy.dtype), npy::shape_repr(dy.dims), dy.fortran_order ? " (Fortran order)" : "",
                                    printable(a.y), dtype_name(y.dtype), npy::shape_repr(y.dims),
                                    y.fortran_order ? " (Fortran order)" : ""));
    const int rank = static_cast<int>(y.dims.size());
    if (a.axis < -std::max(rank, 1) || a.axis >= std::max(rank, 1))
        throw Error(ErrorKind::invalid_argument, fmt::format("--axis {} is out of range for '{}' of shape {}", a.axis,
                                                             a.y, npy::shape_repr(y.dims)));
    Problem p;
    p.dtype = y.dtype;
    p.log = a.log;
    p.temperature = a.temperature;
    p.scale = a.scale;
    p.backward = true;
    p.shape = memory_shape(y, a.axis);
    logit_multiplier(p);  // --scale against --temperature: the engine's rule and message
    if (!a.sink_gradient.empty()) {
        if ((a.axis != -1 && a.axis != rank - 1) || y.fortran_order || rank == 0)
            throw Error(ErrorKind::invalid_argument,
                        "--sink-gradient needs the backward pass along the last axis of a C-order tensor");
        // y as (batch, heads, query rows, n), as `vksoftmax run` reads its sinks' input.
        p.attention.sinks = true;
        p.attention.query_rows = dim_from_end(y.dims, 2);
        p.attention.heads = a.heads ? a.heads : dim_from_end(y.dims, 3);
        attention_layout(p);  // heads x query rows against the rows: the engine's rule and message
    } else if (a.heads) {
        throw Error(ErrorKind::invalid_argument, "--heads is for --sink-gradient");
    }
    return p;
}

// Head h's sink gradient: the sum over its rows (float64).
std::vector<float> per_head(const Problem& p, const std::vector<double>& rows) {
    const AttentionLayout layout = attention_layout(p);
    std::vector<double> sums(layout.heads, 0.0);
    for (uint64_t r = 0; r < rows.size(); ++r) sums[layout.head(r)] += rows[r];
    return std::vector<float>(sums.begin(), sums.end());
}

struct Execution {
    std::vector<uint8_t> dx;
    std::vector<double> sink_gradient;  // each row's, where the forward had sinks
    std::string device_name = "CPU reference";
    RunResult gpu;
    double cpu_ms = 0;
};

Execution execute(const BackwardArgs& a, const Problem& p, const Tensor& y, const Tensor& dy) {
    Execution e;
    e.dx.resize(y.data.size());
    e.sink_gradient.assign(p.attention.sinks ? p.shape.rows() : 0, 0.0);
    if (p.shape.elements() == 0) return e;
    double* sinks = p.attention.sinks ? e.sink_gradient.data() : nullptr;
    if (a.backend == "gpu") {
        Context ctx(ContextOptions{a.device});
        e.device_name = ctx.info().name;
        std::vector<float> rows(e.sink_gradient.size());
        e.gpu = run_backward(ctx, p, y.data.data(), dy.data.data(), e.dx.data(), {}, sinks ? rows.data() : nullptr);
        e.sink_gradient.assign(rows.begin(), rows.end());
        return e;
    }
    const auto start = std::chrono::steady_clock::now();
    if (p.dtype == Dtype::f32)
        cpu::softmax_backward(p, reinterpret_cast<const float*>(y.data.data()),
                              reinterpret_cast<const float*>(dy.data.data()), reinterpret_cast<float*>(e.dx.data()),
                              sinks);
    else
        cpu::softmax_backward(p, reinterpret_cast<const uint16_t*>(y.data.data()),
                              reinterpret_cast<const uint16_t*>(dy.data.data()), reinterpret_cast<uint16_t*>(e.dx.data()),
                              sinks);
    e.cpu_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    return e;
}

// --check: dx against the float64 reference (compare_backward()'s error),
// and the rows' sink gradients (compare_sink_gradient()'s).
bool report_check(const BackwardArgs& a, const Problem& p, const Tensor& y, const Tensor& dy, const Execution& e,
                  nlohmann::json& report) {
    const size_t n = y.data.size() / dtype_size(p.dtype);
    const std::vector<double> yd = to_double(y.data.data(), n, p.dtype), dyd = to_double(dy.data.data(), n, p.dtype);
    std::vector<double> ref(n), sink_ref(e.sink_gradient.size());
    cpu::softmax_backward(p, yd.data(), dyd.data(), ref.data(), p.attention.sinks ? sink_ref.data() : nullptr);
    round_to(p.dtype, ref);
    const Accuracy acc = compare_backward(p, yd, dyd, to_double(e.dx.data(), n, p.dtype), ref);
    const double rel = accuracy_bound(p.dtype, p.log).rel;
    std::optional<Accuracy> sinks;
    if (p.attention.sinks) sinks = compare_sink_gradient(p, yd, dyd, e.sink_gradient, sink_ref);
    const bool ok = acc.within(rel, 0.0) && (!sinks || sinks->within(rel, 0.0));
    report["check"] = {{"max_abs_error", acc.max_abs},
                       {"max_rel_error", acc.max_rel},
                       {"nonfinite_mismatches", acc.nonfinite_mismatches},
                       {"rel_bound", rel},
                       {"ok", ok}};
    if (sinks) {
        report["check"]["sink_gradient_max_rel_error"] = sinks->max_rel;
        report["check"]["sink_gradient_nonfinite_mismatches"] = sinks->nonfinite_mismatches;
        if (!a.json)
            fmt::print("sink gradient, each row's: max error {:.3g} of the terms' size (bound {:g}){}\n",
                       sinks->max_rel, rel,
                       sinks->nonfinite_mismatches
                           ? fmt::format(", {} non-finite mismatches", sinks->nonfinite_mismatches)
                           : "");
    }
    if (!a.json)
        fmt::print("check against the CPU reference (float64): max abs error {:.3g}, max error {:.3g} of the terms' "
                   "size (bound {:g}){}; {}\n",
                   acc.max_abs, acc.max_rel, rel,
                   acc.nonfinite_mismatches ? fmt::format(", {} non-finite mismatches", acc.nonfinite_mismatches) : "",
                   ok ? "ok" : "FAILED");
    return ok;
}

// --time: the GPU passes and the effective bandwidth over y, dy and dx.
void report_time(const BackwardArgs& a, const Execution& e, nlohmann::json& report) {
    const double bytes = 3.0 * static_cast<double>(e.dx.size());
    if (a.backend == "cpu") {
        report["cpu_ms"] = e.cpu_ms;
        if (!a.json) fmt::print("CPU time {:.2f} ms\n", e.cpu_ms);
        return;
    }
    if (!e.gpu.timed) {
        report["gpu_ns"] = nullptr;
        if (!a.json) fmt::print("GPU time: not available (no timestamps on {})\n", e.device_name);
        return;
    }
    report["gpu_ns"] = e.gpu.gpu_ns;
    report["pass_ns"] = e.gpu.pass_ns;
    report["gb_per_s"] = e.gpu.gpu_ns > 0 ? bytes / e.gpu.gpu_ns : 0.0;
    if (!a.json)
        fmt::print("GPU time {:.1f} us ({} pass{}), {:.1f} GB/s effective (3 x {} bytes)\n", e.gpu.gpu_ns / 1e3,
                   e.gpu.pass_ns.size(), e.gpu.pass_ns.size() == 1 ? "" : "es",
                   e.gpu.gpu_ns > 0 ? bytes / e.gpu.gpu_ns : 0.0, e.dx.size());
}

int backward_command(const BackwardArgs& a) {
    const Tensor y = load_tensor(a.y), dy = load_tensor(a.dy);
    const Problem p = problem_for(a, y, dy);
    OutputFile out(a.output);  // fails now if the output cannot be written
    std::optional<OutputFile> sink_out;
    if (p.attention.sinks) sink_out.emplace(a.sink_gradient);
    const Execution e = execute(a, p, y, dy);
    nlohmann::json report = {{"y", a.y},         {"dy", a.dy},         {"output", a.output},
                             {"shape", y.dims},  {"dtype", dtype_name(p.dtype)}, {"axis", a.axis},
                             {"log", a.log},     {"temperature", a.temperature}, {"scale", a.scale},
                             {"backend", a.backend}, {"device", e.device_name}};
    if (a.backend == "gpu" && p.shape.elements() > 0) {
        report["path"] = path_name(e.gpu.plan.path);
        report["passes"] = e.gpu.plan.passes;
    }
    const bool check_ok = a.check ? report_check(a, p, y, dy, e, report) : true;
    if (a.time) report_time(a, e, report);
    out.commit(npy::encode(npy_kind(p.dtype), y.dims, y.fortran_order, e.dx.data(), e.dx.size()));
    if (sink_out) {
        const std::vector<float> heads = per_head(p, e.sink_gradient);
        sink_out->commit(npy::encode(npy_kind(Dtype::f32), {heads.size()}, false, heads.data(), heads.size() * 4));
        report["sink_gradient"] = a.sink_gradient;
        if (!a.json) fmt::print("wrote {}: the gradient of each of the {} heads' sinks\n", a.sink_gradient, heads.size());
    }
    if (a.json)
        fmt::print("{}\n", report.dump(2));
    else
        fmt::print("wrote {}: the gradient of {} over axis {} of {} {} on {}\n", a.output,
                   a.log ? "log-softmax" : "softmax", a.axis, dtype_name(p.dtype), npy::shape_repr(y.dims),
                   e.device_name);
    return check_ok ? int(Exit::ok) : int(Exit::failed_check);
}

}  // namespace

Command add_backward(CLI::App& app) {
    auto* sub = app.add_subcommand("backward", "The gradient of softmax along one axis, from its output y and dy");
    auto a = std::make_shared<BackwardArgs>();
    sub->add_option("-y,--y", a->y, "The forward output y .npy (float32, float16 or bfloat16 as '<V2')")->required();
    sub->add_option("--dy", a->dy, "The gradient of the loss with respect to y .npy (y's shape and dtype)")->required();
    sub->add_option("-o,--output", a->output, "dx .npy (y's shape and dtype; written only on success)")->required();
    sub->add_option("--axis", a->axis, "The axis the forward normalized; negative counts from the end (default -1)");
    sub->add_flag("--log", a->log, "y is a log-softmax output");
    sub->add_option("--temperature", a->temperature, "The forward's temperature T > 0 (default 1): dx carries 1/T");
    sub->add_option("--scale", a->scale, "The forward's scale > 0 (default 1): dx carries it");
    sub->add_option("--backend", a->backend, "gpu (default) or cpu (the float64 reference)");
    sub->add_option("--device", a->device, "Device index or part of its name (see 'vksoftmax devices')");
    sub->add_option("--sink-gradient", a->sink_gradient,
                    "The forward had sinks: write each head's sink gradient here (.npy, float32, one per head; y is "
                    "(batch, heads, query rows, n))");
    sub->add_option("--heads", a->heads, "Heads, with --sink-gradient (default: y's third-to-last dimension)");
    sub->add_flag("--check", a->check, "Also compute the CPU reference and report the error");
    sub->add_flag("--time", a->time, "Report the GPU time of each pass and the effective bandwidth");
    sub->add_flag("--json", a->json, "Print one JSON object with everything above");
    sub->footer("Example: vksoftmax backward -y probs.npy --dy grad.npy -o dlogits.npy --scale 0.125 --check");
    return [a]() { return backward_command(*a); };
}

}  // namespace vksoftmax::cli

// ggml's Vulkan soft_max (soft_max_ext: softmax(x * scale + mask)) and its
// backward pass (soft_max_ext_back) timed beside `vksoftmax bench`: the
// peer that LLM engines on Vulkan run today.
//
// Each case is a chain of calls, each one's input the output before it,
// so that ggml puts a barrier between them as vksoftmax bench does between
// its recorded calls. Two figures a case:
//   wall: (time of a graph of 2N calls - time of N) / N, each the median
//         of REPEATS: what graph_compute costs a call. The figure
//         bench/compare.py takes: ggml's 1x1 case, which bounds what
//         recording a call costs the CPU, takes 2.3-3.4 us on an H200, so
//         a case that takes longer is timed by the GPU.
//   gpu:  with GGML_VK_PERF_LOGGER set (a run of its own), ggml's own
//         timestamps, one after every node: a node's time is its
//         dispatches and the barrier before it, plus the timestamp's own
//         cost (about 1.5 us a call on an H200). The timings ggml prints
//         on stderr after this program's "peers_ggml case:" line are the
//         case's chain of N.
// Inputs normal(0, 4), never zeros (--spike sets one element of each row
// far above them); the mask (attention cases) an fp16 (n, n) mask of
// uniform(-4, 0) with -inf past the diagonal, scale 1/sqrt(128), as
// `vksoftmax bench --attention mask --mask-dtype f16`. One call's output
// is checked before timing against vksoftmax's float64 reference
// (vksoftmax::cpu), at its fp32 bound and by its measures
// (tests/TOLERANCES.md).
//
// ggml's soft_max takes fp32 tensors, so every case is fp32.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "vksoftmax/accuracy.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/types.hpp"

#include "ggml-alloc.h"
#include "ggml-backend.h"
#include "ggml-vulkan.h"
#include "ggml.h"

namespace {

struct Case {
    std::string name;        // "RxC" or "BxHxN" (attention)
    int64_t rows = 0, cols = 0;
    int64_t heads = 1, batch = 1;
    bool mask = false;
    bool backward = false;  // soft_max_ext_back: dx from dy and y
};

Case parse_case(const std::string& text, bool attention) {
    std::vector<int64_t> dims;
    std::stringstream in(text);
    for (std::string part; std::getline(in, part, 'x');) {
        const bool digits = !part.empty() && part.find_first_not_of("0123456789") == std::string::npos;
        if (!digits || part.size() > 12 || std::stoll(part) == 0)
            throw std::runtime_error("'" + text + "': '" + part + "' is not a positive size");
        dims.push_back(std::stoll(part));
    }
    Case c;
    c.name = text;
    if (attention) {
        if (dims.size() != 3)
            throw std::runtime_error("--attention: '" + text + "' is not BATCHxHEADSxN, e.g. 1x32x2048");
        c.batch = dims[0], c.heads = dims[1], c.rows = dims[2], c.cols = dims[2], c.mask = true;
    } else {
        if (dims.size() != 2) throw std::runtime_error("--shapes: '" + text + "' is not ROWSxCOLS");
        c.rows = dims[0], c.cols = dims[1];
    }
    return c;
}

// x (cols, rows, heads, batch) in ggml's order (the backward pass: dy),
// the mask (cols, rows) or the backward pass's y, and a chain of
// 2 * calls soft_max_ext (or soft_max_ext_back) nodes, each reading the
// one before; `twice`, the graph of all of them, is the one the graph
// allocator places.
struct Chain {
    ggml_context* data = nullptr;   // x and the mask, allocated once
    ggml_context* nodes = nullptr;  // the chain, placed by the graph allocator
    ggml_backend_buffer_t buffer = nullptr;
    ggml_tensor* x = nullptr;
    ggml_tensor* mask = nullptr;
    ggml_tensor* y = nullptr;  // backward: the softmax output every call reads
    std::vector<ggml_tensor*> calls_in_order;
    size_t graph_size = 0;
    ggml_cgraph* twice = nullptr;

    Chain(ggml_backend_t backend, const Case& c, int calls, float scale) {
        ggml_init_params dp{ggml_tensor_overhead() * 4, nullptr, true};
        data = ggml_init(dp);
        x = ggml_new_tensor_4d(data, GGML_TYPE_F32, c.cols, c.rows, c.heads, c.batch);
        if (c.mask) mask = ggml_new_tensor_2d(data, GGML_TYPE_F16, c.cols, c.rows);
        if (c.backward) y = ggml_new_tensor_4d(data, GGML_TYPE_F32, c.cols, c.rows, c.heads, c.batch);
        buffer = ggml_backend_alloc_ctx_tensors(data, backend);
        graph_size = 2 * static_cast<size_t>(calls) + 16;
        ggml_init_params np{ggml_tensor_overhead() * graph_size + 4 * ggml_graph_overhead_custom(graph_size, false),
                            nullptr, true};
        nodes = ggml_init(np);
        ggml_tensor* t = x;
        for (int k = 0; k < 2 * calls; ++k) {
            t = c.backward ? ggml_soft_max_ext_back(nodes, t, y, scale, 0.0f)
                           : ggml_soft_max_ext(nodes, t, mask, scale, 0.0f);
            calls_in_order.push_back(t);
        }
        twice = ggml_new_graph_custom(nodes, graph_size, false);
        ggml_build_forward_expand(twice, t);
    }
    // A graph of the chain's first `count` calls, in the places the
    // allocation of `twice` gave them (the context has room for three
    // more graphs beside `twice`).
    ggml_cgraph* prefix(int count) {
        ggml_cgraph* graph = ggml_new_graph_custom(nodes, graph_size, false);
        ggml_build_forward_expand(graph, calls_in_order.at(static_cast<size_t>(count) - 1));
        return graph;
    }
    ~Chain() {
        ggml_free(nodes);
        ggml_backend_buffer_free(buffer);
        ggml_free(data);
    }
    Chain(const Chain&) = delete;
    Chain& operator=(const Chain&) = delete;
};

// The case as vksoftmax states it, for its reference and its bounds.
vksoftmax::Problem problem_of(const Case& c, float scale) {
    vksoftmax::Problem p;
    p.shape = {static_cast<uint64_t>(c.rows * c.heads * c.batch), static_cast<uint64_t>(c.cols), 1};
    p.backward = c.backward;
    p.scale = scale;
    if (c.mask) {
        p.attention.heads = static_cast<uint64_t>(c.heads);
        p.attention.query_rows = static_cast<uint64_t>(c.rows);
        p.attention.mask = true;
        p.attention.mask_dtype = vksoftmax::Dtype::f16;
    }
    return p;
}

// The inputs as uploaded, in float64 for the reference: the logits, or for
// the backward pass dy (in `x`) and y; the mask's fp16 bits.
struct Inputs {
    std::vector<double> x, y;
    std::vector<ggml_fp16_t> mask;
};

void upload(ggml_tensor* tensor, const std::vector<double>& values) {
    const std::vector<float> stored(values.begin(), values.end());
    ggml_backend_tensor_set(tensor, stored.data(), 0, stored.size() * sizeof(float));
}

// With a spike, each row's element at 85% of its length is `spike`: the
// chunk that holds it must reach the row's max (a lost partial overflows).
// The backward pass's y and dy are vksoftmax bench's: y the softmax of
// those logits, dy normal(0, 1).
Inputs upload_inputs(const Chain& chain, const Case& c, const vksoftmax::Problem& p, float spike) {
    std::mt19937 rng(12345);
    std::normal_distribution<float> logit(0.f, 4.f);
    Inputs in;
    in.x.resize(static_cast<size_t>(ggml_nelements(chain.x)));
    for (double& v : in.x) v = logit(rng);
    if (spike != 0.f)
        for (size_t row = 0; row < in.x.size() / c.cols; ++row) in.x[row * c.cols + c.cols * 85 / 100] = spike;
    if (c.backward) {
        vksoftmax::BackwardInputs backward = vksoftmax::backward_inputs(p, in.x, rng());
        in.x = std::move(backward.dy);
        in.y = std::move(backward.y);
        upload(chain.y, in.y);
    }
    upload(chain.x, in.x);
    if (chain.mask) {
        std::uniform_real_distribution<float> value(-4.f, 0.f);
        in.mask.resize(static_cast<size_t>(c.rows * c.cols));
        for (int64_t q = 0; q < c.rows; ++q)
            for (int64_t j = 0; j < c.cols; ++j)
                in.mask[q * c.cols + j] = ggml_fp32_to_fp16(j > q ? -INFINITY : value(rng));
        ggml_backend_tensor_set(chain.mask, in.mask.data(), 0, in.mask.size() * sizeof(ggml_fp16_t));
    }
    return in;
}

// One call (the graph `one`) against vksoftmax's float64 reference, by the
// measure its own tests use: relative to each element for softmax, to the
// size of what was added up for the backward pass.
vksoftmax::Accuracy check_one_call(ggml_backend_t backend, ggml_cgraph* one, const Chain& chain,
                                   const vksoftmax::Problem& p, const Inputs& in) {
    ggml_backend_graph_compute(backend, one);
    std::vector<float> stored(in.x.size());
    ggml_backend_tensor_get(chain.calls_in_order.front(), stored.data(), 0, stored.size() * sizeof(float));
    const std::vector<double> got(stored.begin(), stored.end());
    std::vector<double> ref(got.size());
    if (p.backward) {
        vksoftmax::cpu::softmax_backward(p, in.y.data(), in.x.data(), ref.data());
        return vksoftmax::compare_backward(p, in.y, in.x, got, ref);
    }
    vksoftmax::AttentionData attention;
    attention.mask = in.mask.empty() ? nullptr : in.mask.data();
    vksoftmax::cpu::softmax(p, in.x.data(), ref.data(), attention);
    return vksoftmax::compare(p, got, ref);
}

double median_seconds(ggml_backend_t backend, ggml_cgraph* graph, int repeats) {
    std::vector<double> times;
    for (int r = 0; r < repeats; ++r) {
        const auto start = std::chrono::steady_clock::now();
        ggml_backend_graph_compute(backend, graph);
        times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
    std::sort(times.begin(), times.end());
    return times[times.size() / 2];
}

struct Options {
    int calls = 100, repeats = 7;
    double warmup_ms = 300;
    double max_chain_ms = 100;
    float spike = 0;
};

struct Figures {
    int calls = 0;       // in the shorter chain
    double wall_us = 0;  // NaN where the longer chain was not the slower
    bool in_place = false;
    vksoftmax::Accuracy accuracy;
    bool ok = false;
    double bytes = 0;
};

// One case: its chain placed, one call checked, the clocks warmed, the two
// chains timed, and (for GGML_VK_PERF_LOGGER) the shorter timed by ggml.
Figures run_case(ggml_backend_t backend, const Case& c, const Options& o) {
    const float scale = c.mask ? 1.0f / std::sqrt(128.0f) : 1.0f;
    Chain chain(backend, c, o.calls, scale);
    ggml_gallocr_t alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    if (!ggml_gallocr_alloc_graph(alloc, chain.twice)) {
        ggml_gallocr_free(alloc);
        throw std::runtime_error(c.name + ": ggml could not allocate the chain");
    }
    Figures f;
    const vksoftmax::Problem p = problem_of(c, scale);
    const Inputs in = upload_inputs(chain, c, p, o.spike);
    ggml_cgraph* one = chain.prefix(1);
    f.accuracy = check_one_call(backend, one, chain, p, in);
    f.ok = f.accuracy.within(vksoftmax::accuracy_bound(vksoftmax::Dtype::f32, false).rel, 0.0);

    // Where one call is slow (ggml's backward pass takes one warp a row: 280
    // ms on a row of 16M on an H200), shorter chains, so that the longer
    // takes at most --max-chain-ms.
    f.calls = o.calls;
    const double one_call = median_seconds(backend, one, 3);
    if (2.0 * o.calls * one_call > o.max_chain_ms / 1e3)
        f.calls = std::max(1, static_cast<int>(o.max_chain_ms / 1e3 / (2.0 * one_call)));
    ggml_cgraph* single = chain.prefix(f.calls);
    ggml_cgraph* twice = f.calls == o.calls ? chain.twice : chain.prefix(2 * f.calls);

    const auto warm_until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(o.warmup_ms);
    while (std::chrono::steady_clock::now() < warm_until) ggml_backend_graph_compute(backend, twice);
    const double t_twice = median_seconds(backend, twice, o.repeats);
    ggml_backend_graph_compute(backend, single);  // untimed, as the longer chain had its warm-up
    const double t_single = median_seconds(backend, single, o.repeats);
    f.wall_us = t_twice > t_single ? (t_twice - t_single) / f.calls * 1e6 : NAN;

    // With GGML_VK_PERF_LOGGER, ggml prints each compute's node times on
    // stderr after it: this line marks the case the next ones time.
    std::fprintf(stderr, "peers_ggml case: %s\n", c.name.c_str());
    std::fflush(stderr);
    ggml_backend_graph_compute(backend, single);
    std::fflush(stderr);

    // ggml's allocator may run soft_max in place: a call then reads and
    // writes one buffer, where vksoftmax bench reads one and writes another.
    f.in_place = chain.calls_in_order[1]->data == chain.calls_in_order[0]->data;
    f.bytes = (c.backward ? 3.0 : 2.0) * 4.0 * static_cast<double>(ggml_nelements(chain.x));
    ggml_gallocr_free(alloc);
    return f;
}

void report(const Case& c, const Figures& f, nlohmann::json& out) {
    char wall[128] = "wall unmeasured (the longer chain was not the slower: more --calls or --repeats)";
    if (!std::isnan(f.wall_us))
        std::snprintf(wall, sizeof wall, "wall %.2f us a call (%.0f GB/s, chains of %d and %d)", f.wall_us,
                      f.bytes / f.wall_us / 1e3, f.calls, 2 * f.calls);
    std::printf("ggml f32 %s%s%s: %s, %s, max error %.2e %s\n", c.name.c_str(), c.mask ? " + mask" : "",
                c.backward ? " backward" : "", wall, f.in_place ? "in place" : "two buffers", f.accuracy.max_rel,
                f.ok ? "ok" : "WRONG RESULT");
    if (!f.ok) std::printf("  %s\n", f.accuracy.describe().c_str());
    out["cases"].push_back({{"case", c.name},
                            {"attention", c.mask},
                            {"backward", c.backward},
                            {"wall_us", std::isnan(f.wall_us) ? nlohmann::json() : nlohmann::json(f.wall_us)},
                            {"calls", f.calls},
                            {"in_place", f.in_place},
                            {"max_error", f.accuracy.max_rel},
                            {"ok", f.ok},
                            {"bytes", f.bytes}});
}

// The distinct ROWSxCOLS of a `vksoftmax bench --json` file's rows, in order.
std::string bench_shapes(const std::string& path) {
    std::ifstream file(path);
    if (!file) throw std::runtime_error("--shapes-from: cannot read '" + path + "'");
    const nlohmann::json bench = nlohmann::json::parse(file);
    std::string list;
    std::vector<std::string> seen;
    for (const nlohmann::json& row : bench.at("rows")) {
        const std::string shape = row.at("shape").get<std::string>();
        if (std::find(seen.begin(), seen.end(), shape) != seen.end()) continue;
        seen.push_back(shape);
        list += (list.empty() ? "" : ",") + shape;
    }
    return list;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"ggml's Vulkan soft_max_ext timed beside vksoftmax bench (fp32)"};
    std::string shapes, shapes_from, attention, json_path;
    Options o;
    int device = 0;
    bool backward = false;
    app.add_option("--shapes", shapes, "ROWSxCOLS,... (softmax of each row, scale 1, no mask)");
    app.add_option("--shapes-from", shapes_from, "The shapes of a `vksoftmax bench --json` file, as --shapes");
    app.add_option("--attention", attention,
                   "BATCHxHEADSxN,... (x of (batch, heads, n, n), an fp16 (n, n) mask, scale 1/sqrt(128))");
    app.add_option("--calls", o.calls, "Calls in the shorter chain (default 100; the longer has twice)");
    app.add_option("--repeats", o.repeats, "Timed computes of each chain; the median (default 7)");
    app.add_option("--warmup-ms", o.warmup_ms, "Compute the chain this long before timing (default 300)");
    app.add_option("--max-chain-ms", o.max_chain_ms,
                   "Shorten both chains where one call is slow, so that the longer takes about this long "
                   "(default 100)");
    app.add_option("--device", device, "ggml's Vulkan device index (default 0)");
    app.add_flag("--backward", backward,
                 "Time soft_max_ext_back on --shapes instead (dx from dy normal(0, 1) and y the softmax of "
                 "normal(0, 4) logits), over 3 x the tensor's bytes");
    app.add_option("--spike", o.spike, "Set each row's element at 85% of its length to this logit (default: none)");
    app.add_option("--json", json_path, "Write every figure to this JSON file");
    CLI11_PARSE(app, argc, argv);

    std::vector<Case> cases;
    auto add = [&](const std::string& list, bool is_attention) {
        std::stringstream in(list);
        for (std::string item; std::getline(in, item, ',');)
            if (!item.empty()) cases.push_back(parse_case(item, is_attention));
    };
    try {
        if (!shapes_from.empty()) shapes += "," + bench_shapes(shapes_from);
        add(shapes, false);
        add(attention, true);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "peers_ggml: %s\n", e.what());
        return 2;
    }
    for (Case& c : cases) {
        if (backward && c.mask) {
            std::fprintf(stderr, "peers_ggml: --backward times --shapes only, not --attention\n");
            return 2;
        }
        c.backward = backward;
    }

    // ggml lists no CPU device (lavapipe) unless GGML_VK_VISIBLE_DEVICES names it.
    if (device < 0 || device >= ggml_backend_vk_get_device_count()) {
        std::fprintf(stderr, "peers_ggml: ggml sees %d Vulkan devices, no device %d\n",
                     ggml_backend_vk_get_device_count(), device);
        return 1;
    }
    ggml_backend_t backend = ggml_backend_vk_init(static_cast<size_t>(device));
    if (!backend) {
        std::fprintf(stderr, "peers_ggml: no Vulkan device %d for ggml\n", device);
        return 1;
    }
    char description[256] = {};
    ggml_backend_vk_get_device_description(device, description, sizeof description);
    std::printf("peers_ggml: ggml %s, Vulkan device %d: %s\n", ggml_version(), device, description);
    nlohmann::json out = {{"ggml", ggml_version()}, {"device", description}, {"cases", nlohmann::json::array()}};

    int status = 0;
    for (const Case& c : cases) {
        try {
            report(c, run_case(backend, c, o), out);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "peers_ggml: %s\n", e.what());
            status = 1;
            break;
        }
    }
    ggml_backend_free(backend);
    if (!json_path.empty()) std::ofstream(json_path) << out.dump(1) << "\n";
    return status;
}

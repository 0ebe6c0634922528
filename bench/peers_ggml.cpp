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
// is checked against a float64 softmax before timing.
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
// the mask (cols, rows) or the backward pass's y, a chain of 2 * calls
// soft_max_ext (or soft_max_ext_back) nodes, and graphs of its first node,
// its first `calls` nodes and all of them.
struct Chain {
    ggml_context* data = nullptr;   // x and the mask, allocated once
    ggml_context* nodes = nullptr;  // the chain, placed by the graph allocator
    ggml_backend_buffer_t buffer = nullptr;
    ggml_tensor* x = nullptr;
    ggml_tensor* mask = nullptr;
    ggml_tensor* y = nullptr;  // backward: the softmax output every call reads
    ggml_cgraph* one = nullptr;
    ggml_cgraph* single = nullptr;  // `calls` nodes
    ggml_cgraph* twice = nullptr;   // 2 * `calls` nodes
    ggml_tensor* first = nullptr;
    ggml_tensor* second = nullptr;
    std::vector<ggml_tensor*> calls_in_order;
    size_t graph_size = 0;

    Chain(ggml_backend_t backend, const Case& c, int calls, float scale) {
        ggml_init_params dp{ggml_tensor_overhead() * 4, nullptr, true};
        data = ggml_init(dp);
        x = ggml_new_tensor_4d(data, GGML_TYPE_F32, c.cols, c.rows, c.heads, c.batch);
        if (c.mask) mask = ggml_new_tensor_2d(data, GGML_TYPE_F16, c.cols, c.rows);
        if (c.backward) y = ggml_new_tensor_4d(data, GGML_TYPE_F32, c.cols, c.rows, c.heads, c.batch);
        buffer = ggml_backend_alloc_ctx_tensors(data, backend);
        graph_size = 2 * static_cast<size_t>(calls) + 16;
        ggml_init_params np{ggml_tensor_overhead() * graph_size + 5 * ggml_graph_overhead_custom(graph_size, false),
                            nullptr, true};
        nodes = ggml_init(np);
        ggml_tensor* t = x;
        one = ggml_new_graph_custom(nodes, graph_size, false);
        single = ggml_new_graph_custom(nodes, graph_size, false);
        twice = ggml_new_graph_custom(nodes, graph_size, false);
        for (int k = 0; k < 2 * calls; ++k) {
            t = c.backward ? ggml_soft_max_ext_back(nodes, t, y, scale, 0.0f)
                           : ggml_soft_max_ext(nodes, t, mask, scale, 0.0f);
            calls_in_order.push_back(t);
            if (k == 0) first = t, ggml_build_forward_expand(one, t);
            if (k == 1) second = t;
            if (k == calls - 1) ggml_build_forward_expand(single, t);
        }
        ggml_build_forward_expand(twice, t);
    }
    // A graph of the chain's first `count` calls (at most two a chain: its
    // context has room for five graphs), in the places the longer chain's
    // allocation gave them.
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

void softmax_row(float* row, int64_t cols) {
    double top = -INFINITY, sum = 0;
    for (int64_t j = 0; j < cols; ++j) top = std::max(top, static_cast<double>(row[j]));
    for (int64_t j = 0; j < cols; ++j) sum += std::exp(row[j] - top);
    for (int64_t j = 0; j < cols; ++j) row[j] = static_cast<float>(std::exp(row[j] - top) / sum);
}

// With a spike, each row's element at 85% of its length is `spike`: the
// chunk that holds it must reach the row's max (a lost partial overflows).
std::vector<float> upload_inputs(const Chain& chain, const Case& c, float spike) {
    std::mt19937 rng(12345);
    std::normal_distribution<float> logit(0.f, 4.f);
    std::vector<float> x(static_cast<size_t>(ggml_nelements(chain.x)));
    for (float& v : x) v = logit(rng);
    if (spike != 0.f)
        for (size_t row = 0; row < x.size() / c.cols; ++row) x[row * c.cols + c.cols * 85 / 100] = spike;
    if (c.backward) {  // dy normal(0, 1), y the softmax of those logits
        std::vector<float> y = x;
        for (size_t row = 0; row < y.size() / c.cols; ++row) softmax_row(&y[row * c.cols], c.cols);
        ggml_backend_tensor_set(chain.y, y.data(), 0, y.size() * sizeof(float));
        std::normal_distribution<float> gradient(0.f, 1.f);
        for (float& v : x) v = gradient(rng);
    }
    ggml_backend_tensor_set(chain.x, x.data(), 0, x.size() * sizeof(float));
    if (chain.mask) {
        std::uniform_real_distribution<float> value(-4.f, 0.f);
        std::vector<ggml_fp16_t> mask(static_cast<size_t>(c.rows * c.cols));
        for (int64_t q = 0; q < c.rows; ++q)
            for (int64_t j = 0; j < c.cols; ++j)
                mask[q * c.cols + j] = ggml_fp32_to_fp16(j > q ? -INFINITY : value(rng));
        ggml_backend_tensor_set(chain.mask, mask.data(), 0, mask.size() * sizeof(ggml_fp16_t));
    }
    return x;
}

// Row `row` of one call in float64: softmax(x * scale + mask), or the
// backward pass's scale * (dy - sum(dy * y)) * y with x as dy.
std::vector<double> reference_row(const Case& c, const float* x, const float* y, const ggml_fp16_t* mask,
                                  int64_t row, float scale) {
    std::vector<double> out(static_cast<size_t>(c.cols));
    if (c.backward) {
        double dot = 0;
        for (int64_t j = 0; j < c.cols; ++j) dot += static_cast<double>(x[j]) * y[j];
        for (int64_t j = 0; j < c.cols; ++j) out[j] = scale * (x[j] - dot) * y[j];
        return out;
    }
    const int64_t q = row % c.rows;
    double top = -INFINITY, sum = 0;
    for (int64_t j = 0; j < c.cols; ++j) {
        out[j] = static_cast<double>(x[j]) * scale + (mask ? ggml_fp16_to_fp32(mask[q * c.cols + j]) : 0.0);
        top = std::max(top, out[j]);
    }
    for (int64_t j = 0; j < c.cols; ++j) sum += std::exp(out[j] - top);
    for (int64_t j = 0; j < c.cols; ++j) out[j] = std::exp(out[j] - top) / sum;
    return out;
}

// One call's largest error against float64 over up to 64 rows spread
// through the tensor, as tests/TOLERANCES.md judges vksoftmax's: relative
// to each element for softmax (a masked element must be exactly 0); for
// the backward pass, whose dy - sum(dy * y) cancels by design, relative to
// the size of what was added up, |ref| + scale * y * (|dy| + sum|y dy|).
double check_one_call(ggml_backend_t backend, const Chain& chain, const Case& c, const std::vector<float>& x,
                      float scale) {
    ggml_backend_graph_compute(backend, chain.one);
    std::vector<float> got(x.size()), y(c.backward ? x.size() : 0);
    ggml_backend_tensor_get(chain.first, got.data(), 0, got.size() * sizeof(float));
    if (c.backward) ggml_backend_tensor_get(chain.y, y.data(), 0, y.size() * sizeof(float));
    std::vector<ggml_fp16_t> mask(chain.mask ? static_cast<size_t>(c.rows * c.cols) : 0);
    if (chain.mask) ggml_backend_tensor_get(chain.mask, mask.data(), 0, mask.size() * sizeof(ggml_fp16_t));
    const int64_t all_rows = c.rows * c.heads * c.batch;
    const int64_t step = std::max<int64_t>(1, all_rows / 64);
    double worst = 0;
    for (int64_t row = 0; row < all_rows; row += step) {
        const size_t start = static_cast<size_t>(row * c.cols);
        const std::vector<double> ref = reference_row(c, &x[start], c.backward ? &y[start] : nullptr,
                                                      chain.mask ? mask.data() : nullptr, row, scale);
        double added_up = 0;  // backward: sum |y dy|
        for (int64_t j = 0; c.backward && j < c.cols; ++j) added_up += std::abs(double(y[start + j]) * x[start + j]);
        for (int64_t j = 0; j < c.cols; ++j) {
            const double value = got[start + j], want = ref[j];
            if (std::isnan(value)) return INFINITY;
            if (c.backward) {
                const double size = std::abs(want) + scale * y[start + j] * (std::abs(x[start + j]) + added_up);
                worst = std::max(worst, std::abs(value - want) / std::max(size, 1e-30));
            } else if (want == 0) {
                if (value != 0) return INFINITY;
            } else if (want > 1e-30) {
                worst = std::max(worst, std::abs(value - want) / want);
            }
        }
    }
    return worst;
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
    double error = 0;
    bool ok = false;
    double bytes = 0;
};

// One case: its chain placed, one call checked, the clocks warmed, the two
// chains timed, and (for GGML_VK_PERF_LOGGER) one chain timed by ggml.
Figures run_case(ggml_backend_t backend, const Case& c, const Options& o) {
    const float scale = c.mask ? 1.0f / std::sqrt(128.0f) : 1.0f;
    Chain chain(backend, c, o.calls, scale);
    // The longer chain places every node; the shorter graphs are its first
    // nodes, in those places.
    ggml_gallocr_t alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
    if (!ggml_gallocr_alloc_graph(alloc, chain.twice)) {
        ggml_gallocr_free(alloc);
        throw std::runtime_error(c.name + ": ggml could not allocate the chain");
    }
    Figures f;
    const std::vector<float> x = upload_inputs(chain, c, o.spike);
    f.error = check_one_call(backend, chain, c, x, scale);
    f.ok = f.error <= 1e-5;  // vksoftmax's fp32 bound (tests/TOLERANCES.md)

    // Where one call is slow (ggml's backward pass takes one warp a row: 280
    // ms on a row of 16M on an H200), shorter chains, so that the longer
    // takes at most --max-chain-ms.
    f.calls = o.calls;
    ggml_cgraph* single = chain.single;
    ggml_cgraph* twice = chain.twice;
    const double one_call = median_seconds(backend, chain.one, 3);
    if (2.0 * o.calls * one_call > o.max_chain_ms / 1e3) {
        f.calls = std::max(1, static_cast<int>(o.max_chain_ms / 1e3 / (2.0 * one_call)));
        single = chain.prefix(f.calls);
        twice = chain.prefix(2 * f.calls);
    }

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
    f.in_place = chain.second->data == chain.first->data;
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
                c.backward ? " backward" : "", wall, f.in_place ? "in place" : "two buffers", f.error,
                f.ok ? "ok" : "WRONG RESULT");
    out["cases"].push_back({{"case", c.name},
                            {"attention", c.mask},
                            {"backward", c.backward},
                            {"wall_us", std::isnan(f.wall_us) ? nlohmann::json() : nlohmann::json(f.wall_us)},
                            {"calls", f.calls},
                            {"in_place", f.in_place},
                            {"max_error", f.error},
                            {"ok", f.ok},
                            {"bytes", f.bytes}});
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"ggml's Vulkan soft_max_ext timed beside vksoftmax bench (fp32)"};
    std::string shapes, attention, json_path;
    Options o;
    int device = 0;
    bool backward = false;
    app.add_option("--shapes", shapes, "ROWSxCOLS,... (softmax of each row, scale 1, no mask)");
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

// ggml's Vulkan soft_max (soft_max_ext: softmax(x * scale + mask)) timed
// beside `vksoftmax bench`: the peer that LLM engines on Vulkan run today.
//
// Each case is a chain of calls, each one's input the output before it,
// so that ggml puts a barrier between them as vksoftmax bench does between
// its recorded calls. Two figures a case:
//   gpu:  with GGML_VK_PERF_LOGGER set (a run of its own), ggml's own
//         timestamps: one after every node, so a node's time is its
//         dispatches and the barrier before it. ggml prints them on stderr
//         after each compute; the line after this program's
//         "peers_ggml case:" line is the case's chain of N. The headline
//         figure.
//   wall: (time of a graph of 2N calls - time of N) / N, each the median
//         of REPEATS: what graph_compute costs a call, the CPU's recording
//         included where it is slower than the GPU.
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
};

Case parse_case(const std::string& text, bool attention) {
    std::vector<int64_t> dims;
    std::stringstream in(text);
    for (std::string part; std::getline(in, part, 'x');) dims.push_back(std::stoll(part));
    Case c;
    c.name = text;
    if (attention) {
        if (dims.size() != 3) throw std::runtime_error("--attention: '" + text + "' is not BATCHxHEADSxN");
        c.batch = dims[0], c.heads = dims[1], c.rows = dims[2], c.cols = dims[2], c.mask = true;
    } else {
        if (dims.size() != 2) throw std::runtime_error("--shapes: '" + text + "' is not ROWSxCOLS");
        c.rows = dims[0], c.cols = dims[1];
    }
    return c;
}

// x (cols, rows, heads, batch) in ggml's order, the mask (cols, rows), a
// chain of 2 * calls soft_max_ext nodes, and graphs of its first node, its
// first `calls` nodes and all of them.
struct Chain {
    ggml_context* data = nullptr;   // x and the mask, allocated once
    ggml_context* nodes = nullptr;  // the chain, placed by the graph allocator
    ggml_backend_buffer_t buffer = nullptr;
    ggml_tensor* x = nullptr;
    ggml_tensor* mask = nullptr;
    ggml_cgraph* one = nullptr;
    ggml_cgraph* single = nullptr;  // `calls` nodes
    ggml_cgraph* twice = nullptr;   // 2 * `calls` nodes
    ggml_tensor* first = nullptr;
    ggml_tensor* second = nullptr;

    Chain(ggml_backend_t backend, const Case& c, int calls, float scale) {
        ggml_init_params dp{ggml_tensor_overhead() * 4, nullptr, true};
        data = ggml_init(dp);
        x = ggml_new_tensor_4d(data, GGML_TYPE_F32, c.cols, c.rows, c.heads, c.batch);
        if (c.mask) mask = ggml_new_tensor_2d(data, GGML_TYPE_F16, c.cols, c.rows);
        buffer = ggml_backend_alloc_ctx_tensors(data, backend);
        const size_t graph_size = 2 * static_cast<size_t>(calls) + 16;
        ggml_init_params np{ggml_tensor_overhead() * graph_size + 3 * ggml_graph_overhead_custom(graph_size, false),
                            nullptr, true};
        nodes = ggml_init(np);
        ggml_tensor* t = x;
        one = ggml_new_graph_custom(nodes, graph_size, false);
        single = ggml_new_graph_custom(nodes, graph_size, false);
        twice = ggml_new_graph_custom(nodes, graph_size, false);
        for (int k = 0; k < 2 * calls; ++k) {
            t = ggml_soft_max_ext(nodes, t, mask, scale, 0.0f);
            if (k == 0) first = t, ggml_build_forward_expand(one, t);
            if (k == 1) second = t;
            if (k == calls - 1) ggml_build_forward_expand(single, t);
        }
        ggml_build_forward_expand(twice, t);
    }
    ~Chain() {
        ggml_free(nodes);
        ggml_backend_buffer_free(buffer);
        ggml_free(data);
    }
    Chain(const Chain&) = delete;
    Chain& operator=(const Chain&) = delete;
};

// With a spike, each row's element at 85% of its length is `spike`: the
// chunk that holds it must reach the row's max (a lost partial overflows).
std::vector<float> upload_inputs(const Chain& chain, const Case& c, float spike) {
    std::mt19937 rng(12345);
    std::normal_distribution<float> logit(0.f, 4.f);
    std::vector<float> x(static_cast<size_t>(ggml_nelements(chain.x)));
    for (float& v : x) v = logit(rng);
    if (spike != 0.f)
        for (size_t row = 0; row < x.size() / c.cols; ++row) x[row * c.cols + c.cols * 85 / 100] = spike;
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

// The largest relative error of one call's output against float64, over up
// to 64 rows spread through the tensor; masked elements must be exactly 0.
double check_one_call(ggml_backend_t backend, const Chain& chain, const Case& c, const std::vector<float>& x,
                      float scale) {
    ggml_backend_graph_compute(backend, chain.one);
    std::vector<float> y(x.size());
    ggml_backend_tensor_get(chain.first, y.data(), 0, y.size() * sizeof(float));
    std::vector<ggml_fp16_t> mask(chain.mask ? static_cast<size_t>(c.rows * c.cols) : 0);
    if (chain.mask) ggml_backend_tensor_get(chain.mask, mask.data(), 0, mask.size() * sizeof(ggml_fp16_t));
    const int64_t all_rows = c.rows * c.heads * c.batch;
    const int64_t step = std::max<int64_t>(1, all_rows / 64);
    double worst = 0;
    std::vector<double> z(static_cast<size_t>(c.cols));
    for (int64_t row = 0; row < all_rows; row += step) {
        const int64_t q = row % c.rows;
        double top = -INFINITY;
        for (int64_t j = 0; j < c.cols; ++j) {
            const double m = chain.mask ? ggml_fp16_to_fp32(mask[q * c.cols + j]) : 0.0;
            z[j] = static_cast<double>(x[row * c.cols + j]) * scale + m;
            top = std::max(top, z[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < c.cols; ++j) sum += std::exp(z[j] - top);
        for (int64_t j = 0; j < c.cols; ++j) {
            const double ref = std::exp(z[j] - top) / sum;
            const double got = y[row * c.cols + j];
            const double err = ref == 0 ? (got == 0 ? 0 : INFINITY) : std::abs(got - ref) / ref;
            if (std::isnan(got)) worst = INFINITY;
            if (ref > 1e-30 || ref == 0) worst = std::max(worst, err);
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

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"ggml's Vulkan soft_max_ext timed beside vksoftmax bench (fp32)"};
    std::string shapes, attention, json_path;
    int calls = 100, repeats = 7, device = 0;
    double warmup_ms = 300;
    float spike = 0;
    app.add_option("--shapes", shapes, "ROWSxCOLS,... (softmax of each row, scale 1, no mask)");
    app.add_option("--attention", attention,
                   "BATCHxHEADSxN,... (x of (batch, heads, n, n), an fp16 (n, n) mask, scale 1/sqrt(128))");
    app.add_option("--calls", calls, "Calls in the shorter chain (default 100; the longer has twice)");
    app.add_option("--repeats", repeats, "Timed computes of each chain; the median (default 7)");
    app.add_option("--warmup-ms", warmup_ms, "Compute the chain this long before timing (default 300)");
    app.add_option("--device", device, "ggml's Vulkan device index (default 0)");
    app.add_option("--spike", spike, "Set each row's element at 85% of its length to this logit (default: none)");
    app.add_option("--json", json_path, "Write every figure to this JSON file");
    CLI11_PARSE(app, argc, argv);

    std::vector<Case> cases;
    auto add = [&](const std::string& list, bool is_attention) {
        std::stringstream in(list);
        for (std::string item; std::getline(in, item, ',');)
            if (!item.empty()) cases.push_back(parse_case(item, is_attention));
    };
    add(shapes, false);
    add(attention, true);

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

    for (const Case& c : cases) {
        const float scale = c.mask ? 1.0f / std::sqrt(128.0f) : 1.0f;
        Chain chain(backend, c, calls, scale);
        // The longer chain places every node (its outputs two buffers taken
        // in turn); the shorter graphs are its first nodes, in those places.
        ggml_gallocr_t alloc = ggml_gallocr_new(ggml_backend_get_default_buffer_type(backend));
        if (!ggml_gallocr_alloc_graph(alloc, chain.twice)) {
            std::fprintf(stderr, "peers_ggml: %s: ggml could not allocate the chain\n", c.name.c_str());
            return 1;
        }
        const std::vector<float> x = upload_inputs(chain, c, spike);
        const double error = check_one_call(backend, chain, c, x, scale);
        const bool ok = error < 1e-4;

        const auto warm_until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(warmup_ms);
        while (std::chrono::steady_clock::now() < warm_until) ggml_backend_graph_compute(backend, chain.twice);
        const double t_twice = median_seconds(backend, chain.twice, repeats);
        const double t_single = median_seconds(backend, chain.single, repeats);
        const double wall_us = (t_twice - t_single) / calls * 1e6;

        // With GGML_VK_PERF_LOGGER, ggml prints each compute's node times
        // on stderr after it: this line marks the case the next ones time.
        std::fprintf(stderr, "peers_ggml case: %s\n", c.name.c_str());
        std::fflush(stderr);
        ggml_backend_graph_compute(backend, chain.single);
        std::fflush(stderr);

        // ggml's allocator may run soft_max in place: a call then reads and
        // writes one buffer, where vksoftmax bench reads one and writes another.
        const bool in_place = chain.second->data == chain.first->data;
        const double bytes = 2.0 * 4.0 * static_cast<double>(ggml_nelements(chain.x));
        std::printf("ggml f32 %s%s: wall %.2f us a call (%.0f GB/s), %s, max rel error %.2e %s\n", c.name.c_str(),
                    c.mask ? " + mask" : "", wall_us, bytes / wall_us / 1e3, in_place ? "in place" : "two buffers",
                    error, ok ? "ok" : "WRONG RESULT");
        out["cases"].push_back({{"case", c.name}, {"attention", c.mask}, {"wall_us", wall_us}, {"in_place", in_place},
                                {"max_rel_error", error}, {"ok", ok}, {"bytes", bytes}});
        ggml_gallocr_free(alloc);
    }
    ggml_backend_free(backend);
    if (!json_path.empty()) std::ofstream(json_path) << out.dump(1) << "\n";
    return 0;
}

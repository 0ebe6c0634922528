#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <memory>
#include <random>
#include <sstream>
#include <cstring>

#include "vksoftmax/accuracy.hpp"
#include "vksoftmax/buffer.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/half.hpp"
#include "vksoftmax/plan.hpp"
#include "vksoftmax/timer.hpp"

namespace vksoftmax::bench {
namespace {

// Between back-to-back calls: the next call's reads and writes wait for the
// previous call's writes (output and workspace).
void compute_to_compute(const Context& ctx, VkCommandBuffer cb) {
    VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_SHADER_READ_BIT,
                      VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
    ctx.vk().vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1,
                                  &b, 0, nullptr, 0, nullptr);
}

// Times `call` (recording one operation): warm-up, then o.iters calls
// between two timestamps, o.repeats times.
template <typename Call>
Timing time_calls(Context& ctx, const Options& o, uint64_t bytes, Call call) {
    if (!ctx.info().timestamps()) throw Error(ErrorKind::unsupported, ctx.info().name + " has no timestamps");
    Timer timer(ctx, 2);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(o.warmup_ms);
    do {
        ctx.submit_and_wait([&](VkCommandBuffer cb) {
            for (uint32_t i = 0; i < o.iters; ++i) {
                if (i) compute_to_compute(ctx, cb);
                call(cb);
            }
        });
    } while (std::chrono::steady_clock::now() < until);
    std::vector<double> us;
    for (uint32_t r = 0; r < o.repeats; ++r) {
        ctx.submit_and_wait([&](VkCommandBuffer cb) {
            timer.reset(cb);
            for (uint32_t i = 0; i < o.warmup; ++i) {
                call(cb);
                compute_to_compute(ctx, cb);
            }
            timer.stamp(cb, 0);
            for (uint32_t i = 0; i < o.iters; ++i) {
                if (i) compute_to_compute(ctx, cb);
                call(cb);
            }
            timer.stamp(cb, 1);
        });
        us.push_back(timer.ns_between(timer.read_ticks(), 0, 1) / 1e3 / o.iters);
    }
    Timing t;
    t.samples_us = us;
    std::sort(us.begin(), us.end());
    t.median_us = us[us.size() / 2];
    t.min_us = us.front();
    t.gbps = static_cast<double>(bytes) / (t.median_us * 1e3);
    return t;
}

}  // namespace

std::string Case::name() const { return std::to_string(shape.outer) + "x" + std::to_string(shape.axis); }

std::vector<Shape> suite() {
    return {{1, 16777216, 1}, {1, 1048576, 1}, {8, 1048576, 1}, {32, 131072, 1}, {1024, 32768, 1},
            {4096, 1024, 1},  {1024, 512, 1},  {65536, 128, 1},
            // ggml-vulkan's own shapes (cols x rows there): rows x cols here.
            {20480, 4096, 1}, {1280, 12888, 1}, {10240, 1024, 1}, {5120, 256, 1}, {20480, 77, 1}, {16, 131072, 1},
            {16, 524288, 1}};
}

std::vector<Case> parse_cases(const std::string& shapes, const std::vector<Dtype>& dtypes, bool log) {
    std::vector<Shape> list;
    if (shapes == "suite") {
        list = suite();
    } else {
        std::stringstream ss(shapes);
        std::string item;
        while (std::getline(ss, item, ',')) {
            const size_t x = item.find('x');
            try {
                if (x == std::string::npos) throw std::invalid_argument(item);
                size_t used = 0;
                const unsigned long long rows = std::stoull(item.substr(0, x), &used);
                if (used != x) throw std::invalid_argument(item);
                const unsigned long long cols = std::stoull(item.substr(x + 1), &used);
                if (used != item.size() - x - 1 || rows == 0 || cols == 0) throw std::invalid_argument(item);
                list.push_back({rows, cols, 1});
            } catch (const std::exception&) {
                throw Error(ErrorKind::invalid_argument, "--shapes: '" + item + "' is not ROWSxCOLS (e.g. 1024x512)");
            }
        }
    }
    std::vector<Case> cases;
    for (Dtype d : dtypes)
        for (const Shape& s : list) cases.push_back({s, d, log});
    return cases;
}

Buffers::Buffers(Context& ctx, uint64_t tensor_bytes, uint64_t workspace_bytes)
    : in(std::make_unique<Buffer>(ctx, std::max<uint64_t>(tensor_bytes, 16), MemoryKind::device, "bench input")),
      out(std::make_unique<Buffer>(ctx, std::max<uint64_t>(tensor_bytes, 16), MemoryKind::device, "bench output")),
      workspace(std::make_unique<Buffer>(ctx, std::max<uint64_t>(workspace_bytes, 16), MemoryKind::device,
                                         "bench workspace")) {}

std::pair<uint64_t, uint64_t> sizes(Context& ctx, const std::vector<Case>& cases, const PlanOptions& plan) {
    uint64_t tensor = 0, workspace = 0;
    for (const Case& c : cases) {
        Problem p;
        p.shape = c.shape;
        p.dtype = c.dtype;
        p.log = c.log;
        const Plan pl = make_plan(ctx, p, plan);
        tensor = std::max(tensor, pl.tensor_bytes);
        workspace = std::max(workspace, pl.workspace_bytes);
    }
    return {tensor, workspace};
}

Row measure(Context& ctx, const Case& c, const Options& o, const Buffers* buffers) {
    Row row;
    row.c = c;
    Problem p;
    p.shape = c.shape;
    p.dtype = c.dtype;
    p.log = c.log;
    const Plan plan = make_plan(ctx, p, o.plan);
    row.path = path_name(plan.path);
    row.workgroup_size = plan.key[0].workgroup_size;
    row.vpt = plan.key[0].vpt;
    row.groups = plan.groups;
    row.vec = plan.key[0].vec;
    for (uint32_t i = 0; i < plan.passes; ++i) {
        std::string joined;
        for (const std::string& st : plan.pipeline[i]->statistics()) joined += (joined.empty() ? "" : "; ") + st;
        if (!joined.empty()) row.stats.push_back("pass " + std::to_string(i + 1) + ": " + joined);
    }
    row.passes = plan.passes;
    row.bytes = 2 * plan.tensor_bytes;

    // Fresh logits; fp16 cases see them rounded, and so does the reference.
    const uint64_t n = c.shape.elements();
    std::mt19937 rng(std::random_device{}());
    std::normal_distribution<float> dist(0.f, o.sigma);
    std::vector<double> x(n);
    std::vector<uint8_t> host(plan.tensor_bytes);
    for (uint64_t i = 0; i < n; ++i) {
        float v = dist(rng);
        if (c.dtype == Dtype::f16) {
            const uint16_t h = float_to_half(v);
            std::memcpy(host.data() + 2 * i, &h, 2);
            v = half_to_float(h);
        } else {
            std::memcpy(host.data() + 4 * i, &v, 4);
        }
        x[i] = v;
    }
    std::unique_ptr<Buffers> own;
    if (!buffers) buffers = (own = std::make_unique<Buffers>(ctx, plan.tensor_bytes, plan.workspace_bytes)).get();
    const Buffer& in = *buffers->in;
    const Buffer& out = *buffers->out;
    upload(ctx, in, host.data(), host.size());
    const BufferRange rin{in.buffer(), 0, plan.tensor_bytes}, rout{out.buffer(), 0, plan.tensor_bytes};
    const BufferRange rws = plan.workspace_bytes ? BufferRange{buffers->workspace->buffer(), 0, plan.workspace_bytes}
                                                 : BufferRange{};
    auto call = [&](VkCommandBuffer cb) { record(ctx, plan, cb, rin, rout, rws); };

    // One call, checked: a timing of wrong results is no timing.
    ctx.submit_and_wait([&](VkCommandBuffer cb) {
        const uint32_t nan = c.dtype == Dtype::f32 ? 0x7fc00000u : 0x7e007e00u;
        ctx.vk().vkCmdFillBuffer(cb, out.buffer(), 0, plan.tensor_bytes / 4 * 4, nan);
        VkMemoryBarrier b{VK_STRUCTURE_TYPE_MEMORY_BARRIER, nullptr, VK_ACCESS_TRANSFER_WRITE_BIT,
                          VK_ACCESS_SHADER_WRITE_BIT};
        ctx.vk().vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &b,
                                      0, nullptr, 0, nullptr);
        call(cb);
    });
    download(ctx, out, host.data(), host.size());
    const std::vector<double> got = to_double(host.data(), n, c.dtype);
    std::vector<double> ref(n);
    cpu::softmax(p, x.data(), ref.data());
    const Bound bound = accuracy_bound(c.dtype, c.log);
    const Accuracy acc = compare(p, got, ref);
    row.max_rel_error = acc.max_rel;
    row.verified = acc.within(bound.rel, 0.0);

    row.t = time_calls(ctx, o, row.bytes, call);
    if (plan.passes == 2) {
        // Pass 1 alone, to tell the passes' shares apart.
        Plan first = plan;
        first.passes = 1;
        row.pass1_us = time_calls(ctx, o, row.bytes, [&](VkCommandBuffer cb) { record(ctx, first, cb, rin, rout, rws); })
                           .median_us;
    }
    return row;
}

Timing measure_copy(Context& ctx, uint64_t bytes, const Options& o, const Buffers* buffers) {
    PipelineKey key;
    key.copy = true;
    key.workgroup_size = 256;
    const Pipeline& pl = ctx.pipeline(key);
    bytes = bytes / 16 * 16;
    std::unique_ptr<Buffers> own;
    if (!buffers) buffers = (own = std::make_unique<Buffers>(ctx, bytes, 0)).get();
    const Buffer& in = *buffers->in;
    const Buffer& out = *buffers->out;
    // Not zeros: some memory systems move zeros faster than data.
    ctx.submit_and_wait([&](VkCommandBuffer cb) { ctx.vk().vkCmdFillBuffer(cb, in.buffer(), 0, bytes, 0x3f9e0419u); });
    const uint64_t count = bytes / 16;
    const uint32_t groups = static_cast<uint32_t>(std::min<uint64_t>({(count + 255) / 256, ctx.info().max_workgroup_count[0], 65535}));
    VkDescriptorBufferInfo infos[3] = {{in.buffer(), 0, bytes}, {out.buffer(), 0, bytes}, {in.buffer(), 0, bytes}};
    PushConstants push{static_cast<uint32_t>(count), 0, 0, 0, 0, 0.f};
    return time_calls(ctx, o, 2 * bytes, [&](VkCommandBuffer cb) { pl.dispatch(ctx.vk(), cb, infos, push, groups); });
}

}  // namespace vksoftmax::bench

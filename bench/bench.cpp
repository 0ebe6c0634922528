#include "bench.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <sstream>
#include <thread>
#include <cstdio>
#include <cstring>
#include <functional>
#include <future>

#include "vksoftmax/accuracy.hpp"
#include "vksoftmax/attention.hpp"
#include "vksoftmax/barrier.hpp"
#include "vksoftmax/buffer.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/half.hpp"
#include "vksoftmax/plan.hpp"
#include "vksoftmax/single_pass_workspace.hpp"
#include "vksoftmax/timer.hpp"

namespace vksoftmax::bench {
namespace {

Problem problem_of(const Case& c) {
    Problem p;
    p.shape = c.shape;
    p.dtype = c.dtype;
    p.log = c.log;
    return p;
}

// The case with Options::attention's options, or its backward pass.
Problem problem_of(const Case& c, const Options& o) {
    Problem p = problem_of(c);
    p.backward = o.backward;
    if (o.sinks && !o.backward) throw Error(ErrorKind::invalid_argument, "--sinks is for --backward");
    p.attention.sinks = o.sinks;
    if (o.attention.empty()) return p;
    if (o.backward) throw Error(ErrorKind::invalid_argument, "--backward takes no --attention");
    if (o.attention != "mask" && o.attention != "causal")
        throw Error(ErrorKind::invalid_argument, "--attention: '" + o.attention + "' is not mask or causal");
    p.scale = 1.0 / std::sqrt(128.0);
    p.attention.heads = o.heads;
    p.attention.query_rows = c.shape.axis;
    p.attention.mask = o.attention == "mask";
    // A bf16 model's mask is bf16; the others take an fp16 mask, unless
    // Options::mask_dtype says otherwise.
    p.attention.mask_dtype = o.mask_dtype ? *o.mask_dtype : c.dtype == Dtype::bf16 ? Dtype::bf16 : Dtype::f16;
    p.attention.causal = o.attention == "causal";
    if (p.attention.mask) {
        p.attention.mask_batch = o.mask_batch;
        p.attention.mask_heads = o.mask_heads;
    }
    return p;
}

// Options::attention's mask on the device (and as the reference reads it).
struct AttentionMask {
    std::vector<uint8_t> host;  // mask_dtype's elements
    std::unique_ptr<Buffer> device;
    AttentionMask(Context& ctx, const Plan& plan) {
        if (!plan.mask_bytes) return;
        const uint64_t n = plan.problem.shape.axis;
        const Dtype dtype = plan.problem.attention.mask_dtype;
        std::mt19937 rng(std::random_device{}());
        std::uniform_real_distribution<float> value(-4.f, 0.f);
        host.resize(plan.mask_bytes);
        // Each (mask_batch, mask_heads) slice an (n, n) mask of its own values.
        const uint64_t elements = attention_layout(plan.problem).mask_elements;
        for (uint64_t e = 0; e < elements; ++e) {
            const uint64_t q = e / n % n, j = e % n;
            const float v = j > q ? -std::numeric_limits<float>::infinity() : value(rng);
            if (dtype == Dtype::f32) {
                std::memcpy(&host[e * 4], &v, 4);
            } else {
                const uint16_t h = to_16bit(dtype, v);
                std::memcpy(&host[e * 2], &h, 2);
            }
        }
        device = std::make_unique<Buffer>(ctx, plan.mask_bytes, MemoryKind::device, "bench attention mask");
        upload(ctx, *device, host.data(), plan.mask_bytes);
    }
    AttentionData data() const { return AttentionData{host.empty() ? nullptr : host.data(), nullptr, nullptr}; }
    AttentionBuffers buffers(const Plan& plan) const {
        return AttentionBuffers{range_or_empty(device.get(), plan.mask_bytes), {}, {}};
    }
};

// `calls` calls of `call` in one submission, a compute-to-compute
// dependency between them, waited for.
template <typename Call>
void submit_calls(Context& ctx, uint32_t calls, Call& call) {
    ctx.submit_and_wait([&](VkCommandBuffer cb) {
        for (uint32_t i = 0; i < calls; ++i) {
            if (i) compute_to_compute(ctx, cb);
            call(cb);
        }
    });
}

// `pending`'s result, waited for with the GPU running `call` meanwhile, so
// that the next case does not start on a lowered clock. On a CPU device
// the calls would take the cores the reference is computed on: there it
// is simply waited for.
template <typename T, typename Call>
T wait_with_gpu_busy(Context& ctx, uint32_t calls, Call& call, std::future<T>& pending) {
    if (clock_drops_when_idle(ctx))
        while (pending.wait_for(std::chrono::seconds(0)) != std::future_status::ready) submit_calls(ctx, calls, call);
    return pending.get();
}

// Times `call` (recording one operation) once: warm-up for `warmup_ms`,
// then o.iters calls between two timestamps, o.repeats times. Between the
// timed calls: `gaps`' dependency where given, else compute_to_compute().
template <typename Call>
Timing time_once(Context& ctx, const Options& o, double warmup_ms, uint64_t bytes, Call& call, const Gaps* gaps) {
    Timer timer(ctx, 2);
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double, std::milli>(warmup_ms);
    do submit_calls(ctx, o.iters, call);
    while (std::chrono::steady_clock::now() < until);
    std::vector<double> us;
    for (uint32_t r = 0; r < o.repeats; ++r) {
        if (gaps) gaps->reset_events();
        ctx.submit_and_wait([&](VkCommandBuffer cb) {
            timer.reset(cb);
            for (uint32_t i = 0; i < o.warmup; ++i) {
                call(cb);
                compute_to_compute(ctx, cb);
            }
            timer.stamp(cb, 0);
            for (uint32_t i = 0; i < o.iters; ++i) {
                if (i && gaps) gaps->record(cb, i - 1);
                else if (i) compute_to_compute(ctx, cb);
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

// Times `call` as time_once() does, then again right after, the GPU kept
// busy in between, until two consecutive timings agree (settle()). After
// the GPU idles while the CPU checks a case, an H200 has run the case
// 2.4-3.1x slower for the whole of a first timing (a 300 ms warm-up and 9
// repeats, every repeat alike) and at its usual speed in a second timing
// taken right after, on the same pipeline and buffers (bench/NOTES.md, v50).
template <typename Call>
Timing time_calls(Context& ctx, const Options& o, uint64_t bytes, Call call, const Gaps* gaps = nullptr) {
    if (!ctx.info().timestamps()) throw Error(ErrorKind::unsupported, ctx.info().name + " has no timestamps");
    const double follow_ms = follow_warmup_ms(o);
    return settle(time_once(ctx, o, o.warmup_ms, bytes, call, gaps),
                  [&] { return time_once(ctx, o, follow_ms, bytes, call, gaps); }, clock_drops_when_idle(ctx));
}

}  // namespace

bool clock_drops_when_idle(const Context& ctx) { return ctx.info().type != VK_PHYSICAL_DEVICE_TYPE_CPU; }

bool timings_agree(const Timing& a, const Timing& b) {
    return std::abs(a.median_us - b.median_us) <= kSettledFraction * std::min(a.median_us, b.median_us);
}

bool steady(const Timing& t) { return t.median_us <= (1.0 + kSteadyFraction) * t.min_us; }

Timing settle(Timing first, const std::function<Timing()>& next, bool clock_states) {
    Timing t = std::move(first);
    std::vector<double> unsettled;
    bool settled = false;
    for (int taken = 1; taken < kMaxTimings && !settled; ++taken) {
        Timing again = next();
        settled = timings_agree(t, again) && (!clock_states || (steady(t) && steady(again)));
        if (!settled) unsettled.push_back(t.median_us);
        t = std::move(again);
    }
    t.unsettled_medians_us = std::move(unsettled);
    t.settled = settled;
    return t;
}

std::string Case::name() const { return std::to_string(shape.outer) + "x" + std::to_string(shape.axis); }

const std::vector<Family>& families() {
    static const std::vector<Family> list = {
        {"core",
         "the first suite: long single rows, split rows, row-resident shapes, then ggml-vulkan's own shapes",
         {{1, 16777216, 1}, {1, 1048576, 1}, {8, 1048576, 1}, {32, 131072, 1}, {1024, 32768, 1}, {4096, 1024, 1},
          {1024, 512, 1}, {65536, 128, 1}, {20480, 4096, 1}, {1280, 12888, 1}, {10240, 1024, 1}, {5120, 256, 1},
          {20480, 77, 1}, {16, 131072, 1}, {16, 524288, 1}}},
        {"classifier", "classifier heads: a batch of images x 1000 classes", {{4096, 1000, 1}, {32768, 1000, 1}}},
        {"tiny", "tiny rows: mixture weights, top-k gates, small categorical heads",
         {{32768, 2, 1}, {16384, 10, 1}, {65536, 32, 1}}},
        {"attention", "attention probabilities: (batch x heads x queries) rows x keys",
         {{8192, 512, 1}, {4096, 2048, 1}}},
        {"vocabulary", "LLM sampling: batch x vocabulary (Llama 2, GPT-2, Llama 3, Qwen 2, Gemma 3)",
         {{1, 32000, 1}, {1, 50257, 1}, {1, 262144, 1}, {128, 32000, 1}, {8, 128256, 1}, {32, 151936, 1},
          {128, 262144, 1}}},
        {"odd", "prime lengths: no 16-byte access lines up with every row", {{4096, 1009, 1}, {1, 1000003, 1}}},
    };
    return list;
}

std::string family_names() {
    std::string names;
    for (const Family& f : families()) names += (names.empty() ? "" : ", ") + f.name;
    return names;
}

std::vector<Shape> family_shapes(const std::string& name) {
    std::vector<Shape> out;
    for (const Family& f : families())
        if (name == "suite" || name == f.name) out.insert(out.end(), f.shapes.begin(), f.shapes.end());
    return out;
}

namespace {

Shape parse_shape(const std::string& item) {
    try {
        const size_t x = item.find('x');
        if (x == std::string::npos) throw std::invalid_argument(item);
        size_t used = 0;
        const unsigned long long rows = std::stoull(item.substr(0, x), &used);
        if (used != x) throw std::invalid_argument(item);
        const unsigned long long cols = std::stoull(item.substr(x + 1), &used);
        if (used != item.size() - x - 1 || rows == 0 || cols == 0) throw std::invalid_argument(item);
        return {rows, cols, 1};
    } catch (const std::exception&) {
        throw Error(ErrorKind::invalid_argument,
                    "--shapes: '" + item + "' is neither ROWSxCOLS (e.g. 1024x512) nor a family (suite, " +
                        family_names() + ")");
    }
}

}  // namespace

std::vector<Case> parse_cases(const std::string& shapes, const std::vector<Dtype>& dtypes, bool log) {
    std::vector<Shape> list;
    std::stringstream ss(shapes);
    std::string item;
    while (std::getline(ss, item, ',')) {
        std::vector<Shape> named = family_shapes(item);
        if (named.empty()) named.push_back(parse_shape(item));
        list.insert(list.end(), named.begin(), named.end());
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
                                         "bench workspace")),
      gradient(std::make_unique<Buffer>(ctx, std::max<uint64_t>(tensor_bytes, 16), MemoryKind::device, "bench gradient")) {
    // Zeros for the single-pass path's flags and counts before a plan's
    // first call (measure() zeroes it again for each single-pass case).
    fill(ctx, *workspace, 0);
}

namespace {

// The bytes a call of the plan moves (Row::bytes): x in and y out, or y
// and dy in, dx out and each row's sink gradient.
uint64_t moved_bytes(const Plan& plan) {
    return plan.problem.backward ? 3 * plan.tensor_bytes + plan.sink_gradient_bytes : 2 * plan.tensor_bytes;
}

}  // namespace

Sizes sizes(Context& ctx, const std::vector<Case>& cases, const Options& o) {
    Sizes s;
    for (const Case& c : cases) {
        // The problem measure() plans: a backward plan's workspace may be
        // larger than the forward one's.
        const Plan pl = make_plan(ctx, problem_of(c, o), o.plan);
        s.workspace = std::max(s.workspace, pl.workspace_bytes);
        s.moved = std::max(s.moved, moved_bytes(pl));
    }
    return s;
}

namespace {

// The plan's path, geometry and (where captured) driver statistics.
void describe(const Plan& plan, Row& row) {
    row.path = path_name(plan.path);
    row.workgroup_size = plan.key[0].workgroup_size;
    row.slots = plan.key[0].slots;
    row.groups = plan.groups;
    row.vec = plan.key[0].vec;
    row.row_lanes = plan.key[0].row_lanes;
    row.write_shares = plan.key[0].write_shares;
    row.odd_rows = plan.key[0].odd_rows;
    row.passes = plan.passes;
    row.bytes = moved_bytes(plan);
    for (uint32_t i = 0; i < plan.passes; ++i) {
        std::string joined;
        for (const std::string& st : plan.pipeline[i]->statistics()) joined += (joined.empty() ? "" : "; ") + st;
        if (!joined.empty()) row.stats.push_back("pass " + std::to_string(i + 1) + ": " + joined);
    }
}

// Fresh normal(0, sigma) logits as stored (`bytes`) and as the reference
// sees them (`values`: fp16 cases rounded, as the device reads them).
struct Logits {
    std::vector<double> values;
    std::vector<uint8_t> bytes;
};

// copy.comp from `buffers`' input to its output over `bytes` (a multiple
// of 16) in `groups` workgroups of 256, as one call; `ceiling`: the pass
// (a copy, or only its reads or writes).
struct CopyPass {
    const Pipeline& pipeline;
    DescriptorBuffers infos;
    PushConstants push;
    uint32_t groups;
    const Context& ctx;

    CopyPass(Context& context, const Buffers& buffers, uint64_t bytes, uint32_t workgroups, Ceiling ceiling)
        : pipeline(context.pipeline(copy_key(ceiling))), groups(workgroups), ctx(context) {
        const BufferRange src = buffers.in->range(0, bytes), dst = buffers.out->range(0, bytes);
        infos.info[0] = {src.buffer, src.offset, src.range};
        infos.info[1] = {dst.buffer, dst.offset, dst.range};
        infos.info[2] = infos.info[0];
        // The second word: a pattern the OR of the input's words (all the
        // fill's) never makes, for the read-only pass's store that no run
        // takes.
        push = PushConstants{static_cast<uint32_t>(bytes / 16), 0xffffffffu, 0, 0, 0, 0.f, {}};
    }
    void operator()(VkCommandBuffer cb) const { pipeline.dispatch(ctx.vk(), cb, infos, VK_NULL_HANDLE, push, groups); }

    static PipelineKey copy_key(Ceiling ceiling) {
        PipelineKey key;
        key.copy = true;
        key.ceiling = ceiling;
        key.workgroup_size = 256;
        return key;
    }
};

// The bytes a copy pass moves for `bytes`: whole 16-byte vectors (its
// shader's unit), at least one.
uint64_t copy_bytes(uint64_t bytes) { return std::max<uint64_t>(bytes / 16 * 16, 16); }

// The workgroups copy.comp takes for `bytes` (a multiple of 16): a vector
// an invocation, within the device's dispatch limit.
uint32_t copy_groups(const Context& ctx, uint64_t bytes) {
    const uint64_t count = bytes / 16;
    return static_cast<uint32_t>(std::min<uint64_t>({(count + 255) / 256, ctx.info().max_workgroup_count[0], 65535}));
}

// Elements [begin, end) of `l` from their own generator.
void fill_logits(Dtype dtype, float sigma, uint32_t seed, uint64_t begin, uint64_t end, Logits& l) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.f, sigma);
    for (uint64_t i = begin; i < end; ++i) {
        float v = dist(rng);
        if (dtype != Dtype::f32) {
            const uint16_t h = to_16bit(dtype, v);
            std::memcpy(l.bytes.data() + 2 * i, &h, 2);
            v = from_16bit(dtype, h);
        } else {
            std::memcpy(l.bytes.data() + 4 * i, &v, 4);
        }
        l.values[i] = v;
    }
}

// Drawn in slices on every core: drawn on one thread, the 84M logits of
// 20480x4096 kept an H200 idle for seconds, and a GPU idle for about a
// second drops its clock (wait_with_gpu_busy(); bench/NOTES.md, v57).
Logits fresh_logits(const Case& c, uint64_t tensor_bytes, float sigma) {
    const uint64_t n = c.shape.elements();
    Logits l{std::vector<double>(n), std::vector<uint8_t>(tensor_bytes)};
    const uint64_t slices = std::clamp<uint64_t>(std::thread::hardware_concurrency(), 1, 32);
    const uint64_t per_slice = (n + slices - 1) / slices;
    std::random_device seeds;
    std::vector<std::future<void>> filled;
    for (uint64_t begin = 0; begin < n; begin += per_slice)
        filled.push_back(std::async(std::launch::async, fill_logits, c.dtype, sigma, seeds(), begin,
                                    std::min(n, begin + per_slice), std::ref(l)));
    for (std::future<void>& f : filled) f.get();
    return l;
}

// `call` recorded after `bytes` of `out` are filled with NaN (the first
// `bytes` rounded down to whole fill words), in one submission.
void call_on_poisoned_output(Context& ctx, const Buffer& out, uint64_t bytes, Dtype dtype,
                             const std::function<void(VkCommandBuffer)>& call) {
    ctx.submit_and_wait([&](VkCommandBuffer cb) {
        ctx.vk().vkCmdFillBuffer(cb, out.buffer(), 0, bytes / 4 * 4, nan_fill_word(dtype));
        memory_barrier(ctx.vk(), cb, {VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT},
                       {VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT});
        call(cb);
    });
}

// The problem's output in storage bytes against the CPU reference `ref`.
Accuracy against_reference(const Problem& p, const uint8_t* output, const std::vector<double>& ref) {
    return compare(p, to_double(output, p.shape.elements(), p.dtype), ref);
}

std::vector<double> reference(const Problem& p, const Logits& logits, const AttentionData& attention = {}) {
    std::vector<double> ref(p.shape.elements());
    cpu::softmax(p, logits.values.data(), ref.data(), attention);
    return ref;
}

// One call into an output filled with NaN, checked against the CPU
// reference: a timing of wrong results is no timing. The call runs and its
// output is read back here; the float64 reference and the comparison run
// on a thread of their own while the GPU times the case, and are waited
// for by wait_with_gpu_busy(). A GPU left idle for the reference (0.6-2.2 s
// on rows of 16M) let an H200's SM clock drop, and timings right after ran
// 1.3-4x slow, for longer than a warm-up of 200 ms (bench/NOTES.md, v55,
// v57).
// start_check()'s outcome: the comparison, and, where asked for, the
// reference it was made against (`--batch` compares its slices with it;
// otherwise it is freed on the thread: a float64 copy of the tensor).
struct Check {
    Accuracy acc;
    std::vector<double> ref;
};

std::future<Check> start_check(Context& ctx, const Plan& plan, const Logits& logits, const Buffer& out,
                               const std::function<void(VkCommandBuffer)>& call, const AttentionData& attention,
                               bool keep_reference) {
    const Problem& p = plan.problem;
    call_on_poisoned_output(ctx, out, plan.tensor_bytes, p.dtype, call);
    std::vector<uint8_t> host(plan.tensor_bytes);
    download(ctx, out, host.data(), host.size());
    return std::async(std::launch::async, [p, &logits, attention, keep_reference, host = std::move(host)] {
        Check check;
        check.ref = reference(p, logits, attention);
        check.acc = against_reference(p, host.data(), check.ref);
        if (!keep_reference) check.ref = {};
        return check;
    });
}

// The row's verdict from start_check()'s comparison.
void finish_check(const Accuracy& acc, const Problem& p, Row& row) {
    row.max_rel_error = acc.max_rel;
    row.verified = acc.within(accuracy_bound(p.dtype, p.log).rel, 0.0);
}

// o.batch copies of the plan's problem, each in its own slice of one input,
// output and workspace buffer (the same logits in every input slice): one
// batch is checked slice by slice against `ref` (start_check()'s
// reference for those logits), then timed as one record_batch() per call
// and as o.batch record() calls with a barrier after each.
void measure_batch(Context& ctx, const Plan& plan, const Logits& logits, const std::vector<double>& ref,
                   const Options& o, Row& row) {
    const uint64_t align = std::max<uint64_t>(ctx.info().min_storage_buffer_offset_alignment, 16);
    const uint64_t stride = (plan.tensor_bytes + align - 1) / align * align;
    const uint64_t ws_stride = (plan.workspace_bytes + align - 1) / align * align;
    Buffers slices(ctx, o.batch * stride, o.batch * ws_stride);  // workspace zeroed
    std::vector<uint8_t> inputs(o.batch * stride);
    std::vector<BatchItem> items(o.batch);
    for (uint32_t k = 0; k < o.batch; ++k) {
        std::copy(logits.bytes.begin(), logits.bytes.end(), inputs.begin() + k * stride);
        items[k].plan = &plan;
        items[k].in = {slices.in->buffer(), k * stride, plan.tensor_bytes};
        items[k].out = {slices.out->buffer(), k * stride, plan.tensor_bytes};
        if (plan.workspace_bytes) items[k].workspace = {slices.workspace->buffer(), k * ws_stride, plan.workspace_bytes};
    }
    upload(ctx, *slices.in, inputs.data(), inputs.size());
    const Problem& p = plan.problem;
    auto batch_call = [&](VkCommandBuffer cb) { record_batch(ctx, items.data(), items.size(), cb); };
    call_on_poisoned_output(ctx, *slices.out, inputs.size(), p.dtype, batch_call);
    std::vector<uint8_t> outputs(inputs.size());
    download(ctx, *slices.out, outputs.data(), outputs.size());
    // Every slice against the reference, on a thread while the batch is
    // timed (as start_check()); declared after what it reads.
    std::future<bool> verdict = std::async(std::launch::async, [&] {
        bool verified = true;
        for (uint32_t k = 0; k < o.batch; ++k)
            verified = verified && against_reference(p, outputs.data() + k * stride, ref)
                                       .within(accuracy_bound(p.dtype, p.log).rel, 0.0);
        return verified;
    });
    const uint64_t bytes = o.batch * row.bytes;
    row.batch = time_calls(ctx, o, bytes, batch_call);
    row.singles = time_calls(ctx, o, bytes, [&](VkCommandBuffer cb) {
        for (uint32_t k = 0; k < o.batch; ++k) {
            if (k) compute_to_compute(ctx, cb);
            record(ctx, plan, cb, items[k].in, items[k].out, items[k].workspace);
        }
    });
    row.batch_verified = wait_with_gpu_busy(ctx, o.iters, batch_call, verdict);
}

// The plan's window of the shared workspace (none where it needs none).
// The cases before left partials, flags and counts in it; a single-pass
// plan's first call needs it zero.
BufferRange workspace_for(Context& ctx, const Plan& plan, const Buffers& buffers) {
    if (!plan.workspace_bytes) return {};
    const BufferRange range = buffers.workspace->range(0, plan.workspace_bytes);
    if (plan.workspace_zeroed) fill(ctx, *buffers.workspace, 0);
    return range;
}

// A single-pass backward call that failed its check, told in full on
// stderr (explain_single_pass_backward()): each row's largest dx error,
// sink gradient and count; the chunks whose dx is off, with the row sum
// they were written with; every chunk whose partial in the workspace (the
// first call's bank) is missing or differs from the host's sum over the
// same elements.
struct FailedBackward {
    const Plan& plan;
    const std::vector<double>& y;
    const std::vector<double>& dy;
    const std::vector<double>& got;  // dx
    const std::vector<double>& ref;
    const std::vector<float>& sink_got;
    const std::vector<double>& sink_ref;
    const std::vector<uint32_t>& words;  // the workspace after the call
};

// The backward check's float64 reference and its comparisons, computed on a
// thread while the case is timed (as start_check()).
struct BackwardCheck {
    std::vector<double> ref, sink_ref;
    Accuracy dx, sink;
};

BackwardCheck check_backward(const Problem& p, const std::vector<double>& y, const std::vector<double>& dy,
                             const std::vector<double>& dx, const std::vector<float>& sink_got) {
    BackwardCheck c;
    c.ref.resize(p.shape.elements());
    c.sink_ref.resize(p.attention.sinks ? p.shape.rows() : 0);
    cpu::softmax_backward(p, y.data(), dy.data(), c.ref.data(), p.attention.sinks ? c.sink_ref.data() : nullptr);
    round_to(p.dtype, c.ref);
    c.dx = compare_backward(p, y, dy, dx, c.ref);
    if (p.attention.sinks)
        c.sink = compare_sink_gradient(p, y, dy, std::vector<double>(sink_got.begin(), sink_got.end()), c.sink_ref);
    return c;
}

// Chunk c of row r: its dx error and the workspace's partial against the host's.
void explain_chunk(const FailedBackward& f, const single_pass_workspace::Layout& layout, uint64_t r, uint64_t c,
                   double row_sum, double scale, std::ostream& out) {
    const Problem& p = f.plan.problem;
    const uint64_t chunk = f.plan.push.chunk;
    const uint64_t base = p.shape.row_start(r);
    double sum = 0, mass = 0, worst = 0, largest_y = 0, implied = 0;
    for (uint64_t i = c * chunk; i < std::min(p.shape.axis, (c + 1) * chunk); ++i) {
        const uint64_t at = base + i * p.shape.inner;
        sum += f.y[at] * f.dy[at];
        mass += f.y[at];
        worst = std::max(worst, std::abs(f.got[at] - f.ref[at]));
        // The row sum this dx was written with: dx = y (dy - S).
        if (f.y[at] > largest_y) largest_y = f.y[at], implied = f.dy[at] - f.got[at] / f.y[at];
    }
    if (worst > 1e-6 * (scale + 1e-30))
        out << "    chunk " << c << ": dx off by up to " << worst << ", written with a row sum of " << implied
            << " (the row's: " << row_sum << "; this chunk's: " << sum << ")\n";
    const uint64_t next = layout.partial_word(1, r, c);
    const single_pass_workspace::Partial part = single_pass_workspace::read_partial(f.words, layout.partial_word(0, r, c));
    if (part.published && std::abs(part.d - sum) <= 1e-4 * (std::abs(sum) + 1e-3) &&
        (f.sink_ref.empty() || std::abs(part.m - mass) <= 1e-4 * (mass + 1e-3)))
        return;
    out << "    chunk " << c << ": " << (part.published ? "published" : "not published") << " sum " << part.d << " mass "
        << part.m << " flags " << std::hex << part.flags << std::dec << "; host sum " << sum << " mass " << mass
        << "; next bank words " << f.words[next] << " " << f.words[next + 1] << " " << f.words[next + 2] << "\n";
}

void explain_single_pass_backward(const FailedBackward& f) {
    const Problem& p = f.plan.problem;
    const uint64_t rows = p.shape.rows(), chunks = f.plan.push.chunks;
    const single_pass_workspace::Layout layout(f.plan);
    std::ostringstream out;
    out << "  single-pass backward " << p.shape.outer << "x" << p.shape.axis << ": " << chunks << " chunks of "
        << f.plan.push.chunk << " a row\n";
    for (uint64_t r = 0; r < rows; ++r) {
        const uint64_t base = p.shape.row_start(r);
        double worst = 0, scale = 0, row_sum = 0;
        for (uint64_t i = 0; i < p.shape.axis; ++i) {
            const uint64_t at = base + i * p.shape.inner;
            worst = std::max(worst, std::abs(f.got[at] - f.ref[at]));
            scale = std::max(scale, std::abs(f.ref[at]));
            row_sum += f.y[at] * f.dy[at];
        }
        out << "  row " << r << ": largest dx error " << worst << " (largest |dx| " << scale << ")";
        if (!f.sink_ref.empty()) out << ", sink gradient " << f.sink_got[r] << " against " << f.sink_ref[r];
        out << ", count " << f.words[layout.count_word(r)] << "\n";
        for (uint64_t c = 0; c < chunks; ++c) explain_chunk(f, layout, r, c, row_sum, scale, out);
    }
    std::fprintf(stderr, "%s", out.str().c_str());
}

// The backward case's inputs, drawn on a thread while the GPU copies the
// shared buffers (their contents do not matter; the inputs are uploaded
// after): y, the float64 softmax of fresh logits, takes one core seconds on
// rows of millions, and a GPU left idle for it ran the case's first timing
// 3-4x slow through a 150 ms warm-up (bench/NOTES.md, v98).
BackwardInputs drawn_with_gpu_busy(Context& ctx, const Case& c, const Options& o, const Problem& p,
                                   uint64_t tensor_bytes, const Buffers& buffers) {
    std::future<BackwardInputs> drawn = std::async(std::launch::async, [&c, &o, &p, tensor_bytes] {
        const float sink = 0.0f;  // near the logits' maxima (normal(0, sigma)): the sink takes a share
        return backward_inputs(p, fresh_logits(c, tensor_bytes, o.sigma).values, std::random_device{}(),
                               p.attention.sinks ? &sink : nullptr);
    });
    const uint64_t bytes = copy_bytes(std::min(tensor_bytes, ctx.info().max_storage_buffer_range));
    const CopyPass busy(ctx, buffers, bytes, copy_groups(ctx, bytes), Ceiling::copy);
    return wait_with_gpu_busy(ctx, o.iters, busy, drawn);
}

// The backward pass of the case: y the float64 softmax of fresh logits and
// dy normal(0, 1), both in the storage type; one call checked against the
// backward reference, then timed over 3 x tensor bytes.
Row measure_backward(Context& ctx, const Case& c, const Options& o, const Buffers* buffers) {
    Row row;
    row.c = c;
    const Plan plan = make_plan(ctx, problem_of(c, o), o.plan);
    describe(plan, row);
    const Problem& p = plan.problem;
    const uint64_t n = c.shape.elements();
    std::unique_ptr<Buffers> own;
    if (!buffers) buffers = (own = std::make_unique<Buffers>(ctx, plan.tensor_bytes, plan.workspace_bytes)).get();
    const BackwardInputs in = drawn_with_gpu_busy(ctx, c, o, p, plan.tensor_bytes, *buffers);
    const std::vector<double>& y = in.y;
    const std::vector<double>& dy = in.dy;
    const BufferRange y_range = buffers->in->range(0, plan.tensor_bytes);
    const BufferRange dy_range = buffers->gradient->range(0, plan.tensor_bytes);
    const BufferRange dx_range = buffers->out->range(0, plan.tensor_bytes);
    const BufferRange workspace = workspace_for(ctx, plan, *buffers);
    upload(ctx, *buffers->in, to_storage(y, p.dtype).data(), plan.tensor_bytes);
    upload(ctx, *buffers->gradient, to_storage(dy, p.dtype).data(), plan.tensor_bytes);
    std::unique_ptr<Buffer> sink_gradient;
    if (plan.sink_gradient_bytes)
        sink_gradient = std::make_unique<Buffer>(ctx, plan.sink_gradient_bytes, MemoryKind::device, "sink gradient");
    const BufferRange sink_range = range_or_empty(sink_gradient.get(), plan.sink_gradient_bytes);
    auto call = [&](VkCommandBuffer cb) {
        record_backward(ctx, plan, cb, y_range, dy_range, dx_range, workspace, sink_range);
    };
    call_on_poisoned_output(ctx, *buffers->out, plan.tensor_bytes, p.dtype, call);
    std::vector<uint8_t> host(plan.tensor_bytes);
    download(ctx, *buffers->out, host.data(), host.size());
    const std::vector<double> dx = to_double(host.data(), n, p.dtype);
    std::vector<float> sink_got(p.attention.sinks ? p.shape.rows() : 0);
    if (sink_gradient) download(ctx, *sink_gradient, sink_got.data(), plan.sink_gradient_bytes);
    // A single-pass call's workspace, read now for explaining a failure:
    // the timed calls overwrite it.
    const bool explainable = plan.path == Path::single_pass && p.shape.inner == 1;
    std::vector<uint32_t> words(explainable ? plan.workspace_bytes / 4 : 0);
    if (explainable) download(ctx, *buffers->workspace, words.data(), plan.workspace_bytes);
    // Declared after everything its thread reads (see measure()).
    std::future<BackwardCheck> check =
        std::async(std::launch::async, check_backward, std::cref(p), std::cref(y), std::cref(dy), std::cref(dx),
                   std::cref(sink_got));
    row.t = time_calls(ctx, o, row.bytes, call);
    if (plan.passes == 2) {
        Plan first = plan;
        first.passes = 1;
        row.pass1_us = time_calls(ctx, o, row.bytes, [&](VkCommandBuffer cb) {
                           record_backward(ctx, first, cb, y_range, dy_range, dx_range, workspace, sink_range);
                       }).median_us;
    }
    const BackwardCheck verdict = wait_with_gpu_busy(ctx, o.iters, call, check);
    const double bound = accuracy_bound(p.dtype, p.log).rel;
    row.max_rel_error = std::max(verdict.dx.max_rel, verdict.sink.max_rel);
    row.verified = verdict.dx.within(bound, 0.0) && (!sink_gradient || verdict.sink.within(bound, 0.0));
    if (!row.verified && explainable)
        explain_single_pass_backward({plan, y, dy, dx, verdict.ref, sink_got, verdict.sink_ref, words});
    return row;
}

}  // namespace

Row measure(Context& ctx, const Case& c, const Options& o, const Buffers* buffers) {
    if (o.backward) return measure_backward(ctx, c, o, buffers);
    Row row;
    row.c = c;
    const Plan plan = make_plan(ctx, problem_of(c, o), o.plan);
    // The row order where it is not the tensor's (Plan's key: query_major,
    // in blocks of 2^query_block_shift query rows).
    const PipelineKey& key = plan.key[0];
    row.attention = o.attention + (key.query_major ? " query-major/" + std::to_string(1u << key.query_block_shift) : "");
    const AttentionMask mask(ctx, plan);
    const AttentionBuffers attention = mask.buffers(plan);
    describe(plan, row);
    const Logits logits = fresh_logits(c, plan.tensor_bytes, o.sigma);
    std::unique_ptr<Buffers> own;
    if (!buffers) buffers = (own = std::make_unique<Buffers>(ctx, plan.tensor_bytes, plan.workspace_bytes)).get();
    const BufferRange in = buffers->in->range(0, plan.tensor_bytes), out = buffers->out->range(0, plan.tensor_bytes);
    const BufferRange workspace = workspace_for(ctx, plan, *buffers);
    upload(ctx, *buffers->in, logits.bytes.data(), logits.bytes.size());
    auto call = [&](VkCommandBuffer cb) { record(ctx, plan, cb, in, out, workspace, attention); };
    // Declared after everything the check's thread reads: a future from
    // std::async waits for its thread when destroyed, an exception included.
    const bool batch = o.batch && o.attention.empty();
    std::future<Check> check = start_check(ctx, plan, logits, *buffers->out, call, mask.data(), batch);
    row.t = time_calls(ctx, o, row.bytes, call);
    if (plan.passes == 2) {
        // Pass 1 alone, to tell the passes' shares apart.
        Plan first = plan;
        first.passes = 1;
        row.pass1_us =
            time_calls(ctx, o, row.bytes, [&](VkCommandBuffer cb) { record(ctx, first, cb, in, out, workspace, attention); })
                .median_us;
    }
    const Check checked = wait_with_gpu_busy(ctx, o.iters, call, check);
    finish_check(checked.acc, plan.problem, row);
    if (batch) measure_batch(ctx, plan, logits, checked.ref, o, row);
    return row;
}

Row reprised(const Row& first, Row again) {
    again.first_median_us = first.t.median_us;
    // Both measurements checked the case: a wrong result in either stands.
    again.verified = again.verified && first.verified;
    again.batch_verified = again.batch_verified && first.batch_verified;
    again.max_rel_error = std::max(again.max_rel_error, first.max_rel_error);
    again.ceiling = first.ceiling;
    again.read_ceiling = first.read_ceiling;
    again.write_ceiling = first.write_ceiling;
    return again;
}

namespace {

// copy.comp over `bytes` (a multiple of 16) in `groups` workgroups of 256,
// `dependency` between the calls; `ceiling`: what it moves (the bytes
// counted: read and written for a copy, else one way).
Timing time_copy(Context& ctx, uint64_t bytes, uint32_t groups, const Options& o, const Buffers* buffers,
                 Dependency dependency = Dependency::memory_barrier, Ceiling ceiling = Ceiling::copy) {
    std::unique_ptr<Buffers> own;
    if (!buffers) buffers = (own = std::make_unique<Buffers>(ctx, bytes, 0)).get();
    // Not zeros: some memory systems move zeros faster than data.
    fill(ctx, *buffers->in, 0x3f9e0419u);
    const CopyPass pass(ctx, *buffers, bytes, groups, ceiling);
    const Gaps gaps(ctx, dependency, o.iters, buffers->out->buffer());
    const uint64_t moved = ceiling == Ceiling::copy ? 2 * bytes : bytes;
    return time_calls(ctx, o, moved, pass, &gaps);
}

}  // namespace

Timing measure_copy(Context& ctx, uint64_t bytes, const Options& o, const Buffers* buffers, Ceiling ceiling) {
    bytes = copy_bytes(bytes);
    return time_copy(ctx, bytes, copy_groups(ctx, bytes), o, buffers, Dependency::memory_barrier, ceiling);
}

Timing measure_floor(Context& ctx, const Options& o, const Buffers* buffers, Dependency dependency) {
    return time_copy(ctx, 16, 1, o, buffers, dependency);
}

}  // namespace vksoftmax::bench

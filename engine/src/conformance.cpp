#include "vksoftmax/conformance.hpp"

#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>

#include "vksoftmax/accuracy.hpp"
#include "vksoftmax/attention.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/error.hpp"
#include "vksoftmax/half.hpp"
#include "vksoftmax/run.hpp"

namespace vksoftmax::conformance {
namespace {

const float kInf = std::numeric_limits<float>::infinity();
const float kNaN = std::numeric_limits<float>::quiet_NaN();
// The spike of the single-pass stress rows: a few above the largest of
// 65537 normal(0, 4) logits (about 17), so that the spike carries about
// two thirds of its row's mass (e^20 against some 2e8) and every other
// chunk a share of the rest. A lost spike partial moves the row's outputs
// by a factor of about 3; any other chunk's lost partial by its share,
// about 1e-3 for a chunk of a tile, far past the bound. (A spike of 100
// carried all but 1e-35 of the mass: only its own partial showed.)
const float kSpike = 20.f;

struct Case {
    std::string name;
    Shape shape;
    Dtype dtype;
    bool log;
    double temperature;
    bool edge_rows;  // rows of edge values after the random ones (last-axis cases)
    // Rows after the edge rows each carry a spike (kSpike) at a place that
    // moves along the row from row to row.
    bool spike_rows = false;
    double scale = 1.0;
    // The attention options (attention cases: a mask with about one element
    // in eight -inf, mask row 5 entirely -inf and its last element finite;
    // sinks near the rows' maxima).
    Attention attention;
    // The backward pass: y is the forward output of the case's rows (edge
    // rows included), dy normal(0, 1).
    bool backward = false;
    // The case checks the dispatch's grid (rows past
    // maxComputeWorkGroupCount), which neither the reduction nor the
    // precision changes: the split path runs it with the first of its
    // variants only (on lavapipe each split variant of 65538 rows took
    // 19-25 s, as long as the rest of its slice together).
    bool grid_only = false;
    // The rows' order on the row paths (the chunked paths skip a case that
    // forces query-major).
    RowOrder row_order = RowOrder::automatic;
};

// An attention case of a (batch, heads, query_rows, n) tensor.
Case attention_case(const std::string& name, Dtype dtype, bool log, std::vector<uint64_t> dims, const Attention& a,
                    double scale) {
    Case c{name, {dims[0] * dims[1] * dims[2], dims[3], 1}, dtype, log, 1.0, false};
    c.attention = a;
    c.attention.heads = dims[1];
    c.attention.query_rows = dims[2];
    c.scale = scale;
    return c;
}

// The attention buffers of a case: the mask (in its storage type) and the sinks.
struct AttentionInputs {
    std::vector<float> mask;
    std::vector<uint16_t> mask_16bit;  // in the case's 16-bit mask type
    std::vector<float> sinks;
    AttentionData data(const Attention& a) const {
        AttentionData d;
        if (a.mask) d.mask = a.mask_dtype != Dtype::f32 ? static_cast<const void*>(mask_16bit.data()) : mask.data();
        if (a.sinks) d.sinks = sinks.data();
        return d;
    }
};

AttentionInputs make_attention_inputs(const Case& c, std::mt19937& rng) {
    AttentionInputs in;
    const AttentionLayout layout = attention_layout(Problem{c.shape, c.dtype, c.log, 1.0, c.scale, Precision::fast, c.attention});
    std::uniform_real_distribution<float> value(-4.f, 0.f);
    in.mask.resize(layout.mask_elements);
    for (uint64_t i = 0; i < in.mask.size(); ++i) {
        const bool masked_row = i / c.shape.axis == 5, last = i + 1 == in.mask.size();
        in.mask[i] = masked_row || (!last && rng() % 8 == 0) ? -kInf : value(rng);
    }
    if (c.attention.mask_dtype != Dtype::f32)
        for (float v : in.mask) in.mask_16bit.push_back(to_16bit(c.attention.mask_dtype, v));
    std::normal_distribution<float> near_max(10.f, 2.f);
    for (uint64_t h = 0; h < layout.heads; ++h) in.sinks.push_back(h == 1 ? -kInf : near_max(rng));
    return in;
}

// The rows a case feeds: random logits first, then one row of each edge
// kind, so one dispatch exercises them all. Rows must be >= 10 for edges.
std::vector<float> make_input(const Case& c, std::mt19937& rng) {
    const uint64_t L = c.shape.axis;
    std::vector<float> x(c.shape.elements());
    std::normal_distribution<float> logits(0.f, 4.f);
    std::uniform_real_distribution<float> small(-1.f, 1.f);
    for (float& v : x) v = logits(rng);
    auto row = [&](uint64_t r) { return x.data() + r * L; };
    if (!c.edge_rows) {
        // Single rows: the spike in the row's last chunk, whatever the plan's chunks.
        if (c.spike_rows)
            for (uint64_t r = 0; r < c.shape.rows(); ++r) row(r)[L - 1 - (r * 997) % L] = kSpike;
        return x;
    }
    const bool f16 = c.dtype == Dtype::f16;
    // bf16's largest finite value; FLT_MAX would round up to inf.
    const float big = f16 ? 65504.f : c.dtype == Dtype::bf16 ? 3.3895314e38f : FLT_MAX;
    const uint64_t at = L > 1 ? 1 + rng() % (L - 1) : 0;
    for (uint64_t i = 0; i < L; ++i) {
        row(1)[i] = (i % 4 == 0) ? 0.f : (i % 4 == 1) ? -0.f : (i % 4 == 2) ? 1e-40f : -1e-42f;  // +-0, subnormals
        row(2)[i] = (i % 3 == 0) ? big : -big;                   // +-FLT_MAX
        row(3)[i] = small(rng);                                  // spike 100 above the rest:
        row(4)[i] = 2.5f;                                        // all equal
        row(5)[i] = 0.f;                                         // one-hot
        row(7)[i] = small(rng);
        row(8)[i] = -kInf;                                       // all -inf
        row(9)[i] = (i % 2) ? -kInf : small(rng);                // some -inf
    }
    row(3)[at] = 100.f;  // a lost partial max makes exp overflow
    row(5)[at] = f16 ? 30.f : 80.f;
    row(6)[at] = kNaN;   // NaN row
    row(7)[L - 1 - at] = kInf;  // +inf row
    row(9)[at] = 0.5f;  // keep one finite element
    if (c.spike_rows)
        for (uint64_t r = 10; r < c.shape.rows(); ++r) row(r)[(r * 997 + r * L / c.shape.rows()) % L] = kSpike;
    return x;
}

// ULP distance between two finite floats of the output type.
double ulp_distance(double got, double ref, Dtype dtype) {
    if (dtype == Dtype::f32) {
        auto key = [](float f) {
            int32_t i;
            std::memcpy(&i, &f, 4);
            return i < 0 ? static_cast<int64_t>(INT32_MIN) - i : static_cast<int64_t>(i);
        };
        return std::fabs(static_cast<double>(key(static_cast<float>(got)) - key(static_cast<float>(ref))));
    }
    auto key = [dtype](double v) {
        const uint16_t h = to_16bit(dtype, static_cast<float>(v));
        const int32_t mag = h & 0x7fff;
        return (h & 0x8000) ? -mag : mag;
    };
    return std::fabs(static_cast<double>(key(got) - key(ref)));
}

// The attention options alone and together, on rows short and long: a
// mask broadcast over batch and heads with scale (the module that finds a
// row's mask row from its query row alone); a mask per head with ALiBi;
// causal with a scale and the log-sum-exp; causal with sinks and the
// log-sum-exp; a 16-bit mask of an odd element count, (15, 255), whose last
// element the shaders read from a word that ends past its elements
// (mask_buffer_bytes()); and (full catalogue) a broadcast mask with ALiBi,
// sinks and the log-sum-exp on rows of 2048 (held by a workgroup at 8
// slots or more: RowFetch's form) and everything at once on rows of 65537.
void add_attention_cases(Dtype dt, bool quick, std::vector<Case>& cases) {
    const std::string t = std::string(dtype_name(dt)) + " ";
    Attention broadcast;
    broadcast.mask = true;
    broadcast.mask_dtype = dt;
    cases.push_back(attention_case(t + "softmax (2,4,12,1000) attention mask (12,1000) scale=1/sqrt(128)", dt, false,
                                   {2, 4, 12, 1000}, broadcast, 1.0 / std::sqrt(128.0)));
    // The same rows taken query-major (RowOrder), which the plan gives
    // masks that head-major order would lose from the cache (tens of MB).
    Case query_major = attention_case(t + "softmax (2,4,12,1000) attention mask (12,1000) scale=1/sqrt(128) query-major",
                                      dt, false, {2, 4, 12, 1000}, broadcast, 1.0 / std::sqrt(128.0));
    query_major.row_order = RowOrder::query_major;
    cases.push_back(query_major);
    Attention masked;
    masked.mask = true;
    masked.mask_dtype = dt;
    masked.mask_heads = 2;
    masked.mask_batch = 1;
    masked.alibi_max_bias = 8.0;
    cases.push_back(attention_case(t + "softmax (2,4,12,1000) attention mask (1,2,12,1000) alibi=8 scale=1/sqrt(128)", dt,
                                   false, {2, 4, 12, 1000}, masked, 1.0 / std::sqrt(128.0)));
    // Causal with a scale under 1 and no mask: the scale goes into the exp
    // (SCALE_IN_EXP), the statistic is of x.
    Attention causal_scaled;
    causal_scaled.causal = true;
    causal_scaled.lse = true;
    cases.push_back(attention_case(t + "softmax (2,4,12,1000) attention causal+0 lse scale=1/sqrt(128)", dt, false,
                                   {2, 4, 12, 1000}, causal_scaled, 1.0 / std::sqrt(128.0)));
    Attention causal;
    causal.causal = true;
    causal.causal_offset = 4090;
    causal.sinks = true;
    causal.lse = true;
    cases.push_back(attention_case(t + "log-softmax (1,4,12,4097) attention causal+4090 sinks lse", dt, true,
                                   {1, 4, 12, 4097}, causal, 1.0));
    Attention odd_mask;
    odd_mask.mask = true;
    odd_mask.mask_dtype = dt == Dtype::f32 ? Dtype::f16 : dt;
    cases.push_back(attention_case(t + "softmax (1,1,15,255) attention mask " + dtype_name(odd_mask.mask_dtype) +
                                       " (15,255)",
                                   dt, false, {1, 1, 15, 255}, odd_mask, 1.0));
    if (quick) return;
    // Rows of 2048 held by a workgroup at 8 slots or more in 16-byte
    // accesses under a broadcast mask: with --row-fetch next-row-first,
    // each workgroup fetches its next row first (RowFetch), ALiBi, sinks
    // and the log-sum-exp included.
    Attention next_row = broadcast;
    next_row.mask_rows = 6;
    next_row.alibi_max_bias = 8.0;
    next_row.sinks = true;
    next_row.lse = true;
    cases.push_back(attention_case(t + "softmax (1,4,6,2048) attention mask (6,2048) alibi=8 sinks lse scale=1/sqrt(128)",
                                   dt, false, {1, 4, 6, 2048}, next_row, 1.0 / std::sqrt(128.0)));
    Attention all = causal;
    all.mask = true;
    all.mask_dtype = Dtype::f32;
    all.mask_rows = 12;
    all.alibi_max_bias = 4.0;
    all.causal_offset = 65530;
    cases.push_back(attention_case(t + "softmax (1,2,12,65537) attention mask (12,65537) alibi=4 causal+65530 sinks lse",
                                   dt, false, {1, 2, 12, 65537}, all, 0.5));
}

// Single rows (full catalogue), softmax and log-softmax, forward or
// backward, each with a spike of kSpike in its last chunk: the lengths
// whose plans on a device that counts its multiprocessors take rules of
// their own for one row (forward 40000: 32 chunks held at 128 invocations;
// 300000: held chunks of 8192, backward too, in half as many as chunks of
// 4096 would make).
void add_single_row_cases(Dtype dt, bool backward, std::vector<Case>& cases) {
    for (uint64_t L : {40000u, 300000u})
        for (bool log : {false, true}) {
            Case c{std::string(backward ? "backward " : "") + dtype_name(dt) + (log ? " log-softmax" : " softmax") +
                       " 1x" + std::to_string(L) + " (single row)",
                   {1, L, 1}, dt, log, 1.0, false};
            c.spike_rows = true;
            c.backward = backward;
            cases.push_back(c);
        }
}

// The backward pass of softmax and log-softmax, on rows short and long
// (edge rows: NaN and all -inf rows give NaN y, some -inf a 0 or -inf in
// y), with scale 0.5 on the log-softmax ones; the full catalogue also
// along a strided axis. Their names begin with "backward ", so that a
// filter of "^f32 " leaves them out and "^backward " takes them alone.
void add_backward_cases(Dtype dt, bool quick, std::vector<Case>& cases) {
    std::vector<uint64_t> lengths = {7, 1000, 4097, 65537};
    if (!quick) lengths.insert(lengths.end(), {33, 129, 131071});
    for (uint64_t L : lengths)
        for (bool log : {false, true}) {
            Case c{"backward " + std::string(dtype_name(dt)) + (log ? " log-softmax" : " softmax") + " 12x" +
                       std::to_string(L) + (log ? " scale=0.5" : ""),
                   {12, L, 1}, dt, log, 1.0, true};
            c.scale = log ? 0.5 : 1.0;
            c.backward = true;
            cases.push_back(c);
        }
    // A forward with sinks (the attention cases' sinks: near the rows'
    // maxima, head 1's -inf): dx and each row's sink gradient; edge rows
    // included (rows of NaN and of -inf give NaN, a row of -inf beside the
    // sink y = 0).
    for (bool log : {false, true}) {
        Case sinks{"backward " + std::string(dtype_name(dt)) + (log ? " log-softmax" : " softmax") +
                       " (1,4,12,1000) sinks" + (log ? " scale=0.5" : ""),
                   {48, 1000, 1}, dt, log, 1.0, true};
        sinks.scale = log ? 0.5 : 1.0;
        sinks.backward = true;
        sinks.attention.sinks = true;
        sinks.attention.heads = 4;
        sinks.attention.query_rows = 12;
        cases.push_back(sinks);
    }
    if (quick) return;
    add_single_row_cases(dt, true, cases);
    Case strided{"backward " + std::string(dtype_name(dt)) + " softmax (4,33,9) axis 1", shape_for_axis({4, 33, 9}, 1), dt,
                 false, 1.0, false};
    strided.backward = true;
    cases.push_back(strided);
}

std::vector<Case> catalogue(const Context& ctx, bool quick) {
    std::vector<uint64_t> lengths = {1, 7, 32, 33, 129, 1000, 4097, 65537};
    if (!quick)
        lengths.insert(lengths.end(),
                       {2, 3, 31, 63, 65, 127, 255, 257, 8191, 8193, 12288, 40000, 131071, (1u << 20) + 1});
    std::vector<Case> cases;
    for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
        if (dtype_size(dt) == 2 && !ctx.info().storage_16bit) continue;
        for (uint64_t L : lengths)
            for (bool log : {false, true}) {
                const uint64_t rows = L > 100000 ? 10 : 12;
                const std::string s = std::string(dtype_name(dt)) + (log ? " log-softmax " : " softmax ");
                cases.push_back({s + std::to_string(rows) + "x" + std::to_string(L), {rows, L, 1}, dt, log, 1.0, L > 1});
            }
        for (int axis : {0, 1, 2}) {
            Case c{std::string(dtype_name(dt)) + " softmax (4,33,9) axis " + std::to_string(axis),
                   shape_for_axis({4, 33, 9}, axis), dt, false, 1.0, false};
            cases.push_back(c);
            c.log = true;
            c.name = std::string(dtype_name(dt)) + " log-softmax (4,33,9) axis " + std::to_string(axis);
            cases.push_back(c);
        }
        if (!quick) add_single_row_cases(dt, false, cases);
        cases.push_back({std::string(dtype_name(dt)) + " softmax 12x1000 T=0.5", {12, 1000, 1}, dt, false, 0.5, true});
        cases.push_back({std::string(dtype_name(dt)) + " log-softmax 12x4097 T=3", {12, 4097, 1}, dt, true, 3.0, true});
        if (!quick) {
            // Batches past 16 rows of 8193-16384, which a device that counts
            // its multiprocessors shares at fewer workgroups a row.
            cases.push_back({std::string(dtype_name(dt)) + " softmax 24x12288", {24, 12288, 1}, dt, false, 1.0, true});
            cases.push_back({std::string(dtype_name(dt)) + " log-softmax 40x16384", {40, 16384, 1}, dt, true, 1.0, true});
            // fp32 batches of 1.5-2 waves of rows of 11265-16384, which a
            // device that counts 132 multiprocessors holds in wider workgroups.
            if (dt == Dtype::f32) {
                cases.push_back({"f32 softmax 232x16384", {232, 16384, 1}, dt, false, 1.0, true});
                cases.push_back({"f32 log-softmax 232x12288", {232, 12288, 1}, dt, true, 1.0, true});
            }
        }
        // Attention's scale, 1/sqrt(128): the temperature's multiplier set as a scale.
        Case scaled{std::string(dtype_name(dt)) + " softmax 12x1000 scale=1/sqrt(128)", {12, 1000, 1}, dt, false, 1.0, true};
        scaled.scale = 1.0 / std::sqrt(128.0);
        cases.push_back(scaled);
        add_attention_cases(dt, quick, cases);
        add_backward_cases(dt, quick, cases);
    }
    const uint64_t max_groups = ctx.info().max_workgroup_count[0];
    if (max_groups <= (1u << 20)) {
        Case grid{"f32 softmax " + std::to_string(max_groups + 3) + "x2 (rows > maxComputeWorkGroupCount)",
                  {max_groups + 3, 2, 1}, Dtype::f32, false, 1.0, false};
        grid.grid_only = true;
        cases.push_back(grid);
    }
    return cases;
}

struct Variant {
    Path path;
    Reduction reduction;
    Precision precision;
    uint32_t subgroup_size;
    uint32_t patience = 0;  // single-pass: polling rounds; 0: the plan's
    std::string name() const {
        return std::string(path_name(path)) + (reduction == Reduction::shared ? "/shared" : "/subgroup") +
               (precision == Precision::accurate ? "/accurate" : "/fast") +
               (patience ? "/patience" + std::to_string(patience) : "");
    }
};

std::vector<Variant> variants(const DeviceInfo& d, bool single_pass) {
    std::vector<uint32_t> sizes;
    if (d.subgroup_size_control && d.subgroup_arithmetic())
        for (uint32_t s = d.min_subgroup_size; s <= d.max_subgroup_size && s > 0; s *= 2) sizes.push_back(s);
    else
        sizes.push_back(0);
    std::vector<Variant> out;
    for (uint32_t size : sizes)
        for (Precision pr : {Precision::fast, Precision::accurate})
            for (Path path : {Path::subgroup_row, Path::workgroup_row, Path::split, Path::single_pass})
                for (Reduction red : {Reduction::subgroup, Reduction::shared}) {
                    if (path == Path::single_pass &&
                        (!single_pass || !single_pass_rule(d, SinglePass::allowed).allowed))
                        continue;
                    if (red == Reduction::subgroup && !d.subgroup_arithmetic()) continue;
                    if (path == Path::subgroup_row && red == Reduction::shared) continue;
                    // The shared-memory tree never uses subgroups: one size is enough.
                    if (red == Reduction::shared && size != sizes.front()) continue;
                    out.push_back({path, red, pr, red == Reduction::shared ? 0 : size});
                }
    return out;
}

// The inputs (as the GPU saw them, in float64) and the GPU's outputs.
struct Outputs {
    std::vector<double> inputs, got;
};

// Runs the case's input through the GPU; 16-bit inputs are rounded first,
// and `inputs` holds the rounded values the reference must see.
Outputs run_on_gpu(Context& ctx, const Case& c, const Problem& p, const RunOptions& ro, const AttentionData& attention,
                   std::mt19937& rng) {
    const std::vector<float> x = make_input(c, rng);
    const size_t n = x.size();
    Outputs o;
    // The inputs as stored in the case's type, and as the reference sees them.
    o.inputs.assign(x.begin(), x.end());
    round_to(c.dtype, o.inputs);
    std::vector<uint8_t> y(n * dtype_size(c.dtype));
    run(ctx, p, to_storage(o.inputs, c.dtype).data(), y.data(), ro, attention);
    o.got = to_double(y.data(), n, c.dtype);
    return o;
}

// Judges the outputs against the reference row by row: NaN rows, -inf
// (log) and 0 (softmax of -inf) exactly; finite outputs within the bound,
// in relative error and ULP; each row's sum within the bound of 1.
void judge(const Case& c, const Outputs& o, const std::vector<double>& ref, double floor, Result& r) {
    const Shape& s = c.shape;
    for (uint64_t row = 0; row < s.rows(); ++row) {
        const uint64_t base = s.row_start(row);
        const double largest = c.log ? 0.0 : row_largest(s, ref, base);
        double sum = 0;
        bool nan_row = false;
        for (uint64_t i = 0; i < s.axis; ++i) {
            const uint64_t at = base + i * s.inner;
            const double g = o.got[at], want = ref[at];
            if (std::isnan(want) || std::isinf(want) || want == 0.0) {
                const bool same = std::isnan(want) ? std::isnan(g) : g == want;
                if (!same && (std::isnan(want) || std::isinf(want) || std::isinf(o.inputs[at]))) {
                    if (r.nan_pattern_ok)
                        r.note = "element " + std::to_string(at) + ": got " + std::to_string(g) + ", want " +
                                 std::to_string(want);
                    r.nan_pattern_ok = false;
                }
                nan_row = nan_row || std::isnan(want);
                if (std::isnan(want) || std::isinf(want)) continue;
            }
            if (!std::isfinite(g)) {
                if (r.nan_pattern_ok) r.note = "element " + std::to_string(at) + " is not finite";
                r.nan_pattern_ok = false;
                continue;
            }
            sum += c.log ? std::exp(g) : g;
            r.max_rel = std::max(r.max_rel, relative_error(c.log, g, want, largest, floor));
            if (std::fabs(want) >= floor) r.max_ulp = std::max(r.max_ulp, ulp_distance(g, want, c.dtype));
        }
        // A sink takes its share: rows with sinks sum below 1.
        if (!nan_row && s.axis > 0 && !c.attention.sinks) r.worst_row_sum = std::max(r.worst_row_sum, std::fabs(sum - 1.0));
    }
}

// The log-sum-exps: NaN where the reference's is, else within 1e-5 of
// max(1, |ref|) (tests/TOLERANCES.md; fp32 arithmetic whatever the storage).
void judge_lse(const std::vector<float>& got, const std::vector<float>& ref, Result& r) {
    for (size_t row = 0; row < ref.size(); ++row) {
        const bool ok = std::isnan(ref[row]) ? std::isnan(got[row])
                                             : std::fabs(got[row] - ref[row]) <= 1e-5 * std::max(1.0f, std::fabs(ref[row]));
        if (ok || !r.nan_pattern_ok) continue;
        r.nan_pattern_ok = false;
        r.note = "log-sum-exp of row " + std::to_string(row) + ": got " + std::to_string(got[row]) + ", want " +
                 std::to_string(ref[row]);
    }
}

// The tensors of a check, for Result::evidence.
Evidence evidence_of(const Case& c, const std::vector<double>& inputs, const std::vector<double>& outputs,
                     const std::vector<double>& reference) {
    Evidence e;
    e.shape = c.shape;
    e.dtype = c.dtype;
    e.inputs = inputs;
    e.outputs = outputs;
    e.reference = reference;
    return e;
}

// The mask of an attention case as its storage type holds it, into `e`.
void add_mask(const Case& c, const AttentionInputs& in, Evidence& e) {
    if (!c.attention.mask) return;
    e.mask.assign(in.mask.begin(), in.mask.end());
    round_to(c.attention.mask_dtype, e.mask);
    e.mask_dtype = c.attention.mask_dtype;
    e.mask_rows = c.shape.axis ? e.mask.size() / c.shape.axis : 0;
}

// A backward case: dx from y (the float64 forward of the case's rows,
// rounded to the storage type) and dy, against the backward reference,
// within the bound relative to the terms' size (compare_backward()); with
// sinks (y from the forward with the case's sinks), each row's sink
// gradient too (compare_sink_gradient()). There is no ULP figure: dx
// cancels by design.
void check_backward(Context& ctx, const Case& c, const Problem& p, const RunOptions& ro, std::mt19937& rng,
                    bool keep_failures, Result& r) {
    const std::vector<float> x = make_input(c, rng);
    const size_t n = x.size();
    const AttentionInputs attention = make_attention_inputs(c, rng);
    const BackwardInputs in = backward_inputs(p, std::vector<double>(x.begin(), x.end()), static_cast<uint32_t>(rng()),
                                              c.attention.sinks ? attention.sinks.data() : nullptr);
    const std::vector<double>& y = in.y;
    const std::vector<double>& dy = in.dy;
    std::vector<double> ref(n), sink_ref(c.attention.sinks ? c.shape.rows() : 0);
    std::vector<float> sink_got(sink_ref.size());
    std::vector<uint8_t> dx(n * dtype_size(c.dtype));
    run_backward(ctx, p, to_storage(y, c.dtype).data(), to_storage(dy, c.dtype).data(), dx.data(), ro,
                 c.attention.sinks ? sink_got.data() : nullptr);
    const std::vector<double> got = to_double(dx.data(), n, c.dtype);
    cpu::softmax_backward(p, y.data(), dy.data(), ref.data(), c.attention.sinks ? sink_ref.data() : nullptr);
    round_to(c.dtype, ref);
    const Accuracy a = compare_backward(p, y, dy, got, ref);
    Accuracy sinks;  // nothing to judge without sinks
    if (c.attention.sinks)
        sinks = compare_sink_gradient(p, y, dy, std::vector<double>(sink_got.begin(), sink_got.end()), sink_ref);
    // The bound of the precision's fast mode: the error is the sum's.
    r.rel_bound = accuracy_bound(c.dtype, c.log).rel;
    r.max_rel = std::max(a.max_rel, sinks.max_rel);
    r.nan_pattern_ok = a.nonfinite_mismatches == 0 && sinks.nonfinite_mismatches == 0;
    r.pass = r.nan_pattern_ok && r.max_rel <= r.rel_bound;
    if (keep_failures && !r.pass) {
        auto e = std::make_shared<Evidence>(evidence_of(c, y, got, ref));
        e->gradient = dy;
        r.evidence = e;
    }
    if (!r.nan_pattern_ok)
        r.note = std::to_string(a.nonfinite_mismatches) + " non-finite mismatches in dx, " +
                 std::to_string(sinks.nonfinite_mismatches) + " in the sink gradient";
    else if (!r.pass)
        r.note = "error over the bound: dx " + a.describe() +
                 (c.attention.sinks ? "; sink gradient " + sinks.describe() : "");
}

bool chunked_path(Path path) { return path == Path::split || path == Path::single_pass; }

// Why variant v does not run case c (the row is skipped, and passes);
// empty where it runs it.
std::string skip_reason(const Case& c, const Variant& v) {
    if (v.path == Path::subgroup_row && c.shape.axis > 65537) return "rows this long never take the subgroup-row path";
    if (c.row_order == RowOrder::query_major && chunked_path(v.path)) return "query-major order is the row paths' alone";
    return {};
}

// The problem a case poses under a variant's precision.
Problem problem_of(const Case& c, const Variant& v) {
    Problem p;
    p.shape = c.shape;
    p.dtype = c.dtype;
    p.log = c.log;
    p.temperature = c.temperature;
    p.scale = c.scale;
    p.precision = v.precision;
    p.attention = c.attention;
    p.backward = c.backward;
    return p;
}

// The plan a variant forces: its path, reduction, subgroup size and
// patience.
RunOptions run_options_of(const Case& c, const Variant& v, const Options& options) {
    RunOptions ro;
    ro.plan.path = v.path;
    ro.plan.reduction = v.reduction;
    ro.plan.subgroup_size = v.subgroup_size;
    // Small chunks on the chunked paths: many partials to merge even for
    // short rows. The single-pass path is checked wherever the device has
    // what it needs, whether or not its plan takes it by itself.
    if (chunked_path(v.path)) ro.plan.chunk_elements = 1;
    ro.plan.single_pass = SinglePass::allowed;
    ro.plan.single_pass_patience = v.patience;
    ro.plan.rules = options.rules;
    ro.plan.row_order = c.row_order;
    return ro;
}

// The forward check: outputs (and the LSE) against float64, and each
// row's sum against 1.
void check_forward(Context& ctx, const Case& c, const Problem& p, const RunOptions& ro, std::mt19937& rng,
                   bool keep_failures, Result& r) {
    const AttentionInputs attention = make_attention_inputs(c, rng);
    AttentionData gpu = attention.data(c.attention), reference = gpu;
    std::vector<float> lse(c.attention.lse ? c.shape.rows() : 0), lse_ref(lse.size());
    gpu.lse = lse.data();
    reference.lse = lse_ref.data();
    const Outputs o = run_on_gpu(ctx, c, p, ro, gpu, rng);
    std::vector<double> ref(o.inputs.size());
    cpu::softmax(p, o.inputs.data(), ref.data(), reference);
    round_to(c.dtype, ref);
    const Bound bound = accuracy_bound(c.dtype, c.log, p.precision);
    r.rel_bound = bound.rel;
    judge(c, o, ref, bound.floor, r);
    judge_lse(lse, lse_ref, r);
    // A row of L outputs, each within the bound, sums to 1 within it too
    // (plus the output type's rounding of each, which the bound covers).
    const double sum_bound = c.dtype == Dtype::f32 ? r.rel_bound : 2 * r.rel_bound;
    r.pass = r.nan_pattern_ok && r.max_rel <= r.rel_bound && r.worst_row_sum <= sum_bound;
    if (keep_failures && !r.pass) {
        auto e = std::make_shared<Evidence>(evidence_of(c, o.inputs, o.got, ref));
        add_mask(c, attention, *e);
        r.evidence = e;
    }
    if (r.pass) r.note.clear();
    else if (r.nan_pattern_ok)
        r.note = r.max_rel > r.rel_bound ? "relative error over the bound" : "a row does not sum to 1";
}

// One check of case c by variant v on inputs drawn from `seed`, planned
// under the per-driver rules' choices (Options::rules).
Result check(Context& ctx, const Case& c, const Variant& v, const Options& options, uint32_t seed) {
    std::mt19937 rng(seed);
    Result r;
    r.case_name = c.name;
    r.variant = v.name();
    r.seed = seed;
    r.subgroup_size = v.subgroup_size ? v.subgroup_size : ctx.info().subgroup_size;
    r.note = skip_reason(c, v);
    if (!r.note.empty()) {
        r.skipped = true;
        r.pass = true;
        return r;
    }
    const Problem p = problem_of(c, v);
    const RunOptions ro = run_options_of(c, v, options);
    if (c.backward) check_backward(ctx, c, p, ro, rng, options.keep_failures, r);
    else check_forward(ctx, c, p, ro, rng, options.keep_failures, r);
    return r;
}

// check(), with an error (a plan refused, a Vulkan call failed) reported
// as the case's failure.
Result checked(Context& ctx, const Case& c, const Variant& v, const Options& options, uint32_t seed) {
    try {
        return check(ctx, c, v, options, seed);
    } catch (const Error& e) {
        Result r;
        r.case_name = c.name;
        r.variant = v.name();
        r.subgroup_size = v.subgroup_size;
        r.seed = seed;
        r.note = e.what();
        r.pass = false;
        return r;
    }
}

// One term of Options::filters: `text` contains `term`, or begins with
// what follows a leading '^' ("^f16 " leaves out "bf16 " cases); a leading
// '!' negates the rest ("!^backward " leaves out the backward cases).
bool holds(const std::string& text, const std::string& term) {
    if (!term.empty() && term[0] == '!') return !holds(text, term.substr(1));
    if (!term.empty() && term[0] == '^') return text.compare(0, term.size() - 1, term, 1) == 0;
    return text.find(term) != std::string::npos;
}

bool selected(const std::string& text, const std::vector<std::string>& terms) {
    for (const std::string& term : terms)
        if (!holds(text, term)) return false;
    return true;
}

// The run's seed: Options::seed, or one drawn at random.
uint32_t seed_of(const Options& options) { return options.seed ? options.seed : std::random_device{}(); }

}  // namespace

std::vector<Result> run(Context& ctx, const Options& options, const std::function<void(const Result&)>& progress) {
    const uint32_t seed = seed_of(options);
    std::vector<Result> results;
    for (const Case& c : catalogue(ctx, options.quick)) {
        bool split_ran = false;
        for (const Variant& v : variants(ctx.info(), options.single_pass)) {
            if (!selected(c.name + " " + v.name(), options.filters)) continue;
            if (c.grid_only && v.path == Path::split) {
                if (split_ran) continue;
                split_ran = true;
            }
            for (uint32_t repeat = 0; repeat < std::max(options.repeats, 1u); ++repeat) {
                Result r = checked(ctx, c, v, options, seed + repeat);
                if (progress) progress(r);
                results.push_back(std::move(r));
            }
        }
    }
    return results;
}

std::vector<Result> stress_single_pass(Context& ctx, const Options& options) {
    std::vector<Result> results;
    const DeviceInfo& d = ctx.info();
    if (!single_pass_rule(d, SinglePass::allowed).allowed) return results;
    const uint32_t seed = seed_of(options);
    // Rows of spikes: the max of row r in chunk r % chunks, kSpike, so that
    // a partial lost or taken from another dispatch shows, the spike's or
    // any other chunk's.
    // 256 x 65 chunks of a tile on a GPU; a CPU device runs a few
    // workgroups at a time, so 32 rows are as many more than it holds.
    // The backward pass gathers sums the same way: a lost one shows in
    // every dx of its row, most where y is the spike's.
    const uint64_t rows = d.type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 32 : 256;
    const std::string shape = std::to_string(rows) + "x65537 (single-pass stress)";
    const Case forward{"f32 softmax " + shape, {rows, 65537, 1}, Dtype::f32, false, 1.0, true, true};
    Case backward{"backward f32 softmax " + shape, {rows, 65537, 1}, Dtype::f32, false, 1.0, true, true};
    backward.backward = true;
    for (const Case& c : {forward, backward})
        for (uint32_t patience : {0u, 1u}) {
            Variant v{Path::single_pass, d.subgroup_arithmetic() ? Reduction::subgroup : Reduction::shared,
                      Precision::fast, 0, patience};
            results.push_back(checked(ctx, c, v, options, seed));
        }
    return results;
}

}  // namespace vksoftmax::conformance

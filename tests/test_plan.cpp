// The plan's decisions, apart from GPU numerics and with no device: which
// path, shader kind and geometry a shape takes on a described device
// (plan_geometry on a DeviceInfo). The GPU tests check that each of these
// computes the right values.
#include <gtest/gtest.h>

#include "vksoftmax/error.hpp"
#include "vksoftmax/plan.hpp"

namespace {

using namespace vksoftmax;

// An NVIDIA H200 as vksoftmax sees it (580.159.04): subgroups of 32, fixed.
DeviceInfo h200() {
    DeviceInfo d;
    d.name = "NVIDIA H200 (described)";
    d.type = VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU;
    d.subgroup_size = d.min_subgroup_size = d.max_subgroup_size = 32;
    d.subgroup_size_control = d.compute_full_subgroups = true;
    d.max_workgroup_subgroups = 32;
    d.subgroup_in_compute = true;
    d.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    d.storage_16bit = true;
    d.max_storage_buffer_range = 0xffffffffull;
    d.max_workgroup_count[0] = d.max_workgroup_count[1] = d.max_workgroup_count[2] = 0x7fffffff;
    d.max_workgroup_invocations = d.max_workgroup_size_x = 1024;
    d.vendor_id = 0x10DE;
    d.driver_id = VK_DRIVER_ID_NVIDIA_PROPRIETARY;
    d.memory_model = true;
    return d;
}

// An H200's description counting its multiprocessors as an H100's
// VK_NV_shader_sm_builtins does (132), which the rules that keep grids
// resident need.
DeviceInfo counted_h100() {
    DeviceInfo d = h200();
    d.multiprocessors = 132;
    return d;
}

// `d` as lavapipe reports itself (Mesa's driver ID and vendor), for the
// rules that read the driver.
DeviceInfo as_llvmpipe(DeviceInfo d) {
    d.vendor_id = 0x10005;
    d.driver_id = VK_DRIVER_ID_MESA_LLVMPIPE;
    return d;
}

// The same device where the host did not enable the Vulkan memory model:
// long rows take the two-dispatch split path.
DeviceInfo without_memory_model() {
    DeviceInfo d = h200();
    d.memory_model = false;
    return d;
}

// The same device without subgroup arithmetic: shared-memory reductions.
DeviceInfo without_subgroups() {
    DeviceInfo d = h200();
    d.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT;
    return d;
}

Problem rows_of(uint64_t rows, uint64_t cols, Dtype dt = Dtype::f32) {
    Problem p;
    p.shape = {rows, cols, 1};
    p.dtype = dt;
    return p;
}

std::string what(const Problem& p) { return std::string(dtype_name(p.dtype)) + " " + to_string(p.shape); }

// Options that let the plan take the single-pass path, and that force it.
PlanOptions single_pass_allowed() {
    PlanOptions allowed;
    allowed.single_pass = SinglePass::allowed;
    return allowed;
}

PlanOptions single_pass_forced() {
    PlanOptions forced = single_pass_allowed();
    forced.path = Path::single_pass;
    return forced;
}

// Rows of up to 32 x the subgroup size take a subgroup each (1024 at 32),
// up to 32 x the largest workgroup a workgroup each (32768 at 1024), longer
// ones the split path (the single-pass path only where allowed); without
// subgroup arithmetic, no subgroup rows.
TEST(Plan, PathByRowLength) {
    const DeviceInfo d = h200();
    struct Want {
        uint64_t cols;
        Path path;
    };
    for (const Want& w : {Want{10, Path::subgroup_row}, Want{1024, Path::subgroup_row}, Want{1025, Path::workgroup_row},
                          Want{32768, Path::workgroup_row}, Want{32769, Path::split},
                          Want{1u << 24, Path::split}}) {
        const Problem p = rows_of(16, w.cols);
        EXPECT_EQ(choose_path(d, p), w.path) << what(p) << ": " << path_name(choose_path(d, p));
        EXPECT_EQ(plan_geometry(d, p).path, w.path) << what(p);
    }
    const PlanOptions allowed = single_pass_allowed();
    EXPECT_EQ(choose_path(d, rows_of(16, 32769), allowed), Path::single_pass);
    EXPECT_EQ(choose_path(without_subgroups(), rows_of(16, 1000)), Path::workgroup_row);
    EXPECT_THROW(choose_path(without_subgroups(), rows_of(16, 1000), PlanOptions{Reduction::automatic, 0, Path::subgroup_row}),
                 Error);
}

// 16384 x 10: rows of at most half a subgroup's 4 x 32 are held by the
// fewest lanes that hold 4 elements each (a row of 10: 4 lanes, 8 rows to
// a subgroup, one per cluster, scalar where the length is not a multiple
// of 4, in workgroups of 256); without shuffles a row takes a whole subgroup, one row per
// subgroup, 8 subgroups of 32 in a workgroup of 256. Rows of 4 x the
// subgroup size that are a multiple of 4 are held two to a subgroup, one
// per slot.
TEST(Plan, ShortRows) {
    const DeviceInfo d = h200();
    const Plan tiny = plan_geometry(d, rows_of(16384, 10));
    EXPECT_EQ(tiny.path, Path::subgroup_row);
    EXPECT_EQ(tiny.key[0].kind, ShaderKind::rows_per_slot);
    EXPECT_EQ(tiny.key[0].row_lanes, 4u) << "lanes per row of 10";
    EXPECT_EQ(tiny.key[0].vec, 1u);
    EXPECT_EQ(tiny.key[0].slots, 1u) << "scalar rows: one per cluster of lanes";
    EXPECT_EQ(tiny.key[0].workgroup_size, 256u);
    EXPECT_EQ(tiny.key[0].required_subgroup_size, 32u) << "the planned subgroup size is pinned where it can be";
    EXPECT_EQ(tiny.rows_per_workgroup, 8u * 8u) << "8 subgroups x 8 clusters";
    EXPECT_EQ(tiny.groups, 16384u / 64u);
    const Plan vec4_rows = plan_geometry(d, rows_of(65536, 32));
    EXPECT_EQ(vec4_rows.key[0].row_lanes, 8u);
    EXPECT_EQ(vec4_rows.key[0].slots, 2u) << "4-wide rows: two per cluster of lanes";
    EXPECT_EQ(vec4_rows.key[0].workgroup_size, 128u);
    EXPECT_EQ(vec4_rows.rows_per_workgroup, 4u * 4u * 2u) << "4 subgroups x 4 clusters x 2 slots";
    struct Lanes {
        uint64_t cols;
        uint32_t row_lanes, vec;
    };
    for (const Lanes& w : {Lanes{1, 1, 1}, Lanes{2, 1, 1}, Lanes{4, 1, 4}, Lanes{5, 2, 1}, Lanes{32, 8, 4},
                           Lanes{33, 16, 1}, Lanes{64, 16, 4}, Lanes{65, 0, 1}, Lanes{128, 0, 4}}) {
        const Plan plan = plan_geometry(d, rows_of(4096, w.cols));
        EXPECT_EQ(plan.key[0].row_lanes, w.row_lanes) << "rows of " << w.cols << ": lanes per row";
        EXPECT_EQ(plan.key[0].vec, w.vec) << "rows of " << w.cols << ": elements per access";
        EXPECT_FALSE(plan.key[0].odd_rows) << "rows of " << w.cols << ": short rows not a multiple of 4 stay scalar";
    }

    DeviceInfo no_shuffle = h200();
    no_shuffle.subgroup_ops &= ~VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
    const Plan whole = plan_geometry(no_shuffle, rows_of(16384, 10));
    EXPECT_EQ(whole.key[0].kind, ShaderKind::row_in_registers) << "no shuffles: a subgroup per row";
    EXPECT_EQ(whole.key[0].row_lanes, 0u);
    EXPECT_EQ(whole.key[0].slots, 1u);
    EXPECT_EQ(whole.key[0].workgroup_size, 256u);
    EXPECT_EQ(whole.rows_per_workgroup, 8u);
    EXPECT_EQ(whole.groups, 16384u / 8);

    const Plan slots = plan_geometry(d, rows_of(65536, 128));
    EXPECT_EQ(slots.key[0].kind, ShaderKind::rows_per_slot);
    EXPECT_EQ(slots.key[0].vec, 4u);
    EXPECT_EQ(slots.key[0].slots, 2u) << "rows per subgroup";
    EXPECT_EQ(slots.key[0].workgroup_size, 128u);
    EXPECT_EQ(slots.rows_per_workgroup, 8u);

    // Rows of at most 4 x the subgroup size not a multiple of 4 long stay
    // scalar, a subgroup each (20480 x 77 on an H200: 6.95 us scalar, 8.17
    // to 8.56 4-wide in windows, bench/NOTES.md v9).
    const Plan scalar_rows = plan_geometry(d, rows_of(20480, 77));
    EXPECT_EQ(scalar_rows.key[0].kind, ShaderKind::row_in_registers);
    EXPECT_EQ(scalar_rows.key[0].vec, 1u);
    EXPECT_FALSE(scalar_rows.key[0].odd_rows);
}

// Contiguous rows not a multiple of 4 long, longer than 4 x the subgroup
// size, take vector accesses over a window starting at the vector boundary
// at or before the row: 4-wide on the row paths, and on the split path fp16
// 8-wide (16 bytes) while fp32 stays scalar (bench/NOTES.md, v9). The
// window's extra elements count when the plan sizes slots, tiles and
// chunks. Strided rows stay scalar.
TEST(Plan, OddRowsTakeVectors) {
    const DeviceInfo d = h200();
    const Plan f32 = plan_geometry(d, rows_of(4096, 1009));
    EXPECT_EQ(f32.path, Path::subgroup_row);
    EXPECT_EQ(f32.key[0].kind, ShaderKind::row_in_registers);
    EXPECT_EQ(f32.key[0].vec, 4u);
    EXPECT_TRUE(f32.key[0].odd_rows);
    EXPECT_EQ(f32.key[0].slots, 8u);
    const Plan f16 = plan_geometry(d, rows_of(4096, 1009, Dtype::f16));
    EXPECT_EQ(f16.key[0].vec, 4u);
    EXPECT_TRUE(f16.key[0].odd_rows);
    EXPECT_EQ(f16.key[0].slots, 8u);
    // 1023 + 3 > 32 x 32: the window does not fit a subgroup's registers,
    // so the row takes a workgroup rather than tiles.
    EXPECT_EQ(plan_geometry(d, rows_of(64, 1023)).path, Path::workgroup_row);
    EXPECT_EQ(plan_geometry(d, rows_of(64, 1020)).path, Path::subgroup_row);
    EXPECT_FALSE(plan_geometry(d, rows_of(64, 1020)).key[0].odd_rows);
    // Split and single-pass: fp32 scalar; fp16 chunks cover the longest
    // window, 1 + 7 elements past the row.
    for (const PlanOptions& options : {PlanOptions{}, single_pass_allowed()}) {
        const Plan split = plan_geometry(d, rows_of(1, 4096 * 512 + 1), options);
        EXPECT_EQ(split.key[0].vec, 1u);
        EXPECT_FALSE(split.key[0].odd_rows);
        const Plan split16 = plan_geometry(d, rows_of(1, 4096 * 512 + 1, Dtype::f16), options);
        EXPECT_EQ(split16.key[0].vec, 8u);
        EXPECT_TRUE(split16.key[0].odd_rows);
        EXPECT_GE(split16.push.chunks * uint64_t{split16.push.chunk}, 4096ull * 512 + 8);
    }
    const Plan split = plan_geometry(d, rows_of(1, 4096 * 512 + 1));
    EXPECT_EQ(split.path, Path::split);
    Problem strided = rows_of(64, 1009);
    strided.shape = Shape{1, 1009, 64};
    EXPECT_EQ(plan_geometry(d, strided).key[0].vec, 1u);
    EXPECT_FALSE(plan_geometry(d, strided).key[0].odd_rows);
}

// A masked attention problem of (batch, heads, n, n) at scale 1/8, with an
// (n, n) mask of `mask_dtype` shared by every batch and head.
Problem masked_attention(uint64_t batch, uint64_t heads, uint64_t n, Dtype dtype, Dtype mask_dtype) {
    Problem p = rows_of(batch * heads * n, n, dtype);
    p.attention.heads = heads;
    p.attention.query_rows = n;
    p.attention.mask = true;
    p.attention.mask_dtype = mask_dtype;
    p.scale = 0.125;
    return p;
}

// A workgroup row is held in up to 16 slots per invocation, in the smallest
// power-of-two workgroup of at least 4 subgroups that holds it; 16-bit
// rows read 16 bytes at a time keep their slot count even (12888 fp16 at
// 256 x 14).
TEST(Plan, WorkgroupRows) {
    const DeviceInfo d = h200();
    const Plan f32 = plan_geometry(d, rows_of(1024, 32768));
    EXPECT_EQ(f32.key[0].kind, ShaderKind::row_in_registers);
    EXPECT_EQ(f32.key[0].workgroup_size, 512u);
    EXPECT_EQ(f32.key[0].slots, 16u);
    EXPECT_EQ(f32.key[0].vec, 4u);

    const Plan even = plan_geometry(d, rows_of(1280, 12888, Dtype::f16));
    EXPECT_EQ(even.key[0].workgroup_size, 256u) << "f16 1280x12888: " << even.key[0].id();
    EXPECT_EQ(even.key[0].slots, 14u) << "f16 1280x12888: " << even.key[0].id();
    EXPECT_EQ(even.key[0].vec, 8u) << "f16 1280x12888: " << even.key[0].id();
}

// Forward 16-bit rows past 16 elements per invocation of the largest
// workgroup are read in tiles of 16384, at 1024 x 4 slots, or at 512 x 8
// (kHalfRowTileSlots) where the rows are a multiple of 8 long and make
// more than one wave of the device's counted multiprocessors (132 here;
// kHalfRowTileWaves); they are held whole at 1024 x 5-8 where rows a
// multiple of 4 long make at most one (kHeldHalfRowMaxWaves) and have no
// attention options. With no multiprocessor count every one keeps the
// tiles at 1024 x 4; so do causal rows and strided rows (read an element
// at a time, not in 16-byte windows).
TEST(Plan, LongHalfRowsInTilesOrHeldByWaves) {
    const DeviceInfo d = h200(), counted = counted_h100();
    const ShaderKind tiles = ShaderKind::row_in_tiles, held = ShaderKind::row_in_registers;
    struct LongRowCase { Dtype dtype; bool log; uint64_t rows, cols; ShaderKind kind; uint32_t workgroup, slots, vec; };
    for (const LongRowCase& c :
         {LongRowCase{Dtype::f16, false, 1024, 32768, tiles, 512, 8, 8}, {Dtype::bf16, false, 1024, 32768, tiles, 512, 8, 8},
          {Dtype::f16, true, 264, 24576, tiles, 512, 8, 8}, {Dtype::bf16, false, 200, 16388, tiles, 1024, 4, 4},
          {Dtype::f16, false, 1024, 32764, tiles, 1024, 4, 4}, {Dtype::bf16, false, 4096, 20000, tiles, 512, 8, 8},
          {Dtype::f16, false, 198, 32768, tiles, 512, 8, 8}, {Dtype::f16, false, 133, 32768, tiles, 512, 8, 8},
          {Dtype::bf16, true, 196, 20000, tiles, 512, 8, 8}, {Dtype::f16, false, 133, 32764, tiles, 1024, 4, 4},
          {Dtype::f16, false, 128, 32001, tiles, 1024, 4, 4}, {Dtype::f16, false, 1024, 32001, tiles, 1024, 4, 4},
          {Dtype::bf16, true, 1024, 30002, tiles, 1024, 4, 4}, {Dtype::f16, false, 128, 32000, held, 1024, 8, 8},
          {Dtype::bf16, false, 128, 32000, held, 1024, 8, 8}, {Dtype::bf16, false, 100, 24576, held, 1024, 6, 8},
          {Dtype::f16, false, 132, 20000, held, 1024, 6, 8}, {Dtype::f16, false, 132, 32768, held, 1024, 8, 8},
          {Dtype::f16, true, 128, 32000, held, 1024, 8, 8}, {Dtype::bf16, false, 128, 32764, held, 1024, 8, 4},
          {Dtype::f16, true, 132, 20004, held, 1024, 5, 4}}) {
        Problem p = rows_of(c.rows, c.cols, c.dtype);
        p.log = c.log;
        const Plan plan = plan_geometry(counted, p);
        const std::string which =
            what(p) + (c.log ? " log-softmax" : "") + " on 132 multiprocessors: " + plan.key[0].id();
        EXPECT_EQ(plan.key[0].kind, c.kind) << which;
        EXPECT_EQ(plan.key[0].workgroup_size, c.workgroup) << which;
        EXPECT_EQ(plan.key[0].slots, c.slots) << which;
        EXPECT_EQ(plan.key[0].vec, c.vec) << which;
        const Plan uncounted = plan_geometry(d, p);
        const std::string uncounted_which = what(p) + " with no multiprocessor count: " + uncounted.key[0].id();
        EXPECT_EQ(uncounted.key[0].kind, tiles) << uncounted_which;
        EXPECT_EQ(uncounted.key[0].workgroup_size, 1024u) << uncounted_which;
    }
    Problem causal = masked_attention(1, 1, 32768, Dtype::f16, Dtype::f16);
    causal.attention.mask = false;
    causal.attention.causal = true;
    const Plan attention = plan_geometry(counted, causal);
    const std::string causal_rows = "causal f16 (1, 1, 32768, 32768): " + attention.key[0].id();
    EXPECT_EQ(attention.key[0].kind, ShaderKind::row_in_tiles) << causal_rows;
    EXPECT_EQ(attention.key[0].workgroup_size, 1024u) << causal_rows;
    EXPECT_EQ(attention.key[0].slots, 4u) << causal_rows;
    Problem strided = rows_of(128, 32768, Dtype::f16);
    strided.shape.inner = 4;  // 512 rows
    const Plan strided_plan = plan_geometry(counted, strided);
    const std::string strided_rows = "f16 128x32768x4 on 132 multiprocessors: " + strided_plan.key[0].id();
    EXPECT_EQ(strided_plan.key[0].kind, ShaderKind::row_in_tiles) << strided_rows;
    EXPECT_EQ(strided_plan.key[0].vec, 1u) << strided_rows;
    EXPECT_EQ(strided_plan.key[0].workgroup_size, 1024u) << strided_rows;
    EXPECT_EQ(strided_plan.key[0].slots, 4u) << strided_rows;
}

// A plain row's planned workgroup-row geometry, on a device with or
// without a multiprocessor count (132, counted_h100()).
struct RowGeometryCase {
    Dtype dtype;
    bool log;
    uint64_t rows, cols;
    bool counted;
    uint32_t workgroup, slots;
    uint64_t inner = 1;
};

void expect_row_geometry(const RowGeometryCase& c) {
    Problem p = rows_of(c.rows, c.cols, c.dtype);
    p.log = c.log;
    p.shape.outer = c.rows / c.inner;
    p.shape.inner = c.inner;
    const Plan plan = plan_geometry(c.counted ? counted_h100() : h200(), p);
    const std::string which = what(p) + (c.log ? " log-softmax" : "") +
                              (c.counted ? " on 132 multiprocessors: " : " with no multiprocessor count: ") +
                              plan.key[0].id();
    EXPECT_EQ(plan.key[0].kind, ShaderKind::row_in_registers) << which;
    EXPECT_EQ(plan.key[0].workgroup_size, c.workgroup) << which;
    EXPECT_EQ(plan.key[0].slots, c.slots) << which;
}

// Batches too small to fill the device with two-subgroup workgroups
// (counted multiprocessors, 132): 16-bit rows and rows not a multiple of
// 4 long that two subgroups would hold at 5-8 slots take 256 x 2 up to
// two waves (kFewRowsMaxWaves); those not a multiple of 4 long at 6-8
// slots take four subgroups up to 8 waves (kOddRowsWideMaxWaves; 16-bit
// log-softmax past 6 slots up to 4, kOddHalfLogRowsWideMaxWaves), and so
// do fp32 rows a multiple of 4 long at 7-8 slots (kFloatRowsWideMinSlots,
// kFloatRowsWideMaxWaves); fp32 rows a multiple of 4 long at 5-6 slots,
// 16-bit ones past two waves, every row on a device that does not count
// its multiprocessors, and strided rows (16 rows of 2048, inner 4; not
// measured), keep the rules of larger batches. Rows a multiple of 4
// long that four subgroups would hold at 16 slots (8192; 7168 at 14
// keeps four) take 256 x 8 up to two waves too, but a single fp32
// softmax row.
TEST(Plan, FewRowsTakeWiderWorkgroups) {
    for (const RowGeometryCase& c :
         {RowGeometryCase{Dtype::f16, false, 16, 1279, true, 256, 2}, {Dtype::bf16, true, 264, 1025, true, 256, 2},
          {Dtype::f32, false, 264, 2045, true, 256, 2}, {Dtype::bf16, false, 264, 2048, true, 256, 2},
          {Dtype::f16, false, 265, 2048, true, 64, 8}, {Dtype::f32, false, 16, 2048, true, 128, 4},
          {Dtype::f32, true, 1056, 1540, true, 128, 4}, {Dtype::f32, false, 1057, 1796, true, 64, 8},
          {Dtype::f32, false, 1024, 1536, true, 64, 6}, {Dtype::f32, false, 16, 2048, false, 64, 8},
          {Dtype::f32, false, 16, 8192, true, 256, 8}, {Dtype::f16, true, 264, 8192, true, 256, 8},
          {Dtype::bf16, false, 1, 8192, true, 256, 8}, {Dtype::f32, false, 265, 8192, true, 128, 16},
          {Dtype::f16, false, 16, 7168, true, 128, 14}, {Dtype::f32, false, 16, 8192, false, 128, 16},
          {Dtype::f32, false, 1, 8192, true, 128, 16}, {Dtype::f32, true, 1, 8192, true, 256, 8},
          {Dtype::f16, false, 1024, 1279, true, 128, 3}, {Dtype::f32, true, 1024, 2045, true, 128, 4},
          {Dtype::f16, false, 1024, 1025, true, 64, 5}, {Dtype::f16, false, 1057, 1789, true, 64, 7},
          {Dtype::bf16, false, 4096, 2045, true, 128, 4}, {Dtype::f16, false, 16, 1279, false, 64, 6},
          {Dtype::f16, true, 528, 1789, true, 128, 4}, {Dtype::bf16, true, 1024, 1789, true, 64, 7},
          {Dtype::f16, true, 1024, 1279, true, 128, 3}, {Dtype::f16, false, 16, 2048, true, 64, 8, 4}})
        expect_row_geometry(c);
}

// fp32 rows a multiple of 4 long that 8 subgroups hold at 12-16 slots
// take 16 subgroups at 6-8 slots in batches of 1.5-2 waves (199-264 rows
// on 132 multiprocessors), and softmax rows at 16 slots from 1.5 waves on.
TEST(Plan, LongFloatRowsTakeWiderWorkgroupsInSomeBatches) {
    for (const RowGeometryCase& c :
         {RowGeometryCase{Dtype::f32, false, 256, 16384, true, 512, 8}, {Dtype::f32, false, 199, 16384, true, 512, 8},
          {Dtype::f32, false, 198, 16384, true, 256, 16}, {Dtype::f32, false, 128, 16384, true, 256, 16},
          {Dtype::f32, false, 2048, 16384, true, 512, 8}, {Dtype::f32, false, 256, 16384, false, 256, 16},
          {Dtype::f32, true, 256, 16384, true, 512, 8}, {Dtype::f32, true, 264, 16384, true, 512, 8},
          {Dtype::f32, true, 265, 16384, true, 256, 16}, {Dtype::f32, false, 256, 12288, true, 512, 6},
          {Dtype::f32, false, 512, 12288, true, 256, 12}, {Dtype::f32, true, 256, 15360, true, 512, 8},
          {Dtype::f32, false, 256, 11268, true, 512, 6}, {Dtype::f32, false, 256, 11264, true, 256, 11},
          {Dtype::f16, false, 256, 16384, true, 256, 16}, {Dtype::bf16, true, 256, 16384, true, 256, 16}})
        expect_row_geometry(c);
    // Rows not a multiple of 4 long keep their own rule.
    const Plan odd = plan_geometry(counted_h100(), rows_of(256, 16383, Dtype::f32));
    EXPECT_NE(odd.key[0].workgroup_size, 512u) << "f32 256x16383: " << odd.key[0].id();
}

// Rows that two subgroups hold at 8 slots take two (kNarrowRowSubgroups):
// 2048 at 64 x 8, 1500 at 64 x 6; 4096 stays at four, 128 x 8; the
// backward pass keeps four.
TEST(Plan, NarrowRowsTakeTwoSubgroups) {
    const DeviceInfo d = h200();
    for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
        const Plan narrow = plan_geometry(d, rows_of(65536, 2048, dt));
        EXPECT_EQ(narrow.key[0].workgroup_size, 64u) << dtype_name(dt) << " 65536x2048";
        EXPECT_EQ(narrow.key[0].slots, 8u) << dtype_name(dt) << " 65536x2048";
        const Plan wide = plan_geometry(d, rows_of(32768, 4096, dt));
        EXPECT_EQ(wide.key[0].workgroup_size, 128u) << dtype_name(dt) << " 32768x4096";
        EXPECT_EQ(wide.key[0].slots, 8u) << dtype_name(dt) << " 32768x4096";
    }
    const Plan six = plan_geometry(d, rows_of(4096, 1500));
    EXPECT_EQ(six.key[0].workgroup_size, 64u) << "f32 4096x1500: " << six.key[0].id();
    EXPECT_EQ(six.key[0].slots, 6u) << "f32 4096x1500: " << six.key[0].id();
    Problem backward = rows_of(65536, 2048);
    backward.backward = true;
    EXPECT_EQ(plan_geometry(d, backward).key[0].workgroup_size, 128u) << "backward f32 65536x2048";
}

// Masked bf16 attention rows of up to 4096 take at most 8 slots
// (kMaskedBf16MaxSlots): 4096 at 128 x 8; rows of 2048 the narrow 64 x 8,
// as f16 masked rows and bf16 causal ones do; longer ones as before,
// (1, 1, 8192, 8192) at 128 x 16.
TEST(Plan, MaskedBf16RowsTakeAtMost8Slots) {
    const DeviceInfo d = h200();
    struct MaskedCase { Dtype dtype; bool mask; uint64_t heads, n; uint32_t workgroup, slots; };
    for (const MaskedCase& c : {MaskedCase{Dtype::bf16, true, 32, 2048, 64, 8}, {Dtype::bf16, true, 32, 4096, 128, 8},
                                {Dtype::bf16, true, 1, 8192, 128, 16}, {Dtype::f16, true, 32, 2048, 64, 8},
                                {Dtype::bf16, false, 32, 2048, 64, 8}, {Dtype::f16, true, 1, 8192, 128, 16}}) {
        Problem p = masked_attention(1, c.heads, c.n, c.dtype, c.dtype);
        p.attention.mask = c.mask;
        p.attention.causal = !c.mask;
        const std::string which = what(p) + (c.mask ? " masked" : " causal");
        const Plan plan = plan_geometry(d, p);
        ASSERT_EQ(plan.path, Path::workgroup_row) << which;
        EXPECT_EQ(plan.key[0].workgroup_size, c.workgroup) << which;
        EXPECT_EQ(plan.key[0].slots, c.slots) << which;
    }
}

// Forward rows not a multiple of 4 long keep two subgroups up to 7 slots
// (1789, a window of 1792, at 64 x 7) and take four where two would hold
// them at 8 (2045, a window of 2048, at 128 x 4; kOddRowNarrowSlots).
TEST(Plan, OddRowsTakeFourSubgroupsWhereTwoHoldThemAt8Slots) {
    const DeviceInfo d = h200();
    for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16})
        for (bool log : {false, true}) {
            struct OddCase { uint64_t cols; uint32_t workgroup, slots; };
            for (const OddCase& c : {OddCase{1789, 64, 7}, OddCase{2045, 128, 4}}) {
                Problem p = rows_of(4096, c.cols, dt);
                p.log = log;
                const Plan plan = plan_geometry(d, p);
                const std::string which = what(p) + (log ? " log-softmax: " : ": ") + plan.key[0].id();
                EXPECT_TRUE(plan.key[0].odd_rows) << which;
                EXPECT_EQ(plan.key[0].workgroup_size, c.workgroup) << which;
                EXPECT_EQ(plan.key[0].slots, c.slots) << which;
            }
        }
}

// The backward pass holds rows of 32768 whole at 1024 x 8 slots in every
// storage type (y and dy: 64 floats an invocation) where they make one
// and a half waves of the multiprocessors (132 here: 198 rows), fp32
// and bf16 rows where they make more than one (133), and reads fewer,
// or rows on a device that does not count its multiprocessors, in tiles
// of 4 slots (rows whose chunks make one wave are spread over it
// instead: Plan.ShortRowsSpreadOverOneWave). Rows not a multiple of 4
// long: fp32 ones hold dy at 1024 x 8 rather than read it again, and keep
// the tiles to one and a half waves (140 rows of 32001 measured 6% slower
// whole); bf16 ones are held whole past one wave.
TEST(Plan, BackwardLongRowsHeldWholeByWaves) {
    const DeviceInfo d = h200(), counted = counted_h100();
    for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
        for (uint64_t rows : {132, 133, 197, 198, 256, 1024}) {
            Problem longest = rows_of(rows, 32768, dt);
            longest.backward = true;
            const bool whole = dt == Dtype::f16 ? rows >= 198 : rows >= 133;
            const Plan plan = plan_geometry(counted, longest);
            const std::string which = std::string("backward ") + dtype_name(dt) + " " + std::to_string(rows) +
                                      "x32768 on 132 multiprocessors";
            EXPECT_EQ(plan.key[0].kind, whole ? ShaderKind::row_in_registers : ShaderKind::row_in_tiles)
                << which << (whole ? ": read in tiles" : ": held whole");
            EXPECT_EQ(plan.key[0].workgroup_size, 1024u) << which;
            EXPECT_EQ(plan.key[0].slots, whole ? 8u : 4u) << which;
            EXPECT_EQ(plan_geometry(d, longest).key[0].kind, ShaderKind::row_in_tiles)
                << which << " with no multiprocessor count: held whole";
        }
        // Two rows: in tiles where the device does not count its
        // multiprocessors, one single-pass wave where it does.
        Problem two = rows_of(2, 32768, dt);
        two.backward = true;
        const std::string which = std::string("backward ") + dtype_name(dt) + " 2x32768";
        const Plan uncounted = plan_geometry(d, two);
        EXPECT_EQ(uncounted.key[0].kind, ShaderKind::row_in_tiles) << which << " with no multiprocessor count";
        EXPECT_EQ(uncounted.key[0].workgroup_size, 1024u) << which << " with no multiprocessor count";
        EXPECT_EQ(uncounted.key[0].slots, 4u) << which << " with no multiprocessor count";
        EXPECT_EQ(plan_geometry(counted, two).path, Path::single_pass) << which << " on 132 multiprocessors";
    }
    struct OddCase { Dtype dtype; uint64_t rows; bool whole; };
    for (const OddCase& c : {OddCase{Dtype::f32, 140, false}, OddCase{Dtype::f32, 198, true},
                             OddCase{Dtype::bf16, 140, true}, OddCase{Dtype::f16, 140, false}}) {
        Problem odd_rows = rows_of(c.rows, 32001, c.dtype);
        odd_rows.backward = true;
        const Plan plan = plan_geometry(counted, odd_rows);
        const std::string which = "backward " + what(odd_rows) + " on 132 multiprocessors, pipeline " + plan.key[0].id();
        EXPECT_EQ(plan.key[0].kind, c.whole ? ShaderKind::row_in_registers : ShaderKind::row_in_tiles)
            << which << (c.whole ? ": read in tiles" : ": held whole");
        EXPECT_EQ(plan.key[0].slots, c.whole ? 8u : 4u) << which;
    }
}

// A mask's buffer holds its elements, a 16-bit mask of an odd count 2
// bytes more (the shaders read it two elements to a 32-bit word:
// mask_buffer_bytes()): (255, 255) fp16 and bf16 130052 bytes, fp32
// 260100; (256, 255) fp16 130560, its elements' bytes.
TEST(Plan, MaskBuffersHoldWhole32BitWords) {
    struct MaskCase { uint64_t query_rows, n; Dtype mask_dtype; uint64_t bytes; };
    for (const MaskCase& c : {MaskCase{255, 255, Dtype::f16, 130052}, {255, 255, Dtype::bf16, 130052},
                              {255, 255, Dtype::f32, 260100}, {256, 255, Dtype::f16, 130560}}) {
        Problem p = masked_attention(1, 1, 1, Dtype::f32, c.mask_dtype);
        p.shape = {c.query_rows, c.n, 1};
        p.attention.query_rows = c.query_rows;
        const Plan plan = plan_geometry(h200(), p);
        EXPECT_EQ(plan.mask_bytes, c.bytes) << dtype_name(c.mask_dtype) << " mask of (" << c.query_rows << ", " << c.n
                                            << ")";
    }
}

// bf16 rows take fp16's geometry: softmax, log-softmax and gradient rows
// alike (bf16 modules unroll their slot loops, so that 8 slots stay in
// registers: softmax_common.glsl, UNROLL_SLOTS).
TEST(Plan, Bf16TakesFp16Geometry) {
    const DeviceInfo d = h200();
    for (uint64_t cols : {1000u, 1024u, 4096u, 32000u}) {
        for (int kind = 0; kind < 3; ++kind) {
            Problem bf16 = rows_of(4096, cols, Dtype::bf16);
            bf16.log = kind == 1;
            bf16.backward = kind == 2;
            Problem f16 = bf16;
            f16.dtype = Dtype::f16;
            const Plan a = plan_geometry(d, bf16), b = plan_geometry(d, f16);
            const std::string which = what(bf16) + (kind == 1 ? " log-softmax" : kind == 2 ? " backward" : "");
            EXPECT_EQ(a.path, b.path) << which;
            EXPECT_EQ(a.key[0].slots, b.key[0].slots) << which;
            EXPECT_EQ(a.key[0].workgroup_size, b.key[0].workgroup_size) << which;
            EXPECT_EQ(a.key[0].vec, b.key[0].vec) << which;
        }
    }
    Problem log = rows_of(4096, 1024, Dtype::bf16);
    log.log = true;
    EXPECT_EQ(plan_geometry(d, log).key[0].slots, 8u) << "bf16 log-softmax 4096x1024: 8 slots, as fp16";
}

// The attention modules' options in the pipeline key: ALIBI only with a
// max_bias over 0, MASK_PER_HEAD only for a mask with a batch or head
// dimension over 1 (a (query rows, n) mask broadcast over both takes the
// module that finds its mask row from the query row alone).
// Log-softmax modules guard against x - m overflowing only at T > 1 (at
// T <= 1 the overflow to -inf is the right output); softmax, attention
// (T = 1, the temperature joins the scale) and the backward pass never.
TEST(Plan, LogOverflowGuardOnlyAboveUnitTemperature) {
    const DeviceInfo d = h200();
    for (double temperature : {0.25, 1.0, 3.0})
        for (bool log : {false, true}) {
            Problem p = rows_of(4096, 1024, Dtype::f16);
            p.log = log;
            p.temperature = temperature;
            const PipelineKey key = plan_geometry(d, p).key[0];
            EXPECT_EQ(key.log_overflow_guard, log && temperature > 1.0)
                << (log ? "log-softmax" : "softmax") << " at T = " << temperature << ": " << key.id();
            Problem attention = p;
            attention.attention.heads = 8;
            attention.attention.query_rows = 512;
            attention.attention.causal = true;
            EXPECT_FALSE(plan_geometry(d, attention).key[0].log_overflow_guard)
                << "causal attention at T = " << temperature;
            Problem backward = p;
            backward.backward = true;
            EXPECT_FALSE(plan_geometry(d, backward).key[0].log_overflow_guard) << "backward at T = " << temperature;
        }
    Problem hot = rows_of(4096, 1024, Dtype::f32);
    hot.log = true;
    Problem warm = hot;
    hot.temperature = 3.0;
    EXPECT_NE(plan_geometry(d, hot).key[0].id(), plan_geometry(d, warm).key[0].id())
        << "guarded and unguarded log-softmax modules must be told apart";
}

TEST(Plan, AttentionModuleOptions) {
    const DeviceInfo d = h200();
    Problem p = rows_of(8 * 32 * 512, 512, Dtype::f16);
    p.attention.heads = 32;
    p.attention.query_rows = 512;
    p.attention.mask = true;
    p.attention.mask_dtype = Dtype::f16;
    const PipelineKey broadcast = plan_geometry(d, p).key[0];
    EXPECT_TRUE(broadcast.attention);
    EXPECT_FALSE(broadcast.alibi) << "(512, 512) mask, no ALiBi";
    EXPECT_FALSE(broadcast.mask_per_head) << "(512, 512) mask broadcast over batch 8 and 32 heads";

    Problem heads = p;
    heads.attention.mask_heads = 4;
    EXPECT_TRUE(plan_geometry(d, heads).key[0].mask_per_head) << "mask of 4 heads";
    Problem batch = p;
    batch.attention.mask_batch = 2;
    EXPECT_TRUE(plan_geometry(d, batch).key[0].mask_per_head) << "mask of batch 2";

    Problem alibi = p;
    alibi.attention.alibi_max_bias = 8.0;
    const PipelineKey sloped = plan_geometry(d, alibi).key[0];
    EXPECT_TRUE(sloped.alibi) << "max_bias 8";
    EXPECT_FALSE(sloped.mask_per_head);
    EXPECT_NE(sloped.id(), broadcast.id()) << "ALiBi and plain masked modules must be told apart";

    Problem causal = p;
    causal.attention.mask = false;
    causal.attention.causal = true;
    const PipelineKey no_mask = plan_geometry(d, causal).key[0];
    EXPECT_FALSE(no_mask.alibi);
    EXPECT_FALSE(no_mask.mask_per_head) << "no mask buffer, causal only";
}

// Attention modules without a mask take their scale in the exp (push
// constant inv_t = s, the statistic of x) except for log-softmax or sinks
// at s < 1; with a mask, or in those cases, inv_t is 1 and the scale is
// applied as each element loads. The temperature joins the scale.
TEST(Plan, AttentionScaleInTheExpOnlyWithoutAMask) {
    const DeviceInfo d = h200();
    struct Case {
        bool mask, log, sinks;
        double scale, temperature;
        bool in_exp;
    };
    const Case cases[] = {
        {false, false, false, 0.125, 1.0, true},  {false, true, false, 0.125, 1.0, false},
        {false, true, false, 2.0, 1.0, true},     {false, false, true, 0.125, 1.0, false},
        {false, false, true, 2.0, 1.0, true},     {false, true, true, 1.0, 1.0, true},
        {false, false, false, 1.0, 4.0, true},    {false, true, false, 1.0, 4.0, false},
        {true, false, false, 0.125, 1.0, false},  {true, false, false, 2.0, 1.0, false},
    };
    for (const Case& c : cases) {
        Problem p = rows_of(8 * 512, 512, Dtype::f16);
        p.attention.heads = 8;
        p.attention.query_rows = 512;
        p.attention.causal = !c.mask;
        p.attention.mask = c.mask;
        p.attention.sinks = c.sinks;
        p.log = c.log;
        p.scale = c.scale;
        p.temperature = c.temperature;
        const Plan plan = plan_geometry(d, p);
        const std::string what = std::string(c.mask ? "mask" : "causal") + (c.log ? " log" : "") +
                                 (c.sinks ? " sinks" : "") + " scale " + std::to_string(c.scale) + " T " +
                                 std::to_string(c.temperature);
        EXPECT_EQ(plan.key[0].scale_in_exp, c.in_exp) << what << ": " << plan.key[0].id();
        const float multiplier = static_cast<float>(c.scale / c.temperature);
        EXPECT_EQ(plan.push.inv_t, c.in_exp ? multiplier : 1.0f) << what;
        EXPECT_EQ(plan.push.attention.scale, multiplier) << what;
        EXPECT_FALSE(plan.key[0].log_overflow_guard) << what;
    }
}

// Masked attention rows go query-major where head-major order would read a
// mask row again only after more than kQueryMajorReuseBytes (16 MiB): with
// one mask for every head, the mask plus a head's rows of x in and out
// (f16 (1, 32, 1536, 1536) with an fp16 mask 4.5 + 9 MiB, head-major; f32
// 4.5 + 18, query-major); a padding mask per batch the same; a mask per
// head shared by the batches, every head's; a mask of fewer rows than the
// query rows, its own rows within a head. A mask per batch and head is
// read once (no order helps), nor is causal without a mask; the chunked
// paths keep the tensor's order; a forced order wins where the problem can
// take it.
TEST(Plan, QueryMajorOrderWhereTheMaskLeavesTheCache) {
    const DeviceInfo d = h200();
    auto masked = [](uint64_t heads, uint64_t n, Dtype dtype, Dtype mask_dtype) {
        return masked_attention(1, heads, n, dtype, mask_dtype);
    };
    struct Case {
        const char* what;
        Problem problem;
        bool query_major;
    };
    // Query rows of 1024 over n columns, f16 with an fp32 mask: 8 * 1024 * n
    // bytes between two reads of a mask row, 16 MiB at n = 2048.
    auto at_bound = [&](uint64_t n) {
        Problem p = masked(32, n, Dtype::f16, Dtype::f32);
        p.shape.outer = 32 * 1024;
        p.attention.query_rows = 1024;
        return p;
    };
    Problem per_head = masked(32, 2048, Dtype::f32, Dtype::f16);
    per_head.attention.mask_heads = 32;
    // (2, 32, n, n): a mask per batch (2, 1, n, n), per head (1, 32, n, n),
    // per batch and head (2, 32, n, n).
    auto batch_of_two = [&](uint64_t n, Dtype dtype, uint64_t mask_batch, uint64_t mask_heads) {
        Problem p = masked(32, n, dtype, Dtype::f16);
        p.shape.outer *= 2;
        p.attention.mask_batch = mask_batch;
        p.attention.mask_heads = mask_heads;
        return p;
    };
    Problem one_mask_row = masked(32, 2048, Dtype::f32, Dtype::f16);
    one_mask_row.attention.mask_rows = 1;
    Problem causal = masked(32, 2048, Dtype::f32, Dtype::f16);
    causal.attention.mask = false;
    causal.attention.causal = true;
    const Case cases[] = {
        {"f32 2048, fp16 mask (40 MiB)", masked(32, 2048, Dtype::f32, Dtype::f16), true},
        {"f16 2048, fp16 mask (24 MiB)", masked(32, 2048, Dtype::f16, Dtype::f16), true},
        {"bf16 2048, bf16 mask (24 MiB)", masked(32, 2048, Dtype::bf16, Dtype::bf16), true},
        {"f32 1536, fp16 mask (22.5 MiB)", masked(32, 1536, Dtype::f32, Dtype::f16), true},
        {"f16 1536, fp16 mask (13.5 MiB)", masked(32, 1536, Dtype::f16, Dtype::f16), false},
        {"f16 4096, fp16 mask (96 MiB)", masked(8, 4096, Dtype::f16, Dtype::f16), true},
        {"f32 1024, fp16 mask (10 MiB)", masked(64, 1024, Dtype::f32, Dtype::f16), false},
        {"f32 512, fp16 mask (2.5 MiB)", masked(256, 512, Dtype::f32, Dtype::f16), false},
        {"f16 1024 x 2048, fp32 mask (16 MiB: at the bound, not past)", at_bound(2048), false},
        {"f16 1024 x 2056, fp32 mask (just past)", at_bound(2056), true},
        {"f32 2048, a mask per head, batch 1 (read once)", per_head, false},
        {"f32 (2, 32, 2048, 2048), a mask per batch (40 MiB)", batch_of_two(2048, Dtype::f32, 2, 1), true},
        {"f16 (2, 32, 1536, 1536), a mask per batch (13.5 MiB)", batch_of_two(1536, Dtype::f16, 2, 1), false},
        {"f16 (2, 32, 512, 512), a mask per head (32 heads of 1.5 MiB)", batch_of_two(512, Dtype::f16, 1, 32), true},
        {"f16 (2, 32, 2048, 2048), a mask per batch and head (read once)", batch_of_two(2048, Dtype::f16, 2, 32), false},
        {"f32 2048, a mask of one row (20 KiB)", one_mask_row, false},
        {"f32 2048, causal without a mask", causal, false},
    };
    for (const Case& c : cases) {
        const Plan plan = plan_geometry(d, c.problem);
        EXPECT_EQ(plan.key[0].query_major, c.query_major) << c.what << ": " << plan.key[0].id();
        if (c.query_major) {
            EXPECT_EQ(plan.push.attention.query_slices, c.problem.shape.rows() / c.problem.attention.query_rows)
                << c.what;
            EXPECT_NE(plan.key[0].id().find("/query-major"), std::string::npos) << c.what << ": " << plan.key[0].id();
        }
    }

    PlanOptions head_major;
    head_major.row_order = RowOrder::head_major;
    EXPECT_FALSE(plan_geometry(d, cases[0].problem, head_major).key[0].query_major) << "head-major forced";
    PlanOptions query_major;
    query_major.row_order = RowOrder::query_major;
    const Plan forced = plan_geometry(d, masked(32, 1536, Dtype::f16, Dtype::f16), query_major);
    EXPECT_TRUE(forced.key[0].query_major) << "query-major forced on f16 1536";
    EXPECT_EQ(forced.push.attention.query_slices, 32u);
    EXPECT_TRUE(plan_geometry(d, causal, query_major).key[0].query_major) << "query-major forced, causal";
}

// Query-major order takes blocks of query rows: the largest power of two
// dividing the query rows whose block, times the slices between two reads
// of a mask row, passes at most 4 MiB (x in and out and the mask row, per
// query row). Forced blocks must be powers of two dividing the query rows,
// and need query-major order.
TEST(Plan, QueryMajorBlocks) {
    const DeviceInfo d = h200();
    Problem per_head = masked_attention(2, 32, 1024, Dtype::f16, Dtype::f16);
    per_head.attention.mask_heads = 32;
    Problem per_batch = masked_attention(2, 32, 2048, Dtype::f32, Dtype::f16);
    per_batch.attention.mask_batch = 2;
    struct Case {
        const char* what;
        Problem problem;
        uint32_t block;
    };
    const Case cases[] = {
        {"f16 (1, 32, 2048, 2048): 12 KiB a query row", masked_attention(1, 32, 2048, Dtype::f16, Dtype::f16), 256},
        {"bf16 (1, 32, 2048, 2048)", masked_attention(1, 32, 2048, Dtype::bf16, Dtype::bf16), 256},
        {"f32 (1, 32, 2048, 2048), fp16 mask: 20 KiB", masked_attention(1, 32, 2048, Dtype::f32, Dtype::f16), 128},
        {"f16 (1, 8, 4096, 4096): 24 KiB", masked_attention(1, 8, 4096, Dtype::f16, Dtype::f16), 128},
        {"f32 (1, 32, 1536, 1536): 15 KiB", masked_attention(1, 32, 1536, Dtype::f32, Dtype::f16), 256},
        {"f16 (2, 32, 1024, 1024), a mask per head: 32 slices of 6 KiB", per_head, 16},
        {"f32 (2, 32, 2048, 2048), a mask per batch", per_batch, 128},
    };
    for (const Case& c : cases) {
        const Plan plan = plan_geometry(d, c.problem);
        ASSERT_TRUE(plan.key[0].query_major) << c.what << ": " << plan.key[0].id();
        EXPECT_EQ(1u << plan.key[0].query_block_shift, c.block) << c.what << ": " << plan.key[0].id();
        EXPECT_NE(plan.key[0].id().find("/block" + std::to_string(c.block)), std::string::npos)
            << c.what << ": " << plan.key[0].id();
    }

    PlanOptions query_major;
    query_major.row_order = RowOrder::query_major;
    Problem thousand = masked_attention(1, 32, 1000, Dtype::f16, Dtype::f16);
    EXPECT_EQ(plan_geometry(d, thousand, query_major).key[0].query_block_shift, 3u)
        << "1000 query rows, forced: blocks of 8, the largest power of two dividing them";
    Problem causal = masked_attention(1, 32, 2048, Dtype::f32, Dtype::f16);
    causal.attention.mask = false;
    causal.attention.causal = true;
    EXPECT_EQ(plan_geometry(d, causal, query_major).key[0].query_block_shift, 0u) << "causal, no mask: blocks of 1";
    PlanOptions forced = query_major;
    forced.query_block = 64;
    EXPECT_EQ(plan_geometry(d, cases[0].problem, forced).key[0].query_block_shift, 6u) << "blocks of 64 forced";

    auto expect_refused = [&](const Problem& p, uint32_t block, const PlanOptions& base, const std::string& says) {
        PlanOptions o = base;
        o.query_block = block;
        try {
            plan_geometry(d, p, o);
            ADD_FAILURE() << "blocks of " << block << ": planned, want invalid_argument";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << "blocks of " << block << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << "blocks of " << block << ": " << e.what();
        }
    };
    expect_refused(cases[0].problem, 3, query_major, "want a power of two dividing the 2048 query rows");
    expect_refused(cases[0].problem, 4096, query_major, "want a power of two dividing the 2048 query rows");
    expect_refused(thousand, 16, query_major, "dividing the 1000 query rows");
    expect_refused(thousand, 8, PlanOptions{}, "the rows are taken head-major");
}

// Query-major order forced where it cannot be: no attention options, the
// chunked paths, ranges that cut a (batch, head) slice; each refusal says
// why.
TEST(Plan, QueryMajorOrderRefusals) {
    const DeviceInfo d = h200();
    PlanOptions query_major;
    query_major.row_order = RowOrder::query_major;
    auto expect_refused = [&](const Problem& p, const PlanOptions& o, const std::string& what, const std::string& says) {
        try {
            plan_geometry(d, p, o);
            ADD_FAILURE() << what << ": planned, want invalid_argument";
        } catch (const Error& e) {
            EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << what << ": " << e.what();
            EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << what << ": " << e.what();
        }
    };
    expect_refused(rows_of(64, 512), query_major, "no attention options", "without attention options");
    Problem p = rows_of(4 * 6, 512);
    p.attention.heads = 4;
    p.attention.query_rows = 6;
    p.attention.causal = true;
    PlanOptions split = query_major;
    split.path = Path::split;
    expect_refused(p, split, "split path", "takes the split path");
    PlanOptions ranges = query_major;
    ranges.max_range_bytes = 8 * 512 * 4;  // 8 rows a range: slices of 6 cut
    expect_refused(p, ranges, "ranges of 8 rows", "in ranges of 8 rows, slices of 6");
    ranges.max_range_bytes = 12 * 512 * 4;  // 12 rows: two slices a range
    const Plan whole = plan_geometry(d, p, ranges);
    EXPECT_TRUE(whole.key[0].query_major) << "ranges of two slices";
    EXPECT_EQ(whole.ranges, 2u);
    EXPECT_EQ(whole.push.attention.query_slices, 2u);
}

// Split rows: chunks of whole tiles (4 slots x 256 invocations = 4096
// elements), about 1024 work items over all rows and at most 512 chunks a
// row; a 16-byte partial per item in the workspace.
TEST(Plan, SplitChunks) {
    const DeviceInfo d = h200();
    const Plan one = plan_geometry(d, rows_of(1, 1u << 24));
    ASSERT_EQ(one.path, Path::split);
    EXPECT_EQ(one.passes, 2u);
    EXPECT_EQ(one.key[0].kind, ShaderKind::split_statistics);
    EXPECT_EQ(one.key[1].kind, ShaderKind::split_normalize);
    EXPECT_EQ(one.push.chunks, 512u);
    EXPECT_EQ(one.push.chunk, 32768u);
    EXPECT_EQ(one.workspace_bytes, 512u * 16);

    // 1024 items over 16 rows would be 64 chunks of 2048: rounded up to a
    // whole tile, 32 chunks of 4096.
    const Plan many = plan_geometry(d, rows_of(16, 131072));
    EXPECT_EQ(many.push.chunk, 4096u);
    EXPECT_EQ(many.push.chunks, 32u);
    EXPECT_EQ(many.groups, 16u * 32);
}

// Overrides and what no device can hold: errors, not plans.
TEST(Plan, RejectsWhatItCannotPlan) {
    const DeviceInfo d = h200();
    PlanOptions odd;
    odd.workgroup_size = 96;
    try {
        plan_geometry(d, rows_of(4, 1000), odd);
        FAIL() << "a workgroup size of 96 was accepted";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << e.what();
    }
    PlanOptions sixteen;
    sixteen.subgroup_size = 16;
    EXPECT_THROW(plan_geometry(d, rows_of(4, 1000), sixteen), Error) << "subgroup size 16 outside the device's 32..32";
    Problem half = rows_of(4, 1000, Dtype::f16);
    DeviceInfo no16 = h200();
    no16.storage_16bit = false;
    EXPECT_THROW(plan_geometry(no16, half), Error) << "fp16 without storageBuffer16BitAccess";
    EXPECT_THROW(plan_geometry(d, rows_of(1, 1ull << 31)), Error) << "8 GiB of fp32 over a 4 GiB buffer range";
    const Plan empty = plan_geometry(d, rows_of(0, 128));
    EXPECT_EQ(empty.passes, 0u);
}

namespace {
// Plan options forcing a path and its slot count.
PlanOptions forced_slots(Path path, uint32_t slots) {
    PlanOptions o;
    o.path = path;
    o.slots = slots;
    return o;
}
}  // namespace

// Forced geometries stay within the vec4 slots the plan's own largest
// workgroups hold (1024 x 8, 512 x 16): past them, NVIDIA 580.159.04 built
// 16-bit workgroup rows into wrong pipelines. A workgroup size forced with
// them is refused; slots forced alone halve the plan's workgroup. Every
// planned geometry is within them too, forward and backward, in every
// storage type.
TEST(Plan, ForcedGeometryWithinTheSlotsAWorkgroupHolds) {
    const DeviceInfo d = h200();
    struct Forced {
        uint32_t workgroup_size, slots;
        bool accepted;
    };
    for (const Forced f : {Forced{1024, 16, false}, Forced{1024, 9, false}, Forced{0, 17, false},
                           Forced{1024, 8, true}, Forced{512, 16, true}, Forced{1024, 0, true}}) {
        PlanOptions o;
        o.path = Path::workgroup_row;
        o.workgroup_size = f.workgroup_size;
        o.slots = f.slots;
        const std::string which =
            "workgroup rows forced to " + std::to_string(f.workgroup_size) + " x " + std::to_string(f.slots) + " slots";
        for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16}) {
            const Problem p = rows_of(1, 4096, dt);
            if (f.accepted) {
                const Plan plan = plan_geometry(d, p, o);
                EXPECT_LE(plan.key[0].workgroup_size * plan.key[0].slots, 8192u) << which << ", " << dtype_name(dt);
                continue;
            }
            try {
                plan_geometry(d, p, o);
                ADD_FAILURE() << which << ", " << dtype_name(dt) << ": accepted";
            } catch (const Error& e) {
                EXPECT_EQ(e.kind(), ErrorKind::invalid_argument) << which << ": " << e.what();
            }
        }
    }
    // Slots forced alone on a row the plan gives 1024 invocations: the
    // workgroup halves to 512.
    const Plan halved = plan_geometry(d, rows_of(3, 40000), forced_slots(Path::workgroup_row, 16));
    EXPECT_EQ(halved.key[0].workgroup_size, 512u) << "f32 3x40000 forced to 16 slots";
    EXPECT_EQ(halved.key[0].slots, 16u) << "f32 3x40000 forced to 16 slots";
    const DeviceInfo counted = counted_h100();
    for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16})
        for (bool backward : {false, true})
            for (uint64_t cols : {1, 7, 128, 1000, 2048, 4097, 12888, 16384, 20000, 32768, 65536, 1000003})
                for (uint64_t rows : {1, 2, 4, 7, 8, 256, 4096}) {
                    Problem p = rows_of(rows, cols, dt);
                    p.backward = backward;
                    const Plan plan = plan_geometry(counted, p);
                    for (uint32_t pass = 0; pass < plan.passes; ++pass)
                        EXPECT_LE(plan.key[pass].workgroup_size * plan.key[pass].slots, 8192u)
                            << (backward ? "backward " : "") << dtype_name(dt) << " " << rows << "x" << cols
                            << ", dispatch " << pass << ": " << plan.key[pass].workgroup_size << " x "
                            << plan.key[pass].slots << " slots";
                }
}

// Slots forced past what holds a row are cut to what does, on both row
// paths: the tile still holds the row and one step fewer would not (two
// where the forced count is even: an even count stays even, so that
// 16-bit rows keep their 16-byte accesses, and a row of 8 forced to 2
// slots still takes one). Counts that leave the tile shorter than the row
// are kept (the row is read in tiles). On NVIDIA 580.159.04 workgroup
// rows of 700-1500 elements at 64 x 7-16 slots gave NaN rows (bench/NOTES.md, v51).
TEST(Plan, ForcedSlotsCutToTheRow) {
    const DeviceInfo d = h200();
    const Plan cut = plan_geometry(d, rows_of(3, 1000), forced_slots(Path::workgroup_row, 9));
    EXPECT_EQ(cut.key[0].workgroup_size, 64u) << "f32 3x1000, workgroup rows forced to 9 slots";
    EXPECT_EQ(cut.key[0].slots, 4u) << "f32 3x1000, workgroup rows forced to 9 slots: 4 x 64 x 4 holds the row";
    const Plan pair = plan_geometry(d, rows_of(3, 8, Dtype::f16), forced_slots(Path::workgroup_row, 2));
    EXPECT_EQ(pair.key[0].slots, 2u) << "f16 3x8, workgroup rows forced to 2 slots: one 16-byte access a lane";
    EXPECT_EQ(pair.key[0].vec, 8u) << "f16 3x8, workgroup rows forced to 2 slots";
    for (Path path : {Path::workgroup_row, Path::subgroup_row})
        for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16})
            for (uint64_t cols : {700, 1000, 1500, 4096})
                for (uint32_t forced = 1; forced <= 16; ++forced) {
                    const Plan plan = plan_geometry(d, rows_of(3, cols, dt), forced_slots(path, forced));
                    const PipelineKey& k = plan.key[0];
                    const uint64_t lanes = path == Path::subgroup_row ? d.subgroup_size : k.workgroup_size;
                    const uint64_t window = cols + (k.odd_rows ? k.vec - 1 : 0);
                    const uint32_t step = forced % 2 == 0 ? 2 : 1;
                    const std::string which = std::string(path_name(path)) + " " + dtype_name(dt) + " 3x" +
                                              std::to_string(cols) + " forced to " + std::to_string(forced) +
                                              " slots, planned " + std::to_string(k.slots);
                    EXPECT_LE(k.slots, forced) << which;
                    if (forced % 2 == 0) {
                        EXPECT_EQ(k.slots % 2, 0u) << which << ": an even count made odd";
                    }
                    if (4ull * forced * lanes < cols) {
                        EXPECT_EQ(k.slots, forced) << which << ": a tile shorter than the row keeps its count";
                        continue;
                    }
                    EXPECT_GE(4ull * k.slots * lanes, window) << which << ": the tile no longer holds the row";
                    if (k.slots > step) {
                        EXPECT_LT(4ull * (k.slots - step) * lanes, window) << which << ": not cut";
                    }
                }
}

// A shape, storage type and the path a rule must choose for it.
struct PathCase {
    uint64_t rows, cols;
    Dtype dtype;
    Path want;
};

// Each case's path on `d`, forward or backward.
void expect_paths(const DeviceInfo& d, const std::vector<PathCase>& cases, bool backward) {
    for (const PathCase& c : cases) {
        Problem p = rows_of(c.rows, c.cols, c.dtype);
        p.backward = backward;
        const Path got = choose_path(d, p);
        EXPECT_EQ(got, c.want) << (backward ? "backward " : "") << c.rows << "x" << c.cols << " "
                               << dtype_name(c.dtype) << ": " << path_name(got) << ", want " << path_name(c.want);
    }
}

// A problem and the single-pass geometry its plan must have.
struct WaveCase {
    uint64_t rows, cols;
    Dtype dtype;
    uint32_t chunk, workgroups, workgroup_size, slots;
};

// The plan of `c`'s problem on `d`, backward or forward: the single-pass
// path, its chunk, grid, workgroup and slots; where `held`, each chunk in
// one tile of the plan's slots and the last chunk not empty.
void expect_wave_geometry(const DeviceInfo& d, const WaveCase& c, bool held, bool backward) {
    Problem p = rows_of(c.rows, c.cols, c.dtype);
    p.backward = backward;
    const Plan plan = plan_geometry(d, p);
    const std::string what = (backward ? "backward " : "forward ") + std::to_string(c.rows) + "x" +
                             std::to_string(c.cols) + " " + dtype_name(c.dtype) + ": " + path_name(plan.path) + ", " +
                             std::to_string(plan.groups) + " workgroups of " + std::to_string(plan.key[0].workgroup_size) + " x " +
                             std::to_string(plan.key[0].slots) + ", chunks of " + std::to_string(plan.push.chunk);
    ASSERT_EQ(plan.path, Path::single_pass) << what;
    EXPECT_EQ(plan.push.chunk, c.chunk) << what;
    EXPECT_EQ(plan.groups, c.workgroups) << what;
    EXPECT_EQ(plan.key[0].workgroup_size, c.workgroup_size) << what;
    EXPECT_EQ(plan.key[0].slots, c.slots) << what;
    if (!held) return;
    EXPECT_LE(plan.push.chunk, 4 * plan.key[0].slots * plan.key[0].workgroup_size) << what << ": not held in one tile";
    EXPECT_LT(uint64_t{plan.push.chunks - 1} * plan.push.chunk, c.cols) << what << ": the last chunk is empty";
}

}  // namespace

// How NaN and +inf are found: by the row's sum on NVIDIA's driver (whose
// exp2 gives 0 for -inf and NaN for NaN), element by element on drivers
// not known to, and by the option where it says; never for the backward
// pass or Precision::accurate, whose modules test each element.
TEST(Plan, NonfiniteFoundBySumWhereTheDriverAllows) {
    const NonfiniteRule nvidia = nonfinite_rule(h200());
    EXPECT_TRUE(nvidia.by_sum);
    EXPECT_NE(nvidia.reason.find("NVIDIA"), std::string::npos) << nvidia.reason;
    const DeviceInfo llvmpipe = as_llvmpipe(h200());
    const NonfiniteRule other = nonfinite_rule(llvmpipe);
    EXPECT_FALSE(other.by_sum);
    EXPECT_NE(other.reason.find("each element"), std::string::npos) << other.reason;
    EXPECT_TRUE(nonfinite_rule(llvmpipe, NonfiniteCheck::by_sum).by_sum);
    EXPECT_FALSE(nonfinite_rule(h200(), NonfiniteCheck::each_element).by_sum);

    for (uint64_t cols : {10u, 1024u, 4096u, 65536u}) {
        const Problem p = rows_of(64, cols, Dtype::f16);
        const Plan plan = plan_geometry(h200(), p);
        for (uint32_t pass = 0; pass < plan.passes; ++pass)
            EXPECT_TRUE(plan.key[pass].nonfinite_by_sum) << what(p) << " pass " << pass << ": " << plan.key[pass].id();
        EXPECT_FALSE(plan_geometry(llvmpipe, p).key[0].nonfinite_by_sum) << what(p);
        PlanOptions each;
        each.rules.nonfinite = NonfiniteCheck::each_element;
        EXPECT_FALSE(plan_geometry(h200(), p, each).key[0].nonfinite_by_sum) << what(p);
        Problem accurate = p;
        accurate.precision = Precision::accurate;
        EXPECT_FALSE(plan_geometry(h200(), accurate).key[0].nonfinite_by_sum) << what(p) << " accurate";
        Problem backward = p;
        backward.backward = true;
        EXPECT_FALSE(plan_geometry(h200(), backward).key[0].nonfinite_by_sum) << what(p) << " backward";
    }
}

// A subgroup's max on integer keys: for forward single rows on the
// single-pass and workgroup-row paths on NVIDIA's driver (plain and
// log-softmax, every storage type; not 16-bit single-pass chunks of 8
// slots, nor single-pass workgroups of 512), nowhere else by itself: not batches,
// the backward pass, attention options, the subgroup-row and split paths,
// the shared-memory reduction or drivers not measured. The option forces
// either form on forward single-pass and workgroup-row problems without
// attention options. The rule itself reads the driver and the row count,
// and says why.
TEST(Plan, SubgroupMaxRuleNamesTheDriver) {
    const DeviceInfo nv = counted_h100();
    const SubgroupMaxRule nvidia = subgroup_max_rule(nv, 1);
    EXPECT_TRUE(nvidia.by_key);
    EXPECT_NE(nvidia.reason.find("NVIDIA"), std::string::npos) << nvidia.reason;
    EXPECT_FALSE(subgroup_max_rule(nv, 2).by_key) << "a batch of two rows";
    const DeviceInfo llvmpipe = as_llvmpipe(nv);
    const SubgroupMaxRule other = subgroup_max_rule(llvmpipe, 1);
    EXPECT_FALSE(other.by_key);
    EXPECT_NE(other.reason.find("not measured"), std::string::npos) << other.reason;
    EXPECT_TRUE(subgroup_max_rule(llvmpipe, 16, SubgroupMax::integer_keys).by_key);
    EXPECT_FALSE(subgroup_max_rule(nv, 1, SubgroupMax::float_max).by_key);
}

// Single rows in single-pass chunks, and batches of them (only when
// forced); see SubgroupMaxRuleNamesTheDriver.
TEST(Plan, SubgroupMaxOnIntegerKeysForSingleRows) {
    const DeviceInfo nv = counted_h100();
    DeviceInfo shared_memory = nv;
    shared_memory.subgroup_ops = VK_SUBGROUP_FEATURE_BASIC_BIT;
    const DeviceInfo llvmpipe = as_llvmpipe(nv);
    for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16})
        for (uint64_t cols : {32768u, 131072u, 524288u})
            for (bool log : {false, true}) {
                Problem p = rows_of(1, cols, dt);
                p.log = log;
                const std::string row = what(p) + (log ? " log" : "");
                const Plan plan = plan_geometry(nv, p);
                ASSERT_EQ(plan.path, Path::single_pass) << row;
                // 16-bit chunks of 8 slots (1x524288 at 256 x 8) keep float
                // maxima, measured faster there.
                const bool keys = dt == Dtype::f32 || plan.key[0].slots <= 4;
                EXPECT_EQ(plan.key[0].subgroup_max_by_key, keys) << row << ": " << plan.key[0].id();
                const bool named = plan.key[0].id().find("/max-by-key") != std::string::npos;
                EXPECT_EQ(named, keys) << row << ": " << plan.key[0].id();
                EXPECT_FALSE(plan_geometry(llvmpipe, p).key[0].subgroup_max_by_key) << row << " on llvmpipe";
                PlanOptions as_float;
                as_float.rules.subgroup_max = SubgroupMax::float_max;
                EXPECT_FALSE(plan_geometry(nv, p, as_float).key[0].subgroup_max_by_key) << row << " forced float";
                Problem backward = p;
                backward.backward = true;
                EXPECT_FALSE(plan_geometry(nv, backward).key[0].subgroup_max_by_key) << row << " backward";
                Problem attention = p;
                attention.attention.heads = 1;
                attention.attention.query_rows = 1;
                attention.attention.causal = true;
                EXPECT_FALSE(plan_geometry(nv, attention).key[0].subgroup_max_by_key) << row << " causal";
                EXPECT_FALSE(plan_geometry(shared_memory, p).key[0].subgroup_max_by_key) << row << " shared memory";
            }
    PlanOptions keys;
    keys.rules.subgroup_max = SubgroupMax::integer_keys;
    // 16-bit single rows in chunks of 8 slots: float maxima unless forced;
    // at 512 invocations (whose key modules would run float maxima) float
    // either way. fp32 chunks of 8 slots take the keys.
    struct EightSlotRow {
        Dtype dtype;
        uint64_t cols;
        uint32_t workgroup;
        bool automatic, forced;
    };
    for (const EightSlotRow& c : {EightSlotRow{Dtype::f16, 1048576, 256, false, true},
                                  EightSlotRow{Dtype::bf16, 1048576, 256, false, true},
                                  EightSlotRow{Dtype::bf16, 2097152, 512, false, false},
                                  EightSlotRow{Dtype::f32, 1048576, 256, true, true}}) {
        const Problem row = rows_of(1, c.cols, c.dtype);
        const Plan plan = plan_geometry(nv, row);
        ASSERT_EQ(plan.path, Path::single_pass) << what(row);
        ASSERT_EQ(plan.key[0].slots, 8u) << what(row) << ": " << plan.key[0].id();
        ASSERT_EQ(plan.key[0].workgroup_size, c.workgroup) << what(row) << ": " << plan.key[0].id();
        EXPECT_EQ(plan.key[0].subgroup_max_by_key, c.automatic) << what(row) << ": " << plan.key[0].id();
        EXPECT_EQ(plan_geometry(nv, row, keys).key[0].subgroup_max_by_key, c.forced) << what(row) << " forced keys";
    }
    for (const Problem& batch : {rows_of(16, 131072), rows_of(8, 131072, Dtype::f16), rows_of(32, 32768, Dtype::bf16)}) {
        const Plan plan = plan_geometry(nv, batch);
        ASSERT_EQ(plan.path, Path::single_pass) << what(batch);
        EXPECT_FALSE(plan.key[0].subgroup_max_by_key) << what(batch) << ": " << plan.key[0].id();
        EXPECT_TRUE(plan_geometry(nv, batch, keys).key[0].subgroup_max_by_key) << what(batch) << " forced keys";
    }
}

// Single rows a workgroup holds take integer keys too, batches of such
// rows only when forced; never where a subgroup holds a row, nor on the
// split path, forced or not.
TEST(Plan, SubgroupMaxOnIntegerKeysForHeldRows) {
    const DeviceInfo nv = counted_h100();
    const DeviceInfo llvmpipe = as_llvmpipe(nv);
    PlanOptions keys;
    keys.rules.subgroup_max = SubgroupMax::integer_keys;
    for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16})
        for (uint64_t cols : {2048u, 4096u, 8192u}) {
            const Problem row = rows_of(1, cols, dt);
            const Plan plan = plan_geometry(nv, row);
            ASSERT_EQ(plan.path, Path::workgroup_row) << what(row);
            EXPECT_TRUE(plan.key[0].subgroup_max_by_key) << what(row) << ": " << plan.key[0].id();
            EXPECT_FALSE(plan_geometry(llvmpipe, row).key[0].subgroup_max_by_key) << what(row) << " on llvmpipe";
            const Problem batch = rows_of(64, cols, dt);
            ASSERT_EQ(plan_geometry(nv, batch).path, Path::workgroup_row) << what(batch);
            EXPECT_FALSE(plan_geometry(nv, batch).key[0].subgroup_max_by_key) << what(batch);
            EXPECT_TRUE(plan_geometry(nv, batch, keys).key[0].subgroup_max_by_key) << what(batch) << " forced keys";
        }
    PlanOptions split = keys;
    split.path = Path::split;
    for (const auto& [problem, options] : {std::pair<Problem, PlanOptions>{rows_of(1, 1000), PlanOptions{}},
                                           {rows_of(1, 1000), keys}, {rows_of(4096, 1024), keys},
                                           {rows_of(1, 131072), split}}) {
        const Plan plan = plan_geometry(nv, problem, options);
        EXPECT_TRUE(plan.path == Path::subgroup_row || plan.path == Path::split) << what(problem) << " on " << path_name(plan.path);
        EXPECT_FALSE(plan.key[0].subgroup_max_by_key) << what(problem) << " on " << path_name(plan.path);
    }
}

// A per-driver rule (`rule`, whose `field` says whether it takes its
// form): taken on NVIDIA's driver, with a reason that names it; not on
// llvmpipe, whose reason says it was not measured; `on` forces it there
// and `off` leaves it out on NVIDIA's.
template <class Rule, class Choice>
void expect_nvidia_rule(const DeviceInfo& nv, Rule (*rule)(const DeviceInfo&, Choice), bool Rule::*field, Choice on,
                        Choice off) {
    const Rule nvidia = rule(nv, Choice::automatic);
    EXPECT_TRUE(nvidia.*field) << nvidia.reason;
    EXPECT_NE(nvidia.reason.find("NVIDIA"), std::string::npos) << nvidia.reason;
    const DeviceInfo llvmpipe = as_llvmpipe(nv);
    const Rule other = rule(llvmpipe, Choice::automatic);
    EXPECT_FALSE(other.*field) << other.reason;
    EXPECT_NE(other.reason.find("not measured"), std::string::npos) << other.reason;
    EXPECT_TRUE(rule(llvmpipe, on).*field) << "forced on llvmpipe: " << rule(llvmpipe, on).reason;
    EXPECT_FALSE(rule(nv, off).*field) << "forced off on NVIDIA's driver: " << rule(nv, off).reason;
}

// Attention subgroup rows load a tile's vectors together on NVIDIA's
// driver, where it was measured faster, and in a branch each elsewhere
// (lavapipe compiles that form faster); the option forces either form.
// Masked and causal rows of 1024 (f16, bf16 and f32) take subgroup rows;
// causal rows of 2048 (workgroup rows) and plain rows of 1024 (no
// attention module) never take the flag, forced or not.
TEST(Plan, TileLoadsTogetherOnNvidiaAttentionSubgroupRows) {
    const DeviceInfo nv = h200();
    expect_nvidia_rule(nv, tile_loads_rule, &TileLoadsRule::together, TileLoads::together, TileLoads::in_branches);
    const DeviceInfo llvmpipe = as_llvmpipe(nv);

    PlanOptions together, in_branches;
    together.rules.tile_loads = TileLoads::together;
    in_branches.rules.tile_loads = TileLoads::in_branches;
    for (Dtype dt : {Dtype::f16, Dtype::bf16, Dtype::f32})
        for (bool causal : {false, true}) {
            Problem p = masked_attention(1, 32, 1024, dt, dt);
            p.attention.mask = !causal;
            p.attention.causal = causal;
            const std::string row = what(p) + (causal ? " causal" : " masked");
            const Plan plan = plan_geometry(nv, p);
            ASSERT_EQ(plan.path, Path::subgroup_row) << row;
            ASSERT_TRUE(plan.key[0].subgroup_rows) << row << ": " << plan.key[0].id();
            EXPECT_TRUE(plan.key[0].tile_loads_together) << row << ": " << plan.key[0].id();
            EXPECT_NE(plan.key[0].id().find("/loads-together"), std::string::npos) << row << ": " << plan.key[0].id();
            EXPECT_FALSE(plan_geometry(llvmpipe, p).key[0].tile_loads_together) << row << " on llvmpipe";
            EXPECT_TRUE(plan_geometry(llvmpipe, p, together).key[0].tile_loads_together) << row << " forced on llvmpipe";
            EXPECT_FALSE(plan_geometry(nv, p, in_branches).key[0].tile_loads_together) << row << " forced in branches";
        }
    Problem wide = masked_attention(1, 32, 2048, Dtype::f16, Dtype::f16);
    wide.attention.mask = false;
    wide.attention.causal = true;
    const Problem plain = rows_of(4096, 1024, Dtype::f16);
    for (const Problem& p : {wide, plain}) {
        const Plan plan = plan_geometry(nv, p, together);
        EXPECT_FALSE(plan.key[0].subgroup_rows && p.attention.any()) << what(p) << ": " << plan.key[0].id();
        EXPECT_FALSE(plan.key[0].tile_loads_together) << what(p) << ": " << plan.key[0].id();
    }
}

// Masked 16-bit rows held by a workgroup at 8 slots or more fetch the
// next row first on NVIDIA's driver, where it was measured faster, in
// batches of kNextRowFirstMinWaves (60) rows per multiprocessor or more, each
// workgroup taking two rows (half the grid); in turn elsewhere. Rows the
// form does not fit never take it, forced or not: a mask per head, causal
// rows, fp32 rows, the backward pass.
TEST(Plan, NextRowFirstForMaskedHalfWorkgroupRowsOnNvidia) {
    const DeviceInfo nv = counted_h100();
    expect_nvidia_rule(nv, row_fetch_rule, &RowFetchRule::next_row_first, RowFetch::next_row_first, RowFetch::in_turn);
    const DeviceInfo llvmpipe = as_llvmpipe(nv);

    PlanOptions next_first, in_turn;
    next_first.rules.row_fetch = RowFetch::next_row_first;
    in_turn.rules.row_fetch = RowFetch::in_turn;
    const Problem rows_2048 = masked_attention(1, 32, 2048, Dtype::f16, Dtype::f16);
    for (const Problem& p : {rows_2048, masked_attention(1, 32, 2048, Dtype::bf16, Dtype::bf16),
                             masked_attention(1, 8, 4096, Dtype::f16, Dtype::f16),
                             masked_attention(1, 8, 4096, Dtype::bf16, Dtype::bf16)}) {
        const Plan plan = plan_geometry(nv, p);
        ASSERT_EQ(plan.path, Path::workgroup_row) << what(p);
        EXPECT_GE(plan.key[0].slots, 8u) << what(p) << ": " << plan.key[0].id();
        EXPECT_TRUE(plan.key[0].next_row_first) << what(p) << ": " << plan.key[0].id();
        EXPECT_NE(plan.key[0].id().find("/next-row-first"), std::string::npos) << what(p) << ": " << plan.key[0].id();
        EXPECT_EQ(plan.groups, p.shape.rows() / 2) << what(p) << ": two rows a workgroup";
        const Plan turn = plan_geometry(nv, p, in_turn);
        EXPECT_FALSE(turn.key[0].next_row_first) << what(p) << " forced in turn";
        EXPECT_EQ(turn.groups, p.shape.rows()) << what(p) << " forced in turn: a row a workgroup";
        EXPECT_FALSE(plan_geometry(llvmpipe, p).key[0].next_row_first) << what(p) << " on llvmpipe";
        EXPECT_FALSE(plan_geometry(h200(), p).key[0].next_row_first)
            << what(p) << " where the multiprocessors are not counted";
    }
    // Few rows: a row a workgroup unless forced.
    const Problem few = masked_attention(1, 1, 2048, Dtype::f16, Dtype::f16);
    EXPECT_FALSE(plan_geometry(nv, few).key[0].next_row_first) << what(few) << ": 15.5 rows per multiprocessor";
    const Problem eight_heads = masked_attention(1, 8, 2048, Dtype::f16, Dtype::f16);
    EXPECT_TRUE(plan_geometry(nv, eight_heads).key[0].next_row_first) << what(eight_heads) << ": 124 rows per multiprocessor";
    const Plan forced = plan_geometry(llvmpipe, few, next_first);
    EXPECT_TRUE(forced.key[0].next_row_first) << what(few) << " forced on llvmpipe: " << forced.key[0].id();
    EXPECT_EQ(forced.groups, 1024u) << what(few) << " forced on llvmpipe";

    Problem per_head = rows_2048;
    per_head.attention.mask_heads = 32;
    Problem causal = rows_2048;
    causal.attention.mask = false;
    causal.attention.causal = true;
    const Problem f32_rows = masked_attention(1, 32, 2048, Dtype::f32, Dtype::f16);
    Problem backward = rows_of(65536, 2048, Dtype::f16);
    backward.backward = true;
    for (const Problem& p : {per_head, causal, f32_rows, backward}) {
        const Plan plan = plan_geometry(nv, p, next_first);
        EXPECT_FALSE(plan.key[0].next_row_first) << what(p) << " forced: " << plan.key[0].id();
        EXPECT_EQ(plan.groups, p.shape.rows()) << what(p) << " forced: a row a workgroup";
    }
}

// Plain rows of 8193-16384 elements, a multiple of 4, in batches of up to
// 16 are shared on NVIDIA's driver, where it was measured faster: 8
// workgroups of 256 a fp32 row, 4 a 16-bit one, each reading the whole
// row, the grid rows x shares. Whole elsewhere and unless the rows fit:
// rows of 8192 or 16388, odd rows, 17 rows, attention options, the
// backward pass, rows along an inner axis.
TEST(Plan, SharedRowsOnNvidia) {
    const DeviceInfo nv = counted_h100();
    expect_nvidia_rule(nv, row_shares_rule, &RowSharesRule::shared, RowShares::shared, RowShares::whole);
    const DeviceInfo llvmpipe = as_llvmpipe(nv);

    PlanOptions shared, whole;
    shared.rules.row_shares = RowShares::shared;
    whole.rules.row_shares = RowShares::whole;
    struct Case {
        uint64_t rows, axis;
        Dtype dtype;
        uint32_t shares, slots;
    };
    for (const Case& c : {Case{1, 16384, Dtype::f32, 8, 16}, Case{16, 16384, Dtype::f32, 8, 16},
                          Case{1, 12288, Dtype::f32, 8, 12}, Case{4, 8196, Dtype::f32, 8, 9},
                          Case{1, 16384, Dtype::f16, 4, 16}, Case{16, 12288, Dtype::bf16, 4, 12}}) {
        Problem p = rows_of(c.rows, c.axis, c.dtype);
        for (bool log : {false, true}) {
            p.log = log;
            const Plan plan = plan_geometry(nv, p);
            ASSERT_EQ(plan.path, Path::workgroup_row) << what(p) << ": " << plan.key[0].id();
            EXPECT_EQ(plan.key[0].kind, ShaderKind::row_in_registers) << what(p) << ": " << plan.key[0].id();
            EXPECT_EQ(plan.key[0].write_shares, c.shares) << what(p) << ": " << plan.key[0].id();
            EXPECT_NE(plan.key[0].id().find("/shares" + std::to_string(c.shares)), std::string::npos) << plan.key[0].id();
            // fp32 log-softmax rows of 16384 in batches: 512 x 8, not 256 x 16.
            const bool wide = log && c.dtype == Dtype::f32 && c.axis == 16384 && c.rows > 1;
            EXPECT_EQ(plan.key[0].workgroup_size, wide ? 512u : 256u) << what(p) << ": " << plan.key[0].id();
            EXPECT_EQ(plan.key[0].slots, wide ? 8u : c.slots) << what(p) << ": " << plan.key[0].id();
            EXPECT_EQ(plan.groups, c.rows * c.shares) << what(p) << ": a workgroup a share";
            const Plan kept = plan_geometry(nv, p, whole);
            EXPECT_EQ(kept.key[0].write_shares, 1u) << what(p) << " forced whole: " << kept.key[0].id();
            EXPECT_EQ(plan_geometry(llvmpipe, p).key[0].write_shares, 1u) << what(p) << " on llvmpipe";
            const Plan forced = plan_geometry(llvmpipe, p, shared);
            EXPECT_EQ(forced.key[0].write_shares, c.shares) << what(p) << " forced on llvmpipe: " << forced.key[0].id();
            EXPECT_EQ(forced.groups, c.rows * c.shares) << what(p) << " forced on llvmpipe";
        }
    }

    Problem backward = rows_of(1, 16384, Dtype::f32);
    backward.backward = true;
    Problem causal = rows_of(1, 16384, Dtype::f16);
    causal.attention.causal = true;
    causal.attention.query_rows = 1;
    Problem inner = rows_of(1, 16384, Dtype::f32);
    inner.shape = Shape{1, 16384, 2};
    for (const Problem& p : {rows_of(1, 8192, Dtype::f32), rows_of(1, 16388, Dtype::f32), rows_of(1, 16383, Dtype::f16),
                             rows_of(1, 12290, Dtype::f32), rows_of(67, 16384, Dtype::f32), rows_of(34, 12288, Dtype::bf16),
                             rows_of(67, 16384, Dtype::f16), backward, causal, inner}) {
        const Plan plan = plan_geometry(nv, p, shared);
        EXPECT_EQ(plan.key[0].write_shares, 1u) << what(p) << " forced: " << plan.key[0].id();
        EXPECT_EQ(plan.key[0].id().find("/shares"), std::string::npos) << what(p) << " forced: " << plan.key[0].id();
    }
    // Batches past 16 rows take half the shares while the shares outnumber
    // the 132 multiprocessors, down to 2 (16-bit rows of 12288 or less: 4).
    for (const Case& c : {Case{17, 16384, Dtype::f32, 4, 16}, Case{33, 12288, Dtype::f32, 4, 12},
                          Case{34, 16384, Dtype::f32, 2, 16}, Case{66, 8196, Dtype::f32, 2, 9},
                          Case{24, 12288, Dtype::f16, 4, 12}, Case{33, 16384, Dtype::f16, 4, 16},
                          Case{34, 16384, Dtype::bf16, 2, 16}, Case{66, 12292, Dtype::f16, 2, 13}}) {
        const Problem p = rows_of(c.rows, c.axis, c.dtype);
        const Plan plan = plan_geometry(nv, p);
        ASSERT_EQ(plan.path, Path::workgroup_row) << what(p) << ": " << plan.key[0].id();
        EXPECT_EQ(plan.key[0].write_shares, c.shares) << what(p) << ": " << plan.key[0].id();
        EXPECT_EQ(plan.key[0].slots, c.slots) << what(p) << ": " << plan.key[0].id();
        EXPECT_EQ(plan.groups, c.rows * c.shares) << what(p) << ": a workgroup a share";
        EXPECT_EQ(plan_geometry(nv, p, whole).key[0].write_shares, 1u) << what(p) << " forced whole";
    }
    // fp32 log-softmax rows of more than 15360 elements in batches of 2-40
    // rows are shared in workgroups of 512 (8 slots), others in 256.
    struct Width {
        uint64_t rows, axis;
        bool log;
        uint32_t workgroup, slots, shares;
    };
    for (const Width& w : {Width{2, 16384, true, 512, 8, 8}, Width{40, 16384, true, 512, 8, 2},
                           Width{41, 16384, true, 256, 16, 2}, Width{1, 16384, true, 256, 16, 8},
                           Width{8, 15364, true, 512, 8, 8}, Width{8, 15360, true, 256, 15, 8},
                           Width{8, 16384, false, 256, 16, 8}}) {
        Problem p = rows_of(w.rows, w.axis, Dtype::f32);
        p.log = w.log;
        const Plan plan = plan_geometry(nv, p);
        EXPECT_EQ(plan.key[0].workgroup_size, w.workgroup) << what(p) << ": " << plan.key[0].id();
        EXPECT_EQ(plan.key[0].slots, w.slots) << what(p) << ": " << plan.key[0].id();
        EXPECT_EQ(plan.key[0].write_shares, w.shares) << what(p) << ": " << plan.key[0].id();
        EXPECT_EQ(plan.groups, w.rows * w.shares) << what(p) << ": a workgroup a share";
    }
    Problem f16_log = rows_of(8, 16384, Dtype::f16);
    f16_log.log = true;
    EXPECT_EQ(plan_geometry(nv, f16_log).key[0].workgroup_size, 256u) << what(f16_log);

    // A forced count, wherever the rows are shared; rows the form does not
    // fit, and shares past the device's grid, stay whole; past 16, refused.
    PlanOptions three = shared;
    three.write_shares = 3;
    const Plan forced_three = plan_geometry(nv, rows_of(100, 16384, Dtype::f16), three);
    EXPECT_EQ(forced_three.key[0].write_shares, 3u) << forced_three.key[0].id();
    EXPECT_EQ(forced_three.groups, 300u) << "100 rows x 3 shares";
    EXPECT_EQ(plan_geometry(nv, rows_of(4, 16383, Dtype::f32), three).key[0].write_shares, 1u)
        << "rows of 16383 forced to 3 shares";
    DeviceInfo narrow_grid = nv;
    narrow_grid.max_workgroup_count[0] = 299;
    EXPECT_EQ(plan_geometry(narrow_grid, rows_of(100, 16384, Dtype::f16), three).key[0].write_shares, 1u)
        << "100 rows x 3 shares on a grid of 299 workgroups";
    PlanOptions too_many = shared;
    too_many.write_shares = 17;
    EXPECT_THROW(plan_geometry(nv, rows_of(1, 16384, Dtype::f32), too_many), Error) << "17 shares";

    // A device that does not count its multiprocessors shares batches of
    // up to 16 rows only.
    const DeviceInfo uncounted = as_llvmpipe(h200());
    ASSERT_EQ(uncounted.multiprocessors, 0u);
    EXPECT_EQ(plan_geometry(uncounted, rows_of(16, 16384, Dtype::f32), shared).key[0].write_shares, 8u)
        << "16 rows on a device that does not count its multiprocessors";
    EXPECT_EQ(plan_geometry(uncounted, rows_of(17, 16384, Dtype::f32), shared).key[0].write_shares, 1u)
        << "17 rows on a device that does not count its multiprocessors";

    // A forced geometry whose tile is shorter than the row holds it in
    // tiles, a workgroup a row.
    PlanOptions short_tile = shared;
    short_tile.workgroup_size = 256;
    short_tile.slots = 4;
    const Problem p = rows_of(2, 16384, Dtype::f32);
    const Plan tiles = plan_geometry(nv, p, short_tile);
    EXPECT_EQ(tiles.key[0].kind, ShaderKind::row_in_tiles) << tiles.key[0].id();
    EXPECT_EQ(tiles.key[0].write_shares, 1u) << tiles.key[0].id();
    EXPECT_EQ(tiles.groups, 2u) << "rows in tiles: a workgroup a row";
    // One whose tile still holds the row keeps the shares at its size.
    PlanOptions wide_tile = shared;
    wide_tile.workgroup_size = 512;
    wide_tile.slots = 8;
    const Plan wide = plan_geometry(nv, p, wide_tile);
    EXPECT_EQ(wide.key[0].kind, ShaderKind::row_in_registers) << wide.key[0].id();
    EXPECT_EQ(wide.key[0].workgroup_size, 512u) << wide.key[0].id();
    EXPECT_EQ(wide.key[0].write_shares, 8u) << wide.key[0].id();
    EXPECT_EQ(wide.groups, 16u) << "2 rows x 8 shares at a forced 512 x 8";
}

// The rule for the single-pass path: the memory model first, then what
// is known of the vendor (taken only where measured faster: on NVIDIA,
// resident batches), then the option; a forced single-pass path the rule
// refuses is an error naming the reason.
TEST(Plan, SinglePassRule) {
    const Problem p = rows_of(1, 131072);
    const SinglePassRule nvidia = single_pass_rule(h200());
    EXPECT_TRUE(nvidia.allowed);
    EXPECT_TRUE(nvidia.resident_batches_only);
    EXPECT_NE(nvidia.reason.find("NVIDIA"), std::string::npos) << nvidia.reason;
    EXPECT_EQ(choose_path(h200(), p), Path::split);
    const PlanOptions allowed = single_pass_allowed();
    EXPECT_EQ(choose_path(h200(), p, allowed), Path::single_pass);
    EXPECT_EQ(choose_path(without_memory_model(), p, allowed), Path::split);
    PlanOptions never;
    never.single_pass = SinglePass::never;
    never.path = Path::single_pass;
    EXPECT_THROW(plan_geometry(h200(), p, never), Error);

    DeviceInfo mali = h200();
    mali.vendor_id = 0x13B5;
    EXPECT_NE(single_pass_rule(mali).reason.find("Arm Mali"), std::string::npos) << single_pass_rule(mali).reason;
    DeviceInfo unknown = h200();
    unknown.vendor_id = 0x1234;
    EXPECT_NE(single_pass_rule(unknown).reason.find("not measured"), std::string::npos) << single_pass_rule(unknown).reason;

    const PlanOptions forced = single_pass_forced();
    EXPECT_EQ(plan_geometry(h200(), p, forced).path, Path::single_pass);
    try {
        plan_geometry(without_memory_model(), p, forced);
        ADD_FAILURE() << "a forced single-pass path without the memory model should be refused";
    } catch (const Error& e) {
        EXPECT_EQ(e.kind(), ErrorKind::unsupported);
        EXPECT_NE(std::string(e.what()).find("vulkanMemoryModel"), std::string::npos) << e.what();
    }
}

// On NVIDIA the automatic rule takes the single-pass path for batches that
// stay resident: at least 8 rows, 6 to 40 MiB (less where held chunks of
// 8192 make at most 3 workgroups per multiprocessor), a grid of at most 4
// workgroups per multiprocessor (chunks of 16384 for batches, longer
// where the rows would leave some of a power-of-two count empty; held
// chunks of 8192 where those make at most 3 per multiprocessor), chunks at
// least 3/4 full, and only where the device says how many multiprocessors
// it has.
TEST(Plan, SinglePassTakesResidentBatches) {
    const DeviceInfo h100 = counted_h100();
    expect_paths(h100, {
        {32, 128256, Dtype::f32, Path::single_pass},  // 16 MB, 8 chunks a row: 256 workgroups
        {32, 128256, Dtype::f16, Path::single_pass},  // 7.8 MiB
        {16, 524288, Dtype::f32, Path::single_pass},  // 32 MiB, 32 chunks a row: 512 workgroups
        {16, 131072, Dtype::f32, Path::single_pass},  // 8 MiB, one wave of held chunks
        {24, 100000, Dtype::f16, Path::single_pass},  // 4.6 MiB, 384 held chunks of 6256
        {14, 139264, Dtype::f16, Path::split},        // 3.7 MiB, 448 chunks of 8192: under 6 MiB, past 3 a multiprocessor
        {128, 151936, Dtype::f16, Path::split},       // 39 MB in 1024 workgroups: past 4 a multiprocessor
        {64, 151936, Dtype::f32, Path::single_pass},  // 39 MB (37.1 MiB) in 512 workgroups
        {66, 151936, Dtype::f32, Path::single_pass},  // 38.3 MiB in 528 workgroups, 4 a multiprocessor
        {68, 151936, Dtype::f32, Path::split},        // 544 workgroups
        {66, 196608, Dtype::f32, Path::split},        // 49.5 MiB in 528 workgroups of 24576: past 40 MiB
        {64, 163840, Dtype::f32, Path::single_pass},  // 40 MiB exactly, 8 chunks of 20480
        {65, 163840, Dtype::f32, Path::split},        // 40.6 MiB
        {1, 1u << 24, Dtype::f16, Path::split},       // one row
        {4, 1u << 21, Dtype::f32, Path::split},       // 4 rows
        {32, 151936, Dtype::f16, Path::single_pass},  // 8 chunks of 20480 a row, all used
        {32, 151936, Dtype::f32, Path::single_pass},  // 19 MB
    }, false);
    const Plan batch = plan_geometry(h100, rows_of(32, 128256));
    EXPECT_EQ(batch.path, Path::single_pass);
    EXPECT_EQ(batch.push.chunk, 16384u);
    EXPECT_EQ(batch.push.chunks, 8u);
    EXPECT_EQ(batch.groups, 256u);
    // Past one wave, held chunks of 8192 at 256 x 8 where they make at most
    // 3 workgroups per multiprocessor (396 here), under 6 MiB too; more keep
    // 16384, re-read.
    for (const WaveCase& c : {WaveCase{24, 131072, Dtype::f16, 8192, 384, 256, 8},
                              WaveCase{48, 65536, Dtype::f32, 8192, 384, 256, 8},
                              WaveCase{24, 128256, Dtype::f32, 8192, 384, 256, 8},
                              WaveCase{20, 131072, Dtype::f32, 8192, 320, 256, 8},
                              WaveCase{20, 131072, Dtype::f16, 8192, 320, 256, 8},  // 5 MiB
                              WaveCase{24, 100000, Dtype::bf16, 6256, 384, 256, 8}})
        expect_wave_geometry(h100, c, true, false);
    const Plan past_three = plan_geometry(h100, rows_of(32, 131072));
    EXPECT_EQ(past_three.push.chunk, 16384u) << "32x131072: 512 workgroups of 8192 would be 3.9 per multiprocessor";
    EXPECT_EQ(past_three.groups, 256u);
    // Rows of 151936 would fill 10 of 16 chunks of 16384: 8 of 20480 instead.
    const Plan vocabulary = plan_geometry(h100, rows_of(32, 151936, Dtype::f16));
    EXPECT_EQ(vocabulary.path, Path::single_pass);
    EXPECT_EQ(vocabulary.push.chunk, 20480u) << "chunks of a batch the rows fill";
    EXPECT_EQ(vocabulary.push.chunks, 8u);
    // Chunks the rows leave a quarter empty are refused still: forced to 16384, 10 of 16 used.
    PlanOptions sixteen;
    sixteen.chunk_elements = 16384;
    EXPECT_EQ(choose_path(h100, rows_of(32, 151936, Dtype::f16), sixteen), Path::split);
    // 2048 workgroups of 4096 would be past 4 per multiprocessor.
    PlanOptions small;
    small.chunk_elements = 4096;
    EXPECT_EQ(choose_path(h100, rows_of(16, 524288), small), Path::split);
    // No multiprocessor count, no memory model, or never: two dispatches.
    EXPECT_EQ(choose_path(h200(), rows_of(32, 128256)), Path::split);
    DeviceInfo no_model = h100;
    no_model.memory_model = false;
    EXPECT_EQ(choose_path(no_model, rows_of(32, 128256)), Path::split);
    PlanOptions never;
    never.single_pass = SinglePass::never;
    EXPECT_EQ(choose_path(h100, rows_of(32, 128256), never), Path::split);
}

// On NVIDIA rows that a workgroup holds only at its most slots (forward
// from 16384 elements and over 32 KB in at least 3 chunks a row, backward from
// 24576, backward batches as the forward rows) are spread over the chunks of one wave instead, however many of
// them there are, where their chunks of at most 8192 make one wave (two
// workgroups a multiprocessor for held chunks of 8192 in fp32 and in 16-bit
// batches); shorter or smaller rows, rows of two chunks, rows whose wave
// would take longer chunks, larger grids, strided rows and devices without
// the rule keep the workgroup row, and so do the rows shared by several
// workgroups (rows of 16384 in small batches).
TEST(Plan, ShortRowsSpreadOverOneWave) {
    const DeviceInfo h100 = counted_h100();
    expect_paths(h100, {
        {1, 32768, Dtype::f32, Path::single_pass},     // 8 chunks of 4096
        {1, 32768, Dtype::f16, Path::single_pass},
        {1, 32000, Dtype::bf16, Path::single_pass},
        {1, 24576, Dtype::f16, Path::single_pass},
        {2, 32768, Dtype::f32, Path::single_pass},
        {32, 32768, Dtype::f16, Path::single_pass},    // 128 chunks of 8192
        {1, 16384, Dtype::f32, Path::workgroup_row},   // shared (SharedRowsOnNvidia), not spread
        {8, 16384, Dtype::f32, Path::workgroup_row},
        {16, 16384, Dtype::f32, Path::workgroup_row},
        {32, 16384, Dtype::f32, Path::workgroup_row},  // two chunks of 8192 a row
        {64, 16384, Dtype::f32, Path::workgroup_row},
        {1, 12288, Dtype::f16, Path::workgroup_row},   // under 16384 elements (fp32: ShortRowsInSmallChunks)
        {1, 16384, Dtype::f16, Path::workgroup_row},   // 32 KB rows: one workgroup is as fast
        {4, 16384, Dtype::f16, Path::workgroup_row},
        {1, 16384, Dtype::bf16, Path::workgroup_row},
        {1, 16385, Dtype::f16, Path::single_pass},     // over 32 KB
        {16, 20000, Dtype::bf16, Path::single_pass},
        {1, 20480, Dtype::f16, Path::single_pass},
        {32, 20480, Dtype::f16, Path::single_pass},    // 3 chunks a row
        {16, 20480, Dtype::f32, Path::single_pass},
        {64, 20480, Dtype::f32, Path::single_pass},    // 256 chunks of 8192: two a multiprocessor
        {64, 32768, Dtype::f32, Path::single_pass},
        {48, 24576, Dtype::f32, Path::single_pass},
        {66, 32000, Dtype::f32, Path::single_pass},    // 264 chunks
        {67, 32000, Dtype::f32, Path::workgroup_row},  // 268 chunks: past two a multiprocessor
        {128, 32000, Dtype::f32, Path::workgroup_row},
        {64, 32000, Dtype::f16, Path::single_pass},    // an f16 batch: two a multiprocessor
        {64, 20480, Dtype::f16, Path::single_pass},
        {64, 32000, Dtype::bf16, Path::single_pass},   // so does a bf16 batch of rows a workgroup could hold
        {66, 24576, Dtype::bf16, Path::single_pass},
        {96, 32000, Dtype::f16, Path::workgroup_row},  // 384 chunks
    }, false);
    expect_paths(h100, {
        {1, 32768, Dtype::f32, Path::single_pass},
        {1, 24576, Dtype::f16, Path::single_pass},
        {4, 32768, Dtype::f32, Path::single_pass},
        {32, 32768, Dtype::f32, Path::single_pass},
        {1, 16384, Dtype::f32, Path::workgroup_row},   // backward rows from 24576 only
        {1, 20480, Dtype::f16, Path::workgroup_row},
        {4, 20480, Dtype::f32, Path::workgroup_row},
        {64, 32768, Dtype::f32, Path::single_pass},    // batches: held chunks of 8192, two a multiprocessor
        {48, 32000, Dtype::f16, Path::single_pass},
        {64, 32000, Dtype::bf16, Path::single_pass},
        {40, 20480, Dtype::f32, Path::single_pass},    // batches from 16384 elements, over 32 KB
        {40, 16384, Dtype::f16, Path::workgroup_row},  // 32 KB
        {67, 32000, Dtype::f32, Path::workgroup_row},  // 268 chunks
    }, true);
    Problem strided = rows_of(1, 32768);
    strided.shape = Shape{1, 32768, 4};
    EXPECT_EQ(choose_path(h100, strided), Path::workgroup_row) << "strided rows of 32768 (1, 32768, 4): not measured";
    const Plan rows = plan_geometry(h100, rows_of(32, 32768));
    EXPECT_EQ(rows.path, Path::single_pass);
    EXPECT_EQ(rows.groups, 128u) << "32x32768: chunks of 8192, " << rows.key[0].id();
    EXPECT_EQ(rows.push.chunk, 8192u) << "32x32768: " << rows.key[0].id();
    const Plan spread = plan_geometry(h100, rows_of(1, 32768));
    EXPECT_EQ(spread.path, Path::single_pass);
    EXPECT_EQ(spread.groups, 8u) << "chunks of 4096";
    EXPECT_EQ(spread.push.chunk, 4096u);
    EXPECT_EQ(spread.passes, 1u);
    EXPECT_EQ(choose_path(h200(), rows_of(1, 32768)), Path::workgroup_row) << "no multiprocessor count";
    PlanOptions never;
    never.single_pass = SinglePass::never;
    EXPECT_EQ(choose_path(h100, rows_of(1, 32768), never), Path::workgroup_row);
    const PlanOptions allowed = single_pass_allowed();
    EXPECT_EQ(choose_path(h100, rows_of(1, 32768), allowed), Path::workgroup_row)
        << "allowed takes the path for rows past a workgroup, as before";
}

// On NVIDIA forward rows under 16384 elements whose length is not a
// multiple of 4 (which a workgroup reads slowly) take one dispatch in
// small chunks, each the count's share of the row: 16-bit rows from 4097
// elements and fp32 rows from 10240 or where a workgroup row at up to 16
// slots would hold 10 or more (4609-8192, 9217-10239), in chunks of 1024 at 256 x 1 where
// the row's window is at most 8192 elements (16-bit rows' windows reach 7
// elements before their first), else of 2048 at 256 x 2; rows of up to
// 8192 elements in grids of at most half the 132 multiprocessors (more
// than one row only up to 6144 elements), longer ones in grids of at most
// two workgroups a multiprocessor. Shorter rows, rows a multiple of 4
// long, batches of rows of 6145-8192, larger grids, the backward pass,
// strided rows and devices without the rule keep the workgroup row.
TEST(Plan, ShortRowsInSmallChunks) {
    const DeviceInfo h100 = counted_h100();
    for (const WaveCase& c :
         {WaveCase{1, 4099, Dtype::f16, 520, 8, 256, 1}, WaveCase{1, 6143, Dtype::bf16, 776, 8, 256, 1},
          WaveCase{8, 6143, Dtype::f16, 776, 64, 256, 1}, WaveCase{4, 5001, Dtype::bf16, 632, 32, 256, 1},
          WaveCase{1, 8191, Dtype::f16, 1032, 8, 256, 2}, WaveCase{1, 10241, Dtype::f32, 1288, 8, 256, 2},
          WaveCase{16, 12287, Dtype::bf16, 1544, 128, 256, 2}, WaveCase{32, 12287, Dtype::f16, 1544, 256, 256, 2},
          WaveCase{4, 16383, Dtype::f32, 2048, 32, 256, 2}})
        expect_wave_geometry(h100, c, true, false);
    expect_paths(h100, {
        {1, 4095, Dtype::f16, Path::workgroup_row},    // 4096 elements and less
        {4, 4095, Dtype::f32, Path::workgroup_row},
        {1, 4605, Dtype::f32, Path::workgroup_row},    // fp32 under 10240: 256 x 5-8, 512 x 5
        {1, 4611, Dtype::f32, Path::workgroup_row},
        {4, 6143, Dtype::f32, Path::workgroup_row},
        {1, 8189, Dtype::f32, Path::workgroup_row},
        {1, 8193, Dtype::f32, Path::workgroup_row},
        {1, 9217, Dtype::f32, Path::workgroup_row},
        {2, 7167, Dtype::f32, Path::workgroup_row},    // batches of rows over 6144
        {1, 12288, Dtype::f32, Path::workgroup_row},   // a multiple of 4
        {1, 12288, Dtype::bf16, Path::workgroup_row},
        {2, 8191, Dtype::f16, Path::workgroup_row},    // batches of rows over 6144
        {8, 8191, Dtype::bf16, Path::workgroup_row},
        {9, 6143, Dtype::f16, Path::workgroup_row},    // 72 chunks of 1024: past half a wave
        {64, 12287, Dtype::f16, Path::workgroup_row},  // 512 chunks of 2048: past two a multiprocessor
        {1, 16384, Dtype::f16, Path::workgroup_row},
    }, false);
    expect_paths(h100, {{1, 12287, Dtype::f16, Path::workgroup_row}, {1, 12287, Dtype::f32, Path::workgroup_row}}, true);
    Problem strided = rows_of(1, 12287);
    strided.shape = Shape{1, 12287, 4};
    expect_paths(h100, {{1, 6143, Dtype::f32, Path::workgroup_row}}, true);
    EXPECT_EQ(choose_path(h100, strided), Path::workgroup_row) << "strided rows of 12287 (1, 12287, 4): not measured";
    EXPECT_EQ(choose_path(h200(), rows_of(1, 12287)), Path::workgroup_row) << "no multiprocessor count";
    PlanOptions never;
    never.single_pass = SinglePass::never;
    EXPECT_EQ(choose_path(h100, rows_of(1, 12287), never), Path::workgroup_row);
}

// A workgroup row holds a plain forward row not a multiple of 4 long (read
// in vector windows with a head and a tail) at up to 8 slots an invocation
// (kOddRowSpreadSlots), in a workgroup twice as wide for each doubling past
// them, 16-bit ones in batches of 2048 rows or more at up to 10
// (kOddRowSpreadBatchRows, kOddRowSpreadBatchSlots); attention rows at up to 15 (kOddRowMaxSlots: at 16 NVIDIA's
// compiler put an fp32 lane's slots in local memory). Rows a multiple of 4
// long keep theirs (the backward pass holds at most 8 slots anyway).
TEST(Plan, OddRowsSpreadPast8Slots) {
    struct Held {
        uint64_t rows, cols;
        Dtype dtype;
        uint32_t workgroup_size, slots;
    };
    for (const DeviceInfo& d : {counted_h100(), h200()})
        for (const Held& c : {Held{64, 8189, Dtype::f32, 256, 8}, Held{64, 8189, Dtype::f16, 256, 8},
                              Held{2, 7681, Dtype::f32, 256, 8}, Held{2, 7677, Dtype::f32, 256, 8},
                              Held{1024, 4095, Dtype::f16, 256, 5}, Held{16, 4095, Dtype::f32, 256, 5},
                              Held{4096, 7167, Dtype::bf16, 256, 8}, Held{1024, 4093, Dtype::f32, 128, 8},
                              Held{1024, 8192, Dtype::f32, 128, 16}, Held{64, 8191, Dtype::bf16, 512, 5},
                              Held{1024, 20479, Dtype::f32, 1024, 6}, Held{128, 32001, Dtype::f32, 1024, 8},
                              Held{128, 32000, Dtype::f32, 512, 16}, Held{2048, 8191, Dtype::f16, 256, 9},
                              Held{2048, 8191, Dtype::bf16, 256, 9}, Held{4096, 4095, Dtype::f16, 128, 9},
                              Held{2047, 8191, Dtype::f16, 512, 5}, Held{2048, 8191, Dtype::f32, 512, 5},
                              Held{2048, 12287, Dtype::f16, 512, 7}, Held{2048, 9215, Dtype::f16, 256, 10},
                              Held{1024, 9215, Dtype::f16, 512, 5}}) {
            const Problem p = rows_of(c.rows, c.cols, c.dtype);
            const Plan plan = plan_geometry(d, p);
            const std::string described =
                what(p) + " on " + d.name + ": " + path_name(plan.path) + " " + plan.key[0].id();
            ASSERT_EQ(plan.path, Path::workgroup_row) << described;
            EXPECT_EQ(plan.key[0].workgroup_size, c.workgroup_size) << described;
            EXPECT_EQ(plan.key[0].slots, c.slots) << described;
        }
    // Attention rows keep four subgroups at 9 slots (up to 15).
    Problem causal = masked_attention(1, 1, 4095, Dtype::f16, Dtype::f16);
    causal.attention.mask = false;
    causal.attention.causal = true;
    const Plan attention = plan_geometry(h200(), causal);
    EXPECT_EQ(attention.key[0].workgroup_size, 128u) << "causal f16 (1, 1, 4095, 4095): " << attention.key[0].id();
    EXPECT_EQ(attention.key[0].slots, 9u) << "causal f16 (1, 1, 4095, 4095): " << attention.key[0].id();
}

// On NVIDIA batches of forward 16-bit rows not a multiple of 4 long, from
// those a workgroup row would read in tiles of 1024 x 4 slots in 8-byte
// windows to those whose 16-byte windows fill 16 chunks of 4096 (rows of
// 16382-65529), take single-pass chunks of 4096 held at 256 x 4 in
// 16-byte windows, each the count's share of the row, where their grid is
// at most 4 workgroups a multiprocessor. Larger grids, longer rows, rows a
// multiple of 4 long, shorter rows, fp32 rows and the backward pass keep
// their plans.
TEST(Plan, OddRowsInChunksOf4096) {
    const DeviceInfo h100 = counted_h100();
    for (const WaveCase& c :
         {WaveCase{64, 32001, Dtype::f16, 4096, 512, 256, 4}, WaveCase{48, 32001, Dtype::bf16, 4096, 384, 256, 4},
          WaveCase{16, 32761, Dtype::f16, 4096, 128, 256, 4}, WaveCase{64, 24577, Dtype::f16, 3080, 512, 256, 4},
          WaveCase{8, 50257, Dtype::bf16, 3144, 128, 256, 4}, WaveCase{32, 50257, Dtype::f16, 3144, 512, 256, 4},
          WaveCase{16, 65529, Dtype::f16, 4096, 256, 256, 4}})
        expect_wave_geometry(h100, c, true, false);
    for (const Problem& p : {rows_of(64, 50257, Dtype::f16), rows_of(16, 65530, Dtype::bf16),
                             rows_of(16, 100003, Dtype::f16), rows_of(16, 50256, Dtype::f16),
                             rows_of(64, 32000, Dtype::f16)}) {
        const Plan plan = plan_geometry(h100, p);
        EXPECT_GT(plan.push.chunk, 4096u) << what(p) << ": " << path_name(plan.path) << " " << plan.key[0].id()
                                          << ", chunks of "
                                          << plan.push.chunk << " (a grid past 528 workgroups, rows past 16 "
                                          << "chunks of 4096 or a multiple of 4 long keep their longer chunks)";
    }
    expect_paths(h100, {
        {96, 32001, Dtype::f16, Path::workgroup_row},   // 768 chunks of 4096: past 4 a multiprocessor
        {64, 16381, Dtype::bf16, Path::workgroup_row},  // a window of 16384: one tile of 1024 x 4
        {64, 32762, Dtype::f16, Path::workgroup_row},   // 16-byte windows past 8 chunks of 4096
    }, false);
    expect_paths(h100, {{64, 32001, Dtype::f16, Path::single_pass}}, true);  // held chunks of 8192 (ShortRowsSpreadOverOneWave)
    EXPECT_EQ(choose_path(h200(), rows_of(64, 32001, Dtype::f16)), Path::workgroup_row) << "no multiprocessor count";
}

// On NVIDIA forward rows past a workgroup row take one dispatch where one
// wave of held chunks covers them (132 multiprocessors here): chunks of
// 4096 at 256 x 4 where they fill at most half the wave, else 8192 at
// 256 x 8 (f32 problems, f16 batches, bf16 batches of rows a workgroup
// could hold and fewer rows than 8: up to two workgroups a
// multiprocessor), else 16384 at 512 x 8 where those fill more than half;
// at most 64 chunks a row, 32 past half a wave, but fewer rows than 8 up
// to 128 of 8192 in one wave (fp32: 256 in two), 64 in two, and 128 of
// 16384; each chunk the count's share of the row. Past that,
// two dispatches, or a resident batch (6 MiB or more, or held chunks of
// 8192 at most 3 a multiprocessor); a forced chunk takes the path where it
// makes one such wave.
TEST(Plan, ForwardRowsSpreadOverOneWave) {
    const DeviceInfo h100 = counted_h100();
    for (const WaveCase& c :
         {WaveCase{1, 65536, Dtype::f32, 2048, 32, 128, 4}, WaveCase{1, 262144, Dtype::bf16, 4096, 64, 256, 4},
          WaveCase{2, 131072, Dtype::f16, 4096, 64, 256, 4}, WaveCase{1, 524288, Dtype::f16, 8192, 64, 256, 8},
          WaveCase{1, 262145, Dtype::f32, 4104, 64, 256, 8}, WaveCase{2, 262144, Dtype::bf16, 8192, 64, 256, 8},
          WaveCase{3, 131072, Dtype::bf16, 8192, 48, 256, 8}, WaveCase{4, 100000, Dtype::f32, 6256, 64, 256, 8},
          WaveCase{8, 65536, Dtype::f16, 8192, 64, 256, 8}, WaveCase{4, 262144, Dtype::f32, 8192, 128, 256, 8},
          WaveCase{16, 65536, Dtype::f32, 8192, 128, 256, 8}, WaveCase{4, 524288, Dtype::f32, 8192, 256, 256, 8},
          WaveCase{16, 100000, Dtype::f32, 6256, 256, 256, 8}, WaveCase{32, 65536, Dtype::f16, 8192, 256, 256, 8},
          WaveCase{6, 262144, Dtype::f32, 8192, 192, 256, 8}, WaveCase{12, 100000, Dtype::bf16, 12504, 96, 512, 8},
          WaveCase{16, 131072, Dtype::f32, 8192, 256, 256, 8}, WaveCase{16, 131072, Dtype::bf16, 16384, 128, 512, 8},
          // Fewer rows than a batch: held chunks (tiles of 8192) in up to two workgroups a multiprocessor,
          // fp32 up to 256 a row, 16-bit up to 128 in one wave or 64 in two, each the count's share; else
          // 16-bit rows in up to 128 chunks of 16384 at 512 x 8 in one wave.
          WaveCase{1, 524289, Dtype::f32, 4104, 128, 256, 8}, WaveCase{1, 1u << 20, Dtype::bf16, 8192, 128, 256, 8},
          WaveCase{2, 524288, Dtype::f16, 8192, 128, 256, 8}, WaveCase{2, 300000, Dtype::f32, 4688, 128, 256, 8},
          WaveCase{2, 1u << 20, Dtype::f32, 8192, 256, 256, 8}, WaveCase{3, 524288, Dtype::f32, 8192, 192, 256, 8},
          WaveCase{4, 524288, Dtype::bf16, 8192, 256, 256, 8}, WaveCase{6, 262144, Dtype::f16, 8192, 192, 256, 8},
          WaveCase{1, 1572864, Dtype::f32, 6144, 256, 256, 8}, WaveCase{1, (1u << 20) + 1, Dtype::f32, 4104, 256, 256, 8},
          WaveCase{2, 786432, Dtype::f16, 12288, 128, 512, 8}, WaveCase{1, 2u << 20, Dtype::bf16, 16384, 128, 512, 8},
          WaveCase{1, 1572864, Dtype::f16, 12288, 128, 512, 8}})
        expect_wave_geometry(h100, c, true, false);
    expect_paths(h100, {
        {1, (2u << 20) + 1, Dtype::f32, Path::split},  // 257 chunks of 8192, or 129 of 16384
        {1, (2u << 20) + 1, Dtype::f16, Path::split},
        {3, 600000, Dtype::bf16, Path::split},   // 384 chunks of 8192, or 192 of 16384
        {4, 1u << 20, Dtype::f32, Path::split},  // 512 workgroups of 8192, 256 of 16384
        {5, 524288, Dtype::f16, Path::split},    // 320 of 8192 past two waves; 16-bit: 16384 for batches only
        {40, 65536, Dtype::f16, Path::single_pass},  // past a wave: 320 held chunks of 8192 (5 MiB)
        {32, 131072, Dtype::f32, Path::single_pass},  // past a wave, 16 MiB: a resident batch
    }, false);
    PlanOptions forced;
    forced.chunk_elements = 4096;
    EXPECT_EQ(choose_path(h100, rows_of(8, 65536), forced), Path::single_pass) << "8x65536 in 128 chunks of 4096";
    EXPECT_EQ(choose_path(h100, rows_of(16, 65536), forced), Path::split) << "16x65536 in 256 chunks of 4096";
    EXPECT_EQ(choose_path(h200(), rows_of(1, 65536)), Path::split) << "no multiprocessor count";
    PlanOptions never;
    never.single_pass = SinglePass::never;
    EXPECT_EQ(choose_path(h100, rows_of(1, 65536), never), Path::split);
}

// The backward pass takes the single-pass path on NVIDIA for long rows in
// one wave of workgroups (one per multiprocessor), and batches of 8 rows
// or more whose every row's chunks are resident at once (at most 4 per
// multiprocessor), whatever their bytes; the row paths keep rows they hold.
TEST(Plan, BackwardSinglePassTakesResidentRows) {
    const DeviceInfo h100 = counted_h100();
    expect_paths(h100, {
        {32, 128256, Dtype::f32, Path::single_pass},   // the forward takes it too
        {16, 131072, Dtype::f16, Path::single_pass},   // 4 MiB: the forward's too little
        {128, 151936, Dtype::f16, Path::single_pass},  // 39 MB: the forward's too much; 1024 workgroups, 8 a row
        {1, 131072, Dtype::f32, Path::single_pass},    // one row, 32 chunks
        {1, 262144, Dtype::bf16, Path::single_pass},   // 64 chunks
        {4, 262144, Dtype::f32, Path::single_pass},    // 128 workgroups of 8192 rather than 256 of 4096
        {2, 1u << 20, Dtype::f16, Path::single_pass},  // one wave of 128 chunks of 16384, not 512 of 4096
        {4, 1u << 20, Dtype::f32, Path::split},        // 256 workgroups even at 16384
        {1, 1u << 20, Dtype::f16, Path::single_pass},  // one wave of 128 chunks of 8192 (BackwardRowsFillAWave)
        {1, 1u << 24, Dtype::f32, Path::split},        // 512 chunks
        {128, 32000, Dtype::f32, Path::workgroup_row}, // held by a workgroup
    }, true);
    Problem vocabulary = rows_of(32, 151936);
    vocabulary.backward = true;
    const Plan plan = plan_geometry(h100, vocabulary);
    EXPECT_EQ(plan.path, Path::single_pass);
    EXPECT_TRUE(plan.key[0].backward) << "the single-pass backward module";
    EXPECT_EQ(plan.passes, 1u);
    EXPECT_TRUE(plan.workspace_zeroed);
    // A batch whose rows take more chunks than 4 per multiprocessor
    // (forced: 1024 of 1024 elements), a device that does not count them,
    // or never: two dispatches.
    PlanOptions small;
    small.chunk_elements = 1024;
    Problem batch = rows_of(8, 1u << 20);
    batch.backward = true;
    EXPECT_EQ(choose_path(h100, batch), Path::single_pass) << "8 rows of 1M in 64 chunks each";
    EXPECT_EQ(choose_path(h100, batch, small), Path::split);
    EXPECT_EQ(choose_path(h200(), vocabulary), Path::split) << "no multiprocessor count";
    PlanOptions never;
    never.single_pass = SinglePass::never;
    EXPECT_EQ(choose_path(h100, vocabulary, never), Path::split);
}

// Backward batches whose grid at chunks of 16384 fills half a wave or
// less take the least chunk of 4096, 8192 or 16384 whose grid (a
// power-of-two count of chunks a row) fits a wave (132 multiprocessors
// here): each chunk the count's share of the row, held in one tile (256
// x 4 or 8, 512 x 8 at 16384: 16x100000 in 8 chunks of 12504 rather than
// 4 of 28672), none empty. 16-bit batches of whole chunks of 16384 in one
// wave hold each in a tile of 512 x 8 slots; fp32 batches hold chunks of
// 8192 at 256 x 8 where they make at most two workgroups a multiprocessor
// (else 256 x 4, re-read). Larger grids and a device that does not count its
// multiprocessors keep their chunks at 256 x 4; the forward pass has its
// own rule for one wave (held_wave_chunk()).
TEST(Plan, BackwardBatchesFillAWave) {
    const DeviceInfo h100 = counted_h100();
    for (const WaveCase& c :
         {WaveCase{8, 65536, Dtype::f32, 4096, 128, 256, 4}, WaveCase{16, 65536, Dtype::f16, 8192, 128, 256, 8},
          WaveCase{8, 131072, Dtype::bf16, 8192, 128, 256, 8}, WaveCase{8, 50000, Dtype::f32, 3128, 128, 256, 4},
          WaveCase{12, 40000, Dtype::f16, 5000, 96, 256, 8}, WaveCase{16, 100000, Dtype::f16, 12504, 128, 512, 8},
          WaveCase{32, 65536, Dtype::f32, 8192, 256, 256, 8}, WaveCase{12, 131072, Dtype::f32, 8192, 192, 256, 8}})
        expect_wave_geometry(h100, c, true, true);
    // Held at 512 x 8 (16-bit) or read in tiles of 256 x 4, and larger grids.
    for (const WaveCase& c :
         {WaveCase{16, 131072, Dtype::f16, 16384, 128, 512, 8}, WaveCase{32, 65536, Dtype::bf16, 16384, 128, 512, 8},
          WaveCase{8, 262144, Dtype::f16, 16384, 128, 512, 8}, WaveCase{64, 65536, Dtype::f32, 16384, 256, 256, 4},
          WaveCase{64, 65536, Dtype::f16, 16384, 256, 256, 4}, WaveCase{8, 1u << 20, Dtype::f32, 16384, 512, 256, 4}})
        expect_wave_geometry(h100, c, c.workgroup_size == 512, true);
    PlanOptions forced;
    forced.path = Path::single_pass;
    Problem forward = rows_of(8, 65536);
    const Plan small = plan_geometry(h100, forward, forced);
    EXPECT_EQ(small.push.chunk, 8192u) << "forward 8x65536, 2 MiB: held chunks";
    EXPECT_EQ(small.key[0].workgroup_size * small.key[0].slots, 2048u) << "forward 8x65536: 256 x 8 slots";
    EXPECT_EQ(plan_geometry(h100, rows_of(16, 131072, Dtype::bf16), forced).push.chunk, 16384u)
        << "forward bf16 16x131072: 256 held chunks of 8192 would pass a wave";
    EXPECT_EQ(plan_geometry(h100, rows_of(16, 131072, Dtype::f16), forced).push.chunk, 8192u)
        << "forward f16 16x131072: 256 held chunks of 8192, two a multiprocessor";
    Problem unknown = rows_of(8, 65536);
    unknown.backward = true;
    EXPECT_EQ(plan_geometry(h200(), unknown, forced).push.chunk, 16384u) << "no multiprocessor count";
}

// Backward rows fewer than a batch whose chunks of 4096 would pass a wave
// (two dispatches before), single rows too: one wave of chunks of 8192
// held at 256 x 8, or of 16384 at 512 x 8, each the count's share of the
// row, where the wave fills more than 2/3 of the multiprocessors. Emptier
// waves and rows whose chunks of 16384 pass a wave keep two dispatches; a
// forced chunk keeps its own.
TEST(Plan, BackwardRowsFillAWave) {
    const DeviceInfo h100 = counted_h100();
    for (const WaveCase& c :
         {WaveCase{2, 524288, Dtype::f32, 8192, 128, 256, 8}, WaveCase{4, 262144, Dtype::bf16, 8192, 128, 256, 8},
          WaveCase{4, 524288, Dtype::f16, 16384, 128, 512, 8}, WaveCase{2, 1u << 20, Dtype::f32, 16384, 128, 512, 8},
          WaveCase{2, 524288, Dtype::f16, 8192, 128, 256, 8}, WaveCase{2, 1u << 20, Dtype::bf16, 16384, 128, 512, 8},
          WaveCase{3, 262144, Dtype::bf16, 8192, 96, 256, 8},
          WaveCase{3, 300000, Dtype::f32, 9376, 96, 512, 8}, WaveCase{7, 100000, Dtype::f16, 6256, 112, 256, 8},
          WaveCase{6, 262144, Dtype::f16, 16384, 96, 512, 8},
          // single rows too
          WaveCase{1, 1u << 20, Dtype::f32, 8192, 128, 256, 8}, WaveCase{1, 2u << 20, Dtype::bf16, 16384, 128, 512, 8}})
        expect_wave_geometry(h100, c, true, true);
    expect_paths(h100, {
        {1, (2u << 20) + 1, Dtype::f32, Path::split},  // 257 chunks of 8192
        {3, 1u << 20, Dtype::f16, Path::split},
        {4, 1u << 20, Dtype::f32, Path::split},    // 256 chunks of 16384
        {2, 4u << 20, Dtype::f32, Path::split},
        {5, 200000, Dtype::f32, Path::split},      // 80 workgroups: not more than 2/3 of a wave
        {5, 200000, Dtype::bf16, Path::split},
    }, true);
    Problem rows = rows_of(4, 262144);
    rows.backward = true;
    PlanOptions forced;
    forced.chunk_elements = 4096;
    EXPECT_EQ(choose_path(h100, rows, forced), Path::split) << "4x262144 forced to chunks of 4096: 256 workgroups";
    EXPECT_EQ(choose_path(h100, rows_of(3, 1u << 20, Dtype::f16)), Path::split)
        << "the forward pass of f16 3x1048576 (384 chunks of 8192: past two waves)";
    EXPECT_EQ(choose_path(h200(), rows), Path::split) << "no multiprocessor count";
}

// A forward single row that chunks of 4096 would cut into 16 (rows of
// 32769-65536 elements): 32 chunks of at most 2048, each the count's share
// of the row, held at 128 x 4. Shorter and longer rows, rows of two and
// more, odd 16-bit rows (their own chunks of 4096), the backward pass, a
// forced chunk and a device that counts no multiprocessors keep their
// plans.
TEST(Plan, SingleRowsInChunksAt128Invocations) {
    const DeviceInfo h100 = counted_h100();
    for (const WaveCase& c :
         {WaveCase{1, 32769, Dtype::f32, 1032, 32, 128, 4}, WaveCase{1, 40000, Dtype::f16, 1256, 32, 128, 4},
          WaveCase{1, 50257, Dtype::f32, 1576, 32, 128, 4}, WaveCase{1, 65536, Dtype::bf16, 2048, 32, 128, 4}})
        expect_wave_geometry(h100, c, true, false);
    for (const WaveCase& c :
         {WaveCase{1, 32768, Dtype::f32, 4096, 8, 256, 4}, WaveCase{1, 32000, Dtype::bf16, 4096, 8, 256, 4},
          WaveCase{1, 131072, Dtype::f32, 4096, 32, 256, 4}, WaveCase{2, 65536, Dtype::f16, 4096, 32, 256, 4},
          WaveCase{1, 50257, Dtype::f16, 3144, 16, 256, 4}})
        expect_wave_geometry(h100, c, false, false);
    Problem backward = rows_of(1, 65536);
    backward.backward = true;
    EXPECT_EQ(plan_geometry(h100, backward).key[0].workgroup_size, 256u) << "backward 1x65536";
    PlanOptions forced;
    forced.chunk_elements = 4096;
    const Plan kept = plan_geometry(h100, rows_of(1, 65536), forced);
    EXPECT_EQ(kept.push.chunk, 4096u) << "1x65536 forced to chunks of 4096";
    EXPECT_EQ(kept.key[0].workgroup_size, 256u) << "1x65536 forced to chunks of 4096";
    const Plan uncounted = plan_geometry(h200(), rows_of(1, 65536));
    EXPECT_NE(uncounted.key[0].workgroup_size, 128u) << "no multiprocessor count: " << path_name(uncounted.path);
}

// A backward single row whose chunks of 4096 fill more than half a wave
// and at most one: half as many chunks of 8192 held at 256 x 8, each the
// count's share of the row. Single rows of half a wave or less, and two
// rows, keep chunks of 4096 at 256 x 4; so does a device that counts no
// multiprocessors, and a forced chunk.
TEST(Plan, BackwardSingleRowsInHalfAsManyChunks) {
    const DeviceInfo h100 = counted_h100();
    for (const WaveCase& c :
         {WaveCase{1, 524288, Dtype::f32, 8192, 64, 256, 8}, WaveCase{1, 524288, Dtype::bf16, 8192, 64, 256, 8},
          WaveCase{1, 400000, Dtype::f16, 6256, 64, 256, 8}, WaveCase{1, 300000, Dtype::bf16, 4688, 64, 256, 8},
          WaveCase{1, 270000, Dtype::f32, 4224, 64, 256, 8}})
        expect_wave_geometry(h100, c, true, true);
    for (const WaveCase& c :
         {WaveCase{1, 262144, Dtype::f16, 4096, 64, 256, 4}, WaveCase{2, 262144, Dtype::f16, 4096, 128, 256, 4},
          WaveCase{1, 131072, Dtype::f32, 4096, 32, 256, 4}})
        expect_wave_geometry(h100, c, false, true);
    Problem row = rows_of(1, 524288);
    row.backward = true;
    const Plan uncounted = plan_geometry(h200(), row);
    EXPECT_NE(uncounted.push.chunk, 8192u) << "backward 1x524288 with no multiprocessor count: " << path_name(uncounted.path)
                                           << ", chunks of " << uncounted.push.chunk;
    PlanOptions forced;
    forced.chunk_elements = 4096;
    const Plan kept = plan_geometry(h100, row, forced);
    EXPECT_EQ(kept.push.chunk, 4096u) << "backward 1x524288 forced to chunks of 4096";
    EXPECT_EQ(kept.key[0].slots, 4u) << "backward 1x524288 forced to chunks of 4096";
}

// `o` with a forced workgroup size, slot count and chunk length (0: the plan's).
PlanOptions overridden(const PlanOptions& base, uint32_t workgroup_size, uint32_t slots, uint32_t chunk_elements) {
    PlanOptions o = base;
    o.workgroup_size = workgroup_size;
    o.slots = slots;
    o.chunk_elements = chunk_elements;
    return o;
}

// Every single-pass chunk of rows x cols on `d` holds elements, in
// multiples of 8, and the chunks cover the row.
void expect_chunks_filled(const DeviceInfo& d, const PlanOptions& o, uint64_t rows, uint64_t cols, Dtype dt) {
    const Plan plan = plan_geometry(d, rows_of(rows, cols, dt), o);
    const std::string which = std::string(dtype_name(dt)) + " " + std::to_string(rows) + "x" + std::to_string(cols) +
                              " at " + std::to_string(o.workgroup_size) + " x " + std::to_string(o.slots) + ": " +
                              std::to_string(plan.push.chunks) + " chunks of " + std::to_string(plan.push.chunk);
    EXPECT_EQ(plan.push.chunk % 8, 0u) << which;
    EXPECT_LT(uint64_t{plan.push.chunks - 1} * plan.push.chunk, cols) << which << ": the last one empty";
    EXPECT_GE(uint64_t{plan.push.chunks} * plan.push.chunk, cols) << which << ": the row not covered";
}

// The single-pass chunks of 1 x cols under options `o` on an H200: their
// count and length.
Plan expect_chunks(const PlanOptions& o, uint64_t cols, uint32_t chunks, uint32_t chunk) {
    const Plan plan = plan_geometry(h200(), rows_of(1, cols), o);
    EXPECT_EQ(plan.push.chunks, chunks) << "1x" << cols << " at " << o.workgroup_size << " x " << o.slots;
    EXPECT_EQ(plan.push.chunk, chunk) << "1x" << cols << " at " << o.workgroup_size << " x " << o.slots;
    return plan;
}

// Single-pass rows: about 1024 chunks over all rows, at most 512 a row and
// at least 4096 elements each (16384 in batches of 8 rows or more), a power
// of two of them; a chunk of up to 8 slots x 256 invocations is one tile
// (held in registers), longer ones are whole tiles of 4 slots. A workgroup
// per chunk; the workspace holds two banks of partials (alternate calls),
// then a count per row, and must start zeroed. The split path's plans need
// no zeroed workspace.
TEST(Plan, SinglePassChunks) {
    const DeviceInfo d = h200();
    const PlanOptions allowed = single_pass_allowed();
    const Plan one = plan_geometry(d, rows_of(1, 1u << 24), allowed);
    ASSERT_EQ(one.path, Path::single_pass);
    EXPECT_EQ(one.passes, 1u);
    EXPECT_EQ(one.key[0].kind, ShaderKind::single_pass);
    EXPECT_EQ(one.key[0].slots, 4u);
    EXPECT_EQ(one.push.chunks, 512u);
    EXPECT_EQ(one.push.chunk, 32768u);
    EXPECT_EQ(one.groups, 512u);
    EXPECT_EQ(one.workspace_bytes, 2 * 512u * 16 + 16);
    EXPECT_TRUE(one.workspace_zeroed);

    // 1024 chunks over 16 rows would be 64 of 2048: a batch of 8 rows or
    // more takes at least 16384, four tiles of 4 slots, 8 a row.
    const Plan many = plan_geometry(d, rows_of(16, 131072), allowed);
    EXPECT_EQ(many.key[0].slots, 4u);
    EXPECT_EQ(many.push.chunk, 16384u);
    EXPECT_EQ(many.push.chunks, 8u);
    EXPECT_EQ(many.groups, 16u * 8);
    EXPECT_EQ(many.workspace_bytes, 2 * 16u * 8 * 16 + 64);
    // Fewer rows keep chunks of 4096: 4 x 131072 in 32 a row.
    const Plan few = plan_geometry(d, rows_of(4, 131072), allowed);
    EXPECT_EQ(few.push.chunk, 4096u);
    EXPECT_EQ(few.push.chunks, 32u);
    // 128 x 151936: 8 chunks of 18992, re-read in tiles of 4096 (20480 each).
    const Plan vocab = plan_geometry(d, rows_of(128, 151936), allowed);
    EXPECT_EQ(vocab.push.chunk, 20480u);
    EXPECT_EQ(vocab.push.chunks, 8u);
    EXPECT_FALSE(plan_geometry(without_memory_model(), rows_of(1, 1u << 24)).workspace_zeroed);
}

// Fewer rows than a batch take the chunk count's share of the row, in
// multiples of 8, where tiles would leave chunks empty (4 of 1x49152's
// 16 chunks of 4096): every chunk holds elements, and chunks of a tile
// or less stay in the slots (the tile keeps its 4 slots).
TEST(Plan, SinglePassChunksAllHoldElements) {
    const DeviceInfo d = h200();
    const PlanOptions forced = single_pass_forced();
    const Plan filled = plan_geometry(d, rows_of(1, 49152), single_pass_allowed());
    EXPECT_EQ(filled.push.chunks, 16u);
    EXPECT_EQ(filled.push.chunk, 3072u);
    EXPECT_EQ(filled.key[0].slots, 4u);
    EXPECT_EQ(plan_geometry(d, rows_of(1, 30000), forced).push.chunk, 4096u) << "1x30000 fills 8 of 4096";
    EXPECT_EQ(plan_geometry(d, rows_of(1, 28672), forced).push.chunk, 3584u) << "1x28672 would fill 7 of 8";
    for (Dtype dt : {Dtype::f32, Dtype::f16, Dtype::bf16})
        for (uint64_t rows = 1; rows < 8; ++rows)
            for (uint64_t cols : {4100ull, 20480ull, 28672ull, 30011ull, 49152ull, 98304ull, 100000ull, 196608ull, 1000003ull, 1ull << 24})
                expect_chunks_filled(d, forced, rows, cols, dt);
}

// Overrides keep both: the smallest chunks in workgroups of 32 on 1x16M
// (at least 16M / (32 x 32) = 16384 elements, 1024 chunks) and slots 3
// on 1x100000 (tiles of 3072: 33 chunks, rounded up to 64). A forced
// workgroup or slot count alone keeps the chunks filled: 1x49152 in
// workgroups of 512 (tiles of 8192) takes 8 chunks of 6144, not 8 of 8192
// with 2 empty; 4 slots forced on 1x98304 at 128 invocations (tiles of
// 2048) take 32 of 3072, not 32 of 4096 with 8 empty. Every row, both
// overrides: no chunk empty.
TEST(Plan, SinglePassChunksUnderOverrides) {
    const PlanOptions allowed = single_pass_allowed(), forced = single_pass_forced();
    expect_chunks(overridden(allowed, 32, 0, 1), 1u << 24, 1024, 16384);
    EXPECT_EQ(expect_chunks(overridden(allowed, 0, 3, 1), 100000, 64, 3072).workspace_bytes, 2 * 64u * 16 + 16);
    const PlanOptions wide = overridden(forced, 512, 0, 0), slim = overridden(forced, 128, 4, 0);
    expect_chunks(wide, 49152, 8, 6144);
    expect_chunks(slim, 98304, 32, 3072);
    for (const PlanOptions& o : {wide, slim})
        for (uint64_t rows = 1; rows < 8; ++rows)
            for (uint64_t cols : {20480ull, 30011ull, 49152ull, 98304ull, 196608ull, 1000003ull})
                expect_chunks_filled(h200(), o, rows, cols, Dtype::f32);
}

// lavapipe as vksoftmax sees it (Mesa 22.3 on x86-64): a CPU device whose
// subgroups are its vectors' width, 4, 8 or 16 lanes (LP_NATIVE_VECTOR_WIDTH
// 128, 256 or 512), and grids of up to 65535 workgroups.
DeviceInfo lavapipe(uint32_t subgroup) {
    DeviceInfo d = as_llvmpipe(h200());
    d.name = "llvmpipe (described)";
    d.type = VK_PHYSICAL_DEVICE_TYPE_CPU;
    d.subgroup_size = d.min_subgroup_size = d.max_subgroup_size = subgroup;
    d.subgroup_size_control = d.compute_full_subgroups = false;
    d.max_workgroup_subgroups = 0;
    d.multiprocessors = 0;
    d.max_workgroup_count[0] = d.max_workgroup_count[1] = d.max_workgroup_count[2] = 65535;
    return d;
}

// llvmpipe ends an invocation's loops once it has run 65535 iterations in
// all. A workgroup that computes its row's missing partials takes two loops
// over the workgroup's subgroups for each (64 subgroups at 256 x 4 with
// subgroups of 4), so the plan cuts such rows into fewer chunks there:
// 1x1100000 in 256 chunks at subgroups of 4, where 512 left the row's
// first chunks written with part of its sum; at 8 and 16 lanes, 512 fit.
// Forced chunks are lengthened the same way, and a longer patience (more
// polling rounds, a turn per pending partial each) takes fewer. Another
// driver of the same description keeps the chunks asked for.
TEST(Plan, SinglePassChunksWithinLlvmpipesLoopCount) {
    struct Case {
        uint32_t subgroup;
        uint64_t cols;
        uint32_t chunk_option, patience;
        uint32_t chunks, elsewhere;  // on llvmpipe, and on another driver
    };
    for (const Case& c : {Case{4, 1100000, 0, 0, 256, 512}, Case{8, 1100000, 0, 0, 512, 512},
                          Case{16, 1100000, 0, 0, 512, 512}, Case{4, 1u << 20, 1024, 0, 256, 1024},
                          Case{8, 1u << 20, 1024, 0, 512, 1024}, Case{16, 1u << 20, 1024, 0, 1024, 1024},
                          Case{8, 1u << 20, 1024, 4096, 64, 1024}, Case{4, 1u << 24, 0, 0, 128, 512}}) {
        PlanOptions o;
        o.path = Path::single_pass;
        o.single_pass = SinglePass::allowed;
        o.chunk_elements = c.chunk_option;
        o.single_pass_patience = c.patience;
        DeviceInfo other = lavapipe(c.subgroup);
        other.driver_id = VK_DRIVER_ID_MESA_RADV;
        const std::string which = "1x" + std::to_string(c.cols) + " at subgroups of " + std::to_string(c.subgroup) +
                                  ", chunks of " + std::to_string(c.chunk_option) + " asked, patience " +
                                  std::to_string(c.patience);
        const Plan plan = plan_geometry(lavapipe(c.subgroup), rows_of(1, c.cols), o);
        EXPECT_EQ(plan.push.chunks, c.chunks) << which << " on llvmpipe (chunks of " << plan.push.chunk << ")";
        EXPECT_GE(uint64_t{plan.push.chunks} * plan.push.chunk, c.cols) << which << ": the row not covered";
        EXPECT_EQ(plan.workspace_bytes, 2 * plan.push.chunks * 16u + 16) << which << ": the workspace of its chunks";
        EXPECT_EQ(plan_geometry(other, rows_of(1, c.cols), o).push.chunks, c.elsewhere) << which << " on another driver";
    }
}

// fp32 backward rows held in registers at 1024 x 8 (y and dy: 64 floats a
// lane, all of an NVIDIA SM's registers) read dy again for the write
// (REREAD_GRADIENT). Rows at 8 slots in narrower workgroups and subgroup
// rows, rows at fewer slots, rows read tile by tile, rows not a multiple
// of 4 long, 16-bit rows and the forward pass hold what they read.
TEST(Plan, BackwardRowsAt1024x8RereadTheGradient) {
    const DeviceInfo h100 = counted_h100();
    struct Case {
        uint64_t rows, cols;
        Dtype dtype;
        bool backward;
        uint32_t workgroup, slots;  // the plan's geometry, as a check on the case
        bool rereads;
    };
    for (const Case& c : {Case{1024, 32768, Dtype::f32, true, 1024, 8, true},
                          Case{264, 32768, Dtype::f32, true, 1024, 8, true},
                          Case{200, 32000, Dtype::f32, true, 1024, 8, true},
                          Case{1024, 16384, Dtype::f32, true, 512, 8, false},
                          Case{20480, 4096, Dtype::f32, true, 128, 8, false},
                          Case{4096, 1024, Dtype::f32, true, 128, 8, false},
                          Case{4096, 1000, Dtype::f32, true, 128, 8, false},
                          Case{1024, 20000, Dtype::f32, true, 1024, 5, false},
                          Case{256, 24576, Dtype::f32, true, 1024, 6, false},
                          Case{1024, 512, Dtype::f32, true, 128, 4, false},
                          Case{128, 32000, Dtype::f32, true, 1024, 4, false},
                          Case{4096, 1021, Dtype::f32, true, 128, 8, false},
                          Case{1024, 32768, Dtype::f16, true, 1024, 8, false},
                          Case{1024, 32768, Dtype::f32, false, 512, 16, false}}) {
        Problem p = rows_of(c.rows, c.cols, c.dtype);
        p.backward = c.backward;
        const Plan plan = plan_geometry(h100, p);
        const std::string which = std::string(c.backward ? "backward " : "forward ") + what(p) + ": " +
                                  path_name(plan.path) + " at " + std::to_string(plan.key[0].workgroup_size) + " x " +
                                  std::to_string(plan.key[0].slots) + ", pipeline " + plan.key[0].id();
        ASSERT_EQ(plan.passes, 1u) << which;
        EXPECT_EQ(plan.key[0].workgroup_size, c.workgroup) << which;
        EXPECT_EQ(plan.key[0].slots, c.slots) << which;
        EXPECT_EQ(plan.key[0].reread_gradient, c.rereads) << which;
    }
}

// A single-pass pipeline is specialized for its plan's chunks: held in one
// tile each (HELD_CHUNKS) or re-read, and the partials a gathering lane
// loads at once (GATHER_AHEAD): its count of the row's chunks, 1 to 4
// (subgroup 0's lanes gather rows of up to 32 chunks a lane, the whole
// workgroup longer ones, and every lane without subgroup arithmetic).
TEST(Plan, SinglePassPipelineFitsItsChunks) {
    const DeviceInfo h100 = counted_h100();
    struct Case {
        uint64_t rows, cols;
        uint32_t chunk_option;  // 0: the plan's chunks
        bool subgroups;
        bool held;
        uint32_t ahead;
    };
    for (const Case& c : {Case{1, 131072, 0, true, true, 1},       // 32 chunks of 4096 at 256 x 4
                          Case{1, 262144, 0, true, true, 2},       // 64 of 4096
                          Case{1, 524288, 0, true, true, 2},       // 64 of 8192 at 256 x 8
                          Case{16, 524288, 0, true, false, 1},     // a resident batch: 32 of 16384 re-read
                          Case{1, 524288, 4096, true, true, 4},    // 128 chunks forced
                          Case{1, 1u << 22, 4096, true, true, 4},  // 1024 chunks: 32 a lane, 4 at once
                          Case{1, 524288, 4096, false, true, 1}}) {  // the workgroup's 256 lanes gather
        PlanOptions options;
        options.path = Path::single_pass;
        options.chunk_elements = c.chunk_option;
        const Plan plan = plan_geometry(c.subgroups ? h100 : without_subgroups(), rows_of(c.rows, c.cols), options);
        const std::string what = std::to_string(c.rows) + "x" + std::to_string(c.cols) +
                                 (c.chunk_option ? " in chunks of " + std::to_string(c.chunk_option) : "") +
                                 (c.subgroups ? "" : " without subgroup arithmetic") + ": " +
                                 std::to_string(plan.push.chunks) + " chunks of " + std::to_string(plan.push.chunk) +
                                 " at " + std::to_string(plan.key[0].workgroup_size) + " x " +
                                 std::to_string(plan.key[0].slots) + ", pipeline " + plan.key[0].id();
        ASSERT_EQ(plan.path, Path::single_pass) << what;
        EXPECT_EQ(plan.key[0].held_chunks, c.held) << what;
        EXPECT_EQ(plan.key[0].gather_ahead, c.ahead) << what;
    }
    const Plan rows = plan_geometry(h100, rows_of(1, 4096));
    EXPECT_FALSE(rows.key[0].held_chunks) << "a row path: " << rows.key[0].id();
    EXPECT_EQ(rows.key[0].gather_ahead, 1u) << "a row path: " << rows.key[0].id();
}

// `conformance --save-failures`: a failing check's tensors written as .npy
// files in their storage types, read back here with the CLI's reader,
// and the JSON file that names the check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "failure_files.hpp"
#include "npy.hpp"
#include "vksoftmax/half.hpp"

namespace vksoftmax::cli {
namespace {

class FailureFiles : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/vksoftmax-failures-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

    // The element values of a 16-bit file, as floats.
    static std::vector<float> values16(const npy::Array& a, Dtype dtype) {
        std::vector<float> out;
        for (size_t i = 0; i + 1 < a.data.size(); i += 2)
            out.push_back(from_16bit(dtype, static_cast<uint16_t>(a.data[i] | (a.data[i + 1] << 8))));
        return out;
    }

    std::string dir_;
};

// A failing f16 attention check of 2 rows of 3 (a NaN output in row 0),
// its bf16 mask (2, 3).
conformance::Result failing_f16_check() {
    auto e = std::make_shared<conformance::Evidence>();
    e->shape = {2, 3, 1};
    e->dtype = Dtype::f16;
    e->inputs = {1.0, -2.5, 0.5, 3.0, 0.25, -1.0};
    e->outputs = {std::nan(""), 0.0, 0.5, 0.75, 0.125, 0.125};
    e->reference = {0.5, 0.25, 0.25, 0.75, 0.125, 0.125};
    e->mask = {0.0, -std::numeric_limits<double>::infinity(), -1.5, 0.0, 0.0, -0.5};
    e->mask_dtype = Dtype::bf16;
    e->mask_rows = 2;
    conformance::Result r;
    r.case_name = "f16 softmax (1,1,2,3) attention mask bf16 (2,3)";
    r.variant = "subgroup-row/subgroup/fast";
    r.subgroup_size = 32;
    r.seed = 3141592653u;
    r.note = "element 0 is not finite";
    r.evidence = e;
    return r;
}

TEST_F(FailureFiles, TensorsInTheirStorageTypesAndTheCheckNamed) {
    const std::string json = save_failure(dir_ + "/saved", "failure-1", failing_f16_check());
    ASSERT_EQ(json, dir_ + "/saved/failure-1.json");

    const npy::Array input = npy::read(dir_ + "/saved/failure-1-input.npy");
    EXPECT_EQ(input.header.kind, npy::Kind::f16) << "the input is written in the check's storage type";
    EXPECT_EQ(input.header.shape, (std::vector<uint64_t>{2, 3, 1})) << "the input's (outer, axis, inner)";
    EXPECT_EQ(values16(input, Dtype::f16), (std::vector<float>{1.f, -2.5f, 0.5f, 3.f, 0.25f, -1.f}));

    const std::vector<float> output = values16(npy::read(dir_ + "/saved/failure-1-output.npy"), Dtype::f16);
    ASSERT_EQ(output.size(), 6u);
    EXPECT_TRUE(std::isnan(output[0])) << "the output's NaN was written as " << output[0];
    EXPECT_EQ(output[1], 0.f);
    EXPECT_EQ(values16(npy::read(dir_ + "/saved/failure-1-reference.npy"), Dtype::f16),
              (std::vector<float>{0.5f, 0.25f, 0.25f, 0.75f, 0.125f, 0.125f}));

    const npy::Array mask = npy::read(dir_ + "/saved/failure-1-mask.npy");
    EXPECT_EQ(mask.header.kind, npy::Kind::bf16) << "the mask is written in its own storage type";
    EXPECT_EQ(mask.header.shape, (std::vector<uint64_t>{2, 3})) << "the mask's (rows, axis)";
    const std::vector<float> m = values16(mask, Dtype::bf16);
    ASSERT_EQ(m.size(), 6u);
    EXPECT_TRUE(std::isinf(m[1]) && m[1] < 0) << "the mask's -inf was written as " << m[1];
    EXPECT_EQ(m[2], -1.5f);
    EXPECT_NE(access((dir_ + "/saved/failure-1-gradient.npy").c_str(), F_OK), 0) << "a forward check has no dy";

    std::ifstream f(json);
    std::stringstream text;
    text << f.rdbuf();
    const auto about = nlohmann::json::parse(text.str());
    EXPECT_EQ(about.at("case"), "f16 softmax (1,1,2,3) attention mask bf16 (2,3)");
    EXPECT_EQ(about.at("variant"), "subgroup-row/subgroup/fast");
    EXPECT_EQ(about.at("seed"), 3141592653u);
    EXPECT_EQ(about.at("subgroup_size"), 32);
    EXPECT_EQ(about.at("note"), "element 0 is not finite");
    EXPECT_EQ(about.at("files").at("mask"), "failure-1-mask.npy");
    EXPECT_EQ(about.at("again"), "vksoftmax conformance --seed 3141592653 --filter '^f16 softmax (1,1,2,3) attention "
                                 "mask bf16 (2,3) subgroup-row/subgroup/fast'")
        << "the command that runs the check again";
}

TEST_F(FailureFiles, BackwardChecksKeepTheirGradient) {
    conformance::Result r = failing_f16_check();
    auto e = std::make_shared<conformance::Evidence>(*r.evidence);
    e->gradient = {0.5, -0.5, 1.0, 0.0, 2.0, -2.0};
    e->mask.clear();
    r.evidence = e;
    ASSERT_FALSE(save_failure(dir_, "stress-1", r).empty());
    EXPECT_EQ(values16(npy::read(dir_ + "/stress-1-gradient.npy"), Dtype::f16),
              (std::vector<float>{0.5f, -0.5f, 1.f, 0.f, 2.f, -2.f}));
    EXPECT_NE(access((dir_ + "/stress-1-mask.npy").c_str(), F_OK), 0) << "a check without a mask wrote one";
}

TEST_F(FailureFiles, NothingWithoutEvidence) {
    conformance::Result r = failing_f16_check();
    r.evidence.reset();
    EXPECT_EQ(save_failure(dir_ + "/none", "failure-1", r), "");
    EXPECT_NE(access((dir_ + "/none").c_str(), F_OK), 0) << "a folder was made for a result with no tensors";
}

}  // namespace
}  // namespace vksoftmax::cli

#include "failure_files.hpp"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "npy.hpp"
#include "output_file.hpp"
#include "tensor.hpp"
#include "vksoftmax/accuracy.hpp"

namespace vksoftmax::cli {
namespace {

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
    OutputFile f(path);
    f.commit(bytes);
}

// `values` (already representable in `dtype`) as a .npy file of that type.
void write_npy(const std::string& path, const std::vector<double>& values, Dtype dtype,
               const std::vector<uint64_t>& dims) {
    const std::vector<uint8_t> data = to_storage(values, dtype);
    write_file(path, npy::encode(npy_kind(dtype), dims, false, data.data(), data.size()));
}

}  // namespace

std::string save_failure(const std::string& folder, const std::string& prefix, const conformance::Result& r) {
    if (!r.evidence) return "";
    const conformance::Evidence& e = *r.evidence;
    std::error_code error;
    std::filesystem::create_directories(folder, error);
    if (error) throw FileError("cannot create " + folder + ": " + error.message());
    const std::string base = (std::filesystem::path(folder) / prefix).string();
    const std::vector<uint64_t> dims = {e.shape.outer, e.shape.axis, e.shape.inner};
    nlohmann::json files = {{"input", prefix + "-input.npy"},
                            {"output", prefix + "-output.npy"},
                            {"reference", prefix + "-reference.npy"}};
    write_npy(base + "-input.npy", e.inputs, e.dtype, dims);
    write_npy(base + "-output.npy", e.outputs, e.dtype, dims);
    write_npy(base + "-reference.npy", e.reference, e.dtype, dims);
    if (!e.gradient.empty()) {
        write_npy(base + "-gradient.npy", e.gradient, e.dtype, dims);
        files["gradient"] = prefix + "-gradient.npy";
    }
    if (!e.mask.empty()) {
        write_npy(base + "-mask.npy", e.mask, e.mask_dtype, {e.mask_rows, e.shape.axis});
        files["mask"] = prefix + "-mask.npy";
    }
    const nlohmann::json about = {
        {"case", r.case_name},
        {"variant", r.variant},
        {"subgroup_size", r.subgroup_size},
        {"seed", r.seed},
        {"note", r.note},
        {"max_rel", r.max_rel},
        {"rel_bound", r.rel_bound},
        {"shape", {{"outer", e.shape.outer}, {"axis", e.shape.axis}, {"inner", e.shape.inner}}},
        {"dtype", dtype_name(e.dtype)},
        {"files", files},
        {"again", "vksoftmax conformance --seed " + std::to_string(r.seed) + " --filter '^" + r.case_name + " " +
                      r.variant + "'"}};
    const std::string text = about.dump(1) + "\n";
    write_file(base + ".json", std::vector<uint8_t>(text.begin(), text.end()));
    return base + ".json";
}

}  // namespace vksoftmax::cli

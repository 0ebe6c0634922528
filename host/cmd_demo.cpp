// vksoftmax demo: a few million random logits through both GPU paths,
// checked against the CPU reference.
#include <fmt/core.h>

#include <random>
#include <vector>

#include "commands.hpp"
#include "vksoftmax/accuracy.hpp"
#include "vksoftmax/context.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/run.hpp"

namespace vksoftmax::cli {

Command add_demo(CLI::App& app) {
    auto* sub = app.add_subcommand("demo", "Softmax of random logits on the default device, checked against the CPU");
    auto device = std::make_shared<std::string>();
    sub->add_option("--device", *device, "Device index or part of its name (see 'vksoftmax devices')");
    sub->footer("Example: vksoftmax demo --device 0");
    return [device]() {
        Context ctx(ContextOptions{*device});
        const DeviceInfo& d = ctx.info();
        fmt::print("device: {} ({}, {} {}, Vulkan {})\n", d.name, d.type_name(),
                   d.driver_name.empty() ? d.vendor_name() : d.driver_name, d.driver_info, d.api_string());
        // A row-resident shape and a long-row shape: one of each GPU path.
        const Shape shapes[] = {{4096, 1024, 1}, {4, 1u << 20, 1}};
        std::mt19937 rng(std::random_device{}());
        std::normal_distribution<float> logits(0.f, 4.f);
        bool all_ok = true;
        for (const Shape& s : shapes) {
            Problem p;
            p.shape = s;
            std::vector<float> x(s.elements()), y(s.elements());
            for (float& v : x) v = logits(rng);
            RunResult r = run(ctx, p, x.data(), y.data());
            std::vector<double> xd(x.begin(), x.end()), ref(x.size());
            cpu::softmax(p, xd.data(), ref.data());
            const Bound bound = accuracy_bound(p.dtype, p.log);
            Accuracy acc = compare(p, std::vector<double>(y.begin(), y.end()), ref);
            const bool ok = acc.within(bound.rel, 0.0);
            all_ok = all_ok && ok;
            std::string timing = r.timed ? fmt::format("GPU {:.1f} us, {:.3g} GB/s", r.gpu_ns / 1e3,
                                                       2.0 * static_cast<double>(r.plan.tensor_bytes) / r.gpu_ns)
                                         : std::string("no GPU timestamps on this device");
            fmt::print("softmax f32 {} x {} ({}, {} pass{}): {}, max rel error {:.2e} vs CPU float64 {}\n", s.outer,
                       s.axis, path_name(r.plan.path), r.plan.passes, r.plan.passes > 1 ? "es" : "", timing,
                       acc.max_rel, ok ? "(ok)" : "(FAILED: over 1e-5)");
        }
        return all_ok ? int(Exit::ok) : int(Exit::failed_check);
    };
}

}  // namespace vksoftmax::cli

// vksoftmax devices: every Vulkan device and what vksoftmax sees in it.
#include <fmt/core.h>
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "vksoftmax/context.hpp"

namespace vksoftmax::cli {
namespace {

nlohmann::json to_json(const DeviceInfo& d, bool is_default) {
    return {{"index", d.index},
            {"name", d.name},
            {"vendor", d.vendor_name()},
            {"vendor_id", d.vendor_id},
            {"device_id", d.device_id},
            {"driver", d.driver_name},
            {"driver_info", d.driver_info},
            {"driver_version", d.driver_version},
            {"type", d.type_name()},
            {"api_version", d.api_string()},
            {"subgroup_size", d.subgroup_size},
            {"subgroup_operations", d.subgroup_ops_string()},
            {"subgroup_size_control", d.subgroup_size_control},
            {"min_subgroup_size", d.min_subgroup_size},
            {"max_subgroup_size", d.max_subgroup_size},
            {"subgroup_uniform_control_flow", d.subgroup_uniform_control_flow},
            {"fp16_storage", d.storage_16bit},
            {"shader_float16", d.shader_float16},
            {"timestamps", d.timestamps()},
            {"timestamp_period_ns", d.timestamp_period},
            {"timestamp_valid_bits", d.timestamp_valid_bits},
            {"max_storage_buffer_range", d.max_storage_buffer_range},
            {"queue_family", d.queue_family},
            {"compute_queue_families", d.compute_queue_families},
            {"default", is_default}};
}

}  // namespace

Command add_devices(CLI::App& app) {
    auto* sub = app.add_subcommand("devices", "List Vulkan devices and the one 'run' picks by default");
    auto json = std::make_shared<bool>(false);
    sub->add_flag("--json", *json, "Print one JSON array");
    sub->footer("Example: vksoftmax devices --json");
    return [json]() {
        DeviceList list = list_devices();
        if (*json) {
            nlohmann::json arr = nlohmann::json::array();
            for (size_t i = 0; i < list.devices.size(); ++i)
                arr.push_back(to_json(list.devices[i], static_cast<int>(i) == list.default_index));
            fmt::print("{}\n", arr.dump(2));
            return list.devices.empty() ? int(Exit::no_device) : int(Exit::ok);
        }
        if (list.devices.empty()) {
            fmt::print(stderr, "vksoftmax: no Vulkan device found\n");
            return int(Exit::no_device);
        }
        for (size_t i = 0; i < list.devices.size(); ++i) {
            const DeviceInfo& d = list.devices[i];
            fmt::print("{}{}: {} ({}, {})\n", static_cast<int>(i) == list.default_index ? "*" : " ", i, d.name,
                       d.vendor_name(), d.type_name());
            fmt::print("    driver {} {}, Vulkan {}\n", d.driver_name.empty() ? "?" : d.driver_name, d.driver_info,
                       d.api_string());
            fmt::print("    subgroup size {} (control: {}), operations: {}, uniform control flow: {}\n",
                       d.subgroup_size,
                       d.subgroup_size_control ? fmt::format("{}..{}", d.min_subgroup_size, d.max_subgroup_size)
                                               : std::string("no"),
                       d.subgroup_ops_string(), d.subgroup_uniform_control_flow ? "yes" : "no");
            fmt::print("    fp16 storage: {}, timestamps: {}, max buffer range: {} bytes\n",
                       d.storage_16bit ? "yes" : "no",
                       d.timestamps() ? fmt::format("{} ns/tick, {} bits", d.timestamp_period, d.timestamp_valid_bits)
                                      : std::string("no"),
                       d.max_storage_buffer_range);
            if (d.multiprocessors) fmt::print("    multiprocessors: {}\n", d.multiprocessors);
            fmt::print("    queue families with compute: {} (the first is used; bench --queue-family takes another)\n",
                       fmt::join(d.compute_queue_families, ", "));
        }
        const std::vector<std::string> drivers = loaded_vulkan_drivers();
        fmt::print("Vulkan drivers mapped: {}\n", drivers.empty() ? std::string("none") : fmt::format("{}", fmt::join(drivers, ", ")));
        fmt::print("(* = the device 'run' uses by default)\n");
        return int(Exit::ok);
    };
}

}  // namespace vksoftmax::cli

// vksoftmax: softmax of .npy tensors with Vulkan compute shaders.
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdio>

#include "commands.hpp"
#include "npy.hpp"
#include "output_file.hpp"
#include "printable.hpp"
#include "vksoftmax/error.hpp"

namespace vksoftmax::cli {

// Messages quote paths and file contents: printed through printable().
void report(const char* message) { fmt::print(stderr, "vksoftmax: {}\n", printable(message)); }

SinglePass parse_single_pass(const std::string& text) {
    constexpr SinglePass values[] = {SinglePass::automatic, SinglePass::allowed, SinglePass::never};
    return parse_choice("--single-pass", text, values, single_pass_name);
}

std::string single_pass_help() {
    return "Long rows in one dispatch: automatic (default: where the device has the Vulkan memory model and the path "
           "was measured faster on its vendor's devices), allowed (wherever it has the memory model), never (two "
           "dispatches)";
}

int guarded(const std::function<int()>& body) {
    try {
        return body();
    } catch (const Error& e) {
        report(e.what());
        switch (e.kind()) {
            case ErrorKind::invalid_argument: return Exit::usage;
            case ErrorKind::unsupported: return Exit::no_device;
            default: return Exit::device_error;
        }
    } catch (const npy::FormatError& e) {
        report(e.what());
        return Exit::bad_input;
    } catch (const FileError& e) {
        report(e.what());
        return Exit::bad_input;
    } catch (const std::bad_alloc&) {
        report("out of host memory");
        return Exit::device_error;
    } catch (const std::exception& e) {
        report(e.what());
        return Exit::device_error;
    }
}

}  // namespace vksoftmax::cli

namespace {

// Registers the subcommands, parses the command line and runs the one it
// names; main() runs it through guarded(), so an error while the
// subcommands are registered is reported as one while they run is.
int parse_and_run(int argc, char** argv) {
    using namespace vksoftmax::cli;
    CLI::App app{"vksoftmax: softmax and log-softmax with Vulkan compute shaders"};
    app.set_version_flag("--version", std::string("vksoftmax ") + VKSOFTMAX_VERSION);
    app.require_subcommand(1);
    app.footer("Run 'vksoftmax SUBCOMMAND --help' for a subcommand's options and an example.");
    Command devices = add_devices(app);
    Command demo = add_demo(app);
    Command run = add_run(app);
    Command backward = add_backward(app);
    Command bench = add_bench(app);
    Command conformance = add_conformance(app);
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        report(e.what());
        return Exit::usage;
    }
    for (CLI::App* sub : app.get_subcommands()) {
        const std::string& name = sub->get_name();
        if (name == "devices") return devices();
        if (name == "demo") return demo();
        if (name == "run") return run();
        if (name == "backward") return backward();
        if (name == "bench") return bench();
        if (name == "conformance") return conformance();
    }
    return Exit::usage;
}

}  // namespace

int main(int argc, char** argv) {
    return vksoftmax::cli::guarded([&] { return parse_and_run(argc, argv); });
}

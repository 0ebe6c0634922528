// The subcommands of the vksoftmax command line; each registers its options
// on a CLI11 app and returns the process exit code when run.
#pragma once
#include <CLI/CLI.hpp>

#include <cstddef>
#include <functional>
#include <string>

#include "vksoftmax/error.hpp"
#include "vksoftmax/plan.hpp"

namespace vksoftmax::cli {

// Exit codes (documented in README): below 128, never a crash.
enum Exit : int {
    ok = 0,
    failed_check = 1,   // ran, but a --check or conformance bound failed
    usage = 2,          // bad arguments
    bad_input = 3,      // unreadable, malformed or unsupported input file; unwritable output
    no_device = 4,      // no suitable device, or a feature it lacks
    device_error = 5,   // Vulkan failed: out of memory, device lost, ...
};

using Command = std::function<int()>;

Command add_devices(CLI::App& app);
Command add_demo(CLI::App& app);
Command add_run(CLI::App& app);
Command add_backward(CLI::App& app);
Command add_bench(CLI::App& app);
Command add_conformance(CLI::App& app);

// The value of an option that names one of `values` (each named by
// `name`): the first, automatic, where `text` is empty; for any other word
// Error(invalid_argument) quoting `option`, the word and the names it takes
// ("--single-pass: 'x' is not automatic, allowed or never").
template <typename Choice, size_t N>
Choice parse_choice(const char* option, const std::string& text, const Choice (&values)[N], const char* (*name)(Choice)) {
    if (text.empty()) return values[0];
    std::string names;
    for (size_t i = 0; i < N; ++i) {
        if (text == name(values[i])) return values[i];
        names += std::string(i == 0 ? "" : i + 1 == N ? " or " : ", ") + name(values[i]);
    }
    throw Error(ErrorKind::invalid_argument, std::string(option) + ": '" + text + "' is not " + names);
}

// --single-pass TEXT: automatic (or empty), allowed or never; anything else
// is Error(invalid_argument). single_pass_help() is the option's help text.
SinglePass parse_single_pass(const std::string& text);
std::string single_pass_help();

// Runs `body`, turning vksoftmax and std exceptions into one line on stderr
// and the exit code that matches their kind.
int guarded(const std::function<int()>& body);

}  // namespace vksoftmax::cli

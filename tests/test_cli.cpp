// End-to-end tests of the vksoftmax binary: .npy files written here byte by
// byte (not with the CLI's own writer), every subcommand's happy path, and
// every bad input the CLI promises a clear error for: exit code, message,
// and a pre-existing output left exactly as it was.
#include <gtest/gtest.h>
#include <dirent.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "vksoftmax/accuracy.hpp"
#include "vksoftmax/cpu.hpp"
#include "vksoftmax/half.hpp"

#ifndef VKSOFTMAX_CLI
#error "VKSOFTMAX_CLI must name the built binary"
#endif

namespace {

struct Result {
    int code;
    std::string out, err;
};

class Cli : public ::testing::Test {
protected:
    void SetUp() override {
        char tmpl[] = "/tmp/vksoftmax-cli-XXXXXX";
        ASSERT_NE(mkdtemp(tmpl), nullptr);
        dir_ = tmpl;
    }
    void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }

    std::string path(const std::string& name) const { return dir_ + "/" + name; }

    Result cli(const std::string& args) const {
        const std::string out = path("stdout.txt"), err = path("stderr.txt");
        const int status = std::system((binary() + " " + args + " >" + out + " 2>" + err).c_str());
        return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(out), slurp(err)};
    }

    // A bench refused before it timed anything: exit 2, `message` on
    // stderr, and no JSON written.
    void expect_bench_refused(const std::string& args, const std::string& message) const {
        const std::string json = path("refused.json");
        const Result r = cli("bench " + args + " --iters 2 --repeats 2 --warmup-ms 5 --json " + json);
        EXPECT_EQ(r.code, 2) << args << ": " << r.out << r.err;
        EXPECT_NE(r.err.find(message), std::string::npos) << args << ": " << r.err;
        EXPECT_FALSE(std::filesystem::exists(json)) << args << ": a JSON written for a refused bench";
    }

    // The binary: built here, or $VKSOFTMAX_CLI where the tree was moved (device runs).
    static std::string binary() {
        const char* env = std::getenv("VKSOFTMAX_CLI");
        return env ? env : VKSOFTMAX_CLI;
    }

    // The names in the test folder that hold `part`.
    std::vector<std::string> files_with(const char* part) const {
        std::vector<std::string> found;
        DIR* d = opendir(dir_.c_str());
        if (!d) return found;
        while (dirent* e = readdir(d))
            if (std::strstr(e->d_name, part)) found.push_back(e->d_name);
        closedir(d);
        return found;
    }

    // cli() in a child process whose `resource` is limited to `limit`, with
    // SIGXFSZ ignored (so that a write past RLIMIT_FSIZE fails with EFBIG,
    // as on a full disk, instead of killing the process).
    Result cli_limited(const std::string& args, int resource, rlim_t limit) const {
        const std::string out = path("stdout.txt"), err = path("stderr.txt");
        const std::string command = binary() + " " + args + " >" + out + " 2>" + err;
        const pid_t child = fork();
        if (child == 0) {
            const rlimit r{limit, limit};
            signal(SIGXFSZ, SIG_IGN);
            if (setrlimit(static_cast<__rlimit_resource>(resource), &r) != 0) _exit(126);
            execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
            _exit(127);
        }
        int status = 0;
        waitpid(child, &status, 0);
        return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), slurp(out), slurp(err)};
    }

    static std::string slurp(const std::string& p) {
        std::ifstream f(p, std::ios::binary);
        std::stringstream s;
        s << f.rdbuf();
        return s.str();
    }
    static void spit(const std::string& p, const std::string& bytes) {
        std::ofstream f(p, std::ios::binary);
        f << bytes;
    }

    // A version 1.0 .npy, header padded to 64 bytes as NumPy does.
    static std::string npy(const std::string& descr, const std::string& shape, const std::string& data,
                           bool fortran = false, const std::string& dict_override = "") {
        std::string dict = dict_override.empty() ? "{'descr': '" + descr + "', 'fortran_order': " +
                                                       (fortran ? "True" : "False") + ", 'shape': " + shape + ", }"
                                                 : dict_override;
        const size_t total = 10 + dict.size() + 1;
        dict.append((64 - total % 64) % 64, ' ');
        dict += '\n';
        std::string h = std::string("\x93NUMPY\x01\x00", 8);
        h += static_cast<char>(dict.size() & 0xff);
        h += static_cast<char>(dict.size() >> 8);
        return h + dict + data;
    }
    template <typename T>
    static std::string bytes_of(const std::vector<T>& v) {
        return std::string(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
    }
    static std::vector<float> logits(size_t n) {
        std::mt19937 rng(std::random_device{}());
        std::normal_distribution<float> d(0.f, 4.f);
        std::vector<float> x(n);
        for (float& v : x) v = d(rng);
        return x;
    }
    // The data of an output .npy, read after its header.
    static std::string data_of(const std::string& file) {
        const std::string b = slurp(file);
        if (b.size() < 10) return "";
        const size_t len = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
        return b.substr(10 + len);
    }
    static std::string header_of(const std::string& file) {
        const std::string b = slurp(file);
        if (b.size() < 10) return "";
        const size_t len = static_cast<unsigned char>(b[8]) | (static_cast<unsigned char>(b[9]) << 8);
        return b.substr(10, len);
    }

    // Expects `args` to fail with `code` and a one-line message containing
    // `needle`, leaving the pre-existing output untouched.
    void expect_failure(const std::string& args, int code, const std::string& needle) {
        const std::string sentinel = "previous output, must survive";
        spit(path("out.npy"), sentinel);
        Result r = cli(args + " -o " + path("out.npy"));
        EXPECT_EQ(r.code, code) << args << "\nstderr: " << r.err;
        EXPECT_NE(r.err.find(needle), std::string::npos) << args << ": stderr lacks '" << needle << "': " << r.err;
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "want one line: " << r.err;
        EXPECT_EQ(slurp(path("out.npy")), sentinel) << args << ": the existing output was changed";
        EXPECT_EQ(r.err.find("terminate"), std::string::npos) << r.err;
    }

    // The default device's maxStorageBufferRange, as `devices --json` reports it.
    unsigned long long max_storage_buffer_range() const {
        const Result j = cli("devices --json");
        const size_t at = j.out.find("\"max_storage_buffer_range\": ");
        EXPECT_NE(at, std::string::npos) << j.out;
        return at == std::string::npos ? 0 : std::stoull(j.out.substr(at + 28));
    }

    std::string dir_;
};

TEST_F(Cli, VersionAndHelp) {
    Result v = cli("--version");
    EXPECT_EQ(v.code, 0);
    EXPECT_NE(v.out.find("vksoftmax "), std::string::npos) << v.out;
    for (const char* sub : {"run", "devices", "demo"}) {
        Result h = cli(std::string(sub) + " --help");
        EXPECT_EQ(h.code, 0) << sub;
        EXPECT_NE(h.out.find("Example: vksoftmax " + std::string(sub)), std::string::npos) << sub << ": " << h.out;
    }
    EXPECT_EQ(cli("").code, 2) << "no subcommand is a usage error";
    EXPECT_EQ(cli("frobnicate").code, 2);
}

// bench's options come in groups, what to time first and the plan's
// overrides last, each option under its own group's heading.
TEST_F(Cli, BenchHelpGroupsItsOptions) {
    Result h = cli("bench --help");
    ASSERT_EQ(h.code, 0) << h.err;
    const std::pair<const char*, const char*> groups[] = {
        {"What to time:", "--shapes"},
        {"How to time:", "--warmup-ms"},
        {"Output:", "--json"},
        {"Tuning and diagnosis (override the plan's choices):", "--nonfinite"},
    };
    std::vector<size_t> headings;
    for (const auto& [heading, option] : groups) {
        const size_t at = h.out.find(heading);
        ASSERT_NE(at, std::string::npos) << "no heading '" << heading << "' in:\n" << h.out;
        if (!headings.empty()) {
            ASSERT_GT(at, headings.back()) << "'" << heading << "' is out of order in:\n" << h.out;
        }
        headings.push_back(at);
    }
    headings.push_back(h.out.size());
    for (size_t i = 0; i < std::size(groups); ++i) {
        const auto& [heading, option] = groups[i];
        const size_t option_at = h.out.find(std::string("  ") + option + " ");
        ASSERT_NE(option_at, std::string::npos) << "no " << option << " in:\n" << h.out;
        EXPECT_TRUE(option_at > headings[i] && option_at < headings[i + 1])
            << option << " is not under '" << heading << "' in:\n" << h.out;
    }
    EXPECT_NE(h.out.find("Example: vksoftmax bench"), std::string::npos) << h.out;
}

TEST_F(Cli, DevicesListsTheDefault) {
    Result r = cli("devices");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("*0:"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("subgroup size"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("queue families with compute: 0"), std::string::npos) << r.out;
    // The driver that answered, by its file (lavapipe: libvulkan_lvp.so).
    const size_t drivers = r.out.find("Vulkan drivers mapped: ");
    ASSERT_NE(drivers, std::string::npos) << r.out;
    EXPECT_NE(r.out.find(".so", drivers), std::string::npos) << "no shared object named after 'Vulkan drivers mapped': " << r.out;
    Result j = cli("devices --json");
    ASSERT_EQ(j.code, 0) << j.err;
    for (const char* key : {"\"subgroup_size\"", "\"fp16_storage\"", "\"timestamps\"", "\"max_storage_buffer_range\"",
                            "\"default\": true", "\"subgroup_operations\"", "\"api_version\"",
                            "\"compute_queue_families\": [\n      0", "\"queue_family\": 0"})
        EXPECT_NE(j.out.find(key), std::string::npos) << key << " missing from " << j.out;
}

TEST_F(Cli, DemoChecksBothPaths) {
    Result r = cli("demo");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_NE(r.out.find("device: "), std::string::npos) << r.out;
    // A row-resident path (which one depends on the subgroup size) and the split one.
    EXPECT_TRUE(r.out.find("workgroup-row") != std::string::npos || r.out.find("subgroup-row") != std::string::npos)
        << r.out;
    EXPECT_NE(r.out.find("split"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("max rel error"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("FAILED"), std::string::npos) << r.out;
}

// Every axis of a 3-D tensor, each storage type (bf16 as ml_dtypes saves it,
// '<V2'), both backends, log and temperature: the output file, in the
// input's type, against the float64 reference.
TEST_F(Cli, RoundTripsMatchTheReference) {
    const std::vector<uint64_t> dims = {3, 17, 5};
    const auto x = logits(3 * 17 * 5);
    struct Stored {
        vksoftmax::Dtype dtype;
        const char* descr;
        std::string file;
    };
    std::vector<Stored> stored = {{vksoftmax::Dtype::f32, "'<f4'", path("x32.npy")},
                                  {vksoftmax::Dtype::f16, "'<f2'", path("x16.npy")},
                                  {vksoftmax::Dtype::bf16, "'<V2'", path("xbf16.npy")}};
    for (const Stored& in : stored) {
        const std::string descr(in.descr + 1, std::strlen(in.descr) - 2);  // without the quotes
        spit(in.file, npy(descr, "(3, 17, 5)", bytes_of(vksoftmax::to_storage({x.begin(), x.end()}, in.dtype))));
    }
    for (const char* backend : {"gpu", "cpu"})
        for (const Stored& in : stored)
            for (int axis : {0, 1, 2, -1})
                for (const std::string extra : {"", " --log", " --temperature 0.5", " --scale 2"}) {
                    const std::string out = path("y.npy");
                    const std::string args = "run -i " + in.file + " -o " + out + " --axis " + std::to_string(axis) +
                                             " --backend " + backend + extra;
                    Result r = cli(args);
                    ASSERT_EQ(r.code, 0) << args << ": " << r.err;
                    EXPECT_NE(header_of(out).find(in.descr), std::string::npos) << header_of(out);
                    EXPECT_NE(header_of(out).find("(3, 17, 5)"), std::string::npos) << header_of(out);
                    vksoftmax::Problem p;
                    p.shape = vksoftmax::shape_for_axis(dims, axis);
                    p.dtype = in.dtype;
                    p.log = extra == " --log";
                    p.temperature = extra == " --temperature 0.5" ? 0.5 : 1.0;
                    p.scale = extra == " --scale 2" ? 2.0 : 1.0;
                    const std::vector<double> xd = vksoftmax::to_double(data_of(in.file).data(), x.size(), in.dtype);
                    std::vector<double> ref(x.size());
                    vksoftmax::cpu::softmax(p, xd.data(), ref.data());
                    const std::string d = data_of(out);
                    ASSERT_EQ(d.size(), x.size() * vksoftmax::dtype_size(in.dtype)) << args;
                    const vksoftmax::Bound bound = vksoftmax::accuracy_bound(in.dtype, p.log);
                    const std::vector<double> got = vksoftmax::to_double(d.data(), x.size(), in.dtype);
                    for (size_t i = 0; i < x.size(); ++i) {
                        ASSERT_LE(std::fabs(got[i] - ref[i]), bound.rel * std::max(std::fabs(ref[i]), bound.floor))
                            << args << ": element " << i << " got " << got[i] << " want " << ref[i];
                    }
                }
}

TEST_F(Cli, FortranOrderKeepsItsLayout) {
    // A (2, 3) Fortran array stores column-major: memory [a00 a10 a01 a11 a02 a12].
    const std::vector<float> mem = {0, 3, 1, 4, 2, 5};
    spit(path("f.npy"), npy("<f4", "(2, 3)", bytes_of(mem), true));
    Result r = cli("run -i " + path("f.npy") + " -o " + path("y.npy") + " --axis 1");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(header_of(path("y.npy")).find("'fortran_order': True"), std::string::npos);
    const std::string d = data_of(path("y.npy"));
    ASSERT_EQ(d.size(), 24u);
    std::vector<float> y(6);
    std::memcpy(y.data(), d.data(), 24);
    // Row 0 is (0, 1, 2) at memory 0, 2, 4: softmax along it.
    const double s = 1 + std::exp(1.0) + std::exp(2.0);
    EXPECT_NEAR(y[0], 1 / s, 1e-6);
    EXPECT_NEAR(y[2], std::exp(1.0) / s, 1e-6);
    EXPECT_NEAR(y[4], std::exp(2.0) / s, 1e-6);
    EXPECT_NEAR(y[1], 1 / s, 1e-6) << "row 1 is (3, 4, 5): the same softmax";
}

TEST_F(Cli, CheckTimeAndJson) {
    spit(path("x.npy"), npy("<f4", "(64, 1000)", bytes_of(logits(64000))));
    Result r = cli("run -i " + path("x.npy") + " -o " + path("y.npy") + " --check --time");
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("max rel error"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("rows sum to 1"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("GPU time"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("GB/s"), std::string::npos) << r.out;
    Result j = cli("run -i " + path("x.npy") + " -o " + path("y.npy") + " --check --time --json");
    ASSERT_EQ(j.code, 0) << j.err;
    for (const char* key : {"\"check\"", "\"max_rel_error\"", "\"gpu_ns\"", "\"pass_ns\"", "\"gb_per_s\"", "\"path\"",
                            "\"ok\": true", "\"device\""})
        EXPECT_NE(j.out.find(key), std::string::npos) << key << " missing: " << j.out;
}

// `bench --csv` holds every timing the table prints: pass 1 for the split
// path (empty for a one-pass plan), the copy at the case's size, and with
// --ceilings the read-only and write-only passes. --single-pass never: on
// NVIDIA's driver the plan takes a single row of 262144 in one dispatch.
TEST_F(Cli, BenchCsvHoldsEveryTiming) {
    Result r = cli(
        "bench --shapes 1024x512,1x262144 --dtype f32 --single-pass never --ceilings --iters 2 --repeats 2 "
        "--warmup-ms 5 --csv " +
        path("t.csv"));
    ASSERT_EQ(r.code, 0) << r.err;
    std::istringstream csv(slurp(path("t.csv")));
    std::string line;
    ASSERT_TRUE(std::getline(csv, line));
    EXPECT_EQ(line,
              "dtype,shape,path,passes,bytes,median_us,min_us,above_floor_us,gbps,copy_gbps,ceiling_fraction,"
              "max_rel_error,verified,pass1_us,copy_us,read_only_us,write_only_us");
    int rows = 0, split_rows = 0;
    while (std::getline(csv, line)) {
        std::vector<std::string> f;
        std::istringstream fields(line + ",");
        for (std::string v; std::getline(fields, v, ',');) f.push_back(v);
        ASSERT_EQ(f.size(), 17u) << "fields in: " << line;
        ++rows;
        EXPECT_EQ(f[12], "1") << "not verified: " << line;
        const bool split = f[2] == "split";
        split_rows += split;
        EXPECT_EQ(f[3], split ? "2" : "1") << line;
        if (split)
            EXPECT_GT(std::atof(f[13].c_str()), 0.0) << "a split row without pass 1's time: " << line;
        else
            EXPECT_EQ(f[13], "") << "a one-pass row with a pass 1 time: " << line;
        for (int k : {14, 15, 16}) EXPECT_GT(std::atof(f[k].c_str()), 0.0) << "column " << k << " empty in: " << line;
    }
    EXPECT_EQ(rows, 2);
    EXPECT_EQ(split_rows, 1) << "1x262144 should take the split path, so that pass 1's column is checked";
}

// `bench --batch` checks every problem of a batch against the reference
// (on a thread, while the batch is timed) and times the batch both ways;
// the table and the JSON say so for each case, a split one included.
TEST_F(Cli, BenchBatchChecksEveryProblem) {
    Result r = cli("bench --shapes 64x1000,1x262144 --dtype f16 --batch 3 --iters 2 --repeats 2 --warmup-ms 5 --json " +
                   path("b.json"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.find("WRONG"), std::string::npos) << r.out;
    size_t lines = 0;
    for (size_t at = r.out.find("3 problems: one batch"); at != std::string::npos;
         at = r.out.find("3 problems: one batch", at + 1))
        ++lines;
    EXPECT_EQ(lines, 2u) << "a batch line per case expected in: " << r.out;
    const std::string json = slurp(path("b.json"));
    size_t verified = 0;
    for (size_t at = json.find("\"batch_verified\": true"); at != std::string::npos;
         at = json.find("\"batch_verified\": true", at + 1))
        ++verified;
    EXPECT_EQ(verified, 2u) << "both cases' batches verified expected in: " << json;
    EXPECT_EQ(json.find("\"batch_us\": 0.0,"), std::string::npos) << "a batch without its timing: " << json;
}

// `bench --queue-family` submits to the family named, says which in the
// JSON, and refuses one the device does not have, writing nothing.
TEST_F(Cli, BenchQueueFamily) {
    const Result r =
        cli("bench --shapes 64x1000 --dtype f32 --queue-family 0 --iters 2 --repeats 2 --warmup-ms 5 --json " +
            path("q0.json"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(slurp(path("q0.json")).find("\"queue_family\": 0"), std::string::npos) << slurp(path("q0.json"));
    expect_bench_refused("--shapes 64x1000 --dtype f32 --queue-family 99", "has no queue family 99 with compute");
}

// `bench --write-shares` gives each shared row that many workgroups, shown
// in the table's geometry and the JSON, and refuses more than 16, writing
// nothing.
TEST_F(Cli, BenchWriteShares) {
    const Result r = cli("bench --shapes 20x8196 --dtype f32 --row-shares shared --write-shares 2 --iters 2 --repeats 2 "
                         "--warmup-ms 5 --json " +
                         path("s2.json"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.out.find("256/9/4 x2"), std::string::npos) << "no 2 shares at 256 x 9 in:\n" << r.out;
    EXPECT_NE(slurp(path("s2.json")).find("\"write_shares\": 2"), std::string::npos) << slurp(path("s2.json"));
    expect_bench_refused("--shapes 20x8196 --dtype f32 --write-shares 17", "write shares override 17: at most 16");
}

TEST_F(Cli, ConvertsFloat64AndIntegersWithANote) {
    spit(path("d.npy"), npy("<f8", "(2, 2)", bytes_of(std::vector<double>{0, std::log(3.0), 1, 1})));
    Result r = cli("run -i " + path("d.npy") + " -o " + path("y.npy"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("converting to float32"), std::string::npos) << r.err;
    EXPECT_NE(header_of(path("y.npy")).find("'<f4'"), std::string::npos);
    std::vector<float> y(4);
    std::memcpy(y.data(), data_of(path("y.npy")).data(), 16);
    EXPECT_NEAR(y[0], 0.25, 1e-6);
    EXPECT_NEAR(y[1], 0.75, 1e-6);
    spit(path("i.npy"), npy("<i8", "(3,)", bytes_of(std::vector<int64_t>{1, 1, 1})));
    r = cli("run -i " + path("i.npy") + " -o " + path("y.npy") + " --backend cpu");
    ASSERT_EQ(r.code, 0) << r.err;
    std::memcpy(y.data(), data_of(path("y.npy")).data(), 12);
    EXPECT_NEAR(y[2], 1.0 / 3.0, 1e-7);
}

TEST_F(Cli, ZeroSizeTensorGivesZeroSizeOutput) {
    spit(path("z.npy"), npy("<f4", "(0, 5)", ""));
    Result r = cli("run -i " + path("z.npy") + " -o " + path("y.npy"));
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(header_of(path("y.npy")).find("(0, 5)"), std::string::npos);
    EXPECT_EQ(data_of(path("y.npy")).size(), 0u);
}

// The attention options through `run`: a (2, 4, 3, 50) input with a fp16
// (1, 2, 3, 50) mask, causal with an offset, ALiBi, sinks and scale,
// against the CPU reference, the log-sum-exp file beside; and their
// refusals (exit 2 for options, 3 for files that do not fit), nothing written.
TEST_F(Cli, AttentionOptions) {
    const auto x = logits(2 * 4 * 3 * 50);
    std::vector<float> mask(2 * 3 * 50);
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> value(-4.0f, 0.0f);
    for (float& v : mask) v = value(rng);
    for (int j = 5; j < 9; ++j) mask[50 + j] = -std::numeric_limits<float>::infinity();
    std::vector<uint16_t> mask_half(mask.size());
    for (size_t i = 0; i < mask.size(); ++i) mask_half[i] = vksoftmax::float_to_half(mask[i]);
    const std::vector<float> sinks = {8, 12, -std::numeric_limits<float>::infinity(), 10};
    spit(path("x.npy"), npy("<f4", "(2, 4, 3, 50)", bytes_of(x)));
    spit(path("mask.npy"), npy("<f2", "(1, 2, 3, 50)", bytes_of(mask_half)));
    spit(path("sinks.npy"), npy("<f4", "(4,)", bytes_of(sinks)));
    for (const char* backend : {"gpu", "cpu"}) {
        const std::string args = "run -i " + path("x.npy") + " -o " + path("y.npy") + " --mask " + path("mask.npy") +
                                 " --causal=40 --alibi 8 --sinks " + path("sinks.npy") + " --lse " + path("lse.npy") +
                                 " --scale 0.5 --check --backend " + backend;
        Result r = cli(args);
        ASSERT_EQ(r.code, 0) << args << ": " << r.err << r.out;
        EXPECT_NE(r.out.find("; ok"), std::string::npos) << r.out;
        EXPECT_NE(header_of(path("lse.npy")).find("(2, 4, 3)"), std::string::npos) << header_of(path("lse.npy"));
        vksoftmax::Problem p;
        p.shape = {24, 50, 1};
        p.scale = 0.5;
        p.attention.heads = 4;
        p.attention.query_rows = 3;
        p.attention.mask = true;
        p.attention.mask_dtype = vksoftmax::Dtype::f16;
        p.attention.mask_heads = 2;
        p.attention.causal = true;
        p.attention.causal_offset = 40;
        p.attention.alibi_max_bias = 8;
        p.attention.sinks = true;
        p.attention.lse = true;
        std::vector<double> xd(x.begin(), x.end()), ref(x.size());
        std::vector<float> lse_ref(24);
        vksoftmax::cpu::softmax(p, xd.data(), ref.data(), {mask_half.data(), sinks.data(), lse_ref.data()});
        const std::string y = data_of(path("y.npy")), lse = data_of(path("lse.npy"));
        ASSERT_EQ(y.size(), 4 * x.size());
        ASSERT_EQ(lse.size(), 4u * 24u);
        for (size_t i = 0; i < x.size(); ++i) {
            float got;
            std::memcpy(&got, y.data() + 4 * i, 4);
            ASSERT_LE(std::fabs(got - ref[i]), 1e-5 * std::max(std::fabs(ref[i]), 1e-30))
                << backend << ": element " << i << " got " << got << " want " << ref[i];
        }
        for (size_t r2 = 0; r2 < 24; ++r2) {
            float got;
            std::memcpy(&got, lse.data() + 4 * r2, 4);
            EXPECT_NEAR(got, lse_ref[r2], 1e-5 * std::max(1.0f, std::fabs(lse_ref[r2]))) << backend << ": row " << r2;
        }
    }
    // bf16: the tensor with 'descr' 'bfloat16', the mask as ml_dtypes saves
    // it ('<V2'); --check judges the result against the float64 reference
    // at bf16's bound, and the output keeps the input's type.
    std::vector<uint16_t> x_bf16(x.size()), mask_bf16(mask.size());
    for (size_t i = 0; i < x.size(); ++i) x_bf16[i] = vksoftmax::float_to_bf16(x[i]);
    for (size_t i = 0; i < mask.size(); ++i) mask_bf16[i] = vksoftmax::float_to_bf16(mask[i]);
    spit(path("x_bf16.npy"), npy("bfloat16", "(2, 4, 3, 50)", bytes_of(x_bf16)));
    spit(path("mask_bf16.npy"), npy("<V2", "(1, 2, 3, 50)", bytes_of(mask_bf16)));
    for (const char* backend : {"gpu", "cpu"}) {
        const std::string args = "run -i " + path("x_bf16.npy") + " -o " + path("y_bf16.npy") + " --mask " +
                                 path("mask_bf16.npy") + " --causal=40 --alibi 8 --sinks " + path("sinks.npy") +
                                 " --scale 0.5 --check --backend " + backend;
        Result r = cli(args);
        ASSERT_EQ(r.code, 0) << args << ": " << r.err << r.out;
        EXPECT_NE(r.out.find("; ok"), std::string::npos) << r.out;
        EXPECT_NE(header_of(path("y_bf16.npy")).find("'<V2'"), std::string::npos) << header_of(path("y_bf16.npy"));
        EXPECT_EQ(data_of(path("y_bf16.npy")).size(), 2 * x.size()) << args;
    }
    spit(path("three_sinks.npy"), npy("<f4", "(3,)", bytes_of(std::vector<float>{1, 2, 3})));
    spit(path("mask_3_heads.npy"), npy("<f4", "(3, 3, 50)", bytes_of(std::vector<float>(450))));
    spit(path("mask_49.npy"), npy("<f4", "(3, 49)", bytes_of(std::vector<float>(147))));
    const std::string in = "run -i " + path("x.npy");
    expect_failure(in + " --sinks " + path("three_sinks.npy"), 3, "3 sinks, the input has 4 heads");
    expect_failure(in + " --mask " + path("mask_3_heads.npy"), 3, "mask_heads 3 does not divide the tensor's heads 4");
    expect_failure(in + " --mask " + path("mask_49.npy"), 3, "mask shape (3, 49) must be");
    expect_failure(in + " --alibi 8 --causal", 2, "ALiBi scales the mask");
    expect_failure(in + " --causal --axis 0", 2, "need softmax along the last axis");
    expect_failure(in + " --heads 3", 2, "attention heads 3");
    expect_failure(in + " --lse " + path("lse2.npy") + " --alibi -1 --mask " + path("mask.npy"), 2, "alibi_max_bias");
    EXPECT_TRUE(files_with("lse2").empty()) << "a refused run wrote its log-sum-exp";
}

// vksoftmax backward: y (a softmax or log-softmax output of random logits
// along axis 1 of (4, 33, 5)) and dy in each storage type, on both
// backends, against the float64 backward reference at the storage type's
// bound; then the refusals, which write nothing.
TEST_F(Cli, BackwardMatchesTheReference) {
    const std::vector<uint64_t> dims = {4, 33, 5};
    const size_t n = 4 * 33 * 5;
    const auto x = logits(n);
    for (const bool log : {false, true})
        for (const vksoftmax::Dtype dtype : {vksoftmax::Dtype::f32, vksoftmax::Dtype::f16, vksoftmax::Dtype::bf16}) {
            vksoftmax::Problem p;
            p.shape = vksoftmax::shape_for_axis(dims, 1);
            p.dtype = dtype;
            p.log = log;
            const vksoftmax::BackwardInputs in =
                vksoftmax::backward_inputs(p, std::vector<double>(x.begin(), x.end()), std::random_device{}());
            const std::vector<double>& y = in.y;
            const std::vector<double>& dy = in.dy;
            const char* descr = dtype == vksoftmax::Dtype::f32 ? "<f4" : dtype == vksoftmax::Dtype::f16 ? "<f2" : "<V2";
            spit(path("y.npy"), npy(descr, "(4, 33, 5)", bytes_of(vksoftmax::to_storage(y, dtype))));
            spit(path("dy.npy"), npy(descr, "(4, 33, 5)", bytes_of(vksoftmax::to_storage(dy, dtype))));
            p.backward = true;
            p.scale = 0.25;
            std::vector<double> ref(n);
            vksoftmax::cpu::softmax_backward(p, y.data(), dy.data(), ref.data());
            vksoftmax::round_to(dtype, ref);
            for (const char* backend : {"gpu", "cpu"}) {
                const std::string args = "backward -y " + path("y.npy") + " --dy " + path("dy.npy") + " -o " +
                                         path("dx.npy") + " --axis 1 --scale 0.25 --check --backend " + backend +
                                         (log ? " --log" : "");
                Result r = cli(args);
                ASSERT_EQ(r.code, 0) << args << ": " << r.err << r.out;
                EXPECT_NE(r.out.find("; ok"), std::string::npos) << r.out;
                EXPECT_NE(header_of(path("dx.npy")).find(std::string("'") + descr + "'"), std::string::npos)
                    << header_of(path("dx.npy"));
                const std::string d = data_of(path("dx.npy"));
                ASSERT_EQ(d.size(), n * vksoftmax::dtype_size(dtype)) << args;
                const vksoftmax::Accuracy acc =
                    vksoftmax::compare_backward(p, y, dy, vksoftmax::to_double(d.data(), n, dtype), ref);
                EXPECT_TRUE(acc.within(vksoftmax::accuracy_bound(dtype, log).rel, 0.0)) << args << ": " << acc.describe();
            }
        }
    spit(path("dy_short.npy"), npy("<f4", "(4, 33, 4)", bytes_of(std::vector<float>(4 * 33 * 4))));
    spit(path("y32.npy"), npy("<f4", "(4, 33, 5)", bytes_of(std::vector<float>(n, 0.5f))));
    // expect_failure() names the output (out.npy, which must survive).
    const std::string base = "backward -y " + path("y32.npy") + " --dy ";
    expect_failure(base + path("dy_short.npy"), 3, "they must match");
    expect_failure(base + path("dy.npy"), 3, "is bf16 (4, 33, 5), y");
    expect_failure(base + path("y32.npy") + " --axis 3", 2, "--axis 3 is out of range");
    expect_failure(base + path("y32.npy") + " --scale 2 --temperature 2", 2, "scale");
}

// backward --sink-gradient: y from a forward with sinks, (2, 3, 4, 50) as
// (batch, heads, query rows, n); the file holds each head's gradient, the
// sum of the reference's rows over the head's batches and query rows, on
// the GPU and the CPU; --heads that do not fit fail with exit 2 and
// nothing written.
TEST_F(Cli, BackwardSinkGradientPerHead) {
    const uint64_t batch = 2, heads = 3, query_rows = 4, n = 50, rows = batch * heads * query_rows;
    const auto x = logits(rows * n);
    const std::vector<float> sinks = {0.5f, 3.0f, -1.0f};
    for (const bool log : {false, true}) {
        vksoftmax::Problem p;
        p.shape = {rows, n, 1};
        p.log = log;
        p.attention.sinks = true;
        p.attention.heads = heads;
        p.attention.query_rows = query_rows;
        const vksoftmax::BackwardInputs in = vksoftmax::backward_inputs(p, std::vector<double>(x.begin(), x.end()),
                                                                        std::random_device{}(), sinks.data());
        spit(path("y.npy"), npy("<f4", "(2, 3, 4, 50)", bytes_of(vksoftmax::to_storage(in.y, p.dtype))));
        spit(path("dy.npy"), npy("<f4", "(2, 3, 4, 50)", bytes_of(vksoftmax::to_storage(in.dy, p.dtype))));
        p.backward = true;
        std::vector<double> dx(rows * n), row_ref(rows), want(heads, 0.0);
        vksoftmax::cpu::softmax_backward(p, in.y.data(), in.dy.data(), dx.data(), row_ref.data());
        double magnitude = 0;
        for (uint64_t r = 0; r < rows; ++r) want[r / query_rows % heads] += row_ref[r];
        for (uint64_t i = 0; i < rows * n; ++i) magnitude += std::fabs(log ? in.dy[i] : in.y[i] * in.dy[i]);
        for (const char* backend : {"gpu", "cpu"}) {
            const std::string args = "backward -y " + path("y.npy") + " --dy " + path("dy.npy") + " -o " +
                                     path("dx.npy") + " --sink-gradient " + path("sinks_grad.npy") +
                                     " --check --backend " + backend + (log ? " --log" : "");
            Result r = cli(args);
            ASSERT_EQ(r.code, 0) << args << ": " << r.err << r.out;
            EXPECT_NE(r.out.find("sink gradient, each row's: max error"), std::string::npos) << r.out;
            EXPECT_NE(header_of(path("sinks_grad.npy")).find("'shape': (3,)"), std::string::npos)
                << header_of(path("sinks_grad.npy"));
            const std::string d = data_of(path("sinks_grad.npy"));
            ASSERT_EQ(d.size(), heads * 4) << args;
            for (uint64_t h = 0; h < heads; ++h) {
                float got = 0;
                std::memcpy(&got, d.data() + 4 * h, 4);
                EXPECT_NEAR(got, want[h], 1e-5 * magnitude) << args << ": head " << h;
            }
        }
    }
    // expect_failure() names the output (out.npy, which must survive).
    expect_failure("backward -y " + path("y.npy") + " --dy " + path("dy.npy") + " --sink-gradient " +
                       path("sinks_grad.npy") + " --heads 5",
                   2, "attention heads 5");
    expect_failure("backward -y " + path("y.npy") + " --dy " + path("dy.npy") + " --heads 3", 2,
                   "--heads is for --sink-gradient");
}

TEST_F(Cli, BadInputsFailClearly) {
    const std::string good = bytes_of(std::vector<float>{1, 2, 3, 4, 5, 6});
    spit(path("good.npy"), npy("<f4", "(2, 3)", good));
    spit(path("empty.npy"), "");
    spit(path("text.npy"), "hello, this is not an array\n");
    spit(path("trunc.npy"), npy("<f4", "(2, 3)", good.substr(0, 10)));
    spit(path("extra.npy"), npy("<f4", "(2, 3)", good + "xx"));
    spit(path("lying.npy"), npy("<f4", "(4, 3)", good));
    spit(path("absurd.npy"), npy("<f4", "(99999999999, 99999999999, 99999999999)", good));
    spit(path("bigend.npy"), npy(">f4", "(2, 3)", good));
    spit(path("complex.npy"), npy("<c8", "(3,)", good));
    spit(path("garbled.npy"), npy("", "", good, false, "{'descr': '<f4', 'shape': (2, 3), 'fortran_order': Maybe}"));
    spit(path("nokey.npy"), npy("", "", good, false, "{'descr': '<f4', 'shape': (2, 3)}"));
    std::string badlen = npy("<f4", "(2, 3)", good);
    badlen[8] = '\xff';
    badlen[9] = '\x7f';
    spit(path("badlen.npy"), badlen);
    std::string ver = npy("<f4", "(2, 3)", good);
    ver[6] = 9;
    spit(path("version.npy"), ver);

    expect_failure("run -i " + path("missing.npy"), 3, "missing.npy");
    expect_failure("run -i " + dir_, 3, "' is a directory, not a .npy file");
    expect_failure("run -i /dev/zero", 3, "'/dev/zero' is a character device, not a .npy file");
    expect_failure("run -i " + path("empty.npy"), 3, "empty");
    expect_failure("run -i " + path("text.npy"), 3, "not a .npy file");
    expect_failure("run -i " + path("trunc.npy"), 3, "truncated");
    expect_failure("run -i " + path("extra.npy"), 3, "extra bytes");
    expect_failure("run -i " + path("lying.npy"), 3, "shape needs 48 bytes");
    expect_failure("run -i " + path("absurd.npy"), 3, "2^64");
    expect_failure("run -i " + path("bigend.npy"), 3, "big-endian");
    expect_failure("run -i " + path("complex.npy"), 3, "'<c8' is not a supported dtype");
    expect_failure("run -i " + path("garbled.npy"), 3, "fortran_order");
    expect_failure("run -i " + path("nokey.npy"), 3, "missing key 'fortran_order'");
    expect_failure("run -i " + path("badlen.npy"), 3, "header");
    expect_failure("run -i " + path("version.npy"), 3, "version 9.0");
    expect_failure("run -i " + path("good.npy") + " --axis 2", 2, "--axis 2 is out of range");
    expect_failure("run -i " + path("good.npy") + " --axis -3", 2, "--axis -3 is out of range");
    expect_failure("run -i " + path("good.npy") + " --temperature 0", 2, "--temperature");
    expect_failure("run -i " + path("good.npy") + " --temperature -1", 2, "--temperature");
    expect_failure("run -i " + path("good.npy") + " --temperature inf", 2, "--temperature");
    expect_failure("run -i " + path("good.npy") + " --temperature nan", 2, "--temperature");
    expect_failure("run -i " + path("good.npy") + " --scale 0", 2, "scale must be positive");
    expect_failure("run -i " + path("good.npy") + " --scale nan", 2, "scale must be positive");
    expect_failure("run -i " + path("good.npy") + " --scale 0.5 --temperature 3", 2,
                   "scale 0.500000 and temperature 3.000000 disagree");
    expect_failure("run -i " + path("good.npy") + " --backend tpu", 2, "--backend");
    expect_failure("run -i " + path("good.npy") + " --device 99", 4, "device index 99");
    expect_failure("run -i " + path("good.npy") + " --device nosuchgpu", 4, "nosuchgpu");
    expect_failure("run --axis 1", 2, "--input is required");

    // Unwritable outputs: nothing is computed, nothing is left behind.
    Result r = cli("run -i " + path("good.npy") + " -o " + path("no/such/dir/y.npy"));
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("No such file or directory"), std::string::npos) << r.err;
    r = cli("run -i " + path("good.npy") + " -o " + dir_);
    EXPECT_EQ(r.code, 3) << r.err;
    EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
    if (geteuid() != 0) {
        mkdir(path("ro").c_str(), 0555);
        r = cli("run -i " + path("good.npy") + " -o " + path("ro/y.npy"));
        EXPECT_EQ(r.code, 3) << r.err;
    }
    // No temporary file survives any failure.
    for (const std::string& left : files_with(".tmp-")) ADD_FAILURE() << "left behind: " << left;
}

// SIGINT, SIGTERM or SIGHUP part-way through a run: the temporary output is
// removed, the existing output is byte for byte as it was, and the process
// ends by that signal. Signals come as soon as the temporary file appears
// and at two later points of the run.
TEST_F(Cli, InterruptedRunLeavesNothingBehind) {
    const uint64_t n = 1ull << 24;  // 64 MB of fp32: about a second of work on lavapipe
    std::mt19937 rng(7);
    std::normal_distribution<float> logits(0.f, 4.f);
    std::vector<float> x(n);
    for (float& v : x) v = logits(rng);
    spit(path("big.npy"), npy("<f4", "(" + std::to_string(n / 1024) + ", 1024)", bytes_of(x)));
    const std::string previous = "previous output, must survive";
    const std::string bin = binary();
    for (int sig : {SIGINT, SIGTERM, SIGHUP})
        for (int delay_ms : {0, 40, 150}) {
            const std::string what = std::string(strsignal(sig)) + " " + std::to_string(delay_ms) + " ms after the temporary file appeared";
            spit(path("out.npy"), previous);
            const pid_t child = fork();
            ASSERT_GE(child, 0);
            if (child == 0) {
                if (!freopen("/dev/null", "w", stdout) || !freopen(path("stderr.txt").c_str(), "w", stderr)) _exit(126);
                execl(bin.c_str(), bin.c_str(), "run", "-i", path("big.npy").c_str(), "-o", path("out.npy").c_str(),
                      static_cast<char*>(nullptr));
                _exit(127);
            }
            const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(60);
            auto running = [child] {  // without reaping it
                siginfo_t info{};
                return waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == 0;
            };
            while (files_with(".tmp-").empty() && std::chrono::steady_clock::now() < give_up && running())
                std::this_thread::sleep_for(std::chrono::milliseconds(2));
            EXPECT_FALSE(files_with(".tmp-").empty()) << what << ": no temporary file appeared";
            std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms));
            kill(child, sig);
            int status = 0;
            ASSERT_EQ(waitpid(child, &status, 0), child);
            EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig)
                << what << ": want the process ended by that signal, got "
                << (WIFSIGNALED(status) ? "signal " + std::to_string(WTERMSIG(status))
                                        : "exit " + std::to_string(WEXITSTATUS(status)))
                << "; stderr: " << slurp(path("stderr.txt"));
            for (const std::string& left : files_with(".tmp-")) ADD_FAILURE() << what << ": left behind: " << left;
            EXPECT_TRUE(slurp(path("out.npy")) == previous) << what << ": the existing output changed";
        }
}

// Host memory exhausted (RLIMIT_AS) and a full disk (RLIMIT_FSIZE): exit 5
// and exit 3 with what failed, the existing output intact, no temporary
// file left.
TEST_F(Cli, OutOfMemoryAndFullDiskFailCleanly) {
    const uint64_t n = 1ull << 24;  // 64 MB of fp32
    spit(path("big.npy"), npy("<f4", "(" + std::to_string(n / 1024) + ", 1024)", std::string(n * 4, '\0')));
    const std::string previous = "previous output, must survive";
    struct Case {
        const char* what;
        int resource;
        rlim_t limit;
        int code;
        const char* message;
    };
    // The CPU backend: its memory use does not depend on a driver's.
    std::vector<Case> cases = {Case{"files of at most 1 MB", RLIMIT_FSIZE, 1u << 20, 3, "File too large"}};
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_THREAD__)
    // (The sanitizers reserve terabytes of address space: no limit on it there.)
    cases.push_back(Case{"96 MB of address space", RLIMIT_AS, 96u << 20, 5, "out of host memory"});
#endif
    for (const Case& c : cases) {
        spit(path("out.npy"), previous);
        const Result r = cli_limited("run --backend cpu -i " + path("big.npy") + " -o " + path("out.npy"), c.resource, c.limit);
        EXPECT_EQ(r.code, c.code) << c.what << ": " << r.err;
        EXPECT_NE(r.err.find(c.message), std::string::npos) << c.what << ": stderr lacks '" << c.message << "': " << r.err;
        EXPECT_TRUE(slurp(path("out.npy")) == previous) << c.what << ": the existing output changed";
        for (const std::string& left : files_with(".tmp-")) ADD_FAILURE() << c.what << ": left behind: " << left;
    }
}

// Messages quote header text and paths: a control byte there (ESC starts a
// terminal's control sequences) is shown escaped, never written raw, and
// valid UTF-8 stays as it is.
TEST_F(Cli, MessagesEscapeWhatTheyQuote) {
    const std::string good = bytes_of(std::vector<float>{1, 2});
    spit(path("esc-key.npy"), npy("", "", good, false, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x\x1b[2J': 1}"));
    spit(path("esc-descr.npy"), npy("\x1b]0;title\x07", "(2,)", good));
    spit(path("caf\xc3\xa9\x1b.npy"), "not an array");
    expect_failure("run -i " + path("esc-key.npy"), 3, "unknown key 'x\\x1b[2J'");
    expect_failure("run -i " + path("esc-descr.npy"), 3, "'descr' '\\x1b]0;title\\x07' is not a supported dtype");
    expect_failure("run -i '" + path("caf\xc3\xa9\x1b.npy") + "'", 3, "caf\xc3\xa9\\x1b.npy");
    for (const char* file : {"esc-key.npy", "esc-descr.npy", "caf\xc3\xa9\x1b.npy"}) {
        const Result r = cli("run -i '" + path(file) + "'");
        for (char c : r.err)
            EXPECT_TRUE(c == '\n' || static_cast<unsigned char>(c) >= 0x20) << file << ": a raw control byte "
                << static_cast<int>(c) << " in: " << r.err;
    }
}

// A row larger than the device's maxStorageBufferRange: a clear error (a
// row is never cut; tensors of many rows are, below).
TEST_F(Cli, TensorTooLargeForTheDevice) {
    const unsigned long long range = max_storage_buffer_range();
    if (range > (1ull << 28)) GTEST_SKIP() << "maxStorageBufferRange " << range << " is too large to exceed cheaply";
    const uint64_t n = range / 4 + 4;
    std::string data(n * 4, '\0');
    spit(path("big.npy"), npy("<f4", "(" + std::to_string(n) + ",)", data));
    expect_failure("run -i " + path("big.npy"), 4, "maxStorageBufferRange");
}

// A tensor of many rows past the device's maxStorageBufferRange runs in
// ranges and matches the reference.
TEST_F(Cli, TensorPastOneBindingRunsInRanges) {
    const unsigned long long range = max_storage_buffer_range();
    if (range > (1ull << 28)) GTEST_SKIP() << "maxStorageBufferRange " << range << " is too large to exceed cheaply";
    const uint64_t cols = 4096, rows = range / (4 * cols) + 64;
    std::vector<float> x(rows * cols);
    for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 2654435761u) % 1000) / 125.0f;
    spit(path("big.npy"), npy("<f4", "(" + std::to_string(rows) + ", " + std::to_string(cols) + ")", bytes_of(x)));
    Result r = cli("run -i " + path("big.npy") + " -o " + path("out.npy") + " --check");
    EXPECT_EQ(r.code, 0) << r.err << r.out;
    EXPECT_NE(r.out.find("; ok"), std::string::npos) << r.out;
}

// `conformance --seed` gives a check the same inputs every time (the same
// errors, to the last digit), `--repeat` runs it on seed, seed + 1, ...,
// and the report and each result carry their seed.
TEST_F(Cli, ConformanceSeedReproducesItsChecks) {
    const std::string args = "conformance --quick --single-pass never --filter '^f32 softmax 12x1000 ' --filter "
                             "workgroup-row/subgroup/fast --repeat 2 --seed 4000000000 --json ";
    Result first = cli(args + path("first.json"));
    ASSERT_EQ(first.code, 0) << first.err << first.out;
    EXPECT_NE(first.out.find("seed 4000000000"), std::string::npos) << "the table's head names no seed:\n" << first.out;
    Result second = cli(args + path("second.json"));
    ASSERT_EQ(second.code, 0) << second.err << second.out;
    const auto a = nlohmann::json::parse(slurp(path("first.json")));
    const auto b = nlohmann::json::parse(slurp(path("second.json")));
    EXPECT_EQ(a.at("seed"), 4000000000u);
    EXPECT_EQ(a.at("repeats"), 2);
    const auto& ra = a.at("devices").at(0).at("results");
    const auto& rb = b.at("devices").at(0).at("results");
    // Two repeats at each subgroup size the device offers.
    ASSERT_TRUE(ra.size() >= 2 && ra.size() % 2 == 0) << ra.dump(1);
    ASSERT_EQ(rb.size(), ra.size()) << rb.dump(1);
    for (size_t i = 0; i < ra.size(); ++i) {
        EXPECT_EQ(ra[i].at("seed"), 4000000000u + i % 2) << "result " << i;
        EXPECT_EQ(ra[i].at("max_rel"), rb[i].at("max_rel")) << "result " << i << " ran on other inputs the second time";
        EXPECT_EQ(ra[i].at("worst_row_sum_error"), rb[i].at("worst_row_sum_error")) << "result " << i;
    }
    EXPECT_NE(ra[0].at("max_rel"), ra[1].at("max_rel")) << "the two repeats ran on the same inputs";
}

}  // namespace

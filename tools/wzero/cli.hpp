#pragma once

#include <CLI/CLI.hpp>

#include <cstdint>

#include <string>

namespace wzcli {

// Exit status, as blkdiscard and util-linux fallocate use it.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;         // also usage errors
inline constexpr int exit_not_supported = 2;   // the requested method/operation is not supported here

struct stat_args {
    std::string path;
    bool json = false;
    bool refresh = false;
};
void add_stat_command(CLI::App& app, stat_args& args);
int run_stat(const stat_args& args);

struct alloc_args {
    std::string path, offset = "0", length, method = "auto", in_place = "auto", verify = "extents", rate;
    std::string passthrough = "auto";
    bool keep_size = false, verbose = false, no_fallback = false, dry_run = false, json = false;
    bool force = false;  // zero a device with a filesystem signature
    unsigned queue_depth = 0;  // 0: automatic
    std::string map_path, map_offset = "0", map_length;
    bool map_json = false;
    std::string verify_path, verify_offset = "0", verify_length;
    bool verify_data = false;
};
void add_alloc_commands(CLI::App& app, alloc_args& args);
int run_alloc(const alloc_args& args);
int run_map(const alloc_args& args);
int run_verify(const alloc_args& args);

struct bench_args {
    std::string path, mode = "auto", bs = "4096", offset = "0", length;
    unsigned qd = 1;       // asynchronous writes in flight (submit/complete)
    unsigned threads = 0;  // > 0: that many threads calling the synchronous pwrite instead
    std::string completion = "interrupt";
    unsigned high = 32, low = 3, interval_us = 30, max_loops = 1000;
    std::uint64_t ops = 0;
    double seconds = 0;
    bool random = false, unsafe = false, json = false;
    bool force = false;  // write to a device with a filesystem signature
};
void add_bench_commands(CLI::App& app, bench_args& args);
int run_bench_write(const bench_args& args);

// -o/-l with util-linux size semantics (empty length: to the end); prints the error.
bool parse_range_args(const std::string& offset_text, const std::string& length_text, std::uint64_t& offset,
                      std::uint64_t& length);

// "wzero: MESSAGE" on stderr.
void print_error(const std::string& message);

}  // namespace wzcli

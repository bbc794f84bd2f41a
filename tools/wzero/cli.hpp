// SPDX-License-Identifier: MIT
#pragma once

#include <CLI/CLI.hpp>

#include <wzero/wzero.hpp>

#include <atomic>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wzcli {

// Exit status, the same for every command (wzero(1), EXIT STATUS): util-linux's 0 and 1, and
// blkdiscard's 2 for "not supported" (util-linux fallocate has no such code: it exits 1).
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;         // any failure, usage errors, and verify's "not proven"
inline constexpr int exit_not_supported = 2;   // the requested method/operation is not supported here

// exit_not_supported for ENOTSUP/EOPNOTSUPP (a method or operation not supported here),
// exit_failure for anything else.
int status_for(const wz::error_info& e);

// The commands whose refusals a user can override with one of their options.
enum class hint_command { alloc, fallocate, bench_write };
// The CLI's own advice for a refusal: which of the command's options changes the outcome,
// from the error's reason (wz::error_reason), never from its text; "" when there is none.
// The library's message speaks of the API (preallocate_options::force); this, of the CLI.
std::string hint_for(const wz::error_info& e, hint_command command);

// --engine NAME and WZERO_ENGINE: io_uring, psync, auto (or empty: automatic); nullopt for
// anything else.
inline std::optional<wz::io_engine_request> parse_engine(std::string_view name) {
    if (name == "io_uring") {
        return wz::io_engine_request::io_uring;
    }
    if (name == "psync") {
        return wz::io_engine_request::psync;
    }
    if (name == "auto" || name.empty()) {
        return wz::io_engine_request::automatic;
    }
    return std::nullopt;
}

// -o/--output LIST, -O/--output-all, -J/--json, -r/--raw, -n/--noheadings, --list-columns:
// the table options of stat and map, as lsblk's (cli_table.hpp).
struct table_args {
    std::string output;
    const CLI::Option* output_option = nullptr;  // given at all
    bool output_all = false, json = false, raw = false, noheadings = false, list_columns = false;
};

struct stat_args {
    std::vector<std::string> paths;
    std::string path;  // the one being looked at (main's out-of-memory message)
    table_args table;
    bool record = false;  // the capability record, one JSON document per path
    bool refresh = false;
};
void add_stat_command(CLI::App& app, stat_args& args);
int run_stat(stat_args& args);

struct alloc_args {
    std::string path, offset = "0", length, method = "auto", in_place = "auto", verify = "extents", rate;
    // Given at all (an empty value is an error, not "the default"): count() > 0 after parsing.
    const CLI::Option* rate_option = nullptr;
    std::string passthrough = "auto";
    bool verbose = false, no_fallback = false, dry_run = false, json = false;
    bool write_zeroes = false, zero_range = false;  // -w, -z: the action alloc always does
    // fallocate(1)'s other actions: refused with a reason, exit 2.
    bool keep_size = false, posix = false, punch_hole = false, dig_holes = false, collapse_range = false,
         insert_range = false;
    bool force = false;  // zero a device with a filesystem signature
    unsigned queue_depth = 0;  // 0: automatic
};
void add_alloc_commands(CLI::App& app, alloc_args& args);
int run_alloc(const alloc_args& args);

struct map_args {
    std::string path, offset = "0", length;
    const CLI::Option* length_option = nullptr;  // given at all
    table_args table;
};
struct verify_args {
    std::string path, offset = "0", length;
    const CLI::Option* length_option = nullptr;  // given at all
    bool data = false, json = false;
};
void add_map_commands(CLI::App& app, map_args& map, verify_args& verify);
int run_map(const map_args& args);
int run_verify(const verify_args& args);

struct bench_args {
    std::string path, mode = "auto", bs = "4096", offset = "0", length;
    const CLI::Option* length_option = nullptr;
    unsigned qd = 1;       // asynchronous writes in flight (submit/complete)
    unsigned threads = 0;  // > 0: that many threads calling the synchronous pwrite instead
    std::string completion = "interrupt";
    unsigned high = 32, low = 3, interval_us = 30, max_loops = 1000;
    std::uint64_t ops = 0;
    double seconds = 0;
    bool random = false, unsafe = false, json = false;
    bool force = false;  // write to a device with a filesystem signature
    // Mode through: re-read the write cache before an acknowledgement when the answer is older
    // than this (writer_options::cache_max_age)
    std::uint64_t cache_max_age_us = 100000;
};
void add_bench_commands(CLI::App& app, bench_args& args);
int run_bench_write(const bench_args& args);

// -o/-l with util-linux size semantics; prints the error. A length not given means "to the
// end" (length 0); a length given must parse and be greater than zero ("" and "0" are errors,
// not "to the end").
bool parse_range_args(const std::string& offset_text, const std::string& length_text, bool length_given,
                      std::uint64_t& offset, std::uint64_t& length);
// A size (util-linux suffixes) that must not be 0, such as a rate or a write size; prints
// "invalid WHAT 'TEXT': ..." and the --help hint.
bool parse_positive_size_arg(const std::string& what, const std::string& text, std::uint64_t& out);

// Validators for numeric options. CLI11 (2.1) reads "-1" into an unsigned option as its two's
// complement (`--ops -1` meant 2^64-1 writes) and a double option takes "nan", "inf", 0 and
// negatives: each of these silently meant something else.
// A whole decimal number from 1 to max (the option's type's largest value, or a tighter bound).
CLI::Validator positive_integer(std::uint64_t max);
// The same from 0.
CLI::Validator whole_number(std::uint64_t max);
// A number of seconds greater than zero and at most 10^9 (about 31 years; a longer one
// would overflow the clock's deadline).
CLI::Validator positive_seconds();

// Every signal that would end the process from outside (SIGINT, SIGTERM, SIGHUP, SIGQUIT,
// SIGUSR1/2, SIGPIPE, SIGALRM, the real-time signals, ...) sets the returned flag instead: a
// long run (alloc, bench write) stops submitting, reaps what is in flight, says how far it got
// and exits 1. Further signals while it stops change nothing (only SIGKILL kills).
const std::atomic<bool>& catch_stop_signals();
// Once the run has returned: those signals wait (blocked in this thread) instead of
// interrupting what it prints. A handler that interrupts a write to a slow stderr (a pipe
// nobody reads yet, a terminal on a stalled link) makes it fail with EINTR, and a second
// Ctrl-C would lose "interrupted by ..." and "stopped after zeroing N of M bytes".
void hold_stop_signals();
// The first of those signals caught, 0 if none; its name ("SIGTERM").
int stop_signal();
std::string signal_name(int sig);

// --help in util-linux's layout, from the CLI11 definitions; set on the top App before its
// subcommands are added (they inherit it). version_text("wzero") is "wzero from wzero X.Y.Z".
std::shared_ptr<CLI::FormatterBase> help_formatter();
std::string version_text(const std::string& program);

// BYTES as util-linux's size_to_human_string(SIZE_SUFFIX_3LETTER | SIZE_SUFFIX_SPACE) prints
// them (fallocate -v, lsblk): "512 B", "1.5 KiB", "16 MiB".
std::string human_size(std::uint64_t bytes);

// The name messages start with: "wzero", or the name wzero-fallocate was run under.
void set_program_name(const char* name);
const char* program();

// "wzero: MESSAGE" on stderr (PROGRAM: MESSAGE). Neither throws: a closed or full stderr loses the text only.
void print_error(const std::string& message);
void print_stderr(const std::string& text);

}  // namespace wzcli

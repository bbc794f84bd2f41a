// SPDX-License-Identifier: MIT
// wzero: command-line front end. Parsing, printing and exit codes only; the work is in libwzero.

#include "cli.hpp"
#include "cli_fallocate.hpp"

#include "util/errors.hpp"
#include "util/private_fd_table.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>

#include <malloc.h>
#include <sys/resource.h>

#include <cctype>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <new>
#include <system_error>
#include <iostream>

namespace wzcli {

// Never throws: an error message that cannot be written (stderr closed or full) must not
// turn exit status 1 into an abort (fmt::print throws on a failed write).
void print_stderr(const std::string& text) {
    (void)std::fwrite(text.data(), 1, text.size(), stderr);  // wz: ignored-error (nowhere left to say it)
}

namespace {
const char* program_name = "wzero";
}  // namespace

void set_program_name(const char* name) {
    program_name = name;
}

const char* program() {
    return program_name;
}

void print_error(const std::string& message) {
    print_stderr(std::string(program_name) + ": " + message + "\n");
}

namespace {

CLI::Validator integer_from(std::uint64_t min, std::uint64_t max, const char* desc, const char* name) {
    return CLI::Validator(
        [min, max](std::string& text) -> std::string {
            // Digits only: no sign, no "0x" (from_chars takes neither); from_chars also
            // refuses what does not fit in 64 bits, which CLI11 would saturate.
            std::uint64_t v = 0;
            const char* end = text.data() + text.size();
            const auto [ptr, ec] = std::from_chars(text.data(), end, v);
            if (text.empty() || ec != std::errc() || ptr != end || v < min || v > max) {
                return fmt::format("invalid value '{}': must be a whole number from {} to {}", text, min, max);
            }
            return {};
        },
        desc, name);
}

}  // namespace

CLI::Validator positive_integer(std::uint64_t max) { return integer_from(1, max, "POSITIVE", "positive integer"); }

CLI::Validator whole_number(std::uint64_t max) { return integer_from(0, max, "NUMBER", "whole number"); }

CLI::Validator positive_seconds() {
    return CLI::Validator(
        [](std::string& text) -> std::string {
            const char* begin = text.c_str();
            char* end = nullptr;
            errno = 0;
            const double v = std::strtod(begin, &end);
            // !(v > 0) also catches NaN.
            if (text.empty() || end != begin + text.size() || errno != 0 || !std::isfinite(v) || !(v > 0) ||
                v > 1e9) {
                return fmt::format("invalid value '{}': must be a number of seconds greater than 0 and at most "
                                   "1000000000",
                                   text);
            }
            return {};
        },
        "SECONDS", "positive seconds");
}

}  // namespace wzcli

namespace {

bool has_subcommand(const CLI::App& app, const std::string& name) {
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->check_name(name)) {
            return true;
        }
    }
    return false;
}

// As util-linux's close_stdout() (include/closestream.h): output that did not reach stdout's
// file (`>/dev/full`, a full disk) is a failure, said on stderr, exit 1. EPIPE is left alone,
// as there: the reader went away on purpose. stdout is flushed, not closed: the iostreams'
// own flush at exit (CLI11 prints help through std::cout) must still find it open.
int finish_stdout(int status) {
    std::cout.flush();
    errno = 0;
    const bool flush_failed = std::fflush(stdout) != 0;
    const int err = flush_failed ? errno : 0;
    if ((flush_failed || std::ferror(stdout) != 0) && err != EPIPE) {
        wzcli::print_error(err != 0 ? "write error: " + wz::errno_text(err) : std::string("write error"));
        status = wzcli::exit_failure;
    }
    if (std::ferror(stderr) != 0) {
        status = wzcli::exit_failure;  // a message was lost: the run cannot count as clean
    }
    return status;
}

// Under `ulimit -v` an allocation fails long before the machine runs out of memory: say
// which limit was in force, since that is usually the cause.
std::string address_space_note() {
    rlimit lim{};
    if (::getrlimit(RLIMIT_AS, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) {
        return {};
    }
    return fmt::format(" (address space limited to {} KiB: ulimit -v, RLIMIT_AS)", lim.rlim_cur / 1024);
}

int run(int argc, char** argv) {
    CLI::App app{"Written, zeroed extents and durable writes for Linux storage", "wzero"};
    app.formatter(wzcli::help_formatter());
    app.set_version_flag("-V,--version", wzcli::version_text("wzero"));
    app.require_subcommand(1);
    app.failure_message([](const CLI::App* a, const CLI::Error& e) {
        (void)a;
        // util-linux's messages start in lower case ("wzero: a subcommand is required").
        std::string what = e.what();
        if (what.size() >= 2 && std::isupper(static_cast<unsigned char>(what[0])) != 0 &&
            (std::islower(static_cast<unsigned char>(what[1])) != 0 || what[1] == ' ')) {
            what[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(what[0])));
        }
        return "wzero: " + what + "\nTry 'wzero --help' for more information.\n";
    });

    // For every command, before or after its name (fallthrough): the process's I/O engine.
    std::string engine;
    app.add_option("--engine", engine,
                   "I/O engine: io_uring, psync (threads doing pwrite, fdatasync and the NVMe ioctl) or auto "
                   "(io_uring where it can be set up; the default, also from WZERO_ENGINE)")
        ->type_name("name")
        ->check(CLI::IsMember({"io_uring", "psync", "auto"}));
    app.fallthrough();

    wzcli::stat_args stat;
    wzcli::add_stat_command(app, stat);
    wzcli::alloc_args alloc;
    wzcli::add_alloc_commands(app, alloc);
    wzcli::map_args map;
    wzcli::verify_args verify;
    wzcli::add_map_commands(app, map, verify);
    wzcli::bench_args bench;
    wzcli::add_bench_commands(app, bench);

    // CLI11 would only say "A subcommand is required" for a mistyped command.
    if (argc > 1 && argv[1][0] != '-' && !has_subcommand(app, argv[1])) {
        wzcli::print_error(fmt::format("unknown command '{}'\nTry 'wzero --help' for more information.", argv[1]));
        return wzcli::exit_failure;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        (void)app.exit(e);  // wz: ignored-error (prints the message; our status is 1, not CLI11's)
        return wzcli::exit_failure;
    }
    if (!engine.empty()) {
        // IsMember above let only the three names through.
        if (auto st = wz::select_io_engine(*wzcli::parse_engine(engine), "--engine " + engine); !st.ok()) {
            wzcli::print_error(st.error().message);
            return wzcli::exit_failure;
        }
    } else if (const char* env = std::getenv("WZERO_ENGINE"); env != nullptr && !wzcli::parse_engine(env)) {
        wzcli::print_error(fmt::format("invalid WZERO_ENGINE '{}': must be io_uring, psync or auto\n"
                                       "Try 'wzero --help' for more information.",
                                       env));
        return wzcli::exit_failure;
    }
    const char* command = "";
    const std::string* path = nullptr;
    try {
        if (app.got_subcommand("stat")) {
            command = "stat";
            path = &stat.path;
            return wzcli::run_stat(stat);
        }
        if (app.got_subcommand("alloc")) {
            command = "alloc";
            path = &alloc.path;
            return wzcli::run_alloc(alloc);
        }
        if (app.got_subcommand("map")) {
            command = "map";
            path = &map.path;
            return wzcli::run_map(map);
        }
        if (app.got_subcommand("verify")) {
            command = "verify";
            path = &verify.path;
            return wzcli::run_verify(verify);
        }
        if (app.got_subcommand("bench")) {
            command = "bench write";
            path = &bench.path;
            return wzcli::run_bench_write(bench);
        }
    } catch (const std::bad_alloc&) {
        // The allocation that failed has been unwound: there is room again for a message.
        wzcli::print_error(fmt::format("{} {}: out of memory{}", command, path != nullptr ? *path : std::string(),
                                       address_space_note()));
        return wzcli::exit_failure;
    }
    return wzcli::exit_failure;
}

}  // namespace

int main(int argc, char** argv) {
    // Run as wzero-fallocate (or through a link named fallocate): fallocate's command line,
    // with messages under that name.
    const bool fallocate = argc > 0 && wzcli::invoked_as_fallocate(argv[0]);
    if (fallocate) {
        wzcli::set_program_name(program_invocation_short_name);
    }
    // Under RLIMIT_AS (`ulimit -v`) glibc's per-thread malloc arenas, each reserving 64 MiB
    // of address space, fail on the worker threads long before memory runs out. One arena
    // grows within the limit like the main thread's heap; without a limit the default (an
    // arena per core) stays.
    if (rlimit as{}; ::getrlimit(RLIMIT_AS, &as) == 0 && as.rlim_cur != RLIM_INFINITY) {
        (void)::mallopt(M_ARENA_MAX, 1);  // wz: ignored-error (0 only for an unknown parameter)
    }
    // Past RLIMIT_FSIZE (`ulimit -f`) a write or fallocate raises SIGXFSZ, whose default
    // action kills the process with no word said. Ignored, the call fails with EFBIG instead,
    // and the error names the path, the operation and the range like any other.
    (void)std::signal(SIGXFSZ, SIG_IGN);  // wz: ignored-error (SIG_ERR only for an invalid signal)
    // This process takes no POSIX record locks, so closing its descriptors unlocks nothing:
    // the library's calls run on this thread, in its own table (util/private_fd_table.hpp).
    wz::private_fd_table::process_takes_no_posix_locks();
    int status = wzcli::exit_failure;
    try {
        status = fallocate ? wzcli::run_fallocate(argc, argv) : run(argc, argv);
    } catch (const std::bad_alloc&) {
        // Outside a command (parsing, help): nothing to name, and no memory to build a message.
        (void)std::fputs(wzcli::program(), stderr);          // wz: ignored-error (nowhere left to say it)
        (void)std::fputs(": out of memory\n", stderr);       // wz: ignored-error (nowhere left to say it)
        status = wzcli::exit_failure;
    } catch (const std::system_error& e) {
        // fmt::print throws when a write to stdout fails; the buffer it failed on is gone, so
        // finish_stdout() would only see the error flag and could not say which error.
        if (std::ferror(stdout) != 0) {
            wzcli::print_error("write error: " + wz::errno_text(e.code().value()));
            std::clearerr(stdout);
        } else {
            wzcli::print_error(e.what());
        }
        status = wzcli::exit_failure;
    } catch (const std::exception& e) {
        wzcli::print_error(e.what());
        status = wzcli::exit_failure;
    }
    return finish_stdout(status);
}

// SPDX-License-Identifier: MIT
// wzero alloc | map | verify

#include "cli.hpp"

#include "util/errors.hpp"
#include "util/json_text.hpp"
#include "util/size.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <unistd.h>

#include <chrono>
#include <system_error>

namespace wzcli {

namespace {

// util-linux semantics (K = KiB, KB = 1000, ...), not CLI11's own size validator.
bool parse_size_arg(const std::string& what, const std::string& text, std::uint64_t& out) {
    auto v = wz::parse_size(text);
    if (!v) {
        print_error(fmt::format("invalid {} '{}': {}\nTry 'wzero --help' for more information.", what, text,
                                v.error().message));
        return false;
    }
    out = *v;
    return true;
}

}  // namespace

bool parse_range_args(const std::string& offset_text, const std::string& length_text, bool length_given,
                      std::uint64_t& offset, std::uint64_t& length) {
    return parse_size_arg("offset", offset_text, offset) &&
           (!length_given || parse_positive_size_arg("length", length_text, length));
}

bool parse_positive_size_arg(const std::string& what, const std::string& text, std::uint64_t& out) {
    if (!parse_size_arg(what, text, out)) {
        return false;
    }
    if (out == 0) {
        print_error(fmt::format("invalid {} '{}': the {} must be greater than zero\nTry 'wzero --help' for more "
                                "information.",
                                what, text, what));
        return false;
    }
    return true;
}

int status_for(const wz::error_info& e) {
    return e.code.value() == ENOTSUP || e.code.value() == EOPNOTSUPP ? exit_not_supported : exit_failure;
}

std::string hint_for(const wz::error_info& e, hint_command command) {
    const bool zeroing = command == hint_command::alloc || command == hint_command::fallocate;
    switch (e.reason) {
    case wz::error_reason::in_use:
    case wz::error_reason::exclusive_unavailable:
        if (command == hint_command::alloc) {
            return "use --force to zero it anyway (wzero(1), EXCLUSIVE USE)";
        }
        if (command == hint_command::fallocate) {
            return "use --force to zero it anyway (wzero-fallocate(1), EXCLUSIVE USE)";
        }
        return "";
    case wz::error_reason::holds_data:
        if (command == hint_command::alloc) {
            return "use --force to zero it anyway";
        }
        if (command == hint_command::fallocate) {
            return "there is no --force for devices here: `wzero alloc --force` zeroes such a device";
        }
        return "use --force to write to it anyway";
    case wz::error_reason::in_place_excluded:
        return zeroing ? "--in-place require needs --method auto or nvme" : "";
    case wz::error_reason::not_written:
        return "preallocate the range as written extents first (`wzero alloc`)";
    case wz::error_reason::unsafe_durability:
        return command == hint_command::bench_write ? "--unsafe-through writes in mode through anyway" : "";
    case wz::error_reason::none:
    case wz::error_reason::lease_lost:
    case wz::error_reason::method_unavailable: return "";
    }
    return "";
}

namespace {

std::string human(std::uint64_t b) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = static_cast<double>(b);
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        ++u;
    }
    return u == 0 ? fmt::format("{} B", b) : fmt::format("{:.1f} {}", v, units[u]);
}

// A progress line on a terminal, at most four times a second, after the first second.
class progress_bar {
public:
    explicit progress_bar(bool enabled) : enabled_(enabled && ::isatty(STDERR_FILENO) != 0) {}
    void update(const wz::progress_info& p) {
        if (!enabled_) {
            return;
        }
        auto now = std::chrono::steady_clock::now();
        if (now - start_ < std::chrono::seconds(1) || now - last_ < std::chrono::milliseconds(250)) {
            return;
        }
        last_ = now;
        const double secs = std::chrono::duration<double>(now - start_).count();
        const double pct = p.bytes_total != 0 ? 100.0 * static_cast<double>(p.bytes_done) /
                                                     static_cast<double>(p.bytes_total)
                                              : 0.0;
        const int width = 30;
        const int fill = static_cast<int>(pct / 100.0 * width);
        print_stderr(fmt::format("\r[{:=<{}}{:<{}}] {:5.1f}%  {} of {}  {}/s ", "", fill, "", width - fill, pct,
                                 human(p.bytes_done), human(p.bytes_total),
                                 human(static_cast<std::uint64_t>(static_cast<double>(p.bytes_done) / secs))));
        shown_ = true;
    }
    void finish() {
        if (shown_) {
            print_stderr("\n");
        }
    }

private:
    bool enabled_;
    bool shown_ = false;
    std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
    std::chrono::steady_clock::time_point last_{};
};

// --dry-run: the decisions and the plan, one line each.
void print_plan(const wz::preallocate_report& r) {
    for (const auto& d : r.decisions) {
        fmt::print("{}\n", d);
    }
    for (const auto& op : r.plan) {
        if (op.kind == "nvme") {
            fmt::print("{:<15} offset {:>14} length {:>12}  slba {} nlb {}{}  {}\n", op.kind, op.offset, op.length,
                       op.slba, op.nlb, op.deac ? " DEAC" : "", op.reason);
        } else {
            fmt::print("{:<15} offset {:>14} length {:>12}  {}\n", op.kind, op.offset, op.length, op.reason);
        }
    }
}

// -v: the decisions, one line each, then what was done in one line (the shape of
// `fallocate -v`'s "f: 1 MiB (1048576 bytes) allocated.").
void print_verbose(const wz::preallocate_report& r) {
    for (const auto& d : r.decisions) {
        fmt::print("{}\n", d);
    }
    std::string by;
    for (const auto& [m, b] : r.bytes_by_method) {
        if (b != 0) {
            by += fmt::format("{}{} {}", by.empty() ? "" : ", ", wz::to_string(m), human_size(b));
        }
    }
    std::string verified = "not verified";
    if (r.verified) {
        verified = fmt::format("{} ({})", *r.verified ? "verified" : "verification FAILED", r.verify_detail);
    } else if (!r.verify_detail.empty()) {
        verified = fmt::format("not proven ({})", r.verify_detail);
    }
    fmt::print("{}: {} ({} bytes) written zeroes at offset {} in {:.3f} s: {}, {} device commands{}{}{}, {}.\n",
               r.path, human_size(r.length), r.length, r.offset, r.elapsed_seconds, by.empty() ? "nothing" : by,
               r.device_commands, r.passthrough_path.empty() ? "" : " via " + r.passthrough_path,
               r.io_engine.empty() ? "" : " on " + r.io_engine, r.flushed ? ", flushed" : "", verified);
}

}  // namespace

void add_alloc_commands(CLI::App& app, alloc_args& a) {
    CLI::App* cmd = app.add_subcommand("alloc", "Make a range of a file or block device written zeroes");
    cmd->add_option("-o,--offset", a.offset, "Start of the range (default 0)")->type_name("num");
    cmd->add_option("-l,--length", a.length, "Length of the range")->required()->type_name("num");
    cmd->add_flag("-w,--write-zeroes", a.write_zeroes, "Make the range written zeroes (the default action)");
    cmd->add_flag("-z,--zero-range", a.zero_range,
                  "The same as -w: the range reads back as zeroes, and as written extents");
    cmd->add_flag("-v,--verbose", a.verbose, "Print the decisions, then what was done in one line");
    cmd->add_option("--method", a.method, "Method: auto, kernel, nvme, zeroout or write")
        ->type_name("method")
        ->check(CLI::IsMember({"auto", "kernel", "nvme", "zeroout", "write"}));
    cmd->add_flag("--no-fallback", a.no_fallback, "Fail (exit 2) instead of going down the method chain");
    cmd->add_option("--in-place", a.in_place, "Re-zero written extents through NVMe: auto, never or require")
        ->type_name("mode")
        ->check(CLI::IsMember({"auto", "never", "require"}));
    cmd->add_flag("--dry-run", a.dry_run, "Print the decisions and the plan, touch nothing");
    cmd->add_flag("-f,--force", a.force,
                  "Zero a block device that holds a filesystem or partition table, or a file another process has "
                  "open");
    cmd->add_option("--verify", a.verify, "Prove the result: none, extents (default) or data (read back)")
        ->type_name("mode")
        ->expected(0, 1)
        ->default_str("extents")
        ->check(CLI::IsMember({"", "none", "extents", "data"}));
    a.rate_option = cmd->add_option("--rate", a.rate, "Rate limit in bytes per second")->type_name("num");
    cmd->add_option("--queue-depth", a.queue_depth,
                    "I/O commands in flight (default 32; 2 on a loop device doing buffered I/O)")
        ->type_name("count")
        ->check(positive_integer(4096));
    cmd->add_option("--passthrough", a.passthrough, "NVMe commands through auto, uring_cmd or ioctl")
        ->type_name("route")
        ->check(CLI::IsMember({"auto", "uring_cmd", "ioctl"}));
    cmd->add_flag("-J,--json", a.json, "Print the report as JSON");
    // fallocate(1)'s other actions, accepted so that they are refused with a reason (exit 2)
    // rather than taken for a typo: each keeps or removes space in a way written zeroes cannot.
    cmd->add_flag("-n,--keep-size", a.keep_size, "Not supported: written extents beyond EOF are not possible");
    cmd->add_flag("-x,--posix", a.posix, "Not supported: posix_fallocate(3) keeps data (see wzero-fallocate(1))");
    cmd->add_flag("-p,--punch-hole", a.punch_hole, "Not supported: makes holes, the opposite of written zeroes");
    cmd->add_flag("-d,--dig-holes", a.dig_holes, "Not supported: makes holes, the opposite of written zeroes");
    cmd->add_flag("-c,--collapse-range", a.collapse_range, "Not supported: removes a range");
    cmd->add_flag("-i,--insert-range", a.insert_range, "Not supported: inserts a hole");
    cmd->add_option("path", a.path, "File (created if missing) or block device")->required();
}

namespace {

// The fallocate(1) actions alloc does not do, with the reason it says; empty if none was asked.
std::string refused_action(const alloc_args& a) {
    if (a.keep_size) {
        return "--keep-size: written extents beyond the end of the file are not possible (fallocate(2) keeps "
               "unwritten extents there; run util-linux fallocate for that)";
    }
    if (a.posix) {
        return "--posix: posix_fallocate(3) keeps the data in the range, and alloc zeroes it (wzero-fallocate -x "
               "keeps data and makes only holes and unwritten extents written zeroes)";
    }
    if (a.punch_hole || a.dig_holes) {
        return fmt::format("{}: holes are the opposite of written zeroes (run util-linux fallocate for that)",
                           a.punch_hole ? "--punch-hole" : "--dig-holes");
    }
    if (a.collapse_range || a.insert_range) {
        return fmt::format("{}: it moves data rather than writing zeroes (run util-linux fallocate for that)",
                           a.collapse_range ? "--collapse-range" : "--insert-range");
    }
    return {};
}

}  // namespace

int run_alloc(const alloc_args& a) {
    if (const std::string why = refused_action(a); !why.empty()) {
        print_error(fmt::format("alloc {}: not supported: {}", a.path, why));
        return exit_not_supported;
    }
    // --rate 0 and --rate "" used to mean "no limit": a typo must not lift the limit asked for.
    std::uint64_t offset = 0, length = 0, rate = 0;
    if (!parse_range_args(a.offset, a.length, true, offset, length) ||
        (a.rate_option->count() > 0 && !parse_positive_size_arg("rate", a.rate, rate))) {
        return exit_failure;
    }
    wz::preallocate_options opt;
    opt.method = a.method == "kernel"    ? wz::method_request::kernel
                 : a.method == "nvme"    ? wz::method_request::nvme
                 : a.method == "zeroout" ? wz::method_request::zeroout
                 : a.method == "write"   ? wz::method_request::write
                                         : wz::method_request::automatic;
    opt.fallback = !a.no_fallback;
    opt.in_place = a.in_place == "never"     ? wz::in_place_mode::never
                   : a.in_place == "require" ? wz::in_place_mode::require
                                             : wz::in_place_mode::automatic;
    opt.verify = a.verify == "none" ? wz::verify_mode::none
                 : a.verify == "data" ? wz::verify_mode::data
                                      : wz::verify_mode::extents;
    opt.dry_run = a.dry_run;
    opt.force = a.force;
    opt.exclusive = a.force ? wz::exclusive_mode::none : wz::exclusive_mode::automatic;
    opt.queue_depth = a.queue_depth;
    opt.passthrough = a.passthrough == "uring_cmd" ? wz::passthrough_mode::uring_cmd
                      : a.passthrough == "ioctl"   ? wz::passthrough_mode::ioctl
                                                   : wz::passthrough_mode::automatic;
    opt.rate_bytes_per_second = rate;
    progress_bar bar(!a.json);
    opt.on_progress = [&bar](const wz::progress_info& p) { bar.update(p); };
    opt.cancel = &catch_stop_signals();

    wz::preallocate_report partial;
    auto r = wz::preallocate(a.path, offset, length, opt, &partial);
    hold_stop_signals();
    bar.finish();
    if (!r) {
        const auto& e = r.error();
        if (a.json) {
            auto j = nlohmann::ordered_json::parse(wz::to_json(partial));
            j["error"] = e.message;
            if (e.code.value() == ECANCELED && stop_signal() != 0) {
                j["interrupted_by"] = signal_name(stop_signal());
            }
            fmt::print("{}\n", wz::dump_json(std::move(j)));
        }
        if (e.code.value() == ECANCELED && stop_signal() != 0) {
            print_error(fmt::format("{}: interrupted by {}", a.path, signal_name(stop_signal())));
        }
        print_error(e.message);
        if (const std::string hint = hint_for(e, hint_command::alloc); !hint.empty()) {
            print_error(hint);
        }
        // Once zeroing may have begun (the record was taken), say how far it got; refusals
        // before that (bad range, unsupported method) wrote nothing and need no such line.
        const bool started = !partial.bytes_by_method.empty() && e.code.value() != EINVAL &&
                             e.code.value() != ENOTSUP && e.code.value() != EOPNOTSUPP;
        if (started || partial.bytes_done != 0) {
            print_error(fmt::format("{}: stopped after zeroing {} of {} bytes; data outside [offset {}, length {}] "
                                    "is untouched",
                                    a.path, partial.bytes_done, length, offset, length));
        }
        if (!partial.cleanup.empty()) {
            print_error(fmt::format("{}: {}", a.path, partial.cleanup));
        }
        return status_for(e);
    }
    if (stop_signal() != 0) {
        // The signal came after the last operation had been sent (or during a single kernel
        // call that then zeroed the rest): the range is done and verified, and says so.
        print_error(fmt::format("{}: {} arrived after the zeroing had finished; the run completed", a.path,
                                signal_name(stop_signal())));
    }
    if (a.json) {
        fmt::print("{}\n", wz::to_json(*r));
    } else if (a.dry_run) {
        print_plan(*r);
    } else if (a.verbose) {
        print_verbose(*r);
    }
    // Silent on success, as fallocate(1); a range that verification found not to be written
    // zeroes is a failure whatever was printed.
    if (r->verified && !*r->verified) {
        print_error(fmt::format("{}: verification failed: {}", a.path, r->verify_detail));
        return exit_failure;
    }
    return exit_ok;
}

}  // namespace wzcli

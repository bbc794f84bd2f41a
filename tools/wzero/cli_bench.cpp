// SPDX-License-Identifier: MIT
// wzero bench write: the durable writer under load, with the mode it picked and why.
// Asynchronous (submit/complete at --qd, the default) or synchronous (--threads callers).

#include "cli.hpp"

#include "util/errors.hpp"
#include "util/json_text.hpp"
#include "util/size.hpp"

#include <wzero/wzero.hpp>

#include <sys/resource.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <system_error>
#include <thread>
#include <vector>

namespace wzcli {

void add_bench_commands(CLI::App& app, bench_args& a) {
    CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
    bench->require_subcommand(1);
    CLI::App* w = bench->add_subcommand("write", "Durable 'bs'-sized writes through wz::writer");
    w->add_option("--mode", a.mode, "Durability mode: auto, through, fua, flush or dsync")
        ->type_name("mode")
        ->check(CLI::IsMember({"auto", "through", "fua", "flush", "dsync"}));
    w->add_option("--bs", a.bs, "Write size (default 4096)")->type_name("num");
    w->add_option("--qd", a.qd, "Asynchronous writes in flight (submit/complete)")
        ->type_name("count")
        ->check(positive_integer(4096));
    w->add_option("--threads", a.threads, "Use the synchronous pwrite from this many threads instead")
        ->type_name("count")
        ->check(positive_integer(1024));
    w->add_option("--completion", a.completion, "How completions are waited for: interrupt, poll or adaptive")
        ->type_name("mode")
        ->check(CLI::IsMember({"interrupt", "poll", "adaptive"}));
    // The ring is sized above the high watermark: an unbounded one would wrap (high + 1 = 0).
    w->add_option("--high-watermark", a.high, "adaptive: spin while this many are in flight (32)")
        ->type_name("count")
        ->check(positive_integer(4096));
    w->add_option("--low-watermark", a.low, "adaptive: back to blocking below this many (3)")
        ->type_name("count")
        ->check(positive_integer(4096));
    w->add_option("--interval", a.interval_us, "adaptive: microseconds between looks (30)")
        ->type_name("usec")
        ->check(positive_integer(std::numeric_limits<unsigned>::max()));
    w->add_option("--max-loops", a.max_loops, "adaptive: looks before blocking again (1000)")
        ->type_name("count")
        ->check(positive_integer(std::numeric_limits<unsigned>::max()));
    w->add_option("--ops", a.ops, "Number of writes (default 10000 unless --time)")
        ->type_name("count")
        ->check(positive_integer(std::numeric_limits<std::uint64_t>::max()));
    w->add_option("--time", a.seconds, "Run for this many seconds (with --ops: whichever ends first)")
        ->type_name("sec")
        ->check(positive_seconds());
    w->add_flag("--random", a.random, "Random offsets (default: sequential)");
    w->add_option("-o,--offset", a.offset, "Start of the range")->type_name("num");
    a.length_option =
        w->add_option("-l,--length", a.length, "Length of the range (default: to the end)")->type_name("num");
    w->add_flag("--unsafe-through", a.unsafe, "Allow --mode through on a write-back cache");
    w->add_option("--cache-max-age", a.cache_max_age_us,
                  "Mode through: re-read the write cache before acknowledging a write when the last answer is "
                  "older than this many microseconds (default 100000; 0: before every write)")
        ->type_name("usec")
        ->check(whole_number(1000000000000ULL));
    w->add_flag("-f,--force", a.force, "Write to a block device that holds a filesystem or partition table");
    w->add_flag("-J,--json", a.json, "Print JSON");
    w->add_option("path", a.path, "Preallocated file or block device")->required();
}

namespace {

double cpu_seconds() {
    rusage ru{};
    ::getrusage(RUSAGE_SELF, &ru);
    auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return tv(ru.ru_utime) + tv(ru.ru_stime);
}

struct aligned_free {
    void operator()(void* p) const { std::free(p); }
};
using aligned_buffer = std::unique_ptr<unsigned char, aligned_free>;

aligned_buffer make_buffer(std::uint64_t bs) {
    void* raw = nullptr;
    if (::posix_memalign(&raw, 4096, bs) != 0) {
        return nullptr;
    }
    std::memset(raw, 0x5a, bs);
    return aligned_buffer(static_cast<unsigned char*>(raw));
}

// Offsets of the run: sequential slots, or random ones.
class slot_picker {
public:
    slot_picker(std::uint64_t slots, bool random, unsigned seed) : slots_(slots), random_(random), rng_(seed) {}
    std::uint64_t pick(std::uint64_t i) { return random_ ? rng_() % slots_ : i % slots_; }

private:
    std::uint64_t slots_;
    bool random_;
    std::mt19937_64 rng_;
};

// Synchronous pwrite from `threads` threads; "" or the first failure.
// A stop signal ends the run as --ops and --time do: each thread finishes the write it is in.
std::string run_threads(wz::writer& w, const bench_args& a, std::uint64_t bs, std::uint64_t offset,
                        std::uint64_t slots, std::uint64_t ops, std::chrono::steady_clock::time_point deadline,
                        const std::atomic<bool>& interrupted) {
    std::atomic<std::uint64_t> next{0};
    std::atomic<bool> failed{false};
    std::string failure;
    std::mutex failure_mutex;
    std::vector<std::thread> threads;
    threads.reserve(a.threads);
    std::string start_failure;
    for (unsigned t = 0; t < a.threads && !failed; ++t) {
        // A thread that cannot start (RLIMIT_AS for its stack, RLIMIT_NPROC) throws: the ones
        // already running must stop and be joined, as destroying a joinable std::thread
        // terminates the process.
        try {
            threads.emplace_back([&, t] {
                aligned_buffer buf = make_buffer(bs);
                slot_picker picker(slots, a.random, t + 1);
                auto fail = [&](std::string why) {
                    std::lock_guard lock(failure_mutex);
                    if (failure.empty()) {
                        failure = std::move(why);
                    }
                    failed = true;
                };
                if (!buf) {
                    fail(fmt::format("bench write {}: buffer of thread {} ({} bytes): {}", a.path, t + 1, bs,
                                     wz::errno_text(ENOMEM)));
                    return;
                }
                while (!failed) {
                    const std::uint64_t i = next++;
                    if (i >= ops || interrupted.load() || std::chrono::steady_clock::now() >= deadline) {
                        break;
                    }
                    if (auto r = w.pwrite(buf.get(), bs, offset + picker.pick(i) * bs); !r) {
                        fail(r.error().message);
                    }
                }
            });
        } catch (const std::system_error& e) {
            start_failure = fmt::format("bench write {}: start thread {} of {}: {}", a.path, t + 1, a.threads,
                                        wz::errno_text(e.code().value()));
            failed = true;
        }
    }
    for (auto& th : threads) {
        th.join();
    }
    return start_failure.empty() ? failure : start_failure;
}

// Asynchronous: keep `qd` writes in flight, one buffer each; "" or the first failure. A stop
// signal ends submission, and the writes in flight are still reaped (handed back durable):
// none is left to the kernel when the process exits.
std::string run_async(wz::writer& w, const bench_args& a, std::uint64_t bs, std::uint64_t offset,
                      std::uint64_t slots, std::uint64_t ops, std::chrono::steady_clock::time_point deadline,
                      const std::atomic<bool>& interrupted) {
    std::vector<aligned_buffer> bufs;
    std::vector<std::uint32_t> free_bufs;
    for (unsigned i = 0; i < a.qd; ++i) {
        bufs.push_back(make_buffer(bs));
        if (!bufs.back()) {
            return fmt::format("bench write {}: buffer {} of {} ({} bytes): {}", a.path, i + 1, a.qd, bs,
                               wz::errno_text(ENOMEM));
        }
        free_bufs.push_back(i);
    }
    slot_picker picker(slots, a.random, 1);
    std::vector<wz::writer_completion> done;
    std::string failure;
    std::uint64_t issued = 0;
    bool stop = false;
    for (;;) {
        while (!stop && !free_bufs.empty()) {
            if (issued >= ops || interrupted.load() ||
                (a.seconds > 0 && (issued & 63) == 0 && std::chrono::steady_clock::now() >= deadline)) {
                stop = true;
                break;
            }
            const std::uint32_t b = free_bufs.back();
            if (auto e = w.submit(bufs[b].get(), bs, offset + picker.pick(issued) * bs, b); !e.ok()) {
                failure = e.error().message;
                stop = true;
                break;
            }
            free_bufs.pop_back();
            ++issued;
        }
        if (w.in_flight() == 0) {
            break;
        }
        done.clear();
        auto r = w.complete(done, 1);
        if (!r) {
            return r.error().message;
        }
        for (const auto& c : done) {
            if (c.error && failure.empty()) {
                failure = c.error->message;
                stop = true;
            }
            free_bufs.push_back(static_cast<std::uint32_t>(c.user_data));
        }
    }
    return failure;
}

}  // namespace

int run_bench_write(const bench_args& a) {
    // From the start: a signal while the writer opens ends the run before its first write.
    const std::atomic<bool>& interrupted = catch_stop_signals();
    std::uint64_t bs = 0, offset = 0, length = 0;
    if (!parse_range_args(a.offset, a.length, a.length_option->count() > 0, offset, length) ||
        !parse_positive_size_arg("bs", a.bs, bs)) {
        return exit_failure;
    }
    if (a.threads > 0 && (a.qd > 1 || a.completion != "interrupt")) {
        print_error("--threads uses the synchronous API: --qd and --completion are for the asynchronous one");
        return exit_failure;
    }
    if (length == 0) {
        auto caps = wz::stat(a.path);
        if (!caps) {
            print_error(caps.error().message);
            return exit_failure;
        }
        length = caps->size_bytes > offset ? caps->size_bytes - offset : 0;
    }
    wz::writer_options opt;
    opt.mode = a.mode == "through" ? wz::durability_mode::through
               : a.mode == "fua"   ? wz::durability_mode::fua
               : a.mode == "flush" ? wz::durability_mode::flush
               : a.mode == "dsync" ? wz::durability_mode::dsync
                                   : wz::durability_mode::automatic;
    opt.allow_unsafe_through = a.unsafe;
    opt.cache_max_age = std::chrono::microseconds(a.cache_max_age_us);
    opt.force = a.force;
    opt.completion.mode = a.completion == "poll"       ? wz::completion_mode::poll
                          : a.completion == "adaptive" ? wz::completion_mode::adaptive
                                                       : wz::completion_mode::interrupt;
    opt.completion.high_watermark = a.high;
    opt.completion.low_watermark = a.low;
    opt.completion.interval = std::chrono::microseconds(a.interval_us);
    opt.completion.max_loops = a.max_loops;
    // The ring: room for --qd, and above the high watermark (which must stay below it).
    opt.queue_depth = std::max({a.qd, a.high + 1, 128U});
    auto w = wz::writer::open(a.path, offset, length, opt);
    if (!w) {
        print_error(w.error().message);
        if (const std::string hint = hint_for(w.error(), hint_command::bench_write); !hint.empty()) {
            print_error(hint);
        }
        return w.error().code.value() == ENOTSUP ? exit_not_supported : exit_failure;
    }
    const std::uint64_t slots = bs == 0 ? 0 : length / bs;
    if (bs == 0 || slots == 0 || bs % w->alignment() != 0) {
        print_error(fmt::format("--bs {} must be a non-zero multiple of {} no larger than the range", bs,
                                w->alignment()));
        return exit_failure;
    }
    // The validators let only ops > 0 and 0 < seconds <= 1e9 through; 0 here means "not given".
    const std::uint64_t ops = a.ops != 0 ? a.ops : (a.seconds > 0 ? UINT64_MAX : 10000);
    const auto t0 = std::chrono::steady_clock::now();
    const auto deadline = t0 + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                                   std::chrono::duration<double>(a.seconds > 0 ? a.seconds : 1e9));
    const double cpu0 = cpu_seconds();
    const std::string failure = a.threads > 0 ? run_threads(*w, a, bs, offset, slots, ops, deadline, interrupted)
                                              : run_async(*w, a, bs, offset, slots, ops, deadline, interrupted);
    hold_stop_signals();
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    const double cpu = cpu_seconds() - cpu0;
    const int sig = stop_signal();  // one that comes later, while closing, changes nothing
    if (!failure.empty()) {
        print_error(failure);
        return exit_failure;
    }
    auto s = w->stats();
    const wz::io_engine_info engine = wz::current_io_engine();
    if (auto e = w->close(); !e.ok()) {
        print_error(e.error().message);
        return exit_failure;
    }
    const double iops = static_cast<double>(s.writes) / secs;
    const double cpu_us_per_io = s.writes == 0 ? 0.0 : cpu * 1e6 / static_cast<double>(s.writes);
    // Interrupted: the partial results still print (they are what ran), then the line that
    // says so, and exit status 1 as for an interrupted alloc.
    const auto say_interrupted = [&] {
        if (sig == 0) {
            return;
        }
        const std::string of = a.ops != 0 || a.seconds <= 0 ? fmt::format(" of {}", ops) : std::string();
        const std::string limit = a.seconds > 0 ? fmt::format(" of {:g}", a.seconds) : std::string();
        print_error(fmt::format("{}: interrupted by {} after {}{} writes in {:.3f}{} s; every write submitted "
                                "completed, none was left in flight",
                                a.path, signal_name(sig), s.writes, of, secs, limit));
    };
    const std::string api = a.threads > 0 ? "sync" : "async";
    const unsigned depth = a.threads > 0 ? a.threads : a.qd;
    if (a.json) {
        nlohmann::ordered_json j{{"path", a.path},
                                 {"mode", wz::to_string(w->mode())},
                                 {"reason", w->reason()},
                                 {"api", api},
                                 {"completion", a.threads > 0 ? "" : wz::to_string(w->completion())},
                                 {"engine", s.engine},
                                 {"engine_reason", engine.reason},
                                 {"bs", bs},
                                 {"qd", depth},
                                 {"writes", s.writes},
                                 {"seconds", secs},
                                 {"iops", iops},
                                 {"bandwidth_bytes_per_second", static_cast<double>(s.bytes) / secs},
                                 {"cpu_us_per_io", cpu_us_per_io},
                                 {"fua_writes", s.fua_writes},
                                 {"flushes", s.flushes},
                                 {"dsync_writes", s.dsync_writes},
                                 {"cache_rereads", s.cache_rereads},
                                 {"cache_rereads_per_second", static_cast<double>(s.cache_rereads) / secs},
                                 {"mode_changes", s.mode_changes},
                                 {"passthrough", s.passthrough},
                                 {"blocking_waits", s.blocking_waits},
                                 {"busy_looks", s.busy_looks},
                                 {"idle_sleeps", s.idle_sleeps},
                                 {"latency_us", {{"p50", s.p50_us}, {"p99", s.p99_us}, {"p99.9", s.p999_us}}}};
        if (sig != 0) {
            j["interrupted_by"] = signal_name(sig);
        }
        fmt::print("{}\n", wz::dump_json(std::move(j)));
        say_interrupted();
        return sig != 0 ? exit_failure : exit_ok;
    }
    fmt::print("mode: {} ({})\n", wz::to_string(w->mode()), w->reason());
    if (a.threads > 0) {
        fmt::print("api: synchronous pwrite from {} threads\n", a.threads);
    } else {
        fmt::print("api: asynchronous at QD {}, completion {}\n", a.qd, wz::to_string(w->completion()));
    }
    // psync's threads block in pwrite: a completion mode asked for is accepted and unused.
    fmt::print("engine: {} ({}){}\n", s.engine, engine.reason,
               s.engine == "psync" && a.threads == 0 && a.completion != "interrupt"
                   ? fmt::format("; completion {} has no meaning on psync: ignored", a.completion)
                   : "");
    fmt::print("{} writes of {} bytes in {:.3f} s: {:.0f} IOPS, {:.1f} MiB/s, {:.2f} us CPU per write\n", s.writes,
               bs, secs, iops, static_cast<double>(s.bytes) / secs / 1048576.0, cpu_us_per_io);
    fmt::print("latency p50 {:.1f} us, p99 {:.1f} us, p99.9 {:.1f} us; FUA writes {}, flushes issued {}, "
               "writes alone as RWF_DSYNC {}\n",
               s.p50_us, s.p99_us, s.p999_us, s.fua_writes, s.flushes, s.dsync_writes);
    if (w->mode() == wz::durability_mode::through || s.mode_changes > 0) {
        fmt::print("write cache re-read {} times ({:.1f} per second), mode changes {}\n", s.cache_rereads,
                   static_cast<double>(s.cache_rereads) / secs, s.mode_changes);
    }
    say_interrupted();
    return sig != 0 ? exit_failure : exit_ok;
}

}  // namespace wzcli

// wzero bench write: the durable writer under load, with the mode it picked and why.

#include "cli.hpp"

#include "util/size.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>
#include <vector>

namespace wzcli {

void add_bench_commands(CLI::App& app, bench_args& a) {
    CLI::App* bench = app.add_subcommand("bench", "Benchmarks");
    bench->require_subcommand(1);
    CLI::App* w = bench->add_subcommand("write", "Durable 'bs'-sized writes through wz::writer");
    w->add_option("--mode", a.mode, "auto, through, fua, flush or dsync")
        ->check(CLI::IsMember({"auto", "through", "fua", "flush", "dsync"}));
    w->add_option("--bs", a.bs, "Write size (size suffixes)");
    w->add_option("--qd", a.qd, "Writers in flight (threads)")->check(CLI::Range(1, 1024));
    w->add_option("--ops", a.ops, "Number of writes (default 10000 unless --time)");
    w->add_option("--time", a.seconds, "Run for this many seconds instead");
    w->add_flag("--random", a.random, "Random offsets (default: sequential)");
    w->add_option("-o,--offset", a.offset, "Start of the range");
    w->add_option("-l,--length", a.length, "Length of the range (default: to the end)");
    w->add_flag("--unsafe-through", a.unsafe, "Allow --mode through on a write-back cache");
    w->add_flag("-J,--json", a.json, "Print JSON");
    w->add_option("path", a.path, "Preallocated file or block device")->required();
}

int run_bench_write(const bench_args& a) {
    std::uint64_t bs = 0, offset = 0, length = 0;
    if (!parse_range_args(a.offset, a.length, offset, length)) {
        return exit_failure;
    }
    if (auto v = wz::parse_size(a.bs); v) {
        bs = *v;
    } else {
        print_error(fmt::format("invalid bs '{}': {}\nTry 'wzero --help' for more information.", a.bs,
                                v.error().message));
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
    auto w = wz::writer::open(a.path, offset, length, opt);
    if (!w) {
        print_error(w.error().message);
        return w.error().code.value() == ENOTSUP ? exit_not_supported : exit_failure;
    }
    const std::uint64_t slots = length / bs;
    if (bs == 0 || slots == 0 || bs % w->alignment() != 0) {
        print_error(fmt::format("--bs {} must be a non-zero multiple of {} no larger than the range", bs,
                                w->alignment()));
        return exit_failure;
    }
    const std::uint64_t ops = a.seconds > 0 ? UINT64_MAX : (a.ops != 0 ? a.ops : 10000);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(a.seconds > 0 ? a.seconds : 1e9);
    std::atomic<std::uint64_t> next{0};
    std::atomic<bool> failed{false};
    std::string failure;
    std::mutex failure_mutex;
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < a.qd; ++t) {
        threads.emplace_back([&, t] {
            void* raw = nullptr;
            if (::posix_memalign(&raw, 4096, bs) != 0) {
                failed = true;
                return;
            }
            std::memset(raw, 0x5a, bs);
            std::mt19937_64 rng(t + 1);
            while (!failed) {
                const std::uint64_t i = next++;
                if (i >= ops || std::chrono::steady_clock::now() >= deadline) {
                    break;
                }
                const std::uint64_t slot = a.random ? rng() % slots : i % slots;
                auto r = w->pwrite(raw, bs, offset + slot * bs);
                if (!r) {
                    std::lock_guard lock(failure_mutex);
                    failure = r.error().message;
                    failed = true;
                }
            }
            std::free(raw);
        });
    }
    for (auto& th : threads) {
        th.join();
    }
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (failed) {
        print_error(failure.empty() ? "out of memory" : failure);
        return exit_failure;
    }
    auto s = w->stats();
    if (auto e = w->close()) {
        print_error(e->message);
        return exit_failure;
    }
    const double iops = static_cast<double>(s.writes) / secs;
    if (a.json) {
        nlohmann::ordered_json j{{"path", a.path},
                                 {"mode", wz::to_string(w->mode())},
                                 {"reason", w->reason()},
                                 {"bs", bs},
                                 {"qd", a.qd},
                                 {"writes", s.writes},
                                 {"seconds", secs},
                                 {"iops", iops},
                                 {"bandwidth_bytes_per_second", static_cast<double>(s.bytes) / secs},
                                 {"fua_writes", s.fua_writes},
                                 {"flushes", s.flushes},
                                 {"latency_us", {{"p50", s.p50_us}, {"p99", s.p99_us}, {"p99.9", s.p999_us}}}};
        fmt::print("{}\n", j.dump(2));
        return exit_ok;
    }
    fmt::print("mode: {} ({})\n", wz::to_string(w->mode()), w->reason());
    fmt::print("{} writes of {} bytes at QD {} in {:.3f} s: {:.0f} IOPS, {:.1f} MiB/s\n", s.writes, bs, a.qd, secs, iops,
               static_cast<double>(s.bytes) / secs / 1048576.0);
    fmt::print("latency p50 {:.1f} us, p99 {:.1f} us, p99.9 {:.1f} us; FUA writes {}, flushes issued {}\n", s.p50_us,
               s.p99_us, s.p999_us, s.fua_writes, s.flushes);
    return exit_ok;
}

}  // namespace wzcli

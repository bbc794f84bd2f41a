// SPDX-License-Identifier: MIT
// Benchmark: how long wz::stat() takes cold (device facts re-probed: sysfs, and on NVMe
// the Identify/Get Features admin commands) and cached (per-device facts reused; the
// per-file statx/statfs/mount lookup still runs). Reports medians and p99 of one run.
// With --write-cache: wz::write_cache() instead, held (an answer younger than the maximum
// age: no I/O) and re-read (maximum age 0: Get Features FID 06h on NVMe, sysfs elsewhere).
// With --entry: what the public call's own descriptor table costs: wz::stat, cached, by
// descriptor and by path, beside the same record read in place (record::of: the caller's
// thread and table, no entry), interleaved in rounds so that both see the same machine noise.
//
//   wzero_bench_stat [--json] [--write-cache | --entry] [PATH...]   (default: this binary's own file)

#include "record/record.hpp"

#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

struct stats {
    double p50_us = 0, p99_us = 0, min_us = 0;
};

template <class Fn>
stats measure_calls(int iterations, Fn&& call) {
    std::vector<double> us;
    us.reserve(static_cast<std::size_t>(iterations));
    for (int i = 0; i < iterations; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        auto r = call();
        auto t1 = std::chrono::steady_clock::now();
        if (!r) {
            fmt::print(stderr, "wzero_bench_stat: {}\n", r.error().message);
            std::exit(1);
        }
        us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count());
    }
    std::sort(us.begin(), us.end());
    auto at = [&](double q) { return us[static_cast<std::size_t>(q * static_cast<double>(us.size() - 1))]; };
    return {at(0.5), at(0.99), us.front()};
}

stats measure(const std::string& path, bool refresh, int iterations) {
    wz::stat_options opt;
    opt.refresh = refresh;
    return measure_calls(iterations, [&] { return wz::stat(path, opt); });
}

stats measure_write_cache(int fd, const std::string& path, std::chrono::nanoseconds max_age, int iterations) {
    return measure_calls(iterations, [&] { return wz::write_cache(fd, path, max_age); });
}

double median_of(std::vector<stats> v, double stats::*f) {
    std::sort(v.begin(), v.end(), [f](const stats& a, const stats& b) { return a.*f < b.*f; });
    return v[v.size() / 2].*f;
}

int bench_write_cache(const std::vector<std::string>& paths, bool json) {
    if (!json) {
        fmt::print("{:<40} {:>14} {:>14} {:>14} {:>14}\n", "path", "held p50 us", "held p99 us", "re-read p50 us",
                   "re-read p99 us");
    }
    for (const auto& p : paths) {
        const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fmt::print(stderr, "wzero_bench_stat: open {}: {}\n", p, std::strerror(errno));
            return 1;
        }
        std::vector<stats> held, reread;
        for (int round = 0; round < 5; ++round) {
            reread.push_back(measure_write_cache(fd, p, std::chrono::nanoseconds(0), 40));
            held.push_back(measure_write_cache(fd, p, std::chrono::hours(1), 2000));
        }
        ::close(fd);
        const double h50 = median_of(held, &stats::p50_us), h99 = median_of(held, &stats::p99_us);
        const double r50 = median_of(reread, &stats::p50_us), r99 = median_of(reread, &stats::p99_us);
        if (json) {
            fmt::print("{{\"path\": \"{}\", \"held_p50_us\": {:.3f}, \"held_p99_us\": {:.3f}, \"reread_p50_us\": {:.1f}, "
                       "\"reread_p99_us\": {:.1f}}}\n",
                       p, h50, h99, r50, r99);
        } else {
            fmt::print("{:<40} {:>14.3f} {:>14.3f} {:>14.1f} {:>14.1f}\n", p, h50, h99, r50, r99);
        }
    }
    return 0;
}

int bench_entry(const std::vector<std::string>& paths, bool json) {
    if (!json) {
        fmt::print("{:<40} {:>15} {:>15} {:>14} {:>14} {:>8}\n", "path", "in place p50 us", "in place p99 us",
                   "wz::stat p50 us", "wz::stat p99 us", "ratio");
    }
    for (const auto& p : paths) {
        const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            fmt::print(stderr, "wzero_bench_stat: open {}: {}\n", p, std::strerror(errno));
            return 1;
        }
        // The descriptor form, then the path form (which opens and closes the file).
        for (const bool by_path : {false, true}) {
            std::vector<stats> here, entry;
            for (int round = 0; round < 5; ++round) {
                if (by_path) {
                    here.push_back(measure_calls(2000, [&] { return wz::record::of(p); }));
                    entry.push_back(measure_calls(2000, [&] { return wz::stat(p); }));
                } else {
                    here.push_back(measure_calls(2000, [&] { return wz::record::of(fd, p); }));
                    entry.push_back(measure_calls(2000, [&] { return wz::stat(fd, p); }));
                }
            }
            const double h50 = median_of(here, &stats::p50_us), h99 = median_of(here, &stats::p99_us);
            const double e50 = median_of(entry, &stats::p50_us), e99 = median_of(entry, &stats::p99_us);
            const std::string form = by_path ? "path" : "fd";
            if (json) {
                fmt::print("{{\"path\": \"{}\", \"form\": \"{}\", \"in_place_p50_us\": {:.1f}, "
                           "\"in_place_p99_us\": {:.1f}, \"stat_p50_us\": {:.1f}, \"stat_p99_us\": {:.1f}, "
                           "\"ratio_p50\": {:.2f}}}\n",
                           p, form, h50, h99, e50, e99, e50 / h50);
            } else {
                fmt::print("{:<40} {:>15.1f} {:>15.1f} {:>14.1f} {:>14.1f} {:>7.2f}x\n", p + " (" + form + ")", h50,
                           h99, e50, e99, e50 / h50);
            }
        }
        ::close(fd);
    }
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    bool json = false, write_cache = false, entry = false;
    std::vector<std::string> paths;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--json") == 0) {
            json = true;
        } else if (std::strcmp(argv[i], "--write-cache") == 0) {
            write_cache = true;
        } else if (std::strcmp(argv[i], "--entry") == 0) {
            entry = true;
        } else {
            paths.emplace_back(argv[i]);
        }
    }
    if (paths.empty()) {
        paths.emplace_back("/proc/self/exe");
    }
    if (write_cache) {
        return bench_write_cache(paths, json);
    }
    if (entry) {
        return bench_entry(paths, json);
    }
    if (!json) {
        fmt::print("{:<40} {:>12} {:>12} {:>14} {:>14} {:>8}\n", "path", "cold p50 us", "cold p99 us",
                   "cached p50 us", "cached p99 us", "ratio");
    }
    for (const auto& p : paths) {
        // Interleave so that both see the same machine noise.
        stats cold{}, cached{};
        std::vector<stats> c1, c2;
        for (int round = 0; round < 5; ++round) {
            c1.push_back(measure(p, true, 40));
            c2.push_back(measure(p, false, 2000));
        }
        auto med = [](std::vector<stats> v, double stats::*f) {
            std::sort(v.begin(), v.end(), [f](const stats& a, const stats& b) { return a.*f < b.*f; });
            return v[v.size() / 2].*f;
        };
        cold = {med(c1, &stats::p50_us), med(c1, &stats::p99_us), med(c1, &stats::min_us)};
        cached = {med(c2, &stats::p50_us), med(c2, &stats::p99_us), med(c2, &stats::min_us)};
        if (json) {
            fmt::print("{{\"path\": \"{}\", \"cold_p50_us\": {:.1f}, \"cold_p99_us\": {:.1f}, \"cached_p50_us\": {:.1f}, "
                       "\"cached_p99_us\": {:.1f}}}\n",
                       p, cold.p50_us, cold.p99_us, cached.p50_us, cached.p99_us);
        } else {
            fmt::print("{:<40} {:>12.1f} {:>12.1f} {:>14.1f} {:>14.1f} {:>7.1f}x\n", p, cold.p50_us, cold.p99_us,
                       cached.p50_us, cached.p99_us, cold.p50_us / cached.p50_us);
        }
    }
    return 0;
}

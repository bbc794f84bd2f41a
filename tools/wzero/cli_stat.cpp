// SPDX-License-Identifier: MIT
// wzero stat [--json] PATH

#include "cli.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <string>
#include <vector>

namespace wzcli {

namespace {

std::string size_text(std::uint64_t b) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    double v = static_cast<double>(b);
    while (v >= 1024.0 && u < 5) {
        v /= 1024.0;
        ++u;
    }
    if (u == 0) {
        return fmt::format("{} B", b);
    }
    return fmt::format("{:.4g} {} ({} bytes)", v, units[u], b);
}

template <class T>
std::string opt_text(const std::optional<T>& v, const char* unknown = "unknown") {
    return v ? fmt::format("{}", *v) : std::string(unknown);
}

std::string yes_no(const std::optional<bool>& v) {
    return v ? (*v ? "yes" : "no") : "unknown";
}

struct table {
    std::vector<std::pair<std::string, std::string>> rows;
    void add(std::string k, std::string v) { rows.emplace_back(std::move(k), std::move(v)); }
    void print() const {
        std::size_t w = 0;
        for (const auto& r : rows) {
            w = std::max(w, r.first.size());
        }
        for (const auto& r : rows) {
            if (r.second.empty()) {
                fmt::print("{}\n", r.first);
            } else {
                fmt::print("{:<{}}  {}\n", r.first, w, r.second);
            }
        }
    }
};

void print_human(const wz::capabilities& c) {
    table t;
    t.add("path", c.path);
    t.add("type", fmt::format("{}, {}", c.file_type, size_text(c.size_bytes)));
    t.add("kernel", c.kernel_release);
    if (c.fs) {
        t.add("filesystem", fmt::format("{} on {} ({})", c.fs->type, c.fs->mount_point, c.fs->mount_source));
        t.add("  options", c.fs->mount_options);
        t.add("  copy-on-write", fmt::format("{}: {}", c.fs->cow ? "yes" : "no", c.fs->cow_reason));
        t.add("  fallocate", fmt::format("{}: {}", !c.fs->fallocate ? "unknown" : *c.fs->fallocate ? "yes" : "no",
                                         c.fs->fallocate_reason));
    }
    t.add("direct I/O", c.dio ? fmt::format("memory alignment {}, offset alignment {}", c.dio->mem_align,
                                            c.dio->offset_align)
                              : std::string("not supported"));
    if (c.device) {
        const auto& d = *c.device;
        std::string where = d.partition ? fmt::format(", partition of {} at byte {}", d.disk, d.partition_start_bytes)
                                        : std::string();
        t.add("device", fmt::format("{} ({}, {}:{}{})", d.path, d.kind, d.major, d.minor, where));
        if (!d.backing_file.empty()) {
            t.add("  backing file", d.backing_file);
        }
        if (!d.slaves.empty()) {
            std::string s;
            for (const auto& x : d.slaves) {
                s += (s.empty() ? "" : " ") + x;
            }
            t.add("  stacked on", s);
        }
        t.add("  block size", fmt::format("logical {}, physical {}", d.logical_block_size, d.physical_block_size));
        t.add("  size", size_text(d.size_bytes));
        t.add("  discard", fmt::format("granularity {}, max {}", d.discard_granularity, size_text(d.discard_max_bytes)));
        t.add("  poll queues", yes_no(d.io_poll));
    } else {
        t.add("device", "none");
    }
    t.add("write zeroes", fmt::format("max {} per command, unmap {}", size_text(c.write_zeroes.max_bytes),
                                      yes_no(c.write_zeroes.unmap)));
    if (c.nvme) {
        const auto& n = *c.nvme;
        t.add("nvme", fmt::format("{} nsid {} on {} ({}, {})", n.namespace_device, n.nsid, n.controller,
                                  n.model.empty() ? "?" : n.model, n.transport.empty() ? "?" : n.transport));
        t.add("  char device", n.char_device.empty() ? "none" : n.char_device);
        t.add("  LBA size", fmt::format("{} bytes, partition start LBA {}", n.lba_bytes, n.partition_start_lba));
        t.add("  write zeroes", fmt::format("ONCS bit 3: {}, WZSL {} (max {})", yes_no(n.write_zeroes_supported),
                                            opt_text(n.wzsl),
                                            n.wzsl_max_bytes ? (*n.wzsl_max_bytes == 0 ? std::string("no limit")
                                                                                       : size_text(*n.wzsl_max_bytes))
                                                             : std::string("unknown")));
        t.add("  DLFEAT", n.dlfeat ? fmt::format("{:#04x}: WZDS {}, read behaviour {:03b}, DEAC {}", *n.dlfeat,
                                                 yes_no(n.wzds), n.dlfeat_read_behavior.value_or(0), yes_no(n.deac))
                                   : std::string("unknown"));
        t.add("  dealloc granularity",
              n.npdg_bytes ? fmt::format("{} bytes, alignment {} bytes ({})", *n.npdg_bytes, n.npda_bytes.value_or(0),
                                         n.npd_source)
                           : std::string("not stated"));
        t.add("  MDTS", n.mdts ? fmt::format("{} (min page size {})", *n.mdts, opt_text(n.mps_min_bytes))
                               : std::string("unknown"));
        t.add("  volatile write cache", fmt::format("present {}, enabled (WCE) {}", yes_no(n.vwc_present),
                                                    yes_no(n.vwc_enabled)));
    } else {
        t.add("nvme", "no");
    }
    auto mode = [](const std::optional<wz::cache_mode>& m) {
        return m ? std::string(wz::to_string(*m)) : std::string("unknown");
    };
    t.add("cache (kernel)", mode(c.cache.kernel));
    t.add("cache (effective)", fmt::format("{}: {}", mode(c.cache.effective), c.cache.effective_reason));
    t.add("FUA", yes_no(c.cache.fua));
    t.add("flush needed", fmt::format("{}: {}", yes_no(c.cache.flush_needed), c.cache.flush_reason));
    t.add("zeroing methods", "");
    for (wz::zero_method m : wz::all_zero_methods) {
        auto it = c.methods.find(m);
        if (it == c.methods.end()) {
            continue;
        }
        const auto& a = it->second;
        t.add(fmt::format("  {}", wz::to_string(m)),
              fmt::format("{:<7} {}", a.usable ? (*a.usable ? "usable" : "no") : "unknown", a.reason));
    }
    t.add("I/O engine", fmt::format("{}: {}", wz::to_string(c.io.engine), c.io.reason));
    t.add("recommended", c.recommended_method
                             ? fmt::format("{}: {}", wz::to_string(*c.recommended_method), c.recommended_reason)
                             : std::string("none"));
    if (!c.unknown.empty()) {
        t.add("not known", "");
        for (const auto& [k, v] : c.unknown) {
            t.add(fmt::format("  {}", k), v);
        }
    }
    t.print();
}

}  // namespace

void add_stat_command(CLI::App& app, stat_args& args) {
    CLI::App* cmd = app.add_subcommand("stat", "Print what the storage under a file or block device can do");
    cmd->add_option("path", args.path, "A regular file or a block device (whole disk or partition)")->required();
    cmd->add_flag("-J,--json", args.json, "Print one JSON document (fields in wzero(1))");
    cmd->add_flag("--refresh", args.refresh, "Re-read cached device facts (e.g. after Set Features)");
}

int run_stat(const stat_args& args) {
    wz::stat_options opt;
    opt.refresh = args.refresh;
    auto caps = wz::stat(args.path, opt);
    if (!caps) {
        print_error(caps.error().message);
        return exit_failure;
    }
    if (args.json) {
        fmt::print("{}\n", wz::to_json(*caps));
    } else {
        print_human(*caps);
    }
    return exit_ok;
}

}  // namespace wzcli

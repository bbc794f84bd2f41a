// SPDX-License-Identifier: MIT
// wzero stat [options] PATH...: a table with a row per path (libsmartcols, as lsblk), or
// with --record the capability record itself, one JSON document per path.

#include "cli.hpp"
#include "cli_table.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>

#include <cstdio>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace wzcli {

namespace {

using cell = std::optional<std::string>;
using getter = std::function<cell(const wz::capabilities&)>;

struct stat_column {
    column_info info;
    getter get;
};

template <class T>
cell num(const std::optional<T>& v) {
    return v ? cell(fmt::format("{}", +*v)) : std::nullopt;
}
template <class T>
cell num(const T& v) {
    return fmt::format("{}", +v);
}
cell boolean(const std::optional<bool>& v) {
    return v ? cell(*v ? "1" : "0") : std::nullopt;
}
cell text(const std::string& s) {
    return s.empty() ? std::nullopt : cell(s);
}
cell mode_text(const std::optional<wz::cache_mode>& m) {
    return m ? cell(wz::to_string(*m)) : std::nullopt;
}
const wz::method_assessment* method(const wz::capabilities& c, wz::zero_method m) {
    auto it = c.methods.find(m);
    return it == c.methods.end() ? nullptr : &it->second;
}

// Column helpers for the optional parts of the record: a getter on the part, none without it.
template <class Part, class Fn>
getter from(std::optional<Part> wz::capabilities::*part, Fn fn) {
    return [part, fn](const wz::capabilities& c) -> cell { return (c.*part) ? cell(fn(*(c.*part))) : std::nullopt; };
}

constexpr column_info str(const char* name, const char* description) {
    return {name, column_type::string, false, 0, false, description};
}
constexpr column_info reason(const char* name, const char* description) {
    return {name, column_type::string, false, 0.3, true, description};
}
constexpr column_info number(const char* name, const char* description) {
    return {name, column_type::number, true, 0, false, description};
}
constexpr column_info flag(const char* name, const char* description) {
    return {name, column_type::boolean, false, 0, false, description};
}

stat_column method_usable(const char* name, wz::zero_method m, const char* description) {
    return {flag(name, description), [m](const wz::capabilities& c) -> cell {
                const auto* a = method(c, m);
                return a != nullptr ? boolean(a->usable) : std::nullopt;
            }};
}
stat_column method_reason(const char* name, wz::zero_method m, const char* description) {
    return {reason(name, description), [m](const wz::capabilities& c) -> cell {
                const auto* a = method(c, m);
                return a != nullptr ? text(a->reason) : std::nullopt;
            }};
}

const std::vector<stat_column>& stat_columns() {
    using C = wz::capabilities;
    using F = wz::fs_info;
    using D = wz::device_info;
    using N = wz::nvme_info;
    static const std::vector<stat_column> columns = {
        {str("PATH", "the path as given"), [](const C& c) { return text(c.path); }},
        {str("TYPE", "regular or block"), [](const C& c) { return text(c.file_type); }},
        {number("SIZE", "size of the file or block device, in bytes"), [](const C& c) { return num(c.size_bytes); }},
        {str("KERNEL", "kernel release"), [](const C& c) { return text(c.kernel_release); }},
        {str("FSTYPE", "filesystem type (none for a block device)"),
         from(&C::fs, [](const F& f) { return f.type; })},
        {number("FSBLOCK", "filesystem block size (statfs f_bsize), in bytes"),
         [](const C& c) { return c.fs ? num(c.fs->block_size) : std::nullopt; }},
        {str("MOUNTPOINT", "where the filesystem is mounted"), from(&C::fs, [](const F& f) { return f.mount_point; })},
        {str("SOURCE", "the mounted device or source"), from(&C::fs, [](const F& f) { return f.mount_source; })},
        {str("MOUNTOPTS", "mount options (VFS and filesystem), as in /proc/self/mountinfo"),
         from(&C::fs, [](const F& f) { return f.mount_options; })},
        {flag("COW", "the file's data is copy-on-write"),
         [](const C& c) { return c.fs ? boolean(c.fs->cow) : std::nullopt; }},
        {reason("COW-REASON", "why COW is what it is"), from(&C::fs, [](const F& f) { return f.cow_reason; })},
        {flag("FALLOCATE", "fallocate(2) mode 0 allocates here"),
         [](const C& c) { return c.fs ? boolean(c.fs->fallocate) : std::nullopt; }},
        {reason("FALLOCATE-REASON", "why FALLOCATE is what it is"),
         from(&C::fs, [](const F& f) { return f.fallocate_reason; })},
        {number("DIO-MEM", "O_DIRECT memory alignment, in bytes (none: no O_DIRECT)"),
         [](const C& c) { return c.dio ? num(c.dio->mem_align) : std::nullopt; }},
        {number("DIO-OFFSET", "O_DIRECT offset alignment, in bytes (none: no O_DIRECT)"),
         [](const C& c) { return c.dio ? num(c.dio->offset_align) : std::nullopt; }},
        {str("DIO-SOURCE", "where the alignment comes from: statx, or block size"),
         from(&C::dio, [](const wz::dio_alignment& d) { return d.source; })},
        {str("DEVICE", "the block device holding the data, the first of DEVICES (none: tmpfs, or not known: FUSE, "
                       "NFS, ...)"),
         from(&C::device, [](const D& d) { return d.path; })},
        {str("DEVICES", "every block device the data may be on, separated by commas (one, or each device of a btrfs)"),
         [](const C& c) {
             std::string s;
             for (const auto& d : c.devices) {
                 s += (s.empty() ? "" : ",") + d.device.path;
             }
             return text(s);
         }},
        {str("DISK", "the whole disk of DEVICE"), from(&C::device, [](const D& d) { return d.disk; })},
        {str("DEVKIND", "nvme, loop, dm, md, scsi, virtio, nullb or other"),
         from(&C::device, [](const D& d) { return d.kind; })},
        {str("MAJ:MIN", "DEVICE's major and minor numbers"),
         from(&C::device, [](const D& d) { return fmt::format("{}:{}", d.major, d.minor); })},
        {number("PART-START", "a partition's start on its disk, in bytes (none: not a partition)"),
         [](const C& c) {
             return c.device && c.device->partition ? num(c.device->partition_start_bytes) : std::nullopt;
         }},
        {number("DEVSIZE", "size of DEVICE, in bytes"),
         [](const C& c) { return c.device ? num(c.device->size_bytes) : std::nullopt; }},
        {number("LOG-SEC", "logical block size of DEVICE, in bytes"),
         [](const C& c) { return c.device ? num(c.device->logical_block_size) : std::nullopt; }},
        {number("PHY-SEC", "physical block size of DEVICE, in bytes"),
         [](const C& c) { return c.device ? num(c.device->physical_block_size) : std::nullopt; }},
        {number("MAX-TRANSFER", "largest transfer the hardware takes (queue/max_hw_sectors_kb), in bytes"),
         [](const C& c) { return c.device ? num(c.device->max_hw_transfer_bytes) : std::nullopt; }},
        {number("DISC-GRAN", "discard granularity, in bytes"),
         [](const C& c) { return c.device ? num(c.device->discard_granularity) : std::nullopt; }},
        {number("DISC-MAX", "largest discard, in bytes"),
         [](const C& c) { return c.device ? num(c.device->discard_max_bytes) : std::nullopt; }},
        {flag("ROTA", "rotational device"), [](const C& c) { return c.device ? boolean(c.device->rotational) : std::nullopt; }},
        {flag("POLL", "the disk has poll queues (queue/io_poll)"),
         [](const C& c) { return c.device ? boolean(c.device->io_poll) : std::nullopt; }},
        {str("BACK-FILE", "a loop device's backing file"), from(&C::device, [](const D& d) { return d.backing_file; })},
        {flag("LOOP-DIO", "a loop device does direct I/O to its backing file"),
         [](const C& c) { return c.device ? boolean(c.device->loop_direct_io) : std::nullopt; }},
        {str("SLAVES", "dm and md: the devices below, separated by spaces"), from(&C::device, [](const D& d) {
             std::string s;
             for (const auto& x : d.slaves) {
                 s += (s.empty() ? "" : " ") + x;
             }
             return s;
         })},
        {number("WZ-MAX", "largest Write Zeroes the kernel sends (queue/write_zeroes_max_bytes), in bytes; 0: none"),
         [](const C& c) { return num(c.write_zeroes.max_bytes); }},
        {flag("WZ-UNMAP", "Write Zeroes may unmap (Linux 6.17+ sysfs)"),
         [](const C& c) { return boolean(c.write_zeroes.unmap); }},
        {number("WZ-UNMAP-MAX", "largest unmapping Write Zeroes, in bytes"),
         [](const C& c) { return num(c.write_zeroes.unmap_max_bytes); }},
        {number("WZ-UNMAP-HW-MAX", "largest unmapping Write Zeroes the hardware takes, in bytes"),
         [](const C& c) { return num(c.write_zeroes.unmap_max_hw_bytes); }},
        {str("NVME-CTRL", "NVMe controller (/dev/nvme0); none off NVMe"),
         from(&C::nvme, [](const N& n) { return n.controller; })},
        {str("NVME-NS", "NVMe namespace block device"), from(&C::nvme, [](const N& n) { return n.namespace_device; })},
        {str("NVME-CHAR", "NVMe namespace character device (/dev/ng0n1)"),
         from(&C::nvme, [](const N& n) { return n.char_device; })},
        {str("NVME-PT", "where NVMe passthrough goes: char_device (/dev/ngXnY), block_device (Linux < 5.13) or none"),
         from(&C::nvme, [](const N& n) { return std::string(to_string(n.passthrough)); })},
        {str("NVME-PT-DEV", "the device NVMe passthrough commands are sent to"),
         from(&C::nvme, [](const N& n) { return n.passthrough_device; })},
        {number("NSID", "NVMe namespace ID"), [](const C& c) { return c.nvme ? num(c.nvme->nsid) : std::nullopt; }},
        {str("MODEL", "NVMe controller model"), from(&C::nvme, [](const N& n) { return n.model; })},
        {str("SERIAL", "NVMe controller serial number"), from(&C::nvme, [](const N& n) { return n.serial; })},
        {str("REV", "NVMe controller firmware revision"), from(&C::nvme, [](const N& n) { return n.firmware; })},
        {str("TRAN", "NVMe transport (pcie, tcp, loop, ...)"), from(&C::nvme, [](const N& n) { return n.transport; })},
        {number("LBA-SIZE", "NVMe LBA size, in bytes"),
         [](const C& c) { return c.nvme ? num(c.nvme->lba_bytes) : std::nullopt; }},
        {number("NSZE", "NVMe namespace size, in LBAs"),
         [](const C& c) { return c.nvme ? num(c.nvme->nsze_lba) : std::nullopt; }},
        {number("PART-SLBA", "a partition's first LBA on the namespace"),
         [](const C& c) { return c.nvme ? num(c.nvme->partition_start_lba) : std::nullopt; }},
        {number("ONCS", "Identify Controller ONCS (optional NVM commands), raw"),
         [](const C& c) { return c.nvme ? num(c.nvme->oncs) : std::nullopt; }},
        {flag("WZ-CMD", "the controller supports Write Zeroes (ONCS bit 3)"),
         [](const C& c) { return c.nvme ? boolean(c.nvme->write_zeroes_supported) : std::nullopt; }},
        {number("MDTS", "Identify Controller MDTS (maximum data transfer size, a power of two in pages)"),
         [](const C& c) { return c.nvme ? num(c.nvme->mdts) : std::nullopt; }},
        {number("MPSMIN", "smallest memory page size of the controller (CAP.MPSMIN), in bytes"),
         [](const C& c) { return c.nvme ? num(c.nvme->mps_min_bytes) : std::nullopt; }},
        {number("WZSL", "Write Zeroes size limit (NVM Identify Controller WZSL), raw"),
         [](const C& c) { return c.nvme ? num(c.nvme->wzsl) : std::nullopt; }},
        {number("WZSL-MAX", "largest Write Zeroes WZSL allows, in bytes; 0: no limit"),
         [](const C& c) { return c.nvme ? num(c.nvme->wzsl_max_bytes) : std::nullopt; }},
        {flag("VWC", "a volatile write cache is present (VWC bit 0)"),
         [](const C& c) { return c.nvme ? boolean(c.nvme->vwc_present) : std::nullopt; }},
        {flag("WCE", "the volatile write cache is enabled (Get Features FID 06h)"),
         [](const C& c) { return c.nvme ? boolean(c.nvme->vwc_enabled) : std::nullopt; }},
        {number("NSFEAT", "Identify Namespace NSFEAT, raw"),
         [](const C& c) { return c.nvme ? num(c.nvme->nsfeat) : std::nullopt; }},
        {number("DLFEAT", "Identify Namespace DLFEAT, raw"),
         [](const C& c) { return c.nvme ? num(c.nvme->dlfeat) : std::nullopt; }},
        {number("DRB", "DLFEAT bits 2:0, what a deallocated block reads as (1: zeroes)"),
         [](const C& c) { return c.nvme ? num(c.nvme->dlfeat_read_behavior) : std::nullopt; }},
        {flag("WZDS", "Write Zeroes may deallocate (DLFEAT bit 3)"),
         [](const C& c) { return c.nvme ? boolean(c.nvme->wzds) : std::nullopt; }},
        {flag("DEAC", "Write Zeroes with DEAC deallocates and reads back zeroes (WZDS and DRB 001b)"),
         [](const C& c) { return c.nvme ? boolean(c.nvme->deac) : std::nullopt; }},
        {number("NPDG", "NVMe preferred deallocate granularity, in bytes"),
         [](const C& c) { return c.nvme ? num(c.nvme->npdg_bytes) : std::nullopt; }},
        {number("NPDA", "NVMe preferred deallocate alignment, in bytes"),
         [](const C& c) { return c.nvme ? num(c.nvme->npda_bytes) : std::nullopt; }},
        {str("NPD-SOURCE", "where NPDG and NPDA come from: npdg/npda or npdgl/npdal"),
         from(&C::nvme, [](const N& n) { return n.npd_source; })},
        {number("NPWG", "NVMe preferred write granularity, in bytes"),
         [](const C& c) { return c.nvme ? num(c.nvme->npwg_bytes) : std::nullopt; }},
        {str("KCACHE", "the kernel's cache mode for the device (queue/write_cache)"),
         [](const C& c) { return mode_text(c.cache.kernel); }},
        {str("CACHE", "what the device's cache really does: write-back or write-through"),
         [](const C& c) { return mode_text(c.cache.effective); }},
        {reason("CACHE-REASON", "why CACHE is what it is"), [](const C& c) { return text(c.cache.effective_reason); }},
        {flag("FUA", "the device takes FUA writes (queue/fua)"), [](const C& c) { return boolean(c.cache.fua); }},
        {flag("FLUSH", "a durable write needs a cache flush"), [](const C& c) { return boolean(c.cache.flush_needed); }},
        {reason("FLUSH-REASON", "why FLUSH is what it is"), [](const C& c) { return text(c.cache.flush_reason); }},
        {flag("DSYNC-FUA", "an O_DSYNC O_DIRECT overwrite of written extents is one FUA write, no flush"),
         [](const C& c) { return boolean(c.cache.dsync_overwrite_fua); }},
        {reason("DSYNC-FUA-REASON", "why DSYNC-FUA is what it is"),
         [](const C& c) { return text(c.cache.dsync_overwrite_reason); }},
        method_usable("M-KERNEL", wz::zero_method::kernel, "zeroing method kernel (FALLOC_FL_WRITE_ZEROES) is usable"),
        method_reason("M-KERNEL-REASON", wz::zero_method::kernel, "why M-KERNEL is what it is"),
        method_usable("M-NVME-DEAC", wz::zero_method::nvme_deac,
                      "zeroing method nvme_deac (NVMe Write Zeroes with DEAC) is usable"),
        method_reason("M-NVME-DEAC-REASON", wz::zero_method::nvme_deac, "why M-NVME-DEAC is what it is"),
        method_usable("M-NVME", wz::zero_method::nvme, "zeroing method nvme (NVMe Write Zeroes) is usable"),
        method_reason("M-NVME-REASON", wz::zero_method::nvme, "why M-NVME is what it is"),
        method_usable("M-ZEROOUT", wz::zero_method::zeroout, "zeroing method zeroout (BLKZEROOUT) is usable"),
        method_reason("M-ZEROOUT-REASON", wz::zero_method::zeroout, "why M-ZEROOUT is what it is"),
        method_usable("M-WRITE", wz::zero_method::write, "zeroing method write (data writes of zeroes) is usable"),
        method_reason("M-WRITE-REASON", wz::zero_method::write, "why M-WRITE is what it is"),
        {str("METHOD", "the recommended zeroing method (none: no method usable)"),
         [](const C& c) { return c.recommended_method ? cell(wz::to_string(*c.recommended_method)) : std::nullopt; }},
        {reason("METHOD-REASON", "why METHOD is recommended"), [](const C& c) { return text(c.recommended_reason); }},
        {str("ENGINE", "the I/O engine this process uses: io_uring or psync"),
         [](const C& c) { return cell(wz::to_string(c.io.engine)); }},
        {reason("ENGINE-REASON", "why ENGINE is what it is"), [](const C& c) { return text(c.io.reason); }},
        {str("UNKNOWN", "what could not be found out, separated by spaces (the reasons: --record's \"unknown\")"),
         [](const C& c) {
             std::string s;
             for (const auto& [k, v] : c.unknown) {
                 s += (s.empty() ? "" : " ") + k;
             }
             return text(s);
         }},
    };
    return columns;
}

const std::vector<column_info>& stat_column_infos() {
    static const std::vector<column_info> infos = [] {
        std::vector<column_info> v;
        for (const auto& c : stat_columns()) {
            v.push_back(c.info);
        }
        return v;
    }();
    return infos;
}

std::vector<std::size_t> stat_default_columns() {
    std::vector<std::size_t> out;
    for (const char* name : {"PATH", "TYPE", "FSTYPE", "DEVICE", "WZ-MAX", "WZ-UNMAP", "DEAC", "NPDG", "NPDA", "CACHE",
                             "FUA", "FLUSH", "METHOD", "ENGINE"}) {
        for (std::size_t i = 0; i < stat_columns().size(); ++i) {
            if (std::string_view(stat_columns()[i].info.name) == name) {
                out.push_back(i);
            }
        }
    }
    return out;
}

int print_or_fail(const wz::status& s) {
    if (!s.ok()) {
        print_error(s.error().message);
        return exit_failure;
    }
    return exit_ok;
}

}  // namespace

void add_stat_command(CLI::App& app, stat_args& args) {
    CLI::App* cmd = app.add_subcommand("stat", "Print what the storage under a file or block device can do");
    CLI::Option* path = cmd->add_option("path", args.paths, "Regular files or block devices (whole disks or partitions)");
    add_table_options(cmd, args.table, "-o,--output");
    path_required_unless_list_columns(cmd, path);
    cmd->add_flag("--record", args.record, "Print the capability record, one JSON document per path (wzero(1))");
    cmd->add_flag("--refresh", args.refresh, "Re-read cached device facts (e.g. after Set Features)");
}

// One row per path; a path that fails is said on stderr and the others are still printed
// (exit status 1), as lsblk does for a device it cannot read.
int run_stat(stat_args& args) {
    const auto format = format_of(args.table);
    if (!format) {
        return exit_failure;
    }
    if (args.table.list_columns) {
        std::string out;
        auto s = list_columns("wzero-stat-columns", stat_column_infos(), *format, out);
        if (s.ok()) {
            s = write_stdout(out);
        }
        return print_or_fail(s);
    }
    const auto selected =
        select_columns(stat_column_infos(), stat_default_columns(), output_list(args.table), args.table.output_all);
    if (!selected) {
        return exit_failure;
    }
    wz::stat_options opt;
    opt.refresh = args.refresh;
    int status = exit_ok;
    table tb("files", stat_column_infos(), *selected, *format, args.table.noheadings);
    for (const auto& path : args.paths) {
        args.path = path;
        auto caps = wz::stat(path, opt);
        if (!caps) {
            print_error(caps.error().message);
            status = exit_failure;
            continue;
        }
        if (args.record) {
            // One document per path, as printed (and flushed) as soon as it is known.
            if (print_or_fail(write_stdout(wz::to_json(*caps) + "\n")) != exit_ok) {
                return exit_failure;
            }
            continue;
        }
        std::vector<cell> row;
        for (std::size_t c : *selected) {
            row.push_back(stat_columns()[c].get(*caps));
        }
        if (print_or_fail(tb.add_row(row)) != exit_ok) {
            return exit_failure;
        }
    }
    if (!args.record && (tb.rows() > 0 || *format == table_format::json)) {
        std::string out;
        auto s = tb.print(out);
        if (s.ok()) {
            s = write_stdout(out);
        }
        if (print_or_fail(s) != exit_ok) {
            return exit_failure;
        }
    }
    return status;
}

}  // namespace wzcli

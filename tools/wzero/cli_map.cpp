// SPDX-License-Identifier: MIT
// wzero map | verify

#include "cli.hpp"
#include "cli_table.hpp"

#include "util/errors.hpp"
#include "util/json_text.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <stdio_ext.h>

#include <algorithm>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>
#include <system_error>

namespace wzcli {

void add_map_commands(CLI::App& app, map_args& m, verify_args& v) {
    CLI::App* map = app.add_subcommand("map", "Print a file's extent map with device LBAs");
    map->add_option("-o,--offset", m.offset, "Start of the range");
    m.length_option =
        map->add_option("-l,--length", m.length, "Length of the range (default: to the end of the file)");
    // -o is the offset here, as in fallocate(1) and every wzero command with a range: the
    // column list is --output only.
    add_table_options(map, m.table, "--output");
    path_required_unless_list_columns(map, map->add_option("path", m.path, "Regular file"));

    CLI::App* ver = app.add_subcommand("verify", "Check that a range is written (and zero)");
    ver->add_option("-o,--offset", v.offset, "Start of the range");
    v.length_option =
        ver->add_option("-l,--length", v.length, "Length of the range (default: to the end of the file)");
    ver->add_flag("--data", v.data, "Also read the range back and check it is zeroes");
    ver->add_flag("-J,--json", v.json, "Print one JSON document");
    ver->add_option("path", v.path, "File or block device")->required();
}

namespace {

enum map_column : std::size_t { col_offset, col_length, col_end, col_kind, col_flags, col_physical, col_lba, col_nlb,
                                col_dealloc_aligned, col_logical };

const std::vector<column_info>& map_columns() {
    static const std::vector<column_info> columns = {
        {"OFFSET", column_type::number, true, 1, false, "start of the extent in the file, in bytes"},
        {"LENGTH", column_type::number, true, 1, false, "length of the extent, in bytes"},
        {"END", column_type::number, true, 1, false, "end of the extent in the file (OFFSET + LENGTH), in bytes"},
        {"KIND", column_type::string, false, 1, false,
         "written, unwritten, hole, delalloc, shared, encoded, inline or unknown"},
        {"FLAGS", column_type::number, true, 1, false,
         "FIEMAP_EXTENT_* flags as the kernel gave them (hexadecimal in text, a number in JSON)"},
        {"PHYSICAL", column_type::number, true, 1, false,
         "bytes from the start of the filesystem's block device (none for a hole, and none where FIEMAP's addresses "
         "are not offsets on one known device: btrfs, see LOGICAL)"},
        {"LBA", column_type::number, true, 1, false,
         "first logical block on the disk or NVMe namespace, the partition's start added (none where not known)"},
        {"NLB", column_type::number, true, 1, false, "number of logical blocks (none where LBA is none)"},
        {"DEALLOC-ALIGNED", column_type::boolean, false, 1, false,
         "on the NVMe namespace's deallocation alignment (NPDA) and a multiple of its granularity (NPDG); "
         "none off NVMe"},
        {"LOGICAL", column_type::number, true, 1, false,
         "the filesystem's own logical address of the extent where FIEMAP gives one instead of a device offset "
         "(btrfs, which maps it to its devices itself); none elsewhere"},
    };
    return columns;
}

const std::vector<std::size_t> map_default_columns = {col_offset, col_length, col_kind, col_flags, col_physical,
                                                      col_lba, col_nlb, col_dealloc_aligned};

std::optional<std::string> map_cell(const wz::mapped_extent& e, std::size_t column, table_format format) {
    const auto number = [](const auto& v) -> std::optional<std::string> {
        return v ? std::optional<std::string>(fmt::format("{}", *v)) : std::nullopt;
    };
    switch (column) {
    case col_offset:
        return fmt::format("{}", e.offset);
    case col_length:
        return fmt::format("{}", e.length);
    case col_end:
        return fmt::format("{}", e.offset + e.length);
    case col_kind:
        return e.kind;
    case col_flags:
        return format == table_format::json ? fmt::format("{}", e.flags) : fmt::format("{:#x}", e.flags);
    case col_physical:
        return number(e.physical);
    case col_lba:
        return number(e.lba);
    case col_nlb:
        return e.lba ? std::optional<std::string>(fmt::format("{}", e.nlb)) : std::nullopt;
    case col_dealloc_aligned:
        return e.dealloc_aligned ? std::optional<std::string>(*e.dealloc_aligned ? "1" : "0") : std::nullopt;
    case col_logical:
        return number(e.logical);
    default:
        return std::nullopt;
    }
}

std::vector<std::optional<std::string>> map_row(const wz::mapped_extent& e, const std::vector<std::size_t>& selected,
                                                table_format format) {
    std::vector<std::optional<std::string>> row;
    row.reserve(selected.size());
    for (std::size_t c : selected) {
        row.push_back(map_cell(e, c, format));
    }
    return row;
}

// Rows printed at a time: libsmartcols holds every line of a table in memory.
constexpr std::size_t map_chunk_rows = 1024;

// What the map's addresses are: the JSON document's "addresses" (null for a range without
// extents, where there is nothing to say), and why PHYSICAL and LBA are empty where they are.
const char* addresses_name(wz::extent_addresses a) {
    switch (a) {
    case wz::extent_addresses::device: return "device";
    case wz::extent_addresses::fs_logical: return "fs-logical";
    case wz::extent_addresses::unknown: return "unknown";
    }
    return "unknown";
}

// For the JSON document (`columns` false: its keys) or the note above a table (its columns).
std::string addresses_reason(wz::extent_addresses a, bool columns) {
    switch (a) {
    case wz::extent_addresses::device:
        return columns ? "offsets on the file's block device: PHYSICAL (partition-relative) and LBA"
                       : "offsets on the file's block device: physical (partition-relative) and lba";
    case wz::extent_addresses::fs_logical:
        return fmt::format("FIEMAP gives the filesystem's own logical addresses (btrfs maps them to its devices, a "
                           "block perhaps to several), not device offsets: {}",
                           columns ? "PHYSICAL, LBA and NLB are empty; --output +LOGICAL shows them"
                                   : "physical, lba and nlb are null; logical (--output +LOGICAL) holds them");
    case wz::extent_addresses::unknown:
        return fmt::format("the block device under the file is not known, or the data is on several devices "
                           "(wzero stat --record says which): {}",
                           columns ? "PHYSICAL, LBA and NLB are empty" : "physical, lba and nlb are null");
    }
    return {};
}

// The head of the JSON document: the addresses and their reason, then the table's array.
std::string json_head(const table& tb, std::optional<wz::extent_addresses> a) {
    std::string head = "{\n";
    head += fmt::format("   \"addresses\": {},\n", a ? wz::dump_json(nlohmann::json(addresses_name(*a))) : "null");
    head += fmt::format("   \"addresses_reason\": {},\n",
                        a ? wz::dump_json(nlohmann::json(addresses_reason(*a, false))) : "null");
    return head + tb.json_begin().substr(2);  // the table's own "{\n" dropped
}

}  // namespace

// Streams the map as the library hands it out (wz::map_extents with a callback) into a
// libsmartcols table printed a chunk of rows at a time, its lines removed after each: memory
// stays bounded whatever the file's extent count (150k extents once took 531 MB as one
// JSON value). A terminal table needs the same column widths in every chunk: a map longer than
// one chunk is walked once more first, measuring each column's widest cell (the widths are the
// whole map's, as in one table). Nothing is printed before the first chunk is full or the walk
// ends, so an error opening or probing the file leaves stdout empty; a FIEMAP failure part-way
// prints the rows mapped before it and leaves the JSON document unterminated, so that no parser
// takes it for a complete map, and exits 1.
int run_map(const map_args& a) {
    const auto format = format_of(a.table);
    if (!format) {
        return exit_failure;
    }
    if (a.table.list_columns) {
        std::string out;
        auto s = list_columns("wzero-map-columns", map_columns(), *format, out);
        if (s.ok()) {
            s = write_stdout(out);
        }
        if (!s.ok()) {
            print_error(s.error().message);
            return exit_failure;
        }
        return exit_ok;
    }
    auto selected = select_columns(map_columns(), map_default_columns, output_list(a.table), a.table.output_all);
    if (!selected) {
        return exit_failure;
    }
    std::uint64_t offset = 0, length = 0;
    if (!parse_range_args(a.offset, a.length, a.length_option->count() > 0, offset, length)) {
        return exit_failure;
    }
    auto tb = std::make_unique<table>("extents", map_columns(), *selected, *format, a.table.noheadings);
    bool started = false;       // something was written to stdout
    bool output_failed = false;  // and a write of it failed
    bool widths_fixed = *format != table_format::human;
    bool need_widths = false;
    std::optional<wz::extent_addresses> addresses;  // from the first extent: the same for all
    const bool address_columns = std::any_of(selected->begin(), selected->end(), [](std::size_t c) {
        return c == col_physical || c == col_lba || c == col_nlb || c == col_dealloc_aligned;
    });
    std::string chunk;
    // The table's own errors (libsmartcols) say nothing of the path: the command's do.
    const auto in_map = [&](const wz::status& s) -> wz::status {
        return wz::error_info{s.error().code, fmt::format("map {}: {}", a.path, s.error().message)};
    };
    const auto flush = [&]() -> wz::status {
        chunk.clear();
        if (!started && *format == table_format::json) {
            chunk = json_head(*tb, addresses);
        }
        if (!started && *format != table_format::json && addresses && *addresses != wz::extent_addresses::device &&
            address_columns) {
            // Said once, before the table, on stderr: stdout stays the table that -r and -n promise.
            print_error(fmt::format("map {}: {}", a.path, addresses_reason(*addresses, true)));
        }
        if (auto s = tb->print_chunk(chunk); !s.ok()) {
            return in_map(s);
        }
        started = true;
        auto s = write_stdout(chunk);
        output_failed = !s.ok();
        return s;
    };
    const auto on_extent = [&](const wz::mapped_extent& e) -> wz::status {
        addresses = e.addresses;
        if (auto s = tb->add_row(map_row(e, *selected, *format)); !s.ok()) {
            return in_map(s);
        }
        if (tb->rows() < map_chunk_rows) {
            return {};
        }
        if (!widths_fixed) {
            need_widths = true;
            return wz::error_info{std::make_error_code(std::errc::operation_canceled), "measure the widths first"};
        }
        return flush();
    };
    auto s = wz::map_extents(a.path, offset, length, on_extent);
    if (need_widths) {
        tb = std::make_unique<table>("extents", map_columns(), *selected, *format, a.table.noheadings);
        std::vector<std::size_t> widths(selected->size());
        for (std::size_t i = 0; i < selected->size(); ++i) {
            widths[i] = std::string_view(map_columns()[(*selected)[i]].name).size();
        }
        s = wz::map_extents(a.path, offset, length, [&](const wz::mapped_extent& e) -> wz::status {
            for (std::size_t i = 0; i < selected->size(); ++i) {
                const auto cell = map_cell(e, (*selected)[i], *format);
                widths[i] = std::max(widths[i], cell ? cell->size() : 0);
            }
            return {};
        });
        if (s.ok()) {
            for (std::size_t i = 0; i < widths.size(); ++i) {
                tb->fix_width(i, widths[i]);
            }
            widths_fixed = true;
            s = wz::map_extents(a.path, offset, length, on_extent);
        }
    }
    if (!output_failed && (s.ok() || started || tb->rows() > 0)) {
        // The rows mapped before a failure part-way are printed too (the walk hands out what
        // it mapped); an error before the first extent leaves stdout empty.
        auto printed = tb->rows() > 0 || (s.ok() && !started) ? flush() : wz::status();
        if (!printed.ok() && s.ok()) {
            s = printed;
        }
    }
    if (s.ok() && *format == table_format::json) {
        s = write_stdout(table::json_end());
        output_failed = !s.ok();
    }
    if (!s.ok()) {
        if (output_failed || std::ferror(stdout) != 0) {
            // The write error is said here, with the command and path; what stdio still holds
            // could not be written either, and finish_stdout() must not say it twice.
            print_error(fmt::format("map {}: standard output: {}", a.path, s.error().message));
            __fpurge(stdout);
            std::clearerr(stdout);
            return exit_failure;
        }
        if (started && *format == table_format::json) {
            (void)write_stdout("\n");  // wz: ignored-error (the map's own error is the one to report)
        }
        print_error(s.error().message);
        return status_for(s.error());
    }
    return exit_ok;
}

// Exit status 0 only for a range proven written (and zero, with --data); 1 for anything else:
// an error, a range found not written or not zero, and a range that cannot be proven here (no
// extent map: tmpfs; a block device without --data).
int run_verify(const verify_args& a) {
    std::uint64_t offset = 0, length = 0;
    if (!parse_range_args(a.offset, a.length, a.length_option->count() > 0, offset, length)) {
        return exit_failure;
    }
    const wz::verify_mode mode = a.data ? wz::verify_mode::data : wz::verify_mode::extents;
    wz::preallocate_report rep;
    auto v = wz::verify(a.path, offset, length, mode, &rep);
    if (v) {
        rep = std::move(*v);
    }
    const wz::status s = v ? wz::status() : wz::status(v.error());
    if (a.json) {
        nlohmann::ordered_json j;
        j["path"] = a.path;
        j["offset"] = rep.offset;
        j["length"] = rep.length;
        j["mode"] = a.data ? "data" : "extents";
        j["verified"] = rep.verified ? nlohmann::ordered_json(*rep.verified) : nlohmann::ordered_json(nullptr);
        j["detail"] = rep.verify_detail.empty() ? nlohmann::ordered_json(nullptr)
                                                : nlohmann::ordered_json(rep.verify_detail);
        if (!s.ok()) {
            j["error"] = s.error().message;
        }
        fmt::print("{}\n", wz::dump_json(std::move(j)));
    } else if (s.ok()) {
        fmt::print("{}: {}: {}\n", a.path, rep.verified ? "ok" : "not proven", rep.verify_detail);
    }
    if (!s.ok()) {
        print_error(s.error().message);
        return exit_failure;
    }
    return rep.verified.value_or(false) ? exit_ok : exit_failure;
}

}  // namespace wzcli

// SPDX-License-Identifier: MIT
// wzero map | verify

#include "cli.hpp"

#include "util/errors.hpp"
#include "util/json_text.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cerrno>
#include <cstdio>
#include <stdio_ext.h>

#include <string_view>
#include <system_error>

namespace wzcli {

void add_map_commands(CLI::App& app, map_args& m, verify_args& v) {
    CLI::App* map = app.add_subcommand("map", "Print a file's extent map with device LBAs");
    map->add_option("-o,--offset", m.offset, "Start of the range");
    m.length_option =
        map->add_option("-l,--length", m.length, "Length of the range (default: to the end of the file)");
    map->add_flag("-J,--json", m.json, "Print JSON");
    map->add_option("path", m.path, "Regular file")->required();

    CLI::App* ver = app.add_subcommand("verify", "Check that a range is written (and zero)");
    ver->add_option("-o,--offset", v.offset, "Start of the range");
    v.length_option =
        ver->add_option("-l,--length", v.length, "Length of the range (default: to the end of the file)");
    ver->add_flag("--data", v.data, "Also read the range back and check it is zeroes");
    ver->add_option("path", v.path, "File or block device")->required();
}

namespace {

// Output that failed to reach stdout (a full disk, `>/dev/full`) ends the map: the walk stops
// rather than go on producing what nobody receives. EPIPE never gets here: SIGPIPE ends the
// process first, as for any filter.
wz::status emit(std::string_view text) {
    errno = 0;  // a short fwrite that set none must not report an earlier call's error
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
        const int err = errno != 0 ? errno : EIO;
        return wz::error_info{std::error_code(err, std::generic_category()), "write error: " + wz::errno_text(err)};
    }
    return {};
}

// One element of `map --json`'s "extents", laid out exactly as nlohmann's dump(2) of the
// whole document indents it (four spaces in), so that the streamed document is byte for byte
// the one a single dump printed before (host/030 checks the layout against jq's, which is the
// same). Formatted directly: a
// JSON value per extent cost more time than the FIEMAP walk itself. Only "kind" is a string,
// and it goes through the JSON dumper.
std::string extent_json(const wz::mapped_extent& e) {
    const auto number_or_null = [](const auto& v) { return v ? fmt::format("{}", *v) : std::string("null"); };
    return fmt::format("    {{\n      \"offset\": {},\n      \"length\": {},\n      \"kind\": {},\n"
                       "      \"flags\": {},\n      \"physical\": {},\n      \"lba\": {},\n      \"nlb\": {},\n"
                       "      \"dealloc_aligned\": {}\n    }}",
                       e.offset, e.length, wz::dump_json(nlohmann::ordered_json(e.kind)), e.flags,
                       number_or_null(e.physical), number_or_null(e.lba), e.nlb,
                       e.dealloc_aligned ? (*e.dealloc_aligned ? "true" : "false") : "null");
}

std::string extent_line(const wz::mapped_extent& e) {
    return fmt::format("{:>14} {:>14} {:<12} {:>#8x} {:>14} {:>12} {:>10} {}\n", e.offset, e.length, e.kind, e.flags,
                       e.physical ? fmt::format("{}", *e.physical) : "-", e.lba ? fmt::format("{}", *e.lba) : "-",
                       e.lba ? fmt::format("{}", e.nlb) : "-",
                       e.dealloc_aligned ? (*e.dealloc_aligned ? "yes" : "no") : "-");
}

}  // namespace

// Streams the map as the library hands it out (wz::map_extents with a callback): one extent
// in memory at a time, so that RSS does not grow with the file's extent count (issue 12:
// 150k extents took 531 MB as one JSON value). Nothing is printed before the first extent
// arrives, so an error opening or probing the file leaves stdout empty, as before; a FIEMAP
// failure part-way leaves the output cut short (the JSON document unterminated, so that no
// parser takes it for a complete map) and exits 1.
int run_map(const map_args& a) {
    std::uint64_t offset = 0, length = 0;
    if (!parse_range_args(a.offset, a.length, a.length_option->count() > 0, offset, length)) {
        return exit_failure;
    }
    const std::string json_head =
        fmt::format("{{\n  \"path\": {},\n  \"extents\": [", wz::dump_json(nlohmann::ordered_json(a.path)));
    const std::string text_head = fmt::format("{:>14} {:>14} {:<12} {:>8} {:>14} {:>12} {:>10} {}\n", "offset",
                                              "length", "kind", "flags", "physical", "lba", "nlb", "dealloc-aligned");
    bool started = false;
    auto s = wz::map_extents(a.path, offset, length, [&](const wz::mapped_extent& e) -> wz::status {
        std::string chunk;
        if (a.json) {
            chunk = started ? ",\n" : json_head + "\n";
            chunk += extent_json(e);
        } else {
            chunk = started ? extent_line(e) : text_head + extent_line(e);
        }
        started = true;
        return emit(chunk);
    });
    if (a.json && s.ok()) {
        s = emit(started ? "\n  ]\n}\n" : json_head + "]\n}\n");
    } else if (!started && s.ok()) {
        s = emit(text_head);
    }
    if (!s.ok()) {
        if (std::ferror(stdout) != 0) {
            // The write error is said here, with the command and path; what stdio still holds
            // could not be written either, and finish_stdout() must not say it twice.
            print_error(fmt::format("map {}: standard output: {}", a.path, s.error().message));
            __fpurge(stdout);
            std::clearerr(stdout);
            return exit_failure;
        }
        if (started) {
            (void)emit("\n");  // wz: ignored-error (the map's own error is the one to report)
        }
        print_error(s.error().message);
        return status_for(s.error());
    }
    return exit_ok;
}

int run_verify(const verify_args& a) {
    std::uint64_t offset = 0, length = 0;
    if (!parse_range_args(a.offset, a.length, a.length_option->count() > 0, offset,
                          length)) {
        return exit_failure;
    }
    auto r = wz::verify(a.path, offset, length, a.data ? wz::verify_mode::data : wz::verify_mode::extents);
    if (!r) {
        print_error(r.error().message);
        return exit_failure;
    }
    if (!r->verified) {
        fmt::print("{}: not proven: {}\n", a.path, r->verify_detail);
        return exit_not_supported;
    }
    fmt::print("{}: ok: {}\n", a.path, r->verify_detail);
    return exit_ok;
}

}  // namespace wzcli

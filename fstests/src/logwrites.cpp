// SPDX-License-Identifier: MIT
#include "logwrites.hpp"

#include <fmt/format.h>

#include <algorithm>

namespace wzt {
namespace {

constexpr std::size_t super_bytes = 8 + 8 + 8 + 4;
constexpr std::size_t entry_bytes = 8 + 8 + 8 + 8;

std::uint64_t le64(const unsigned char* p) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) {
        v = (v << 8) | p[i];
    }
    return v;
}

std::uint32_t le32(const unsigned char* p) {
    return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 |
           static_cast<std::uint32_t>(p[2]) << 16 | static_cast<std::uint32_t>(p[3]) << 24;
}

bool all_zero(const unsigned char* p, std::size_t n) {
    return std::all_of(p, p + n, [](unsigned char c) { return c == 0; });
}

}  // namespace

parsed_log parse_log(const unsigned char* data, std::size_t size, std::uint64_t device_sectors) {
    parsed_log log;
    if (size < super_bytes) {
        log.error = fmt::format("{} bytes: shorter than the superblock", size);
        return log;
    }
    if (le64(data) != log_magic) {
        log.error = fmt::format("bad magic {:#x} (want {:#x})", le64(data), log_magic);
        return log;
    }
    if (le64(data + 8) != log_version) {
        log.error = fmt::format("version {} (want {})", le64(data + 8), log_version);
        return log;
    }
    log.nr_entries = le64(data + 16);
    const std::uint32_t ss = le32(data + 24);
    if (ss < 512 || ss > 65536 || (ss & (ss - 1)) != 0) {
        log.error = fmt::format("sector size {} (want a power of two from 512 to 65536)", ss);
        return log;
    }
    if (size < ss) {
        log.error = fmt::format("{} bytes: shorter than the superblock sector ({})", size, ss);
        return log;
    }
    log.sector_size = ss;
    std::size_t at = ss;  // entries start at log sector 1
    for (std::uint64_t i = 0;; ++i) {
        const bool counted = i < log.nr_entries;
        if (size - at < ss) {
            if (counted) {
                log.error = fmt::format("entry {} of {}: the log ends at byte {}", i, log.nr_entries, size);
            } else if (size != at) {
                log.error = fmt::format("entry {}: {} trailing bytes, less than a sector", i, size - at);
            }
            return log;
        }
        const unsigned char* e = data + at;
        const std::size_t entry_at = at;
        if (all_zero(e, ss)) {
            if (counted) {
                log.error = fmt::format("entry {} of {} (log byte {}): an all-zero entry", i, log.nr_entries, at);
            }
            return log;  // past the counted entries: the end of what was written
        }
        log_entry entry;
        entry.sector = le64(e);
        entry.nr_sectors = le64(e + 8);
        entry.flags = le64(e + 16);
        const std::uint64_t data_len = le64(e + 24);
        auto bad = [&](const std::string& why) {
            log.error = fmt::format("entry {}{} (log byte {}, sector {}, nr_sectors {}, flags {:#x}): {}", i,
                                    counted ? "" : " (past the superblock's count)", entry_at, entry.sector,
                                    entry.nr_sectors, entry.flags, why);
            return log;
        };
        if ((entry.flags & ~log_known_flags) != 0) {
            return bad("unknown flags");
        }
        if ((entry.flags & log_mark) != 0) {
            if (data_len > ss - entry_bytes) {
                return bad(fmt::format("mark name of {} bytes does not fit the entry sector", data_len));
            }
            entry.mark.assign(reinterpret_cast<const char*>(e + entry_bytes), static_cast<std::size_t>(data_len));
            if (!all_zero(e + entry_bytes + data_len, ss - entry_bytes - data_len)) {
                return bad("bytes after the mark's name are not zero");
            }
        } else {
            if (data_len != 0) {
                return bad(fmt::format("data_len {} on an entry that is not a mark", data_len));
            }
            if (!all_zero(e + entry_bytes, ss - entry_bytes)) {
                return bad("the entry sector's padding is not zero");
            }
        }
        if (entry.nr_sectors > (std::uint64_t{1} << 40) || entry.sector > (std::uint64_t{1} << 54)) {
            return bad("range out of bounds");
        }
        if (device_sectors != 0 && entry.sector + entry.nr_sectors > device_sectors) {
            return bad(fmt::format("range past the device's end ({} sectors)", device_sectors));
        }
        at += ss;
        if (entry.is_write()) {
            const std::uint64_t bytes = entry.nr_sectors * ss;
            if (bytes > size - at) {
                return bad(fmt::format("its {} data bytes run past the log's end", bytes));
            }
            entry.data = at;
            at += static_cast<std::size_t>(bytes);
        }
        log.entries.push_back(std::move(entry));
    }
}

}  // namespace wzt

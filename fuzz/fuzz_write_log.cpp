// SPDX-License-Identifier: MIT
// The write-log reader of the replay checker (fstests/src/logwrites.cpp, dm-log-writes' and
// QEMU blklogwrites' format): any bytes. Properties, derived here again from the bytes and
// not from the reader: each entry it returns sits where the walk of the format puts it (log
// sector 1 on, a write's data sectors after its entry sector) with the fields the bytes hold
// there; a write's data lies inside the input; every flag is a known one; a mark's name is
// the bytes after its header; a log read without error holds at least the entries its
// superblock counts; the same bytes read again give the same result; and the device-size
// check is exact: with the device as large as the highest entry reaches, the same entries
// and no error; one sector smaller (when that is not 0, "size not known"), an error.

#include "check.hpp"

#include "logwrites.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>

namespace {

std::uint64_t le64(const std::uint8_t* p) {
    std::uint64_t v = 0;
    std::memcpy(&v, p, 8);  // x86-64: little-endian, as the format
    return v;
}

bool same(const wzt::parsed_log& a, const wzt::parsed_log& b) {
    if (a.sector_size != b.sector_size || a.nr_entries != b.nr_entries || a.entries.size() != b.entries.size()) {
        return false;
    }
    for (std::size_t i = 0; i < a.entries.size(); ++i) {
        const auto &x = a.entries[i], &y = b.entries[i];
        if (x.sector != y.sector || x.nr_sectors != y.nr_sectors || x.flags != y.flags || x.data != y.data ||
            x.mark != y.mark) {
            return false;
        }
    }
    return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto log = wzt::parse_log(data, size);
    FUZZ_CHECK(same(log, wzt::parse_log(data, size)));
    if (log.sector_size == 0) {
        FUZZ_CHECK(log.entries.empty() && !log.error.empty());
        return 0;
    }
    const std::uint64_t ss = log.sector_size;
    FUZZ_CHECK(ss >= 512 && ss <= 65536 && (ss & (ss - 1)) == 0 && size >= ss);
    FUZZ_CHECK(le64(data) == wzt::log_magic && le64(data + 8) == wzt::log_version);
    FUZZ_CHECK(log.nr_entries == le64(data + 16));
    std::uint64_t at = ss, reach = 0;
    for (const auto& e : log.entries) {
        FUZZ_CHECK(at + ss <= size);
        const std::uint8_t* h = data + at;
        FUZZ_CHECK(e.sector == le64(h) && e.nr_sectors == le64(h + 8) && e.flags == le64(h + 16));
        FUZZ_CHECK((e.flags & ~wzt::log_known_flags) == 0);
        if ((e.flags & wzt::log_mark) != 0) {
            FUZZ_CHECK(e.mark.size() == le64(h + 24) && e.mark.size() <= ss - 32);
            FUZZ_CHECK(std::memcmp(e.mark.data(), h + 32, e.mark.size()) == 0);
        } else {
            FUZZ_CHECK(e.mark.empty() && le64(h + 24) == 0);
        }
        at += ss;
        if (e.is_write()) {
            FUZZ_CHECK(e.data == at && e.nr_sectors <= (size - at) / ss);
            at += e.nr_sectors * ss;
        } else {
            FUZZ_CHECK(e.data == 0);
        }
        reach = std::max(reach, e.sector + e.nr_sectors);
    }
    FUZZ_CHECK(at <= size);
    if (log.error.empty()) {
        FUZZ_CHECK(log.entries.size() >= log.nr_entries);
        if (reach > 0) {
            FUZZ_CHECK(same(log, wzt::parse_log(data, size, reach)) && wzt::parse_log(data, size, reach).error.empty());
            if (reach > 1) {  // device_sectors 0 means "not known"
                FUZZ_CHECK(!wzt::parse_log(data, size, reach - 1).error.empty());
            }
        }
    }
    return 0;
}

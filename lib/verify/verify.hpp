// SPDX-License-Identifier: MIT
#pragma once

// Proving a range written zeroes: wz::verify() on its own, and the check wz::preallocate()
// runs on the range it has just zeroed. Namespace verify_detail, as lib/writer's is
// writer_detail: the folder's name is the public call's.

#include <wzero/wzero.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace wz::verify_detail {

// What a failed verification found, for a caller that must not report more than is there.
struct verify_extent_of_damage {
    std::uint64_t good_end = 0;    // [offset, good_end) was checked and is fine
    std::uint64_t size_bytes = 0;  // the file's or device's size when it was checked
    bool missing = false;          // a hole, an unwritten extent or the end of the file, not bad data
};

// Size of what `fd` refers to now: a run may have been raced by a truncate, so the record
// taken before it (caps.size_bytes) is not trusted for regular files.
result<std::uint64_t> current_size(int fd, const std::string& path, const capabilities& caps);

// Proves [offset, offset + length) written zeroes as far as `mode` asks, or says why not:
// rep.verified true (proven), false (disproven: also an error naming the first bad spot) or
// unset (not proven: no extent map here). Reading zeroes back is never proof on its own for
// a regular file: a hole and an unwritten extent read as zeroes too.
status verify_range(int fd, const std::string& path, const capabilities& caps, std::uint64_t offset,
                    std::uint64_t length, verify_mode mode, preallocate_report& rep,
                    verify_extent_of_damage* damage = nullptr);

// wz::verify(), in the caller's descriptor table: opens PATH, then proves the range as
// verify_range. On a failure REP keeps what was found: rep.verified false and rep.verify_detail
// say what a failed check found (a hole, an unwritten extent, a non-zero byte, the end of the
// file); an error that stopped the check (open, read) leaves rep.verified unset.
status verify_path(const std::string& path, std::uint64_t offset, std::uint64_t length, verify_mode mode,
                   preallocate_report& rep);

}  // namespace wz::verify_detail

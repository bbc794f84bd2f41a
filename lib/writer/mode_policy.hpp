// SPDX-License-Identifier: MIT
// Private to lib/writer: which durability mode a writer runs in, and how it sends its writes
// and flushes there. Pure: a function of the capability record, two facts the writer reads
// from the target (is every byte of the range a written extent, may this process send NVMe
// commands) and the caller's options, so that it is tested from tables (mode_policy_test.cpp)
// like the planner. open() and refresh() read the facts and apply the choice.
#pragma once

#include "writer/cache_watch.hpp"

#include <wzero/wzero.hpp>

#include <cstdint>
#include <string>
#include <string_view>

namespace wz::writer_detail {

// What the writer reads from the target besides the record.
struct mode_facts {
    // Every byte of the range is a written extent (a block device has no extents: true).
    bool range_written = false;
    // The process may send NVMe passthrough commands through the record's NVMe char device.
    bool may_passthrough = false;
};

struct mode_choice {
    durability_mode mode = durability_mode::dsync;
    std::string reason;  // what writer::reason() says
    // A raw NVMe namespace with FUA and passthrough: mode fua sends NVMe Writes with FUA (else
    // RWF_DSYNC on a file). Set whatever the mode, so that a move to fua can use it.
    bool nvme_fua = false;
    // A raw NVMe namespace with passthrough: flushes are NVMe Flush commands, not fdatasync.
    bool nvme_flush = false;
    // Flush mode on a regular file: a write with nothing to group with goes alone as
    // RWF_DSYNC (lone_writes).
    bool alone_as_dsync = false;
    through_facts move_facts;  // where a writer in `through` goes when the cache turns write-back
};

// The mode for OPTIONS.mode over the target CAPS describes. automatic picks, in order:
// through (write-through and every byte written), fua (a raw NVMe namespace with FUA and
// passthrough, or a file whose filesystem sends an RWF_DSYNC overwrite as FUA alone), flush.
// A forced mode the target cannot keep is an error naming PATH and the range [OFFSET,
// OFFSET + LENGTH): EINVAL for through over unwritten extents or over a cache that is not
// write-through (unless allow_unsafe_through), ENOTSUP for fua without a FUA path.
[[nodiscard]] result<mode_choice> choose_mode(const capabilities& caps, const mode_facts& facts,
                                              const writer_options& options, std::string_view path,
                                              std::uint64_t offset, std::uint64_t length);

}  // namespace wz::writer_detail

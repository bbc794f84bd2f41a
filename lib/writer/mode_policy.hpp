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

// Flush mode: which writes go as RWF_DSYNC, made durable by the kernel, instead of waiting
// for a flush of the writer's own (the group commit).
enum class rwf_dsync_use : std::uint8_t {
    never,
    // A regular file, on every path: a write with nothing to group with (lone_writes), the
    // filesystem's write and flush as O_DSYNC sends them, a round trip less.
    lone_writes,
    // A raw block device, on io_uring: every write. The block layer sends it with FUA (on a
    // queue without FUA, the write and a post-flush that the writes beside it share, the
    // kernel's own group commit) and completes it durable: measured on a loop device, O_DSYNC
    // so was ahead of the writer's group commit at QD 1, 8 and 32. Through pwrite() the
    // block device's generic_write_sync adds a flush of its own after the FUA write, so the
    // psync engine and the synchronous API keep the group commit.
    every_write_on_io_uring,
};

struct mode_choice {
    durability_mode mode = durability_mode::dsync;
    std::string reason;  // what writer::reason() says
    // A raw NVMe namespace with FUA and passthrough: mode fua sends NVMe Writes with FUA (else
    // RWF_DSYNC on a file). Set whatever the mode, so that a move to fua can use it.
    bool nvme_fua = false;
    // A raw NVMe namespace with passthrough: flushes are NVMe Flush commands, not fdatasync.
    bool nvme_flush = false;
    // Flush mode: which writes go as RWF_DSYNC.
    rwf_dsync_use rwf_dsync = rwf_dsync_use::never;
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

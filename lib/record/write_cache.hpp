// SPDX-License-Identifier: MIT
#pragma once

// The write cache of a device, re-read when the answer held for it is too old. Durability that
// rests on "write-through" (the writer's `through` mode, the plugins' sync_file_range) rests on
// an answer that an administrator's Set Features FID 06h, a vendor tool or a controller reset to
// its defaults can make wrong at any moment, and Linux tells nobody: it never re-reads WCE. So
// such users ask again, at most MAX_AGE after the last read, before they acknowledge a write.
// The answer lives with the per-device facts the record caches (record.cpp), so that one re-read
// serves every writer and file of the device, and wz::stat sees it too.

#include <wzero/wzero.hpp>

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>

namespace wz::record {

using cache_clock = std::chrono::steady_clock;

struct cache_reading {
    std::optional<cache_mode> effective;  // as capabilities::cache.effective; nullopt: unknown
    std::string reason;                   // as capabilities::cache.effective_reason
    cache_clock::time_point read_at;      // when the read this answer rests on started
    bool reread = false;                  // this call read it (a device command or sysfs)
};

// The effective write cache of the block device DEVNO (a record's device major:minor), from the
// facts held for it; read again first when they were read more than MAX_AGE before NOW (0:
// always). The re-read is one Get Features FID 06h on an NVMe namespace whose controller has a
// volatile write cache (through its generic char device, else its block device), and the
// kernel's queue/write_cache of the disk in every case; no other fact is read again (wz::stat
// with refresh does that). A device never probed is probed whole. One re-read runs at a time:
// callers that wait for it take its answer if it is fresh enough for them. A failed re-read is
// an unknown cache (the reason says why), never the old answer.
[[nodiscard]] cache_reading device_write_cache(dev_t devno, cache_clock::duration max_age);

}  // namespace wz::record

// SPDX-License-Identifier: MIT
// Private to lib/writer: the decisions of mode `through` about the write cache under it, pure
// (no I/O, no clock of their own) so that they are tested from tables (cache_watch_test.cpp).
//
// `through` acknowledges a write once the device completed it, with no flush and no FUA: right
// only while the device's cache is write-through. Linux never re-reads the NVMe volatile write
// cache (WCE) after probing the controller, and an administrator's Set Features FID 06h, a
// vendor tool or a controller reset to its defaults turn it on without a word to anyone. So
// the writer holds the time its last write-through answer was read, and before acknowledging a
// write re-reads the cache if that answer is older than the maximum age (writer_options::
// cache_max_age, 100 ms by default): no acknowledgement rests on an answer older than that.
// A write acknowledged later than the maximum age after the cache turned on is therefore
// covered: by the flush that the move out of `through` sends (it covers every write completed
// before it), or by the new mode. Linux exposes no count of controller resets (sysfs `state`
// is "live" again within milliseconds, and a reset's uevent needs a netlink listener), so a
// reset that turned the cache on is caught by the same maximum age.
#pragma once

#include <wzero/wzero.hpp>

#include <chrono>
#include <optional>

namespace wz::writer_detail {

using watch_clock = std::chrono::steady_clock;

// Whether the cache must be read again before a write is acknowledged at NOW, the last answer
// that said write-through having been read (its read started) at VERIFIED_AT. A MAX_AGE of 0
// re-reads before every acknowledgement; an answer whose read started after NOW (another
// thread's, published meanwhile) is fresh.
[[nodiscard]] bool reread_due(watch_clock::time_point verified_at, watch_clock::time_point now,
                              watch_clock::duration max_age) noexcept;

// What a `through` writer is, for where it goes when the cache is no longer write-through.
struct through_facts {
    bool forced = false;    // writer_options::mode was `through`, not automatic
    bool nvme_fua = false;  // a raw NVMe namespace with FUA and passthrough: NVMe Write with FUA
    bool file_fua = false;  // a regular file whose filesystem sends an RWF_DSYNC overwrite as FUA alone
};

struct cache_move {
    bool move = false;                          // leave `through`
    durability_mode to = durability_mode::through;
};

// The answer of a re-read (EFFECTIVE: the record's cache.effective, nullopt when it could not
// be read) for a writer in `through`: stay while it says write-through; else move, as an
// automatic choice would (fua where the record allows it, else flush), and a forced `through`
// to flush as refresh() does. An unknown cache is not write-through.
[[nodiscard]] cache_move after_reread(const std::optional<cache_mode>& effective, const through_facts& facts) noexcept;

}  // namespace wz::writer_detail

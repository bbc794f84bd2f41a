// SPDX-License-Identifier: MIT
#include "writer/mode_policy.hpp"

#include "probe/file_kind.hpp"
#include "util/errors.hpp"

#include <fmt/format.h>

namespace wz::writer_detail {

result<mode_choice> choose_mode(const capabilities& caps, const mode_facts& facts, const writer_options& options,
                                std::string_view path, std::uint64_t offset, std::uint64_t length) {
    // flush_needed too: it is true for a write-through device under a file that is not
    // overwritten in place (copy on write), and wherever the device is not known.
    const bool write_through =
        caps.cache.effective == cache_mode::write_through && caps.cache.flush_needed == false;
    const bool fua_ok = caps.cache.fua.value_or(false);
    const bool written = facts.range_written;
    const bool file = file_kind_of(caps) == file_kind::regular;
    const bool raw_nvme = file_kind_of(caps) == file_kind::block && caps.nvme &&
                          caps.nvme->passthrough != passthrough_route::none &&
                          facts.may_passthrough;
    // RWF_DSYNC on an O_DIRECT pure overwrite becomes a FUA write without a flush where the
    // record says so (the filesystems whose traits say it was confirmed at the device).
    const bool file_fua = file && written && caps.cache.dsync_overwrite_fua.value_or(false);

    mode_choice c;
    c.nvme_fua = raw_nvme && fua_ok;
    c.nvme_flush = raw_nvme;
    c.move_facts = {options.mode == durability_mode::through, c.nvme_fua, file_fua};
    // Flush mode: which writes go as RWF_DSYNC, and what the reason says of it.
    const bool block = file_kind_of(caps) == file_kind::block;
    const rwf_dsync_use dsync_use = file    ? rwf_dsync_use::lone_writes
                                    : block ? rwf_dsync_use::every_write_on_io_uring
                                            : rwf_dsync_use::never;
    const char* const alone_note =
        file ? "; a write with no other in flight goes alone as RWF_DSYNC, the filesystem's write and flush as "
               "O_DSYNC sends them, a round trip less than a write and a flush of its own"
        : block ? "; on io_uring every write goes as RWF_DSYNC, which the block layer makes durable itself, as "
                  "O_DSYNC does (a FUA write; where the queue has no FUA, the write and a flush shared with the "
                  "writes beside it), without a round trip back for a flush of the writer's own"
                : "";

    if (options.mode == durability_mode::automatic) {
        if (write_through && written) {
            c.mode = durability_mode::through;
            c.reason = fmt::format("write-through ({}) and every byte of the range is a written extent: O_DIRECT "
                                   "writes need neither flush nor FUA",
                                   caps.cache.effective_reason);
        } else if (c.nvme_fua) {
            c.mode = durability_mode::fua;
            c.reason = fmt::format("write-back cache, raw NVMe namespace: NVMe Write with FUA through {}, never a "
                                   "preflush",
                                   caps.nvme->passthrough_device);
        } else if (file_fua) {
            c.mode = durability_mode::fua;
            c.reason = fmt::format("write-back cache; {}", caps.cache.dsync_overwrite_reason);
        } else {
            c.mode = durability_mode::flush;
            c.rwf_dsync = dsync_use;
            c.reason = fmt::format("{}{}",
                                   write_through ? "write-through, but the range has unwritten extents or holes: a "
                                                   "flush commits their conversion"
                                   : caps.cache.effective == cache_mode::write_through
                                       ? caps.cache.flush_reason + ": one flush per group of writes"
                                       : "write-back cache without a FUA path here: one flush per group of writes",
                                   alone_note);
        }
        return c;
    }
    c.mode = options.mode;
    switch (options.mode) {
    case durability_mode::through:
        if (!written) {
            return make_error_msg(EINVAL, error_reason::not_written,
                                  fmt::format("writer {}: through needs every byte of [offset {}, length {}] "
                                              "preallocated as written extents (wz::allocate)",
                                              path, offset, length));
        }
        if (!write_through && !options.allow_unsafe_through) {
            return make_error_msg(EINVAL, error_reason::unsafe_durability,
                                  fmt::format("writer {}: the cache is {} ({}; {}): through would lose "
                                              "durability (allow_unsafe_through overrides)",
                                              path, caps.cache.effective ? to_string(*caps.cache.effective) : "unknown",
                                              caps.cache.effective_reason, caps.cache.flush_reason));
        }
        c.reason = write_through ? "forced; write-through device" : "forced UNSAFE: the device cache is not write-through";
        break;
    case durability_mode::fua:
        if (c.nvme_fua) {
            c.reason = "forced; NVMe Write with FUA through " + caps.nvme->passthrough_device;
        } else if (file && written) {
            c.reason = fmt::format("forced; RWF_DSYNC on O_DIRECT ({})", caps.cache.dsync_overwrite_reason);
        } else {
            return make_error_msg(ENOTSUP, fmt::format("writer {}: fua is not supported here ({})", path,
                                                       file ? "the range is not all written extents"
                                                            : "needs a raw NVMe namespace with FUA and passthrough"));
        }
        break;
    case durability_mode::flush:
        c.rwf_dsync = dsync_use;
        c.reason = fmt::format("forced; one flush per group of writes{}", alone_note);
        break;
    case durability_mode::dsync: c.reason = "forced; O_DSYNC, the baseline"; break;
    case durability_mode::automatic: break;
    }
    return c;
}

}  // namespace wz::writer_detail

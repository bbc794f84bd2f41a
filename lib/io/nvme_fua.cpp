// SPDX-License-Identifier: MIT
#include "io/nvme_fua.hpp"

#include "io/engine_select.hpp"
#include "util/errors.hpp"

#include <fmt/format.h>

namespace wz::io {

void nvme_fua_writer::bind(const unique_fd& dev_fd, std::string dev_path, std::uint32_t nsid,
                           std::uint32_t lba_bytes, std::uint64_t partition_start, std::uint64_t max_transfer) {
    dev_fd_ = &dev_fd;
    dev_path_ = std::move(dev_path);
    nsid_ = nsid;
    lba_bytes_ = lba_bytes;
    partition_start_ = partition_start;
    max_transfer_ = max_transfer;
}

std::uint64_t nvme_fua_writer::command_bytes() const {
    const std::uint32_t lba = lba_bytes_;
    const std::uint64_t limit = max_transfer_ != 0 ? max_transfer_ : 128 * 1024;
    return std::max<std::uint64_t>(std::min<std::uint64_t>(limit, std::uint64_t{detail::max_nlb} * lba) / lba * lba,
                                   lba);
}

std::string nvme_fua_writer::what(std::uint64_t slba, std::uint64_t nlb, const char* route) const {
    return fmt::format("NVMe Write (FUA) {} [nsid {}, slba {}, nlb {}] ({})", dev_path_, nsid_, slba,
                       nlb, route);
}

std::unique_ptr<detail::ring> nvme_fua_writer::acquire(int& setup_errno) {
    {
        std::lock_guard lock(mutex_);
        if (!free_.empty()) {
            auto r = std::move(free_.back());
            free_.pop_back();
            return r;
        }
    }
    auto r = std::make_unique<detail::ring>();
    if (int rc = r->init(ring_entries, IORING_SETUP_SQE128 | IORING_SETUP_CQE32); rc < 0) {
        setup_errno = -rc;
        return nullptr;
    }
    return r;
}

void nvme_fua_writer::release(std::unique_ptr<detail::ring> r) {
    if (r) {
        std::lock_guard lock(mutex_);
        free_.push_back(std::move(r));
    }
}

status nvme_fua_writer::write_ioctl(const void* buf, std::size_t len, std::uint64_t off) {
    last_route_ = passthrough_path::ioctl;
    status failure;
    for_each_command(buf, len, off, [&](const detail::command_words& w, std::uint64_t slba, std::uint32_t nlb) {
        if (int rc = detail::ioctl_command(fd(), w); rc != 0) {
            failure = detail::command_error(rc, what(slba, nlb, "ioctl"));
        }
        return failure.ok();
    });
    return failure;
}

status nvme_fua_writer::write(const void* buf, std::size_t len, std::uint64_t off) {
    // psync: the ioctl, never a ring.
    if (uring_cmd_missing_ || current_engine_kind() == io_engine::psync) {
        return write_ioctl(buf, len, off);
    }
    int setup_errno = 0;
    auto r = acquire(setup_errno);
    if (!r) {
        // The ioctl from now on whatever the reason; a ring refused for good after an automatic
        // choice also moves the process to psync (the reason names this setup).
        uring_cmd_missing_ = true;
        (void)fall_back_to_psync(  // wz: ignored-error (the ioctl either way; the engine records why)
            setup_errno,
            fmt::format("writer {}: io_uring setup ({} entries, SQE128|CQE32)", dev_path_, ring_entries));
        return write_ioctl(buf, len, off);
    }
    struct part_t {
        detail::command_words words;
        std::uint64_t slba;
        std::uint32_t nlb;
        int rc;
    };
    std::vector<part_t> parts;
    for_each_command(buf, len, off, [&](const detail::command_words& w, std::uint64_t slba, std::uint32_t nlb) {
        parts.push_back({w, slba, nlb, 1});
        return true;
    });
    io_uring* ring = r->get();
    for (std::size_t first = 0; first < parts.size();) {
        // A batch of up to ring-size commands, all submitted, all reaped.
        const std::size_t end = std::min<std::size_t>(parts.size(), first + ring_entries);
        for (std::size_t i = first; i < end; ++i) {
            detail::prep_uring_command(io_uring_get_sqe(ring), fd(), parts[i].words, i);
        }
        const std::size_t n = end - first;
        std::size_t submitted = 0, reaped = 0;
        std::optional<error_info> failure;
        while (reaped < submitted || (!failure && submitted < n)) {
            if (!failure && submitted < n) {
                const int rc = detail::submit(ring);
                if (rc < 0 || (rc == 0 && submitted == reaped)) {
                    // Refused, with nothing in flight whose completion would make room.
                    failure = make_error_range("io_uring submit (NVMe Write FUA)", dev_path_, off, len,
                                               rc < 0 ? -rc : EBUSY);
                } else {
                    submitted += static_cast<std::size_t>(rc);
                }
            }
            if (reaped < submitted) {
                if (int rc = detail::wait_one(ring, std::nullopt); rc < 0) {
                    // The ring cannot tell us about the rest: its teardown (r) cancels them.
                    return make_error_range("io_uring wait (NVMe Write FUA)", dev_path_, off, len, -rc);
                }
                reaped += detail::drain_ready(
                    ring, [&](const io_uring_cqe& cqe) { parts[io_uring_cqe_get_data64(&cqe)].rc = cqe.res; });
            }
        }
        if (failure) {
            return *failure;  // the ring may hold commands never sent: dropped, not pooled
        }
        for (std::size_t i = first; i < end; ++i) {
            const int rc = parts[i].rc;
            if (rc == 0) {
                continue;
            }
            if ((rc == -EOPNOTSUPP || rc == -EINVAL) && last_route_.load() != passthrough_path::uring_cmd) {
                // The char device (or this kernel) takes no uring_cmd: the ioctl from now on.
                // Parts that did complete are written again by the ioctl: an idempotent rewrite.
                uring_cmd_missing_ = true;
                release(std::move(r));
                return write_ioctl(buf, len, off);
            }
            release(std::move(r));
            return detail::command_error(rc, what(parts[i].slba, parts[i].nlb, "uring_cmd"));
        }
        last_route_ = passthrough_path::uring_cmd;
        first = end;
    }
    release(std::move(r));
    return {};
}

}  // namespace wz::io

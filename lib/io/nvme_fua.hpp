// SPDX-License-Identifier: MIT
// Private to lib: NVMe Writes with FUA to one namespace, the transport of the writer's fua mode
// on a raw namespace. A write is split at the transfer limit into commands; the caller's thread
// sends them through io_uring uring_cmd (a small ring per concurrent caller, from a pool, a
// ring's worth in flight at once) and waits for all, or through the NVME_IOCTL_IO_CMD ioctl
// where the kernel takes no uring_cmd or the process runs the psync engine. It also keeps which
// route works on this namespace for the writer's other NVMe commands (its asynchronous ring's
// writes and flushes). Thread-safe.
#pragma once

#include "io/engine.hpp"
#include "io/nvme_cmd.hpp"
#include "io/ring.hpp"
#include "util/unique_fd.hpp"

#include <wzero/wzero.hpp>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace wz::io {

class nvme_fua_writer {
public:
    // Entries of each pooled ring: the most commands of one write in flight at once.
    static constexpr unsigned ring_entries = 16;

    // The namespace: DEV_FD (its passthrough device DEV_PATH, the char device or the block
    // device; read at every call, so the owner may replace the descriptor, and must keep the
    // object alive), NSID and
    // LBA_BYTES, PARTITION_START (bytes added to every offset: a partition's start on the
    // namespace), MAX_TRANSFER (the device's transfer limit in bytes, as the kernel applies it
    // to passthrough; 0: 128 KiB). The pooled rings and what was learnt of the routes stay
    // across binds.
    void bind(const unique_fd& dev_fd, std::string dev_path, std::uint32_t nsid, std::uint32_t lba_bytes,
              std::uint64_t partition_start, std::uint64_t max_transfer);

    // [OFF, OFF + LEN) from BUF as NVMe Writes with FUA, all completed when this returns (the
    // first failure's error, naming the command). uring_cmd where it works, else the ioctl.
    [[nodiscard]] status write(const void* buf, std::size_t len, std::uint64_t off);
    // The same through the ioctl only (the psync engine's workers, a ring without SQE128).
    [[nodiscard]] status write_ioctl(const void* buf, std::size_t len, std::uint64_t off);

    // The commands that carry [OFF, OFF + LEN) from BUF, in order: FN(words, slba, nlb)
    // returns false to stop; so does this then.
    template <class Fn>
    bool for_each_command(const void* buf, std::size_t len, std::uint64_t off, Fn&& fn) const {
        const std::uint32_t lba = lba_bytes_;
        const std::uint64_t max_bytes = command_bytes();
        for (std::size_t done = 0; done < len;) {
            const auto n = static_cast<std::uint32_t>(std::min<std::uint64_t>(len - done, max_bytes));
            const std::uint64_t slba = (off + done + partition_start_) / lba;
            const auto w = detail::write_words(nsid_, slba, n / lba, static_cast<const unsigned char*>(buf) + done,
                                               n, true);
            if (!fn(w, slba, n / lba)) {
                return false;
            }
            done += n;
        }
        return true;
    }
    // The most bytes one command carries: the transfer limit and NLB, in whole blocks.
    [[nodiscard]] std::uint64_t command_bytes() const;

    // The kernel takes no uring_cmd on this namespace (or no SQE128 ring): the ioctl from now on.
    [[nodiscard]] bool uring_cmd_missing() const noexcept { return uring_cmd_missing_; }
    void set_uring_cmd_missing() noexcept { uring_cmd_missing_ = true; }
    // The route of the last NVMe command sent (nullopt: none yet); a caller with its own ring
    // reports its commands here too.
    [[nodiscard]] std::optional<passthrough_path> last_route() const noexcept { return last_route_; }
    void note_route(passthrough_path p) noexcept { last_route_ = p; }
    [[nodiscard]] const std::string& dev_path() const noexcept { return dev_path_; }

private:
    std::unique_ptr<detail::ring> acquire(int& setup_errno);
    void release(std::unique_ptr<detail::ring> r);
    [[nodiscard]] std::string what(std::uint64_t slba, std::uint64_t nlb, const char* route) const;

    [[nodiscard]] int fd() const noexcept { return dev_fd_ != nullptr ? dev_fd_->get() : -1; }

    const unique_fd* dev_fd_ = nullptr;
    std::string dev_path_;
    std::uint32_t nsid_ = 0, lba_bytes_ = 512;
    std::uint64_t partition_start_ = 0;
    std::uint64_t max_transfer_ = 0;
    std::atomic<bool> uring_cmd_missing_{false};
    std::atomic<std::optional<passthrough_path>> last_route_;
    static_assert(std::atomic<std::optional<passthrough_path>>::is_always_lock_free);
    std::mutex mutex_;
    std::vector<std::unique_ptr<detail::ring>> free_;  // rings set up with SQE128|CQE32
};

}  // namespace wz::io

// SPDX-License-Identifier: MIT
// Opening a durable writer: the target (by path, or the caller's descriptor), its record, the
// mode the record and the options allow, and the descriptors that mode writes through. In the
// caller's descriptor table; wz::writer::open is these inside the entry wrapper (api/).

#include "writer/writer_impl.hpp"

#include "io/engine.hpp"
#include "probe/file_kind.hpp"
#include "record/record.hpp"
#include "target/target.hpp"
#include "util/errors.hpp"
#include "util/reopen.hpp"
#include "util/unique_fd.hpp"

#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <memory>

namespace wz {

namespace {

// The part of open() both forms share: `probe` is a read-write descriptor of the target.
result<std::unique_ptr<writer::impl>> open_on(std::unique_ptr<writer::impl> p, unique_fd probe) {
    const std::string& path = p->path;
    if (auto e = io::validate(p->options.completion, p->options.queue_depth); !e.ok()) {
        return std::move(e).error();
    }
    if (p->options.cache_max_age.count() < 0) {
        return make_error_msg(EINVAL, fmt::format("writer {}: cache_max_age must not be negative ({} ns)", path,
                                                  p->options.cache_max_age.count()));
    }
    // The cache answer the mode rests on is read within stat(): no later than this.
    const auto read_at = writer_detail::watch_clock::now();
    auto caps = record::of(probe.get(), path, stat_options{true});
    if (!caps) {
        return caps.error();
    }
    p->caps = std::move(*caps);
    if (file_kind_of(p->caps) == file_kind::block && !p->options.force) {
        // As blkdiscard(8) and wz::preallocate: a device that holds a filesystem or a partition
        // table is somebody's data.
        auto sig = target::device_signature(probe.get(), path);
        if (!sig) {
            return sig.error();
        }
        if (!sig->empty()) {
            return make_error_msg(EBUSY, error_reason::holds_data,
                                  fmt::format("writer {}: contains an existing {}: refused unless forced "
                                              "(writer_options::force, WZ_WRITER_FORCE)",
                                              path, *sig));
        }
    }
    const std::uint64_t offset = p->offset, length = p->length;
    if (length == 0 || offset + length < offset || offset + length > p->caps.size_bytes) {
        return make_error_msg(EINVAL, fmt::format("writer {} [offset {}, length {}]: the range must be non-empty "
                                                  "and inside the {} ({} bytes)",
                                                  path, offset, length,
                                                  file_kind_of(p->caps) == file_kind::block ? "block device" : "file",
                                                  p->caps.size_bytes));
    }
    if (!p->caps.dio) {
        return make_error_msg(ENOTSUP, fmt::format("writer {}: O_DIRECT is not supported here", path));
    }
    if (p->options.completion.mode == completion_mode::poll) {
        // IOPOLL on a queue without poll queues spins on interrupts that the kernel delivers
        // anyway: refuse rather than burn a CPU for nothing.
        // The record's queue/io_poll of the disk: the probe reads it (open re-reads, so a
        // controller reset that dropped the poll queues is seen).
        const std::string disk = p->caps.device ? p->caps.device->disk : std::string();
        if (!p->caps.device || !p->caps.device->io_poll.value_or(false)) {
            const std::string attr = "/sys/block/" + disk.substr(disk.rfind('/') + 1) + "/queue/io_poll";
            return make_error_msg(ENOTSUP, fmt::format("writer {}: completion poll needs a device with poll queues, "
                                                       "and {} has none ({}; for NVMe boot with nvme.poll_queues=N, "
                                                       "or load the nvme module with poll_queues=N)",
                                                       path, disk.empty() ? "the file's storage" : disk,
                                                       disk.empty() ? "no block device" : attr + " is not 1"));
        }
    }
    p->mem_align = std::max<std::uint32_t>(p->caps.dio->mem_align, 1);
    p->offset_align = std::max<std::uint32_t>(p->caps.dio->offset_align, 1);
    p->fd = std::move(probe);  // for the extent check in choose_mode
    if (auto e = p->choose_mode(); !e.ok()) {
        return std::move(e).error();
    }
    p->settle_mode(read_at);
    if (auto e = p->open_fds(); !e.ok()) {
        return std::move(e).error();
    }
    return p;
}

// A writer's state before its target is open: what both forms of open start from.
std::unique_ptr<writer::impl> new_impl(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const writer_options& options) {
    auto p = std::make_unique<writer::impl>();
    p->path = path;
    p->offset = offset;
    p->length = length;
    p->options = options;
    return p;
}

}  // namespace

namespace writer_detail {

result<std::unique_ptr<writer::impl>> open_path(const std::string& path, std::uint64_t offset,
                                                     std::uint64_t length, const writer_options& options) {
    auto p = new_impl(path, offset, length, options);
    // Opened once and decided on the descriptor: a block device is claimed exclusively
    // (refusing a mounted one, a whole disk with a mounted partition, one another process
    // holds), and every later reopen goes through /proc/self/fd of that claim, never the name.
    target::open_request req;
    req.mode = target::access::write;
    auto t = target::open(path, req);
    if (!t) {
        return t.error();
    }
    p->origin = std::move(t->fd);
    unique_fd probe = reopen_self(p->origin.get(), O_RDWR);
    if (!probe) {
        return make_error("open for writing", path, errno);
    }
    return open_on(std::move(p), std::move(probe));
}

result<std::unique_ptr<writer::impl>> open_fd(int fd, const std::string& path, std::uint64_t offset,
                                                   std::uint64_t length, const writer_options& options) {
    auto p = new_impl(path, offset, length, options);
    const int fl = ::fcntl(fd, F_GETFL);
    if (fl < 0) {
        return make_error("fcntl F_GETFL", path, errno);
    }
    // What the descriptor is decides first: a directory is open read-only by necessity, and
    // "read-only" would send the caller after the wrong problem.
    struct ::stat st {};
    if (::fstat(fd, &st) != 0) {
        return make_error("fstat", path, errno);
    }
    if (const file_kind kind = file_kind_of(st.st_mode); kind != file_kind::regular && kind != file_kind::block) {
        return make_error_msg(kind == file_kind::directory ? EISDIR : EINVAL,
                              fmt::format("writer {}: descriptor {} is {}, not a regular file or block device", path,
                                          fd, describe(kind)));
    }
    // O_APPEND says the caller's writes go to the end; the writer writes at the offsets it is
    // given, through its own descriptor: refuse rather than contradict the caller silently.
    if ((fl & O_APPEND) != 0) {
        return make_error_msg(EINVAL, fmt::format("writer {}: descriptor {} is open O_APPEND; positioned durable "
                                                  "writes need a descriptor without it",
                                                  path, fd));
    }
    if ((fl & O_ACCMODE) == O_RDONLY) {
        return make_error_msg(EBADF, fmt::format("writer {}: descriptor {} is open read-only (O_WRONLY or O_RDWR "
                                                 "needed)",
                                                 path, fd));
    }
    // The writer's own duplicate: the caller may close `fd`; /proc/self/fd/N of the duplicate
    // reopens the same file (also one unlinked since) with the flags each mode needs.
    p->origin = unique_fd(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
    if (!p->origin) {
        return make_error("dup", path, errno);
    }
    unique_fd probe = reopen_self(p->origin.get(), O_RDWR);
    if (!probe) {
        const int err = errno;  // before the message's allocations
        return make_error_msg(err, fmt::format("writer {}: reopen read-write through {}: {}", path,
                                               self_fd_path(p->origin.get()), errno_text(err)));
    }
    struct ::stat a {}, b {};
    if (::fstat(fd, &a) != 0 || ::fstat(probe.get(), &b) != 0 || a.st_dev != b.st_dev || a.st_ino != b.st_ino) {
        return make_error_msg(ESTALE, fmt::format("writer {}: reopening descriptor {} gave another file", path, fd));
    }
    if (S_ISBLK(b.st_mode)) {
        // The caller's descriptor may itself be the exclusive claim (then a second O_EXCL open
        // is EBUSY, and fine); a mounted device is refused either way.
        unique_fd claim = reopen_self(p->origin.get(), O_RDWR | O_EXCL);
        if (claim) {
            p->origin = std::move(claim);
        } else if (const std::string at = target::mounted_at(b.st_rdev); !at.empty()) {
            return make_error_msg(EBUSY, fmt::format("writer {}: the block device is mounted at {}", path, at));
        }
    }
    return open_on(std::move(p), std::move(probe));
}

}  // namespace writer_detail

}  // namespace wz

// wz::writer: durable writes that pay for a flush only where one does something.
// The mode follows the capability record: write-through devices over written extents need
// nothing; FUA writes need no flush; write-back needs one flush per group of writes.

#include "extent/fiemap.hpp"
#include "io/engine.hpp"
#include "probe/nvme_probe.hpp"
#include "util/errors.hpp"
#include "util/privilege.hpp"
#include "util/unique_fd.hpp"

#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <libnvme.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>

namespace wz {

namespace {

constexpr std::size_t max_latency_samples = 1U << 22;

}  // namespace

const char* to_string(durability_mode m) noexcept {
    switch (m) {
    case durability_mode::automatic: return "auto";
    case durability_mode::through: return "through";
    case durability_mode::fua: return "fua";
    case durability_mode::flush: return "flush";
    case durability_mode::dsync: return "dsync";
    }
    return "?";
}

struct writer::impl {
    std::string path;
    std::uint64_t offset = 0, length = 0;
    writer_options options;
    capabilities caps;
    durability_mode mode = durability_mode::dsync;
    std::string reason;
    std::uint32_t mem_align = 4096, offset_align = 4096;
    unique_fd fd;        // O_RDWR | O_DIRECT (| O_DSYNC in dsync mode)
    unique_fd char_fd;   // raw namespace in fua mode: NVMe Write with FUA
    bool nvme_fua = false;
    bool nvme_flush = false;  // raw NVMe namespace: flush with an NVMe Flush, not fdatasync

    // Group commit: a flush started after a write completed makes that write durable.
    std::mutex commit_mutex;
    std::condition_variable commit_cv;
    std::uint64_t completed = 0;  // writes completed so far (sequence numbers)
    std::uint64_t durable = 0;    // every write with sequence <= durable is durable
    bool flushing = false;

    std::atomic<std::uint64_t> writes{0}, bytes{0}, fua_writes{0}, flushes{0};
    mutable std::mutex stats_mutex;
    std::vector<double> latencies_us;

    std::optional<error_info> choose_mode();
    std::optional<error_info> open_fds();
    std::optional<error_info> group_commit();
    std::optional<error_info> flush_now();
    std::optional<error_info> write_nvme_fua(const void* buf, std::size_t len, std::uint64_t off);
    result<bool> range_written();
};

result<bool> writer::impl::range_written() {
    if (caps.file_type == "block") {
        return true;  // a block device has no extents to convert
    }
    auto m = extent::map_range(fd.get(), path, offset, length, true);
    if (!m) {
        return m.error();
    }
    for (const auto& e : *m) {
        // Shared extents are written, but an overwrite copies them (xfs reflink): metadata.
        if (e.type != extent::kind::written) {
            return false;
        }
    }
    return true;
}

std::optional<error_info> writer::impl::choose_mode() {
    const bool write_through = caps.cache.effective == cache_mode::write_through;
    const bool fua_ok = caps.cache.fua.value_or(false);
    auto written = range_written();
    if (!written) {
        return written.error();
    }
    const bool raw_nvme = caps.file_type == "block" && caps.nvme && !caps.nvme->char_device.empty() &&
                          may_passthrough(caps.nvme->char_device.c_str());
    const std::string fs_type = caps.fs ? caps.fs->type : std::string();
    const bool lazytime = caps.fs && caps.fs->mount_options.find("lazytime") != std::string::npos;
    // RWF_DSYNC on an O_DIRECT pure overwrite becomes a FUA write without a preflush where the
    // filesystem has no metadata to log for it: xfs (iomap), ext4 only when mounted lazytime
    // (otherwise the mtime update dirties the inode and forces a journal commit).
    const bool file_fua = caps.file_type == "regular" && *written && fua_ok &&
                          (fs_type == "xfs" || (fs_type == "ext4" && lazytime));
    nvme_fua = false;
    nvme_flush = caps.file_type == "block" && caps.nvme && raw_nvme;

    durability_mode want = options.mode;
    if (want == durability_mode::automatic) {
        if (write_through && *written) {
            mode = durability_mode::through;
            reason = fmt::format("write-through ({}) and every byte of the range is a written extent: O_DIRECT "
                                 "writes need neither flush nor FUA",
                                 caps.cache.effective_reason);
        } else if (raw_nvme && fua_ok) {
            mode = durability_mode::fua;
            nvme_fua = true;
            reason = fmt::format("write-back cache, raw NVMe namespace: NVMe Write with FUA through {}, never a "
                                 "preflush",
                                 caps.nvme->char_device);
        } else if (file_fua) {
            mode = durability_mode::fua;
            reason = fmt::format("{} turns RWF_DSYNC O_DIRECT overwrites of written extents into FUA writes", fs_type);
        } else {
            mode = durability_mode::flush;
            reason = write_through ? "write-through, but the range has unwritten extents or holes: a flush commits "
                                     "their conversion"
                                   : "write-back cache without a FUA path here: one flush per group of writes";
        }
        return std::nullopt;
    }
    mode = want;
    switch (want) {
    case durability_mode::through:
        if (!*written) {
            return make_error_msg(EINVAL, fmt::format("writer {}: through needs every byte of [offset {}, length {}] "
                                                      "preallocated as written extents (wzero alloc)",
                                                      path, offset, length));
        }
        if (!write_through && !options.allow_unsafe_through) {
            return make_error_msg(EINVAL, fmt::format("writer {}: the cache is {} ({}): through would lose "
                                                      "durability (allow_unsafe_through overrides)",
                                                      path, caps.cache.effective ? to_string(*caps.cache.effective)
                                                                                 : "unknown",
                                                      caps.cache.effective_reason));
        }
        reason = write_through ? "forced; write-through device" : "forced UNSAFE: the device cache is not write-through";
        break;
    case durability_mode::fua:
        if (raw_nvme && fua_ok) {
            nvme_fua = true;
            reason = "forced; NVMe Write with FUA through " + caps.nvme->char_device;
        } else if (caps.file_type == "regular" && *written) {
            reason = fmt::format("forced; RWF_DSYNC on O_DIRECT ({} decides whether that is FUA alone)", fs_type);
        } else {
            return make_error_msg(ENOTSUP, fmt::format("writer {}: fua is not supported here ({})", path,
                                                       caps.file_type == "regular"
                                                           ? "the range is not all written extents"
                                                           : "needs a raw NVMe namespace with FUA and passthrough"));
        }
        break;
    case durability_mode::flush: reason = "forced; one flush per group of writes"; break;
    case durability_mode::dsync: reason = "forced; O_DSYNC, the baseline"; break;
    case durability_mode::automatic: break;
    }
    return std::nullopt;
}

std::optional<error_info> writer::impl::open_fds() {
    int flags = O_RDWR | O_DIRECT | O_CLOEXEC;
    if (mode == durability_mode::dsync) {
        flags |= O_DSYNC;
    }
    unique_fd f(::open(path.c_str(), flags));
    if (!f) {
        return make_error("open O_DIRECT", path, errno);
    }
    fd = std::move(f);
    if (nvme_fua || nvme_flush) {
        unique_fd c(::open(caps.nvme->char_device.c_str(), O_RDWR | O_CLOEXEC));
        if (!c) {
            return make_error("open", caps.nvme->char_device, errno);
        }
        char_fd = std::move(c);
    }
    return std::nullopt;
}

std::optional<error_info> writer::impl::flush_now() {
    flushes++;
    if (nvme_flush && char_fd) {
        io::nvme_target t{char_fd.get(), caps.nvme->char_device, caps.nvme->nsid, caps.nvme->lba_bytes};
        return io::nvme_flush(t);
    }
    if (::fdatasync(fd.get()) != 0) {
        return make_error("fdatasync", path, errno);
    }
    return std::nullopt;
}

std::optional<error_info> writer::impl::group_commit() {
    std::unique_lock lk(commit_mutex);
    const std::uint64_t mine = ++completed;
    while (durable < mine) {
        if (!flushing) {
            flushing = true;
            const std::uint64_t target = completed;  // all of these completed before the flush
            lk.unlock();
            auto e = flush_now();
            lk.lock();
            flushing = false;
            if (!e) {
                durable = std::max(durable, target);
            }
            commit_cv.notify_all();
            if (e) {
                return e;
            }
        } else {
            commit_cv.wait(lk);
        }
    }
    return std::nullopt;
}

std::optional<error_info> writer::impl::write_nvme_fua(const void* buf, std::size_t len, std::uint64_t off) {
    const std::uint32_t lba = caps.nvme->lba_bytes;
    const std::uint64_t part = caps.device ? caps.device->partition_start_bytes : 0;
    // Bounded by the transfer limit (MDTS as the kernel applies it to passthrough).
    const std::uint64_t max_bytes = std::max<std::uint64_t>(
        caps.device && caps.device->max_hw_transfer_bytes != 0 ? caps.device->max_hw_transfer_bytes : 128 * 1024, lba);
    std::size_t done = 0;
    while (done < len) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(len - done, max_bytes / lba * lba));
        nvme_io_args args{};
        args.args_size = sizeof(args);
        args.fd = char_fd.get();
        args.nsid = caps.nvme->nsid;
        args.slba = (off + done + part) / lba;
        args.nlb = static_cast<__u16>(n / lba - 1);
        args.control = NVME_IO_FUA;
        args.data = const_cast<unsigned char*>(static_cast<const unsigned char*>(buf) + done);
        args.data_len = static_cast<__u32>(n);
        args.timeout = NVME_DEFAULT_IOCTL_TIMEOUT;
        const int rc = nvme_write(&args);
        if (rc != 0) {
            if (rc > 0) {
                return error_info{std::error_code(rc, nvme::status_category()),
                                  fmt::format("NVMe Write (FUA) {} [slba {}, nlb {}]: {}", caps.nvme->char_device,
                                              args.slba, n / lba, nvme::status_category().message(rc))};
            }
            return make_error_range("NVMe Write (FUA)", caps.nvme->char_device, off + done, n, errno);
        }
        done += n;
    }
    return std::nullopt;
}

writer::writer(std::unique_ptr<impl> p) : p_(std::move(p)) {}
writer::writer(writer&&) noexcept = default;
writer& writer::operator=(writer&&) noexcept = default;
writer::~writer() = default;

result<writer> writer::open(const std::string& path, std::uint64_t offset, std::uint64_t length,
                            const writer_options& options) {
    auto p = std::make_unique<impl>();
    p->path = path;
    p->offset = offset;
    p->length = length;
    p->options = options;
    {
        // A read-write descriptor first: the record, and the extent check, need it open.
        unique_fd probe(::open(path.c_str(), O_RDWR | O_CLOEXEC));
        if (!probe) {
            return make_error("open for writing", path, errno);
        }
        auto caps = stat(probe.get(), path, stat_options{true});
        if (!caps) {
            return caps.error();
        }
        p->caps = std::move(*caps);
        if (length == 0 || offset + length < offset || offset + length > p->caps.size_bytes) {
            return make_error_msg(EINVAL, fmt::format("writer {} [offset {}, length {}]: the range must be non-empty "
                                                      "and inside the {} ({} bytes)",
                                                      path, offset, length, p->caps.file_type, p->caps.size_bytes));
        }
        if (!p->caps.dio) {
            return make_error_msg(ENOTSUP, fmt::format("writer {}: O_DIRECT is not supported here", path));
        }
        p->mem_align = std::max<std::uint32_t>(p->caps.dio->mem_align, 1);
        p->offset_align = std::max<std::uint32_t>(p->caps.dio->offset_align, 1);
        p->fd = std::move(probe);  // for the extent check in choose_mode
        if (auto e = p->choose_mode()) {
            return *e;
        }
    }
    if (auto e = p->open_fds()) {
        return *e;
    }
    return writer(std::move(p));
}

result<std::size_t> writer::pwrite(const void* buf, std::size_t len, std::uint64_t offset) {
    impl& w = *p_;
    if (offset < w.offset || offset > w.offset + w.length || len > w.offset + w.length - offset) {
        return make_error_msg(ERANGE, fmt::format("write {} [offset {}, length {}]: outside the writer's range "
                                                  "[offset {}, length {}]",
                                                  w.path, offset, len, w.offset, w.length));
    }
    if (reinterpret_cast<std::uintptr_t>(buf) % w.mem_align != 0 || offset % w.offset_align != 0 ||
        len % w.offset_align != 0 || len == 0) {
        return make_error_msg(EINVAL, fmt::format("write {} [offset {}, length {}]: not aligned for O_DIRECT "
                                                  "(buffer to {}, offset and length to {} bytes)",
                                                  w.path, offset, len, w.mem_align, w.offset_align));
    }
    const auto t0 = std::chrono::steady_clock::now();
    if (w.nvme_fua) {
        if (auto e = w.write_nvme_fua(buf, len, offset)) {
            return *e;
        }
        w.fua_writes++;
    } else {
        std::size_t done = 0;
        const int flags = w.mode == durability_mode::fua ? RWF_DSYNC : 0;
        while (done < len) {
            iovec iov{const_cast<unsigned char*>(static_cast<const unsigned char*>(buf) + done), len - done};
            const ssize_t n = ::pwritev2(w.fd.get(), &iov, 1, static_cast<off_t>(offset + done), flags);
            if (n < 0) {
                if (errno == EINTR) {
                    continue;
                }
                return make_error_range("write", w.path, offset + done, len - done, errno);
            }
            done += static_cast<std::size_t>(n);
        }
        if (w.mode == durability_mode::fua) {
            w.fua_writes++;
        }
        if (w.mode == durability_mode::flush) {
            if (auto e = w.group_commit()) {
                return *e;
            }
        }
    }
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    w.writes++;
    w.bytes += len;
    {
        std::lock_guard lock(w.stats_mutex);
        if (w.latencies_us.size() < max_latency_samples) {
            w.latencies_us.push_back(us);
        }
    }
    return len;
}

durability_mode writer::mode() const noexcept { return p_->mode; }
const std::string& writer::reason() const noexcept { return p_->reason; }
std::uint32_t writer::alignment() const noexcept { return std::max(p_->mem_align, p_->offset_align); }

writer_stats writer::stats() const {
    writer_stats s;
    s.writes = p_->writes;
    s.bytes = p_->bytes;
    s.fua_writes = p_->fua_writes;
    s.flushes = p_->flushes;
    std::vector<double> v;
    {
        std::lock_guard lock(p_->stats_mutex);
        v = p_->latencies_us;
    }
    if (!v.empty()) {
        std::sort(v.begin(), v.end());
        auto at = [&](double q) { return v[static_cast<std::size_t>(q * static_cast<double>(v.size() - 1))]; };
        s.p50_us = at(0.5);
        s.p99_us = at(0.99);
        s.p999_us = at(0.999);
    }
    return s;
}

std::optional<error_info> writer::refresh() {
    impl& w = *p_;
    auto caps = stat(w.fd.get(), w.path, stat_options{true});
    if (!caps) {
        return caps.error();
    }
    w.caps = std::move(*caps);
    const durability_mode before = w.mode;
    auto e = w.choose_mode();
    if (e && w.options.mode == durability_mode::through) {
        // A forced `through` whose device turned write-back: fall to flush rather than lose
        // durability, and say so.
        w.mode = durability_mode::flush;
        w.reason = "through no longer safe after refresh (" + e->message + "): flush";
        e.reset();
    }
    if (e) {
        return e;
    }
    if ((w.mode == durability_mode::dsync) != (before == durability_mode::dsync) || w.nvme_fua || w.nvme_flush) {
        w.fd.reset();
        w.char_fd.reset();
        return w.open_fds();
    }
    return std::nullopt;
}

std::optional<error_info> writer::close() {
    if (!p_) {
        return std::nullopt;
    }
    std::optional<error_info> e;
    if (int rc = p_->char_fd.close(); rc != 0) {
        e = make_error("close", p_->caps.nvme ? p_->caps.nvme->char_device : p_->path, -rc);
    }
    if (int rc = p_->fd.close(); rc != 0 && !e) {
        e = make_error("close", p_->path, -rc);
    }
    return e;
}

}  // namespace wz

// SPDX-License-Identifier: MIT
// wz::writer: durable writes that pay for a flush only where one does something.
// The mode follows the capability record: write-through devices over written extents need
// nothing; FUA writes need no flush; write-back needs one flush per group of writes.

#include "writer/writer_impl.hpp"

#include "writer/mode_policy.hpp"

#include "extent/fiemap.hpp"
#include "io/engine.hpp"
#include "io/engine_select.hpp"
#include "io/nvme_cmd.hpp"
#include "probe/file_kind.hpp"
#include "record/record.hpp"
#include "record/write_cache.hpp"
#include "util/errors.hpp"
#include "util/privilege.hpp"
#include "util/private_fd_table.hpp"
#include "util/reopen.hpp"
#include "util/unique_fd.hpp"

#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>

namespace wz {

namespace {

constexpr std::size_t max_latency_samples = 1U << 22;

}  // namespace

result<bool> writer::impl::range_written() {
    if (file_kind_of(caps) == file_kind::block) {
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

status writer::impl::choose_mode() {
    auto written = range_written();
    if (!written) {
        return written.error();
    }
    writer_detail::mode_facts facts;
    facts.range_written = *written;
    facts.may_passthrough = file_kind_of(caps) == file_kind::block && caps.nvme && may_passthrough(*caps.nvme);
    auto c = writer_detail::choose_mode(caps, facts, options, path, offset, length);
    if (!c) {
        return c.error();
    }
    mode = c->mode;
    reason = std::move(c->reason);
    nvme_fua = c->nvme_fua;
    nvme_flush = c->nvme_flush;
    rwf_dsync = c->rwf_dsync;
    move_facts = c->move_facts;
    return {};
}

status writer::impl::open_fds() {
    int flags = O_RDWR | O_DIRECT | O_CLOEXEC;
    if (mode == durability_mode::dsync) {
        flags |= O_DSYNC;
    }
    unique_fd f = reopen_self(origin.get(), flags);
    if (!f) {
        return make_error("open O_DIRECT", path, errno);
    }
    fd = std::move(f);
    if (nvme_fua || nvme_flush) {
        unique_fd c(open_passthrough(*caps.nvme));
        if (!c) {
            return make_error("open", caps.nvme->passthrough_device, errno);
        }
        passthrough_fd = std::move(c);
        fua_io.bind(passthrough_fd, caps.nvme->passthrough_device, caps.nvme->nsid, caps.nvme->lba_bytes,
                    caps.device ? caps.device->partition_start_bytes : 0,
                    caps.device ? caps.device->max_hw_transfer_bytes : 0);
        if (caps.nvme->passthrough == passthrough_route::block_device) {
            fua_io.set_uring_cmd_missing();  // uring_cmd is the char device's: the ioctl only
        }
    }
    return {};
}

status writer::impl::flush_now() {
    flushes++;
    if (nvme_flush && passthrough_fd) {
        io::nvme_target t{passthrough_fd.get(), caps.nvme->passthrough_device, caps.nvme->nsid,
                          caps.nvme->lba_bytes};
        return io::nvme_flush(t);
    }
    if (::fdatasync(fd.get()) != 0) {
        return make_error("fdatasync", path, errno);
    }
    return {};
}

void writer::impl::settle_mode(writer_detail::watch_clock::time_point read_at) {
    {
        std::lock_guard lock(watch_mutex);
        reasons_.clear();
        reasons_.push_back(reason);
        published_reason = &reasons_.back();
    }
    watch_cache = mode == durability_mode::through && !options.allow_unsafe_through && caps.device.has_value();
    if (watch_cache) {
        cache_devno = makedev(caps.device->major, caps.device->minor);
        verified_at = read_at.time_since_epoch().count();
    }
}

result<writer::impl::through_ack> writer::impl::acknowledge_through() {
    using writer_detail::watch_clock;
    if (mode != durability_mode::through) {
        return through_ack::needs_flush;
    }
    if (!watch_cache) {
        return through_ack::ack;  // allow_unsafe_through: through whatever the cache does
    }
    const auto verified = [this] { return watch_clock::time_point(watch_clock::duration(verified_at.load())); };
    const auto max_age = std::chrono::duration_cast<watch_clock::duration>(options.cache_max_age);
    if (!writer_detail::reread_due(verified(), watch_clock::now(), max_age)) {
        return through_ack::ack;
    }
    std::lock_guard lock(watch_mutex);
    if (mode != durability_mode::through) {
        return through_ack::needs_flush;  // moved while this call waited: the move's flush may predate the write
    }
    if (!writer_detail::reread_due(verified(), watch_clock::now(), max_age)) {
        return through_ack::ack;  // re-read while this call waited
    }
    const record::cache_reading r = record::device_write_cache(cache_devno, max_age);
    if (r.reread) {
        cache_rereads++;
    }
    const writer_detail::cache_move m = writer_detail::after_reread(r.effective, move_facts);
    if (!m.move) {
        verified_at = r.read_at.time_since_epoch().count();
        return through_ack::ack;
    }
    // Out of `through` for good (refresh() may choose it again). Every write that completes from
    // now on sees the new mode and is made durable by it; every write completed before is
    // covered by the flush below, this call's own included.
    const auto age_ms = std::chrono::duration<double, std::milli>(watch_clock::now() - verified()).count();
    reasons_.push_back(fmt::format(
        "moved from through to {}: the write cache is no longer write-through ({}; the answer before was read "
        "{:.0f} ms earlier); a flush covered every write acknowledged before the move; {}",
        to_string(m.to), r.effective ? r.reason : "unknown: " + r.reason, age_ms,
        m.to == durability_mode::fua
            ? (fua_by_nvme(m.to) ? "NVMe Write with FUA through " + caps.nvme->passthrough_device
                                 : fmt::format("RWF_DSYNC on O_DIRECT ({})", caps.cache.dsync_overwrite_reason))
            : std::string("one flush per group of writes")));
    mode = m.to;
    published_reason = &reasons_.back();
    mode_changes++;
    if (auto e = flush_now(); !e.ok()) {
        error_info err = std::move(e).error();
        err.message += fmt::format(" (the flush of the move out of through, after the write cache turned {}: the "
                                   "writes acknowledged since {:.0f} ms ago may not be durable)",
                                   r.effective ? to_string(*r.effective) : "unknown", age_ms);
        return err;
    }
    return through_ack::ack;
}

status writer::impl::write_plain(const ::iovec* iov, int iovcnt, std::uint64_t off, std::size_t len,
                                 const char* what, bool dsync) {
    const int flags = dsync ? RWF_DSYNC : 0;
    std::vector<::iovec> rest(iov, iov + iovcnt);
    std::size_t done = 0, first = 0;
    while (done < len) {
        const ssize_t n = ::pwritev2(fd.get(), rest.data() + first, static_cast<int>(rest.size() - first),
                                     static_cast<off_t>(off + done), flags);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return make_error_range(what, path, off + done, len - done, errno);
        }
        if (n == 0) {
            return make_error_range(fmt::format("{} (no progress)", what), path, off + done, len - done, EIO);
        }
        done += static_cast<std::size_t>(n);
        // Step past what was written (a short O_DIRECT write ends on a block boundary).
        for (auto left = static_cast<std::size_t>(n); left > 0;) {
            const std::size_t step = std::min(left, rest[first].iov_len);
            rest[first].iov_base = static_cast<unsigned char*>(rest[first].iov_base) + step;
            rest[first].iov_len -= step;
            left -= step;
            if (rest[first].iov_len == 0) {
                ++first;
            }
        }
    }
    return {};
}

status writer::impl::check_write(const void* buf, std::size_t len, std::uint64_t off) const {
    if (off < offset || off > offset + length || len > offset + length - off) {
        return make_error_msg(ERANGE, fmt::format("write {} [offset {}, length {}]: outside the writer's range "
                                                  "[offset {}, length {}]",
                                                  path, off, len, offset, length));
    }
    if (len == 0) {
        return make_error_msg(EINVAL, fmt::format("write {} [offset {}, length 0]: the length must be non-zero",
                                                  path, off));
    }
    // NULL is "aligned" to anything: without this a synchronous write fails late with EFAULT
    // and a queued one is accepted, and fails only when complete() hands it back.
    if (buf == nullptr) {
        return make_error_msg(EINVAL, fmt::format("write {} [offset {}, length {}]: the buffer is NULL", path, off,
                                                  len));
    }
    if (reinterpret_cast<std::uintptr_t>(buf) % mem_align != 0 || off % offset_align != 0 ||
        len % offset_align != 0) {
        return make_error_msg(EINVAL, fmt::format("write {} [offset {}, length {}]: not aligned for O_DIRECT "
                                                  "(buffer to {}, offset and length to {} bytes)",
                                                  path, off, len, mem_align, offset_align));
    }
    return {};
}

void writer::impl::record(std::size_t len, double us) {
    writes++;
    bytes += len;
    std::lock_guard lock(stats_mutex);
    if (latencies_us.size() < max_latency_samples) {
        latencies_us.push_back(us);
    }
}

writer::writer(std::unique_ptr<impl> p) : p_(std::move(p)) {}
writer::writer(writer&&) noexcept = default;
writer& writer::operator=(writer&&) noexcept = default;
writer::~writer() = default;

result<std::size_t> writer::pwrite(const void* buf, std::size_t len, std::uint64_t offset) {
    ::iovec iov{const_cast<void*>(buf), len};
    return pwritev(&iov, 1, offset);
}

result<std::size_t> writer::pwritev(const ::iovec* iov, int iovcnt, std::uint64_t offset) {
    impl& w = *p_;
    if (iovcnt <= 0 || iovcnt > IOV_MAX) {
        return make_error_msg(EINVAL, fmt::format("write {} [offset {}]: {} segments (1..{})", w.path, offset, iovcnt,
                                                  IOV_MAX));
    }
    std::size_t len = 0;
    for (int i = 0; i < iovcnt; ++i) {
        if (auto e = w.check_write(iov[i].iov_base, iov[i].iov_len, offset + len); !e.ok()) {
            return std::move(e).error();
        }
        len += iov[i].iov_len;
    }
    const auto t0 = std::chrono::steady_clock::now();
    // The mode once, for the whole write: a move out of `through` on another thread changes it.
    const durability_mode m = w.mode;
    if (w.fua_by_nvme(m)) {
        std::uint64_t at = offset;
        for (int i = 0; i < iovcnt; ++i) {
            if (auto e = w.fua_io.write(iov[i].iov_base, iov[i].iov_len, at); !e.ok()) {
                return std::move(e).error();
            }
            at += iov[i].iov_len;
        }
        w.fua_writes++;
    } else {
        bool alone = false;
        const bool counted = w.rwf_dsync == writer_detail::rwf_dsync_use::lone_writes && m == durability_mode::flush;
        if (counted) {
            std::lock_guard lock(w.lone_mutex);
            alone = w.sync_lone.starts(w.sync_writes_in_flight);
            ++w.sync_writes_in_flight;
        }
        const auto left = [&w, counted] {
            if (counted) {
                std::lock_guard lock(w.lone_mutex);
                --w.sync_writes_in_flight;
            }
        };
        if (auto e = w.write_plain(iov, iovcnt, offset, len, alone ? "write (RWF_DSYNC)" : "write",
                                   alone || m == durability_mode::fua);
            !e.ok()) {
            left();
            return std::move(e).error();
        }
        if (m == durability_mode::fua) {
            w.fua_writes++;
        }
        bool flush = m == durability_mode::flush && !alone;
        if (m == durability_mode::through) {
            auto a = w.acknowledge_through();
            if (!a) {
                error_info err = a.error();
                err.message += fmt::format(" (write [offset {}, length {}] not durable)", offset, len);
                left();
                return err;
            }
            flush = *a == writer::impl::through_ack::needs_flush;
        }
        if (alone) {
            w.dsync_writes++;
        } else if (flush) {
            // The flush's error (fdatasync or NVMe Flush, with its path) goes to every write it
            // covered, whichever thread ran it: each names its own range.
            if (auto e = w.commit.commit([&w] { return w.flush_now(); }); !e.ok()) {
                error_info err = std::move(e).error();
                err.message += fmt::format(" (write [offset {}, length {}] not durable)", offset, len);
                left();
                return err;
            }
        }
        left();
    }
    w.record(len, std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count());
    return len;
}

durability_mode writer::mode() const noexcept { return p_->mode; }
const std::string& writer::reason() const noexcept { return *p_->published_reason.load(); }
std::uint32_t writer::alignment() const noexcept { return std::max(p_->mem_align, p_->offset_align); }
completion_mode writer::completion() const noexcept { return p_->options.completion.mode; }

writer_stats writer::stats() const {
    writer_stats s;
    s.writes = p_->writes;
    s.bytes = p_->bytes;
    s.fua_writes = p_->fua_writes;
    s.flushes = p_->flushes;
    s.dsync_writes = p_->dsync_writes;
    s.cache_rereads = p_->cache_rereads;
    s.mode_changes = p_->mode_changes;
    if (const auto used = p_->fua_io.last_route()) {
        s.passthrough = io::to_string(*used);
    }
    io::reaper_counters c = p_->async_counters_before;
    if (p_->async) {
        c += p_->async->counters();
    }
    s.engine = to_string(p_->async_engine_kind());
    s.blocking_waits = c.blocking_waits;
    s.busy_looks = c.busy_looks;
    s.idle_sleeps = c.idle_sleeps;
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

status writer::refresh() {
    impl& w = *p_;
    if (w.async_in_flight() > 0) {
        return make_error_msg(EBUSY, fmt::format("writer {}: refresh with {} asynchronous writes in flight: "
                                                 "complete() them first",
                                                 w.path, w.async_in_flight()));
    }
    const auto read_at = writer_detail::watch_clock::now();
    // A public call: its probes' opens and closes in a table of their own, as wz::stat's.
    const int fds[] = {w.fd.get()};
    auto caps = in_private_fd_table<result<capabilities>>(
        fmt::format("stat {}", w.path), fds, [&] { return record::of(w.fd.get(), w.path, stat_options{true}); });
    if (!caps) {
        return caps.error();
    }
    w.caps = std::move(*caps);
    const durability_mode before = w.mode;
    auto e = w.choose_mode();
    if (!e.ok() && w.options.mode == durability_mode::through) {
        // A forced `through` whose device turned write-back: fall to flush rather than lose
        // durability, and say so.
        w.mode = durability_mode::flush;
        w.reason = "through no longer safe after refresh (" + e.error().message + "): flush";
        e = {};
    }
    if (!e.ok()) {
        return e;
    }
    w.settle_mode(read_at);
    w.reset_async();  // the next submit() sets up an engine for the new mode
    if ((w.mode == durability_mode::dsync) != (before == durability_mode::dsync) || w.nvme_fua || w.nvme_flush) {
        // A file's descriptor is kept (see `retired`): a regular file reopens only when the
        // mode moves in or out of dsync, so they add up only with such changes.
        if (file_kind_of(w.caps) == file_kind::regular) {
            w.retired.push_back(std::move(w.fd));
        }
        w.fd.reset();
        w.passthrough_fd.reset();
        return w.open_fds();
    }
    return {};
}

status writer::close() {
    if (!p_) {
        return {};
    }
    status e;
    if (p_->async_in_flight() > 0) {
        // Asynchronous writes still in flight: wait for them; their first failure is ours.
        std::vector<writer_completion> done;
        auto r = complete(done, p_->async_in_flight());
        if (!r) {
            e = r.error();
        }
        for (auto& c : done) {
            if (c.error && e.ok()) {
                e = std::move(*c.error);
            }
        }
    }
    p_->reset_async();
    if (int rc = p_->passthrough_fd.close(); rc != 0 && e.ok()) {
        e = make_error("close", p_->caps.nvme ? p_->caps.nvme->passthrough_device : p_->path, -rc);
    }
    if (int rc = p_->fd.close(); rc != 0 && e.ok()) {
        e = make_error("close", p_->path, -rc);
    }
    return e;
}

}  // namespace wz

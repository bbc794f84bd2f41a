// SPDX-License-Identifier: MIT
// wz::writer's asynchronous path. On io_uring, submit() queues O_DIRECT writes (or NVMe
// Writes with FUA through uring_cmd) on one ring; complete() reaps them as the completion mode
// says and hands back only writes that are durable: at once in through/fua/dsync, and in
// flush mode after a flush submitted once the write had completed (group commit,
// flush_batcher: one flush in flight at a time, covering every write completed before it).
// On psync, a thread pool does the synchronous path's writes and the same group commit
// (psync_pool).

#include "writer/writer_impl.hpp"

#include "io/engine_select.hpp"
#include "io/nvme_cmd.hpp"
#include "util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace wz::writer_detail {

namespace {

constexpr std::uint64_t flush_tag = UINT64_MAX;

}  // namespace

uring_path::uring_path(writer::impl& w) : w_(w), mode_(w.mode), nvme_fua_(w.fua_by_nvme(mode_)) {}

status uring_path::start() {
    const unsigned depth = w_.options.queue_depth;
    unsigned flags = 0;
    iopoll_ = w_.options.completion.mode == completion_mode::poll;
    if (iopoll_) {
        flags |= IORING_SETUP_IOPOLL;
    }
    sqe128_ = (nvme_fua_ || w_.nvme_flush) && !w_.fua_io.uring_cmd_missing();
    // Room for a flush next to a full queue of writes (NVMe writes may take several commands
    // each; submission waits for room then).
    const unsigned entries = depth + 1;
    auto ring = std::make_unique<io::detail::ring>();
    int rc = ring->init(entries, flags | (sqe128_ ? IORING_SETUP_SQE128 | IORING_SETUP_CQE32 : 0));
    if (rc < 0 && sqe128_) {
        // No SQE128 (Linux < 5.19): plain writes still go through the ring; NVMe commands
        // take the ioctl, synchronously.
        w_.fua_io.set_uring_cmd_missing();
        sqe128_ = false;
        rc = ring->init(entries, flags);
    }
    if (rc < 0) {
        return make_error_msg(-rc, fmt::format("writer {}: io_uring setup ({} entries{}): {}", w_.path, entries,
                                               iopoll_ ? ", IOPOLL" : "", errno_text(-rc)));
    }
    ring_ = std::move(ring);
    ops_.assign(depth, {});
    free_slots_.clear();
    for (std::uint32_t i = depth; i > 0; --i) {
        free_slots_.push_back(i - 1);
    }
    reaper_.emplace(w_.options.completion);
    return {};
}

io::reaper_counters uring_path::counters() const { return reaper_ ? reaper_->counters() : io::reaper_counters{}; }

// Submits what is queued in the SQ; the kernel may take part of it (the rest goes next time).
status uring_path::submit_sqes() {
    io_uring* r = ring_->get();
    while (io_uring_sq_ready(r) > 0) {
        const int rc = io::detail::submit(r);
        if (rc < 0) {
            return make_error_msg(-rc, fmt::format("writer {}: io_uring submit: {}", w_.path, errno_text(-rc)));
        }
        if (rc == 0) {
            break;  // EAGAIN/EBUSY: completions must be reaped first; they stay queued
        }
        commands_in_flight_ += static_cast<unsigned>(rc);
    }
    return {};
}

// Puts op `slot` (its remaining bytes) on the ring.
status uring_path::queue(std::uint32_t slot) {
    async_op& op = ops_[slot];
    io_uring* r = ring_->get();
    status submit_error;
    auto sqe_for = [&]() -> io_uring_sqe* {
        io_uring_sqe* sqe = io_uring_get_sqe(r);
        if (sqe == nullptr) {  // SQ full: hand it to the kernel, then there is room
            if (auto e = submit_sqes(); !e.ok()) {
                submit_error = std::move(e);
                return nullptr;
            }
            sqe = io_uring_get_sqe(r);
        }
        return sqe;
    };
    if (nvme_fua_) {
        if (!sqe128_) {
            // Synchronously through the ioctl; the op completes here.
            op.error = error_of(w_.fua_io.write_ioctl(op.buf, op.len, op.offset));
            op.done = op.error ? 0 : op.len;
            op.parts_left = 0;
            deliver(slot);
            return {};
        }
        status queue_error;
        w_.fua_io.for_each_command(op.buf, op.len, op.offset,
                              [&](const io::detail::command_words& words, std::uint64_t, std::uint32_t) {
                                  io_uring_sqe* sqe = sqe_for();
                                  if (sqe == nullptr) {
                                      queue_error = !submit_error.ok() ? submit_error
                                                                       : make_error_range("io_uring: no submission entry "
                                                                                    "for NVMe Write (FUA)",
                                                                                    w_.path, op.offset, op.len, EBUSY);
                                      return false;
                                  }
                                  io::detail::prep_uring_command(sqe, w_.passthrough_fd.get(), words, slot);
                                  ++op.parts_left;
                                  return true;
                              });
        if (!queue_error.ok()) {
            return queue_error;
        }
    } else {
        io_uring_sqe* sqe = sqe_for();
        if (sqe == nullptr) {
            return !submit_error.ok() ? submit_error
                                      : make_error_range("io_uring: no submission entry for write", w_.path,
                                                         op.offset + op.done, op.len - op.done, EBUSY);
        }
        io_uring_prep_write(sqe, w_.fd.get(), op.buf + op.done, static_cast<unsigned>(op.len - op.done),
                            op.offset + op.done);
        if (mode_ == durability_mode::fua || op.alone) {
            sqe->rw_flags = RWF_DSYNC;
        }
        io_uring_sqe_set_data64(sqe, slot);
        op.parts_left = 1;
    }
    return submit_sqes();
}

// A failed flush's error as a write it covered reports it: each names its own range, as the
// synchronous pwrite() does.
error_info uring_path::flush_failed(error_info e, const async_op& op) {
    e.message += fmt::format(" (write [offset {}, length {}] not durable)", op.offset, op.len);
    return e;
}

// op `slot` is finished (durable or failed): hand it back on the next complete().
void uring_path::deliver(std::uint32_t slot) {
    async_op& op = ops_[slot];
    writer_completion c;
    c.user_data = op.user_data;
    if (op.error) {
        c.error = std::move(op.error);
    } else {
        c.bytes = op.len;
        if (mode_ == durability_mode::fua) {
            w_.fua_writes++;
        }
        if (op.alone) {
            w_.dsync_writes++;
        }
    }
    ready_.push_back(std::move(c));
    ready_latency_us_.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - op.t0).count());
    op = {};
    free_slots_.push_back(slot);
}

void uring_path::handle(const io_uring_cqe& cqe) {
    --commands_in_flight_;
    const std::uint64_t tag = io_uring_cqe_get_data64(&cqe);
    if (tag == flush_tag) {
        std::optional<error_info> e;
        if (cqe.res != 0) {
            e = w_.nvme_flush && sqe128_
                    ? io::detail::command_error(cqe.res, fmt::format("NVMe Flush {} [nsid {}] (uring_cmd)",
                                                                     w_.caps.nvme->passthrough_device, w_.caps.nvme->nsid))
                    : make_error("fdatasync (io_uring)", w_.path, -cqe.res);
        } else if (w_.nvme_flush && sqe128_) {
            uring_cmd_ok_ = true;
        }
        for (std::uint32_t slot : group_.flush_completed()) {
            if (e) {
                ops_[slot].error = flush_failed(*e, ops_[slot]);
            }
            deliver(slot);
        }
        return;
    }
    const auto slot = static_cast<std::uint32_t>(tag);
    async_op& op = ops_[slot];
    --op.parts_left;
    if (nvme_fua_) {
        if (cqe.res == 0) {
            uring_cmd_ok_ = true;
            w_.fua_io.note_route(io::passthrough_path::uring_cmd);
        } else if (!op.error) {
            if ((cqe.res == -EOPNOTSUPP || cqe.res == -EINVAL) && !uring_cmd_ok_) {
                w_.fua_io.set_uring_cmd_missing();  // the next ring (after refresh) will not try it
            }
            op.error = io::detail::command_error(
                cqe.res, fmt::format("NVMe Write (FUA) {} [offset {}, length {}] (uring_cmd)",
                                     w_.caps.nvme->passthrough_device, op.offset, op.len));
        }
    } else if (cqe.res < 0) {
        op.error = make_error_range("write (io_uring)", w_.path, op.offset + op.done, op.len - op.done, -cqe.res);
    } else if (cqe.res == 0) {
        op.error =
            make_error_range("write (io_uring, no progress)", w_.path, op.offset + op.done, op.len - op.done, EIO);
    } else {
        op.done += static_cast<std::size_t>(cqe.res);
        if (op.done < op.len) {
            // A short write: the rest goes again (it ends on a block boundary, still aligned).
            if (auto e = queue(slot); !e.ok()) {
                op.error = std::move(e).error();
            } else {
                return;
            }
        }
    }
    if (op.parts_left > 0) {
        return;
    }
    bool flush = mode_ == durability_mode::flush && !op.error && !op.alone;
    if (mode_ == durability_mode::through && !op.error) {
        auto a = w_.acknowledge_through();
        if (!a) {
            op.error = flush_failed(a.error(), op);
        } else {
            flush = *a == writer::impl::through_ack::needs_flush;
        }
    }
    if (flush) {
        const auto now = std::chrono::steady_clock::now();
        group_.write_completed(slot, now - op.t0, now);
        return;
    }
    deliver(slot);
}

// Flush mode (and `through` writes after a move out of it): starts the flush the group commit
// asks for.
status uring_path::maybe_flush() {
    if (!group_.flush_due(std::chrono::steady_clock::now(), writes_in_flight_ - ready_.size())) {
        return {};
    }
    group_.start_flush();
    if (iopoll_) {
        // An IOPOLL ring takes reads and writes only: the flush is a call of its own.
        auto e = w_.flush_now();  // counts itself
        for (std::uint32_t slot : group_.flush_completed()) {
            if (!e.ok()) {
                ops_[slot].error = flush_failed(e.error(), ops_[slot]);
            }
            deliver(slot);
        }
        return {};
    }
    io_uring* r = ring_->get();
    io_uring_sqe* sqe = io_uring_get_sqe(r);
    if (sqe == nullptr) {
        if (auto e = submit_sqes(); !e.ok()) {
            return e;
        }
        sqe = io_uring_get_sqe(r);
        if (sqe == nullptr) {
            group_.unstart_flush();  // try again after the next completions
            return {};
        }
    }
    w_.flushes++;
    if (w_.nvme_flush && sqe128_) {
        io::detail::prep_uring_command(sqe, w_.passthrough_fd.get(), io::detail::flush_words(w_.caps.nvme->nsid),
                                       flush_tag);
    } else {
        io_uring_prep_fsync(sqe, w_.fd.get(), IORING_FSYNC_DATASYNC);
        io_uring_sqe_set_data64(sqe, flush_tag);
    }
    return submit_sqes();
}

status uring_path::submit(const void* buf, std::size_t len, std::uint64_t offset, std::uint64_t user_data) {
    if (free_slots_.empty()) {
        return make_error_msg(EBUSY, fmt::format("write {} [offset {}, length {}]: {} writes already in flight (the "
                                                 "queue depth): complete() some first",
                                                 w_.path, offset, len, w_.options.queue_depth));
    }
    const std::uint32_t slot = free_slots_.back();
    free_slots_.pop_back();
    async_op& op = ops_[slot];
    op = {};
    op.user_data = user_data;
    op.buf = static_cast<const unsigned char*>(buf);
    op.len = len;
    op.offset = offset;
    op.t0 = std::chrono::steady_clock::now();
    // An IOPOLL ring flushes by a call of its own (maybe_flush): its writes stay plain.
    switch (iopoll_ ? rwf_dsync_use::never : w_.rwf_dsync) {
    case rwf_dsync_use::never: break;
    case rwf_dsync_use::lone_writes: op.alone = lone_.starts(writes_in_flight_); break;
    case rwf_dsync_use::every_write_on_io_uring: op.alone = true; break;
    }
    ++writes_in_flight_;
    if (auto e = queue(slot); !e.ok()) {
        if (op.parts_left == 0) {
            // Nothing of it was queued: it fails now.
            --writes_in_flight_;
            op = {};
            free_slots_.push_back(slot);
            return e;
        }
        // Part of it is queued: it is handed back by complete(), failed with this error, once
        // the queued part is done; submit() itself succeeded.
        op.error = std::move(e).error();
    }
    return {};
}

result<std::size_t> uring_path::complete(std::vector<writer_completion>& out, std::size_t min_complete) {
    if (!ring_) {
        return std::size_t{0};
    }
    min_complete = std::min(min_complete, writes_in_flight_);
    struct ops_t {
        uring_path& a;
        std::optional<error_info> error;
        unsigned drain() {
            const unsigned n = io::detail::drain_ready(a.ring_->get(), [&](const io_uring_cqe& cqe) { a.handle(cqe); });
            if (auto e = a.maybe_flush(); !e.ok() && !error) {
                error = std::move(e).error();
            }
            return n;
        }
        int wait() { return io::detail::wait_one(a.ring_->get(), std::nullopt); }
        unsigned in_flight() const { return a.commands_in_flight_; }
        static void sleep(std::chrono::microseconds us) { std::this_thread::sleep_for(us); }
    } ops{*this, std::nullopt};
    while (ready_.size() < min_complete) {
        // Anything queued but not yet taken by the kernel goes first.
        if (auto e = submit_sqes(); !e.ok()) {
            return std::move(e).error();
        }
        const int rc = reaper_->reap(ops);
        if (ops.error) {
            return *ops.error;
        }
        if (rc < 0) {
            return make_error_msg(-rc, fmt::format("writer {}: io_uring wait: {}", w_.path, errno_text(-rc)));
        }
        if (rc == 0 && commands_in_flight_ == 0 && io_uring_sq_ready(ring_->get()) == 0) {
            break;  // nothing can complete any more (a flush that could not be queued is retried above)
        }
    }
    const std::size_t n = ready_.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (!ready_[i].error) {
            w_.record(ready_[i].bytes, ready_latency_us_[i]);
        }
        out.push_back(std::move(ready_[i]));
    }
    ready_.clear();
    ready_latency_us_.clear();
    writes_in_flight_ -= n;
    return n;
}

psync_path::psync_path(writer::impl& w)
    : w_(w),
      mode_(w.mode),
      nvme_fua_(w.fua_by_nvme(mode_)),
      pool_(
          w.options.queue_depth,
          [&w, mode = mode_, nvme_fua = nvme_fua_](const psync_pool::job& j) -> status {
              if (nvme_fua) {
                  return w.fua_io.write_ioctl(j.buf, j.len, j.offset);
              }
              ::iovec iov{const_cast<unsigned char*>(j.buf), j.len};
              if (auto e = w.write_plain(&iov, 1, j.offset, j.len,
                                         j.alone ? "write (psync, RWF_DSYNC)" : "write (psync)",
                                         j.alone || mode == durability_mode::fua);
                  !e.ok() || mode != durability_mode::through) {
                  return e;
              }
              // A `through` write after a move out of it: the synchronous path's group commit
              // (a flush started after it completed), shared with pwrite() and the other workers.
              auto a = w.acknowledge_through();
              status st;
              if (!a) {
                  st = a.error();
              } else if (*a == writer::impl::through_ack::needs_flush) {
                  st = w.commit.commit([&w] { return w.flush_now(); });
              }
              if (!st.ok()) {
                  error_info err = std::move(st).error();
                  err.message += fmt::format(" (write [offset {}, length {}] not durable)", j.offset, j.len);
                  return err;
              }
              return st;
          },
          mode_ == durability_mode::flush ? psync_pool::flush_fn([&w] { return w.flush_now(); })
                                          : psync_pool::flush_fn(),
          w.path) {}

status psync_path::submit(const void* buf, std::size_t len, std::uint64_t offset, std::uint64_t user_data) {
    if (pool_.in_flight() >= w_.options.queue_depth) {
        return make_error_msg(EBUSY, fmt::format("write {} [offset {}, length {}]: {} writes already in flight (the "
                                                 "queue depth): complete() some first",
                                                 w_.path, offset, len, w_.options.queue_depth));
    }
    psync_pool::job j;
    j.user_data = user_data;
    j.buf = static_cast<const unsigned char*>(buf);
    j.len = len;
    j.offset = offset;
    j.t0 = std::chrono::steady_clock::now();
    // On a block device pwrite() follows an RWF_DSYNC write with a flush of its own: grouped.
    j.alone = w_.rwf_dsync == rwf_dsync_use::lone_writes && lone_.starts(pool_.in_flight());
    return pool_.submit(j);
}

result<std::size_t> psync_path::complete(std::vector<writer_completion>& out, std::size_t min_complete) {
    std::vector<psync_pool::finished> done;
    const std::size_t n = pool_.complete(done, min_complete);
    for (auto& f : done) {
        writer_completion c;
        c.user_data = f.user_data;
        if (f.error) {
            c.error = std::move(f.error);
        } else {
            c.bytes = f.len;
            if (mode_ == durability_mode::fua) {
                w_.fua_writes++;
            }
            if (f.alone) {
                w_.dsync_writes++;
            }
            w_.record(f.len, f.latency_us);
        }
        out.push_back(std::move(c));
    }
    return n;
}

io::reaper_counters psync_path::counters() const {
    io::reaper_counters c;
    c.blocking_waits = pool_.blocking_waits();
    return c;
}

}  // namespace wz::writer_detail

namespace wz {

io_engine writer::impl::async_engine_kind() const {
    return async ? async->engine() : current_io_engine().engine;
}

status writer::impl::start_async() {
    if (current_io_engine().engine == io_engine::io_uring) {
        auto u = std::make_unique<writer_detail::uring_path>(*this);
        auto e = u->start();
        if (e.ok()) {
            async = std::move(u);
            return {};
        }
        // Refused for good (EPERM from kernel.io_uring_disabled or a seccomp profile, ENOMEM
        // from RLIMIT_MEMLOCK, EMFILE) after an automatic choice: psync, for this writer and
        // the rest of the process. io_uring asked for explicitly: its error.
        if (!io::fall_back_to_psync(e.code().value(), fmt::format("writer {}: io_uring setup ({} entries)", path,
                                                                   options.queue_depth + 1))) {
            return e;
        }
    }
    async = std::make_unique<writer_detail::psync_path>(*this);
    return {};
}

void writer::impl::reset_async() {
    if (async) {
        async_counters_before += async->counters();
        async.reset();  // waits for what it has running
    }
}

status writer::submit(const void* buf, std::size_t len, std::uint64_t offset, std::uint64_t user_data) {
    if (auto e = p_->check_write(buf, len, offset); !e.ok()) {
        return e;
    }
    if (p_->async && p_->async->built_for() != p_->mode && p_->async_in_flight() == 0) {
        // Moved out of `through` since the engine was set up, and nothing of it is left to hand
        // back: one for the new mode.
        p_->reset_async();
    }
    if (!p_->async) {
        if (auto e = p_->start_async(); !e.ok()) {
            return e;
        }
    }
    return p_->async->submit(buf, len, offset, user_data);
}

result<std::size_t> writer::complete(std::vector<writer_completion>& out, std::size_t min_complete) {
    if (!p_->async) {
        return std::size_t{0};
    }
    return p_->async->complete(out, min_complete);
}

std::size_t writer::in_flight() const noexcept { return p_->async_in_flight(); }

}  // namespace wz

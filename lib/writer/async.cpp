// wz::writer's asynchronous path: submit() queues O_DIRECT writes (or NVMe Writes with FUA
// through uring_cmd) on one io_uring; complete() reaps them as the completion mode says and
// hands back only writes that are durable: at once in through/fua/dsync, and in flush mode
// after a flush submitted once the write had completed (group commit: one flush in flight at
// a time, covering every write completed before it).

#include "writer/writer_impl.hpp"

#include "io/nvme_cmd.hpp"
#include "util/errors.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <thread>

namespace wz {

namespace {

constexpr std::uint64_t flush_tag = UINT64_MAX;

}  // namespace

std::optional<error_info> writer::impl::async_start() {
    writer_detail::async_engine& a = async;
    const unsigned depth = options.queue_depth;
    unsigned flags = 0;
    a.iopoll = options.completion.mode == completion_mode::poll;
    if (a.iopoll) {
        flags |= IORING_SETUP_IOPOLL;
    }
    a.sqe128 = (nvme_fua || nvme_flush) && !uring_cmd_missing;
    // Room for a flush next to a full queue of writes (NVMe writes may take several commands
    // each; submission waits for room then).
    const unsigned entries = depth + 1;
    auto ring = std::make_unique<io::detail::ring>();
    int rc = ring->init(entries, flags | (a.sqe128 ? IORING_SETUP_SQE128 | IORING_SETUP_CQE32 : 0));
    if (rc < 0 && a.sqe128) {
        // No SQE128 (Linux < 5.19): plain writes still go through the ring; NVMe commands
        // take the ioctl, synchronously.
        uring_cmd_missing = true;
        a.sqe128 = false;
        rc = ring->init(entries, flags);
    }
    if (rc < 0) {
        return make_error_msg(-rc, fmt::format("writer {}: io_uring setup ({} entries{}): {}", path, entries,
                                               a.iopoll ? ", IOPOLL" : "", errno_text(-rc)));
    }
    a.ring = std::move(ring);
    a.ops.assign(depth, {});
    a.free_slots.clear();
    for (std::uint32_t i = depth; i > 0; --i) {
        a.free_slots.push_back(i - 1);
    }
    a.reaper.emplace(options.completion);
    return std::nullopt;
}

void writer::impl::async_reset() {
    writer_detail::async_engine& a = async;
    if (a.reaper) {
        a.counters_before += a.reaper->counters();
    }
    a.reaper.reset();
    a.ring.reset();
}

// Submits what is queued in the SQ; the kernel may take part of it (the rest goes next time).
std::optional<error_info> writer::impl::async_submit_sqes() {
    io_uring* r = async.ring->get();
    while (io_uring_sq_ready(r) > 0) {
        const int rc = io::detail::submit(r);
        if (rc < 0) {
            return make_error_msg(-rc, fmt::format("writer {}: io_uring submit: {}", path, errno_text(-rc)));
        }
        if (rc == 0) {
            break;  // EAGAIN/EBUSY: completions must be reaped first; they stay queued
        }
        async.commands_in_flight += static_cast<unsigned>(rc);
    }
    return std::nullopt;
}

// Puts op `slot` (its remaining bytes) on the ring.
std::optional<error_info> writer::impl::async_queue(std::uint32_t slot) {
    writer_detail::async_op& op = async.ops[slot];
    io_uring* r = async.ring->get();
    std::optional<error_info> submit_error;
    auto sqe_for = [&]() -> io_uring_sqe* {
        io_uring_sqe* sqe = io_uring_get_sqe(r);
        if (sqe == nullptr) {  // SQ full: hand it to the kernel, then there is room
            if (auto e = async_submit_sqes()) {
                submit_error = std::move(e);
                return nullptr;
            }
            sqe = io_uring_get_sqe(r);
        }
        return sqe;
    };
    if (nvme_fua) {
        if (!async.sqe128) {
            // Synchronously through the ioctl; the op completes here.
            op.error = write_nvme_fua_ioctl(op.buf, op.len, op.offset);
            op.done = op.error ? 0 : op.len;
            op.parts_left = 0;
            async_deliver(slot);
            return std::nullopt;
        }
        std::optional<error_info> queue_error;
        for_each_fua_write(op.buf, op.len, op.offset,
                           [&](const io::detail::command_words& w, std::uint64_t, std::uint32_t) {
                               io_uring_sqe* sqe = sqe_for();
                               if (sqe == nullptr) {
                                   queue_error = submit_error ? *submit_error
                                                              : make_error_range("io_uring: no submission entry for "
                                                                                 "NVMe Write (FUA)",
                                                                                 path, op.offset, op.len, EBUSY);
                                   return false;
                               }
                               io::detail::prep_uring_command(sqe, char_fd.get(), w, slot);
                               ++op.parts_left;
                               return true;
                           });
        if (queue_error) {
            return queue_error;
        }
    } else {
        io_uring_sqe* sqe = sqe_for();
        if (sqe == nullptr) {
            return submit_error ? *submit_error
                                : make_error_range("io_uring: no submission entry for write", path,
                                                   op.offset + op.done, op.len - op.done, EBUSY);
        }
        io_uring_prep_write(sqe, fd.get(), op.buf + op.done, static_cast<unsigned>(op.len - op.done),
                            op.offset + op.done);
        if (mode == durability_mode::fua) {
            sqe->rw_flags = RWF_DSYNC;
        }
        io_uring_sqe_set_data64(sqe, slot);
        op.parts_left = 1;
    }
    return async_submit_sqes();
}

// op `slot` is finished (durable or failed): hand it back on the next complete().
void writer::impl::async_deliver(std::uint32_t slot) {
    writer_detail::async_op& op = async.ops[slot];
    writer_completion c;
    c.user_data = op.user_data;
    if (op.error) {
        c.error = std::move(op.error);
    } else {
        c.bytes = op.len;
        if (mode == durability_mode::fua) {
            fua_writes++;
        }
    }
    async.ready.push_back(std::move(c));
    async.ready_latency_us.push_back(
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - op.t0).count());
    op = {};
    async.free_slots.push_back(slot);
}

void writer::impl::async_handle(const io_uring_cqe& cqe) {
    writer_detail::async_engine& a = async;
    --a.commands_in_flight;
    const std::uint64_t tag = io_uring_cqe_get_data64(&cqe);
    if (tag == flush_tag) {
        a.flush_in_flight = false;
        std::optional<error_info> e;
        if (cqe.res != 0) {
            e = nvme_flush && a.sqe128
                    ? io::detail::command_error(cqe.res, fmt::format("NVMe Flush {} [nsid {}] (uring_cmd)",
                                                                     caps.nvme->char_device, caps.nvme->nsid))
                    : make_error("fdatasync (io_uring)", path, -cqe.res);
        } else if (nvme_flush && a.sqe128) {
            a.uring_cmd_ok = true;
        }
        for (std::uint32_t slot : a.flush_batch) {
            if (e) {
                a.ops[slot].error = e;
            }
            async_deliver(slot);
        }
        a.flush_batch.clear();
        return;
    }
    const auto slot = static_cast<std::uint32_t>(tag);
    writer_detail::async_op& op = a.ops[slot];
    --op.parts_left;
    if (nvme_fua) {
        if (cqe.res == 0) {
            a.uring_cmd_ok = true;
            passthrough_used = 1;
        } else if (!op.error) {
            if ((cqe.res == -EOPNOTSUPP || cqe.res == -EINVAL) && !a.uring_cmd_ok) {
                uring_cmd_missing = true;  // the next ring (after refresh) will not try it
            }
            op.error = io::detail::command_error(
                cqe.res, fmt::format("NVMe Write (FUA) {} [offset {}, length {}] (uring_cmd)", caps.nvme->char_device,
                                     op.offset, op.len));
        }
    } else if (cqe.res < 0) {
        op.error = make_error_range("write (io_uring)", path, op.offset + op.done, op.len - op.done, -cqe.res);
    } else if (cqe.res == 0) {
        op.error = make_error_range("write (io_uring, no progress)", path, op.offset + op.done, op.len - op.done, EIO);
    } else {
        op.done += static_cast<std::size_t>(cqe.res);
        if (op.done < op.len) {
            // A short write: the rest goes again (it ends on a block boundary, still aligned).
            if (auto e = async_queue(slot)) {
                op.error = std::move(e);
            } else {
                return;
            }
        }
    }
    if (op.parts_left > 0) {
        return;
    }
    if (mode == durability_mode::flush && !op.error) {
        const auto now = std::chrono::steady_clock::now();
        const double took_us = std::chrono::duration<double, std::micro>(now - op.t0).count();
        a.write_mean_us = a.write_mean_us == 0 ? took_us : 0.875 * a.write_mean_us + 0.125 * took_us;
        if (a.awaiting_flush.empty()) {
            a.awaiting_since = now;
        }
        a.awaiting_flush.push_back(slot);
        return;
    }
    async_deliver(slot);
}

// Flush mode: when no flush is in flight and writes wait for one, start one for all of them
// once no other write is still on the device, or once the oldest has waited as long as a write
// takes. Writes submitted together complete together: one flush then covers all of them
// (at queue depth q, 1/q flush per write), where starting at the first completion split every
// cohort in two (2/q: one flush per two writes at QD 4). A write waits for its cohort at most
// about one write time, far less than the flush it saves; with nothing else in flight it
// does not wait at all.
std::optional<error_info> writer::impl::async_maybe_flush() {
    writer_detail::async_engine& a = async;
    if (mode != durability_mode::flush || a.flush_in_flight || a.awaiting_flush.empty()) {
        return std::nullopt;
    }
    const std::size_t settled = a.ready.size() + a.awaiting_flush.size() + a.flush_batch.size();
    const bool others_on_device = a.writes_in_flight > settled;
    const double waited_us =
        std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - a.awaiting_since).count();
    if (others_on_device && waited_us < a.write_mean_us) {
        return std::nullopt;  // looked at again at the next completion
    }
    a.flush_batch.swap(a.awaiting_flush);
    if (a.iopoll) {
        // An IOPOLL ring takes reads and writes only: the flush is a call of its own.
        auto e = flush_now();  // counts itself
        for (std::uint32_t slot : a.flush_batch) {
            if (e) {
                a.ops[slot].error = e;
            }
            async_deliver(slot);
        }
        a.flush_batch.clear();
        return std::nullopt;
    }
    io_uring* r = a.ring->get();
    io_uring_sqe* sqe = io_uring_get_sqe(r);
    if (sqe == nullptr) {
        if (auto e = async_submit_sqes()) {
            return e;
        }
        sqe = io_uring_get_sqe(r);
        if (sqe == nullptr) {
            a.awaiting_flush.swap(a.flush_batch);  // try again after the next completions
            return std::nullopt;
        }
    }
    flushes++;
    if (nvme_flush && a.sqe128) {
        io::detail::prep_uring_command(sqe, char_fd.get(), io::detail::flush_words(caps.nvme->nsid), flush_tag);
    } else {
        io_uring_prep_fsync(sqe, fd.get(), IORING_FSYNC_DATASYNC);
        io_uring_sqe_set_data64(sqe, flush_tag);
    }
    a.flush_in_flight = true;
    return async_submit_sqes();
}

std::optional<error_info> writer::submit(const void* buf, std::size_t len, std::uint64_t offset,
                                         std::uint64_t user_data) {
    impl& w = *p_;
    if (auto e = w.check_write(buf, len, offset)) {
        return e;
    }
    if (!w.async.ring) {
        if (auto e = w.async_start()) {
            return e;
        }
    }
    writer_detail::async_engine& a = w.async;
    if (a.free_slots.empty()) {
        return make_error_msg(EBUSY, fmt::format("write {} [offset {}, length {}]: {} writes already in flight (the "
                                                 "queue depth): complete() some first",
                                                 w.path, offset, len, w.options.queue_depth));
    }
    const std::uint32_t slot = a.free_slots.back();
    a.free_slots.pop_back();
    writer_detail::async_op& op = a.ops[slot];
    op = {};
    op.user_data = user_data;
    op.buf = static_cast<const unsigned char*>(buf);
    op.len = len;
    op.offset = offset;
    op.t0 = std::chrono::steady_clock::now();
    ++a.writes_in_flight;
    if (auto e = w.async_queue(slot)) {
        if (op.parts_left == 0) {
            // Nothing of it was queued: it fails now.
            --a.writes_in_flight;
            op = {};
            a.free_slots.push_back(slot);
            return e;
        }
        // Part of it is queued: it is handed back by complete(), failed with this error, once
        // the queued part is done; submit() itself succeeded.
        op.error = std::move(e);
    }
    return std::nullopt;
}

result<std::size_t> writer::complete(std::vector<writer_completion>& out, std::size_t min_complete) {
    impl& w = *p_;
    writer_detail::async_engine& a = w.async;
    if (!a.ring) {
        return std::size_t{0};
    }
    min_complete = std::min(min_complete, a.writes_in_flight);
    struct ops_t {
        impl& w;
        std::optional<error_info> error;
        unsigned drain() {
            const unsigned n =
                io::detail::drain_ready(w.async.ring->get(), [&](const io_uring_cqe& cqe) { w.async_handle(cqe); });
            if (auto e = w.async_maybe_flush(); e && !error) {
                error = std::move(e);
            }
            return n;
        }
        int wait() { return io::detail::wait_one(w.async.ring->get(), std::nullopt); }
        unsigned in_flight() const { return w.async.commands_in_flight; }
        static void sleep(std::chrono::microseconds us) { std::this_thread::sleep_for(us); }
    } ops{w, std::nullopt};
    while (a.ready.size() < min_complete) {
        // Anything queued but not yet taken by the kernel goes first.
        if (auto e = w.async_submit_sqes()) {
            return *e;
        }
        const int rc = a.reaper->reap(ops);
        if (ops.error) {
            return *ops.error;
        }
        if (rc < 0) {
            return make_error_msg(-rc, fmt::format("writer {}: io_uring wait: {}", w.path, errno_text(-rc)));
        }
        if (rc == 0 && a.commands_in_flight == 0 && io_uring_sq_ready(a.ring->get()) == 0) {
            break;  // nothing can complete any more (a flush that could not be queued is retried above)
        }
    }
    const std::size_t n = a.ready.size();
    for (std::size_t i = 0; i < n; ++i) {
        if (!a.ready[i].error) {
            w.record(a.ready[i].bytes, a.ready_latency_us[i]);
        }
        out.push_back(std::move(a.ready[i]));
    }
    a.ready.clear();
    a.ready_latency_us.clear();
    a.writes_in_flight -= n;
    return n;
}

std::size_t writer::in_flight() const noexcept { return p_->async.writes_in_flight; }

}  // namespace wz

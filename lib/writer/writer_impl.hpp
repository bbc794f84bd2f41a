// SPDX-License-Identifier: MIT
// Private to lib/writer (and wz::writer::open in api/): the state behind wz::writer. writer::impl holds what both paths
// share (the target, its descriptors, the durability mode, the counters) and the synchronous
// path's group commit; the asynchronous path keeps its own state in an async_path
// (async.cpp: io_uring or psync).
#pragma once

#include "io/completion.hpp"
#include "io/engine.hpp"
#include "io/nvme_cmd.hpp"
#include "io/nvme_fua.hpp"
#include "io/ring.hpp"
#include "util/unique_fd.hpp"
#include "writer/cache_watch.hpp"
#include "writer/group_commit.hpp"
#include "writer/mode_policy.hpp"
#include "writer/psync_pool.hpp"

#include <wzero/wzero.hpp>

#include <sys/uio.h>

#include <sys/types.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace wz {

namespace writer_detail {

// One asynchronous write between submit() and the completion complete() hands back.
struct async_op {
    std::uint64_t user_data = 0;
    const unsigned char* buf = nullptr;
    std::size_t len = 0;
    std::uint64_t offset = 0;
    std::size_t done = 0;     // bytes the kernel reported written (plain writes: short ones go again)
    unsigned parts_left = 0;  // commands still in flight (an NVMe write splits at the transfer limit)
    std::optional<error_info> error;
    std::chrono::steady_clock::time_point t0;
    bool alone = false;  // flush mode: written as RWF_DSYNC, durable when it completes (rwf_dsync_use)
};

// The asynchronous API's path, on the I/O engine chosen at the first submit() after open or
// refresh: uring_path on a ring of lib/io, psync_path on lib/io's worker_pool. The engine is
// the process's (wz::current_io_engine), io_uring moving to psync when its ring setup is
// refused for good (io::fall_back_to_psync). Both hand back only writes that are durable, with
// the same errors and counters; destroying one waits for the writes it has running.
class async_path {
public:
    virtual ~async_path() = default;
    virtual status submit(const void* buf, std::size_t len, std::uint64_t offset, std::uint64_t user_data) = 0;
    virtual result<std::size_t> complete(std::vector<writer_completion>& out, std::size_t min_complete) = 0;
    [[nodiscard]] virtual std::size_t writes_in_flight() const noexcept = 0;
    [[nodiscard]] virtual io::reaper_counters counters() const = 0;
    [[nodiscard]] virtual io_engine engine() const noexcept = 0;
    // The writer's mode when this engine was set up: its writes are sent as that mode sends
    // them. After a move out of `through` its writes in that mode are flushed before they are
    // handed back; the next submit() with nothing in flight sets up an engine for the new mode.
    [[nodiscard]] virtual durability_mode built_for() const noexcept = 0;
};

// io_uring: one ring, its reaper (interrupt, poll or adaptive completion), the slots of the
// writes in flight and, in flush mode, the group commit that decides when a flush starts. It
// writes through the device state of writer::impl (descriptors, mode, NVMe facts); the
// synchronous path shares none of this.
class uring_path final : public async_path {
public:
    explicit uring_path(writer::impl& w);

    // Sets up the ring; its error (io_uring setup, with the errno) before any submit().
    status start();
    status submit(const void* buf, std::size_t len, std::uint64_t offset, std::uint64_t user_data) override;
    result<std::size_t> complete(std::vector<writer_completion>& out, std::size_t min_complete) override;
    [[nodiscard]] std::size_t writes_in_flight() const noexcept override { return writes_in_flight_; }
    [[nodiscard]] io::reaper_counters counters() const override;
    [[nodiscard]] io_engine engine() const noexcept override { return io_engine::io_uring; }
    [[nodiscard]] durability_mode built_for() const noexcept override { return mode_; }

private:
    status queue(std::uint32_t slot);
    void handle(const io_uring_cqe& cqe);
    void deliver(std::uint32_t slot);
    static error_info flush_failed(error_info e, const async_op& op);
    status maybe_flush();
    status submit_sqes();

    writer::impl& w_;
    const durability_mode mode_;  // the writer's when this engine was made
    const bool nvme_fua_;         // its writes are NVMe Writes with FUA
    std::unique_ptr<io::detail::ring> ring_;  // null until start()
    bool iopoll_ = false;
    bool sqe128_ = false;         // the ring takes uring_cmd (NVMe passthrough)
    bool uring_cmd_ok_ = false;   // a uring_cmd completed: the path works here
    std::vector<async_op> ops_;   // by slot
    std::vector<std::uint32_t> free_slots_;
    unsigned commands_in_flight_ = 0;  // SQEs submitted and not yet reaped (flush included)
    std::size_t writes_in_flight_ = 0; // submit()ted and not yet handed back
    flush_batcher group_;               // flush mode, and `through` writes after a move out of it
    lone_writes lone_;                  // flush mode on a file: which writes go alone
    std::vector<writer_completion> ready_;  // durable or failed, not yet handed back
    std::vector<double> ready_latency_us_;
    std::optional<io::reaper> reaper_;
};

// psync: up to min(queue depth, io::max_worker_threads) threads (psync_pool) doing what the
// synchronous API does (pwrite on the O_DIRECT descriptor, O_DSYNC in dsync mode, RWF_DSYNC
// in fua mode on a file; NVMe Write with FUA through the ioctl on a raw namespace) and, in
// flush mode, io_uring's group commit (flush_batcher) with flush_now() as the flush.
// completion_options mean nothing here: the workers block in the kernel, complete() on a
// condition variable (its waits counted as blocking_waits).
class psync_path final : public async_path {
public:
    explicit psync_path(writer::impl& w);

    status submit(const void* buf, std::size_t len, std::uint64_t offset, std::uint64_t user_data) override;
    result<std::size_t> complete(std::vector<writer_completion>& out, std::size_t min_complete) override;
    [[nodiscard]] std::size_t writes_in_flight() const noexcept override { return pool_.in_flight(); }
    [[nodiscard]] io::reaper_counters counters() const override;
    [[nodiscard]] io_engine engine() const noexcept override { return io_engine::psync; }
    [[nodiscard]] durability_mode built_for() const noexcept override { return mode_; }

private:
    writer::impl& w_;
    const durability_mode mode_;  // the writer's when this engine was made
    const bool nvme_fua_;         // its writes are NVMe Writes with FUA (the ioctl)
    lone_writes lone_;  // flush mode on a file: which writes go alone (submit() runs on one thread)
    psync_pool pool_;
};

}  // namespace writer_detail

struct writer::impl {
    std::string path;         // for messages
    // The checked inode: open(path)'s descriptor (O_EXCL for a block device) or a duplicate
    // of the caller's descriptor.
    unique_fd origin;
    // Descriptors of a regular file that refresh() replaced: kept until the writer closes.
    // Closing any descriptor of the file releases every POSIX record lock the process holds
    // on it (fcntl(2)); open() does its closing in a table of its own (adopt_in_caller).
    std::vector<unique_fd> retired;
    std::uint64_t offset = 0, length = 0;
    writer_options options;
    capabilities caps;
    // Read by writes on any thread; changed by open() and refresh(), which nothing runs beside,
    // and by a move out of `through` (acknowledge_through), which only ever leaves `through`.
    std::atomic<durability_mode> mode{durability_mode::dsync};
    std::string reason;  // choose_mode's; what reason() returns is published_reason
    std::uint32_t mem_align = 4096, offset_align = 4096;
    unique_fd fd;        // O_RDWR | O_DIRECT (| O_DSYNC in dsync mode)
    unique_fd passthrough_fd;  // raw namespace: NVMe Write with FUA, NVMe Flush
    // A raw NVMe namespace with FUA and passthrough: mode fua sends NVMe Writes with FUA (else
    // RWF_DSYNC on a file). Set whatever the mode, so that a move to fua can use it.
    bool nvme_fua = false;
    bool nvme_flush = false;  // raw NVMe namespace: flush with an NVMe Flush, not fdatasync
    // Flush mode: which writes go as RWF_DSYNC (writer_detail::rwf_dsync_use): on a regular
    // file a write with nothing to group with (writer_detail::lone_writes), on every path; on
    // a block device every write on io_uring, none through pwrite(), which adds a flush after
    // the FUA write (two flushes on a queue without FUA) against the group commit's one.
    writer_detail::rwf_dsync_use rwf_dsync = writer_detail::rwf_dsync_use::never;
    // NVMe Writes with FUA and the routes the namespace takes (bound to passthrough_fd by open_fds).
    io::nvme_fua_writer fua_io;

    writer_detail::shared_flush commit;  // the synchronous path's group commit
    // The synchronous path's callers in a flush-mode write, and which of them go alone.
    std::mutex lone_mutex;
    std::size_t sync_writes_in_flight = 0;
    writer_detail::lone_writes sync_lone;

    // Mode `through` and its write cache (cache_watch.hpp): watched unless allow_unsafe_through.
    bool watch_cache = false;
    dev_t cache_devno = 0;        // the record's device: record::device_write_cache
    writer_detail::through_facts move_facts;  // where a move goes
    std::atomic<writer_detail::watch_clock::rep> verified_at{0};  // when the last write-through answer's read started
    std::mutex watch_mutex;  // one re-read (and move) at a time; guards reasons_
    // reason() returns a reference that must stay valid while a move publishes a new reason on
    // another thread: every reason since open() or refresh() is kept (a move adds one).
    std::deque<std::string> reasons_;
    std::atomic<const std::string*> published_reason{nullptr};
    std::atomic<std::uint64_t> cache_rereads{0}, mode_changes{0};

    std::atomic<std::uint64_t> writes{0}, bytes{0}, fua_writes{0}, flushes{0};
    std::atomic<std::uint64_t> dsync_writes{0};  // flush mode: writes that went alone (RWF_DSYNC)
    mutable std::mutex stats_mutex;
    std::vector<double> latencies_us;

    // The asynchronous API's engine: null until the first submit() (after open or refresh).
    // Last, so that it is destroyed first: its running writes use the descriptors above.
    io::reaper_counters async_counters_before;  // of engines torn down by refresh
    std::unique_ptr<writer_detail::async_path> async;
    status start_async();
    void reset_async();
    [[nodiscard]] std::size_t async_in_flight() const noexcept { return async ? async->writes_in_flight() : 0; }
    // The engine a submit() uses now: the running one, else the process's.
    [[nodiscard]] io_engine async_engine_kind() const;

    status choose_mode();
    // After choose_mode (open, refresh): publishes `reason` and starts watching the cache in
    // `through`, the answer the mode rests on having been read from READ_AT.
    void settle_mode(writer_detail::watch_clock::time_point read_at);
    // A write sent in mode `through` has completed: may it be acknowledged as it is? `ack` when
    // the cache answer it rests on is at most options.cache_max_age old (re-read first when it
    // is older), or when this call moved the writer out of `through` and its flush, which covers
    // every write completed so far, succeeded (the flush's error otherwise). `needs_flush` when
    // another call moved the writer meanwhile: a flush that starts after this write completed
    // makes it durable.
    enum class through_ack { ack, needs_flush };
    result<through_ack> acknowledge_through();
    // The mode fua's writes on this writer are NVMe Writes with FUA.
    [[nodiscard]] bool fua_by_nvme(durability_mode m) const noexcept { return m == durability_mode::fua && nvme_fua; }
    status open_fds();
    status flush_now();
    status check_write(const void* buf, std::size_t len, std::uint64_t off) const;
    // pwritev2 of [off, off + len) from iov, short writes continued (RWF_DSYNC when `dsync`:
    // fua mode on a file, and a write that goes `alone` in flush mode); errors name `what`, the
    // path and the range not written.
    status write_plain(const ::iovec* iov, int iovcnt, std::uint64_t off, std::size_t len, const char* what,
                       bool dsync);
    void record(std::size_t len, double us);
    result<bool> range_written();
};

namespace writer_detail {

// A writer's state for PATH (opened as wz::writer::open(PATH) does: a block device claimed
// exclusively), or for the caller's descriptor FD, with its mode chosen and its descriptors
// open: in the caller's descriptor table (open.cpp). wz::writer::open carries the descriptors
// into the process's table.
result<std::unique_ptr<writer::impl>> open_path(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                                const writer_options& options);
result<std::unique_ptr<writer::impl>> open_fd(int fd, const std::string& path, std::uint64_t offset,
                                              std::uint64_t length, const writer_options& options);

}  // namespace writer_detail

}  // namespace wz

// SPDX-License-Identifier: MIT
// Private to lib/io: an owned io_uring and the completion plumbing both engines share.
#pragma once

#include <liburing.h>

#include <cerrno>
#include <chrono>
#include <cstdint>
#include <optional>

namespace wz::io::detail {

// Owns one io_uring; io_uring_queue_exit in the destructor. Not movable: liburing's
// struct io_uring is used in place by address.
class ring {
public:
    ring() = default;
    ring(const ring&) = delete;
    ring& operator=(const ring&) = delete;
    ~ring() {
        if (live_) {
            io_uring_queue_exit(&ring_);
        }
    }
    // 0 or -errno (liburing's convention).
    [[nodiscard]] int init(unsigned entries, unsigned flags) {
        io_uring_params params{};
        params.flags = flags;
        int rc = io_uring_queue_init_params(entries, &ring_, &params);
        live_ = rc == 0;
        return rc;
    }
    [[nodiscard]] io_uring* get() noexcept { return &ring_; }

private:
    io_uring ring_{};
    bool live_ = false;
};

struct probe_deleter {
    void operator()(io_uring_probe* p) const { io_uring_free_probe(p); }
};

// Submits everything prepared. Returns the number the kernel took (it may take fewer, e.g.
// EAGAIN/EBUSY when completions must be reaped first: those stay queued and go with the next
// call) or -errno for a failure that retrying will not fix. EINTR is retried.
[[nodiscard]] inline int submit(io_uring* r) {
    for (;;) {
        int rc = io_uring_submit(r);
        if (rc == -EINTR) {
            continue;
        }
        if (rc == -EAGAIN || rc == -EBUSY) {
            return 0;
        }
        return rc;
    }
}

// Waits until at least one completion is ready, or `timeout` passes (then returns -ETIME).
// 0 or -errno; EINTR is retried.
[[nodiscard]] inline int wait_one(io_uring* r, std::optional<std::chrono::nanoseconds> timeout) {
    for (;;) {
        io_uring_cqe* cqe = nullptr;
        int rc = 0;
        if (timeout) {
            __kernel_timespec ts{};
            ts.tv_sec = timeout->count() / 1'000'000'000;
            ts.tv_nsec = timeout->count() % 1'000'000'000;
            rc = io_uring_wait_cqe_timeout(r, &cqe, &ts);
        } else {
            rc = io_uring_wait_cqe(r, &cqe);
        }
        if (rc == -EINTR) {
            continue;
        }
        return rc;
    }
}

// Calls fn(cqe) for every completion ready now, marking each seen. Returns how many.
template <class Fn>
unsigned drain_ready(io_uring* r, Fn&& fn) {
    unsigned n = 0;
    while (io_uring_cq_ready(r) > 0) {
        io_uring_cqe* cqe = nullptr;
        if (io_uring_peek_cqe(r, &cqe) != 0 || cqe == nullptr) {
            break;
        }
        fn(*cqe);
        io_uring_cqe_seen(r, cqe);
        ++n;
    }
    return n;
}

}  // namespace wz::io::detail

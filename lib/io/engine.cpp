// SPDX-License-Identifier: MIT
// Data zeroing: one shared zero buffer written at queue depth, through the process's engine
// (io_uring here, psync in psync_engine.cpp).
#include "io/engine.hpp"

#include "io/engine_impl.hpp"
#include "io/engine_select.hpp"
#include "io/ring.hpp"
#include "util/errors.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <new>
#include <set>
#include <vector>

namespace wz::io {

zero_buffer::zero_buffer(std::size_t bytes) {
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    size_ = (std::max<std::size_t>(bytes, 1) + page - 1) / page * page;
    // Large buffers: 2 MiB aligned and backed by transparent huge pages where the kernel
    // grants them (THP "always" or "madvise"). Physically contiguous memory makes few, large
    // bio segments: with 4 KiB pages a 1 MiB write to a queue limited to 128 segments of
    // 64 KiB (loop, many virtio and SCSI disks) is split into two 512 KiB requests; from one
    // huge page it is one request (measured: 2052 -> 1028 loop requests per GiB, 1.3x -> 1.8x
    // dd on ext4 over a direct-I/O loop device).
    constexpr std::size_t huge = std::size_t{2} << 20;
    if (size_ >= huge / 4) {
        const std::size_t want = (size_ + huge - 1) / huge * huge;
        void* raw = ::mmap(nullptr, want + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (raw != MAP_FAILED) {
            const auto base = reinterpret_cast<std::uintptr_t>(raw);
            const std::uintptr_t aligned = (base + huge - 1) & ~(huge - 1);
            // Trim the slack on both sides: the destructor unmaps exactly [data_, data_ + size_).
            if (aligned > base) {
                (void)::munmap(raw, aligned - base);  // wz: ignored-error (slack of our own mapping)
            }
            (void)::munmap(reinterpret_cast<void*>(aligned + want),  // wz: ignored-error (as above)
                           base + huge - aligned);
            data_ = reinterpret_cast<void*>(aligned);
            size_ = want;
            (void)::madvise(data_, size_, MADV_HUGEPAGE);  // wz: ignored-error (advice; EINVAL without THP)
            // Fault every page in now by writing (a read would map the shared zero page):
            // huge pages where granted, base pages otherwise.
            std::memset(data_, 0, size_);
            return;
        }
    }
    // MAP_POPULATE: fault the pages in now rather than pinning the shared zero page later.
    void* p = ::mmap(nullptr, size_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
    if (p == MAP_FAILED) {
        throw std::bad_alloc();
    }
    data_ = p;
}

zero_buffer::~zero_buffer() {
    (void)::munmap(data_, size_);  // wz: ignored-error (nothing to do about it in a destructor)
}

namespace {

using detail::nanoseconds;

// The offset alignment O_DIRECT needs on this fd. statx reports it for files since Linux 6.1
// and for block devices since 6.11; older block devices: the logical block size. 512 is the
// smallest any Linux O_DIRECT accepts: if the real one is larger the kernel's EINVAL still
// comes back as an error naming the range.
std::uint32_t direct_offset_align(int fd) {
    struct statx stx {};
    if (::statx(fd, "", AT_EMPTY_PATH, STATX_TYPE | STATX_DIOALIGN, &stx) != 0) {
        return 512;
    }
    if ((stx.stx_mask & STATX_DIOALIGN) != 0 && stx.stx_dio_offset_align != 0) {
        return stx.stx_dio_offset_align;
    }
    int lbs = 0;
    if (S_ISBLK(stx.stx_mode) && ::ioctl(fd, BLKSSZGET, &lbs) == 0 && lbs > 0) {
        return static_cast<std::uint32_t>(lbs);
    }
    return 512;
}

// The io_uring side of a write_zeroes run: SQEs from the tracker's ops, CQEs back into it.
class uring_zero_writer {
public:
    uring_zero_writer(const zero_write_request& req, const progress_fn& progress, const rate_limit& rate)
        : req_(req), t_(req, progress, rate) {}

    // Sets `setup_errno` (with the error returned) when the ring cannot be set up: then
    // nothing was written and the caller may take the request elsewhere. `depth`: the
    // ring's entries.
    result<io_outcome> run(io_outcome& out, int& setup_errno, unsigned& depth);

private:
    void prep(io_uring* r, unsigned index);

    const zero_write_request& req_;
    detail::zero_tracker t_;
    std::optional<zero_buffer> buffer_;
    bool fixed_ = false;
};

void uring_zero_writer::prep(io_uring* r, unsigned index) {
    const detail::write_op& op = t_.op(index);
    // The caller only preps with a free op, and there are no more ops than SQ entries.
    io_uring_sqe* sqe = io_uring_get_sqe(r);
    // Always from the start of the buffer: every byte of it is zero, and WRITE_FIXED
    // needs an address inside the registered range.
    void* src = const_cast<void*>(buffer_->data());  // the kernel only reads it
    const auto len = static_cast<unsigned>(op.remaining);
    if (fixed_) {
        io_uring_prep_write_fixed(sqe, req_.fd, src, len, op.offset, 0);
    } else {
        io_uring_prep_write(sqe, req_.fd, src, len, op.offset);
    }
    io_uring_sqe_set_data64(sqe, index);
    t_.issued();
}

result<io_outcome> uring_zero_writer::run(io_outcome& out, int& setup_errno, unsigned& depth) {
    depth = t_.depth(detail::max_queue_depth);
    detail::ring ring;
    if (int rc = ring.init(depth, 0); rc < 0) {
        setup_errno = -rc;
        return make_error_msg(-rc, fmt::format("write zeroes {}: io_uring setup ({} entries): {}", req_.path, depth,
                                               errno_text(-rc)));
    }
    io_uring* r = ring.get();
    try {
        buffer_.emplace(std::min<std::uint64_t>(req_.chunk_bytes, req_.length));
    } catch (const std::bad_alloc&) {
        return make_error_msg(ENOMEM, fmt::format("write zeroes {}: zero buffer of {} bytes: {}", req_.path,
                                                  req_.chunk_bytes, errno_text(ENOMEM)));
    }
    // Registration pins the pages once instead of per write. It fails under a small
    // RLIMIT_MEMLOCK (before 5.12 kernels accounted it there) or above 1 GiB; plain
    // writes are then just as correct.
    iovec iov{const_cast<void*>(buffer_->data()), buffer_->size()};
    fixed_ = io_uring_register_buffers(r, &iov, 1) == 0;
    out.fixed_buffer = fixed_;
    if (!fixed_) {
        // WRITE_FIXED is as old as io_uring; plain WRITE came in 5.6. Ask rather than learn it
        // from a failed write halfway through.
        std::unique_ptr<io_uring_probe, detail::probe_deleter> probe(io_uring_get_probe_ring(r));
        if (!probe || io_uring_opcode_supported(probe.get(), IORING_OP_WRITE) == 0) {
            return make_error_msg(EOPNOTSUPP, fmt::format("write zeroes {}: buffer registration failed and the kernel "
                                                          "lacks IORING_OP_WRITE (Linux 5.6+)",
                                                          req_.path));
        }
    }

    t_.init_ops(depth);
    unsigned queued = 0;    // prepared, not yet taken by the kernel
    unsigned inflight = 0;  // taken by the kernel, not yet completed
    int ring_errno = 0;     // the ring itself failed: nothing more can be reaped

    for (;;) {
        std::optional<nanoseconds> token_wait;
        while (auto index = t_.next(&token_wait)) {
            prep(r, *index);
        }
        queued = io_uring_sq_ready(r);
        if (queued > 0) {
            int rc = detail::submit(r);
            if (rc < 0) {
                // What is still queued never reaches the kernel; what was taken is reaped below.
                ring_errno = -rc;
                t_.stop();
            } else {
                inflight += static_cast<unsigned>(rc);
                queued -= static_cast<unsigned>(rc);
            }
        }
        if (inflight == 0) {
            if (queued > 0 && ring_errno == 0) {
                ring_errno = EBUSY;  // the kernel refused work with nothing in flight: no progress possible
                t_.stop();
            }
            if (t_.stopping() || t_.all_handed_out()) {
                break;
            }
            if (token_wait) {
                detail::sleep_slice(*token_wait);  // then asks the caller: see rate_wait_slice
                t_.report_progress();
            }
            continue;
        }
        const auto timeout = detail::reap_timeout(token_wait, !t_.stopping());
        int rc = detail::wait_one(r, timeout);
        if (rc < 0 && rc != -ETIME) {
            ring_errno = -rc;  // cannot reap: io_uring_queue_exit cancels and waits for the rest
            t_.stop();
            break;
        }
        inflight -= detail::drain_ready(r, [&](const io_uring_cqe& cqe) {
            const auto index = static_cast<unsigned>(io_uring_cqe_get_data64(&cqe));
            if (t_.complete(index, cqe.res)) {
                prep(r, index);  // the rest of a short write
            }
        });
        if (t_.has_news() || token_wait) {
            t_.report_progress();
        }
    }
    return t_.finish(out, ring_errno, "io_uring");
}

}  // namespace

namespace detail {

std::uint64_t zero_tracker::contiguous_done() {
    while (complete_above_.erase(low_) != 0) {
        ++low_;
    }
    if (low_ >= chunks_) {
        return req_.length;
    }
    const std::uint64_t start = chunk_start(low_);
    std::uint64_t prefix_end = start;
    if (lowest_abandoned_ && *lowest_abandoned_ >= start && *lowest_abandoned_ < start + chunk_length(low_)) {
        prefix_end = *lowest_abandoned_;
    }
    for (const write_op& op : ops_) {
        if (op.live && op.chunk == low_) {
            prefix_end = std::max(prefix_end, op.offset);
        }
    }
    return prefix_end - req_.offset;
}

result<io_outcome> zero_tracker::finish(io_outcome& out, int engine_errno, const char* engine_name) {
    out.commands = commands_;
    out.bytes_done = contiguous_done();
    if (failure_) {
        return make_error_range("write zeroes", req_.path, failure_->offset, failure_->length, failure_->errnum);
    }
    if (engine_errno != 0) {
        const std::uint64_t at = req_.offset + out.bytes_done;
        return make_error_msg(engine_errno, fmt::format("write zeroes {} [offset {}, length {}]: {}: {}", req_.path, at,
                                                        req_.length - out.bytes_done, engine_name,
                                                        errno_text(engine_errno)));
    }
    if (cancelled_) {
        return make_error_msg(ECANCELED, fmt::format("write zeroes {} [offset {}, length {}]: cancelled after {} bytes",
                                                     req_.path, req_.offset, req_.length, out.bytes_done));
    }
    return out;
}

}  // namespace detail

result<io_outcome> uring_engine::write_zeroes(const zero_write_request& req, const progress_fn& progress,
                                              const rate_limit& rate, io_outcome& out) {
    out.engine = io_engine::io_uring;
    int setup_errno = 0;
    unsigned depth = 0;
    auto r = uring_zero_writer(req, progress, rate).run(out, setup_errno, depth);
    if (setup_errno != 0 && fall_back_to_psync(setup_errno, fmt::format("io_uring setup ({} entries)", depth))) {
        // Chosen automatically and refused for good: nothing was written, psync takes it all.
        out = io_outcome{};
        return engine_for(io_engine::psync).write_zeroes(req, progress, rate, out);
    }
    return r;
}

engine& engine_for(io_engine e) {
    static uring_engine uring;
    static psync_engine psync;
    return e == io_engine::psync ? static_cast<engine&>(psync) : static_cast<engine&>(uring);
}

result<io_outcome> write_zeroes(const zero_write_request& req, const progress_fn& progress, const rate_limit& rate,
                                io_outcome* partial) {
    io_outcome out;
    auto finish = [&](result<io_outcome> r) {
        if (partial != nullptr) {
            *partial = out;
        }
        return r;
    };
    auto invalid = [&](std::string_view why) {
        return finish(make_error_msg(EINVAL, fmt::format("write zeroes {} [offset {}, length {}]: {} ({})", req.path,
                                                         req.offset, req.length, errno_text(EINVAL), why)));
    };
    if (req.fd < 0) {
        return finish(make_error_range("write zeroes", req.path, req.offset, req.length, EBADF));
    }
    if (req.chunk_bytes == 0 || req.queue_depth == 0) {
        return invalid("chunk size and queue depth must be at least 1");
    }
    constexpr auto max_off = static_cast<std::uint64_t>(std::numeric_limits<off_t>::max());
    if (req.offset > max_off || req.length > max_off - req.offset) {
        return invalid("range ends beyond the largest file offset");
    }
    if (req.direct) {
        const std::uint32_t align = direct_offset_align(req.fd);
        if (req.offset % align != 0 || req.length % align != 0 || req.chunk_bytes % align != 0) {
            return invalid(fmt::format("O_DIRECT needs offset, length and chunk size ({}) aligned to {} bytes",
                                       req.chunk_bytes, align));
        }
    }
    if (req.length == 0) {
        return finish(out);
    }
    return finish(engine_for(current_io_engine().engine).write_zeroes(req, progress, rate, out));
}

}  // namespace wz::io

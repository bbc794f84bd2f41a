// SPDX-License-Identifier: MIT
// Data zeroing: one shared zero buffer written at queue depth through io_uring.
#include "io/engine.hpp"

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
#include <thread>
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

using std::chrono::nanoseconds;
using steady = std::chrono::steady_clock;

// Charged before each submission. Starts empty so that the average from the very start
// holds (a full bucket would let the first chunk through free); holds at most one chunk so
// that idle time does not turn into a burst.
class token_bucket {
public:
    token_bucket(std::uint64_t bytes_per_second, std::uint64_t capacity_bytes)
        : rate_(static_cast<double>(bytes_per_second)), capacity_(static_cast<double>(capacity_bytes)),
          last_(steady::now()) {}

    // nullopt when `bytes` were taken; else how long until they will be there.
    std::optional<nanoseconds> take(std::uint64_t bytes) {
        if (rate_ <= 0) {
            return std::nullopt;
        }
        const auto now = steady::now();
        const double elapsed_s = std::chrono::duration<double>(now - last_).count();
        last_ = now;
        tokens_ = std::min(capacity_, tokens_ + elapsed_s * rate_);
        const auto need = static_cast<double>(bytes);
        if (tokens_ >= need) {
            tokens_ -= need;
            return std::nullopt;
        }
        const double wait_ns = std::ceil((need - tokens_) / rate_ * 1e9);
        return nanoseconds(std::max<std::int64_t>(static_cast<std::int64_t>(wait_ns), 1000));
    }

private:
    double rate_;
    double capacity_;
    double tokens_ = 0;
    steady::time_point last_;
};

// Longest sleep between looks at the caller's cancel while the rate limit holds writes back:
// the wait for one chunk can be days (1 MiB at --rate 1 is 12 days), and a SIGINT must end
// the run at once, not after it.
constexpr nanoseconds rate_wait_slice = std::chrono::milliseconds(50);

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

struct write_op {
    std::uint64_t chunk = 0;      // index of the chunk this write belongs to
    std::uint64_t offset = 0;     // absolute file offset of what is left of the chunk
    std::uint64_t remaining = 0;  // bytes left (short writes shrink it)
    bool live = false;            // submitted or queued, not yet finished with
};

// Beyond a few thousand writes in flight nothing is gained for zeroing; the ring and the op
// table would only grow (the kernel's own cap is 32768 entries).
constexpr unsigned max_queue_depth = 4096;

class zero_writer {
public:
    zero_writer(const zero_write_request& req, const progress_fn& progress, const rate_limit& rate)
        : req_(req), progress_(progress), bucket_(rate.bytes_per_second, req.chunk_bytes),
          chunks_((req.length + req.chunk_bytes - 1) / req.chunk_bytes) {}

    result<io_outcome> run(io_outcome& out);

private:
    [[nodiscard]] std::uint64_t chunk_start(std::uint64_t chunk) const { return req_.offset + chunk * req_.chunk_bytes; }
    [[nodiscard]] std::uint64_t chunk_length(std::uint64_t chunk) const {
        return std::min<std::uint64_t>(req_.chunk_bytes, req_.offset + req_.length - chunk_start(chunk));
    }
    void prep(io_uring* r, unsigned index);
    void complete(io_uring* r, const io_uring_cqe& cqe);
    void abandon(const write_op& op, int errnum);
    void release(unsigned index) {
        ops_[index].live = false;
        free_ops_.push_back(index);
    }
    [[nodiscard]] std::uint64_t contiguous_done();
    // Reports newly completed bytes (possibly none) and stops the run if the caller cancels.
    void report_progress();

    const zero_write_request& req_;
    const progress_fn& progress_;
    token_bucket bucket_;
    const std::uint64_t chunks_;

    std::optional<zero_buffer> buffer_;
    bool fixed_ = false;
    std::vector<write_op> ops_;
    std::vector<unsigned> free_ops_;
    std::uint64_t commands_ = 0;
    std::uint64_t newly_done_ = 0;  // bytes completed since the last progress call

    // bytes_done bookkeeping. Chunks are issued in order; `low_` is the first chunk not known
    // complete, `complete_above_` those above it that are. A chunk's written part is always a
    // prefix (short writes resubmit the rest), so the exact contiguous count is
    // chunk_start(low_) + the prefix of chunk low_, taken from its in-flight op or from
    // where it was abandoned.
    std::uint64_t low_ = 0;
    std::set<std::uint64_t> complete_above_;
    std::optional<std::uint64_t> lowest_abandoned_;  // absolute offset

    // The lowest failing range wins: it is the one that bounds bytes_done.
    struct failure {
        std::uint64_t offset, length;
        int errnum;
    };
    std::optional<failure> failure_;
    bool stop_ = false;
    bool cancelled_ = false;
};

void zero_writer::prep(io_uring* r, unsigned index) {
    const write_op& op = ops_[index];
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
    ++commands_;
}

void zero_writer::abandon(const write_op& op, int errnum) {
    if (!lowest_abandoned_ || op.offset < *lowest_abandoned_) {
        lowest_abandoned_ = op.offset;
    }
    if (errnum != 0 && (!failure_ || op.offset < failure_->offset)) {
        failure_ = failure{op.offset, op.remaining, errnum};
    }
}

// Returns with the op either resubmitted (short write) or back on the free list.
void zero_writer::complete(io_uring* r, const io_uring_cqe& cqe) {
    const auto index = static_cast<unsigned>(io_uring_cqe_get_data64(&cqe));
    write_op& op = ops_[index];
    if (cqe.res <= 0) {
        // A zero-byte write of a non-empty range would be resubmitted forever: call it EIO.
        abandon(op, cqe.res == 0 ? EIO : -cqe.res);
        stop_ = true;
        release(index);
        return;
    }
    const auto written = static_cast<std::uint64_t>(cqe.res);
    newly_done_ += written;
    op.offset += written;
    op.remaining -= written;
    if (op.remaining == 0) {
        complete_above_.insert(op.chunk);
        release(index);
    } else if (stop_) {
        abandon(op, 0);
        release(index);
    } else {
        prep(r, index);
    }
}

void zero_writer::report_progress() {
    if (progress_ && !cancelled_ && !progress_(newly_done_)) {
        cancelled_ = true;
        stop_ = true;
    }
    newly_done_ = 0;
}

std::uint64_t zero_writer::contiguous_done() {
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

result<io_outcome> zero_writer::run(io_outcome& out) {
    const unsigned depth =
        static_cast<unsigned>(std::min<std::uint64_t>({req_.queue_depth, max_queue_depth, chunks_}));
    detail::ring ring;
    if (int rc = ring.init(depth, 0); rc < 0) {
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

    ops_.resize(depth);
    for (unsigned i = depth; i-- > 0;) {
        free_ops_.push_back(i);
    }
    std::uint64_t next_chunk = 0;
    unsigned queued = 0;    // prepared, not yet taken by the kernel
    unsigned inflight = 0;  // taken by the kernel, not yet completed
    int ring_errno = 0;     // the ring itself failed: nothing more can be reaped

    for (;;) {
        std::optional<nanoseconds> token_wait;
        while (!stop_ && next_chunk < chunks_ && !free_ops_.empty()) {
            const std::uint64_t len = chunk_length(next_chunk);
            if ((token_wait = bucket_.take(len))) {
                break;
            }
            const unsigned index = free_ops_.back();
            free_ops_.pop_back();
            ops_[index] = write_op{next_chunk, chunk_start(next_chunk), len, true};
            prep(r, index);
            ++next_chunk;
        }
        queued = io_uring_sq_ready(r);
        if (queued > 0) {
            int rc = detail::submit(r);
            if (rc < 0) {
                // What is still queued never reaches the kernel; what was taken is reaped below.
                ring_errno = -rc;
                stop_ = true;
            } else {
                inflight += static_cast<unsigned>(rc);
                queued -= static_cast<unsigned>(rc);
            }
        }
        if (inflight == 0) {
            if (queued > 0 && ring_errno == 0) {
                ring_errno = EBUSY;  // the kernel refused work with nothing in flight: no progress possible
                stop_ = true;
            }
            if (stop_ || next_chunk >= chunks_) {
                break;
            }
            if (token_wait) {
                // In slices, asking the caller in between: see rate_wait_slice.
                std::this_thread::sleep_for(std::min(*token_wait, rate_wait_slice));
                report_progress();
            }
            continue;
        }
        std::optional<nanoseconds> timeout;
        if (!stop_ && token_wait) {
            timeout = std::min(*token_wait, rate_wait_slice);
        }
        int rc = detail::wait_one(r, timeout);
        if (rc < 0 && rc != -ETIME) {
            ring_errno = -rc;  // cannot reap: io_uring_queue_exit cancels and waits for the rest
            stop_ = true;
            break;
        }
        inflight -= detail::drain_ready(r, [&](const io_uring_cqe& cqe) { complete(r, cqe); });
        if (newly_done_ > 0 || token_wait) {
            report_progress();
        }
    }

    out.commands = commands_;
    out.bytes_done = contiguous_done();
    if (failure_) {
        return make_error_range("write zeroes", req_.path, failure_->offset, failure_->length, failure_->errnum);
    }
    if (ring_errno != 0) {
        const std::uint64_t at = req_.offset + out.bytes_done;
        return make_error_msg(ring_errno, fmt::format("write zeroes {} [offset {}, length {}]: io_uring: {}", req_.path,
                                                      at, req_.length - out.bytes_done, errno_text(ring_errno)));
    }
    if (cancelled_) {
        return make_error_msg(ECANCELED, fmt::format("write zeroes {} [offset {}, length {}]: cancelled after {} bytes",
                                                     req_.path, req_.offset, req_.length, out.bytes_done));
    }
    return out;
}

}  // namespace

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
    zero_writer writer(req, progress, rate);
    return finish(writer.run(out));
}

}  // namespace wz::io

// SPDX-License-Identifier: MIT
// The psync engine's data writes: the io_uring engine's bookkeeping (zero_tracker), with a
// small pool of threads doing pwrite in place of the ring. For where io_uring cannot be set
// up (kernel.io_uring_disabled, a container's seccomp profile, too few descriptors).
#include "io/engine_impl.hpp"
#include "io/worker_pool.hpp"
#include "util/errors.hpp"

#include <unistd.h>

#include <fmt/format.h>

#include <cerrno>
#include <new>
#include <vector>

namespace wz::io {

result<io_outcome> psync_engine::write_zeroes(const zero_write_request& req, const progress_fn& progress,
                                              const rate_limit& rate, io_outcome& out) {
    out.engine = io_engine::psync;
    out.fixed_buffer = false;
    detail::zero_tracker t(req, progress, rate);
    std::optional<zero_buffer> buffer;
    try {
        buffer.emplace(std::min<std::uint64_t>(req.chunk_bytes, req.length));
    } catch (const std::bad_alloc&) {
        return make_error_msg(ENOMEM, fmt::format("write zeroes {}: zero buffer of {} bytes: {}", req.path,
                                                  req.chunk_bytes, errno_text(ENOMEM)));
    }
    // Declared after the buffer: the workers are joined before it is unmapped.
    const unsigned depth = t.depth(detail::psync_zero_depth);
    worker_pool pool(depth, fmt::format("write zeroes {} [offset {}, length {}]", req.path, req.offset, req.length));
    if (auto s = pool.start(depth); !s.ok()) {
        return s.error();
    }
    t.init_ops(pool.threads());

    const int fd = req.fd;
    const void* src = buffer->data();
    auto submit = [&](unsigned index) {
        const detail::write_op& op = t.op(index);
        const auto len = static_cast<std::size_t>(op.remaining);
        const auto off = static_cast<off_t>(op.offset);
        // Cannot fail: every write has its thread, started above.
        (void)pool.submit(index, [fd, src, len, off]() -> std::int64_t {  // wz: ignored-result (see above)
            for (;;) {
                const ssize_t n = ::pwrite(fd, src, len, off);
                if (n >= 0) {
                    return n;
                }
                if (errno != EINTR) {
                    return -errno;
                }
            }
        });
        t.issued();
    };

    unsigned inflight = 0;  // handed to the pool, not yet completed
    std::vector<worker_pool::completion> done;
    for (;;) {
        std::optional<detail::nanoseconds> token_wait;
        while (auto index = t.next(&token_wait)) {
            submit(*index);
            ++inflight;
        }
        if (inflight == 0) {
            if (t.stopping() || t.all_handed_out()) {
                break;
            }
            if (token_wait) {
                detail::sleep_slice(*token_wait);  // then asks the caller: see rate_wait_slice
                t.report_progress();
            }
            continue;
        }
        const auto timeout = detail::reap_timeout(token_wait, !t.stopping());
        done.clear();
        (void)pool.wait(timeout, done);  // wz: ignored-result (a timeout leaves `done` empty)
        for (const auto& c : done) {
            --inflight;
            const auto index = static_cast<unsigned>(c.tag);
            if (t.complete(index, c.result)) {
                submit(index);  // the rest of a short write
                ++inflight;
            }
        }
        if (t.has_news() || token_wait) {
            t.report_progress();
        }
    }
    pool.stop();
    return t.finish(out, 0, "psync");
}

}  // namespace wz::io

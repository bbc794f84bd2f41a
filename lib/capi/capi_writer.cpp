// SPDX-License-Identifier: MIT
// The durable writer behind an opaque C handle.

#include "capi/capi_internal.hpp"
#include "util/reopen.hpp"

#include <cstddef>
#include <deque>
#include <limits>
#include <optional>
#include <vector>

struct wz_writer {
    explicit wz_writer(wz::writer w) : writer(std::move(w)) {}
    wz::writer writer;
    std::string path;
    // wz_writer_mode()'s reason: a copy, so a refresh() on another call cannot free it
    // under the caller before its next call on this handle.
    mutable std::string reason;
    // Completions the C++ complete() returned beyond what the caller's array could take:
    // handed out first by the next wz_writer_complete(), before it waits again.
    std::deque<wz::writer_completion> pending;
};

namespace {

using wz::capi::fail;

// The smallest size a caller may pass: the struct as 0.2.0 released it. Literal, so that a
// member appended later (at the end, docs/abi.md) leaves it where callers built against 0.2.0
// need it.
constexpr std::size_t writer_opts_first_size = 40;
static_assert(sizeof(wz_writer_opts) >= writer_opts_first_size);
// struct wz_writer_counters as the first header that had it (0.2) declared it: up to p999_us.
constexpr std::size_t counters_first_size = offsetof(wz_writer_counters, cache_rereads);
constexpr std::uint32_t known_writer_flags = WZ_WRITER_ALLOW_UNSAFE_THROUGH | WZ_WRITER_FORCE;

static_assert(WZ_DURABILITY_AUTO == static_cast<int>(wz::durability_mode::automatic) &&
              WZ_DURABILITY_THROUGH == static_cast<int>(wz::durability_mode::through) &&
              WZ_DURABILITY_FUA == static_cast<int>(wz::durability_mode::fua) &&
              WZ_DURABILITY_FLUSH == static_cast<int>(wz::durability_mode::flush) &&
              WZ_DURABILITY_DSYNC == static_cast<int>(wz::durability_mode::dsync));
static_assert(WZ_COMPLETION_INTERRUPT == static_cast<int>(wz::completion_mode::interrupt) &&
              WZ_COMPLETION_POLL == static_cast<int>(wz::completion_mode::poll) &&
              WZ_COMPLETION_ADAPTIVE == static_cast<int>(wz::completion_mode::adaptive));

// wz_writer_opts to writer_options; 0 fields keep the C++ defaults. Returns 0 or -errno.
int to_options(const wz_writer_opts* in, const std::string& operation, wz::writer_options& out) {
    wz_writer_opts o;
    if (const int rc = wz::capi::copy_struct_in(o, in, writer_opts_first_size, operation.c_str(), "wz_writer_opts");
        rc < 0) {
        return rc;
    }
    if ((o.flags & ~known_writer_flags) != 0) {
        return fail(EINVAL, operation + ": unknown wz_writer_opts.flags bits " + std::to_string(o.flags & ~known_writer_flags));
    }
    if (o.reserved != 0) {
        return fail(EINVAL, operation + ": wz_writer_opts.reserved must be 0");
    }
    if (o.mode < WZ_DURABILITY_AUTO || o.mode > WZ_DURABILITY_DSYNC) {
        return fail(EINVAL, operation + ": wz_writer_opts.mode " + std::to_string(o.mode) + " is no enum wz_durability");
    }
    if (o.completion < WZ_COMPLETION_INTERRUPT || o.completion > WZ_COMPLETION_ADAPTIVE) {
        return fail(EINVAL, operation + ": wz_writer_opts.completion " + std::to_string(o.completion) +
                                " is no enum wz_completion_mode");
    }
    out = wz::writer_options{};
    out.mode = static_cast<wz::durability_mode>(o.mode);
    out.allow_unsafe_through = (o.flags & WZ_WRITER_ALLOW_UNSAFE_THROUGH) != 0;
    out.force = (o.flags & WZ_WRITER_FORCE) != 0;
    if (o.queue_depth != 0) {
        out.queue_depth = o.queue_depth;
    }
    out.completion.mode = static_cast<wz::completion_mode>(o.completion);
    if (o.high_watermark != 0) {
        out.completion.high_watermark = o.high_watermark;
    }
    if (o.low_watermark != 0) {
        out.completion.low_watermark = o.low_watermark;
    }
    if (o.interval_us != 0) {
        out.completion.interval = std::chrono::microseconds(o.interval_us);
    }
    if (o.max_loops != 0) {
        out.completion.max_loops = o.max_loops;
    }
    return 0;
}

int finish_open(wz::result<wz::writer> w, std::string path, wz_writer** out) {
    if (!w) {
        return fail(w.error());
    }
    auto* h = new wz_writer(std::move(*w));
    h->path = std::move(path);
    *out = h;
    return 0;
}

int null_handle(const char* operation) { return fail(EINVAL, std::string(operation) + ": writer is NULL"); }

std::int64_t to_c_result(const wz::writer_completion& c) {
    if (c.error) {
        const int code = c.error->code.value();
        return -static_cast<std::int64_t>(code > 0 ? code : EIO);
    }
    return static_cast<std::int64_t>(c.bytes);
}

}  // namespace

extern "C" {

int wz_writer_open(const char* path, uint64_t offset, uint64_t length, const struct wz_writer_opts* opts,
                   struct wz_writer** out) {
    return wz::capi::guarded("wz_writer_open", [&]() -> int {
        if (out == nullptr) {
            return fail(EINVAL, std::string("wz_writer_open ") + (path != nullptr ? path : "(null)") + ": out is NULL");
        }
        *out = nullptr;
        if (path == nullptr) {
            return fail(EINVAL, "wz_writer_open: path is NULL");
        }
        wz::writer_options o;
        if (const int rc = to_options(opts, std::string("wz_writer_open ") + path, o); rc < 0) {
            return rc;
        }
        return finish_open(wz::writer::open(path, offset, length, o), path, out);
    });
}

int wz_writer_open_fd(int fd, uint64_t offset, uint64_t length, const struct wz_writer_opts* opts,
                      struct wz_writer** out) {
    return wz::capi::guarded("wz_writer_open_fd", [&]() -> int {
        const std::string path = wz::self_fd_name(fd);
        if (out == nullptr) {
            return fail(EINVAL, "wz_writer_open_fd " + path + ": out is NULL");
        }
        *out = nullptr;
        if (fd < 0) {
            return fail(EBADF, "wz_writer_open_fd: fd " + std::to_string(fd) + " is not a descriptor");
        }
        wz::writer_options o;
        if (const int rc = to_options(opts, "wz_writer_open_fd " + path, o); rc < 0) {
            return rc;
        }
        return finish_open(wz::writer::open(fd, path, offset, length, o), path, out);
    });
}

ssize_t wz_writer_pwrite(struct wz_writer* w, const void* buf, size_t len, uint64_t offset) {
    return wz::capi::guarded("wz_writer_pwrite", [&]() -> ssize_t {
        if (w == nullptr) {
            return null_handle("wz_writer_pwrite");
        }
        if (len > static_cast<std::size_t>(std::numeric_limits<ssize_t>::max())) {
            return fail(EINVAL, "wz_writer_pwrite " + w->path + ": length " + std::to_string(len) + " exceeds SSIZE_MAX");
        }
        auto r = w->writer.pwrite(buf, len, offset);
        if (!r) {
            return fail(r.error());
        }
        return static_cast<ssize_t>(*r);
    });
}

ssize_t wz_writer_pwritev(struct wz_writer* w, const struct iovec* iov, int iovcnt, uint64_t offset) {
    return wz::capi::guarded("wz_writer_pwritev", [&]() -> ssize_t {
        if (w == nullptr) {
            return null_handle("wz_writer_pwritev");
        }
        if (iov == nullptr && iovcnt != 0) {
            return fail(EINVAL, "wz_writer_pwritev " + w->path + ": iov is NULL");
        }
        auto r = w->writer.pwritev(iov, iovcnt, offset);
        if (!r) {
            return fail(r.error());
        }
        return static_cast<ssize_t>(*r);
    });
}

int wz_writer_submit(struct wz_writer* w, const void* buf, size_t len, uint64_t offset, uint64_t user_data) {
    return wz::capi::guarded("wz_writer_submit", [&]() -> int {
        if (w == nullptr) {
            return null_handle("wz_writer_submit");
        }
        if (auto s = w->writer.submit(buf, len, offset, user_data); !s.ok()) {
            return fail(s.error());
        }
        return 0;
    });
}

int wz_writer_complete(struct wz_writer* w, struct wz_completion* out, unsigned max, unsigned min_complete) {
    return wz::capi::guarded("wz_writer_complete", [&]() -> int {
        if (w == nullptr) {
            return null_handle("wz_writer_complete");
        }
        if (out == nullptr && max != 0) {
            return fail(EINVAL, "wz_writer_complete " + w->path + ": out is NULL");
        }
        if (max > static_cast<unsigned>(std::numeric_limits<int>::max())) {
            return fail(EINVAL, "wz_writer_complete " + w->path + ": max " + std::to_string(max) + " exceeds INT_MAX");
        }
        // Already finished writes count towards min_complete; wait only for the rest.
        const std::size_t total = w->pending.size() + w->writer.in_flight();
        const std::size_t want = std::min<std::size_t>(min_complete, total);
        if (w->pending.size() < want) {
            std::vector<wz::writer_completion> done;
            auto r = w->writer.complete(done, want - w->pending.size());
            for (auto& c : done) {
                w->pending.push_back(std::move(c));
            }
            if (!r) {
                return fail(r.error());
            }
        }
        unsigned n = 0;
        bool failed_seen = false;
        while (n < max && !w->pending.empty()) {
            const wz::writer_completion& c = w->pending.front();
            if (c.error && !failed_seen) {
                // The write's own message (path, range) for the caller who looks at a failure.
                wz::capi::set_last_error(*c.error);
                failed_seen = true;
            }
            out[n].user_data = c.user_data;
            out[n].result = to_c_result(c);
            w->pending.pop_front();
            ++n;
        }
        return static_cast<int>(n);
    });
}

unsigned wz_writer_in_flight(const struct wz_writer* w) {
    if (w == nullptr) {
        return 0;
    }
    const std::size_t n = w->pending.size() + w->writer.in_flight();
    return static_cast<unsigned>(std::min<std::size_t>(n, std::numeric_limits<unsigned>::max()));
}

int wz_writer_mode(const struct wz_writer* w, const char** reason) {
    return wz::capi::guarded("wz_writer_mode", [&]() -> int {
        if (w == nullptr) {
            return null_handle("wz_writer_mode");
        }
        if (reason != nullptr) {
            w->reason = w->writer.reason();
            *reason = w->reason.c_str();
        }
        return static_cast<int>(w->writer.mode());
    });
}

uint32_t wz_writer_alignment(const struct wz_writer* w) {
    if (w == nullptr) {
        wz::capi::set_last_error("wz_writer_alignment: writer is NULL");
        return 0;
    }
    return w->writer.alignment();
}

int wz_writer_stats(const struct wz_writer* w, struct wz_writer_counters* stats) {
    return wz::capi::guarded("wz_writer_stats", [&]() -> int {
        if (w == nullptr) {
            return null_handle("wz_writer_stats");
        }
        std::uint32_t caller_size = 0;
        if (const int rc = wz::capi::check_struct_out(stats, sizeof(wz_writer_counters), counters_first_size, ("wz_writer_stats " + w->path).c_str(),
                                                       "wz_writer_counters", &caller_size);
            rc < 0) {
            return rc;
        }
        const wz::writer_stats s = w->writer.stats();
        wz_writer_counters c{};
        c.size = sizeof c;
        c.writes = s.writes;
        c.bytes = s.bytes;
        c.fua_writes = s.fua_writes;
        c.flushes = s.flushes;
        c.p50_us = s.p50_us;
        c.p99_us = s.p99_us;
        c.p999_us = s.p999_us;
        c.cache_rereads = s.cache_rereads;
        c.mode_changes = s.mode_changes;
        c.dsync_writes = s.dsync_writes;
        wz::capi::fill_struct_out(stats, caller_size, &c, sizeof c);
        return 0;
    });
}

int wz_writer_refresh(struct wz_writer* w) {
    return wz::capi::guarded("wz_writer_refresh", [&]() -> int {
        if (w == nullptr) {
            return null_handle("wz_writer_refresh");
        }
        if (auto s = w->writer.refresh(); !s.ok()) {
            return fail(s.error());
        }
        return 0;
    });
}

int wz_writer_close(struct wz_writer* w) {
    if (w == nullptr) {
        return 0;
    }
    const int rc = wz::capi::guarded("wz_writer_close", [&]() -> int {
        if (auto s = w->writer.close(); !s.ok()) {
            return fail(s.error());
        }
        // A failed write completed but never handed back: the caller has not seen it yet.
        for (const auto& c : w->pending) {
            if (c.error) {
                return fail(*c.error);
            }
        }
        return 0;
    });
    // Freed whatever close() said: the caller must not touch W again.
    delete w;
    return rc;
}

}  // extern "C"

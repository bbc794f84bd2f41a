// SPDX-License-Identifier: MIT
// The process's I/O engine: chosen once, at first use (select_io_engine, WZERO_ENGINE, or a
// probe ring), moved to psync at most once when a later ring setup is refused.
#include "io/engine_select.hpp"

#include "io/ring.hpp"
#include "util/errors.hpp"

#include <liburing.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <memory>
#include <mutex>

namespace wz {

namespace io {
namespace {

struct engine_state {
    std::mutex mutex;
    std::optional<io_engine_request> requested;  // by select_io_engine()
    std::string requested_by = "select_io_engine()";
    std::optional<io_engine_info> chosen;
    bool automatic = false;  // the choice was made by probing, so it may fall back
    // chosen->engine, readable without the mutex (current_engine_kind); -1: none yet.
    std::atomic<int> kind{-1};

    // Every change of the choice goes through here, so that `kind` follows it.
    void choose(std::optional<io_engine_info> e) {
        chosen = std::move(e);
        kind.store(chosen ? static_cast<int>(chosen->engine) : -1, std::memory_order_release);
    }
};

engine_state& state() {
    static engine_state s;
    return s;
}

// Why a setup failed, in the words an operator can act on.
std::string setup_hint(int errnum) {
    if (errnum == EPERM || errnum == EACCES) {
        std::ifstream in("/proc/sys/kernel/io_uring_disabled");
        int disabled = 0;
        if (in >> disabled && disabled != 0) {
            return fmt::format(" (kernel.io_uring_disabled={})", disabled);
        }
        return " (a seccomp profile, e.g. a container's default, or an LSM refuses io_uring)";
    }
    if (errnum == ENOSYS) {
        return " (the kernel has no io_uring)";
    }
    if (errnum == EMFILE || errnum == ENFILE) {
        return " (no descriptor left for the ring)";
    }
    if (errnum == ENOMEM) {
        return " (RLIMIT_MEMLOCK too small for the ring on this kernel, or no memory)";
    }
    return "";
}

bool permanent_refusal(int errnum) {
    return errnum == EPERM || errnum == EACCES || errnum == ENOSYS || errnum == EMFILE || errnum == ENFILE ||
           errnum == ENOMEM;
}

// Called with the mutex held.
io_engine_info decide(engine_state& s) {
    std::optional<io_engine_request> req = s.requested;
    std::string source = s.requested_by;
    std::string env_note;
    if (!req) {
        if (const char* env = std::getenv("WZERO_ENGINE"); env != nullptr && *env != '\0') {
            req = parse_engine_request(env);
            source = fmt::format("WZERO_ENGINE={}", env);
            if (!req) {
                env_note = fmt::format("; WZERO_ENGINE={} not understood (io_uring, psync or auto)", env);
            }
        }
    }
    if (req == io_engine_request::io_uring) {
        return io_engine_info{io_engine::io_uring, fmt::format("forced ({})", source), true};
    }
    if (req == io_engine_request::psync) {
        return io_engine_info{io_engine::psync, fmt::format("forced ({})", source), true};
    }
    s.automatic = true;
    if (auto why = probe_io_uring()) {
        return io_engine_info{io_engine::psync, *why + env_note, false};
    }
    return io_engine_info{io_engine::io_uring, "io_uring set up" + env_note, false};
}

}  // namespace

std::optional<io_engine_request> parse_engine_request(std::string_view text) {
    if (text == "io_uring") {
        return io_engine_request::io_uring;
    }
    if (text == "psync") {
        return io_engine_request::psync;
    }
    if (text == "auto" || text.empty()) {
        return io_engine_request::automatic;
    }
    return std::nullopt;
}

std::optional<std::string> probe_io_uring() {
    detail::ring r;
    if (int rc = r.init(2, 0); rc < 0) {
        return fmt::format("io_uring setup: {}{}", errno_text(-rc), setup_hint(-rc));
    }
    // Data writes need IORING_OP_WRITE (5.6) when the zero buffer cannot be registered, and the
    // writer needs it always.
    std::unique_ptr<io_uring_probe, detail::probe_deleter> probe(io_uring_get_probe_ring(r.get()));
    if (!probe || io_uring_opcode_supported(probe.get(), IORING_OP_WRITE) == 0) {
        return std::string("io_uring lacks IORING_OP_WRITE (Linux 5.6+)");
    }
    return std::nullopt;
}

bool fall_back_to_psync(int errnum, std::string_view what) {
    engine_state& s = state();
    std::lock_guard lock(s.mutex);
    if (!s.chosen) {
        s.choose(decide(s));
    }
    if (s.chosen->engine == io_engine::psync) {
        return true;  // another thread moved first
    }
    if (!s.automatic || !permanent_refusal(errnum)) {
        return false;
    }
    s.choose(io_engine_info{io_engine::psync,
                            fmt::format("{}: {}{}; psync from then on", what, errno_text(errnum), setup_hint(errnum)),
                            false});
    return true;
}

void reset_engine_for_testing() {
    engine_state& s = state();
    std::lock_guard lock(s.mutex);
    s.requested.reset();
    s.requested_by = "select_io_engine()";
    s.choose(std::nullopt);
    s.automatic = false;
}

}  // namespace io

status select_io_engine(io_engine_request request, std::string_view requested_by) {
    return io::select_engine(request, requested_by);
}

status io::select_engine(io_engine_request request, std::string_view source) {
    io::engine_state& s = io::state();
    std::lock_guard lock(s.mutex);
    if (s.chosen) {
        const bool same = request == io_engine_request::automatic ||
                          (request == io_engine_request::io_uring && s.chosen->engine == io_engine::io_uring) ||
                          (request == io_engine_request::psync && s.chosen->engine == io_engine::psync);
        if (same) {
            return {};
        }
        return make_error_msg(EBUSY, fmt::format("select I/O engine: {} was chosen already ({})",
                                                 to_string(s.chosen->engine), s.chosen->reason));
    }
    s.requested = request;
    s.requested_by = source;
    s.choose(io::decide(s));
    return {};
}

io_engine_info current_io_engine() {
    io::engine_state& s = io::state();
    std::lock_guard lock(s.mutex);
    if (!s.chosen) {
        s.choose(io::decide(s));
    }
    return *s.chosen;
}

io_engine io::current_engine_kind() {
    const int k = io::state().kind.load(std::memory_order_acquire);
    return k >= 0 ? static_cast<io_engine>(k) : current_io_engine().engine;
}

}  // namespace wz

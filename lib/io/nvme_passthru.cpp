// SPDX-License-Identifier: MIT
// NVMe Write Zeroes and Flush through the namespace's generic char device: io_uring
// uring_cmd at queue depth (Linux 5.19+), else the passthrough ioctl one command at a time.
#include "io/engine.hpp"

#include "io/engine_impl.hpp"
#include "io/engine_select.hpp"
#include "io/nvme_cmd.hpp"
#include "io/ring.hpp"
#include "io/worker_pool.hpp"
#include "util/errors.hpp"
#include "util/nvme_status.hpp"

#include <linux/nvme_ioctl.h>
#include <sys/ioctl.h>

#include <fmt/format.h>

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>
#include <vector>

namespace wz::io {

const char* to_string(passthrough_path p) noexcept {
    switch (p) {
    case passthrough_path::uring_cmd:
        return "uring_cmd";
    case passthrough_path::ioctl:
        return "ioctl";
    }
    return "?";
}

namespace {

using detail::command_words;
using detail::ioctl_command;
using detail::prep_uring_command;

command_words write_zeroes_words(const nvme_target& t, const nvme_zero_cmd& c) {
    command_words w;
    w.opcode = detail::opcode_write_zeroes;
    w.nsid = t.nsid;
    w.cdw10 = static_cast<std::uint32_t>(c.slba);
    w.cdw11 = static_cast<std::uint32_t>(c.slba >> 32);
    w.cdw12 = (c.nlb - 1) | (c.deac ? detail::cdw12_deac : 0);
    return w;
}

std::string describe(int rc) {
    return rc > 0 ? nvme::status_category().message(rc) : errno_text(-rc);
}

std::error_code code_of(int rc) {
    return rc > 0 ? std::error_code(rc, nvme::status_category()) : std::error_code(-rc, std::system_category());
}

// Runs the commands, keeping the bookkeeping both paths share.
class nvme_zeroer {
public:
    nvme_zeroer(const nvme_target& t, std::span<const nvme_zero_cmd> cmds, const progress_fn& progress)
        : t_(t), cmds_(cmds), progress_(progress), done_(cmds.size(), false) {}

    // 0: every command was sent or the run stopped (see failure_/cancelled_).
    // 1: io_uring passthrough is missing and nothing was sent; `missing_why` says why.
    // -errno: the ring failed for another reason (nothing left in flight).
    int run_uring(unsigned depth, std::string& missing_why);
    void run_ioctl();
    // The ioctl from up to `threads` pool threads: the first command alone (as with
    // uring_cmd, so that a device refusing the command sees it once), then the rest.
    [[nodiscard]] status run_pool(unsigned threads);
    // The errno of a refused ring setup in run_uring (nothing was sent), else 0.
    [[nodiscard]] int setup_errno() const { return setup_errno_; }
    result<io_outcome> finish(io_outcome& out, passthrough_path path);

private:
    void finished(std::size_t index, int rc);
    [[nodiscard]] bool report_progress();

    const nvme_target& t_;
    std::span<const nvme_zero_cmd> cmds_;
    const progress_fn& progress_;
    std::vector<bool> done_;
    std::uint64_t newly_done_ = 0;
    std::uint64_t commands_ = 0;
    std::size_t next_ = 0;  // the first command not yet sent
    // The lowest failing command is reported: it is the one bounding bytes_done.
    std::optional<std::pair<std::size_t, int>> failure_;
    int ring_errno_ = 0;
    int setup_errno_ = 0;
    bool stop_ = false;
    bool cancelled_ = false;
};

void nvme_zeroer::finished(std::size_t index, int rc) {
    if (rc == 0) {
        done_[index] = true;
        newly_done_ += std::uint64_t{cmds_[index].nlb} * t_.lba_bytes;
        return;
    }
    if (!failure_ || index < failure_->first) {
        failure_ = {index, rc};
    }
    stop_ = true;
}

bool nvme_zeroer::report_progress() {
    if (newly_done_ > 0 && progress_ && !cancelled_ && !progress_(newly_done_)) {
        cancelled_ = true;
        stop_ = true;
    }
    newly_done_ = 0;
    return !stop_;
}

int nvme_zeroer::run_uring(unsigned depth, std::string& missing_why) {
    detail::ring ring;
    if (int rc = ring.init(depth, IORING_SETUP_SQE128 | IORING_SETUP_CQE32); rc < 0) {
        setup_errno_ = -rc;
        // EINVAL: flags unknown (< 5.19); ENOSYS: no io_uring; EPERM: kernel.io_uring_disabled.
        if (rc == -EINVAL || rc == -ENOSYS || rc == -EPERM || rc == -EOPNOTSUPP) {
            missing_why = fmt::format("io_uring setup with SQE128|CQE32: {}", errno_text(-rc));
            return 1;
        }
        return rc;
    }
    io_uring* r = ring.get();
    std::unique_ptr<io_uring_probe, detail::probe_deleter> probe(io_uring_get_probe_ring(r));
    if (!probe) {
        missing_why = "io_uring opcode probe failed (Linux < 5.6)";
        return 1;
    }
    if (io_uring_opcode_supported(probe.get(), IORING_OP_URING_CMD) == 0) {
        missing_why = "kernel lacks IORING_OP_URING_CMD (Linux 5.19+)";
        return 1;
    }

    // The first command alone: a char device without uring_cmd support (or a kernel that
    // rejects the command format) answers EOPNOTSUPP/EINVAL, and then nothing has been written.
    prep_uring_command(io_uring_get_sqe(r), t_.char_fd, write_zeroes_words(t_, cmds_[0]), 0);
    if (int rc = detail::submit(r); rc != 1) {
        return rc < 0 ? rc : -EBUSY;
    }
    if (int rc = detail::wait_one(r, std::nullopt); rc < 0) {
        return rc;  // the ring's teardown cancels and waits for the command
    }
    int first_rc = 0;
    detail::drain_ready(r, [&](const io_uring_cqe& cqe) { first_rc = cqe.res; });
    if (first_rc == -EOPNOTSUPP || first_rc == -EINVAL) {
        missing_why = fmt::format("first uring_cmd: {}", errno_text(-first_rc));
        return 1;
    }
    commands_ = 1;
    next_ = 1;
    finished(0, first_rc);
    (void)report_progress();  // wz: ignored-result (the stop it may set is read through stop_)

    unsigned inflight = 0;
    for (;;) {
        while (!stop_ && next_ < cmds_.size() && inflight + io_uring_sq_ready(r) < depth) {
            prep_uring_command(io_uring_get_sqe(r), t_.char_fd, write_zeroes_words(t_, cmds_[next_]), next_);
            ++next_;
            ++commands_;
        }
        if (io_uring_sq_ready(r) > 0) {
            int rc = detail::submit(r);
            if (rc < 0) {
                ring_errno_ = -rc;  // the queued ones never reach the kernel
                stop_ = true;
            } else {
                inflight += static_cast<unsigned>(rc);
            }
        }
        if (inflight == 0) {
            if (io_uring_sq_ready(r) > 0 && ring_errno_ == 0) {
                ring_errno_ = EBUSY;
            }
            break;
        }
        if (int rc = detail::wait_one(r, std::nullopt); rc < 0) {
            ring_errno_ = -rc;
            break;
        }
        inflight -= detail::drain_ready(r, [&](const io_uring_cqe& cqe) {
            // res: 0, the NVMe status (> 0), or -errno; the CQE32 tail holds DW0, unused here.
            finished(static_cast<std::size_t>(io_uring_cqe_get_data64(&cqe)), cqe.res);
        });
        (void)report_progress();  // wz: ignored-result (as above)
    }
    if (ring_errno_ != 0) {
        // Commands prepared but never taken were counted as issued: take them back.
        commands_ -= io_uring_sq_ready(r);
    }
    return 0;
}

void nvme_zeroer::run_ioctl() {
    for (next_ = 0; next_ < cmds_.size() && !stop_; ++next_) {
        ++commands_;
        finished(next_, ioctl_command(t_.char_fd, write_zeroes_words(t_, cmds_[next_])));
        (void)report_progress();  // wz: ignored-result (the loop reads stop_)
    }
}

status nvme_zeroer::run_pool(unsigned threads) {
    detail::worker_pool pool;
    if (auto s = pool.start(threads, fmt::format("nvme write zeroes {}", t_.char_path)); !s.ok()) {
        return s;
    }
    unsigned inflight = 0;
    auto issue = [&](std::size_t index) {
        const command_words w = write_zeroes_words(t_, cmds_[index]);
        pool.submit(index, [fd = t_.char_fd, w]() -> std::int64_t { return ioctl_command(fd, w); });
        ++commands_;
        ++inflight;
    };
    issue(0);
    next_ = 1;
    bool first_pending = true;
    std::vector<detail::worker_pool::completion> done;
    for (;;) {
        while (!first_pending && !stop_ && next_ < cmds_.size() && inflight < pool.threads()) {
            issue(next_++);
        }
        if (inflight == 0) {
            break;
        }
        done.clear();
        (void)pool.wait(std::nullopt, done);  // wz: ignored-result (no timeout: always true)
        for (const auto& c : done) {
            --inflight;
            finished(static_cast<std::size_t>(c.tag), static_cast<int>(c.result));
        }
        first_pending = false;
        (void)report_progress();  // wz: ignored-result (the loop reads stop_)
    }
    pool.stop();
    return {};
}

result<io_outcome> nvme_zeroer::finish(io_outcome& out, passthrough_path path) {
    out.commands = commands_;
    std::size_t prefix = 0;
    while (prefix < done_.size() && done_[prefix]) {
        out.bytes_done += std::uint64_t{cmds_[prefix].nlb} * t_.lba_bytes;
        ++prefix;
    }
    if (failure_) {
        const auto& [index, rc] = *failure_;
        const nvme_zero_cmd& c = cmds_[index];
        return error_info{code_of(rc), fmt::format("nvme write zeroes {} [nsid {}, SLBA {}, NLB {}, DEAC {}] ({}): {}",
                                                   t_.char_path, t_.nsid, c.slba, c.nlb, c.deac ? 1 : 0,
                                                   to_string(path), describe(rc))};
    }
    if (ring_errno_ != 0) {
        return make_error_msg(ring_errno_, fmt::format("nvme write zeroes {} ({}): io_uring: {}", t_.char_path,
                                                       to_string(path), errno_text(ring_errno_)));
    }
    if (cancelled_) {
        return make_error_msg(ECANCELED, fmt::format("nvme write zeroes {}: cancelled after {} of {} commands",
                                                     t_.char_path, prefix, cmds_.size()));
    }
    return out;
}

}  // namespace

result<io_outcome> nvme_write_zeroes(const nvme_target& t, std::span<const nvme_zero_cmd> cmds, unsigned queue_depth,
                                     const progress_fn& progress, passthrough_path* used, passthrough_choice choice,
                                     io_outcome* partial) {
    io_outcome out;
    auto finish = [&](result<io_outcome> r) {
        if (partial != nullptr) {
            *partial = out;
        }
        return r;
    };
    auto invalid = [&](std::string why) {
        return finish(make_error_msg(EINVAL, fmt::format("nvme write zeroes {}: {} ({})", t.char_path,
                                                         errno_text(EINVAL), why)));
    };
    if (t.char_fd < 0) {
        return finish(make_error("nvme write zeroes", t.char_path, EBADF));
    }
    if (t.nsid == 0 || t.nsid == NVME_NSID_ALL) {
        return invalid(fmt::format("nsid {} names no single namespace", t.nsid));
    }
    if (t.lba_bytes == 0 || (t.lba_bytes & (t.lba_bytes - 1)) != 0) {
        return invalid(fmt::format("LBA size {} is not a power of two", t.lba_bytes));
    }
    if (queue_depth == 0) {
        return invalid("queue depth 0");
    }
    for (const nvme_zero_cmd& c : cmds) {
        if (c.nlb < 1 || c.nlb > detail::max_nlb || c.slba > UINT64_MAX - c.nlb) {
            return invalid(fmt::format("SLBA {}, NLB {}, DEAC {}: NLB must be 1..{} and the range within 64 bits",
                                       c.slba, c.nlb, c.deac ? 1 : 0, detail::max_nlb));
        }
    }
    if (cmds.empty()) {
        return finish(out);  // nothing sent: *used is left as it was
    }

    return finish(engine_for(current_io_engine().engine)
                      .nvme_write_zeroes(t, cmds, queue_depth, progress, used, choice, out));
}

result<io_outcome> uring_engine::nvme_write_zeroes(const nvme_target& t, std::span<const nvme_zero_cmd> cmds,
                                                   unsigned queue_depth, const progress_fn& progress,
                                                   passthrough_path* used, passthrough_choice choice, io_outcome& out) {
    out.engine = io_engine::io_uring;
    nvme_zeroer zeroer(t, cmds, progress);
    passthrough_path path = passthrough_path::ioctl;
    if (choice != passthrough_choice::ioctl) {
        std::string missing_why;
        const auto depth = static_cast<unsigned>(std::min<std::size_t>({queue_depth, 4096U, cmds.size()}));
        int rc = zeroer.run_uring(depth, missing_why);
        if (zeroer.setup_errno() != 0 &&
            fall_back_to_psync(zeroer.setup_errno(), fmt::format("io_uring setup ({} entries)", depth))) {
            // Chosen automatically and refused for good: nothing was sent, psync takes it all.
            return engine_for(io_engine::psync).nvme_write_zeroes(t, cmds, queue_depth, progress, used, choice, out);
        }
        if (rc < 0) {
            if (used != nullptr) {
                *used = passthrough_path::uring_cmd;
            }
            return make_error_msg(-rc, fmt::format("nvme write zeroes {} (uring_cmd): io_uring: {}", t.char_path,
                                                   errno_text(-rc)));
        }
        if (rc == 0) {
            path = passthrough_path::uring_cmd;
        } else if (choice == passthrough_choice::uring_cmd) {
            return make_error_msg(EOPNOTSUPP, fmt::format("nvme write zeroes {}: io_uring passthrough not "
                                                          "supported here ({})",
                                                          t.char_path, missing_why));
        }
    }
    if (path == passthrough_path::ioctl) {
        zeroer.run_ioctl();
    }
    if (used != nullptr) {
        *used = path;
    }
    return zeroer.finish(out, path);
}

result<io_outcome> psync_engine::nvme_write_zeroes(const nvme_target& t, std::span<const nvme_zero_cmd> cmds,
                                                   unsigned queue_depth, const progress_fn& progress,
                                                   passthrough_path* used, passthrough_choice choice, io_outcome& out) {
    out.engine = io_engine::psync;
    if (choice == passthrough_choice::uring_cmd) {
        return make_error_msg(EOPNOTSUPP, fmt::format("nvme write zeroes {}: io_uring passthrough not supported here "
                                                      "(I/O engine psync: {})",
                                                      t.char_path, current_io_engine().reason));
    }
    nvme_zeroer zeroer(t, cmds, progress);
    const auto threads =
        static_cast<unsigned>(std::min<std::size_t>({queue_depth, detail::psync_max_threads, cmds.size()}));
    if (auto s = zeroer.run_pool(threads); !s.ok()) {
        return s.error();
    }
    if (used != nullptr) {
        *used = passthrough_path::ioctl;
    }
    return zeroer.finish(out, passthrough_path::ioctl);
}

status nvme_flush(const nvme_target& t) {
    if (t.char_fd < 0) {
        return make_error("nvme flush", t.char_path, EBADF);
    }
    const int rc = ioctl_command(t.char_fd, detail::flush_words(t.nsid));
    if (rc == 0) {
        return {};
    }
    return error_info{code_of(rc), fmt::format("nvme flush {} [nsid {}]: {}", t.char_path, t.nsid, describe(rc))};
}

namespace detail {

namespace {

// The ioctl's nvme_passthru_cmd and io_uring's nvme_uring_cmd name these fields alike.
template <class Cmd>
Cmd to_kernel(const command_words& w) {
    Cmd cmd{};
    cmd.opcode = w.opcode;
    cmd.nsid = w.nsid;
    cmd.cdw10 = w.cdw10;
    cmd.cdw11 = w.cdw11;
    cmd.cdw12 = w.cdw12;
    cmd.addr = w.addr;
    cmd.data_len = w.data_len;
    return cmd;
}

}  // namespace

int ioctl_command(int fd, const command_words& w) {
    auto cmd = to_kernel<nvme_passthru_cmd>(w);
    int rc = ::ioctl(fd, NVME_IOCTL_IO_CMD, &cmd);
    return rc < 0 ? -errno : rc;
}

void prep_uring_command(io_uring_sqe* sqe, int fd, const command_words& w, std::uint64_t user_data) {
    std::memset(sqe, 0, sqe128_bytes);
    sqe->opcode = IORING_OP_URING_CMD;
    sqe->fd = fd;
    sqe->cmd_op = NVME_URING_CMD_IO;
    io_uring_sqe_set_data64(sqe, user_data);
    const auto cmd = to_kernel<nvme_uring_cmd>(w);
    // Through a byte pointer: sqe->cmd is declared as a zero-length array.
    std::memcpy(reinterpret_cast<unsigned char*>(sqe) + offsetof(io_uring_sqe, cmd), &cmd, sizeof cmd);
}

error_info command_error(int rc, const std::string& what) {
    return error_info{code_of(rc), fmt::format("{}: {}", what, describe(rc))};
}

}  // namespace detail

}  // namespace wz::io

// SPDX-License-Identifier: MIT
// NVMe Write Zeroes and Flush through the namespace's generic char device: io_uring
// uring_cmd at queue depth (Linux 5.19+), else the passthrough ioctl one command at a time.
#include "io/engine.hpp"

#include "io/engine_impl.hpp"
#include "io/engine_select.hpp"
#include "io/nvme_cmd.hpp"
#include "io/pacing.hpp"
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
#include <map>
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
    return rc > 0 ? nvme_status_category().message(rc) : errno_text(-rc);
}

std::error_code code_of(int rc) {
    return rc > 0 ? std::error_code(rc, nvme_status_category()) : std::error_code(-rc, std::system_category());
}

// Runs the commands, keeping the bookkeeping both paths share. Under a rate each command is
// sent as pieces (nvme_pieces), cut as they are handed out, each charged to the bucket by the
// bytes it zeroes before it goes; without one a piece is the whole command.
class nvme_zeroer {
public:
    nvme_zeroer(const nvme_target& t, std::span<const nvme_zero_cmd> cmds, const progress_fn& progress,
                const rate_limit& rate)
        : t_(t), cmds_(cmds), progress_(progress),
          cut_(nvme_pieces(paced_piece_bytes(rate.bytes_per_second), t.lba_bytes, t.deac_unit_lba)),
          pacer_(rate, std::uint64_t{std::max(cut_.plain, cut_.deac)} * t.lba_bytes) {
        for (const nvme_zero_cmd& c : cmds_) {
            const std::uint32_t per = c.deac ? cut_.deac : cut_.plain;
            pieces_ += (c.nlb + per - 1) / per;
            total_bytes_ += std::uint64_t{c.nlb} * t_.lba_bytes;
        }
    }

    // Pieces in all: the most that can usefully be in flight.
    [[nodiscard]] std::uint64_t pieces() const { return pieces_; }
    // 0: every piece was sent or the run stopped (see failure_/cancelled_).
    // 1: io_uring passthrough is missing and nothing was sent; `missing_why` says why.
    // -errno: the ring failed for another reason (nothing left in flight).
    int run_uring(unsigned depth, std::string& missing_why);
    void run_ioctl();
    // The ioctl from up to `threads` pool threads: the first piece alone (as with
    // uring_cmd, so that a device refusing the command sees it once), then the rest.
    [[nodiscard]] status run_pool(unsigned threads);
    // The errno of a refused ring setup in run_uring (nothing was sent), else 0.
    [[nodiscard]] int setup_errno() const { return setup_errno_; }
    result<io_outcome> finish(io_outcome& out, passthrough_path path);

private:
    struct piece {
        std::uint64_t seq = 0;  // order handed out: the order of the commands and their blocks
        nvme_zero_cmd cmd;
        [[nodiscard]] std::uint64_t bytes(std::uint32_t lba) const { return std::uint64_t{cmd.nlb} * lba; }
    };
    [[nodiscard]] bool more() const { return !stop_ && next_cmd_ < cmds_.size(); }
    // The next piece, not yet handed out.
    [[nodiscard]] piece peek() const;
    void hand_out(const piece& p);
    // Blocks until the bucket lets `p` go, asking the caller meanwhile; false on a cancel.
    [[nodiscard]] bool admit(const piece& p);
    void finished(const piece& p, int rc);
    // Reports newly completed bytes and, while the rate holds a piece back (`waiting`), asks
    // with 0 all the same, so that a cancel ends the wait.
    [[nodiscard]] bool report_progress(bool waiting = false);
    // Slots for the pieces in flight (uring_cmd and pool): their index is the tag.
    unsigned occupy(const piece& p);

    const nvme_target& t_;
    std::span<const nvme_zero_cmd> cmds_;
    const progress_fn& progress_;
    const nvme_piece_blocks cut_;
    pacer pacer_;
    std::uint64_t pieces_ = 0;
    std::uint64_t total_bytes_ = 0;
    std::size_t next_cmd_ = 0;        // the command the next piece comes from
    std::uint32_t next_block_ = 0;    // blocks of it already handed out
    std::uint64_t next_seq_ = 0;
    // The completed prefix: every piece below low_seq_ completed; those above it that did, by
    // seq, with their bytes.
    std::uint64_t low_seq_ = 0;
    std::uint64_t prefix_bytes_ = 0;
    std::map<std::uint64_t, std::uint64_t> done_above_;
    std::vector<piece> slots_;
    std::vector<unsigned> free_slots_;
    std::uint64_t newly_done_ = 0;
    std::uint64_t commands_ = 0;
    // The lowest failing piece is reported: it is the one bounding bytes_done.
    std::optional<std::pair<piece, int>> failure_;
    int ring_errno_ = 0;
    int setup_errno_ = 0;
    bool stop_ = false;
    bool cancelled_ = false;
    bool first_paid_ = false;  // the first piece's bytes were taken by a uring_cmd attempt
};

nvme_zeroer::piece nvme_zeroer::peek() const {
    const nvme_zero_cmd& c = cmds_[next_cmd_];
    const std::uint32_t per = c.deac ? cut_.deac : cut_.plain;
    piece p;
    p.seq = next_seq_;
    p.cmd.slba = c.slba + next_block_;
    p.cmd.nlb = std::min(per, c.nlb - next_block_);
    p.cmd.deac = c.deac;
    return p;
}

void nvme_zeroer::hand_out(const piece& p) {
    ++next_seq_;
    ++commands_;
    next_block_ += p.cmd.nlb;
    if (next_block_ == cmds_[next_cmd_].nlb) {
        ++next_cmd_;
        next_block_ = 0;
    }
}

bool nvme_zeroer::admit(const piece& p) {
    if (pacer_.admit(p.bytes(t_.lba_bytes), [this](std::uint64_t) { return report_progress(true); })) {
        return true;
    }
    return false;  // report_progress set cancelled_ and stop_
}

void nvme_zeroer::finished(const piece& p, int rc) {
    if (rc == 0) {
        const std::uint64_t bytes = p.bytes(t_.lba_bytes);
        newly_done_ += bytes;
        done_above_.emplace(p.seq, bytes);
        for (auto it = done_above_.begin(); it != done_above_.end() && it->first == low_seq_;
             it = done_above_.erase(it)) {
            prefix_bytes_ += it->second;
            ++low_seq_;
        }
        return;
    }
    if (!failure_ || p.seq < failure_->first.seq) {
        failure_ = {p, rc};
    }
    stop_ = true;
}

bool nvme_zeroer::report_progress(bool waiting) {
    if ((newly_done_ > 0 || waiting) && progress_ && !cancelled_ && !progress_(newly_done_)) {
        cancelled_ = true;
        stop_ = true;
    }
    newly_done_ = 0;
    return !stop_;
}

unsigned nvme_zeroer::occupy(const piece& p) {
    const unsigned slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[slot] = p;
    return slot;
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

    // The first piece alone: a char device without uring_cmd support (or a kernel that
    // rejects the command format) answers EOPNOTSUPP/EINVAL, and then nothing has been written.
    const piece first = peek();
    if (!admit(first)) {
        return 0;  // cancelled while the rate held it back: nothing sent
    }
    first_paid_ = true;
    prep_uring_command(io_uring_get_sqe(r), t_.dev_fd, write_zeroes_words(t_, first.cmd), 0);
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
    hand_out(first);
    finished(first, first_rc);
    (void)report_progress();  // wz: ignored-result (the stop it may set is read through stop_)

    slots_.assign(depth, piece{});
    for (unsigned i = depth; i-- > 0;) {
        free_slots_.push_back(i);
    }
    unsigned inflight = 0;
    for (;;) {
        std::optional<detail::nanoseconds> token_wait;
        while (more() && !free_slots_.empty() && inflight + io_uring_sq_ready(r) < depth) {
            const piece p = peek();
            if ((token_wait = pacer_.take(p.bytes(t_.lba_bytes)))) {
                break;
            }
            prep_uring_command(io_uring_get_sqe(r), t_.dev_fd, write_zeroes_words(t_, p.cmd), occupy(p));
            hand_out(p);
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
            if (ring_errno_ != 0 || !more()) {
                break;
            }
            if (token_wait) {
                detail::sleep_slice(*token_wait);  // then asks the caller: see rate_wait_slice
                (void)report_progress(true);  // wz: ignored-result (the loop reads stop_ through more())
            }
            continue;
        }
        const auto timeout = detail::reap_timeout(token_wait, more());
        if (int rc = detail::wait_one(r, timeout); rc < 0 && rc != -ETIME) {
            ring_errno_ = -rc;
            break;
        }
        inflight -= detail::drain_ready(r, [&](const io_uring_cqe& cqe) {
            // res: 0, the NVMe status (> 0), or -errno; the CQE32 tail holds DW0, unused here.
            const auto slot = static_cast<unsigned>(io_uring_cqe_get_data64(&cqe));
            finished(slots_[slot], cqe.res);
            free_slots_.push_back(slot);
        });
        (void)report_progress(token_wait.has_value());  // wz: ignored-result (as above)
    }
    if (ring_errno_ != 0) {
        // Pieces prepared but never taken were counted as issued: take them back.
        commands_ -= io_uring_sq_ready(r);
    }
    return 0;
}

void nvme_zeroer::run_ioctl() {
    while (more()) {
        const piece p = peek();
        // A first piece already paid for by a refused uring_cmd attempt is not charged again.
        if (!(first_paid_ && p.seq == 0) && !admit(p)) {
            break;
        }
        hand_out(p);
        finished(p, ioctl_command(t_.dev_fd, write_zeroes_words(t_, p.cmd)));
        (void)report_progress();  // wz: ignored-result (the loop reads stop_ through more())
    }
}

status nvme_zeroer::run_pool(unsigned threads) {
    worker_pool pool(threads, fmt::format("nvme write zeroes {}", t_.dev_path));
    if (auto s = pool.start(threads); !s.ok()) {
        return s;
    }
    slots_.assign(pool.threads(), piece{});
    for (unsigned i = pool.threads(); i-- > 0;) {
        free_slots_.push_back(i);
    }
    unsigned inflight = 0;
    auto issue = [&](const piece& p) {
        const command_words w = write_zeroes_words(t_, p.cmd);
        // Cannot fail: no more commands in flight than threads, started above.
        (void)pool.submit(occupy(p), [fd = t_.dev_fd, w]() -> std::int64_t {  // wz: ignored-result (see above)
            return ioctl_command(fd, w);
        });
        hand_out(p);
        ++inflight;
    };
    if (const piece first = peek(); admit(first)) {
        issue(first);
    }
    bool first_pending = inflight > 0;
    std::vector<worker_pool::completion> done;
    for (;;) {
        std::optional<detail::nanoseconds> token_wait;
        while (!first_pending && more() && inflight < pool.threads()) {
            const piece p = peek();
            if ((token_wait = pacer_.take(p.bytes(t_.lba_bytes)))) {
                break;
            }
            issue(p);
        }
        if (inflight == 0) {
            if (!more()) {
                break;
            }
            if (token_wait) {
                detail::sleep_slice(*token_wait);  // then asks the caller: see rate_wait_slice
                (void)report_progress(true);  // wz: ignored-result (the loop reads stop_ through more())
            }
            continue;
        }
        const auto timeout = detail::reap_timeout(token_wait, more());
        done.clear();
        (void)pool.wait(timeout, done);  // wz: ignored-result (a timeout leaves `done` empty)
        for (const auto& c : done) {
            --inflight;
            const auto slot = static_cast<unsigned>(c.tag);
            finished(slots_[slot], static_cast<int>(c.result));
            free_slots_.push_back(slot);
            first_pending = false;
        }
        (void)report_progress(token_wait.has_value());  // wz: ignored-result (the loop reads stop_)
    }
    pool.stop();
    return {};
}

result<io_outcome> nvme_zeroer::finish(io_outcome& out, passthrough_path path) {
    out.commands = commands_;
    out.bytes_done = prefix_bytes_;
    if (failure_) {
        const auto& [p, rc] = *failure_;
        return error_info{code_of(rc), fmt::format("nvme write zeroes {} [nsid {}, SLBA {}, NLB {}, DEAC {}] ({}): {}",
                                                   t_.dev_path, t_.nsid, p.cmd.slba, p.cmd.nlb, p.cmd.deac ? 1 : 0,
                                                   to_string(path), describe(rc))};
    }
    if (ring_errno_ != 0) {
        return make_error_msg(ring_errno_, fmt::format("nvme write zeroes {} ({}): io_uring: {}", t_.dev_path,
                                                       to_string(path), errno_text(ring_errno_)));
    }
    if (cancelled_) {
        return make_error_msg(ECANCELED, fmt::format("nvme write zeroes {}: cancelled after {} of {} bytes",
                                                     t_.dev_path, prefix_bytes_, total_bytes_));
    }
    return out;
}

}  // namespace

result<io_outcome> nvme_write_zeroes(const nvme_target& t, std::span<const nvme_zero_cmd> cmds, unsigned queue_depth,
                                     const progress_fn& progress, const rate_limit& rate, passthrough_path* used,
                                     passthrough_choice choice, io_outcome* partial) {
    io_outcome out;
    auto finish = [&](result<io_outcome> r) {
        if (partial != nullptr) {
            *partial = out;
        }
        return r;
    };
    auto invalid = [&](std::string why) {
        return finish(make_error_msg(EINVAL, fmt::format("nvme write zeroes {}: {} ({})", t.dev_path,
                                                         errno_text(EINVAL), why)));
    };
    if (t.dev_fd < 0) {
        return finish(make_error("nvme write zeroes", t.dev_path, EBADF));
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
    if (t.deac_unit_lba == 0) {
        return invalid("DEAC unit of 0 blocks");
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
    if (t.block_device && choice == passthrough_choice::uring_cmd) {
        return finish(make_error_msg(EOPNOTSUPP, fmt::format("nvme write zeroes {}: io_uring passthrough not "
                                                             "supported here (uring_cmd needs the namespace's "
                                                             "generic char device; this is its block device)",
                                                             t.dev_path)));
    }

    return finish(engine_for(current_io_engine().engine)
                      .nvme_write_zeroes(t, cmds, queue_depth, progress, rate, used, choice, out));
}

result<io_outcome> uring_engine::nvme_write_zeroes(const nvme_target& t, std::span<const nvme_zero_cmd> cmds,
                                                   unsigned queue_depth, const progress_fn& progress,
                                                   const rate_limit& rate, passthrough_path* used,
                                                   passthrough_choice choice, io_outcome& out) {
    out.engine = io_engine::io_uring;
    nvme_zeroer zeroer(t, cmds, progress, rate);
    passthrough_path path = passthrough_path::ioctl;
    if (choice != passthrough_choice::ioctl && !t.block_device) {
        std::string missing_why;
        const auto depth = static_cast<unsigned>(std::min<std::uint64_t>({queue_depth, 4096U, zeroer.pieces()}));
        int rc = zeroer.run_uring(depth, missing_why);
        if (zeroer.setup_errno() != 0 &&
            fall_back_to_psync(zeroer.setup_errno(), fmt::format("io_uring setup ({} entries)", depth))) {
            // Chosen automatically and refused for good: nothing was sent, psync takes it all.
            return engine_for(io_engine::psync)
                .nvme_write_zeroes(t, cmds, queue_depth, progress, rate, used, choice, out);
        }
        if (zeroer.setup_errno() == EPERM || zeroer.setup_errno() == ENOSYS) {
            // io_uring was asked for and is refused for good: an error, as for data writes on
            // this engine, not a quiet move to the ioctl under the name of io_uring. (EINVAL
            // is a kernel without SQE128|CQE32, whose rings still work: the ioctl is its route.)
            return make_error_msg(zeroer.setup_errno(),
                                  fmt::format("nvme write zeroes {}: io_uring setup ({} entries): {}", t.dev_path,
                                              depth, errno_text(zeroer.setup_errno())));
        }
        if (rc < 0) {
            if (used != nullptr) {
                *used = passthrough_path::uring_cmd;
            }
            return make_error_msg(-rc, fmt::format("nvme write zeroes {} (uring_cmd): io_uring: {}", t.dev_path,
                                                   errno_text(-rc)));
        }
        if (rc == 0) {
            path = passthrough_path::uring_cmd;
        } else if (choice == passthrough_choice::uring_cmd) {
            return make_error_msg(EOPNOTSUPP, fmt::format("nvme write zeroes {}: io_uring passthrough not "
                                                          "supported here ({})",
                                                          t.dev_path, missing_why));
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
                                                   const rate_limit& rate, passthrough_path* used,
                                                   passthrough_choice choice, io_outcome& out) {
    out.engine = io_engine::psync;
    if (choice == passthrough_choice::uring_cmd) {
        return make_error_msg(EOPNOTSUPP, fmt::format("nvme write zeroes {}: io_uring passthrough not supported here "
                                                      "(I/O engine psync: {})",
                                                      t.dev_path, current_io_engine().reason));
    }
    nvme_zeroer zeroer(t, cmds, progress, rate);
    const auto threads =
        static_cast<unsigned>(std::min<std::uint64_t>({queue_depth, detail::psync_zero_depth, zeroer.pieces()}));
    if (auto s = zeroer.run_pool(threads); !s.ok()) {
        return s.error();
    }
    if (used != nullptr) {
        *used = passthrough_path::ioctl;
    }
    return zeroer.finish(out, passthrough_path::ioctl);
}

status nvme_flush(const nvme_target& t) {
    if (t.dev_fd < 0) {
        return make_error("nvme flush", t.dev_path, EBADF);
    }
    const int rc = ioctl_command(t.dev_fd, detail::flush_words(t.nsid));
    if (rc == 0) {
        return {};
    }
    return error_info{code_of(rc), fmt::format("nvme flush {} [nsid {}]: {}", t.dev_path, t.nsid, describe(rc))};
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

// SPDX-License-Identifier: MIT
// wz::preallocate(): runs the planner's operations (kernel offload, allocation, NVMe Write
// Zeroes, BLKZEROOUT, data writes), then syncs and verifies. The planner decides; this
// file only executes, measures and reports, and never writes outside [offset, offset+len).

#include "extent/fiemap.hpp"
#include "io/engine.hpp"
#include "io/pacing.hpp"
#include "plan/zero_plan.hpp"
#include "probe/file_kind.hpp"
#include "probe/fs_traits.hpp"
#include "record/record.hpp"
#include "target/target.hpp"
#include "util/aligned_buffer.hpp"
#include "util/errors.hpp"
#include "util/privilege.hpp"
#include "util/reopen.hpp"
#include "util/unique_fd.hpp"
#include "util/write_lease.hpp"
#include "verify/verify.hpp"
#include "zero/exclusive.hpp"
#include "zero/kernel_zero.hpp"
#include "zero/on_path.hpp"
#include "zero/zero.hpp"

#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <numeric>

namespace wz {

namespace {

constexpr std::size_t max_reported_steps = 256;

planned_operation to_public(const plan::operation& op) {
    return {plan::to_string(op.kind), op.offset, op.length, op.slba, op.nlb, op.deac, op.reason};
}

using verify_detail::current_size;
using verify_detail::verify_extent_of_damage;
using verify_detail::verify_range;
using zero::sync_plan;

class runner {
public:
    runner(int fd, std::string path, std::uint64_t offset, std::uint64_t length, const preallocate_options& opt,
           const sync_plan& sync, preallocate_report& rep)
        : fd_(fd), path_(std::move(path)), offset_(offset), length_(length), opt_(opt), sync_(sync), rep_(rep),
          start_(std::chrono::steady_clock::now()), piece_(io::paced_piece_bytes(opt.rate_bytes_per_second)) {}

    status run();

private:
    status run_file(const capabilities& caps);
    status run_block(const capabilities& caps);
    status execute(const capabilities& caps, const std::vector<plan::operation>& ops);
    status run_nvme(const capabilities& caps, const std::vector<plan::operation>& ops);
    status run_writes(const plan::operation& op);
    status flush_passthrough(const capabilities& caps);
    status run_calls(const plan::operation& op, zero_method method, const char* what,
                     const std::function<int(std::uint64_t, std::uint64_t)>& call, std::uint64_t& done);
    status require_in_place(const capabilities& caps, bool written_needs_nvme);
    status recheck_edges(const std::vector<plan::operation>& ops);
    status write_back_range() {
        if (::sync_file_range(fd_, static_cast<off_t>(offset_), static_cast<off_t>(length_),
                              SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
            return make_error_range("sync_file_range", path_, offset_, length_, errno);
        }
        return {};
    }
    status verify(const capabilities& caps);
    status check_signature();
    status check_free_space(const capabilities& caps);
    void cut_back(std::uint64_t size_before);
    result<int> direct_fd();
    result<int> passthrough_fd(const capabilities& caps);
    // Stop at the next command boundary: the caller cancelled, or another process asked for
    // the file this run holds a lease on (it waits until the run lets go).
    bool cancelled() const {
        return (opt_.cancel != nullptr && opt_.cancel->load()) || lease_broken();
    }
    bool lease_broken() const { return lease_ != nullptr && lease_->stop_on_break() && lease_->broken(); }
    error_info stopped() const {
        if (lease_broken()) {
            return zero::lease_broken_error(what());
        }
        return make_error_msg(ECANCELED, fmt::format("zero {}: interrupted", path_));
    }
    std::string what() const { return fmt::format("zero {} [offset {}, length {}]", path_, offset_, length_); }
    plan::request request() const {
        const long page = ::sysconf(_SC_PAGESIZE);
        return {offset_, length_, opt_.method, opt_.fallback, opt_.in_place,
                page > 0 ? static_cast<std::uint32_t>(page) : 4096U};
    }
    void progress(std::uint64_t bytes) {
        rep_.bytes_done += bytes;
        if (opt_.on_progress) {
            opt_.on_progress(progress_info{rep_.bytes_done, length_});
        }
    }
    void step(const plan::operation& op) {
        if (op.kind == plan::op_kind::write_direct || op.kind == plan::op_kind::write_buffered ||
            op.kind == plan::op_kind::nvme_write_zeroes) {
            note_engine(std::nullopt);
        }
        if (rep_.plan.size() < max_reported_steps) {
            rep_.plan.push_back(to_public(op));
        }
    }
    void decide(std::string line) { rep_.decisions.push_back(std::move(line)); }
    // Data writes and NVMe commands run on the process's I/O engine: the report names the one
    // that ran (or, in a dry run, would run), and -v says why, again if a refused ring setup
    // moved the run to psync midway.
    void note_engine(std::optional<io_engine> ran) {
        const io_engine_info info = current_io_engine();
        const io_engine e = ran.value_or(info.engine);
        rep_.io_engine = to_string(e);
        if (noted_engine_ != e) {
            noted_engine_ = e;
            decide(fmt::format("I/O engine: {} ({})", to_string(e), e == info.engine ? info.reason : "fell back"));
        }
    }
    io::progress_fn io_progress() {
        return [this](std::uint64_t n) {
            if (n != 0) {  // 0: the engine only asks whether to go on (rate-limit waits)
                progress(n);
            }
            return !cancelled();
        };
    }

    int fd_;
    std::string path_;
    std::uint64_t offset_, length_;
    const preallocate_options& opt_;
    const sync_plan& sync_;
    preallocate_report& rep_;
    std::chrono::steady_clock::time_point start_;
    // Under a rate, the most bytes one command or write zeroes before the bucket is asked
    // again (io::paced_piece_bytes); 0 without one.
    std::uint64_t piece_;
    unique_fd direct_;
    unique_fd passthrough_;
    unique_fd reader_;
    bool used_nvme_ = false;
    unsigned queue_depth_ = 32;
    std::optional<io_engine> noted_engine_;
    // The lease this thread holds on the file, if any (zero/exclusive.hpp): while it is held
    // the file is never opened again, and O_DIRECT is set on its one description as each step
    // needs it.
    const write_lease* lease_ = nullptr;
};

result<int> runner::direct_fd() {
    if (lease_ != nullptr) {
        if (const int rc = lease_->set_direct(true); rc != 0) {
            return make_error("set O_DIRECT on", path_, -rc);
        }
    }
    if (!direct_) {
        // A second open of the same file with O_DIRECT: the caller's descriptor keeps its flags.
        direct_ = reopen_self(fd_, O_WRONLY | O_DIRECT | O_CLOEXEC);
        if (!direct_) {
            return make_error("open O_DIRECT", path_, errno);
        }
    }
    return direct_.get();
}

result<int> runner::passthrough_fd(const capabilities& caps) {
    if (!passthrough_) {
        passthrough_.reset(open_passthrough(*caps.nvme));
        if (!passthrough_) {
            return make_error("open", caps.nvme->passthrough_device, errno);
        }
    }
    return passthrough_.get();
}

status runner::run_writes(const plan::operation& op) {
    io::zero_write_request req;
    req.path = path_;
    req.offset = op.offset;
    req.length = op.length;
    req.queue_depth = queue_depth_;
    if (piece_ != 0) {
        // Paced as the device commands are: a piece is a multiple of every DIO alignment.
        req.chunk_bytes = static_cast<std::uint32_t>(std::min<std::uint64_t>(req.chunk_bytes, piece_));
    }
    req.direct = op.kind == plan::op_kind::write_direct;
    if (req.direct) {
        auto dfd = direct_fd();
        if (!dfd) {
            return dfd.error();
        }
        req.fd = *dfd;
    } else {
        if (lease_ != nullptr) {
            if (const int rc = lease_->set_direct(false); rc != 0) {
                return make_error("clear O_DIRECT on", path_, -rc);
            }
        }
        req.fd = fd_;
        req.queue_depth = 1;  // buffered: the page cache does the batching
    }
    io::io_outcome out;
    const std::uint64_t before = rep_.bytes_done;
    auto r = io::write_zeroes(req, io_progress(), io::rate_limit{opt_.rate_bytes_per_second}, &out);
    if (out.commands > 0) {
        note_engine(out.engine);
    }
    rep_.device_commands += out.commands;
    rep_.bytes_by_method[zero_method::write] += out.bytes_done;
    // Progress counted every completion; writes complete out of order, so after a failure
    // only the unbroken prefix counts as done (a caller resuming there leaves no gap).
    rep_.bytes_done = before + out.bytes_done;
    if (!r) {
        return r.error();
    }
    if (!req.direct) {
        // Buffered: the partial pages at the edges, which hold bytes of other writers too (or
        // all of a range without O_DIRECT). Written back before the run reports, and a
        // write-back error named with this range rather than found by the final fdatasync
        // (which still sends the cache flush).
        if (::sync_file_range(fd_, static_cast<off_t>(op.offset), static_cast<off_t>(op.length),
                              SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
            return make_error_range("sync_file_range", path_, op.offset, op.length, errno);
        }
    }
    return {};
}

status runner::run_nvme(const capabilities& caps, const std::vector<plan::operation>& ops) {
    auto cfd = passthrough_fd(caps);
    if (!cfd) {
        return cfd.error();
    }
    io::nvme_target t{*cfd, caps.nvme->passthrough_device, caps.nvme->nsid, caps.nvme->lba_bytes};
    t.block_device = caps.nvme->passthrough == passthrough_route::block_device;
    // Under a rate a DEAC command is cut only where every piece stays aligned and whole granules.
    const plan::dealloc_blocks dealloc = plan::dealloc_blocks_of(plan::geometry_from(caps));
    t.deac_unit_lba = static_cast<std::uint32_t>(std::min<std::uint64_t>(
        std::lcm(dealloc.granularity, dealloc.alignment), std::numeric_limits<std::uint32_t>::max()));
    std::vector<io::nvme_zero_cmd> cmds;
    cmds.reserve(ops.size());
    for (const auto& op : ops) {
        cmds.push_back({op.slba, op.nlb, op.deac});
    }
    io::passthrough_path used{};
    io::io_outcome out;
    const std::uint64_t before = rep_.bytes_done;
    auto r = io::nvme_write_zeroes(t, cmds, queue_depth_, io_progress(), io::rate_limit{opt_.rate_bytes_per_second},
                                   &used,
                                   opt_.passthrough == passthrough_mode::uring_cmd ? io::passthrough_choice::uring_cmd
                                   : opt_.passthrough == passthrough_mode::ioctl   ? io::passthrough_choice::ioctl
                                                                                   : io::passthrough_choice::automatic,
                                   &out);
    rep_.passthrough_path = io::to_string(used);
    if (out.commands > 0) {
        note_engine(out.engine);
    }
    rep_.device_commands += out.commands;
    rep_.bytes_done = before + out.bytes_done;  // the completed prefix, as in run_writes
    // Attribute the completed prefix to DEAC / no DEAC.
    std::uint64_t left = out.bytes_done;
    for (const auto& op : ops) {
        std::uint64_t b = std::min<std::uint64_t>(left, op.length);
        rep_.bytes_by_method[op.deac ? zero_method::nvme_deac : zero_method::nvme] += b;
        left -= b;
    }
    used_nvme_ = true;
    if (!r) {
        return r.error();
    }
    return recheck_edges(ops);
}

// Where DEAC is in use, the sub-granule head and tail go without it, but a stack may still
// deallocate them (nvmet's block backend ignores DEAC=0 and lets the block layer unmap) and a
// device may ignore a deallocation smaller than its granule without writing zeroes (seen
// with scsi_debug lbprz=1 under nvmet, Linux 7.2). The edges are small: read them back
// (O_DIRECT, so the device answers) and rewrite whatever is not zero with data.
status runner::recheck_edges(const std::vector<plan::operation>& ops) {
    if (std::none_of(ops.begin(), ops.end(), [](const auto& op) { return op.deac; })) {
        return {};
    }
    if (!reader_) {
        reader_ = reopen_self(fd_, O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (!reader_) {
            return make_error("open O_DIRECT for reading", path_, errno);
        }
    }
    for (const auto& op : ops) {
        if (op.deac) {
            continue;
        }
        aligned_bytes buf = aligned_buffer(static_cast<std::size_t>(op.length));
        if (!buf) {
            return make_error_msg(ENOMEM, "recheck: out of memory");
        }
        ssize_t n = ::pread(reader_.get(), buf.get(), static_cast<std::size_t>(op.length), static_cast<off_t>(op.offset));
        if (n != static_cast<ssize_t>(op.length)) {
            return make_error_range("read back", path_, op.offset, op.length, n < 0 ? errno : EIO);
        }
        if (std::all_of(buf.get(), buf.get() + op.length, [](unsigned char c) { return c == 0; })) {
            continue;
        }
        decide(fmt::format("nvme: Write Zeroes without DEAC left [offset {}, length {}] non-zero (the stack "
                           "deallocated less than a granule): rewritten with data",
                           op.offset, op.length));
        rep_.bytes_by_method[zero_method::nvme] -= op.length;
        rep_.bytes_done -= op.length;
        plan::operation w = op;
        w.kind = plan::op_kind::write_direct;
        w.reason = "sub-granule edge the device did not zero";
        step(w);
        if (auto e = run_writes(w); !e.ok()) {
            return e;
        }
    }
    return {};
}

// BLKZEROOUT and fallocate(FALLOC_FL_WRITE_ZEROES): one synchronous call each, which the
// kernel does not interrupt. Without a rate, one call over the whole operation, as ever. Under
// one the operation is cut into pieces (io::piece_length: after the first, on multiples of the
// piece size, which no block or page straddles), each sent when the token bucket (io::pacer,
// the one the engines use for writes and NVMe commands) has its bytes; a cancel ends a wait at
// once and stops before the next piece. `call` returns 0 or -errno; a failure names the piece
// that failed, and `done` counts the bytes of the operation zeroed before it.
status runner::run_calls(const plan::operation& op, zero_method method, const char* what,
                         const std::function<int(std::uint64_t, std::uint64_t)>& call, std::uint64_t& done) {
    io::pacer pace(io::rate_limit{opt_.rate_bytes_per_second}, piece_);
    const std::uint64_t end = op.offset + op.length;
    done = 0;
    for (std::uint64_t at = op.offset; at < end;) {
        const std::uint64_t n = io::piece_length(at, end, piece_);
        if (cancelled() || !pace.admit(n, io_progress())) {
            return stopped();
        }
        rep_.device_commands++;
        if (const int rc = call(at, n); rc != 0) {
            return make_error_range(what, path_, at, n, -rc);
        }
        rep_.bytes_by_method[method] += n;
        progress(n);
        done += n;
        at += n;
    }
    return {};
}

// --in-place=require promises that no extent of the range is zeroed other than in place: the
// rule (plan::check_in_place_required) is held against the whole range's map before anything
// is written (the allocation included), so that a refusal leaves the file as it was. The map
// is taken as the run takes its own (FIEMAP_FLAG_SYNC: delayed allocations resolved). Without
// an extent map nothing can be shown: the part of the range inside the file counts as unknown.
status runner::require_in_place(const capabilities& caps, bool written_needs_nvme) {
    if (opt_.in_place != in_place_mode::require) {
        return {};
    }
    const plan::request req = request();
    extent::walker walk(fd_, path_, offset_, length_, extent::walker::default_batch, true);
    std::vector<extent::extent> batch;
    std::uint64_t extents = 0;
    while (true) {
        auto more = walk.next(batch);
        if (!more) {
            if (more.error().code.value() != EOPNOTSUPP) {
                return more.error();
            }
            struct ::stat st {};
            if (::fstat(fd_, &st) != 0) {
                return make_error("fstat", path_, errno);
            }
            const auto size = static_cast<std::uint64_t>(st.st_size);
            batch.clear();
            if (size > offset_) {
                batch.push_back({offset_, std::min(size, offset_ + length_) - offset_, std::nullopt,
                                 extent::kind::unknown, 0});
            }
        } else if (!*more) {
            break;
        }
        if (auto e = plan::check_in_place_required(caps, req, batch, written_needs_nvme); !e.ok()) {
            error_info err = std::move(e).error();
            err.message += "; decided before any I/O: the file is untouched";
            return err;
        }
        extents += batch.size();
        if (!more) {
            break;
        }
    }
    decide(fmt::format("in-place: required; the range's {} extents checked before any I/O: none that cannot be "
                       "zeroed in place{}",
                       extents, written_needs_nvme ? "" : " (written extents: the kernel's offload is tried first)"));
    return {};
}

// Runs a batch of operations in order, grouping consecutive NVMe commands so that they
// share one ring and queue depth.
status runner::execute(const capabilities& caps, const std::vector<plan::operation>& ops) {
    for (std::size_t i = 0; i < ops.size();) {
        if (cancelled()) {
            return stopped();
        }
        const auto& op = ops[i];
        step(op);
        switch (op.kind) {
        case plan::op_kind::nvme_write_zeroes: {
            std::size_t j = i;
            while (j < ops.size() && ops[j].kind == plan::op_kind::nvme_write_zeroes) {
                if (j != i) {
                    step(ops[j]);
                }
                ++j;
            }
            std::vector<plan::operation> group(ops.begin() + static_cast<std::ptrdiff_t>(i),
                                               ops.begin() + static_cast<std::ptrdiff_t>(j));
            if (auto e = run_nvme(caps, group); !e.ok()) {
                return e;
            }
            i = j;
            continue;
        }
        case plan::op_kind::kernel_write_zeroes: {
            // Planned for block devices only (a file's is run_file's first stage): no
            // filesystem to remember a refusal for.
            std::uint64_t done = 0;
            if (auto e = run_calls(op, zero_method::kernel, "fallocate(FALLOC_FL_WRITE_ZEROES)",
                                   [this](std::uint64_t at, std::uint64_t n) {
                                       return zero::kernel_write_zeroes(fd_, at, n, std::nullopt);
                                   },
                                   done);
                !e.ok()) {
                return e;
            }
            break;
        }
        case plan::op_kind::zeroout: {
            std::uint64_t done = 0;
            if (auto e = run_calls(op, zero_method::zeroout, "BLKZEROOUT",
                                   [this](std::uint64_t at, std::uint64_t n) {
                                       std::uint64_t range[2] = {at, n};
                                       return ::ioctl(fd_, BLKZEROOUT, range) == 0 ? 0 : -errno;
                                   },
                                   done);
                !e.ok()) {
                return e;
            }
            break;
        }
        case plan::op_kind::allocate:
            rep_.device_commands++;
            if (::fallocate(fd_, 0, static_cast<off_t>(op.offset), static_cast<off_t>(op.length)) != 0) {
                return make_error_range("fallocate", path_, op.offset, op.length, errno);
            }
            break;
        case plan::op_kind::write_direct:
        case plan::op_kind::write_buffered:
            if (auto e = run_writes(op); !e.ok()) {
                return e;
            }
            break;
        }
        ++i;
    }
    return {};
}

status runner::run_file(const capabilities& caps) {
    const plan::request req = request();
    auto first = plan::plan_file_first_stage(caps, req);
    if (!first) {
        return first.error();
    }
    struct ::stat st {};
    if (::fstat(fd_, &st) != 0) {
        return make_error("fstat", path_, errno);
    }
    bool try_kernel = first->try_kernel;
    if (try_kernel && probe::fs::kernel_write_zeroes_refused(st.st_dev)) {
        try_kernel = false;
        decide("kernel: FALLOC_FL_WRITE_ZEROES was refused earlier on this filesystem");
    }
    if (caps.fs && caps.fs->cow) {
        decide(fmt::format("copy-on-write: {}; the range is zeroed and allocated, but written extents gain "
                           "nothing here",
                           caps.fs->cow_reason));
    }
    // --in-place=require: the whole range's map, before anything is written. While the kernel
    // is still to be tried, only the extents nothing may zero in place: where the kernel works
    // it zeroes written extents itself; where it refuses, the rest of the rule follows below.
    if (auto e = require_in_place(caps, !try_kernel); !e.ok()) {
        return e;
    }
    if (try_kernel) {
        decide("kernel: " + first->reason);
        plan::operation op{plan::op_kind::kernel_write_zeroes, offset_, length_, 0, 0, false, first->reason};
        if (opt_.dry_run) {
            step(op);
            decide("dry run: if the kernel refuses, allocation and the extent plan follow");
            return {};
        }
        step(op);
        std::uint64_t done = 0;
        auto e = run_calls(op, zero_method::kernel, "fallocate(FALLOC_FL_WRITE_ZEROES)",
                           [this, &st](std::uint64_t at, std::uint64_t n) {
                               return zero::kernel_write_zeroes(fd_, at, n, st.st_dev);
                           },
                           done);
        if (e.ok()) {
            return {};
        }
        // A refusal is the kernel saying "not here", which only the first call can say: after
        // one piece went through, any failure is one.
        const int err = e.error().code.value();
        if (done != 0 || e.error().code.category() != std::system_category() || !zero::kernel_zero_refused(err)) {
            return e;
        }
        decide(fmt::format("kernel: FALLOC_FL_WRITE_ZEROES refused ({})", errno_text(err)));
        if (opt_.method == method_request::kernel && !opt_.fallback) {
            return make_error_msg(ENOTSUP, fmt::format("{}: method kernel is not supported here: "
                                                       "fallocate(FALLOC_FL_WRITE_ZEROES): {}",
                                                       path_, errno_text(err)));
        }
        if (auto refused = require_in_place(caps, true); !refused.ok()) {
            return refused;
        }
    } else if (!first->reason.empty()) {
        decide(first->reason);
    }

    // Allocate first: extents that exist can be mapped, and the file has its final size.
    // Where there is no fallocate (ext2), the range stays holes and the data writes allocate.
    const plan::file_allocation how = plan::plan_file_allocation(caps, req);
    plan::operation alloc{plan::op_kind::allocate, offset_, length_, 0, 0, false, how.reason};
    if (!how.allocate) {
        decide(how.reason);
    } else if (!opt_.dry_run) {
        if (auto e = execute(caps, {alloc}); !e.ok()) {
            if (e.error().code.value() != EOPNOTSUPP) {
                return e;
            }
            auto note = plan::allocation_refused(caps, req, e.error().message);
            if (!note) {
                return note.error();
            }
            decide(*note);
        }
    } else {
        step(alloc);
    }
    // In-place zeroing must not race the page cache: dirty pages go out first (the walker's
    // first FIEMAP carries FIEMAP_FLAG_SYNC), and the mapping the commands are aimed at is
    // committed, by one fdatasync before the first batch that zeroes an extent in place. Data
    // writes alone need neither: a range of unwritten extents and holes (a new file's, as
    // create_zeroed's) gets no fdatasync here, whose journal commit would cost the device a
    // cache flush of its own before the one that makes the zeroes durable.
    bool mapping_committed = false;
    extent::walker walk(fd_, path_, offset_, length_, extent::walker::default_batch, true);
    std::vector<extent::extent> batch;
    while (true) {
        auto more = walk.next(batch);
        if (!more) {
            // No FIEMAP (tmpfs on older kernels, some FUSE): the whole range by data writes.
            if (more.error().code.value() != EOPNOTSUPP) {
                return more.error();
            }
            decide(fmt::format("extents: {} (all by data writes)", more.error().message));
            batch.assign(1, extent::extent{offset_, length_, std::nullopt, extent::kind::unknown, 0});
        } else if (!*more) {
            break;
        }
        plan::request part = req;
        part.offset = batch.front().offset;
        part.length = batch.back().offset + batch.back().length - part.offset;
        auto p = plan::plan_file_extents(caps, part, batch);
        if (!p) {
            return p.error();
        }
        for (auto& n : p->notes) {
            if (rep_.decisions.size() < max_reported_steps &&
                std::find(rep_.decisions.begin(), rep_.decisions.end(), n) == rep_.decisions.end()) {
                decide(n);
            }
        }
        if (opt_.dry_run) {
            for (const auto& op : p->operations) {
                step(op);
            }
        } else {
            const bool in_place = std::any_of(p->operations.begin(), p->operations.end(), [](const auto& op) {
                return op.kind == plan::op_kind::nvme_write_zeroes;
            });
            if (in_place && !mapping_committed) {
                if (::fdatasync(fd_) != 0) {
                    return make_error_range("fdatasync", path_, part.offset, part.length, errno);
                }
                mapping_committed = true;
            }
            if (auto e = execute(caps, p->operations); !e.ok()) {
                return e;
            }
            if (in_place) {
                // The device changed blocks under the page cache: drop it, and make sure the
                // filesystem did not move the extents while we zeroed them.
                (void)::posix_fadvise(fd_, static_cast<off_t>(part.offset), static_cast<off_t>(part.length),
                                      POSIX_FADV_DONTNEED);  // wz: ignored-error (advice only)
                auto again = extent::map_range(fd_, path_, part.offset, part.length, false);
                if (!again) {
                    return again.error();
                }
                for (const auto& op : p->operations) {
                    if (op.kind != plan::op_kind::nvme_write_zeroes) {
                        continue;
                    }
                    bool still = false;
                    for (const auto& e : *again) {
                        if (e.physical && e.offset <= op.offset && op.offset + op.length <= e.offset + e.length) {
                            const std::uint64_t dev = *e.physical + (op.offset - e.offset) +
                                                      (caps.device ? caps.device->partition_start_bytes : 0);
                            still = dev == op.slba * caps.nvme->lba_bytes;
                        }
                    }
                    if (!still) {
                        return make_error_msg(ESTALE, fmt::format("zero {} [offset {}, length {}]: the extent moved "
                                                                  "while it was zeroed in place",
                                                                  path_, op.offset, op.length));
                    }
                }
            }
        }
        if (!more) {
            break;
        }
    }
    return {};
}

status runner::run_block(const capabilities& caps) {
    auto p = plan::plan_block_device(caps, request());
    if (!p) {
        return p.error();
    }
    for (auto& n : p->notes) {
        decide(n);
    }
    if (opt_.dry_run) {
        for (const auto& op : p->operations) {
            step(op);
        }
        return {};
    }
    // Dirty pages of the device's cache would overwrite what the device zeroes: write them
    // back and wait. sync_file_range, not fdatasync: the latter also makes the kernel send a
    // cache flush, which a write-through device does not need (Linux flushes whenever VWC is
    // present, whatever WCE says).
    if (auto e = write_back_range(); !e.ok()) {
        return e;
    }
    auto e = execute(caps, p->operations);
    // Whatever happened, cached pages of the range may now be stale.
    (void)::posix_fadvise(fd_, static_cast<off_t>(offset_), static_cast<off_t>(length_),
                          POSIX_FADV_DONTNEED);  // wz: ignored-error (advice only)
    if (used_nvme_) {
        (void)::ioctl(fd_, BLKFLSBUF, 0);  // wz: ignored-error (invalidation is best-effort; verify reads O_DIRECT)
    }
    return e;
}

// Every byte of the range was zeroed when this runs, so anything missing now (a shorter file,
// a hole, an unwritten extent) was done to the file by someone else during the run: the
// report then counts only the prefix still proven, and says what changed. The size is
// checked even when no verification was asked for: it costs one fstat.
status runner::verify(const capabilities& caps) {
    const std::uint64_t end = offset_ + length_;
    verify_extent_of_damage found;
    status e;
    if (opt_.verify == verify_mode::none) {
        if (file_kind_of(caps) != file_kind::regular) {
            return {};
        }
        auto size = current_size(fd_, path_, caps);
        if (!size) {
            return size.error();
        }
        if (*size >= end) {
            return {};
        }
        found = {offset_, *size, true};
    } else {
        e = verify_range(fd_, path_, caps, offset_, length_, opt_.verify, rep_, &found);
        if (e.ok()) {
            return {};
        }
    }
    auto count_only_to = [this](std::uint64_t good_end) {
        rep_.bytes_done = std::min(rep_.bytes_done, good_end > offset_ ? good_end - offset_ : 0);
    };
    if (file_kind_of(caps) != file_kind::regular || !found.missing) {
        // Bad data (a device that did not zero) is not a change by someone else.
        count_only_to(found.good_end);
        return e;
    }
    const bool shorter = found.size_bytes < end;
    if (shorter && found.size_bytes > offset_) {
        // What is left of the range may still be proven: count it if it is.
        preallocate_report scratch;
        verify_extent_of_damage prefix;
        const auto mode = opt_.verify == verify_mode::data ? verify_mode::data : verify_mode::extents;
        if (verify_range(fd_, path_, caps, offset_, found.size_bytes - offset_, mode, scratch, &prefix).ok() &&
            scratch.verified.value_or(false)) {
            found.good_end = found.size_bytes;
        } else {
            found.good_end = std::min(prefix.good_end, found.size_bytes);
        }
    }
    count_only_to(found.good_end);
    rep_.verified = false;
    if (shorter) {
        rep_.verify_detail = fmt::format("the file now ends at {}, before the range ends", found.size_bytes);
    }
    const std::string what = shorter ? rep_.verify_detail : e.error().message;
    return make_error_msg(EIO, fmt::format("zero {} [offset {}, length {}]: {}; the file was {} by another process "
                                           "during the run (size now {} bytes)",
                                           path_, offset_, length_, what, shorter ? "truncated" : "changed",
                                           found.size_bytes));
}

status runner::run() {
    lease_ = write_lease::held_on(fd_);
    rep_.path = path_;
    rep_.offset = offset_;
    rep_.length = length_;
    if (length_ == 0) {
        return make_error_msg(EINVAL, fmt::format("zero {}: length must be greater than zero", path_));
    }
    if (offset_ > static_cast<std::uint64_t>(INT64_MAX) || length_ > static_cast<std::uint64_t>(INT64_MAX) - offset_) {
        return make_error_msg(EFBIG, fmt::format("zero {} [offset {}, length {}]: offset + length overflows",
                                                 path_, offset_, length_));
    }
    // A directory can only be open read-only: say what it is (EISDIR, as write(2) and
    // fallocate(2) do) rather than "not open for writing", which sends the caller elsewhere.
    if (struct ::stat st {}; ::fstat(fd_, &st) == 0 && S_ISDIR(st.st_mode)) {
        return make_error_msg(EISDIR, fmt::format("zero {} [offset {}, length {}]: a directory, not a regular file "
                                                  "or block device",
                                                  path_, offset_, length_));
    }
    if (!opt_.dry_run) {
        if (auto s = target::check_positioned_writes(
                fd_, fmt::format("zero {} [offset {}, length {}]", path_, offset_, length_));
            !s.ok()) {
            return s;
        }
    }
    auto caps = record::of(fd_, path_);
    if (!caps) {
        return caps.error();
    }
    if (file_kind_of(*caps) == file_kind::block) {
        if (auto e = check_signature(); !e.ok()) {
            return e;
        }
    } else if (auto e = check_free_space(*caps); !e.ok()) {
        return e;
    }
    for (auto m : all_zero_methods) {
        rep_.bytes_by_method[m] = 0;
    }
    rep_.copy_on_write = file_kind_of(*caps) == file_kind::regular && caps->fs && caps->fs->cow;
    const plan::queue_choice qd = plan::choose_queue_depth(*caps, opt_.queue_depth);
    queue_depth_ = qd.depth;
    decide(qd.reason);
    if (piece_ != 0) {
        rep_.rate_bytes_per_second = opt_.rate_bytes_per_second;
        rep_.rate_piece_bytes = piece_;
        decide(fmt::format("rate: {} bytes/s for every method: each NVMe command, BLKZEROOUT or fallocate call and "
                           "data write zeroes at most {} bytes (a twentieth of a second at this rate in whole 64 KiB, "
                           "64 KiB to 64 MiB) and goes when a token bucket, starting empty, has its bytes",
                           opt_.rate_bytes_per_second, piece_));
    }
    status e;
    if (cancelled()) {
        e = stopped();
    } else if (file_kind_of(*caps) == file_kind::block) {
        e = run_block(*caps);
    } else {
        e = run_file(*caps);
    }
    if (!e.ok() && e.code().value() == ECANCELED && lease_broken()) {
        e = zero::lease_broken_error(what());  // the engine stopped at its boundary for the break
    }
    if (e.ok() && !opt_.dry_run && opt_.sync) {
        // Durable before it is reported: fdatasync sends the device flush when the kernel
        // thinks the cache is write-back; passthrough writes bypass the filesystem, so when
        // the device's cache is really write-back they get an NVMe Flush of their own.
        const bool raw_write_through =
            file_kind_of(*caps) == file_kind::block && caps->cache.effective == cache_mode::write_through;
        if (raw_write_through) {
            // No filesystem metadata and no volatile cache: the data is durable once written
            // back; a flush would do nothing.
            e = write_back_range();
            rep_.flushed = false;
        } else {
            if (sync_.by_name_commit.empty()) {
                if (::fdatasync(fd_) != 0) {
                    // The flush that makes the range durable failed: the range is named, as
                    // a failed write names its own.
                    e = make_error_range("fdatasync", path_, offset_, length_, errno);
                }
            } else {
                // Every write above has completed (O_DIRECT, written back, or zeroed by the
                // device before the call returned): the commit that publishes the name
                // carries them, as its flush does the data. A write the filesystem took into
                // the page cache although asked for O_DIRECT (ext4 falls back silently for an
                // encrypted file without direct I/O, with data=journal, for inline data) is
                // written back here, its allocation with it; with nothing dirty this costs no
                // I/O and no commit.
                e = write_back_range();
                if (e.ok()) {
                    decide(fmt::format("sync: by the commit of {} that links the new file's name: one commit "
                                       "for its allocation, its written extents and its name, whose device flush "
                                       "(on a write-back cache) covers the zeroes; no fdatasync of its own",
                                       sync_.by_name_commit));
                }
            }
            if (e.ok()) {
                e = flush_passthrough(*caps);
            }
        }
    } else if (e.ok() && !opt_.dry_run) {
        decide("sync: left to the caller (no fdatasync, no device flush): the zeroes are written, not yet durable");
    }
    if (e.ok() && !opt_.dry_run) {
        e = verify(*caps);
    }
    if (!e.ok() && !opt_.dry_run && file_kind_of(*caps) == file_kind::regular) {
        cut_back(caps->size_bytes);
    }
    rep_.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return e;
}

// After the filesystem's flush (fdatasync, or the commit that publishes a new file's name):
// passthrough writes bypass the filesystem, so when the device's cache is really write-back
// (and the kernel may think otherwise) they get an NVMe Flush of their own.
status runner::flush_passthrough(const capabilities& caps) {
    if (!(used_nvme_ && caps.cache.effective == cache_mode::write_back && passthrough_)) {
        rep_.flushed = caps.cache.effective == cache_mode::write_back;
        return {};
    }
    io::nvme_target t{passthrough_.get(), caps.nvme->passthrough_device, caps.nvme->nsid, caps.nvme->lba_bytes};
    auto e = io::nvme_flush(t);
    rep_.flushed = e.ok();
    if (!e.ok()) {
        error_info err = std::move(e).error();
        err.message += fmt::format(" ([offset {}, length {}] of {} not durable)", offset_, length_, path_);
        return err;
    }
    return {};
}

// blkdiscard(8) refuses a device with a filesystem signature or partition table unless
// forced; zeroing one is at least as destructive.
status runner::check_signature() {
    auto sig = target::device_signature(fd_, path_);
    if (!sig) {
        return sig.error();
    }
    if (sig->empty()) {
        return {};
    }
    if (opt_.force) {
        decide(fmt::format("{} contains an existing {}: zeroing it anyway (force)", path_, *sig));
        return {};
    }
    return make_error_msg(EBUSY, error_reason::holds_data,
                          fmt::format("zero {}: contains an existing {}: refused unless forced "
                                      "(preallocate_options::force, WZ_ZERO_FORCE)",
                                      path_, *sig));
}

// Refuses before any I/O a range the filesystem has no room for, rather than filling it and
// failing part-way. What the range needs is its length less what is already allocated in it
// (on a copy-on-write filesystem all of it: an overwrite lands in new blocks); what there is,
// f_bfree for root (the filesystem's reserve is root's to use) and f_bavail for others.
status runner::check_free_space(const capabilities& caps) {
    struct ::statfs sfs {};
    if (::fstatfs(fd_, &sfs) != 0) {
        return make_error("statfs", path_, errno);
    }
    const auto block = static_cast<std::uint64_t>(sfs.f_frsize != 0 ? sfs.f_frsize : sfs.f_bsize);
    if (sfs.f_blocks == 0 || block == 0) {
        return {};  // no accounting (some FUSE and pseudo filesystems): nothing to check
    }
    const std::uint64_t first = offset_ / block * block;
    const std::uint64_t last = (offset_ + length_ + block - 1) / block * block;
    std::uint64_t needed = last - first;
    const bool cow = caps.fs && caps.fs->cow;
    if (!cow && caps.size_bytes > first) {
        extent::walker walk(fd_, path_, first, last - first, extent::walker::default_batch, false);
        std::vector<extent::extent> batch;
        std::uint64_t mapped = 0;
        bool known = true;
        while (true) {
            auto more = walk.next(batch);
            if (!more) {
                const int err = more.error().code.value();
                if (err != EOPNOTSUPP && err != ENOTTY) {
                    return more.error();  // a failing map is an error, not "nothing allocated"
                }
                known = false;  // no FIEMAP: count the file's blocks instead, an upper bound
                struct ::stat st {};
                if (::fstat(fd_, &st) == 0) {
                    mapped = std::min<std::uint64_t>(needed, static_cast<std::uint64_t>(st.st_blocks) * 512);
                }
                break;
            }
            if (!*more) {
                break;
            }
            for (const auto& e : batch) {
                if (e.type != extent::kind::hole) {
                    mapped += e.length;
                }
            }
        }
        needed -= std::min(needed, mapped);
        if (!known) {
            decide(fmt::format("space: no extent map here; {} bytes of the file's blocks counted as already "
                               "allocated",
                               mapped));
        }
    }
    const bool root = ::geteuid() == 0;
    const std::uint64_t avail = static_cast<std::uint64_t>(root ? sfs.f_bfree : sfs.f_bavail) * block;
    const std::uint64_t reserve = static_cast<std::uint64_t>(sfs.f_bfree - sfs.f_bavail) * block;
    if (needed <= avail) {
        decide(fmt::format("space: the range needs {} bytes of new blocks, {} are free", needed, avail));
        return {};
    }
    return make_error_msg(ENOSPC, fmt::format("zero {} [offset {}, length {}]: needs {} bytes of new space, the "
                                              "filesystem has {} free{}: No space left on device",
                                              path_, offset_, length_, needed, avail,
                                              root ? fmt::format(" (reserve for root included: {})", reserve)
                                                   : fmt::format(" (less {} reserved for root)", reserve)));
}

// After a failure, a file this run made longer is cut back to its length before the run,
// releasing what the run allocated past it. Only when its size is still what the run made it
// (the end of the range): a size another process set meanwhile, larger or smaller, is theirs,
// and cutting it would lose their data or grow back what they cut.
void runner::cut_back(std::uint64_t size_before) {
    struct ::stat st {};
    if (::fstat(fd_, &st) != 0 || static_cast<std::uint64_t>(st.st_size) <= size_before) {
        return;
    }
    if (static_cast<std::uint64_t>(st.st_size) != offset_ + length_) {
        rep_.cleanup = fmt::format("left {} at {} bytes, not cut back to its {}: its size changed during the run, "
                                   "not by this run",
                                   path_, st.st_size, size_before);
        return;
    }
    if (::ftruncate(fd_, static_cast<off_t>(size_before)) != 0) {
        rep_.cleanup = fmt::format("could not cut {} back to its {} bytes: {}", path_, size_before, errno_text(errno));
        return;
    }
    rep_.cleanup = fmt::format("cut {} back to its {} bytes", path_, size_before);
}

}  // namespace

namespace {

result<preallocate_report> preallocate_here(int fd, const std::string& path, std::uint64_t offset,
                                            std::uint64_t length, const preallocate_options& options,
                                            const sync_plan& sync, preallocate_report* partial) {
    preallocate_report rep;
    runner r(fd, path, offset, length, options, sync, rep);
    auto st = r.run();
    if (partial != nullptr) {
        *partial = rep;
    }
    if (!st.ok()) {
        return std::move(st).error();
    }
    return rep;
}

}  // namespace

namespace zero {

result<preallocate_report> preallocate_in_place(int fd, const std::string& path, std::uint64_t offset,
                                                std::uint64_t length, const preallocate_options& options,
                                                preallocate_report* partial, const sync_plan& sync) {
    return preallocate_here(fd, path, offset, length, options, sync, partial);
}

namespace {

// A missing name: the run works on a file nobody else can open (target::unnamed_file), which
// gets the name only once the run has succeeded, durable with it when options.sync asks: in
// one journal commit where the filesystem commits in order (target::ordered_journal), else by
// the run's fdatasync and then the directory's fsync. A refusal, a failure, a signal that
// ends the process, even SIGKILL, leave no file under the name (where the filesystem has no
// O_TMPFILE, a crash can leave the hidden temporary).
result<preallocate_report> run_on_new_file(target::opened& t, const std::string& path, mode_t mode,
                                           const preallocate_options& options, preallocate_report* partial,
                                           const on_descriptor& run) {
    const std::string created = fmt::format("create: {} does not exist; {} (mode 0666 less the umask)", path,
                                            options.dry_run ? "it would be created" : "creating it");
    auto note = [&](preallocate_report& rep, const std::string& how) {
        rep.decisions.insert(rep.decisions.begin(),
                             {created + how, "exclusive use: not needed: a new file, which nobody else can open "
                                             "before it has its name"});
        rep.exclusive_use = "none";
    };
    if (options.dry_run) {
        // The plan of a new, empty file on that filesystem, on an unnamed file in the same
        // directory that is never linked (gone when closed): a dry run creates nothing.
        unique_fd probe(::openat(t.dir.get(), ".", O_TMPFILE | O_RDWR | O_CLOEXEC, 0600));
        if (!probe) {
            const int err = errno;
            return make_error_msg(err, fmt::format("dry run {}: the file does not exist, and an unnamed file to "
                                                   "probe its filesystem could not be made: {}",
                                                   path, errno_text(err)));
        }
        preallocate_report rep;
        auto r = run(probe.get(), sync_plan{}, &rep);
        note(r ? *r : rep, "");
        if (partial != nullptr) {
            *partial = r ? *r : rep;
        }
        return r;
    }
    auto tmp = target::unnamed_file::make(t.dir.get(), t.name, path, mode);
    if (!tmp) {
        return tmp.error();
    }
    const std::string how = "; built as " + tmp->how();
    sync_plan sync;
    if (options.sync) {
        if (auto journal = target::ordered_journal(t.dir.get())) {
            sync.by_name_commit = std::move(*journal);
        }
    }
    auto r = run(tmp->fd(), sync, partial);
    if (r) {
        if (auto e = tmp->publish(options.sync); !e.ok()) {
            if (partial != nullptr) {
                *partial = std::move(*r);
                partial->cleanup = "nothing created: the new file, built unnamed, is discarded";
            }
            return std::move(e).error();
        }
        note(*r, how);
        return r;
    }
    if (partial != nullptr) {
        note(*partial, how);
        if (partial->bytes_done > 0 || !partial->cleanup.empty()) {
            // The run had zeroed or allocated part of it (and cut it back): what is left to say
            // is that none of it ever had the name. A refusal before any I/O needs no such line.
            partial->cleanup = "nothing created: the new file, built unnamed, is discarded";
        }
    }
    return r;
}

}  // namespace

namespace {

// Runs `run` with the lease taken by take_exclusive_use(), the report told how.
result<preallocate_report> run_exclusive(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                         const preallocate_options& options, preallocate_report* partial,
                                         const on_descriptor& run, exclusive_request request) {
    write_lease lease;
    preallocate_report exclusive;
    const std::string what = fmt::format("{} {} [offset {}, length {}]", request.keep_data ? "allocate" : "zero",
                                         path, offset, length);
    if (auto s = take_exclusive_use(lease, fd, what, options, request, exclusive); !s.ok()) {
        if (partial != nullptr) {
            *partial = std::move(exclusive);
            partial->path = path;
            partial->offset = offset;
            partial->length = length;
        }
        return std::move(s).error();
    }
    auto r = run(fd, sync_plan{}, partial);
    for (preallocate_report* rep : {r ? &*r : nullptr, partial}) {
        if (rep != nullptr && !exclusive.decisions.empty()) {
            rep->exclusive_use = exclusive.exclusive_use;
            rep->decisions.insert(rep->decisions.begin(), exclusive.decisions.begin(), exclusive.decisions.end());
        }
    }
    return r;
}

}  // namespace

result<preallocate_report> run_on_descriptor(int fd, const std::string& path, std::uint64_t offset,
                                             std::uint64_t length, const preallocate_options& options,
                                             preallocate_report* partial, const on_descriptor& run, bool keep_data) {
    if (write_lease::held_on(fd) != nullptr) {
        return run(fd, sync_plan{}, partial);  // an enclosing call of this thread holds it
    }
    return run_exclusive(fd, path, offset, length, options, partial, run, {false, keep_data});
}

result<preallocate_report> run_on_path(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial,
                                       const on_descriptor& run, bool keep_data) {
    // Opened once and decided on the descriptor (target/target.hpp): a block device is
    // claimed exclusively on the inode that was checked, and nothing is ever opened by the
    // same name twice.
    target::open_request req;
    req.mode = target::access::write;
    req.dry_run = options.dry_run;
    auto t = target::open(path, req);
    if (!t && t.error().code.value() == ENOENT && options.create) {
        // A missing name: checked as a creation would be (no pseudo filesystem, writable),
        // then built unnamed.
        req.create = true;
        req.dry_run = true;
        t = target::open(path, req);
    }
    if (!t) {
        return t.error();
    }
    if (t->would_create) {
        return run_on_new_file(*t, path, req.create_mode, options, partial, run);
    }
    // An existing file: nobody else may have it open while parts of it are zeroed.
    auto r = run_exclusive(t->fd.get(), path, offset, length, options, partial, run, {true, keep_data});
    if (const int c = t->fd.close(); c != 0 && r) {
        return make_error("close", path, -c);
    }
    return r;
}

result<preallocate_report> preallocate(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial,
                                       const sync_plan& sync) {
    // No name to publish here: how the run becomes durable is the caller's choice (create_zeroed
    // publishes one).
    return run_on_descriptor(
        fd, path, offset, length, options, partial,
        [&](int d, const sync_plan&, preallocate_report* p) {
            return preallocate_here(d, path, offset, length, options, sync, p);
        },
        false);
}

result<preallocate_report> preallocate(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial) {
    return run_on_path(
        path, offset, length, options, partial,
        [&](int fd, const sync_plan& sync, preallocate_report* p) {
            return preallocate_here(fd, path, offset, length, options, sync, p);
        },
        false);
}

}  // namespace zero

}  // namespace wz

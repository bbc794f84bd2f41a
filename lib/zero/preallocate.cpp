// wz::preallocate(): runs the planner's operations (kernel offload, allocation, NVMe Write
// Zeroes, BLKZEROOUT, data writes), then syncs and verifies. The planner decides; this
// file only executes, measures and reports, and never writes outside [offset, offset+len).

#include "extent/fiemap.hpp"
#include "io/engine.hpp"
#include "plan/zero_plan.hpp"
#include "util/errors.hpp"
#include "util/unique_fd.hpp"

#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <cstring>
#include <mutex>
#include <set>

#ifndef FALLOC_FL_WRITE_ZEROES
#define FALLOC_FL_WRITE_ZEROES 0x80  // Linux 6.17; Debian 12's headers predate it
#endif

namespace wz {

namespace {

// Filesystems (by st_dev) whose kernel refused FALLOC_FL_WRITE_ZEROES in this process:
// asking again would only cost a syscall per call, but the report should say why.
std::mutex refused_mutex;
std::set<dev_t> kernel_refused;

constexpr std::size_t max_reported_steps = 256;
constexpr std::uint32_t extent_batch = 512;

plan::method_choice to_choice(method_request m) {
    switch (m) {
    case method_request::kernel: return plan::method_choice::kernel;
    case method_request::nvme: return plan::method_choice::nvme;
    case method_request::zeroout: return plan::method_choice::zeroout;
    case method_request::write: return plan::method_choice::write;
    case method_request::automatic: break;
    }
    return plan::method_choice::automatic;
}

plan::in_place_policy to_policy(in_place_mode m) {
    switch (m) {
    case in_place_mode::never: return plan::in_place_policy::never;
    case in_place_mode::require: return plan::in_place_policy::require;
    case in_place_mode::automatic: break;
    }
    return plan::in_place_policy::automatic;
}

planned_operation to_public(const plan::operation& op) {
    return {plan::to_string(op.kind), op.offset, op.length, op.slba, op.nlb, op.deac, op.reason};
}

using aligned_bytes = std::unique_ptr<unsigned char, decltype(&std::free)>;

// A page-aligned buffer for O_DIRECT reads; empty on allocation failure.
aligned_bytes aligned_buffer(std::size_t bytes) {
    void* raw = nullptr;
    if (::posix_memalign(&raw, 4096, bytes) != 0) {
        raw = nullptr;
    }
    return aligned_bytes(static_cast<unsigned char*>(raw), std::free);
}

std::optional<error_info> verify_range(int fd, const std::string& path, const capabilities& caps, std::uint64_t offset,
                                       std::uint64_t length, verify_mode mode, preallocate_report& rep) {
    if (mode == verify_mode::none) {
        return std::nullopt;
    }
    std::string extents_detail;
    if (caps.file_type == "regular") {
        auto m = extent::map_range(fd, path, offset, length, true);
        if (!m) {
            extents_detail = fmt::format("extents not checked: {}", m.error().message);
        } else {
            for (const auto& e : *m) {
                if (e.type == extent::kind::hole || e.type == extent::kind::unwritten ||
                    e.type == extent::kind::delalloc) {
                    rep.verified = false;
                    rep.verify_detail = fmt::format("{} extent at offset {}, length {}", extent::to_string(e.type),
                                                    e.offset, e.length);
                    return make_error_msg(EIO, fmt::format("verify {}: {} extent left at [offset {}, length {}]",
                                                           path, extent::to_string(e.type), e.offset, e.length));
                }
            }
            extents_detail = fmt::format("{} extents, no hole or unwritten extent", m->size());
        }
    } else {
        extents_detail = "block device: no extents";
    }
    if (mode == verify_mode::extents) {
        // Without a map (tmpfs, FUSE) the extents prove nothing: say so rather than pass.
        if (extents_detail.rfind("extents not checked", 0) == 0 || caps.file_type != "regular") {
            rep.verified.reset();
        } else {
            rep.verified = true;
        }
        rep.verify_detail = extents_detail;
        return std::nullopt;
    }
    // Data: read the range back (O_DIRECT where possible, so the device answers).
    unique_fd rfd(::open(fmt::format("/proc/self/fd/{}", fd).c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
    bool direct = true;
    if (!rfd) {
        rfd.reset(::open(fmt::format("/proc/self/fd/{}", fd).c_str(), O_RDONLY | O_CLOEXEC));
        direct = false;
        if (!rfd) {
            return make_error("open for verification", path, errno);
        }
    }
    const std::uint64_t align = caps.dio && direct ? std::max<std::uint64_t>(caps.dio->offset_align, 4096) : 1;
    const std::size_t chunk = 4U << 20;
    aligned_bytes buf = aligned_buffer(chunk);
    if (!buf) {
        return make_error_msg(ENOMEM, "verify: out of memory");
    }
    std::uint64_t pos = offset / align * align;
    const std::uint64_t end = offset + length;
    while (pos < end) {
        std::size_t want = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, (end - pos + align - 1) / align * align));
        ssize_t n = ::pread(rfd.get(), buf.get(), want, static_cast<off_t>(pos));
        if (n < 0) {
            return make_error_range("read back", path, pos, want, errno);
        }
        if (n == 0) {
            break;
        }
        for (ssize_t i = 0; i < n; ++i) {
            const std::uint64_t at = pos + static_cast<std::uint64_t>(i);
            if (at >= offset && at < end && buf.get()[i] != 0) {
                rep.verified = false;
                rep.verify_detail = fmt::format("non-zero byte at offset {}", at);
                return make_error_msg(EIO, fmt::format("verify {}: non-zero byte at offset {}", path, at));
            }
        }
        pos += static_cast<std::uint64_t>(n);
    }
    rep.verified = true;
    rep.verify_detail = fmt::format("{}; {} bytes read back as zeroes{}", extents_detail, length,
                                    direct ? " (O_DIRECT)" : "");
    return std::nullopt;
}

class runner {
public:
    runner(int fd, std::string path, std::uint64_t offset, std::uint64_t length, const preallocate_options& opt,
           preallocate_report& rep)
        : fd_(fd), path_(std::move(path)), offset_(offset), length_(length), opt_(opt), rep_(rep),
          start_(std::chrono::steady_clock::now()) {}

    std::optional<error_info> run();

private:
    std::optional<error_info> run_file(const capabilities& caps);
    std::optional<error_info> run_block(const capabilities& caps);
    std::optional<error_info> execute(const capabilities& caps, const std::vector<plan::operation>& ops);
    std::optional<error_info> run_nvme(const capabilities& caps, const std::vector<plan::operation>& ops);
    std::optional<error_info> run_writes(const plan::operation& op);
    std::optional<error_info> recheck_edges(const std::vector<plan::operation>& ops);
    std::optional<error_info> write_back_range() {
        if (::sync_file_range(fd_, static_cast<off_t>(offset_), static_cast<off_t>(length_),
                              SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
            return make_error_range("sync_file_range", path_, offset_, length_, errno);
        }
        return std::nullopt;
    }
    std::optional<error_info> verify(const capabilities& caps);
    result<int> direct_fd();
    result<int> char_fd(const capabilities& caps);
    bool cancelled() const { return opt_.cancel != nullptr && opt_.cancel->load(); }
    plan::request request() const {
        return {offset_, length_, to_choice(opt_.method), opt_.fallback, to_policy(opt_.in_place)};
    }
    void progress(std::uint64_t bytes) {
        rep_.bytes_done += bytes;
        if (opt_.on_progress) {
            opt_.on_progress(progress_info{rep_.bytes_done, length_});
        }
    }
    void step(const plan::operation& op) {
        if (rep_.plan.size() < max_reported_steps) {
            rep_.plan.push_back(to_public(op));
        }
    }
    void decide(std::string line) { rep_.decisions.push_back(std::move(line)); }
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
    preallocate_report& rep_;
    std::chrono::steady_clock::time_point start_;
    unique_fd direct_;
    unique_fd char_;
    unique_fd reader_;
    bool used_nvme_ = false;
    unsigned queue_depth_ = 32;
};

result<int> runner::direct_fd() {
    if (!direct_) {
        // A second open of the same file with O_DIRECT: the caller's descriptor keeps its flags.
        std::string self = fmt::format("/proc/self/fd/{}", fd_);
        direct_.reset(::open(self.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC));
        if (!direct_) {
            return make_error("open O_DIRECT", path_, errno);
        }
    }
    return direct_.get();
}

result<int> runner::char_fd(const capabilities& caps) {
    if (!char_) {
        char_.reset(::open(caps.nvme->char_device.c_str(), O_RDWR | O_CLOEXEC));
        if (!char_) {
            return make_error("open", caps.nvme->char_device, errno);
        }
    }
    return char_.get();
}

std::optional<error_info> runner::run_writes(const plan::operation& op) {
    io::zero_write_request req;
    req.path = path_;
    req.offset = op.offset;
    req.length = op.length;
    req.queue_depth = queue_depth_;
    req.direct = op.kind == plan::op_kind::write_direct;
    if (req.direct) {
        auto dfd = direct_fd();
        if (!dfd) {
            return dfd.error();
        }
        req.fd = *dfd;
    } else {
        req.fd = fd_;
        req.queue_depth = 1;  // buffered: the page cache does the batching
    }
    io::io_outcome out;
    const std::uint64_t before = rep_.bytes_done;
    auto r = io::write_zeroes(req, io_progress(), io::rate_limit{opt_.rate_bytes_per_second}, &out);
    rep_.device_commands += out.commands;
    rep_.bytes_by_method[zero_method::write] += out.bytes_done;
    // Progress counted every completion; writes complete out of order, so after a failure
    // only the unbroken prefix counts as done (a caller resuming there leaves no gap).
    rep_.bytes_done = before + out.bytes_done;
    if (!r) {
        return r.error();
    }
    return std::nullopt;
}

std::optional<error_info> runner::run_nvme(const capabilities& caps, const std::vector<plan::operation>& ops) {
    auto cfd = char_fd(caps);
    if (!cfd) {
        return cfd.error();
    }
    io::nvme_target t{*cfd, caps.nvme->char_device, caps.nvme->nsid, caps.nvme->lba_bytes};
    std::vector<io::nvme_zero_cmd> cmds;
    cmds.reserve(ops.size());
    for (const auto& op : ops) {
        cmds.push_back({op.slba, op.nlb, op.deac});
    }
    io::passthrough_path used{};
    io::io_outcome out;
    const std::uint64_t before = rep_.bytes_done;
    auto r = io::nvme_write_zeroes(t, cmds, queue_depth_, io_progress(), &used,
                                   opt_.passthrough == passthrough_mode::uring_cmd ? io::passthrough_choice::uring_cmd
                                   : opt_.passthrough == passthrough_mode::ioctl   ? io::passthrough_choice::ioctl
                                                                                   : io::passthrough_choice::automatic,
                                   &out);
    rep_.passthrough_path = io::to_string(used);
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
std::optional<error_info> runner::recheck_edges(const std::vector<plan::operation>& ops) {
    if (std::none_of(ops.begin(), ops.end(), [](const auto& op) { return op.deac; })) {
        return std::nullopt;
    }
    if (!reader_) {
        reader_.reset(::open(fmt::format("/proc/self/fd/{}", fd_).c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC));
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
        if (auto e = run_writes(w)) {
            return e;
        }
    }
    return std::nullopt;
}

// Runs a batch of operations in order, grouping consecutive NVMe commands so that they
// share one ring and queue depth.
std::optional<error_info> runner::execute(const capabilities& caps, const std::vector<plan::operation>& ops) {
    for (std::size_t i = 0; i < ops.size();) {
        if (cancelled()) {
            return make_error_msg(ECANCELED, fmt::format("zero {}: interrupted", path_));
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
            if (auto e = run_nvme(caps, group)) {
                return e;
            }
            i = j;
            continue;
        }
        case plan::op_kind::kernel_write_zeroes:
            rep_.device_commands++;
            if (::fallocate(fd_, FALLOC_FL_WRITE_ZEROES, static_cast<off_t>(op.offset),
                            static_cast<off_t>(op.length)) != 0) {
                return make_error_range("fallocate(FALLOC_FL_WRITE_ZEROES)", path_, op.offset, op.length, errno);
            }
            rep_.bytes_by_method[zero_method::kernel] += op.length;
            progress(op.length);
            break;
        case plan::op_kind::zeroout: {
            std::uint64_t range[2] = {op.offset, op.length};
            rep_.device_commands++;
            if (::ioctl(fd_, BLKZEROOUT, range) != 0) {
                return make_error_range("BLKZEROOUT", path_, op.offset, op.length, errno);
            }
            rep_.bytes_by_method[zero_method::zeroout] += op.length;
            progress(op.length);
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
            if (auto e = run_writes(op)) {
                return e;
            }
            break;
        }
        ++i;
    }
    return std::nullopt;
}

std::optional<error_info> runner::run_file(const capabilities& caps) {
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
    if (try_kernel) {
        std::lock_guard lock(refused_mutex);
        if (kernel_refused.count(st.st_dev) != 0) {
            try_kernel = false;
            decide("kernel: FALLOC_FL_WRITE_ZEROES was refused earlier on this filesystem");
        }
    }
    if (caps.fs && caps.fs->cow) {
        decide(fmt::format("copy-on-write: {}; the range is zeroed and allocated, but written extents gain "
                           "nothing here",
                           caps.fs->cow_reason));
    }
    if (try_kernel) {
        decide("kernel: " + first->reason);
        plan::operation op{plan::op_kind::kernel_write_zeroes, offset_, length_, 0, 0, false, first->reason};
        if (opt_.dry_run) {
            step(op);
            decide("dry run: if the kernel refuses, allocation and the extent plan follow");
            return std::nullopt;
        }
        step(op);
        rep_.device_commands++;
        if (::fallocate(fd_, FALLOC_FL_WRITE_ZEROES, static_cast<off_t>(offset_), static_cast<off_t>(length_)) == 0) {
            rep_.bytes_by_method[zero_method::kernel] += length_;
            progress(length_);
            return std::nullopt;
        }
        const int err = errno;
        if (err != EOPNOTSUPP && err != EINVAL) {
            return make_error_range("fallocate(FALLOC_FL_WRITE_ZEROES)", path_, offset_, length_, err);
        }
        {
            std::lock_guard lock(refused_mutex);
            kernel_refused.insert(st.st_dev);
        }
        decide(fmt::format("kernel: FALLOC_FL_WRITE_ZEROES refused ({})", errno_text(err)));
        if (opt_.method == method_request::kernel && !opt_.fallback) {
            return make_error_msg(ENOTSUP, fmt::format("{}: method kernel is not supported here: "
                                                       "fallocate(FALLOC_FL_WRITE_ZEROES): {}",
                                                       path_, errno_text(err)));
        }
    } else if (!first->reason.empty()) {
        decide(first->reason);
    }

    // Allocate first: extents that exist can be mapped, and the file has its final size.
    plan::operation alloc{plan::op_kind::allocate, offset_, length_, 0, 0, false,
                          "fallocate(0): allocate the range (unwritten extents)"};
    if (!opt_.dry_run) {
        if (auto e = execute(caps, {alloc})) {
            return e;
        }
        // In-place zeroing must not race the page cache: dirty pages go out first.
        if (::fdatasync(fd_) != 0) {
            return make_error("fdatasync", path_, errno);
        }
    } else {
        step(alloc);
    }

    extent::walker walk(fd_, path_, offset_, length_, extent_batch, true);
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
            if (auto e = execute(caps, p->operations)) {
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
    return std::nullopt;
}

std::optional<error_info> runner::run_block(const capabilities& caps) {
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
        return std::nullopt;
    }
    // Dirty pages of the device's cache would overwrite what the device zeroes: write them
    // back and wait. sync_file_range, not fdatasync: the latter also makes the kernel send a
    // cache flush, which a write-through device does not need (Linux flushes whenever VWC is
    // present, whatever WCE says).
    if (auto e = write_back_range()) {
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

std::optional<error_info> runner::verify(const capabilities& caps) {
    return verify_range(fd_, path_, caps, offset_, length_, opt_.verify, rep_);
}

std::optional<error_info> runner::run() {
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
    const int acc = ::fcntl(fd_, F_GETFL);
    if (acc < 0) {
        return make_error("fcntl", path_, errno);
    }
    if ((acc & O_ACCMODE) == O_RDONLY && !opt_.dry_run) {
        return make_error_msg(EBADF, fmt::format("zero {}: not open for writing", path_));
    }
    auto caps = stat(fd_, path_);
    if (!caps) {
        return caps.error();
    }
    for (auto m : all_zero_methods) {
        rep_.bytes_by_method[m] = 0;
    }
    const plan::queue_choice qd = plan::choose_queue_depth(*caps, opt_.queue_depth);
    queue_depth_ = qd.depth;
    decide(qd.reason);
    std::optional<error_info> e;
    if (caps->file_type == "block") {
        e = run_block(*caps);
    } else {
        e = run_file(*caps);
    }
    if (!e && !opt_.dry_run) {
        // Durable before it is reported: fdatasync sends the device flush when the kernel
        // thinks the cache is write-back; passthrough writes bypass the filesystem, so when
        // the device's cache is really write-back they get an NVMe Flush of their own.
        const bool raw_write_through =
            caps->file_type == "block" && caps->cache.effective == cache_mode::write_through;
        if (raw_write_through) {
            // No filesystem metadata and no volatile cache: the data is durable once written
            // back; a flush would do nothing.
            e = write_back_range();
            rep_.flushed = false;
        } else if (::fdatasync(fd_) != 0) {
            e = make_error("fdatasync", path_, errno);
        } else if (used_nvme_ && caps->cache.effective == cache_mode::write_back && char_) {
            io::nvme_target t{char_.get(), caps->nvme->char_device, caps->nvme->nsid, caps->nvme->lba_bytes};
            e = io::nvme_flush(t);
            rep_.flushed = !e;
        } else {
            rep_.flushed = caps->cache.effective == cache_mode::write_back;
        }
        if (!e) {
            e = verify(*caps);
        }
    }
    rep_.elapsed_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    return e;
}

}  // namespace

result<preallocate_report> preallocate(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial) {
    preallocate_report rep;
    runner r(fd, path, offset, length, options, rep);
    auto e = r.run();
    if (partial != nullptr) {
        *partial = rep;
    }
    if (e) {
        return *e;
    }
    return rep;
}

result<preallocate_report> preallocate(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial) {
    struct ::stat st {};
    const bool exists = ::stat(path.c_str(), &st) == 0;
    int flags = O_CLOEXEC | (options.dry_run ? O_RDONLY : O_RDWR);
    if (exists && S_ISBLK(st.st_mode)) {
        // Exclusive: refuses a mounted device or one another process holds (blkdiscard does
        // the same); kept open for the whole run.
        flags |= O_EXCL;
    } else if (exists && S_ISDIR(st.st_mode)) {
        return make_error_msg(EISDIR, fmt::format("zero {}: Is a directory", path));
    } else if (exists && !S_ISREG(st.st_mode)) {
        return make_error_msg(EINVAL, fmt::format("zero {}: not a regular file or block device", path));
    } else if (!exists && !options.dry_run) {
        flags |= O_CREAT;
    }
    unique_fd fd(::open(path.c_str(), flags, 0644));
    if (!fd) {
        const int err = errno;
        if (err == EBUSY && exists && S_ISBLK(st.st_mode)) {
            return make_error_msg(EBUSY, fmt::format("open {} exclusively: Device or resource busy (mounted, or "
                                                     "held by another process)",
                                                     path));
        }
        return make_error("open", path, err);
    }
    auto r = preallocate(fd.get(), path, offset, length, options, partial);
    if (const int c = fd.close(); c != 0 && r) {
        return make_error("close", path, -c);
    }
    return r;
}

}  // namespace wz

namespace wz {

namespace {

struct opened_target {
    unique_fd fd;
    capabilities caps;
};

// Opens PATH read-only with its record; a length of 0 becomes "to the end".
result<opened_target> open_target(const std::string& path, std::uint64_t offset, std::uint64_t& length) {
    unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
        return make_error("open", path, errno);
    }
    auto caps = stat(fd.get(), path);
    if (!caps) {
        return caps.error();
    }
    if (length == 0) {
        length = caps->size_bytes > offset ? caps->size_bytes - offset : 0;
    }
    return opened_target{std::move(fd), std::move(*caps)};
}

}  // namespace

result<preallocate_report> verify(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                  verify_mode mode) {
    auto t = open_target(path, offset, length);
    if (!t) {
        return t.error();
    }
    auto& [fd, caps] = *t;
    preallocate_report rep;
    rep.path = path;
    rep.offset = offset;
    rep.length = length;
    if (length == 0) {
        return make_error_msg(EINVAL, fmt::format("verify {}: empty range", path));
    }
    if (auto e = verify_range(fd.get(), path, caps, offset, length, mode, rep)) {
        return *e;
    }
    return rep;
}

result<std::vector<mapped_extent>> map_extents(const std::string& path, std::uint64_t offset, std::uint64_t length) {
    auto t = open_target(path, offset, length);
    if (!t) {
        return t.error();
    }
    auto& [fd, caps_value] = *t;
    const capabilities* caps = &caps_value;
    if (caps->file_type != "regular") {
        return make_error_msg(EINVAL, fmt::format("map {}: not a regular file", path));
    }
    std::vector<mapped_extent> out;
    if (length == 0) {
        return out;
    }
    const std::uint32_t lbs = caps->nvme && caps->nvme->lba_bytes != 0 ? caps->nvme->lba_bytes
                              : caps->device && caps->device->logical_block_size != 0
                                  ? caps->device->logical_block_size
                                  : 512;
    const std::uint64_t part = caps->device ? caps->device->partition_start_bytes : 0;
    extent::walker walk(fd.get(), path, offset, length, 512, true);
    std::vector<extent::extent> batch;
    while (true) {
        auto more = walk.next(batch);
        if (!more) {
            return more.error();
        }
        if (!*more) {
            break;
        }
        for (const auto& e : batch) {
            mapped_extent m;
            m.offset = e.offset;
            m.length = e.length;
            m.kind = extent::to_string(e.type);
            m.flags = e.flags;
            m.physical = e.physical;
            if (e.physical && caps->device) {
                m.lba = extent::to_lba(*e.physical, part, lbs);
                m.nlb = e.length / lbs;
                if (m.lba && caps->nvme && caps->nvme->npdg_bytes && caps->nvme->npda_bytes) {
                    m.dealloc_aligned = extent::dealloc_aligned(*m.lba, m.nlb, lbs, *caps->nvme->npdg_bytes,
                                                                *caps->nvme->npda_bytes);
                }
            }
            out.push_back(std::move(m));
        }
    }
    return out;
}

}  // namespace wz

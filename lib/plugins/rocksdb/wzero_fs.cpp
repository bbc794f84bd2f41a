// SPDX-License-Identifier: MIT
#include "wzero_fs.hpp"

#include "file_policy.hpp"

#include <wzero/wzero.hpp>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <mutex>
#include <sys/stat.h>
#include <unistd.h>

namespace wz::rocksdb_plugin {

namespace rdb = ROCKSDB_NAMESPACE;

bool verbose() {
    static const bool on = [] {
        const char* v = std::getenv("WZERO_ROCKSDB_VERBOSE");
        return v != nullptr && *v != '\0' && std::strcmp(v, "0") != 0;
    }();
    return on;
}

namespace {

rdb::IOStatus io_status_with(const std::string& context, const std::string& file, int err, const std::string& text,
                             wz::error_reason reason) {
    const std::string where = file.empty() ? context : "While " + context + ": " + file;
    if (reason == wz::error_reason::lease_lost) {
        return rdb::IOStatus::IOFenced(where, text);
    }
    switch (err) {
    case ENOSPC: {
        rdb::IOStatus s = rdb::IOStatus::NoSpace(where, text);
        s.SetRetryable(true);
        return s;
    }
    case ESTALE: return rdb::IOStatus::IOError(rdb::IOStatus::kStaleFile);
    case ENOENT: return rdb::IOStatus::PathNotFound(where, text);
    default: return rdb::IOStatus::IOError(where, text);
    }
}

}  // namespace

rdb::IOStatus io_status_of(const std::string& context, const std::string& file, int err) {
    return io_status_with(context, file, err, std::strerror(err), wz::error_reason::none);
}

rdb::IOStatus io_status_of(const std::string& context, const std::string& file, const wz::error_info& e) {
    return io_status_with(context, file, e.code.value(), e.message, e.reason);
}

namespace {

__attribute__((format(printf, 1, 2))) void say(const char* format, ...) {
    if (!verbose()) {
        return;
    }
    std::va_list ap;
    va_start(ap, format);
    std::fputs("wzero-rocksdb: ", stderr);
    std::vfprintf(stderr, format, ap);
    std::fputc('\n', stderr);
    va_end(ap);
}

struct opened {
    int fd = -1;
    file_policy policy;
    std::uint64_t size = 0;
    std::uint64_t block = 4096;
};

// Opens our own descriptor of a file the default file system has just created or renamed
// (it keeps its descriptor private) and decides from the capability record of what we opened.
opened open_and_decide(const std::string& fname, file_role role) {
    opened o;
    o.policy = decide(role, std::nullopt);
    o.fd = ::open(fname.c_str(), O_WRONLY | O_CLOEXEC);
    if (o.fd < 0) {
        o.policy.reason = std::string("open ") + fname + ": " + std::strerror(errno) + ": the default file system's calls";
        return o;
    }
    struct ::stat st {};
    if (::fstat(o.fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        o.policy.reason = "not a regular file: the default file system's calls";
        return o;
    }
    o.size = static_cast<std::uint64_t>(st.st_size);
    std::optional<storage_facts> facts;
    if (auto caps = wz::stat(o.fd, fname); caps && caps->fs) {
        storage_facts f;
        f.fs_type = caps->fs->type;
        f.cow = caps->fs->cow;
        f.data_journal = caps->fs->mount_options.find("data=journal") != std::string::npos;
        f.flush_needed = caps->cache.flush_needed;
        if (caps->fs->block_size > o.block) {
            o.block = caps->fs->block_size;
        }
        facts = f;
    } else if (!caps) {
        say("%s: stat: %s", fname.c_str(), caps.error().message.c_str());
    }
    o.policy = decide(role, facts);
    return o;
}

// A WAL or MANIFEST on a filesystem where written extents pay: preallocation as written
// zeroes, Sync as the policy's table says, Close cuts the zero tail off.
class wzero_writable_file : public rdb::FSWritableFileOwnerWrapper {
public:
    wzero_writable_file(std::unique_ptr<rdb::FSWritableFile>&& target, std::string path, opened o,
                        std::uint64_t zeroed_end, std::uint64_t durable_end)
        : rdb::FSWritableFileOwnerWrapper(std::move(target)), path_(std::move(path)), fd_(o.fd),
          policy_(std::move(o.policy)), block_(o.block), zeroed_end_(zeroed_end), durable_end_(durable_end) {}
    wzero_writable_file(const wzero_writable_file&) = delete;
    wzero_writable_file& operator=(const wzero_writable_file&) = delete;

    ~wzero_writable_file() override {
        if (fd_ >= 0) {
            trim();
            report();
            (void)::close(fd_);  // wz: ignored-error (destructor; the file was not closed through Close)
        }
    }

    void SetPreallocationBlockSize(size_t size) override { prealloc_block_ = size; }
    void GetPreallocationStatus(size_t* block_size, size_t* last_allocated_block) override {
        *block_size = prealloc_block_;
        *last_allocated_block = last_block_;
    }

    // FSWritableFile::PrepareWrite's arithmetic, on this file's Allocate (the wrapper would
    // hand it to the default file system's, which fallocates with KEEP_SIZE).
    void PrepareWrite(size_t offset, size_t len, const rdb::IOOptions& options, rdb::IODebugContext* dbg) override {
        if (prealloc_block_ == 0) {
            return;
        }
        const size_t last = (offset + len + prealloc_block_ - 1) / prealloc_block_;
        if (last > last_block_) {
            // A failure is reported by Allocate (verbose) and leaves the size where it was: the
            // appends then grow the file and Sync falls back to fdatasync.
            (void)Allocate(prealloc_block_ * last_block_, prealloc_block_ * (last - last_block_), options, dbg);  // wz: ignored-error (as RocksDB's PrepareWrite)
            last_block_ = last;
        }
    }

    rdb::IOStatus Allocate(uint64_t offset, uint64_t len, const rdb::IOOptions& options,
                           rdb::IODebugContext* dbg) override {
        const std::uint64_t appended = target()->GetFileSize(options, dbg);
        const auto span = next_zero_span(zeroed_end_, appended, offset + len, block_);
        if (!span) {
            return rdb::IOStatus::OK();
        }
        wz::preallocate_options o;
        o.sync = true;  // the new size and the written extents durable: Sync may then skip a flush
        wz::preallocate_report rep;
        if (auto s = wz::zero_range(fd_, span->offset, span->length, o, &rep); !s.ok()) {
            say("%s: %s", path_.c_str(), s.error().message.c_str());
            if (!prealloc_gives_way(s.error().code.value())) {
                return io_status_of("wzero zero_range", path_, s.error());
            }
            // What RocksDB's own file system does with the same range (file_policy.hpp): the
            // zeroes failed before or were cut back, so nothing past the appends is proven.
            keep_size_end_ = std::max(keep_size_end_, offset + len);
            ++gave_way_calls_;
            auto fallback = target()->Allocate(offset, len, options, dbg);
            say("%s %s: [%llu, %llu) left to the default file system's Allocate: %s", to_string(policy_.role),
                path_.c_str(), static_cast<unsigned long long>(offset), static_cast<unsigned long long>(offset + len),
                fallback.ok() ? "OK" : fallback.ToString().c_str());
            return fallback;
        }
        zeroed_end_ = span->offset + span->length;
        durable_end_.store(zeroed_end_, std::memory_order_release);
        zeroed_bytes_ += span->length;
        ++zero_calls_;
        say("%s %s: written zeroes [%llu, %llu) (%llu bytes zeroed by %s)", to_string(policy_.role), path_.c_str(),
            static_cast<unsigned long long>(span->offset), static_cast<unsigned long long>(zeroed_end_),
            static_cast<unsigned long long>(rep.bytes_done), methods(rep).c_str());
        return rdb::IOStatus::OK();
    }

    rdb::IOStatus Sync(const rdb::IOOptions& options, rdb::IODebugContext* dbg) override {
        const std::uint64_t appended = target()->GetFileSize(options, dbg);
        if (!write_back_seen_.load(std::memory_order_acquire) &&
            route_for_sync(policy_, appended, durable_end_.load(std::memory_order_acquire)) ==
                sync_route::writeback_only) {
            // WB_SYNC_ALL writeback of every dirty page of the file, waiting for pages already
            // under writeback first; no metadata is pending (written extents, durable size) and
            // the device writes through, so nothing else makes the pages more durable.
            if (::sync_file_range(fd_, 0, 0,
                                  SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) !=
                0) {
                return io_status_of("sync_file_range", path_, errno);
            }
            if (still_write_through()) {
                writeback_syncs_.fetch_add(1, std::memory_order_relaxed);
                return rdb::IOStatus::OK();
            }
            // The pages are on the device, maybe in its cache: the wrapped Sync flushes it.
        }
        wrapped_syncs_.fetch_add(1, std::memory_order_relaxed);
        return target()->Sync(options, dbg);
    }

    rdb::IOStatus Truncate(uint64_t size, const rdb::IOOptions& options, rdb::IODebugContext* dbg) override {
        auto s = target()->Truncate(size, options, dbg);
        if (s.ok() && size < zeroed_end_) {
            zeroed_end_ = size;
            if (size < durable_end_.load()) {
                durable_end_.store(size);  // the shorter size is not durable, but no byte past it is appended yet
            }
        }
        return s;
    }

    rdb::IOStatus Close(const rdb::IOOptions& options, rdb::IODebugContext* dbg) override {
        trim();
        report();
        auto s = target()->Close(options, dbg);
        if (fd_ >= 0 && ::close(fd_) != 0 && s.ok()) {
            s = io_status_of("closing", path_, errno);
        }
        fd_ = -1;
        return s;
    }

private:
    // After sync_file_range wrote the pages: whether the device still writes through. The
    // record said so when the file was opened, but Set Features FID 06h, a vendor tool or a
    // controller reset can turn the cache on at any time, and Linux does not re-read it:
    // wz::write_cache reads it again when its answer is older than wz::default_cache_max_age,
    // so no Sync returns on an answer older than that. Once it says anything else, this file's
    // syncs are the wrapped fdatasync for good.
    bool still_write_through() {
        auto c = wz::write_cache(fd_, path_);
        if (c && c->effective == wz::cache_mode::write_through) {
            return true;
        }
        write_back_seen_.store(true, std::memory_order_release);
        say("%s %s: the write cache is no longer write-through (%s): Sync is fdatasync from now on",
            to_string(policy_.role), path_.c_str(),
            !c ? c.error().message.c_str() : c->effective ? c->reason.c_str() : ("unknown: " + c->reason).c_str());
        return false;
    }

    // Back to what RocksDB appended, as PosixWritableFile::Close does after preallocating.
    void trim() {
        const std::uint64_t appended = target()->GetFileSize(rdb::IOOptions(), nullptr);
        if (zeroed_end_ > appended) {
            if (::ftruncate(fd_, static_cast<off_t>(appended)) != 0) {
                // As PosixWritableFile's trim: the zero tail left is read as the end of the log.
                say("%s: ftruncate to %llu: %s", path_.c_str(), static_cast<unsigned long long>(appended),
                    std::strerror(errno));  // wz: ignored-error (the tail is harmless)
            }
            zeroed_end_ = appended;
        }
        if (keep_size_end_ > appended) {
            // The blocks fallocate(KEEP_SIZE) left past the end, which a truncation to the same
            // size does not release on every filesystem: PosixWritableFile::Close punches them.
            if (::fallocate(fd_, FALLOC_FL_KEEP_SIZE | FALLOC_FL_PUNCH_HOLE, static_cast<off_t>(appended),
                            static_cast<off_t>(keep_size_end_ - appended)) != 0) {
                say("%s: punch [%llu, %llu): %s", path_.c_str(), static_cast<unsigned long long>(appended),
                    static_cast<unsigned long long>(keep_size_end_),
                    std::strerror(errno));  // wz: ignored-error (as RocksDB: space held, nothing wrong)
            }
            keep_size_end_ = appended;
        }
    }
    void report() const {
        say("%s %s: closed: %llu bytes appended, %llu zeroed in %llu calls, %llu calls gave way; Sync: %llu "
            "writeback only, %llu wrapped",
            to_string(policy_.role), path_.c_str(),
            static_cast<unsigned long long>(target()->GetFileSize(rdb::IOOptions(), nullptr)),
            static_cast<unsigned long long>(zeroed_bytes_), static_cast<unsigned long long>(zero_calls_),
            static_cast<unsigned long long>(gave_way_calls_), static_cast<unsigned long long>(writeback_syncs_.load()),
            static_cast<unsigned long long>(wrapped_syncs_.load()));
    }
    static std::string methods(const wz::preallocate_report& rep) {
        std::string out;
        for (const auto& [m, bytes] : rep.bytes_by_method) {
            if (bytes != 0) {
                out += (out.empty() ? "" : ", ");
                out += wz::to_string(m);
            }
        }
        return out.empty() ? "nothing" : out;
    }

    std::string path_;
    int fd_ = -1;
    file_policy policy_;
    std::uint64_t block_ = 4096;
    size_t prealloc_block_ = 0;
    size_t last_block_ = 0;
    std::uint64_t zeroed_end_ = 0;              // [0, zeroed_end_) is written (zeroes or data)
    std::atomic<std::uint64_t> durable_end_{0};  // ... and durable with the size that covers it
    std::uint64_t keep_size_end_ = 0;           // fallocate(KEEP_SIZE) may have left blocks below this
    std::uint64_t zeroed_bytes_ = 0, zero_calls_ = 0, gave_way_calls_ = 0;
    std::atomic<std::uint64_t> writeback_syncs_{0}, wrapped_syncs_{0};
    std::atomic<bool> write_back_seen_{false};  // still_write_through said no once
};

bool plain_writes(const rdb::FileOptions& options) {
    return !options.use_direct_writes && !options.use_mmap_writes;
}

}  // namespace

wzero_file_system::wzero_file_system(const std::shared_ptr<rdb::FileSystem>& target) : rdb::FileSystemWrapper(target) {}

rdb::IOStatus wzero_file_system::NewWritableFile(const std::string& fname, const rdb::FileOptions& options,
                                                 std::unique_ptr<rdb::FSWritableFile>* result,
                                                 rdb::IODebugContext* dbg) {
    const file_role role = classify(fname);
    auto s = target()->NewWritableFile(fname, options, result, dbg);
    if (!s.ok() || (role != file_role::wal && role != file_role::manifest)) {
        return s;
    }
    if (!plain_writes(options)) {
        say("%s %s: direct or mmap writes: the default file system's calls", to_string(role), fname.c_str());
        return s;
    }
    opened o = open_and_decide(fname, role);
    say("%s %s: %s", to_string(role), fname.c_str(), o.policy.reason.c_str());
    if (o.policy.prealloc != prealloc_route::written_zeroes) {
        if (o.fd >= 0) {
            (void)::close(o.fd);  // wz: ignored-error (read-only use: nothing written through it)
        }
        return s;
    }
    // A new file (O_TRUNC): nothing is written yet, so nothing is pending either.
    const std::uint64_t size = o.size;
    *result = std::make_unique<wzero_writable_file>(std::move(*result), fname, std::move(o), size, size);
    return s;
}

rdb::IOStatus wzero_file_system::ReuseWritableFile(const std::string& fname, const std::string& old_fname,
                                                   const rdb::FileOptions& options,
                                                   std::unique_ptr<rdb::FSWritableFile>* result,
                                                   rdb::IODebugContext* dbg) {
    const file_role role = classify(fname);
    auto s = target()->ReuseWritableFile(fname, old_fname, options, result, dbg);
    if (!s.ok() || role != file_role::wal || !plain_writes(options)) {
        return s;
    }
    opened o = open_and_decide(fname, role);
    if (o.policy.prealloc != prealloc_route::written_zeroes) {
        say("%s %s (recycled %s): %s", to_string(role), fname.c_str(), old_fname.c_str(), o.policy.reason.c_str());
        if (o.fd >= 0) {
            (void)::close(o.fd);  // wz: ignored-error (read-only use: nothing written through it)
        }
        return s;
    }
    // The old records stay: every record of the recyclable format names its log, and the
    // reader takes one of an older log for the end (kOldRecord). Only what is not written
    // extents yet (a file another file system preallocated, or punched) is zeroed, once.
    const std::uint64_t size = o.size;
    std::string how = "old records kept (recyclable format)";
    if (size > 0) {
        if (auto v = wz::verify(fname, 0, size, wz::verify_mode::extents); !v) {
            wz::preallocate_options po;
            po.sync = true;
            if (auto z = wz::rezero(o.fd, 0, size, po); !z.ok()) {
                say("%s %s: %s", to_string(role), fname.c_str(), z.error().message.c_str());
                (void)::close(o.fd);  // wz: ignored-error (read-only use)
                if (prealloc_gives_way(z.error().code.value())) {
                    // RocksDB's own file system writes the recycled log as it is: so does this one.
                    say("%s %s (recycled %s): the default file system's file", to_string(role), fname.c_str(),
                        old_fname.c_str());
                    return s;
                }
                return io_status_of("wzero rezero", fname, z.error());
            }
            how = "not all written extents (" + v.error().message + "): rezeroed";
        } else if (::fdatasync(o.fd) != 0) {
            // The old size may not be durable yet (Close trims without a sync); Sync relies on it.
            const int err = errno;
            (void)::close(o.fd);  // wz: ignored-error (read-only use)
            return io_status_of("fdatasync", fname, err);
        }
    }
    say("%s %s (recycled %s, %llu bytes): %s; %s", to_string(role), fname.c_str(), old_fname.c_str(),
        static_cast<unsigned long long>(size), how.c_str(), o.policy.reason.c_str());
    *result = std::make_unique<wzero_writable_file>(std::move(*result), fname, std::move(o), size, size);
    return s;
}

}  // namespace wz::rocksdb_plugin

/* SPDX-License-Identifier: MIT */
/* wzero: written, zeroed extents and durable writes for Linux storage.
 * The stable C API. Compiles as C99 and as C++.
 *
 * Conventions (every function):
 * - Returns 0 (or a count) on success and a negative errno value on failure; then
 *   wz_last_error() gives the calling thread's message, naming the operation, the path and
 *   the byte range. wz_pwrite_zeros() alone returns -1 and sets errno, as pwrite(2) does.
 * - Option and result structs start with a `size` member that the caller sets to
 *   sizeof(struct ...) as its header declares it: the library reads or fills only that much,
 *   so structs can grow without breaking programs built against an older header. A size
 *   smaller than the first version of the struct is EINVAL; bytes past what this library
 *   knows must be zero (E2BIG otherwise), as the kernel's extensible structs do.
 * - NULL options mean the defaults (all-zero options are the defaults too).
 * - Callbacks must return to the library (a longjmp out of one would skip its clean-up):
 *   to stop a run, return non-zero from the progress callback.
 * - No C++ exception crosses this interface.
 *
 * The C names and their C++ counterparts (<wzero/wzero.hpp>, namespace wz), for a reader
 * of either, or of both man pages:
 *   wz_last_error, wz_last_error_reason   error_info::message, error_info::reason
 *   enum wz_error_reason                  error_reason
 *   wz_io_engine, enum wz_io_engine_kind  select_io_engine, current_io_engine; io_engine(_request)
 *   enum wz_zero_method                   zero_method
 *   enum wz_method_request                method_request
 *   enum wz_verify                        verify_mode
 *   struct wz_zero_opts                   preallocate_options
 *   struct wz_zero_result                 preallocate_report
 *   wz_create_zeroed, wz_zero_range,      create_zeroed, zero_range, extend, rezero
 *   wz_extend, wz_rezero
 *   wz_stat_json                          stat, then the record's JSON document
 *   wz_stat, struct wz_caps               stat, capabilities (the fields a C caller decides on)
 *   enum wz_cache_mode                    cache_mode
 *   wz_write_cache, struct wz_cache_state write_cache, write_cache_state
 *   enum wz_durability                    durability_mode
 *   enum wz_completion_mode               completion_mode
 *   struct wz_writer_opts                 writer_options
 *   struct wz_writer, wz_writer_open(_fd) writer, writer::open
 *   wz_writer_pwrite(v), _submit,         writer::pwrite(v), submit, complete, in_flight,
 *   _complete, _in_flight, _mode,         mode and reason, alignment, refresh, close
 *   _alignment, _refresh, _close
 *   struct wz_completion                  writer_completion
 *   wz_writer_stats,                      writer::stats, writer_stats
 *   struct wz_writer_counters
 *   wz_pwrite_zeros                       (C only: zeroes written at an offset, as pwrite(2))
 * (The C structs keep their released names: the ABI, docs/abi.md.) */
#ifndef WZERO_WZERO_H
#define WZERO_WZERO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h> /* mode_t, off_t, ssize_t */
#include <sys/uio.h>   /* struct iovec */

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library in use, "MAJOR.MINOR.PATCH". */
const char *wz_version(void);

/* The calling thread's message for its last failed call ("" if none): the operation, the
 * path and the range. Valid until the thread's next call into the library. */
const char *wz_last_error(void);

/* Why the calling thread's last failed call was refused, where the caller can change the
 * outcome (WZ_REASON_NONE: nothing beyond the returned errno). Programs decide on this and on
 * the errno, never on the text of wz_last_error(). Set by the same calls, kept as long. */
enum wz_error_reason {
    WZ_REASON_NONE = 0,
    WZ_REASON_IN_USE = 1,                /* -EBUSY: the file is open elsewhere; exclusive use refused */
    WZ_REASON_LEASE_LOST = 2,            /* -EBUSY: another process opened or truncated it during the run */
    WZ_REASON_EXCLUSIVE_UNAVAILABLE = 3, /* -EBADF/-ENOLCK: exclusive use cannot be ensured here */
    WZ_REASON_HOLDS_DATA = 4,            /* -EBUSY: a filesystem or partition table: WZ_ZERO_FORCE, WZ_WRITER_FORCE */
    WZ_REASON_METHOD_UNAVAILABLE = 5,    /* -ENOTSUP: the requested method (WZ_ZERO_NO_FALLBACK) */
    WZ_REASON_IN_PLACE_EXCLUDED = 6,     /* -ENOTSUP: in-place zeroing required, the method never does it */
    WZ_REASON_NOT_WRITTEN = 7,           /* -EINVAL: WZ_DURABILITY_THROUGH on a range not all written */
    WZ_REASON_UNSAFE_DURABILITY = 8      /* -EINVAL: through on a write-back cache: WZ_WRITER_ALLOW_UNSAFE_THROUGH */
};
int wz_last_error_reason(void);

/* Release memory returned by the library. */
void wz_free(void *p);

/* The I/O engine of the process: io_uring, or psync (a thread pool doing pwrite/fdatasync
 * and NVMe passthrough through the ioctl) where io_uring cannot be set up. Chosen once, at
 * the first call that does I/O: by wz_io_engine(WZ_ENGINE_IO_URING or WZ_ENGINE_PSYNC)
 * before that, else by the environment variable WZERO_ENGINE ("io_uring", "psync", "auto"),
 * else automatically (see wz_io_engine(3)). */
enum wz_io_engine_kind { WZ_ENGINE_AUTO = 0, WZ_ENGINE_IO_URING = 1, WZ_ENGINE_PSYNC = 2 };

/* Selects the engine (REQUEST other than WZ_ENGINE_AUTO) and returns the one in use,
 * WZ_ENGINE_IO_URING or WZ_ENGINE_PSYNC; if REASON is not NULL, why (NUL-terminated,
 * truncated to REASON_LEN). -EBUSY when another engine was chosen already, -EINVAL for an
 * unknown REQUEST. */
int wz_io_engine(int request, char *reason, size_t reason_len);

/* ------------------------------------------------------------------------------------ */
/* Zeroing                                                                               */
/* ------------------------------------------------------------------------------------ */

/* Zeroing methods, best first (the order of the capability record). */
enum wz_zero_method {
    WZ_ZERO_KERNEL = 0,    /* fallocate(FALLOC_FL_WRITE_ZEROES), Linux 6.17+ */
    WZ_ZERO_NVME_DEAC = 1, /* NVMe Write Zeroes with DEAC (passthrough) */
    WZ_ZERO_NVME = 2,      /* NVMe Write Zeroes without DEAC */
    WZ_ZERO_ZEROOUT = 3,   /* BLKZEROOUT (block devices) */
    WZ_ZERO_WRITE = 4,     /* data writes of zeroes */
    WZ_ZERO_METHOD_COUNT = 5 /* sizes released arrays: stays 5, a 6th method gets members (docs/abi.md) */
};

/* The method a call may use (wz_zero_opts.method). */
enum wz_method_request {
    WZ_METHOD_AUTO = 0,
    WZ_METHOD_KERNEL = 1,
    WZ_METHOD_NVME = 2,
    WZ_METHOD_ZEROOUT = 3,
    WZ_METHOD_WRITE = 4
};

/* How the result is proven (wz_zero_opts.verify). */
enum wz_verify {
    WZ_VERIFY_EXTENTS = 0, /* no hole or unwritten extent left (FIEMAP); the default */
    WZ_VERIFY_NONE = 1,
    WZ_VERIFY_DATA = 2 /* extents, and every byte read back (O_DIRECT) as zero */
};

/* wz_zero_opts.flags */
#define WZ_ZERO_NO_SYNC 0x1u     /* skip the final fdatasync / device flush (caller syncs) */
#define WZ_ZERO_NO_FALLBACK 0x2u /* a requested method that is refused is an error (-ENOTSUP) */
#define WZ_ZERO_FORCE 0x4u       /* zero a block device that carries a signature */

/* Called a few times a second during a run; a non-zero return stops it (-ECANCELED). */
typedef int (*wz_progress_fn)(uint64_t bytes_done, uint64_t bytes_total, void *arg);

/* wz_zero_result.flags */
#define WZ_RESULT_VERIFIED 0x1u      /* proven: written extents (and zeroes, with WZ_VERIFY_DATA) */
#define WZ_RESULT_NOT_PROVEN 0x2u    /* no proof possible here (tmpfs: no extent map; a block device) */
#define WZ_RESULT_FLUSHED 0x4u       /* a device cache flush was sent */
#define WZ_RESULT_COPY_ON_WRITE 0x8u /* the file's data is copy-on-write: zeroes went to new extents */

/* What a zeroing call did, filled (also on failure: how far it got) when
 * wz_zero_opts.result is not NULL. */
struct wz_zero_result {
    uint32_t size;  /* sizeof(struct wz_zero_result), set by the caller */
    uint32_t flags; /* WZ_RESULT_* */
    uint64_t bytes_done;
    uint64_t bytes_by_method[WZ_ZERO_METHOD_COUNT]; /* indexed by enum wz_zero_method */
    uint64_t device_commands;                        /* NVMe commands, write calls, fallocate/ioctl calls */
};

struct wz_zero_opts {
    uint32_t size;  /* sizeof(struct wz_zero_opts) */
    uint32_t flags; /* WZ_ZERO_* */
    int32_t method; /* enum wz_method_request */
    int32_t verify; /* enum wz_verify */
    uint32_t queue_depth;           /* commands in flight; 0: automatic */
    uint32_t reserved;              /* must be 0 */
    uint64_t rate_bytes_per_second; /* 0: unlimited */
    wz_progress_fn progress;        /* may be NULL */
    void *progress_arg;
    struct wz_zero_result *result; /* may be NULL; see struct wz_zero_result */
};

/* Creates PATH, relative to directory DIRFD (AT_FDCWD allowed) or absolute, as openat(2)
 * takes it, as SIZE bytes of written zeroes that appears under PATH only complete and
 * durable (O_TMPFILE + linkat, else a hidden temporary ".NAME.wz-tmp.XXXXXX" +
 * renameat2(RENAME_NOREPLACE); then a directory fsync). The directory part is resolved once
 * and the last component never followed. MODE is masked by the umask. An existing PATH (a
 * symlink included) is -EEXIST and is never touched. */
int wz_create_zeroed(int dirfd, const char *path, uint64_t size, mode_t mode, const struct wz_zero_opts *opts);

/* Makes [offset, offset + length) of the file or block device FD written zeroes; a file
 * grows to offset + length, never shrinks. Durable on return unless WZ_ZERO_NO_SYNC. */
int wz_zero_range(int fd, uint64_t offset, uint64_t length, const struct wz_zero_opts *opts);

/* Grows the file FD to NEW_SIZE with written zeroes, durable on return. Smaller: -EINVAL. */
int wz_extend(int fd, uint64_t new_size, const struct wz_zero_opts *opts);

/* Recycles [offset, offset + length) inside the file in place: zeroes that stay written
 * extents (NVMe in place where allowed, data writes otherwise). Outside the file: -EINVAL. */
int wz_rezero(int fd, uint64_t offset, uint64_t length, const struct wz_zero_opts *opts);

/* PostgreSQL's pg_pwrite_zeros() shape: writes SIZE bytes of zeroes at OFFSET (as written
 * extents, not synced) and returns SIZE, or -1 with errno set. */
ssize_t wz_pwrite_zeros(int fd, size_t size, off_t offset);

/* ------------------------------------------------------------------------------------ */
/* Capability record                                                                     */
/* ------------------------------------------------------------------------------------ */

/* Probe PATH (a regular file or a block device) and return its capability record as a JSON
 * document (the same document as `wzero stat --record`) in *json_out, to be released with
 * wz_free(). Returns 0, or a negative errno value; then, if errbuf is not NULL, a message
 * naming the path and the operation is written to it. */
int wz_stat_json(const char *path, char **json_out, char *errbuf, unsigned long errbuf_len);

/* Tri-state facts: 1 yes, 0 no, -1 not known (the JSON record says why). */
#define WZ_UNKNOWN (-1)

enum wz_file_type { WZ_FILE_REGULAR = 0, WZ_FILE_BLOCK = 1 };
enum wz_cache_mode { WZ_CACHE_WRITE_BACK = 0, WZ_CACHE_WRITE_THROUGH = 1 }; /* or WZ_UNKNOWN */

/* What a database decides on, from the capability record. */
struct wz_caps {
    uint32_t size; /* sizeof(struct wz_caps), set by the caller */
    int32_t file_type; /* enum wz_file_type */
    uint64_t size_bytes;
    int32_t cache_effective;     /* enum wz_cache_mode: what the device really does */
    int32_t flush_needed;        /* does a durable write need a cache flush? */
    int32_t fua;                 /* the queue takes FUA writes */
    int32_t dsync_overwrite_fua; /* files: an O_DSYNC O_DIRECT overwrite is one FUA write */
    uint32_t dio_mem_align;      /* O_DIRECT buffer alignment; 0: no O_DIRECT here */
    uint32_t dio_offset_align;   /* O_DIRECT offset and length alignment */
    int32_t recommended_method;  /* enum wz_zero_method, or WZ_UNKNOWN (none usable) */
    int32_t deac;                /* NVMe: Write Zeroes with DEAC reads back zeroes */
    uint32_t lba_bytes;          /* NVMe namespace block size; 0: not NVMe */
    uint32_t reserved;
    uint64_t npdg_bytes; /* NVMe deallocation granularity; 0: not stated */
    uint64_t npda_bytes; /* NVMe deallocation alignment; 0: not stated */
    int32_t method_usable[WZ_ZERO_METHOD_COUNT]; /* indexed by enum wz_zero_method */
    uint32_t reserved2;
};

/* Fills *caps (caps->size set by the caller) for PATH. */
int wz_stat(const char *path, struct wz_caps *caps);

/* The write cache as it is now, for durability that rests on "write-through" (a
 * sync_file_range(2) without fdatasync): Set Features FID 06h, a vendor tool or a controller
 * reset can turn the cache on at any time, and Linux does not notice. Filled by
 * wz_write_cache(). */
struct wz_cache_state {
    uint32_t size;      /* sizeof(struct wz_cache_state), set by the caller */
    int32_t effective;  /* enum wz_cache_mode, or WZ_UNKNOWN: wz_caps.cache_effective now */
    uint64_t age_ns;    /* since the read this answer rests on started */
    uint32_t flags;     /* WZ_WRITE_CACHE_* */
    uint32_t reserved;
};
#define WZ_WRITE_CACHE_REREAD 0x1u /* this call read the cache again (a device command or sysfs) */

/* The maximum age of the answer the library's writer and plugins allow at an acknowledgement. */
#define WZ_WRITE_CACHE_MAX_AGE_NS 100000000ull

/* The effective write cache of the device under FD (a regular file's data device, or the block
 * device itself), read again when the answer the process holds for that device is older than
 * MAX_AGE_NS (0: always): one Get Features FID 06h on an NVMe namespace with a volatile write
 * cache (CAP_SYS_ADMIN; without it WZ_UNKNOWN), and the kernel's queue/write_cache. A fresh
 * answer costs no I/O. Call it after the data reached the device, before acknowledging it, and
 * flush (fdatasync) unless it says WZ_CACHE_WRITE_THROUGH. */
int wz_write_cache(int fd, uint64_t max_age_ns, struct wz_cache_state *out);

/* ------------------------------------------------------------------------------------ */
/* Durable writer                                                                        */
/* ------------------------------------------------------------------------------------ */

/* Every write returns (or completes) only once it is durable in the writer's mode. */
enum wz_durability {
    WZ_DURABILITY_AUTO = 0,    /* pick from the capability record */
    WZ_DURABILITY_THROUGH = 1, /* write-through device: O_DIRECT, no flush, no FUA */
    WZ_DURABILITY_FUA = 2,     /* FUA per write */
    WZ_DURABILITY_FLUSH = 3,   /* O_DIRECT writes + one flush shared by the writes before it */
    WZ_DURABILITY_DSYNC = 4    /* O_DSYNC | O_DIRECT, the baseline */
};

enum wz_completion_mode { WZ_COMPLETION_INTERRUPT = 0, WZ_COMPLETION_POLL = 1, WZ_COMPLETION_ADAPTIVE = 2 };

/* wz_writer_opts.flags */
#define WZ_WRITER_ALLOW_UNSAFE_THROUGH 0x1u /* allow a forced `through` on a write-back cache */
#define WZ_WRITER_FORCE 0x2u                /* write to a block device that carries a signature */

struct wz_writer_opts {
    uint32_t size;        /* sizeof(struct wz_writer_opts) */
    uint32_t flags;       /* WZ_WRITER_* */
    int32_t mode;         /* enum wz_durability */
    uint32_t queue_depth; /* asynchronous API: writes in flight at most; 0: 128 */
    int32_t completion;   /* enum wz_completion_mode */
    /* Adaptive completion (0: the defaults 32, 3, 30 us, 1000); see libwzero(3). */
    uint32_t high_watermark;
    uint32_t low_watermark;
    uint32_t interval_us;
    uint32_t max_loops;
    uint32_t reserved;
};

struct wz_writer; /* opaque */

/* One write handed back by wz_writer_complete(). */
struct wz_completion {
    uint64_t user_data;
    int64_t result; /* bytes written (durable), or a negative errno */
};

struct wz_writer_counters {
    uint32_t size; /* sizeof(struct wz_writer_counters), set by the caller */
    uint32_t reserved;
    uint64_t writes;
    uint64_t bytes;
    uint64_t fua_writes;
    uint64_t flushes;
    double p50_us; /* call (or submit) to durable */
    double p99_us;
    double p999_us;
    /* Mode WZ_DURABILITY_THROUGH: re-reads of the write cache this writer made, and its moves
     * out of that mode because the cache was no longer write-through. */
    uint64_t cache_rereads;
    uint64_t mode_changes;
    /* Mode WZ_DURABILITY_FLUSH on a file: writes with no other in flight, sent as RWF_DSYNC
     * (the filesystem's write and flush, as O_DSYNC) rather than followed by a flush of the
     * writer's own. Since 0.3.0: a caller built against 0.2.0's header (a smaller size) is
     * filled up to mode_changes only. */
    uint64_t dsync_writes;
};

/* Opens a durable writer over [offset, offset + length) of PATH (a file or block device). */
int wz_writer_open(const char *path, uint64_t offset, uint64_t length, const struct wz_writer_opts *opts,
                   struct wz_writer **out);
/* The same on an open descriptor (O_WRONLY or O_RDWR); FD stays the caller's. */
int wz_writer_open_fd(int fd, uint64_t offset, uint64_t length, const struct wz_writer_opts *opts,
                      struct wz_writer **out);
/* Writes LEN bytes (aligned buffer, offset and length); durable on return. Returns LEN. */
ssize_t wz_writer_pwrite(struct wz_writer *w, const void *buf, size_t len, uint64_t offset);
ssize_t wz_writer_pwritev(struct wz_writer *w, const struct iovec *iov, int iovcnt, uint64_t offset);
/* Queues one write (asynchronous API); -EBUSY when queue_depth writes are in flight. */
int wz_writer_submit(struct wz_writer *w, const void *buf, size_t len, uint64_t offset, uint64_t user_data);
/* Waits until at least MIN_COMPLETE queued writes are durable or failed (capped at those in
 * flight), stores up to MAX of them in OUT and returns how many it stored. */
int wz_writer_complete(struct wz_writer *w, struct wz_completion *out, unsigned max, unsigned min_complete);
/* Writes queued and not yet handed back by wz_writer_complete(). */
unsigned wz_writer_in_flight(const struct wz_writer *w);
/* enum wz_durability: the mode in use (never WZ_DURABILITY_AUTO); its reason in *reason
 * if not NULL (valid until the next call on W). */
int wz_writer_mode(const struct wz_writer *w, const char **reason);
/* O_DIRECT alignment the writer requires of buffers, offsets and lengths. */
uint32_t wz_writer_alignment(const struct wz_writer *w);
int wz_writer_stats(const struct wz_writer *w, struct wz_writer_counters *stats);
/* Re-reads the device's write cache and re-picks the mode (not during other calls on W). */
int wz_writer_refresh(struct wz_writer *w);
/* Waits for queued writes, closes, frees W (also on failure) and returns the first error a
 * user of durable writes must see. NULL is a no-op returning 0. */
int wz_writer_close(struct wz_writer *w);

#ifdef __cplusplus
}
#endif

#endif /* WZERO_WZERO_H */

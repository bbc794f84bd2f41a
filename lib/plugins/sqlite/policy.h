/* SPDX-License-Identifier: MIT */
/* The decisions of the wzero SQLite VFS as pure functions (no I/O), so that they are tested
 * from tables (policy_test in sqlite_test.c) apart from SQLite and the device. */
#ifndef WZERO_SQLITE_POLICY_H
#define WZERO_SQLITE_POLICY_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The WAL grows in chunks of this many bytes of written zeroes unless the URI parameter
 * wzero_wal_chunk says otherwise: SQLite's default autocheckpoint (1000 pages of 4 KiB plus
 * a 24-byte frame header each) restarts the WAL at about 4 MiB, so one chunk usually covers
 * the WAL's whole life and every later transaction overwrites written extents in place.
 * SQLite's own test suite (tools/sqlite-testsuite.sh) builds the VFS with this defined as a
 * variable, to run it once more with no chunk. */
#ifndef WZS_DEFAULT_WAL_CHUNK_BYTES
#define WZS_DEFAULT_WAL_CHUNK_BYTES (4u << 20)
#endif

/* What a write or a size hint asks for: make the file at least END bytes long. Returns the
 * size the file is grown to with written zeroes: END rounded up to CHUNK (SQLite's
 * SQLITE_FCNTL_CHUNK_SIZE semantics, os_unix.c fcntlSizeHint), END itself when CHUNK is 0,
 * and CURRENT (nothing to do) when the file is already that long. An END whose rounding
 * would overflow is returned unrounded. */
uint64_t wzs_grow_target(uint64_t current_bytes, uint64_t end_bytes, uint64_t chunk_bytes);

/* The chunk a file of this kind grows by: SQLITE_FCNTL_CHUNK_SIZE when the application set
 * one (> 0), else the WAL's automatic chunk for a WAL file, else 0 (the database grows to
 * exactly what SQLite hints, as the unix VFS does without a chunk size). */
uint64_t wzs_chunk_bytes(int is_wal, int64_t app_chunk_bytes, uint64_t wal_chunk_bytes);

/* Whether a growth by written zeroes that failed with ERR (a positive errno) gives way to the
 * unix VFS's own growth rather than failing SQLite's write: ENOSPC, EDQUOT and EFBIG say
 * that the chunk does not fit (the filesystem, the quota, the file size limit), not that the
 * write would fail. The write then grows the file by itself, as the unix VFS's does, and
 * the next growth tries the chunk again. Any other error is the write's error. */
int wzs_grow_gives_way(int err);

/* What the VFS knows when SQLite writes past the end of a file, or hints a size. */
struct wzs_grow_facts {
    uint64_t current_bytes; /* the file's size now */
    uint64_t write_at;      /* the write [write_at, end_bytes); write_at = end_bytes for a size hint */
    uint64_t end_bytes;
    uint64_t chunk_bytes;   /* wzs_chunk_bytes() */
    uint64_t limit_bytes;   /* the soft RLIMIT_FSIZE; UINT64_MAX: none */
    uint64_t gave_way_at;   /* the target of the last growth that gave way; 0 after one that fitted,
                             * and after a truncation */
};

/* What a write or a size hint does before the unix VFS's call. */
enum wzs_grow_step {
    /* Nothing to zero: the file is long enough, or the data itself is the growth (a write
     * that starts at or before the end, with no chunk beyond it). */
    WZS_GROW_NOTHING = 0,
    /* Grow to *TARGET with written zeroes (wzs_grow_target). */
    WZS_GROW_ZEROES = 1,
    /* *TARGET crosses the file size limit: not tried, it gives way. It would fail with EFBIG,
     * and the kernel sends SIGXFSZ, whose default action ends the process, to the thread
     * that crosses the limit: libwzero's own threads block it, but libwzero runs the call on
     * the caller's thread where unshare(CLONE_FILES) is refused. The unix VFS's write below
     * the limit raises neither. */
    WZS_GROW_OVER_LIMIT = 2,
    /* The last growth, to gave_way_at, gave way and this write ends at or before it: the
     * write grows the file itself, as the ones before it did. The chunk is tried again by
     * the first write or hint that reaches beyond it: at most one try per chunk of growth,
     * so a full filesystem costs the writes nothing more, and one freed meanwhile gets
     * chunks again. */
    WZS_GROW_WAIT = 3
};
enum wzs_grow_step wzs_grow_step(const struct wzs_grow_facts* facts, uint64_t* target);

/* The URI parameters the VFS reads (every other "wzero_" one is an error), parsed. */
struct wzs_uri_config {
    uint64_t wal_chunk_bytes; /* wzero_wal_chunk: decimal bytes, 0 (no chunk) to INT64_MAX */
    int fast_sync_allowed;    /* wzero_sync: "auto" 1 (the default), "fdatasync" 0 */
};

/* The defaults, as when no parameter is given. */
void wzs_uri_defaults(struct wzs_uri_config* config);

/* Whether KEY is in the VFS's parameter namespace: "wzero_" in any case. SQLite itself and
 * other VFSes read the others. */
int wzs_uri_is_ours(const char* key);

/* Applies one parameter KEY=VALUE of the VFS's namespace to CONFIG. Returns NULL when it is
 * taken, else why VALUE (or KEY) is refused, one phrase for a message that names both. No
 * value is ever replaced by a default: an empty value, a sign, a suffix ("1M"), spaces, hex
 * or a number beyond INT64_MAX are refused, where sqlite3_uri_int64() would return the
 * default or a negative number. */
const char* wzs_uri_apply(struct wzs_uri_config* config, const char* key, const char* value);

/* How xSync makes a file's writes durable. */
enum wzs_sync_action {
    /* The unix VFS's own xSync: fdatasync(2) (and the directory fsync it owes a new file).
     * fdatasync writes the page cache's dirty pages back, commits whatever metadata they
     * need (a new size, unwritten extents converted) and sends the device a cache flush
     * where the kernel believes the device has a volatile cache. */
    WZS_SYNC_UNIX = 0,
    /* sync_file_range(WAIT_BEFORE | WRITE | WAIT_AFTER) over the file: the dirty pages are
     * written to the device and waited for, with no journal commit and no cache flush. */
    WZS_SYNC_WRITEBACK = 1
};

/* What xSync knows about the file when it is called. Tri-states: 1 yes, 0 no, -1 unknown
 * (as struct wz_caps). */
struct wzs_sync_facts {
    int32_t cache_write_through; /* wz_caps.cache_effective == WZ_CACHE_WRITE_THROUGH */
    int32_t flush_needed;        /* wz_caps.flush_needed */
    uint64_t file_bytes;         /* the file's size now */
    uint64_t written_bytes;      /* [0, written_bytes) proven written extents by the zeroing */
    int32_t metadata_synced;     /* no growth or truncation since the last fdatasync succeeded */
};

/* The cheapest action that is durable for FACTS; never weaker than the unix VFS. Writeback
 * only when all of these hold: the device really is write-through (the record says so and
 * that no flush is needed), every byte of the file is a written extent (an overwrite then
 * needs no metadata: no size change, no unwritten-extent conversion, no allocation), and the
 * size and extents are already durable (an fdatasync succeeded after the last growth). A
 * reason is stored in *WHY when WHY is not NULL. */
enum wzs_sync_action wzs_sync_decide(const struct wzs_sync_facts* facts, const char** why);

#ifdef __cplusplus
}
#endif

#endif

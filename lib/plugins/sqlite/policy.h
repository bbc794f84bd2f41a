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
 * the WAL's whole life and every later transaction overwrites written extents in place. */
#define WZS_DEFAULT_WAL_CHUNK_BYTES (4u << 20)

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

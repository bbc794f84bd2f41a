/* SPDX-License-Identifier: MIT */
/* wzero_sqlite: a loadable SQLite extension that registers the VFS "wzero", a shim over the
 * default (unix) VFS. Files grow by written zeroes instead of holes or unwritten extents, and
 * the WAL's xSync takes the cheapest durable path the capability record allows. Locking, the
 * shared-memory WAL index, reads and SQLite's own writes are the unix VFS's, untouched.
 *
 *   sqlite3> .load ./wzero_sqlite
 *   sqlite3> .open file:app.db?vfs=wzero
 *   C:       sqlite3_open_v2("app.db", &db, flags, "wzero");
 *
 * The VFS is registered without becoming the default (opt in per connection, as the URI or
 * sqlite3_open_v2 name it), and the extension stays loaded for the life of the process
 * (SQLITE_OK_LOAD_PERMANENTLY): a VFS must outlive the connection that loaded it. */
#define _GNU_SOURCE 1 /* sync_file_range */
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include "policy.h"

#include <wzero/wzero.h>

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

enum wzs_kind { WZS_UNMANAGED = 0, WZS_MAIN_DB = 1, WZS_WAL = 2 };

struct wzs_file {
    sqlite3_file base;   /* pMethods: wzs_io_methods */
    sqlite3_file* sub;   /* the unix VFS's file, stored right after this struct */
    enum wzs_kind kind;
    int fd;              /* the unix VFS's descriptor (never closed here); -1 when unmanaged */
    const char* path;
    uint64_t known_bytes;     /* the size after our last look or write */
    uint64_t written_bytes;   /* [0, written_bytes) proven written extents */
    uint64_t synced_bytes;    /* the size when our last fdatasync succeeded */
    int metadata_synced;
    int64_t app_chunk_bytes;  /* SQLITE_FCNTL_CHUNK_SIZE */
    struct wzs_uri_config uri;
    uint64_t gave_way_at;     /* the target of the last growth that gave way (0: none since) */
    int32_t cache_write_through, flush_needed;
};

/* Counters for PRAGMA wzero_stats (process-wide; the tests read them). */
static struct {
    uint64_t grows, grow_bytes, grow_failures, syncs_unix, syncs_writeback, unmanaged_opens, grow_fallbacks;
} wzs_stats;
#define WZS_COUNT(field, n) __atomic_add_fetch(&wzs_stats.field, (n), __ATOMIC_RELAXED)

static sqlite3_vfs* wzs_unix_vfs;

static struct wzs_file* wzs(sqlite3_file* f) {
    return (struct wzs_file*)f;
}

/* The unix VFS's descriptor for SUB. os_unix.c's unixFile has started with these four
 * members since SQLite 3.7 (pMethod "always the first entry", pVfs, pInode, h). The layout
 * is not API, so every field is checked: the methods and VFS pointers must be the ones we
 * know, and the descriptor must be open read-write on the inode PATH names. Anything else
 * leaves the file unmanaged (a plain unix file), which is always correct.
 *
 * Why not a descriptor of our own: POSIX record locks belong to the process and inode, and
 * closing ANY descriptor of the inode in the process drops all of them (os_unix.c's header
 * comment). SQLite holds such locks on the database file, so nothing here opens or closes
 * the database's inode itself. libwzero's calls (wz_extend, wz_stat) may: they open and
 * close their descriptors in a descriptor table of their own, which keeps the process's
 * locks (ctest sqlite.vfs checks it). */
struct wzs_unix_file_head {
    const sqlite3_io_methods* pMethod;
    sqlite3_vfs* pVfs;
    void* pInode;
    int h;
};

static int wzs_unix_fd(sqlite3_file* sub, const char* path) {
    const struct wzs_unix_file_head* head = (const struct wzs_unix_file_head*)(void*)sub;
    struct stat by_fd, by_name;
    int fl;
    if (head->pMethod != sub->pMethods || head->pVfs != wzs_unix_vfs || head->h < 0) {
        return -1;
    }
    if (fstat(head->h, &by_fd) != 0 || stat(path, &by_name) != 0 || by_fd.st_dev != by_name.st_dev ||
        by_fd.st_ino != by_name.st_ino || !S_ISREG(by_fd.st_mode)) {
        return -1;
    }
    fl = fcntl(head->h, F_GETFL);
    if (fl < 0 || (fl & O_ACCMODE) != O_RDWR || (fl & O_APPEND) != 0) {
        return -1;
    }
    return head->h;
}

static int wzs_file_bytes(struct wzs_file* p, uint64_t* out) {
    struct stat st;
    if (fstat(p->fd, &st) != 0) {
        return SQLITE_IOERR_FSTAT;
    }
    *out = (uint64_t)st.st_size;
    return SQLITE_OK;
}

/* The database and the WAL alike: wz_extend() on the unix VFS's own descriptor (best method,
 * verified written extents), not synced here: SQLite's xSync after the writes makes the new
 * size and extents durable (an fdatasync, as metadata_synced is cleared). The database's
 * POSIX locks survive it: libwzero opens and closes its further descriptors of the file (the
 * O_DIRECT reopen, the probes) in a descriptor table of their own, never the process's
 * (libwzero(3), "POSIX record locks"). Returns 0, or the positive errno of the failure with
 * libwzero's message in WHY (a failed wz_extend has cut the file back to FROM). */
static int wzs_grow_zeroes(struct wzs_file* p, uint64_t from, uint64_t to, const char** why) {
    struct wz_zero_opts opts;
    int rc;
    memset(&opts, 0, sizeof opts);
    opts.size = sizeof opts;
    opts.flags = WZ_ZERO_NO_SYNC;
    opts.method = WZ_METHOD_AUTO;
    opts.verify = WZ_VERIFY_EXTENTS;
    rc = wz_extend(p->fd, to, &opts);
    if (rc != 0) {
        *why = wz_last_error();
        return -rc;
    }
    if (p->written_bytes >= from) {
        p->written_bytes = to; /* verified: [from, to) written, and [0, from) was */
    }
    return 0;
}

/* The soft RLIMIT_FSIZE in bytes; UINT64_MAX when there is none. */
static uint64_t wzs_file_size_limit(void) {
    struct rlimit lim;
    if (getrlimit(RLIMIT_FSIZE, &lim) != 0 || lim.rlim_cur == RLIM_INFINITY) {
        return UINT64_MAX;
    }
    return (uint64_t)lim.rlim_cur;
}

/* A chunk that does not fit gives way to the unix VFS: the write (or, for a size hint, the
 * unix VFS's own SQLITE_FCNTL_SIZE_HINT, with SQLite's chunk) grows the file by what it
 * needs, as without this VFS. Nothing is proven written past the old size then ([0,
 * written_bytes) stays where it was), so the file's syncs are fdatasync until it is cut and
 * regrown. Logged when a growth gives way after one that fitted: the cause first, as
 * sqlite3_log cuts a message at about 200 bytes. */
static void wzs_give_way(struct wzs_file* p, uint64_t target, const char* cause, const char* detail) {
    WZS_COUNT(grow_fallbacks, 1);
    if (p->gave_way_at == 0) {
        sqlite3_log(SQLITE_WARNING, "wzero: %s: written zeroes to %llu bytes do not fit; %s grows as with the unix "
                                    "VFS, the chunk is tried again past that size (%s)",
                    cause, (unsigned long long)target, p->path, detail);
    }
    p->gave_way_at = target;
}

/* Makes the file at least END bytes of written data or zeroes before SQLite writes
 * [WRITE_AT, END) (WRITE_AT = END for a size hint), or leaves the growth to the unix VFS
 * where the chunk does not fit. */
static int wzs_grow(struct wzs_file* p, uint64_t write_at, uint64_t end) {
    struct wzs_grow_facts facts;
    uint64_t target;
    const char* why = NULL;
    int rc, err;
    if (end <= p->known_bytes) {
        return SQLITE_OK;
    }
    /* Another connection (or process) may have grown the file since: decide on its size now.
     * SQLite writes the WAL and the database only under its own write or checkpoint lock. */
    if ((rc = wzs_file_bytes(p, &facts.current_bytes)) != SQLITE_OK) {
        return rc;
    }
    p->known_bytes = facts.current_bytes;
    facts.write_at = write_at;
    facts.end_bytes = end;
    facts.chunk_bytes = wzs_chunk_bytes(p->kind == WZS_WAL, p->app_chunk_bytes, p->uri.wal_chunk_bytes);
    facts.limit_bytes = wzs_file_size_limit();
    facts.gave_way_at = p->gave_way_at;
    switch (wzs_grow_step(&facts, &target)) {
    case WZS_GROW_NOTHING:
        return SQLITE_OK;
    case WZS_GROW_WAIT:
        WZS_COUNT(grow_fallbacks, 1);
        return SQLITE_OK;
    case WZS_GROW_OVER_LIMIT:
        wzs_give_way(p, target, "past the file size limit (RLIMIT_FSIZE)", "not tried");
        return SQLITE_OK;
    case WZS_GROW_ZEROES:
        break;
    }
    err = wzs_grow_zeroes(p, facts.current_bytes, target, &why);
    if (err != 0 && wzs_grow_gives_way(err)) {
        wzs_give_way(p, target, strerror(err), why);
        return SQLITE_OK;
    }
    if (err != 0) {
        WZS_COUNT(grow_failures, 1);
        sqlite3_log(SQLITE_IOERR_WRITE, "wzero: %s: %s", strerror(err), why);
        return SQLITE_IOERR_WRITE;
    }
    if (p->gave_way_at != 0) {
        sqlite3_log(SQLITE_NOTICE, "wzero: %s: grown by written zeroes to %llu bytes: chunks fit again", p->path,
                    (unsigned long long)target);
        p->gave_way_at = 0;
    }
    WZS_COUNT(grows, 1);
    WZS_COUNT(grow_bytes, target - facts.current_bytes);
    p->known_bytes = target;
    p->metadata_synced = 0;
    return SQLITE_OK;
}

static int wzs_close(sqlite3_file* f) {
    struct wzs_file* p = wzs(f);
    return p->sub->pMethods->xClose(p->sub);
}

static int wzs_read(sqlite3_file* f, void* buf, int amt, sqlite3_int64 ofst) {
    struct wzs_file* p = wzs(f);
    return p->sub->pMethods->xRead(p->sub, buf, amt, ofst);
}

static int wzs_write(sqlite3_file* f, const void* buf, int amt, sqlite3_int64 ofst) {
    struct wzs_file* p = wzs(f);
    int rc;
    if (p->kind != WZS_UNMANAGED && ofst >= 0 && amt > 0) {
        const uint64_t end = (uint64_t)ofst + (uint64_t)amt;
        if ((rc = wzs_grow(p, (uint64_t)ofst, end)) != SQLITE_OK) {
            return rc;
        }
        rc = p->sub->pMethods->xWrite(p->sub, buf, amt, ofst);
        if (rc == SQLITE_OK && end > p->known_bytes) {
            p->known_bytes = end;
            p->metadata_synced = 0;
        }
        return rc;
    }
    return p->sub->pMethods->xWrite(p->sub, buf, amt, ofst);
}

static int wzs_truncate(sqlite3_file* f, sqlite3_int64 size) {
    struct wzs_file* p = wzs(f);
    const int rc = p->sub->pMethods->xTruncate(p->sub, size);
    if (p->kind != WZS_UNMANAGED) {
        uint64_t now = 0;
        /* A file cut short may have room for a chunk again, wherever the last one gave way. */
        p->gave_way_at = 0;
        /* The unix VFS rounds up to its chunk size: look at what it left. */
        if (wzs_file_bytes(p, &now) == SQLITE_OK) {
            p->known_bytes = now;
            if (p->written_bytes > now) {
                p->written_bytes = now;
            }
        }
        p->metadata_synced = 0;
    }
    return rc;
}

/* After sync_file_range wrote the pages: whether the device still writes through. The record
 * said so when the WAL was opened, but Set Features FID 06h, a vendor tool or a controller
 * reset can turn the cache on at any time, and Linux does not re-read it: wz_write_cache()
 * reads it again when its answer is older than WZ_WRITE_CACHE_MAX_AGE_NS, so no sync returns
 * on an answer older than that. Once it says anything else, the file's syncs are the unix
 * VFS's fdatasync for good (SQLite reopens the WAL with a fresh record). */
static int wzs_still_write_through(struct wzs_file* p) {
    struct wz_cache_state wc;
    int rc;
    memset(&wc, 0, sizeof wc);
    wc.size = sizeof wc;
    rc = wz_write_cache(p->fd, WZ_WRITE_CACHE_MAX_AGE_NS, &wc);
    if (rc == 0 && wc.effective == WZ_CACHE_WRITE_THROUGH) {
        return 1;
    }
    sqlite3_log(SQLITE_NOTICE, "wzero: %s: the write cache is no longer write-through (%s): syncs are fdatasync",
                p->path, rc != 0 ? wz_last_error() : wc.effective == WZ_UNKNOWN ? "unknown" : "write-back");
    p->cache_write_through = rc != 0 || wc.effective == WZ_UNKNOWN ? WZ_UNKNOWN : 0;
    p->flush_needed = rc != 0 || wc.effective == WZ_UNKNOWN ? WZ_UNKNOWN : 1;
    return 0;
}

static int wzs_sync(sqlite3_file* f, int flags) {
    struct wzs_file* p = wzs(f);
    int rc;
    if (p->kind == WZS_WAL && p->uri.fast_sync_allowed) {
        struct wzs_sync_facts facts;
        uint64_t now = 0;
        if ((rc = wzs_file_bytes(p, &now)) != SQLITE_OK) {
            return rc;
        }
        facts.cache_write_through = p->cache_write_through;
        facts.flush_needed = p->flush_needed;
        facts.file_bytes = now;
        facts.written_bytes = p->written_bytes;
        /* A size we did not see synced (another process grew or cut the file) is metadata
         * that only an fdatasync commits. */
        facts.metadata_synced = p->metadata_synced && now == p->synced_bytes;
        if (wzs_sync_decide(&facts, NULL) == WZS_SYNC_WRITEBACK) {
            if (sync_file_range(p->fd, 0, 0,
                                SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER) != 0) {
                sqlite3_log(SQLITE_IOERR_FSYNC, "wzero: sync_file_range %s: %s", p->path, strerror(errno));
                return SQLITE_IOERR_FSYNC;
            }
            if (wzs_still_write_through(p)) {
                WZS_COUNT(syncs_writeback, 1);
                return SQLITE_OK;
            }
            /* The pages are on the device, maybe in its cache: the fdatasync below flushes it. */
        }
    }
    rc = p->sub->pMethods->xSync(p->sub, flags);
    if (p->kind != WZS_UNMANAGED) {
        WZS_COUNT(syncs_unix, 1);
        if (rc == SQLITE_OK) {
            uint64_t now = 0;
            if (wzs_file_bytes(p, &now) == SQLITE_OK) {
                p->synced_bytes = now;
                p->metadata_synced = 1;
            }
        }
    }
    return rc;
}

static int wzs_file_size(sqlite3_file* f, sqlite3_int64* size) {
    struct wzs_file* p = wzs(f);
    return p->sub->pMethods->xFileSize(p->sub, size);
}

static int wzs_lock(sqlite3_file* f, int level) {
    struct wzs_file* p = wzs(f);
    return p->sub->pMethods->xLock(p->sub, level);
}

static int wzs_unlock(sqlite3_file* f, int level) {
    struct wzs_file* p = wzs(f);
    return p->sub->pMethods->xUnlock(p->sub, level);
}

static int wzs_check_reserved_lock(sqlite3_file* f, int* out) {
    struct wzs_file* p = wzs(f);
    return p->sub->pMethods->xCheckReservedLock(p->sub, out);
}

static int wzs_file_control(sqlite3_file* f, int op, void* arg) {
    struct wzs_file* p = wzs(f);
    int rc;
    switch (op) {
    case SQLITE_FCNTL_CHUNK_SIZE:
        if (p->kind != WZS_UNMANAGED) {
            p->app_chunk_bytes = *(int*)arg;
        }
        break; /* and to the unix VFS, which rounds its truncations to the chunk */
    case SQLITE_FCNTL_SIZE_HINT:
        if (p->kind != WZS_UNMANAGED) {
            const sqlite3_int64 hint = *(sqlite3_int64*)arg;
            if (hint > 0 && (rc = wzs_grow(p, (uint64_t)hint, (uint64_t)hint)) != SQLITE_OK) {
                return rc;
            }
        }
        /* The unix VFS then finds the file long enough (nothing to fallocate) and only does
         * its mmap bookkeeping; or, where the chunk gave way, grows it as without this VFS. */
        break;
    case SQLITE_FCNTL_VFSNAME: {
        char** out = (char**)arg;
        char* below = NULL;
        rc = p->sub->pMethods->xFileControl(p->sub, op, &below);
        *out = sqlite3_mprintf("wzero/%z", below != NULL ? below : sqlite3_mprintf("unix"));
        return SQLITE_OK;
    }
    case SQLITE_FCNTL_PRAGMA: {
        char** args = (char**)arg;
        if (sqlite3_stricmp(args[1], "wzero_stats") == 0) {
            args[0] = sqlite3_mprintf("grows=%llu grow_bytes=%llu grow_failures=%llu syncs_unix=%llu "
                                      "syncs_writeback=%llu unmanaged_opens=%llu grow_fallbacks=%llu",
                                      (unsigned long long)wzs_stats.grows, (unsigned long long)wzs_stats.grow_bytes,
                                      (unsigned long long)wzs_stats.grow_failures,
                                      (unsigned long long)wzs_stats.syncs_unix,
                                      (unsigned long long)wzs_stats.syncs_writeback,
                                      (unsigned long long)wzs_stats.unmanaged_opens,
                                      (unsigned long long)wzs_stats.grow_fallbacks);
            return SQLITE_OK;
        }
        break;
    }
    default:
        break;
    }
    return p->sub->pMethods->xFileControl(p->sub, op, arg);
}

static int wzs_sector_size(sqlite3_file* f) {
    struct wzs_file* p = wzs(f);
    return p->sub->pMethods->xSectorSize(p->sub);
}

static int wzs_device_characteristics(sqlite3_file* f) {
    struct wzs_file* p = wzs(f);
    return p->sub->pMethods->xDeviceCharacteristics(p->sub);
}

static int wzs_shm_map(sqlite3_file* f, int region, int size, int extend, void volatile** out) {
    struct wzs_file* p = wzs(f);
    return p->sub->pMethods->xShmMap(p->sub, region, size, extend, out);
}

static int wzs_shm_lock(sqlite3_file* f, int offset, int n, int flags) {
    struct wzs_file* p = wzs(f);
    return p->sub->pMethods->xShmLock(p->sub, offset, n, flags);
}

static void wzs_shm_barrier(sqlite3_file* f) {
    struct wzs_file* p = wzs(f);
    p->sub->pMethods->xShmBarrier(p->sub);
}

static int wzs_shm_unmap(sqlite3_file* f, int delete_flag) {
    struct wzs_file* p = wzs(f);
    return p->sub->pMethods->xShmUnmap(p->sub, delete_flag);
}

static int wzs_fetch(sqlite3_file* f, sqlite3_int64 ofst, int amt, void** out) {
    struct wzs_file* p = wzs(f);
    if (p->sub->pMethods->iVersion < 3) {
        *out = NULL;
        return SQLITE_OK;
    }
    return p->sub->pMethods->xFetch(p->sub, ofst, amt, out);
}

static int wzs_unfetch(sqlite3_file* f, sqlite3_int64 ofst, void* ptr) {
    struct wzs_file* p = wzs(f);
    if (p->sub->pMethods->iVersion < 3) {
        return SQLITE_OK;
    }
    return p->sub->pMethods->xUnfetch(p->sub, ofst, ptr);
}

/* Version 2 (no xFetch) for a file whose unix methods lack the shm calls is not needed: the
 * unix VFS's methods are all version 3. */
static const sqlite3_io_methods wzs_io_methods = {
    3,
    wzs_close,
    wzs_read,
    wzs_write,
    wzs_truncate,
    wzs_sync,
    wzs_file_size,
    wzs_lock,
    wzs_unlock,
    wzs_check_reserved_lock,
    wzs_file_control,
    wzs_sector_size,
    wzs_device_characteristics,
    wzs_shm_map,
    wzs_shm_lock,
    wzs_shm_barrier,
    wzs_shm_unmap,
    wzs_fetch,
    wzs_unfetch,
};

/* The VFS's URI parameters of NAME (a database or WAL filename from SQLite) into CONFIG.
 * SQLITE_CANTOPEN, what a VFS returns for a file it will not open, when one is malformed,
 * unknown or given twice: logged with the parameter, its value and why, before anything is
 * opened or created. A misspelt or malformed parameter is never replaced by a default in
 * silence (sqlite3_uri_int64 would). */
static int wzs_read_uri(const char* name, struct wzs_uri_config* config) {
    wzs_uri_defaults(config);
    for (int i = 0;; i++) {
        const char* key = sqlite3_uri_key(name, i);
        const char* value;
        const char* why = NULL;
        if (key == NULL) {
            return SQLITE_OK;
        }
        if (!wzs_uri_is_ours(key)) {
            continue;
        }
        value = sqlite3_uri_parameter(name, key);
        for (int j = 0; j < i && why == NULL; j++) {
            if (strcmp(sqlite3_uri_key(name, j), key) == 0) {
                why = "given more than once";
            }
        }
        if (why == NULL) {
            why = wzs_uri_apply(config, key, value != NULL ? value : "");
        }
        if (why != NULL) {
            /* The parameter and the reason first: sqlite3_log cuts a message at about 200 bytes. */
            sqlite3_log(SQLITE_CANTOPEN, "wzero: URI parameter %s=\"%.64s\": %s (open %s)", key,
                        value != NULL ? value : "", why, name);
            return SQLITE_CANTOPEN;
        }
    }
}

/* The sub-file starts at the first 16-byte boundary after our struct. */
#define WZS_HEAD_BYTES ((sizeof(struct wzs_file) + 15u) & ~(size_t)15u)

static int wzs_open(sqlite3_vfs* vfs, sqlite3_filename name, sqlite3_file* f, int flags, int* out_flags) {
    struct wzs_file* p = wzs(f);
    struct wzs_uri_config uri;
    int rc;
    (void)vfs;
    memset(p, 0, sizeof *p);
    p->sub = (sqlite3_file*)(void*)((char*)f + WZS_HEAD_BYTES);
    p->fd = -1;
    wzs_uri_defaults(&uri);
    if (name != NULL && (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL)) != 0 &&
        (rc = wzs_read_uri(name, &uri)) != SQLITE_OK) {
        p->base.pMethods = NULL; /* SQLite then does not call xClose */
        return rc;
    }
    rc = wzs_unix_vfs->xOpen(wzs_unix_vfs, name, p->sub, flags, out_flags);
    if (rc != SQLITE_OK || p->sub->pMethods == NULL) {
        p->base.pMethods = NULL; /* SQLite then does not call xClose */
        if (rc == SQLITE_OK) {
            rc = SQLITE_CANTOPEN;
        }
        return rc;
    }
    p->base.pMethods = &wzs_io_methods;
    if (name == NULL || (flags & SQLITE_OPEN_READWRITE) == 0 ||
        (flags & (SQLITE_OPEN_MAIN_DB | SQLITE_OPEN_WAL)) == 0) {
        return SQLITE_OK; /* journals, temporary files, read-only opens: plain unix files */
    }
    p->fd = wzs_unix_fd(p->sub, name);
    if (p->fd < 0) {
        WZS_COUNT(unmanaged_opens, 1);
        sqlite3_log(SQLITE_NOTICE, "wzero: %s: the unix VFS's descriptor was not recognised; plain unix file",
                    name);
        return SQLITE_OK;
    }
    p->path = name;
    p->kind = (flags & SQLITE_OPEN_WAL) != 0 ? WZS_WAL : WZS_MAIN_DB;
    p->cache_write_through = WZ_UNKNOWN;
    p->flush_needed = WZ_UNKNOWN;
    p->uri = uri;
    if (wzs_file_bytes(p, &p->known_bytes) != SQLITE_OK) {
        p->kind = WZS_UNMANAGED;
        return SQLITE_OK;
    }
    /* An empty file is trivially proven; a WAL found non-empty (left by a crash, or
     * persistent) is not: its syncs stay fdatasync until it is cut and regrown. */
    p->written_bytes = 0;
    p->synced_bytes = p->known_bytes;
    p->metadata_synced = 0;
    if (p->kind == WZS_WAL) {
        struct wz_caps caps;
        memset(&caps, 0, sizeof caps);
        caps.size = sizeof caps;
        if (wz_stat(name, &caps) == 0) {
            p->cache_write_through = caps.cache_effective == WZ_CACHE_WRITE_THROUGH ? 1
                                     : caps.cache_effective == WZ_UNKNOWN           ? WZ_UNKNOWN
                                                                                    : 0;
            p->flush_needed = caps.flush_needed;
        } else {
            sqlite3_log(SQLITE_NOTICE, "wzero: %s (syncs stay fdatasync)", wz_last_error());
        }
    }
    return SQLITE_OK;
}

static int wzs_delete(sqlite3_vfs* vfs, const char* name, int sync_dir) {
    (void)vfs;
    return wzs_unix_vfs->xDelete(wzs_unix_vfs, name, sync_dir);
}

static int wzs_access(sqlite3_vfs* vfs, const char* name, int flags, int* out) {
    (void)vfs;
    return wzs_unix_vfs->xAccess(wzs_unix_vfs, name, flags, out);
}

static int wzs_full_pathname(sqlite3_vfs* vfs, const char* name, int n, char* out) {
    (void)vfs;
    return wzs_unix_vfs->xFullPathname(wzs_unix_vfs, name, n, out);
}

static void* wzs_dl_open(sqlite3_vfs* vfs, const char* name) {
    (void)vfs;
    return wzs_unix_vfs->xDlOpen(wzs_unix_vfs, name);
}

static void wzs_dl_error(sqlite3_vfs* vfs, int n, char* out) {
    (void)vfs;
    wzs_unix_vfs->xDlError(wzs_unix_vfs, n, out);
}

static void (*wzs_dl_sym(sqlite3_vfs* vfs, void* handle, const char* sym))(void) {
    (void)vfs;
    return wzs_unix_vfs->xDlSym(wzs_unix_vfs, handle, sym);
}

static void wzs_dl_close(sqlite3_vfs* vfs, void* handle) {
    (void)vfs;
    wzs_unix_vfs->xDlClose(wzs_unix_vfs, handle);
}

static int wzs_randomness(sqlite3_vfs* vfs, int n, char* out) {
    (void)vfs;
    return wzs_unix_vfs->xRandomness(wzs_unix_vfs, n, out);
}

static int wzs_sleep(sqlite3_vfs* vfs, int us) {
    (void)vfs;
    return wzs_unix_vfs->xSleep(wzs_unix_vfs, us);
}

static int wzs_current_time(sqlite3_vfs* vfs, double* out) {
    (void)vfs;
    return wzs_unix_vfs->xCurrentTime(wzs_unix_vfs, out);
}

static int wzs_get_last_error(sqlite3_vfs* vfs, int n, char* out) {
    (void)vfs;
    return wzs_unix_vfs->xGetLastError(wzs_unix_vfs, n, out);
}

static int wzs_current_time_int64(sqlite3_vfs* vfs, sqlite3_int64* out) {
    (void)vfs;
    return wzs_unix_vfs->xCurrentTimeInt64(wzs_unix_vfs, out);
}

/* Version 3: the unix VFS's system-call overrides, passed on (SQLite's own tests replace its
 * system calls through the default VFS to inject failures). The VFS's own calls (fstat,
 * sync_file_range, libwzero's) are not overridden by them. */
static int wzs_set_system_call(sqlite3_vfs* vfs, const char* name, sqlite3_syscall_ptr call) {
    (void)vfs;
    return wzs_unix_vfs->xSetSystemCall(wzs_unix_vfs, name, call);
}

static sqlite3_syscall_ptr wzs_get_system_call(sqlite3_vfs* vfs, const char* name) {
    (void)vfs;
    return wzs_unix_vfs->xGetSystemCall(wzs_unix_vfs, name);
}

static const char* wzs_next_system_call(sqlite3_vfs* vfs, const char* name) {
    (void)vfs;
    return wzs_unix_vfs->xNextSystemCall(wzs_unix_vfs, name);
}

static sqlite3_vfs wzs_vfs = {
    3,    /* iVersion: set to the unix VFS's (2 or 3) at registration */
    0,    /* szOsFile: set at registration */
    0,    /* mxPathname: the unix VFS's */
    NULL, /* pNext */
    "wzero",
    NULL, /* pAppData */
    wzs_open,
    wzs_delete,
    wzs_access,
    wzs_full_pathname,
    wzs_dl_open,
    wzs_dl_error,
    wzs_dl_sym,
    wzs_dl_close,
    wzs_randomness,
    wzs_sleep,
    wzs_current_time,
    wzs_get_last_error,
    wzs_current_time_int64,
    wzs_set_system_call,
    wzs_get_system_call,
    wzs_next_system_call,
};

#ifdef __cplusplus
extern "C"
#endif
    __attribute__((visibility("default"))) int
    sqlite3_wzerosqlite_init(sqlite3* db, char** err, const sqlite3_api_routines* api) {
    int rc;
    (void)db;
    SQLITE_EXTENSION_INIT2(api);
    /* The routines table of an older SQLite ends before sqlite3_uri_key. */
    if (sqlite3_libversion_number() < 3031000) {
        *err = sqlite3_mprintf("wzero: SQLite %s is older than 3.31, which the VFS needs", sqlite3_libversion());
        return SQLITE_ERROR;
    }
    if (sqlite3_vfs_find("wzero") == &wzs_vfs) {
        return SQLITE_OK_LOAD_PERMANENTLY; /* loaded again by another connection */
    }
    wzs_unix_vfs = sqlite3_vfs_find(NULL);
    if (wzs_unix_vfs == NULL || strncmp(wzs_unix_vfs->zName, "unix", 4) != 0 || wzs_unix_vfs->iVersion < 2) {
        *err = sqlite3_mprintf("wzero: the default VFS is %s, not a unix VFS",
                               wzs_unix_vfs != NULL ? wzs_unix_vfs->zName : "missing");
        return SQLITE_ERROR;
    }
    wzs_vfs.szOsFile = (int)WZS_HEAD_BYTES + wzs_unix_vfs->szOsFile;
    wzs_vfs.mxPathname = wzs_unix_vfs->mxPathname;
    wzs_vfs.iVersion = wzs_unix_vfs->iVersion >= 3 ? 3 : 2;
    rc = sqlite3_vfs_register(&wzs_vfs, 0);
    return rc == SQLITE_OK ? SQLITE_OK_LOAD_PERMANENTLY : rc;
}

/* SPDX-License-Identifier: MIT */
/* The three ways a database makes a WAL segment, and the first pass of durable appends into
 * a fresh one, one operation per run so that bench/wal.sh can interleave them, drop caches
 * and mark the device trace between them.
 *
 *   wzero_wal_bench create wzero|pg|fallocate DIR NAME SIZE
 *       prints "create METHOD NANOSECONDS"
 *   wzero_wal_bench append dsync|wzero|plain FILE RECORD_BYTES RECORDS
 *       sequential RECORD_BYTES writes from offset 0, each durable on return;
 *       prints "append KIND IOPS P50_US MODE"
 *   wzero_wal_bench mark DEVICE LBA
 *       one 512-byte O_DIRECT write at LBA of DEVICE, a separator in a QEMU trace
 *
 * Methods (each leaves NAME complete, zeroed and durable, or fails):
 *   wzero      wz_create_zeroed() with default options.
 *   pg         PostgreSQL's XLogFileInitInternal() with wal_init_zero=on: a temporary file,
 *              pg_pwrite_zeros() (pwritev of up to PG_IOV_MAX = 32 iovecs, all pointing at
 *              one 8 KiB zero block), pg_fsync() (fsync(2)), then durable_rename(): rename
 *              and a directory fsync. PostgreSQL < 15 used durable_rename_excl() (link +
 *              unlink, so as not to replace an existing segment); rename() costs the same
 *              here, where no segment of that name exists.
 *   fallocate  fallocate(fd, 0, 0, SIZE) + fsync + rename + directory fsync: what RocksDB
 *              and TigerBeetle do. The extents are unwritten, so the first write to each
 *              block later converts it, a metadata change that an O_DSYNC write must commit.
 * Append kinds:
 *   dsync      pwrite() on O_WRONLY|O_DSYNC|O_DIRECT: PostgreSQL's wal_sync_method=open_datasync
 *              with direct I/O, and the way most engines write a WAL.
 *   wzero      the C durable writer (wz_writer_open_fd, wz_writer_pwrite) in auto mode.
 *   plain      pwrite() on O_WRONLY|O_DIRECT: the same writes with no durability at all, the
 *              ceiling a durable append can approach (mode "none"). */
#define _GNU_SOURCE /* O_DIRECT, fallocate */

#include <wzero/wzero.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

enum { pg_block_bytes = 8192, pg_iov_max = 32 };

static uint64_t now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int fail(const char *what, const char *path) {
    fprintf(stderr, "wzero_wal_bench: %s %s: %s\n", what, path, strerror(errno));
    return 1;
}

static int fsync_dir(const char *dir) {
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) {
        return fail("open", dir);
    }
    if (fsync(fd) != 0) {
        close(fd);
        return fail("fsync", dir);
    }
    close(fd);
    return 0;
}

/* pg_pwrite_zeros(): one static 8 KiB zero block, repeated in the iovec array. */
static int pg_pwrite_zeros(int fd, uint64_t size) {
    static const char zero_block[pg_block_bytes];
    struct iovec iov[pg_iov_max];
    uint64_t offset = 0;
    int i;
    for (i = 0; i < pg_iov_max; i++) {
        iov[i].iov_base = (void *)zero_block;
        iov[i].iov_len = pg_block_bytes;
    }
    while (offset < size) {
        uint64_t left_blocks = (size - offset) / pg_block_bytes;
        int n = left_blocks < pg_iov_max ? (int)left_blocks : pg_iov_max;
        ssize_t done = pwritev(fd, iov, n, (off_t)offset);
        if (done <= 0) {
            return -1;
        }
        /* A short write is continued from where it stopped, as pg_pwritev_with_retry does;
         * a multiple of the block size comes back in practice. */
        offset += (uint64_t)done;
    }
    return 0;
}

/* pg and fallocate: fill a temporary, make it durable, rename it, fsync the directory. */
static int create_by_temp(const char *method, const char *dir, const char *name, uint64_t size) {
    char tmp[4096];
    char final[4096];
    int fd;
    snprintf(tmp, sizeof tmp, "%s/xlogtemp.%ld", dir, (long)getpid());
    snprintf(final, sizeof final, "%s/%s", dir, name);
    fd = open(tmp, O_RDWR | O_CREAT | O_EXCL, 0600);
    if (fd < 0) {
        return fail("open", tmp);
    }
    if (strcmp(method, "pg") == 0) {
        if (pg_pwrite_zeros(fd, size) != 0) {
            fail("pwritev", tmp);
            goto out_unlink;
        }
    } else if (fallocate(fd, 0, 0, (off_t)size) != 0) {
        fail("fallocate", tmp);
        goto out_unlink;
    }
    if (fsync(fd) != 0) {
        fail("fsync", tmp);
        goto out_unlink;
    }
    close(fd);
    if (rename(tmp, final) != 0) {
        fail("rename to", final);
        unlink(tmp);
        return 1;
    }
    return fsync_dir(dir);

out_unlink:
    close(fd);
    unlink(tmp);
    return 1;
}

static int create_wzero(const char *dir, const char *name, uint64_t size) {
    int dirfd = open(dir, O_RDONLY | O_DIRECTORY);
    int rc;
    if (dirfd < 0) {
        return fail("open", dir);
    }
    rc = wz_create_zeroed(dirfd, name, size, 0600, NULL);
    close(dirfd);
    if (rc != 0) {
        fprintf(stderr, "wzero_wal_bench: %s\n", wz_last_error());
        return 1;
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a;
    uint64_t y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

static int append(const char *kind, const char *path, size_t record_bytes, unsigned records) {
    int use_writer = strcmp(kind, "wzero") == 0;
    int plain = strcmp(kind, "plain") == 0;
    struct wz_writer *w = NULL;
    const char *mode = plain ? "none" : "dsync";
    uint64_t *lat_ns = calloc(records, sizeof *lat_ns);
    void *buf = NULL;
    uint64_t start;
    uint64_t total;
    unsigned i;
    int rc = 1;
    int fd = open(path, use_writer ? O_RDWR : plain ? O_WRONLY | O_DIRECT : O_WRONLY | O_DSYNC | O_DIRECT);
    if (fd < 0 || lat_ns == NULL || posix_memalign(&buf, 4096, record_bytes) != 0) {
        fail("open", path);
        goto out;
    }
    memset(buf, 0x5a, record_bytes);
    if (use_writer) {
        int err = wz_writer_open_fd(fd, 0, (uint64_t)record_bytes * records, NULL, &w);
        if (err != 0) {
            fprintf(stderr, "wzero_wal_bench: %s\n", wz_last_error());
            goto out;
        }
        switch (wz_writer_mode(w, NULL)) {
        case WZ_DURABILITY_THROUGH: mode = "through"; break;
        case WZ_DURABILITY_FUA: mode = "fua"; break;
        case WZ_DURABILITY_FLUSH: mode = "flush"; break;
        default: mode = "dsync"; break;
        }
    }
    start = now_ns();
    for (i = 0; i < records; i++) {
        uint64_t t0 = now_ns();
        uint64_t offset = (uint64_t)i * record_bytes;
        ssize_t done = use_writer ? wz_writer_pwrite(w, buf, record_bytes, offset)
                                  : pwrite(fd, buf, record_bytes, (off_t)offset);
        if (done != (ssize_t)record_bytes) {
            if (use_writer) {
                fprintf(stderr, "wzero_wal_bench: %s\n", wz_last_error());
            } else {
                fail("pwrite", path);
            }
            goto out;
        }
        lat_ns[i] = now_ns() - t0;
    }
    total = now_ns() - start;
    if (use_writer && wz_writer_close(w) != 0) {
        w = NULL;
        fprintf(stderr, "wzero_wal_bench: %s\n", wz_last_error());
        goto out;
    }
    w = NULL;
    qsort(lat_ns, records, sizeof *lat_ns, cmp_u64);
    printf("append %s %.0f %.1f %s\n", kind, records * 1e9 / (double)total, lat_ns[records / 2] / 1e3, mode);
    rc = 0;
out:
    wz_writer_close(w); /* wz: ignored-error (only reached on an earlier failure) */
    if (fd >= 0) {
        close(fd);
    }
    free(buf);
    free(lat_ns);
    return rc;
}

static int mark(const char *device, uint64_t lba) {
    void *buf = NULL;
    int fd = open(device, O_WRONLY | O_DIRECT);
    int rc = 0;
    if (fd < 0 || posix_memalign(&buf, 4096, 512) != 0) {
        return fail("open", device);
    }
    memset(buf, 0, 512);
    if (pwrite(fd, buf, 512, (off_t)(lba * 512)) != 512 || fdatasync(fd) != 0) {
        rc = fail("pwrite", device);
    }
    close(fd);
    free(buf);
    return rc;
}

static int usage(void) {
    fprintf(stderr, "usage: wzero_wal_bench create wzero|pg|fallocate DIR NAME SIZE\n"
                    "       wzero_wal_bench append dsync|wzero|plain FILE RECORD_BYTES RECORDS\n"
                    "       wzero_wal_bench mark DEVICE LBA\n");
    return 1;
}

int main(int argc, char **argv) {
    if (argc == 6 && strcmp(argv[1], "create") == 0) {
        const char *method = argv[2];
        uint64_t size = strtoull(argv[5], NULL, 0);
        uint64_t t0;
        int rc;
        if (size == 0 || size % pg_block_bytes != 0) {
            fprintf(stderr, "wzero_wal_bench: SIZE must be a multiple of %d\n", pg_block_bytes);
            return 1;
        }
        t0 = now_ns();
        if (strcmp(method, "wzero") == 0) {
            rc = create_wzero(argv[3], argv[4], size);
        } else if (strcmp(method, "pg") == 0 || strcmp(method, "fallocate") == 0) {
            rc = create_by_temp(method, argv[3], argv[4], size);
        } else {
            return usage();
        }
        if (rc == 0) {
            printf("create %s %llu\n", method, (unsigned long long)(now_ns() - t0));
        }
        return rc;
    }
    if (argc == 6 && strcmp(argv[1], "append") == 0) {
        size_t record_bytes = strtoul(argv[4], NULL, 0);
        unsigned records = (unsigned)strtoul(argv[5], NULL, 0);
        if ((strcmp(argv[2], "dsync") != 0 && strcmp(argv[2], "wzero") != 0 && strcmp(argv[2], "plain") != 0) ||
            record_bytes == 0 ||
            record_bytes % 4096 != 0 || records == 0) {
            return usage();
        }
        return append(argv[2], argv[3], record_bytes, records);
    }
    if (argc == 4 && strcmp(argv[1], "mark") == 0) {
        return mark(argv[2], strtoull(argv[3], NULL, 0));
    }
    return usage();
}

/* SPDX-License-Identifier: MIT */
/* A write-ahead log's segment lifecycle through libwzero's C API:
 *   1. create N segments of 16 MiB that are written zeroes from the start (wz_create_zeroed:
 *      a segment appears under its name only complete and durable, never half-written);
 *   2. append records to the first one through the durable writer (every wz_writer_pwrite
 *      returns once the record is durable, in the cheapest mode the device allows);
 *   3. recycle it in place for reuse (wz_rezero: zeroes that stay written extents, so the
 *      next pass of appends does not pay for unwritten-extent conversion).
 *
 * Build against the installed library:
 *   cc -std=c99 wal_segments.c $(pkg-config --cflags --libs wzero) -o wal_segments
 * Run:
 *   ./wal_segments [-n SEGMENTS] [-r RECORDS] [-b RECORD_BYTES] DIR
 * The segments go to DIR/pg_wal (made if missing), named through the database directory's
 * descriptor as openat(2) names files: "pg_wal/000000010000000000000001". */
#define _POSIX_C_SOURCE 200809L /* openat, mkdirat, getopt, clock_gettime, posix_memalign */

#include <wzero/wzero.h>

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define SEGMENT_BYTES (16u << 20) /* PostgreSQL's default wal_segment_size */

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static const char *mode_name(int mode) {
    switch (mode) {
    case WZ_DURABILITY_THROUGH: return "through"; /* write-through device: plain O_DIRECT */
    case WZ_DURABILITY_FUA: return "fua";         /* one FUA write, no flush */
    case WZ_DURABILITY_FLUSH: return "flush";     /* writes + a flush shared by a group */
    default: return "dsync";                      /* O_DSYNC | O_DIRECT */
    }
}

/* Errors come back as a negative errno; wz_last_error() names the operation, path and range. */
static int die(const char *call, int err) {
    fprintf(stderr, "wal_segments: %s: %s (%s)\n", call, wz_last_error(), strerror(-err));
    return 1;
}

int main(int argc, char **argv) {
    unsigned segments = 4;
    unsigned records = 1024;
    unsigned record_bytes = 8192; /* PostgreSQL's XLOG_BLCKSZ; 4096 works as well */
    struct wz_writer_counters stats;
    struct wz_writer *w;
    const char *reason;
    char name[40];
    void *record;
    double t0;
    double elapsed_ms;
    int dirfd;
    int fd;
    int opt;
    int rc;
    unsigned i;
    size_t align;

    while ((opt = getopt(argc, argv, "n:r:b:")) != -1) {
        if (opt == 'n') {
            segments = (unsigned)strtoul(optarg, NULL, 0);
        } else if (opt == 'r') {
            records = (unsigned)strtoul(optarg, NULL, 0);
        } else if (opt == 'b') {
            record_bytes = (unsigned)strtoul(optarg, NULL, 0);
        } else {
            return 1;
        }
    }
    if (optind + 1 != argc || segments == 0 || record_bytes == 0 || record_bytes % 4096 != 0 ||
        (uint64_t)records * record_bytes > SEGMENT_BYTES) {
        fprintf(stderr, "usage: wal_segments [-n SEGMENTS] [-r RECORDS] [-b RECORD_BYTES (4096, 8192)] DIR\n"
                        "(RECORDS * RECORD_BYTES must fit in one 16 MiB segment)\n");
        return 1;
    }
    dirfd = open(argv[optind], O_RDONLY | O_DIRECTORY);
    if (dirfd < 0) {
        perror(argv[optind]);
        return 1;
    }
    if (mkdirat(dirfd, "pg_wal", 0700) != 0 && errno != EEXIST) {
        perror("pg_wal");
        return 1;
    }

    /* 1. Segments. NULL options: automatic method, verified written extents, durable on
     *    return (file data and the directory entry). An existing name is -EEXIST. */
    for (i = 0; i < segments; i++) {
        snprintf(name, sizeof name, "pg_wal/%08X%08X%08X", 1u, 0u, i + 1);
        t0 = now_ms();
        rc = wz_create_zeroed(dirfd, name, SEGMENT_BYTES, 0600, NULL);
        if (rc != 0) {
            return die("wz_create_zeroed", rc);
        }
        printf("created %s: 16 MiB of written zeroes in %.1f ms\n", name, now_ms() - t0);
    }

    /* 2. Appends to the first segment. The writer takes the caller's descriptor (it reopens
     *    the file itself for O_DIRECT) and picks the durability mode from the device. */
    snprintf(name, sizeof name, "pg_wal/%08X%08X%08X", 1u, 0u, 1u);
    fd = openat(dirfd, name, O_RDWR);
    if (fd < 0) {
        perror(name);
        return 1;
    }
    rc = wz_writer_open_fd(fd, 0, SEGMENT_BYTES, NULL, &w);
    if (rc != 0) {
        return die("wz_writer_open_fd", rc);
    }
    rc = wz_writer_mode(w, &reason);
    printf("writer mode %s: %s\n", mode_name(rc), reason);
    /* O_DIRECT: buffers, offsets and lengths aligned as the writer says (a record size that
     * is a multiple of 4096 satisfies every device this runs on). */
    align = wz_writer_alignment(w) > 4096 ? wz_writer_alignment(w) : 4096;
    if (posix_memalign(&record, align, record_bytes) != 0) {
        fprintf(stderr, "wal_segments: out of memory\n");
        return 1;
    }
    t0 = now_ms();
    for (i = 0; i < records; i++) {
        uint64_t lsn = (uint64_t)i * record_bytes;
        memset(record, 0, record_bytes);
        memcpy(record, &lsn, sizeof lsn); /* a real record: header, LSN, CRC, payload */
        ssize_t done = wz_writer_pwrite(w, record, record_bytes, lsn);
        if (done != (ssize_t)record_bytes) {
            return die("wz_writer_pwrite", (int)done);
        }
    }
    elapsed_ms = now_ms() - t0;
    printf("appended %u records of %u bytes in %.1f ms (%.0f durable writes/s)\n", records, record_bytes,
           elapsed_ms, records / (elapsed_ms / 1e3));
    stats.size = sizeof stats;
    if (wz_writer_stats(w, &stats) == 0) {
        printf("writer: %llu writes, %llu FUA writes, %llu flushes, p50 %.0f us, p99 %.0f us\n",
               (unsigned long long)stats.writes, (unsigned long long)stats.fua_writes,
               (unsigned long long)stats.flushes, stats.p50_us, stats.p99_us);
    }
    rc = wz_writer_close(w); /* the first error a durable write hit, if any */
    if (rc != 0) {
        return die("wz_writer_close", rc);
    }
    free(record);

    /* 3. Recycle: the segment is no longer needed (its records were checkpointed). Zero it
     *    in place, still written extents, durable on return; a database then renames it to
     *    a future segment name. */
    t0 = now_ms();
    rc = wz_rezero(fd, 0, SEGMENT_BYTES, NULL);
    if (rc != 0) {
        return die("wz_rezero", rc);
    }
    printf("recycled %s: re-zeroed in place in %.1f ms\n", name, now_ms() - t0);
    close(fd);
    close(dirfd);
    return 0;
}

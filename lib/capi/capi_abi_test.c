/* SPDX-License-Identifier: MIT */
/* Every function of the C ABI from a C99 program, through the shared library: results
 * checked on files this program creates in SCRATCH_PARENT, then bad input, each with its
 * errno, a wz_last_error() naming the operation or path, and nothing written (the target's
 * bytes, size and mtime unchanged, no new directory entry).
 * Usage: wzero_capi_abi_test SCRATCH_PARENT (a directory on a filesystem with O_DIRECT) */
#define _GNU_SOURCE /* O_DIRECT, mkdtemp, posix_memalign, utimensat, socketpair */

#include <wzero/wzero.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#define MIB (1024u * 1024u)

static int failures;
static char scratch[PATH_MAX];

static void check(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "FAILED: %s\n", what);
        failures++;
    }
}

static void path_in(char *out, const char *name) {
    if (strlen(scratch) + 1 + strlen(name) >= PATH_MAX) {
        fprintf(stderr, "scratch path too long\n");
        exit(2);
    }
    strcpy(out, scratch);
    strcat(out, "/");
    strcat(out, name);
}

/* ------------------------------------------------------------------------------------ */
/* "Nothing written": a file's bytes, size and mtime, and the scratch directory's entries */
/* ------------------------------------------------------------------------------------ */

struct snapshot {
    int exists;
    off_t size;
    struct timespec mtime;
    unsigned long long hash;
    unsigned long long dir_hash;
    unsigned dir_entries;
};

static unsigned long long fnv(unsigned long long h, const unsigned char *p, size_t n) {
    size_t i;
    for (i = 0; i < n; i++) {
        h = (h ^ p[i]) * 1099511628211ull;
    }
    return h;
}

static void take_snapshot(const char *path, struct snapshot *s) {
    struct stat st;
    DIR *d;
    struct dirent *e;
    memset(s, 0, sizeof *s);
    s->hash = 14695981039346656037ull;
    if (path != NULL && stat(path, &st) == 0) {
        s->exists = 1;
        s->size = st.st_size;
        s->mtime = st.st_mtim;
        if (S_ISREG(st.st_mode)) {
            int fd = open(path, O_RDONLY | O_CLOEXEC);
            unsigned char buf[65536];
            ssize_t n;
            while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0) {
                s->hash = fnv(s->hash, buf, (size_t)n);
            }
            if (fd >= 0) {
                close(fd);
            }
        }
    }
    /* The entries' names, in readdir order (stable while nothing is added or removed). */
    s->dir_hash = 14695981039346656037ull;
    d = opendir(scratch);
    while (d != NULL && (e = readdir(d)) != NULL) {
        s->dir_hash = fnv(s->dir_hash, (const unsigned char *)e->d_name, strlen(e->d_name) + 1);
        s->dir_entries++;
    }
    if (d != NULL) {
        closedir(d);
    }
}

/* An old mtime, so that any write (which sets it to now) shows. */
static void age(const char *path) {
    struct timespec t[2];
    t[0].tv_sec = t[1].tv_sec = 1000000000;
    t[0].tv_nsec = t[1].tv_nsec = 0;
    check(utimensat(AT_FDCWD, path, t, 0) == 0, "utimensat to an old mtime");
}

static void expect_unchanged(const char *path, const struct snapshot *before, const char *what) {
    struct snapshot after;
    char msg[512];
    take_snapshot(path, &after);
    snprintf(msg, sizeof msg, "%s: nothing written (size, bytes, mtime, directory entries unchanged)", what);
    check(after.exists == before->exists && after.size == before->size && after.hash == before->hash &&
              after.mtime.tv_sec == before->mtime.tv_sec && after.mtime.tv_nsec == before->mtime.tv_nsec &&
              after.dir_hash == before->dir_hash && after.dir_entries == before->dir_entries,
          msg);
}

/* RC is -ERRNUM and the thread's message is non-empty and contains NEEDLE. */
static void expect_error(long long rc, int errnum, const char *needle, const char *what) {
    char msg[1024];
    const char *text = wz_last_error();
    snprintf(msg, sizeof msg, "%s: returns -%d (got %lld), message naming \"%s\" (got \"%s\")", what, errnum, rc,
             needle, text);
    check(rc == -(long long)errnum && text[0] != '\0' && strstr(text, needle) != NULL, msg);
}

/* Clears the thread's message between checks so each one proves its own message. */
static void reset_error(void) {
    struct wz_caps caps;
    /* A failing call with a known text: overwrites whatever the previous check left. */
    caps.size = 0;
    (void)wz_stat("/", &caps);
}

/* ------------------------------------------------------------------------------------ */
/* Helpers                                                                               */
/* ------------------------------------------------------------------------------------ */

static int make_file(const char *path, size_t size, unsigned char fill) {
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    unsigned char buf[65536];
    size_t done = 0;
    if (fd < 0) {
        return -1;
    }
    memset(buf, fill, sizeof buf);
    while (done < size) {
        size_t n = size - done < sizeof buf ? size - done : sizeof buf;
        if (write(fd, buf, n) != (ssize_t)n) {
            close(fd);
            return -1;
        }
        done += n;
    }
    if (fsync(fd) != 0) {
        close(fd);
        return -1;
    }
    close(fd);
    return 0;
}

/* Does [offset, offset + len) of PATH hold only BYTE? */
static int range_is(const char *path, off_t offset, size_t len, unsigned char byte) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    unsigned char buf[65536];
    size_t done = 0;
    size_t i;
    if (fd < 0) {
        return 0;
    }
    while (done < len) {
        size_t n = len - done < sizeof buf ? len - done : sizeof buf;
        if (pread(fd, buf, n, offset + (off_t)done) != (ssize_t)n) {
            close(fd);
            return 0;
        }
        for (i = 0; i < n; i++) {
            if (buf[i] != byte) {
                close(fd);
                return 0;
            }
        }
        done += n;
    }
    close(fd);
    return 1;
}

/* ------------------------------------------------------------------------------------ */
/* wz_stat                                                                               */
/* ------------------------------------------------------------------------------------ */

static int tri_ok(int32_t v) { return v == WZ_UNKNOWN || v == 0 || v == 1; }

static void test_stat(void) {
    char file[PATH_MAX];
    struct wz_caps caps;
    struct snapshot snap;
    int rc;
    int i;
    unsigned char big[sizeof(struct wz_caps) + 16];
    struct wz_caps *bigcaps = (struct wz_caps *)(void *)big;

    path_in(file, "stat-file");
    check(make_file(file, 3 * MIB, 0x5a) == 0, "create the stat file");

    memset(&caps, 0xee, sizeof caps);
    caps.size = sizeof caps;
    rc = wz_stat(file, &caps);
    check(rc == 0, "wz_stat on a regular file succeeds");
    check(caps.size == sizeof caps, "wz_stat keeps caps.size");
    check(caps.file_type == WZ_FILE_REGULAR, "wz_stat: a regular file");
    check(caps.size_bytes == 3 * MIB, "wz_stat: size_bytes");
    check(caps.cache_effective == WZ_UNKNOWN || caps.cache_effective == WZ_CACHE_WRITE_BACK ||
              caps.cache_effective == WZ_CACHE_WRITE_THROUGH,
          "wz_stat: cache_effective is a cache mode or unknown");
    check(tri_ok(caps.flush_needed) && tri_ok(caps.fua) && tri_ok(caps.dsync_overwrite_fua) && tri_ok(caps.deac),
          "wz_stat: tri-states are -1, 0 or 1");
    /* ext4 gives STATX_DIOALIGN: powers of two. */
    check(caps.dio_mem_align > 0 && (caps.dio_mem_align & (caps.dio_mem_align - 1)) == 0,
          "wz_stat: dio_mem_align is a power of two on ext4");
    check(caps.dio_offset_align >= 512 && (caps.dio_offset_align & (caps.dio_offset_align - 1)) == 0,
          "wz_stat: dio_offset_align is a power of two >= 512 on ext4");
    check(caps.recommended_method >= 0 && caps.recommended_method < WZ_ZERO_METHOD_COUNT,
          "wz_stat: a method is recommended for a file on ext4");
    check(caps.method_usable[WZ_ZERO_WRITE] == 1, "wz_stat: data writes are usable on a file");
    check(caps.method_usable[WZ_ZERO_ZEROOUT] == 0, "wz_stat: BLKZEROOUT is not usable on a file");
    for (i = 0; i < WZ_ZERO_METHOD_COUNT; i++) {
        check(tri_ok(caps.method_usable[i]), "wz_stat: method_usable[] are tri-states");
    }
    check(caps.recommended_method < 0 || caps.method_usable[caps.recommended_method] == 1,
          "wz_stat: the recommended method is usable");
    check(caps.reserved == 0 && caps.reserved2 == 0, "wz_stat: reserved fields are 0");
    check(caps.lba_bytes != 0 || (caps.npdg_bytes == 0 && caps.npda_bytes == 0), "wz_stat: NPDG/NPDA only on NVMe");

    /* A caller built against a newer, larger struct: the library fills what it knows and
     * zeroes the rest, so the newer fields read 0 rather than stack garbage. */
    memset(big, 0xee, sizeof big);
    bigcaps->size = sizeof big;
    rc = wz_stat(file, bigcaps);
    check(rc == 0, "wz_stat with a larger struct succeeds");
    check(bigcaps->size == sizeof big && bigcaps->size_bytes == 3 * MIB, "wz_stat with a larger struct fills it");
    for (i = (int)sizeof(struct wz_caps); i < (int)sizeof big; i++) {
        check(big[i] == 0, "wz_stat zeroes the bytes past what it knows");
    }

    /* Bad input. */
    age(file);
    take_snapshot(file, &snap);
    caps.size = sizeof caps;
    reset_error();
    rc = wz_stat(NULL, &caps);
    expect_error(rc, EINVAL, "wz_stat", "wz_stat(NULL path)");
    reset_error();
    rc = wz_stat(file, NULL);
    expect_error(rc, EINVAL, file, "wz_stat(NULL caps)");
    reset_error();
    caps.size = sizeof caps - 8;
    rc = wz_stat(file, &caps);
    expect_error(rc, EINVAL, "wz_caps", "wz_stat with a too-small caps.size");
    caps.size = 0;
    rc = wz_stat(file, &caps);
    expect_error(rc, EINVAL, file, "wz_stat with caps.size 0");
    caps.size = sizeof caps;
    {
        char missing[PATH_MAX];
        path_in(missing, "no-such-file");
        rc = wz_stat(missing, &caps);
        expect_error(rc, ENOENT, missing, "wz_stat on a missing path");
    }
    expect_unchanged(file, &snap, "wz_stat bad input");
    unlink(file);
}

/* ------------------------------------------------------------------------------------ */
/* The durable writer                                                                    */
/* ------------------------------------------------------------------------------------ */

static void test_writer_io(const char *file, struct wz_writer *w) {
    uint32_t align = wz_writer_alignment(w);
    unsigned char *buf = NULL;
    struct iovec iov[2];
    struct wz_completion done[8];
    struct wz_writer_counters st;
    const char *reason = NULL;
    unsigned seen = 0;
    int got;
    int i;
    int mode;
    ssize_t n;

    check(align >= 512 && (align & (align - 1)) == 0, "wz_writer_alignment: a power of two >= 512");
    if (align == 0 || posix_memalign((void **)&buf, align, 2 * (size_t)align) != 0) {
        check(0, "aligned buffer");
        return;
    }
    memset(buf, 0xa1, 2 * (size_t)align);

    n = wz_writer_pwrite(w, buf, align, 0);
    check(n == (ssize_t)align, "wz_writer_pwrite returns the length");
    check(range_is(file, 0, align, 0xa1), "wz_writer_pwrite wrote the bytes");

    memset(buf + align, 0xb2, align);
    iov[0].iov_base = buf;
    iov[0].iov_len = align;
    iov[1].iov_base = buf + align;
    iov[1].iov_len = align;
    n = wz_writer_pwritev(w, iov, 2, 4 * (uint64_t)align);
    check(n == 2 * (ssize_t)align, "wz_writer_pwritev returns the total length");
    check(range_is(file, 4 * (off_t)align, align, 0xa1) && range_is(file, 5 * (off_t)align, align, 0xb2),
          "wz_writer_pwritev wrote both segments");

    /* Asynchronous: 8 writes, collected with an array of 3, so 5 wait in the handle. */
    memset(buf, 0xc3, align);
    for (i = 0; i < 8; i++) {
        int rc = wz_writer_submit(w, buf, align, (uint64_t)(16 + i) * align, 100 + (uint64_t)i);
        check(rc == 0, "wz_writer_submit");
    }
    check(wz_writer_in_flight(w) == 8, "wz_writer_in_flight counts the 8 submitted writes");
    got = wz_writer_complete(w, done, 3, 8);
    check(got == 3, "wz_writer_complete stores at most MAX (3) though 8 completed");
    for (i = 0; i < got && i < 3; i++) {
        check(done[i].result == (int64_t)align, "completion result is the length");
        if (done[i].user_data >= 100 && done[i].user_data < 108) {
            seen |= 1u << (done[i].user_data - 100);
        }
    }
    check(wz_writer_in_flight(w) == 5, "wz_writer_in_flight counts the 5 not handed back yet");
    got = wz_writer_complete(w, done, 8, 0);
    check(got == 5, "wz_writer_complete hands the 5 kept back out without waiting (min 0)");
    for (i = 0; i < got && i < 8; i++) {
        check(done[i].result == (int64_t)align, "completion result is the length");
        if (done[i].user_data >= 100 && done[i].user_data < 108) {
            seen |= 1u << (done[i].user_data - 100);
        }
    }
    check(seen == 0xffu, "every user_data handed back exactly once");
    check(wz_writer_in_flight(w) == 0, "nothing in flight after all completions");
    check(wz_writer_complete(w, done, 8, 4) == 0, "wz_writer_complete with nothing in flight returns 0");
    check(range_is(file, 16 * (off_t)align, 8 * (size_t)align, 0xc3), "the submitted writes landed");

    mode = wz_writer_mode(w, &reason);
    check(mode >= WZ_DURABILITY_THROUGH && mode <= WZ_DURABILITY_DSYNC, "wz_writer_mode is a concrete mode");
    check(reason != NULL && reason[0] != '\0', "wz_writer_mode gives a reason");
    check(wz_writer_mode(w, NULL) == mode, "wz_writer_mode with a NULL reason");

    memset(&st, 0xee, sizeof st);
    st.size = sizeof st;
    check(wz_writer_stats(w, &st) == 0, "wz_writer_stats");
    check(st.writes == 10 && st.bytes == 11 * (uint64_t)align,
          "wz_writer_stats counts 10 writes (pwritev is one) of 11 blocks");
    check(st.reserved == 0 && st.p50_us > 0 && st.p99_us >= st.p50_us, "wz_writer_stats latencies");
    check(wz_writer_refresh(w) == 0, "wz_writer_refresh");
    free(buf);
}

static void expect_open_range_fails(const char *file, uint64_t offset, uint64_t length, int errnum, const char *what) {
    struct wz_writer *w = (struct wz_writer *)(void *)&w;
    struct snapshot snap;
    age(file);
    take_snapshot(file, &snap);
    reset_error();
    expect_error(wz_writer_open(file, offset, length, NULL, &w), errnum, file, what);
    check(w == NULL, "a failed wz_writer_open leaves *out NULL");
    wz_writer_close(w);
    expect_unchanged(file, &snap, what);
}

static void expect_open_fails(const char *file, const struct wz_writer_opts *opts, int errnum, const char *needle,
                              const char *what) {
    struct wz_writer *w = (struct wz_writer *)(void *)&w; /* must be reset to NULL */
    struct snapshot snap;
    int rc;
    char msg[256];
    age(file);
    take_snapshot(file, &snap);
    reset_error();
    rc = wz_writer_open(file, 0, MIB, opts, &w);
    expect_error(rc, errnum, needle, what);
    snprintf(msg, sizeof msg, "%s: *out is NULL", what);
    check(w == NULL, msg);
    wz_writer_close(w);
    expect_unchanged(file, &snap, what);
}

static void expect_open_fd_fails(int fd, const char *file, int errnum, const char *needle, const char *what) {
    struct wz_writer *w = (struct wz_writer *)(void *)&w;
    struct snapshot snap;
    int rc;
    if (file != NULL) {
        age(file);
    }
    take_snapshot(file, &snap);
    reset_error();
    rc = wz_writer_open_fd(fd, 0, MIB, NULL, &w);
    expect_error(rc, errnum, needle, what);
    check(w == NULL, "wz_writer_open_fd failure leaves *out NULL");
    wz_writer_close(w);
    expect_unchanged(file, &snap, what);
}

static void test_writer(void) {
    char file[PATH_MAX];
    struct wz_writer *w = NULL;
    struct wz_writer_opts opts;
    struct wz_writer_counters st;
    struct snapshot snap;
    unsigned char big[sizeof(struct wz_writer_opts) + 8];
    int rc;
    int fd;

    path_in(file, "writer-file");
    check(make_file(file, MIB, 0) == 0, "create the writer file");

    rc = wz_writer_open(file, 0, MIB, NULL, &w);
    check(rc == 0 && w != NULL, "wz_writer_open with NULL options");
    if (rc != 0) {
        fprintf(stderr, "  %s\n", wz_last_error());
    }
    if (w != NULL) {
        test_writer_io(file, w);
        check(wz_writer_close(w) == 0, "wz_writer_close");
    }
    check(wz_writer_close(NULL) == 0, "wz_writer_close(NULL) is a no-op");

    /* Every option set, and a larger struct whose unknown tail is zero. */
    memset(big, 0, sizeof big);
    memset(&opts, 0, sizeof opts);
    opts.size = sizeof big;
    opts.mode = WZ_DURABILITY_DSYNC;
    opts.queue_depth = 16;
    opts.completion = WZ_COMPLETION_ADAPTIVE;
    opts.high_watermark = 8;
    opts.low_watermark = 2;
    opts.interval_us = 10;
    opts.max_loops = 100;
    memcpy(big, &opts, sizeof opts);
    w = NULL;
    rc = wz_writer_open(file, 0, MIB, (const struct wz_writer_opts *)(void *)big, &w);
    check(rc == 0 && w != NULL, "wz_writer_open with every option and a larger zero-tailed struct");
    if (w != NULL) {
        check(wz_writer_mode(w, NULL) == WZ_DURABILITY_DSYNC, "the requested mode is used");
        check(wz_writer_close(w) == 0, "wz_writer_close");
    }

    /* On a descriptor: the descriptor stays the caller's. */
    fd = open(file, O_RDWR | O_CLOEXEC);
    w = NULL;
    rc = wz_writer_open_fd(fd, 0, MIB, NULL, &w);
    check(rc == 0 && w != NULL, "wz_writer_open_fd");
    if (w != NULL) {
        void *buf = NULL;
        uint32_t align = wz_writer_alignment(w);
        if (posix_memalign(&buf, align, align) == 0) {
            memset(buf, 0xd4, align);
            check(wz_writer_pwrite(w, buf, align, 8 * (uint64_t)align) == (ssize_t)align, "pwrite through open_fd");
            free(buf);
        }
        check(wz_writer_close(w) == 0, "wz_writer_close of an open_fd writer");
        check(range_is(file, 8 * (off_t)align, align, 0xd4), "the open_fd write landed");
    }
    check(fcntl(fd, F_GETFD) >= 0, "the caller's descriptor stays open after wz_writer_close");

    /* Bad input: the writer is opened on FILE, which must stay untouched. */
    reset_error();
    age(file);
    take_snapshot(file, &snap);
    rc = wz_writer_open(file, 0, MIB, NULL, NULL);
    expect_error(rc, EINVAL, file, "wz_writer_open(NULL out)");
    expect_unchanged(file, &snap, "wz_writer_open(NULL out)");
    {
        struct wz_writer *w2 = (struct wz_writer *)(void *)&w2;
        reset_error();
        rc = wz_writer_open(NULL, 0, MIB, NULL, &w2);
        expect_error(rc, EINVAL, "wz_writer_open", "wz_writer_open(NULL path)");
        check(w2 == NULL, "wz_writer_open(NULL path) leaves *out NULL");
    }
    memset(&opts, 0, sizeof opts);
    opts.size = sizeof opts - 4;
    expect_open_fails(file, &opts, EINVAL, "wz_writer_opts", "wz_writer_open with a too-small opts.size");
    opts.size = 0;
    expect_open_fails(file, &opts, EINVAL, file, "wz_writer_open with opts.size 0");
    memset(big, 0, sizeof big);
    opts.size = sizeof big;
    memcpy(big, &opts, sizeof opts);
    big[sizeof big - 1] = 1;
    expect_open_fails(file, (const struct wz_writer_opts *)(void *)big, E2BIG, file,
                      "wz_writer_open with a larger struct whose tail is not zero");
    opts.size = sizeof opts;
    opts.reserved = 1;
    expect_open_fails(file, &opts, EINVAL, "reserved", "wz_writer_open with reserved != 0");
    opts.reserved = 0;
    opts.flags = 0x80u;
    expect_open_fails(file, &opts, EINVAL, "flags", "wz_writer_open with an unknown flag");
    opts.flags = 0;
    opts.mode = 99;
    expect_open_fails(file, &opts, EINVAL, "mode", "wz_writer_open with a mode out of range");
    opts.mode = 0;
    opts.completion = -2;
    expect_open_fails(file, &opts, EINVAL, "completion", "wz_writer_open with a completion mode out of range");
    opts.completion = 0;
    expect_open_range_fails(file, 0, 0, EINVAL, "wz_writer_open of length 0");
    expect_open_range_fails(file, UINT64_MAX - 4095, 8192, EINVAL, "wz_writer_open offset+length overflow");

    /* Descriptors that cannot take durable writes. */
    {
        int ro = open(file, O_RDONLY | O_CLOEXEC);
        int ap = open(file, O_WRONLY | O_APPEND | O_CLOEXEC);
        int dir = open(scratch, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        int pipefd[2] = {-1, -1};
        int sv[2] = {-1, -1};
        check(pipe(pipefd) == 0 && socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0, "pipe and socketpair");
        expect_open_fd_fails(ro, file, EBADF, file, "wz_writer_open_fd on a read-only fd");
        expect_open_fd_fails(ap, file, EINVAL, file, "wz_writer_open_fd on an O_APPEND fd");
        expect_open_fd_fails(dir, NULL, EISDIR, scratch, "wz_writer_open_fd on a directory fd");
        expect_open_fd_fails(pipefd[1], NULL, EINVAL, "a FIFO", "wz_writer_open_fd on a pipe");
        expect_open_fd_fails(sv[0], NULL, EINVAL, "a socket", "wz_writer_open_fd on a socket");
        expect_open_fd_fails(-1, NULL, EBADF, "-1", "wz_writer_open_fd on fd -1");
        close(ro);
        close(ap);
        close(dir);
        close(pipefd[0]);
        close(pipefd[1]);
        close(sv[0]);
        close(sv[1]);
    }

    /* Calls on a NULL handle, and bad arguments on a good one. */
    reset_error();
    expect_error(wz_writer_pwrite(NULL, file, 512, 0), EINVAL, "wz_writer_pwrite", "wz_writer_pwrite(NULL)");
    reset_error();
    expect_error(wz_writer_pwritev(NULL, NULL, 0, 0), EINVAL, "wz_writer_pwritev", "wz_writer_pwritev(NULL)");
    reset_error();
    expect_error(wz_writer_submit(NULL, file, 512, 0, 0), EINVAL, "wz_writer_submit", "wz_writer_submit(NULL)");
    reset_error();
    expect_error(wz_writer_complete(NULL, NULL, 0, 0), EINVAL, "wz_writer_complete", "wz_writer_complete(NULL)");
    reset_error();
    expect_error(wz_writer_mode(NULL, NULL), EINVAL, "wz_writer_mode", "wz_writer_mode(NULL)");
    reset_error();
    st.size = sizeof st;
    expect_error(wz_writer_stats(NULL, &st), EINVAL, "wz_writer_stats", "wz_writer_stats(NULL)");
    reset_error();
    expect_error(wz_writer_refresh(NULL), EINVAL, "wz_writer_refresh", "wz_writer_refresh(NULL)");
    check(wz_writer_in_flight(NULL) == 0, "wz_writer_in_flight(NULL) is 0");
    check(wz_writer_alignment(NULL) == 0, "wz_writer_alignment(NULL) is 0");

    w = NULL;
    rc = wz_writer_open(file, 0, MIB, NULL, &w);
    check(rc == 0 && w != NULL, "wz_writer_open for the bad-argument checks");
    if (w != NULL) {
        uint32_t align = wz_writer_alignment(w);
        void *buf = NULL;
        struct wz_completion done[2];
        check(posix_memalign(&buf, align, 2 * (size_t)align) == 0, "aligned buffer");
        memset(buf, 0xe5, 2 * (size_t)align);
        age(file);
        take_snapshot(file, &snap);
        reset_error();
        expect_error(wz_writer_pwrite(w, buf, 0, 0), EINVAL, file, "wz_writer_pwrite of length 0");
        reset_error();
        expect_error(wz_writer_pwrite(w, (char *)buf + 1, align, 0), EINVAL, file, "wz_writer_pwrite misaligned buffer");
        reset_error();
        expect_error(wz_writer_pwrite(w, buf, align, 1), EINVAL, file, "wz_writer_pwrite misaligned offset");
        reset_error();
        expect_error(wz_writer_pwrite(w, buf, align, MIB), ERANGE, file, "wz_writer_pwrite past the range");
        reset_error();
        expect_error(wz_writer_pwrite(w, buf, align, UINT64_MAX - align + 1), ERANGE, file,
                     "wz_writer_pwrite offset+length overflow");
        reset_error();
        expect_error(wz_writer_pwritev(w, NULL, 2, 0), EINVAL, file, "wz_writer_pwritev(NULL iov)");
        reset_error();
        expect_error(wz_writer_submit(w, buf, 0, 0, 7), EINVAL, file, "wz_writer_submit of length 0");
        reset_error();
        expect_error(wz_writer_complete(w, NULL, 2, 0), EINVAL, file, "wz_writer_complete(NULL out)");
        reset_error();
        st.size = 8;
        expect_error(wz_writer_stats(w, &st), EINVAL, "wz_writer_counters", "wz_writer_stats with a too-small size");
        reset_error();
        expect_error(wz_writer_stats(w, NULL), EINVAL, file, "wz_writer_stats(NULL stats)");
        check(wz_writer_in_flight(w) == 0, "nothing queued by the refused calls");
        (void)done;
        check(wz_writer_close(w) == 0, "wz_writer_close after refused calls");
        expect_unchanged(file, &snap, "writer bad arguments");
        free(buf);
    }
    close(fd);
    unlink(file);
}

int main(int argc, char **argv) {
    char tmpl[PATH_MAX];
    if (argc != 2) {
        fprintf(stderr, "usage: %s SCRATCH_PARENT\n", argv[0]);
        return 2;
    }
    if (mkdir(argv[1], 0755) != 0 && errno != EEXIST) {
        perror(argv[1]);
        return 2;
    }
    snprintf(tmpl, sizeof tmpl, "%s/capi.XXXXXX", argv[1]);
    if (mkdtemp(tmpl) == NULL) {
        perror(tmpl);
        return 2;
    }
    snprintf(scratch, sizeof scratch, "%s", tmpl);

    check(wz_last_error() != NULL && wz_last_error()[0] == '\0', "wz_last_error is \"\" before any failure");
    test_stat();
    test_writer();

    if (failures == 0) {
        printf("capi_abi: all checks passed\n");
        /* Kept on failure, for a look at what was left. */
        rmdir(scratch);
    } else {
        fprintf(stderr, "capi_abi: %d checks failed; scratch kept: %s\n", failures, scratch);
    }
    return failures == 0 ? 0 : 1;
}

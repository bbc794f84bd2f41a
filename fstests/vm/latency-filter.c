// SPDX-License-Identifier: MIT
// fstests/vm/latency-filter.c -- an nbdkit filter that gives a flush and a FUA write the cost
// they have on a real drive, for fstests/vm/run --flush-latency/--fua-latency.
//
//   nbdkit --filter=./latency-filter.so file IMG flush-latency-ns=N fua-latency-ns=M
//
// NBD_CMD_FLUSH: sleeps N ns and answers success; the flush is NOT passed to the plugin (the
// file plugin would fdatasync the host's image, whose cost, about 2.4 ms on the rig's host
// disk, would be added to the model's). Write and write-zeroes with NBD_CMD_FLAG_FUA: passed
// down without FUA, and answered M ns after they arrived (never earlier than the plugin's own
// completion). Everything else is passed through untouched. The filter advertises flush and
// native FUA whatever the plugin says, so that QEMU's NBD client sends both.
//
// Each request sleeps in its own nbdkit worker thread: concurrent flushes overlap (a drive
// that serialises its cache flushes is not modelled). Nothing here is volatile: a write is in
// the host's image (page cache) when it is answered, flushed or not.
//
// nbdkit_debug lines (nbdkit -v) count flushes and FUA writes when the server unloads it.
// Built by fstests/vm/run with: cc -O2 -fPIC -shared -o latency-filter.so latency-filter.c

#define NBDKIT_API_VERSION 2
#include <nbdkit-filter.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>

static uint64_t flush_ns;
static uint64_t fua_ns;
static uint64_t flushes;
static uint64_t fua_writes;

static int
lat_config(nbdkit_next_config *next, nbdkit_backend *nxdata, const char *key, const char *value)
{
    if (strcmp(key, "flush-latency-ns") == 0)
        return nbdkit_parse_uint64_t(key, value, &flush_ns);
    if (strcmp(key, "fua-latency-ns") == 0)
        return nbdkit_parse_uint64_t(key, value, &fua_ns);
    return next(nxdata, key, value);
}

static void
lat_unload(void)
{
    nbdkit_debug("latency: flush_ns=%llu fua_ns=%llu flushes=%llu fua_writes=%llu",
                 (unsigned long long)flush_ns, (unsigned long long)fua_ns,
                 (unsigned long long)__atomic_load_n(&flushes, __ATOMIC_RELAXED),
                 (unsigned long long)__atomic_load_n(&fua_writes, __ATOMIC_RELAXED));
}

// Sleep until START + NS on CLOCK_MONOTONIC (returns at once if that has passed).
static void
sleep_until(const struct timespec *start, uint64_t ns)
{
    // The default timer slack (50 us) would be added to every sleep: 1 ns instead.
    static __thread int slack_set;
    if (!slack_set) {
        prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
        slack_set = 1;
    }
    struct timespec t = *start;
    uint64_t total = (uint64_t)t.tv_nsec + ns;
    t.tv_sec += (time_t)(total / 1000000000u);
    t.tv_nsec = (long)(total % 1000000000u);
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL) == EINTR) {
    }
}

static int
lat_can_flush(nbdkit_next *next, void *handle)
{
    (void)next;
    (void)handle;
    return 1;
}

static int
lat_can_fua(nbdkit_next *next, void *handle)
{
    (void)next;
    (void)handle;
    return NBDKIT_FUA_NATIVE;
}

static int
lat_pwrite(nbdkit_next *next, void *handle, const void *buf, uint32_t count, uint64_t offset,
           uint32_t flags, int *err)
{
    (void)handle;
    if (!(flags & NBDKIT_FLAG_FUA))
        return next->pwrite(next, buf, count, offset, flags, err);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int r = next->pwrite(next, buf, count, offset, flags & ~NBDKIT_FLAG_FUA, err);
    __atomic_add_fetch(&fua_writes, 1, __ATOMIC_RELAXED);
    sleep_until(&start, fua_ns);
    return r;
}

static int
lat_zero(nbdkit_next *next, void *handle, uint32_t count, uint64_t offset, uint32_t flags,
         int *err)
{
    (void)handle;
    if (!(flags & NBDKIT_FLAG_FUA))
        return next->zero(next, count, offset, flags, err);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int r = next->zero(next, count, offset, flags & ~NBDKIT_FLAG_FUA, err);
    __atomic_add_fetch(&fua_writes, 1, __ATOMIC_RELAXED);
    sleep_until(&start, fua_ns);
    return r;
}

static int
lat_trim(nbdkit_next *next, void *handle, uint32_t count, uint64_t offset, uint32_t flags,
         int *err)
{
    (void)handle;
    if (!(flags & NBDKIT_FLAG_FUA))
        return next->trim(next, count, offset, flags, err);
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    int r = next->trim(next, count, offset, flags & ~NBDKIT_FLAG_FUA, err);
    __atomic_add_fetch(&fua_writes, 1, __ATOMIC_RELAXED);
    sleep_until(&start, fua_ns);
    return r;
}

static int
lat_flush(nbdkit_next *next, void *handle, uint32_t flags, int *err)
{
    (void)next;
    (void)handle;
    (void)flags;
    (void)err;
    struct timespec start;
    clock_gettime(CLOCK_MONOTONIC, &start);
    __atomic_add_fetch(&flushes, 1, __ATOMIC_RELAXED);
    sleep_until(&start, flush_ns);
    return 0;
}

static struct nbdkit_filter filter = {
    .name = "latency",
    .longname = "wzero flush/FUA latency model",
    .unload = lat_unload,
    .config = lat_config,
    .config_help = "flush-latency-ns=N  cost of NBD_CMD_FLUSH\n"
                   "fua-latency-ns=N    cost of a write with NBD_CMD_FLAG_FUA",
    .can_flush = lat_can_flush,
    .can_fua = lat_can_fua,
    .pwrite = lat_pwrite,
    .zero = lat_zero,
    .trim = lat_trim,
    .flush = lat_flush,
};

NBDKIT_REGISTER_FILTER(filter)

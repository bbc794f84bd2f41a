// SPDX-License-Identifier: MIT
// wz_ackwrite: a test tool for the durable writer (wz::writer), used by fstests/tests/nvme.
//
//   wz_ackwrite write [options] PATH     durable 4 KiB writes, one "ack SEQ OFFSET" line each
//   wz_ackwrite verify [options] PATH ACKS   read every acknowledged block back, count
//   wz_ackwrite refresh [options] PATH [--then CMD]...   the mode before/after each CMD
//   wz_ackwrite errors PATH              the writer's error answers, one line each
//   wz_ackwrite cache PATH [--then CMD]...   wz::write_cache: held and re-read answers
//
// Every block written carries a self-describing pattern: 128 records of 32 bytes, each
// {magic "WZACKv1", run id, sequence number, byte offset} (little-endian u64s), so a block
// read back says which write of which run it holds. Each write goes to its own block of the
// range (no block is written twice in a run), so an acknowledged block has exactly one
// right content.
//
// An acknowledgement is printed only after the writer handed the write back as durable
// (pwrite() returned, or complete() returned it without error): first "wzack SEQ OFFSET" to
// the kernel's trace_marker (with --trace-marker), then "ack SEQ OFFSET" to stdout with one
// write(2), so it survives a SIGKILL the next instant.
//
// Exit status: 0 success; 1 failure (a write failed, a block is bad, bad usage); 2 the
// writer refused the mode or completion asked for as not supported here (ENOTSUP).

#include <wzero/wzero.hpp>

#include "ackwrite_block.hpp"
#include "replay_marker.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <linux/nvme_ioctl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include <fmt/format.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <numeric>
#include <optional>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

using wzt::ackwrite::block_bytes;
using wzt::ackwrite::describe_block;
using wzt::ackwrite::fill_block;
constexpr int exit_failure = 1;
constexpr int exit_not_supported = 2;
constexpr std::uint64_t max_bad_lines = 10;
constexpr const char* trace_marker_path = "/sys/kernel/tracing/trace_marker";

[[noreturn]] void usage_error(const std::string& why) {
    std::fprintf(stderr, "wz_ackwrite: %s\nTry 'wz_ackwrite --help'.\n", why.c_str());
    std::exit(exit_failure);
}

void print_usage() {
    std::fputs(
        "Usage:\n"
        "  wz_ackwrite write [options] PATH\n"
        "      -o, --offset OFF     start of the writer's range (bytes, K/M/G suffixes; default 0)\n"
        "      -l, --length LEN     length of the range (default: to the end of PATH)\n"
        "      --mode M             auto, through, fua, flush or dsync (default auto)\n"
        "      --unsafe             allow --mode through on a write-back cache\n"
        "      --threads N          N threads calling the synchronous pwrite() (default 1)\n"
        "      --qd N               instead: submit()/complete() with up to N writes in flight\n"
        "      --completion C       interrupt, poll or adaptive (asynchronous API; default interrupt)\n"
        "      --high N --low N --interval-us N --max-loops N   adaptive settings\n"
        "      --count N            stop after N acknowledged writes (default: every block of the range)\n"
        "      --run-id ID          the run id in the pattern (default: from the clock and pid)\n"
        "      --order seq|scatter  block order (default scatter: a fixed permutation of the range)\n"
        "      --trace-marker       also write \"wzack SEQ OFFSET\" to " "/sys/kernel/tracing/trace_marker\n"
        "      --submit-marker      with --trace-marker: also \"wzsub SEQ OFFSET\" before each write is\n"
        "                           started (pwrite() called, or submit()), so that the trace holds a\n"
        "                           time before the writer decided on it\n"
        "      --stop-file FILE     stop once FILE exists and --after-stop more writes (default 16)\n"
        "                           were started after it was seen (--count stays the limit)\n"
        "      --mark-area DEV:OFF:LEN --mark-tag TAG   before printing the \"open\" line and each \"ack\"\n"
        "                           line, write it as a marker block (fstests/src/replay_marker.hpp)\n"
        "                           into [OFF, OFF+LEN) of DEV with O_DIRECT, from the acking thread\n"
        "    stdout: \"open RUN_ID MODE COMPLETION ALIGNMENT\", \"reason TEXT\", \"ack SEQ OFFSET\" per\n"
        "    acknowledged write, and at the end \"stats writes=N bytes=N fua_writes=N flushes=N ...\n"
        "    engine=io_uring|psync\", \"end MODE\" and \"end-reason TEXT\" (the writer's mode and reason\n"
        "    after the last write).\n"
        "  wz_ackwrite verify [--via odirect|nvme] [--nvme-dev /dev/ngXnY] [--run-id ID] [--map MAP] PATH ACKS\n"
        "      reads every block listed by the \"ack\" lines of ACKS (the run id from its \"open\"\n"
        "      line) with O_DIRECT, or with NVMe Read through the namespace's char device (--via\n"
        "      nvme: no page cache of the block device can answer); with --map, PATH is the device (or\n"
        "      its image) under the file the acks were written to, MAP its extent map, lines\n"
        "      \"FILE_OFFSET DEVICE_OFFSET LENGTH\" in bytes; prints\n"
        "      \"verify: N acked, N intact, N bad\" and one line per bad block on stderr.\n"
        "  wz_ackwrite refresh [--mode M] [--unsafe] [--trace-marker] PATH [--then CMD]...\n"
        "      opens a writer over the first 1 MiB, then for each CMD runs it (sh -c), calls\n"
        "      refresh() and prints the mode; one durable write after each step, with the\n"
        "      writer's FUA and flush counts for it. --trace-marker: \"wzstep N begin\" and\n"
        "      \"wzstep N end\" around the N-th write (from 0) in trace_marker, so that the\n"
        "      device's commands for that write can be counted in the trace.\n"
        "  wz_ackwrite errors PATH\n"
        "      the writer's answers to bad requests, one \"CASE: ERRNO: message\" line each.\n"
        "  wz_ackwrite cache PATH [--then CMD]...\n"
        "      wz::write_cache on PATH (opened read-only): the answer with a maximum age of an hour\n"
        "      (the one held), then for each CMD, after running it (sh -c), the answer with an hour\n"
        "      and with 0 (read again); one \"LABEL: EFFECTIVE, reread yes|no\" line each.\n",
        stdout);
}

// Sizes: a number with an optional K/M/G/T suffix (powers of 1024).
std::uint64_t parse_size(const std::string& s, const char* what) {
    if (s.empty() || s[0] < '0' || s[0] > '9') {
        usage_error(fmt::format("invalid {} '{}'", what, s));
    }
    std::size_t used = 0;
    unsigned long long v = 0;
    try {
        v = std::stoull(s, &used, 0);
    } catch (const std::exception&) {
        usage_error(fmt::format("invalid {} '{}'", what, s));
    }
    std::string suffix = s.substr(used);
    unsigned shift = 0;
    if (suffix == "K" || suffix == "KiB" || suffix == "k") {
        shift = 10;
    } else if (suffix == "M" || suffix == "MiB") {
        shift = 20;
    } else if (suffix == "G" || suffix == "GiB") {
        shift = 30;
    } else if (suffix == "T" || suffix == "TiB") {
        shift = 40;
    } else if (!suffix.empty()) {
        usage_error(fmt::format("invalid {} '{}'", what, s));
    }
    if (shift != 0 && v > (UINT64_MAX >> shift)) {
        usage_error(fmt::format("{} '{}' is too large", what, s));
    }
    return static_cast<std::uint64_t>(v) << shift;
}

unsigned parse_uint(const std::string& s, const char* what) {
    const std::uint64_t v = parse_size(s, what);
    if (v > 1000000000) {
        usage_error(fmt::format("{} '{}' is too large", what, s));
    }
    return static_cast<unsigned>(v);
}

wz::durability_mode parse_mode(const std::string& s) {
    if (s == "auto") {
        return wz::durability_mode::automatic;
    }
    if (s == "through") {
        return wz::durability_mode::through;
    }
    if (s == "fua") {
        return wz::durability_mode::fua;
    }
    if (s == "flush") {
        return wz::durability_mode::flush;
    }
    if (s == "dsync") {
        return wz::durability_mode::dsync;
    }
    usage_error(fmt::format("invalid mode '{}' (auto, through, fua, flush or dsync)", s));
}

wz::completion_mode parse_completion(const std::string& s) {
    if (s == "interrupt") {
        return wz::completion_mode::interrupt;
    }
    if (s == "poll") {
        return wz::completion_mode::poll;
    }
    if (s == "adaptive") {
        return wz::completion_mode::adaptive;
    }
    usage_error(fmt::format("invalid completion '{}' (interrupt, poll or adaptive)", s));
}

const char* errno_name(int e) {
    switch (e) {
    case EINVAL: return "EINVAL";
    case ERANGE: return "ERANGE";
    case EBADF: return "EBADF";
    case ENOENT: return "ENOENT";
    case ENOTSUP: return "ENOTSUP";
    case EBUSY: return "EBUSY";
    case EACCES: return "EACCES";
    case EPERM: return "EPERM";
    case EIO: return "EIO";
    case ENOSPC: return "ENOSPC";
    case ESTALE: return "ESTALE";
    case EAGAIN: return "EAGAIN";
    default: return nullptr;
    }
}

// "EINVAL" for an errno, else the category and value.
std::string code_name(const std::error_code& c) {
    if (c.category() == std::generic_category() || c.category() == std::system_category()) {
        if (const char* n = errno_name(c.value())) {
            return n;
        }
    }
    return fmt::format("{}:{}", c.category().name(), c.value());
}

// One write(2) of the whole line (stdout may be a pipe or a file shared with other threads).
void write_line(int fd, const std::string& line) {
    std::size_t done = 0;
    while (done < line.size()) {
        const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
        if (n < 0) {
            if (errno == EINTR) {
                continue;
            }
            return;  // wz: ignored-error (stdout closed: nothing left to tell)
        }
        done += static_cast<std::size_t>(n);
    }
}

struct aligned_free {
    void operator()(void* p) const noexcept { std::free(p); }
};
using aligned_buffer = std::unique_ptr<unsigned char, aligned_free>;

aligned_buffer alloc_aligned(std::size_t bytes, std::size_t align) {
    void* p = nullptr;
    if (::posix_memalign(&p, std::max<std::size_t>(align, 4096), bytes) != 0) {
        std::fprintf(stderr, "wz_ackwrite: out of memory\n");
        std::exit(exit_failure);
    }
    return aligned_buffer(static_cast<unsigned char*>(p));
}

// Block index for sequence number `seq`: in order, or a fixed permutation of the range
// (a stride coprime to the number of blocks), so neighbouring writes are not adjacent and
// the block layer has nothing to merge.
struct block_order {
    std::uint64_t blocks = 1, stride = 1;
    block_order(std::uint64_t n, bool scatter) : blocks(n) {
        if (scatter && n > 2) {
            stride = n / 2 + n / 8 + 1;
            while (std::gcd(stride, n) != 1) {
                ++stride;
            }
        }
    }
    [[nodiscard]] std::uint64_t at(std::uint64_t seq) const {
        __extension__ using u128 = unsigned __int128;
        return static_cast<std::uint64_t>((static_cast<u128>(seq) * stride) % blocks);
    }
};

// ---------------------------------------------------------------------------
// write
// ---------------------------------------------------------------------------

struct write_args {
    std::string path;
    std::uint64_t offset = 0, length = 0;
    bool have_length = false;
    wz::writer_options options;
    unsigned threads = 1, qd = 0;
    std::uint64_t count = 0, run_id = 0;
    bool scatter = true, trace_marker = false, submit_marker = false;
    std::string mark_area, mark_tag;  // --mark-area DEV:OFF:LEN, --mark-tag TAG
    std::string stop_file;            // --stop-file FILE
    std::uint64_t after_stop = 16;    // --after-stop N
};

struct acker {
    int marker_fd = -1;
    wzt::marker_area* area = nullptr;  // the write log's markers, or none
    std::string tag;
    std::atomic<std::uint64_t> acked{0};
    // A line for stdout, marked in the marker area first when there is one.
    void line(const std::string& text) {
        if (area != nullptr) {
            if (auto why = area->write(tag.empty() ? text : tag + " " + text); !why.empty()) {
                std::fprintf(stderr, "wz_ackwrite: marker: %s\n", why.c_str());
                std::exit(exit_failure);
            }
        }
        write_line(STDOUT_FILENO, text + "\n");
    }
    // Before a write is started: its "wzsub" trace marker (--submit-marker).
    bool submit_marker = false;
    void started(std::uint64_t seq, std::uint64_t offset) const {
        if (marker_fd >= 0 && submit_marker) {
            write_line(marker_fd, fmt::format("wzsub {} {}\n", seq, offset));
        }
    }
    void ack(std::uint64_t seq, std::uint64_t offset) {
        if (marker_fd >= 0) {
            write_line(marker_fd, fmt::format("wzack {} {}\n", seq, offset));
        }
        line(fmt::format("ack {} {}", seq, offset));
        acked++;
    }
};

int run_write(const write_args& a) {
    std::uint64_t length = a.length;
    if (!a.have_length) {
        auto caps = wz::stat(a.path);
        if (!caps) {
            std::fprintf(stderr, "wz_ackwrite: %s\n", caps.error().message.c_str());
            return exit_failure;
        }
        length = caps->size_bytes > a.offset ? caps->size_bytes - a.offset : 0;
    }
    auto w = wz::writer::open(a.path, a.offset, length, a.options);
    if (!w) {
        std::fprintf(stderr, "wz_ackwrite: %s\n", w.error().message.c_str());
        return w.error().code == std::errc::not_supported ? exit_not_supported : exit_failure;
    }
    const std::uint64_t blocks = length / block_bytes;
    if (blocks == 0 || a.offset % block_bytes != 0 || block_bytes % w->alignment() != 0) {
        std::fprintf(stderr, "wz_ackwrite: the range [offset %llu, length %llu] holds no aligned 4 KiB block\n",
                     static_cast<unsigned long long>(a.offset), static_cast<unsigned long long>(length));
        return exit_failure;
    }
    const std::uint64_t count = a.count == 0 ? blocks : a.count;
    if (count > blocks) {
        std::fprintf(stderr, "wz_ackwrite: --count %llu is more than the %llu blocks of the range (a block is "
                     "written at most once per run)\n",
                     static_cast<unsigned long long>(count), static_cast<unsigned long long>(blocks));
        return exit_failure;
    }
    acker ack;
    ack.submit_marker = a.submit_marker;
    if (a.trace_marker) {
        ack.marker_fd = ::open(trace_marker_path, O_WRONLY | O_CLOEXEC);
        if (ack.marker_fd < 0) {
            std::fprintf(stderr, "wz_ackwrite: open %s: %s\n", trace_marker_path, std::strerror(errno));
            return exit_failure;
        }
    }
    wzt::marker_area area;
    if (!a.mark_area.empty()) {
        const auto c1 = a.mark_area.rfind(':');
        const auto c2 = c1 == std::string::npos || c1 == 0 ? std::string::npos : a.mark_area.rfind(':', c1 - 1);
        if (c2 == std::string::npos) {
            usage_error("--mark-area wants DEV:OFF:LEN");
        }
        if (auto why = area.open(a.mark_area.substr(0, c2), parse_size(a.mark_area.substr(c2 + 1, c1 - c2 - 1), "OFF"),
                                 parse_size(a.mark_area.substr(c1 + 1), "LEN"));
            !why.empty()) {
            std::fprintf(stderr, "wz_ackwrite: --mark-area: %s\n", why.c_str());
            return exit_failure;
        }
        ack.area = &area;
        ack.tag = a.mark_tag;
    }
    const bool async = a.qd > 0;
    ack.line(fmt::format("open {:#x} {} {} {}", a.run_id, wz::to_string(w->mode()),
                         async ? wz::to_string(w->completion()) : "sync", w->alignment()));
    write_line(STDOUT_FILENO, fmt::format("reason {}\n", w->reason()));
    const block_order order(blocks, a.scatter);
    auto offset_of = [&](std::uint64_t seq) { return a.offset + order.at(seq) * block_bytes; };
    std::atomic<bool> failed{false};
    // --stop-file: the writes started after it was first seen (and so the last sequence
    // number), fixed by the thread that saw it. UINT64_MAX: not seen yet.
    std::atomic<std::uint64_t> stop_at{UINT64_MAX};
    auto may_start = [&](std::uint64_t seq) {
        if (seq >= count) {
            return false;
        }
        if (a.stop_file.empty()) {
            return true;
        }
        std::uint64_t at = stop_at.load();
        if (at == UINT64_MAX && ::access(a.stop_file.c_str(), F_OK) == 0) {
            std::uint64_t expected = UINT64_MAX;
            stop_at.compare_exchange_strong(expected, seq + a.after_stop);
            at = stop_at.load();
        }
        return seq < at;
    };

    if (!async) {
        std::atomic<std::uint64_t> next{0};
        auto worker = [&] {
            auto buf = alloc_aligned(block_bytes, w->alignment());
            for (;;) {
                const std::uint64_t seq = next++;
                if (!may_start(seq) || failed) {
                    return;
                }
                const std::uint64_t off = offset_of(seq);
                fill_block(buf.get(), a.run_id, seq, off);
                ack.started(seq, off);
                auto r = w->pwrite(buf.get(), block_bytes, off);
                if (!r) {
                    std::fprintf(stderr, "wz_ackwrite: write seq %llu: %s\n", static_cast<unsigned long long>(seq),
                                 r.error().message.c_str());
                    failed = true;
                    return;
                }
                if (*r != block_bytes) {
                    std::fprintf(stderr, "wz_ackwrite: write seq %llu: pwrite returned %zu of %zu bytes\n",
                                 static_cast<unsigned long long>(seq), *r, block_bytes);
                    failed = true;
                    return;
                }
                ack.ack(seq, off);
            }
        };
        std::vector<std::thread> ts;
        for (unsigned i = 0; i < a.threads; ++i) {
            ts.emplace_back(worker);
        }
        for (auto& t : ts) {
            t.join();
        }
    } else {
        // One buffer per slot; user_data = seq << 16 | slot.
        const unsigned qd = a.qd;
        std::vector<aligned_buffer> bufs;
        std::vector<unsigned> free_slots;
        for (unsigned i = 0; i < qd; ++i) {
            bufs.push_back(alloc_aligned(block_bytes, w->alignment()));
            free_slots.push_back(qd - 1 - i);
        }
        std::uint64_t submitted = 0;
        bool more = true;
        std::vector<wz::writer_completion> done;
        while (!failed && (more || w->in_flight() > 0)) {
            while (!free_slots.empty() && (more = may_start(submitted))) {
                const unsigned slot = free_slots.back();
                const std::uint64_t seq = submitted;
                const std::uint64_t off = offset_of(seq);
                fill_block(bufs[slot].get(), a.run_id, seq, off);
                ack.started(seq, off);
                auto e = w->submit(bufs[slot].get(), block_bytes, off, (seq << 16) | slot);
                if (!e.ok()) {
                    if (e.code() == std::errc::device_or_resource_busy && w->in_flight() > 0) {
                        break;  // the writer's own limit: reap first
                    }
                    std::fprintf(stderr, "wz_ackwrite: submit seq %llu: %s\n", static_cast<unsigned long long>(seq),
                                 e.error().message.c_str());
                    failed = true;
                    break;
                }
                free_slots.pop_back();
                submitted++;
            }
            if (failed || w->in_flight() == 0) {
                continue;
            }
            done.clear();
            auto r = w->complete(done, 1);
            if (!r) {
                std::fprintf(stderr, "wz_ackwrite: complete: %s\n", r.error().message.c_str());
                failed = true;
                break;
            }
            if (*r != done.size()) {
                std::fprintf(stderr, "wz_ackwrite: complete() returned %zu but handed back %zu\n", *r, done.size());
                failed = true;
            }
            for (const auto& c : done) {
                const std::uint64_t seq = c.user_data >> 16;
                const auto slot = static_cast<unsigned>(c.user_data & 0xffff);
                if (c.error) {
                    std::fprintf(stderr, "wz_ackwrite: write seq %llu: %s\n", static_cast<unsigned long long>(seq),
                                 c.error->message.c_str());
                    failed = true;
                } else if (c.bytes != block_bytes) {
                    std::fprintf(stderr, "wz_ackwrite: write seq %llu: completed %zu of %zu bytes\n",
                                 static_cast<unsigned long long>(seq), c.bytes, block_bytes);
                    failed = true;
                } else {
                    ack.ack(seq, offset_of(seq));
                }
                free_slots.push_back(slot);
            }
        }
    }
    const wz::writer_stats s = w->stats();
    if (auto e = w->close(); !e.ok()) {
        std::fprintf(stderr, "wz_ackwrite: close: %s\n", e.error().message.c_str());
        failed = true;
    }
    write_line(STDOUT_FILENO,
               fmt::format("stats writes={} bytes={} fua_writes={} flushes={} blocking_waits={} busy_looks={} "
                           "idle_sleeps={} passthrough={} acked={} engine={} dsync_writes={}\n",
                           s.writes, s.bytes, s.fua_writes, s.flushes, s.blocking_waits, s.busy_looks, s.idle_sleeps,
                           s.passthrough.empty() ? "-" : s.passthrough, ack.acked.load(), s.engine, s.dsync_writes));
    write_line(STDOUT_FILENO, fmt::format("end {}\nend-reason {}\n", wz::to_string(w->mode()), w->reason()));
    if (ack.marker_fd >= 0) {
        ::close(ack.marker_fd);
    }
    return failed ? exit_failure : 0;
}

// ---------------------------------------------------------------------------
// verify
// ---------------------------------------------------------------------------

struct block_reader {
    virtual ~block_reader() = default;
    block_reader() = default;
    block_reader(const block_reader&) = delete;
    block_reader& operator=(const block_reader&) = delete;
    // Reads the 4 KiB block at byte `offset` into buf; an error text, or empty.
    virtual std::string read(unsigned char* buf, std::uint64_t offset) = 0;
};

struct odirect_reader : block_reader {
    int fd = -1;
    std::string path;
    explicit odirect_reader(const std::string& p) : path(p) {
        fd = ::open(p.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
        if (fd < 0) {
            std::fprintf(stderr, "wz_ackwrite: open O_DIRECT %s: %s\n", p.c_str(), std::strerror(errno));
            std::exit(exit_failure);
        }
    }
    ~odirect_reader() override { ::close(fd); }
    odirect_reader(const odirect_reader&) = delete;
    odirect_reader& operator=(const odirect_reader&) = delete;
    std::string read(unsigned char* buf, std::uint64_t offset) override {
        std::size_t done = 0;
        while (done < block_bytes) {
            const ssize_t n = ::pread(fd, buf + done, block_bytes - done, static_cast<off_t>(offset + done));
            if (n < 0 && errno == EINTR) {
                continue;
            }
            if (n <= 0) {
                return fmt::format("pread {} [offset {}]: {}", path, offset + done, n == 0 ? "end of file"
                                                                                          : std::strerror(errno));
            }
            done += static_cast<std::size_t>(n);
        }
        return {};
    }
};

// NVMe Read (opcode 02h) through the namespace's char device: the block device's page cache
// is not involved (an O_DIRECT read of a block device first writes back dirty cached pages
// of its range, so it cannot tell a buffered write from a durable one).
struct nvme_reader : block_reader {
    int fd = -1;
    std::string dev;
    std::uint32_t nsid = 0, lba_bytes = 512;
    nvme_reader(const std::string& block_dev, const std::string& char_dev) : dev(char_dev) {
        const int b = ::open(block_dev.c_str(), O_RDONLY | O_CLOEXEC);
        int ssz = 0;
        if (b < 0 || ::ioctl(b, BLKSSZGET, &ssz) != 0 || ssz <= 0) {
            std::fprintf(stderr, "wz_ackwrite: logical block size of %s: %s\n", block_dev.c_str(),
                         std::strerror(errno));
            std::exit(exit_failure);
        }
        ::close(b);
        lba_bytes = static_cast<std::uint32_t>(ssz);
        fd = ::open(char_dev.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            std::fprintf(stderr, "wz_ackwrite: open %s: %s\n", char_dev.c_str(), std::strerror(errno));
            std::exit(exit_failure);
        }
        const int id = ::ioctl(fd, NVME_IOCTL_ID);
        if (id <= 0) {
            std::fprintf(stderr, "wz_ackwrite: NVME_IOCTL_ID %s: %s\n", char_dev.c_str(), std::strerror(errno));
            std::exit(exit_failure);
        }
        nsid = static_cast<std::uint32_t>(id);
    }
    ~nvme_reader() override { ::close(fd); }
    nvme_reader(const nvme_reader&) = delete;
    nvme_reader& operator=(const nvme_reader&) = delete;
    std::string read(unsigned char* buf, std::uint64_t offset) override {
        nvme_passthru_cmd cmd{};
        const std::uint64_t slba = offset / lba_bytes;
        cmd.opcode = 0x02;
        cmd.nsid = nsid;
        cmd.addr = reinterpret_cast<std::uintptr_t>(buf);
        cmd.data_len = static_cast<std::uint32_t>(block_bytes);
        cmd.cdw10 = static_cast<std::uint32_t>(slba);
        cmd.cdw11 = static_cast<std::uint32_t>(slba >> 32);
        cmd.cdw12 = static_cast<std::uint32_t>(block_bytes / lba_bytes - 1);
        const int rc = ::ioctl(fd, NVME_IOCTL_IO_CMD, &cmd);
        if (rc != 0) {
            return fmt::format("NVMe Read {} [slba {}, nlb {}]: {}", dev, slba, block_bytes / lba_bytes,
                               rc < 0 ? std::strerror(errno) : fmt::format("NVMe status {:#x}", rc));
        }
        return {};
    }
};

// An extent map, as fstests/common/ackwrite's _extent_map prints it.
std::vector<wzt::ackwrite::extent> read_map(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "wz_ackwrite: cannot read %s\n", path.c_str());
        std::exit(exit_failure);
    }
    std::vector<wzt::ackwrite::extent> map;
    if (!wzt::ackwrite::parse_map(in, map)) {
        std::fprintf(stderr, "wz_ackwrite: %s is not an extent map (\"FILE DEVICE LENGTH\" lines)\n", path.c_str());
        std::exit(exit_failure);
    }
    return map;
}

int run_verify(const std::string& path, const std::string& acks, const std::string& via, std::string nvme_dev,
               std::optional<std::uint64_t> run_id, const std::string& map_path) {
    std::vector<wzt::ackwrite::extent> map;
    if (!map_path.empty()) {
        map = read_map(map_path);
    }
    std::ifstream in(acks);
    if (!in) {
        std::fprintf(stderr, "wz_ackwrite: cannot read %s\n", acks.c_str());
        return exit_failure;
    }
    // A line cut by the kill cannot be (one write(2) per line): a malformed one fails.
    const wzt::ackwrite::ack_list list = wzt::ackwrite::parse_acks(in);
    if (!run_id) {
        run_id = list.run_id;
    }
    if (!run_id && !list.acks.empty()) {
        std::fprintf(stderr, "wz_ackwrite: %s has no \"open\" line and no --run-id was given\n", acks.c_str());
        return exit_failure;
    }
    std::unique_ptr<block_reader> reader;
    if (via == "nvme") {
        if (nvme_dev.empty()) {
            // /dev/nvmeXnY -> /dev/ngXnY
            const auto p = path.find("/dev/nvme");
            if (p != 0) {
                usage_error("--via nvme needs the raw namespace (/dev/nvmeXnY) or --nvme-dev");
            }
            nvme_dev = "/dev/ng" + path.substr(9);
        }
        reader = std::make_unique<nvme_reader>(path, nvme_dev);
    } else if (via == "odirect") {
        reader = std::make_unique<odirect_reader>(path);
    } else {
        usage_error("--via must be odirect or nvme");
    }
    auto buf = alloc_aligned(block_bytes, 4096);
    auto want = alloc_aligned(block_bytes, 4096);
    const auto n = wzt::ackwrite::verify_acks(
        list.acks, run_id.value_or(0), map, buf.get(), want.get(),
        [&](unsigned char* b, std::uint64_t at) { return reader->read(b, at); },
        [bad = std::uint64_t{0}](const wzt::ackwrite::ack& a, const std::string& why) mutable {
            if (++bad <= max_bad_lines) {
                std::fprintf(stderr, "wz_ackwrite: bad: ack %llu %llu: %s\n", static_cast<unsigned long long>(a.seq),
                             static_cast<unsigned long long>(a.offset), why.c_str());
            }
        });
    if (n.bad > max_bad_lines) {
        std::fprintf(stderr, "wz_ackwrite: ... and %llu more bad blocks\n",
                     static_cast<unsigned long long>(n.bad - max_bad_lines));
    }
    std::printf("verify: %zu acked, %llu intact, %llu bad%s\n", list.acks.size(),
                static_cast<unsigned long long>(n.intact), static_cast<unsigned long long>(n.bad),
                list.malformed != 0 ? fmt::format(", {} malformed ack lines", list.malformed).c_str() : "");
    return n.bad == 0 && list.malformed == 0 ? 0 : exit_failure;
}

// ---------------------------------------------------------------------------
// refresh
// ---------------------------------------------------------------------------

// trace_marker, open for the life of a refresh run; closed best-effort (nothing to report).
struct marker_file {
    int fd = -1;
    marker_file() = default;
    marker_file(const marker_file&) = delete;
    marker_file& operator=(const marker_file&) = delete;
    ~marker_file() {
        if (fd >= 0) {
            (void)::close(fd);  // deliberately ignored: write-only trace marker
        }
    }
};

// One durable 4 KiB write at the start of the range; prints the FUA writes and flushes it cost,
// by the writer's own counters. With marker_fd, "wzstep SEQ begin/end" bracket the write in the
// kernel's trace, so a test can count the commands the device was sent for it (nvme/013).
void one_write(wz::writer& w, std::uint64_t offset, std::uint64_t seq, int marker_fd) {
    auto buf = alloc_aligned(block_bytes, w.alignment());
    fill_block(buf.get(), 0x7e57, seq, offset);
    const wz::writer_stats before = w.stats();
    if (marker_fd >= 0) {
        write_line(marker_fd, fmt::format("wzstep {} begin\n", seq));
    }
    auto r = w.pwrite(buf.get(), block_bytes, offset);
    if (marker_fd >= 0) {
        write_line(marker_fd, fmt::format("wzstep {} end\n", seq));
    }
    const wz::writer_stats after = w.stats();
    if (!r) {
        std::printf("  write: failed: %s\n", r.error().message.c_str());
        return;
    }
    std::printf("  write: ok, fua writes +%llu, flushes +%llu\n",
                static_cast<unsigned long long>(after.fua_writes - before.fua_writes),
                static_cast<unsigned long long>(after.flushes - before.flushes));
}

int run_refresh(const std::string& path, const wz::writer_options& opt, const std::vector<std::string>& steps,
                bool trace_marker) {
    marker_file marker;
    if (trace_marker) {
        marker.fd = ::open(trace_marker_path, O_WRONLY | O_CLOEXEC);
        if (marker.fd < 0) {
            std::fprintf(stderr, "wz_ackwrite: open %s: %s\n", trace_marker_path, std::strerror(errno));
            return exit_failure;
        }
    }
    auto w = wz::writer::open(path, 0, 1 << 20, opt);
    if (!w) {
        std::printf("open (mode %s): failed: %s: %s\n", wz::to_string(opt.mode), code_name(w.error().code).c_str(),
                    w.error().message.c_str());
        return exit_failure;
    }
    std::printf("open (mode %s): %s\n", wz::to_string(opt.mode), wz::to_string(w->mode()));
    std::printf("  reason: %s\n", w->reason().c_str());
    std::fflush(stdout);
    one_write(*w, 0, 0, marker.fd);
    std::uint64_t seq = 1;
    for (const auto& cmd : steps) {
        std::fflush(stdout);
        const int rc = std::system(cmd.c_str());
        std::printf("after '%s' (exit %d), refresh: ", cmd.c_str(), WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
        if (auto e = w->refresh(); !e.ok()) {
            std::printf("failed: %s: %s\n", code_name(e.code()).c_str(), e.error().message.c_str());
            continue;
        }
        std::printf("%s\n  reason: %s\n", wz::to_string(w->mode()), w->reason().c_str());
        one_write(*w, block_bytes * seq, seq, marker.fd);
        seq++;
    }
    if (auto e = w->close(); !e.ok()) {
        std::printf("close: failed: %s\n", e.error().message.c_str());
        return exit_failure;
    }
    return 0;
}

// ---------------------------------------------------------------------------
// errors
// ---------------------------------------------------------------------------

void report(const char* what, const wz::error_info* e) {
    if (e != nullptr) {
        std::printf("%s: %s: %s\n", what, code_name(e->code).c_str(), e->message.c_str());
    } else {
        std::printf("%s: no error\n", what);
    }
}

void report(const char* what, const wz::status& s) { report(what, s.ok() ? nullptr : &s.error()); }

template <class T>
void report(const char* what, const wz::result<T>& r) {
    report(what, r ? nullptr : &r.error());
}

int run_errors(const std::string& path) {
    constexpr std::uint64_t range_off = 1 << 20, range_len = 1 << 20;
    {
        wz::writer_options opt;
        opt.mode = wz::durability_mode::flush;
        opt.queue_depth = 2;
        auto w = wz::writer::open(path, range_off, range_len, opt);
        if (!w) {
            std::printf("open %s: failed: %s\n", path.c_str(), w.error().message.c_str());
            return exit_failure;
        }
        auto big = alloc_aligned(2 * block_bytes, 4096);
        unsigned char* buf = big.get();
        fill_block(buf, 0xe, 0, range_off);
        report("misaligned buffer", w->pwrite(buf + 1, block_bytes, range_off));
        report("misaligned offset", w->pwrite(buf, block_bytes, range_off + 1));
        report("misaligned length", w->pwrite(buf, block_bytes - 1, range_off));
        report("zero length", w->pwrite(buf, 0, range_off));
        report("write before the range", w->pwrite(buf, block_bytes, range_off - block_bytes));
        report("write after the range", w->pwrite(buf, block_bytes, range_off + range_len));
        report("write across the range's end", w->pwrite(buf, 2 * block_bytes, range_off + range_len - block_bytes));
        report("submit: misaligned buffer", w->submit(buf + 1, block_bytes, range_off, 1));
        report("submit: outside the range", w->submit(buf, block_bytes, range_off + range_len, 2));
        // Queue depth 2: a third write in flight is refused with EBUSY, and nothing is lost.
        report("submit 1 of 3 (queue depth 2)", w->submit(buf, block_bytes, range_off, 3));
        report("submit 2 of 3 (queue depth 2)", w->submit(buf, block_bytes, range_off + block_bytes, 4));
        report("submit 3 of 3 (queue depth 2)", w->submit(buf, block_bytes, range_off + 2 * block_bytes, 5));
        std::vector<wz::writer_completion> done;
        auto r = w->complete(done, 2);
        std::size_t ok = 0;
        for (const auto& c : done) {
            ok += c.error ? 0 : 1;
        }
        std::printf("complete(2) after the refusal: %s, %zu handed back, %zu without error, %zu in flight\n",
                    r ? "ok" : r.error().message.c_str(), done.size(), ok, w->in_flight());
        report("close", w->close());
    }
    {
        const int ro = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (ro < 0) {
            std::printf("open %s read-only: %s\n", path.c_str(), std::strerror(errno));
            return exit_failure;
        }
        report("open(fd) with a read-only descriptor", wz::writer::open(ro, path, range_off, range_len));
        ::close(ro);
        const int rw = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        auto w = wz::writer::open(rw, path, range_off, range_len);
        report("open(fd) with a read-write descriptor", w);
        ::close(rw);  // the writer keeps its own duplicate
        if (w) {
            auto buf = alloc_aligned(block_bytes, 4096);
            fill_block(buf.get(), 0xe, 1, range_off);
            report("  write after the caller closed its descriptor", w->pwrite(buf.get(), block_bytes, range_off));
            report("  close", w->close());
        }
    }
    report("bad path", wz::writer::open("/nonexistent/wz_ackwrite", 0, block_bytes));
    report("empty range", wz::writer::open(path, 0, 0));
    {
        struct ::stat st {};
        std::uint64_t size = 0;
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0 && ::fstat(fd, &st) == 0) {
            if (S_ISBLK(st.st_mode)) {
                ::ioctl(fd, BLKGETSIZE64, &size);  // wz: ignored-error (size 0 only weakens the case)
            } else {
                size = static_cast<std::uint64_t>(st.st_size);
            }
        }
        if (fd >= 0) {
            ::close(fd);
        }
        report("range past the end", wz::writer::open(path, size - block_bytes, 2 * block_bytes));
    }
    {
        wz::writer_options opt;
        opt.completion.mode = wz::completion_mode::adaptive;
        opt.queue_depth = 16;
        opt.completion.high_watermark = 16;
        report("adaptive: high watermark not below the queue depth", wz::writer::open(path, range_off, range_len, opt));
        opt.completion.high_watermark = 8;
        opt.completion.low_watermark = 8;
        report("adaptive: low watermark not below the high watermark",
               wz::writer::open(path, range_off, range_len, opt));
        opt.queue_depth = 0;
        opt.completion.mode = wz::completion_mode::interrupt;
        report("queue depth 0", wz::writer::open(path, range_off, range_len, opt));
    }
    return 0;
}

// ---------------------------------------------------------------------------
// cache
// ---------------------------------------------------------------------------

void print_cache(const char* label, int fd, const std::string& path, std::chrono::nanoseconds max_age) {
    auto c = wz::write_cache(fd, path, max_age);
    if (!c) {
        std::printf("%s: failed: %s: %s\n", label, code_name(c.error().code).c_str(), c.error().message.c_str());
        return;
    }
    std::printf("%s: %s, reread %s\n", label, c->effective ? wz::to_string(*c->effective) : "unknown",
                c->reread ? "yes" : "no");
    std::fprintf(stderr, "wz_ackwrite: %s: %s (age %.3f ms)\n", label, c->reason.c_str(),
                 std::chrono::duration<double, std::milli>(c->age).count());
}

int run_cache(const std::string& path, const std::vector<std::string>& steps) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        std::fprintf(stderr, "wz_ackwrite: open %s: %s\n", path.c_str(), std::strerror(errno));
        return exit_failure;
    }
    constexpr std::chrono::hours hour{1};
    print_cache("first (max age 1 h)", fd, path, hour);
    print_cache("again (max age 1 h)", fd, path, hour);
    for (const auto& cmd : steps) {
        std::fflush(stdout);
        const int rc = std::system(cmd.c_str());
        std::printf("after '%s' (exit %d)\n", cmd.c_str(), WIFEXITED(rc) ? WEXITSTATUS(rc) : -1);
        print_cache("  max age 1 h", fd, path, hour);
        print_cache("  max age 0", fd, path, std::chrono::nanoseconds(0));
        print_cache("  max age 1 h, after", fd, path, hour);
    }
    ::close(fd);
    return 0;
}

// ---------------------------------------------------------------------------

std::uint64_t default_run_id() {
    const auto ns = std::chrono::steady_clock::now().time_since_epoch().count();
    return (static_cast<std::uint64_t>(ns) << 16) ^ static_cast<std::uint64_t>(::getpid());
}

}  // namespace

int main(int argc, char** argv) {
    std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty() || args[0] == "-h" || args[0] == "--help") {
        print_usage();
        return args.empty() ? exit_failure : 0;
    }
    const std::string cmd = args[0];
    std::vector<std::string> pos;
    auto value = [&](std::size_t& i) -> const std::string& {
        if (i + 1 >= args.size()) {
            usage_error(args[i] + " needs a value");
        }
        return args[++i];
    };
    write_args w;
    std::string via = "odirect", nvme_dev, map_path;
    std::optional<std::uint64_t> run_id;
    std::vector<std::string> steps;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& o = args[i];
        if (o == "-o" || o == "--offset") {
            w.offset = parse_size(value(i), "offset");
        } else if (o == "-l" || o == "--length") {
            w.length = parse_size(value(i), "length");
            w.have_length = true;
        } else if (o == "--mode") {
            w.options.mode = parse_mode(value(i));
        } else if (o == "--unsafe") {
            w.options.allow_unsafe_through = true;
        } else if (o == "--threads") {
            w.threads = parse_uint(value(i), "--threads");
        } else if (o == "--qd") {
            w.qd = parse_uint(value(i), "--qd");
        } else if (o == "--completion") {
            w.options.completion.mode = parse_completion(value(i));
        } else if (o == "--high") {
            w.options.completion.high_watermark = parse_uint(value(i), "--high");
        } else if (o == "--low") {
            w.options.completion.low_watermark = parse_uint(value(i), "--low");
        } else if (o == "--interval-us") {
            w.options.completion.interval = std::chrono::microseconds(parse_uint(value(i), "--interval-us"));
        } else if (o == "--max-loops") {
            w.options.completion.max_loops = parse_uint(value(i), "--max-loops");
        } else if (o == "--count") {
            w.count = parse_size(value(i), "--count");
        } else if (o == "--run-id") {
            run_id = parse_size(value(i), "--run-id");
        } else if (o == "--order") {
            const std::string& v = value(i);
            if (v != "seq" && v != "scatter") {
                usage_error("--order must be seq or scatter");
            }
            w.scatter = v == "scatter";
        } else if (o == "--trace-marker") {
            w.trace_marker = true;
        } else if (o == "--submit-marker") {
            w.submit_marker = true;
        } else if (o == "--stop-file") {
            w.stop_file = value(i);
        } else if (o == "--after-stop") {
            w.after_stop = parse_size(value(i), "--after-stop");
        } else if (o == "--mark-area") {
            w.mark_area = value(i);
        } else if (o == "--mark-tag") {
            w.mark_tag = value(i);
        } else if (o == "--via") {
            via = value(i);
        } else if (o == "--nvme-dev") {
            nvme_dev = value(i);
        } else if (o == "--map") {
            map_path = value(i);
        } else if (o == "--then") {
            steps.push_back(value(i));
        } else if (o.size() > 1 && o[0] == '-') {
            usage_error("unknown option " + o);
        } else {
            pos.push_back(o);
        }
    }
    if (cmd == "write") {
        if (pos.size() != 1) {
            usage_error("write takes one PATH");
        }
        if (w.threads == 0 || w.qd > 0xffff) {
            usage_error("--threads must be at least 1 and --qd at most 65535");
        }
        if (w.submit_marker && !w.trace_marker) {
            usage_error("--submit-marker needs --trace-marker");
        }
        w.path = pos[0];
        w.run_id = run_id.value_or(default_run_id());
        if (w.qd > 0) {
            w.options.queue_depth = w.qd;
        }
        return run_write(w);
    }
    if (cmd == "verify") {
        if (pos.size() != 2) {
            usage_error("verify takes PATH and ACKS");
        }
        return run_verify(pos[0], pos[1], via, nvme_dev, run_id, map_path);
    }
    if (cmd == "refresh") {
        if (pos.size() != 1) {
            usage_error("refresh takes one PATH");
        }
        return run_refresh(pos[0], w.options, steps, w.trace_marker);
    }
    if (cmd == "cache") {
        if (pos.size() != 1) {
            usage_error("cache takes one PATH");
        }
        return run_cache(pos[0], steps);
    }
    if (cmd == "errors") {
        if (pos.size() != 1) {
            usage_error("errors takes one PATH");
        }
        return run_errors(pos[0]);
    }
    usage_error("unknown command '" + cmd + "'");
}

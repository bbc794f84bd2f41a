// SPDX-License-Identifier: MIT
// wz_replay: what a device holds after a power cut, at every point of a write log.
//
//   wz_replay mark --dev DEV --at OFF --length LEN [--tag TAG]
//       (in the VM) copies stdin to stdout line by line; before it passes a line on, it writes
//       one logical block "WZMARK01" INDEX LENGTH "TAG LINE" with O_DIRECT to the marker area
//       [OFF, OFF+LEN) of DEV (block INDEX modulo the area's blocks): no flush, no FUA, so the
//       data under test keeps the durability it had. A workload's acknowledgement line piped
//       through it puts a marker into the device's write log after the acknowledgement, so the
//       log says which acknowledgements had been given before any point of it.
//   wz_replay dump LOG
//       one line per entry: "INDEX SECTOR NR_SECTORS FLAGS [mark NAME]".
//   wz_replay fill FILE OFF LEN
//       (on the host, before the boot) fills [OFF, OFF+LEN) of the image FILE with old data that
//       is never zero: each 512-byte sector holds "WZOLD" and its sector number, repeated.
//   wz_replay check --log LOG --base IMG --work FILE --marker-at OFF --marker-length LEN
//                   [--lba N] [--tag TAG] [--fua-from CMDS] [--cuts N] [--max-cuts N]
//                   [--subsets N] [--seed N] [--range OFF:LEN]... [--check CMD]
//                   [--verify-acked [--verify-map MAP]] [--until-caught]
//       rebuilds the device image (IMG as it was before the logged run, plus the log's
//       entries) as it would be after a power loss at cut points of the log, and checks each.
//
// The power-loss model (NVMe, a volatile write cache): a cut after entry c-1 keeps every entry
// before the last flush entry f < c (a flush commits the writes completed before it; the log
// is in completion order), every FUA write before c, and of the other writes (and discards)
// in [f, c) any subset: the cut is tried with none of them, with all of them (xfstests'
// prefix replay), and with --subsets random subsets (each write kept with probability 1/2,
// applied in log order). Write-through devices need no special case: the block layer below
// QEMU's controller turns every write into a write plus a flush entry.
// FUA: dm-log-writes' entries carry it; QEMU's controller drops the NVMe FUA bit, so with
// blklogwrites it comes from the guest's driver: --fua-from CMDS, lines "W SLBA NLB FUA" (the
// nvme_setup_cmd events of Writes and Write Zeroes, in setup order, NLB from 1, FUA 0/1) and
// "lost N" (events the trace lost: must be 0); the k-th logged write of a range is the k-th
// command for that range. Every logged write must have its command and every command its
// logged write (the guest's run ended cleanly), else the join, and the check, fail.
//
// Cut points, in the window of TAG (from the entry of its first marker to that of its last):
// just after every flush entry, just before it, just after every FUA write, --cuts random
// points and the end; --max-cuts keeps an even sample of them. At each cut and subset:
//   --range OFF:LEN (bytes, multiples of 512, repeatable): every sector a write or discard
//       of the window touched reads as before the run (IMG) or as zeroes when it lies inside a
//       range, and as before the run when it does not (the marker area aside);
//   --check CMD: sh -c CMD with WZ_REPLAY_IMAGE (the rebuilt image; the command may read it,
//       not write it), WZ_REPLAY_ACKED (a file with the lines of TAG whose markers are in the
//       log before the cut, tag removed), WZ_REPLAY_CUT and WZ_REPLAY_SUBSET; exit status 0
//       passes.
//   --verify-acked: what `wz_ackwrite verify [--map MAP] IMAGE ACKED` checks, in this process
//       (no command started per image): every block acknowledged before the cut (TAG's "ack
//       SEQ OFFSET" lines, the run id from its "open" line) holds its write's pattern, read at
//       OFFSET of the image or, with --verify-map MAP (wz_ackwrite's extent map), where MAP puts
//       it.
// --until-caught (for a control, which must be caught): stops at the first image with a
// violation; the summary then counts the cut points and images checked up to it.
// Output: "replay TAG: ..." summary lines (entries, markers, cut points by kind, images
// checked, violations) and the first violations. Exit status: 0 no violation, 1 violations
// or a malformed log, 2 usage.

#include "ackwrite_block.hpp"
#include "logwrites.hpp"
#include "replay_marker.hpp"

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr int exit_violation = 1;
constexpr int exit_usage = 2;
using wzt::marker_header;
using wzt::marker_magic;
constexpr std::uint64_t max_violation_lines = 10;

[[noreturn]] void die(const std::string& why, int status = exit_violation) {
    std::fprintf(stderr, "wz_replay: %s\n", why.c_str());
    std::exit(status);
}

[[noreturn]] void usage(const std::string& why) {
    die(why + "\nUsage: wz_replay mark|dump|fill|check ... (see the top of fstests/src/wz_replay.cpp)", exit_usage);
}

std::uint64_t parse_u64(const std::string& s, const char* what) {
    if (s.empty() || s[0] < '0' || s[0] > '9') {
        usage(fmt::format("invalid {} '{}'", what, s));
    }
    std::size_t used = 0;
    std::uint64_t v = 0;
    try {
        v = std::stoull(s, &used, 0);
    } catch (const std::exception&) {
        usage(fmt::format("invalid {} '{}'", what, s));
    }
    const std::string suffix = s.substr(used);
    unsigned shift = 0;
    if (suffix == "K") {
        shift = 10;
    } else if (suffix == "M") {
        shift = 20;
    } else if (suffix == "G") {
        shift = 30;
    } else if (!suffix.empty()) {
        usage(fmt::format("invalid {} '{}'", what, s));
    }
    if (shift != 0 && v > (~std::uint64_t{0} >> shift)) {
        usage(fmt::format("{} '{}' is too large", what, s));
    }
    return v << shift;
}

void put_le(unsigned char* p, std::uint64_t v, int bytes) {
    for (int i = 0; i < bytes; ++i) {
        p[i] = static_cast<unsigned char>(v >> (8 * i));
    }
}

std::uint64_t get_le(const unsigned char* p, int bytes) {
    std::uint64_t v = 0;
    for (int i = bytes - 1; i >= 0; --i) {
        v = (v << 8) | p[i];
    }
    return v;
}

struct fd_guard {
    int fd = -1;
    explicit fd_guard(int f) : fd(f) {}
    ~fd_guard() {
        if (fd >= 0) {
            ::close(fd);
        }
    }
    fd_guard(const fd_guard&) = delete;
    fd_guard& operator=(const fd_guard&) = delete;
};

void pwrite_all(int fd, const void* buf, std::size_t n, std::uint64_t off, const std::string& path) {
    const auto* p = static_cast<const unsigned char*>(buf);
    std::size_t done = 0;
    while (done < n) {
        const ssize_t w = ::pwrite(fd, p + done, n - done, static_cast<off_t>(off + done));
        if (w < 0 && errno == EINTR) {
            continue;
        }
        if (w <= 0) {
            die(fmt::format("pwrite {} [offset {}, {} bytes]: {}", path, off + done, n - done,
                            w < 0 ? std::strerror(errno) : "wrote nothing"));
        }
        done += static_cast<std::size_t>(w);
    }
}

void pread_all(int fd, void* buf, std::size_t n, std::uint64_t off, const std::string& path) {
    auto* p = static_cast<unsigned char*>(buf);
    std::size_t done = 0;
    while (done < n) {
        const ssize_t r = ::pread(fd, p + done, n - done, static_cast<off_t>(off + done));
        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            die(fmt::format("pread {} [offset {}, {} bytes]: {}", path, off + done, n - done,
                            r < 0 ? std::strerror(errno) : "end of file"));
        }
        done += static_cast<std::size_t>(r);
    }
}

// ---------------------------------------------------------------------------
// mark
// ---------------------------------------------------------------------------

int run_mark(const std::string& dev, std::uint64_t at, std::uint64_t length, const std::string& tag) {
    wzt::marker_area area;
    if (auto why = area.open(dev, at, length); !why.empty()) {
        die(why);
    }
    std::string line;
    while (std::getline(std::cin, line)) {
        if (auto why = area.write(tag.empty() ? line : tag + " " + line); !why.empty()) {
            die(why);
        }
        line += '\n';
        if (std::fwrite(line.data(), 1, line.size(), stdout) != line.size() || std::fflush(stdout) != 0) {
            die(fmt::format("write to stdout: {}", std::strerror(errno)));
        }
    }
    return 0;
}

int run_fill(const std::string& path, std::uint64_t off, std::uint64_t len) {
    if (off % 512 != 0 || len % 512 != 0) {
        usage("fill: OFF and LEN must be multiples of 512");
    }
    const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
        die(fmt::format("open {}: {}", path, std::strerror(errno)));
    }
    fd_guard guard(fd);
    std::vector<unsigned char> buf(1 << 20);
    for (std::uint64_t at = off; at < off + len;) {
        const std::uint64_t n = std::min<std::uint64_t>(buf.size(), off + len - at);
        for (std::uint64_t s = 0; s < n; s += 16) {
            std::memcpy(buf.data() + s, "WZOLD\0\0\0", 8);
            put_le(buf.data() + s + 8, (at + s) / 512, 8);
        }
        pwrite_all(fd, buf.data(), static_cast<std::size_t>(n), at, path);
        at += n;
    }
    if (::fsync(fd) != 0) {
        die(fmt::format("fsync {}: {}", path, std::strerror(errno)));
    }
    return 0;
}

// ---------------------------------------------------------------------------
// the log, mapped
// ---------------------------------------------------------------------------

struct mapped_file {
    const unsigned char* data = nullptr;
    std::size_t size = 0;
    explicit mapped_file(const std::string& path) {
        const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            die(fmt::format("open {}: {}", path, std::strerror(errno)));
        }
        fd_guard guard(fd);
        struct stat st {};
        if (::fstat(fd, &st) != 0) {
            die(fmt::format("fstat {}: {}", path, std::strerror(errno)));
        }
        size = static_cast<std::size_t>(st.st_size);
        if (size == 0) {
            return;
        }
        void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            die(fmt::format("mmap {} [{} bytes]: {}", path, size, std::strerror(errno)));
        }
        data = static_cast<const unsigned char*>(p);
    }
    ~mapped_file() {
        if (data != nullptr) {
            ::munmap(const_cast<unsigned char*>(data), size);
        }
    }
    mapped_file(const mapped_file&) = delete;
    mapped_file& operator=(const mapped_file&) = delete;
};

std::string flag_names(std::uint64_t f) {
    std::string s;
    auto add = [&](std::uint64_t bit, const char* name) {
        if ((f & bit) != 0) {
            s += s.empty() ? name : std::string("|") + name;
        }
    };
    add(wzt::log_flush, "FLUSH");
    add(wzt::log_fua, "FUA");
    add(wzt::log_discard, "DISCARD");
    add(wzt::log_mark, "MARK");
    add(wzt::log_metadata, "METADATA");
    return s.empty() ? "-" : s;
}

int run_dump(const std::string& path) {
    mapped_file log(path);
    const auto parsed = wzt::parse_log(log.data, log.size);
    std::printf("sectorsize %u nr_entries %llu scanned %zu\n", parsed.sector_size,
                static_cast<unsigned long long>(parsed.nr_entries), parsed.entries.size());
    for (std::size_t i = 0; i < parsed.entries.size(); ++i) {
        const auto& e = parsed.entries[i];
        std::printf("%zu %llu %llu %s%s\n", i, static_cast<unsigned long long>(e.sector),
                    static_cast<unsigned long long>(e.nr_sectors), flag_names(e.flags).c_str(),
                    e.mark.empty() ? "" : (" mark " + e.mark).c_str());
    }
    if (!parsed.error.empty()) {
        die(fmt::format("{}: {}", path, parsed.error));
    }
    return 0;
}

// ---------------------------------------------------------------------------
// check
// ---------------------------------------------------------------------------

struct range_t {
    std::uint64_t offset, length;
    [[nodiscard]] bool contains(std::uint64_t off, std::uint64_t len) const {
        return off >= offset && off - offset + len <= length;
    }
    [[nodiscard]] bool overlaps(std::uint64_t off, std::uint64_t len) const {
        return off < offset + length && offset < off + len;
    }
};

range_t parse_range(const std::string& s) {
    const auto colon = s.find(':');
    if (colon == std::string::npos) {
        usage(fmt::format("invalid --range '{}' (want OFF:LEN)", s));
    }
    range_t r{parse_u64(s.substr(0, colon), "--range offset"), parse_u64(s.substr(colon + 1), "--range length")};
    if (r.length == 0 || r.offset + r.length < r.offset || r.offset % 512 != 0 || r.length % 512 != 0) {
        usage(fmt::format("invalid --range '{}'", s));
    }
    return r;
}

struct check_args {
    std::string log, base, work, tag, fua_from, check_cmd, verify_map;
    bool verify_acked = false, until_caught = false;
    std::uint64_t marker_at = 0, marker_length = 0, lba = 512;
    std::uint64_t cuts = 20, max_cuts = 0, subsets = 2;
    std::uint64_t seed = 0;
    bool seed_given = false;
    std::vector<range_t> ranges;
};

struct marker_t {
    std::size_t entry;  // log entry that carried it
    std::uint64_t index;
    std::string text;   // tag removed when the tag matched
};

// Copies IMG to WORK, holes kept as holes (the image is sparse).
void copy_sparse(const std::string& from, const std::string& to) {
    const int in = ::open(from.c_str(), O_RDONLY | O_CLOEXEC);
    if (in < 0) {
        die(fmt::format("open {}: {}", from, std::strerror(errno)));
    }
    fd_guard gin(in);
    const int out = ::open(to.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out < 0) {
        die(fmt::format("create {}: {}", to, std::strerror(errno)));
    }
    fd_guard gout(out);
    struct stat st {};
    if (::fstat(in, &st) != 0 || ::ftruncate(out, st.st_size) != 0) {
        die(fmt::format("size {} as {}: {}", to, from, std::strerror(errno)));
    }
    std::vector<unsigned char> buf(1 << 20);
    off_t pos = 0;
    while (pos < st.st_size) {
        const off_t data = ::lseek(in, pos, SEEK_DATA);
        if (data < 0) {
            break;  // ENXIO: only a hole is left
        }
        off_t hole = ::lseek(in, data, SEEK_HOLE);
        if (hole < 0) {
            hole = st.st_size;
        }
        for (off_t at = data; at < hole;) {
            const std::size_t n = static_cast<std::size_t>(std::min<off_t>(hole - at, static_cast<off_t>(buf.size())));
            pread_all(in, buf.data(), n, static_cast<std::uint64_t>(at), from);
            pwrite_all(out, buf.data(), n, static_cast<std::uint64_t>(at), to);
            at += static_cast<off_t>(n);
        }
        pos = hole;
    }
}

class replayer {
public:
    explicit replayer(const check_args& a) : a_(a), log_(a.log) {}

    int run();

private:
    struct undo_t {
        std::uint64_t offset;
        std::vector<unsigned char> old;
    };

    void join_fua();
    void find_markers();
    void apply(std::size_t i, std::vector<undo_t>* undo);
    void check_ranges(const std::vector<std::size_t>& entries, std::vector<std::string>& why);
    void violation(std::size_t cut, const std::string& subset, const std::string& why);
    // --verify-acked: every block in `acks` holds its write's pattern in the work image.
    void verify_acked(const wzt::ackwrite::ack_list& acks, std::vector<std::string>& why);

    [[nodiscard]] std::uint64_t bytes(std::uint64_t sectors) const { return sectors * parsed_.sector_size; }
    [[nodiscard]] bool in_marker_area(const wzt::log_entry& e) const {
        return a_.marker_length != 0 &&
               range_t{a_.marker_at, a_.marker_length}.contains(bytes(e.sector), bytes(e.nr_sectors));
    }

    const check_args& a_;
    mapped_file log_;
    wzt::parsed_log parsed_;
    std::vector<bool> fua_;
    std::vector<marker_t> markers_;
    std::vector<wzt::ackwrite::extent> verify_map_;  // --verify-map
    int work_fd_ = -1, base_fd_ = -1;
    std::uint64_t violations_ = 0;
    std::uint64_t rewritten_outside_ = 0;  // most sectors outside the ranges written at a cut
};

void replayer::verify_acked(const wzt::ackwrite::ack_list& acks, std::vector<std::string>& why) {
    namespace aw = wzt::ackwrite;
    unsigned char buf[aw::block_bytes], want[aw::block_bytes];
    std::string first;
    const auto n = aw::verify_acks(
        acks.acks, acks.run_id.value_or(0), verify_map_, buf, want,
        [this](unsigned char* b, std::uint64_t at) -> std::string {
            pread_all(work_fd_, b, aw::block_bytes, at, a_.work);
            return {};
        },
        [&first](const aw::ack& a, const std::string& w) {
            if (first.empty()) {
                first = fmt::format("ack {} {}: {}", a.seq, a.offset, w);
            }
        });
    if (n.bad != 0) {
        why.push_back(fmt::format("{} of {} acknowledged blocks do not hold their write; first: {}", n.bad,
                                  acks.acks.size(), first));
    }
}

void replayer::violation(std::size_t cut, const std::string& subset, const std::string& why) {
    if (++violations_ <= max_violation_lines) {
        std::printf("violation: cut %zu (subset %s): %s\n", cut, subset.c_str(), why.c_str());
    }
}

// FUA from the guest's commands: the k-th logged write of (sector, nr_sectors) is the k-th
// Write or Write Zeroes command the driver set up for that range.
void replayer::join_fua() {
    fua_.assign(parsed_.entries.size(), false);
    for (std::size_t i = 0; i < parsed_.entries.size(); ++i) {
        fua_[i] = (parsed_.entries[i].flags & wzt::log_fua) != 0;
    }
    if (a_.fua_from.empty()) {
        return;
    }
    std::ifstream in(a_.fua_from);
    if (!in) {
        die(fmt::format("cannot read {}", a_.fua_from));
    }
    std::map<std::pair<std::uint64_t, std::uint64_t>, std::deque<bool>> cmds;
    std::string line;
    std::uint64_t n = 0;
    bool saw_lost = false;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string kind;
        ls >> kind;
        if (kind == "lost") {
            std::uint64_t lost = 0;
            ls >> lost;
            saw_lost = true;
            if (lost != 0) {
                die(fmt::format("{}: the guest's trace lost {} events: FUA cannot be joined", a_.fua_from, lost));
            }
            continue;
        }
        std::uint64_t slba = 0, nlb = 0, fua = 0;
        if (kind != "W" || !(ls >> slba >> nlb >> fua)) {
            die(fmt::format("{}: malformed line '{}'", a_.fua_from, line));
        }
        const std::uint64_t s = slba * a_.lba / parsed_.sector_size, c = nlb * a_.lba / parsed_.sector_size;
        cmds[{s, c}].push_back(fua != 0);
        n++;
    }
    std::uint64_t unmatched = 0, matched = 0;
    for (std::size_t i = 0; i < parsed_.entries.size(); ++i) {
        const auto& e = parsed_.entries[i];
        if (!e.is_write()) {
            continue;
        }
        auto it = cmds.find({e.sector, e.nr_sectors});
        if (it == cmds.end() || it->second.empty()) {
            if (++unmatched <= 3) {
                std::fprintf(stderr, "wz_replay: log entry %zu (sector %llu, %llu sectors) has no command in %s\n", i,
                             static_cast<unsigned long long>(e.sector), static_cast<unsigned long long>(e.nr_sectors),
                             a_.fua_from.c_str());
            }
            continue;
        }
        fua_[i] = fua_[i] || it->second.front();
        it->second.pop_front();
        matched++;
    }
    std::uint64_t left = 0;
    for (const auto& [k, q] : cmds) {
        left += q.size();
    }
    std::printf("fua join: %llu commands, %llu logged writes matched, %llu unmatched, %llu commands not logged\n",
                static_cast<unsigned long long>(n), static_cast<unsigned long long>(matched),
                static_cast<unsigned long long>(unmatched), static_cast<unsigned long long>(left));
    if (unmatched != 0) {
        die(fmt::format("{} logged writes have no command in {}: the join is not sound", unmatched, a_.fua_from));
    }
    // The guest's run ended cleanly: every command it sent completed, so each is in the log;
    // one that is not means the log is not the device's whole history.
    if (left != 0) {
        die(fmt::format("{} commands of {} are not in the log: it is not the device's whole history", left,
                        a_.fua_from));
    }
    if (!saw_lost) {
        die(fmt::format("{} has no \"lost N\" line: the guest's command list is cut short", a_.fua_from));
    }
}

void replayer::find_markers() {
    if (a_.marker_length == 0) {
        return;
    }
    const range_t area{a_.marker_at, a_.marker_length};
    for (std::size_t i = 0; i < parsed_.entries.size(); ++i) {
        const auto& e = parsed_.entries[i];
        const std::uint64_t off = bytes(e.sector), len = bytes(e.nr_sectors);
        if (!e.is_write() || !area.overlaps(off, len)) {
            continue;
        }
        if (!area.contains(off, len)) {
            die(fmt::format("log entry {} [offset {}, {} bytes] straddles the marker area [{}, +{})", i, off, len,
                            area.offset, area.length));
        }
        if (off % a_.lba != 0 || len % a_.lba != 0) {
            die(fmt::format("log entry {} [offset {}, {} bytes] in the marker area is not made of {}-byte blocks", i,
                            off, len, a_.lba));
        }
        for (std::uint64_t b = 0; b < len; b += a_.lba) {
            const unsigned char* p = log_.data + e.data + b;
            if (std::memcmp(p, marker_magic, sizeof marker_magic) != 0) {
                continue;  // zeroes (mkfs's discard of the area, say)
            }
            const std::uint64_t index = get_le(p + 8, 8), n = get_le(p + 16, 4);
            if (n > a_.lba - marker_header) {
                die(fmt::format("log entry {}: marker {} says {} bytes of text", i, index, n));
            }
            std::string text(reinterpret_cast<const char*>(p + marker_header), static_cast<std::size_t>(n));
            if (!a_.tag.empty()) {
                if (text.compare(0, a_.tag.size() + 1, a_.tag + " ") != 0) {
                    continue;
                }
                text.erase(0, a_.tag.size() + 1);
            }
            markers_.push_back({i, index, std::move(text)});
        }
    }
}

// Applies entry i to the work image, saving what it overwrote into *undo when given.
void replayer::apply(std::size_t i, std::vector<undo_t>* undo) {
    const auto& e = parsed_.entries[i];
    if (!e.is_write() && !(e.is_discard() && e.nr_sectors != 0)) {
        return;
    }
    const std::uint64_t off = bytes(e.sector), len = bytes(e.nr_sectors);
    if (undo != nullptr) {
        undo_t u{off, std::vector<unsigned char>(len)};
        pread_all(work_fd_, u.old.data(), len, off, a_.work);
        undo->push_back(std::move(u));
    }
    if (e.is_write()) {
        pwrite_all(work_fd_, log_.data + e.data, len, off, a_.work);
    } else {
        // A discard reads back as zeroes (QEMU's controller: DLFEAT 1; a file punched).
        const std::vector<unsigned char> zero(len, 0);
        pwrite_all(work_fd_, zero.data(), len, off, a_.work);
    }
}

// The --range rule over the given entries (the window's writes that reached the image): a
// sector inside a range reads as its old data or as zeroes; a sector outside every range reads
// as its old data. The latter is allowed to have been written: zeroing a range's partial
// pages through the page cache makes the kernel write the whole page back, the bytes next to
// the range with what they held (lib/plan/zero_plan.hpp, split_range_edges); those sectors
// are counted in rewritten_outside_.
void replayer::check_ranges(const std::vector<std::size_t>& entries, std::vector<std::string>& why) {
    std::vector<unsigned char> got, old;
    std::uint64_t outside = 0;
    auto one = [&](std::size_t i) {
        const auto& e = parsed_.entries[i];
        if ((!e.is_write() && !e.is_discard()) || e.nr_sectors == 0 || in_marker_area(e)) {
            return;
        }
        const std::uint64_t off = bytes(e.sector), len = bytes(e.nr_sectors);
        got.resize(len);
        old.resize(len);
        pread_all(work_fd_, got.data(), len, off, a_.work);
        pread_all(base_fd_, old.data(), len, off, a_.base);
        for (std::uint64_t s = 0; s < len; s += 512) {
            const unsigned char* g = got.data() + s;
            const bool same = std::memcmp(g, old.data() + s, 512) == 0;
            const bool inside = std::any_of(a_.ranges.begin(), a_.ranges.end(),
                                            [&](const range_t& r) { return r.contains(off + s, 512); });
            if (!inside) {
                outside++;
                if (!same) {
                    why.push_back(fmt::format("log entry {} [offset {}, {} bytes]: the sector at offset {}, outside "
                                              "every --range, no longer holds its old data",
                                              i, off, len, off + s));
                    return;
                }
            } else if (!same && !std::all_of(g, g + 512, [](unsigned char ch) { return ch == 0; })) {
                why.push_back(fmt::format("log entry {}: the sector at offset {} holds neither its old data nor "
                                          "zeroes",
                                          i, off + s));
                return;
            }
        }
    };
    for (std::size_t i : entries) {
        one(i);
    }
    rewritten_outside_ = std::max(rewritten_outside_, outside);
}

int replayer::run() {
    parsed_ = wzt::parse_log(log_.data, log_.size);
    {
        struct stat st {};
        if (::stat(a_.base.c_str(), &st) != 0) {
            die(fmt::format("stat {}: {}", a_.base, std::strerror(errno)));
        }
        if (parsed_.sector_size != 0) {
            // Again, now with the device's size: no entry may reach past it.
            parsed_ = wzt::parse_log(log_.data, log_.size, static_cast<std::uint64_t>(st.st_size) / parsed_.sector_size);
        }
    }
    if (!parsed_.error.empty()) {
        die(fmt::format("{}: {}", a_.log, parsed_.error));
    }
    join_fua();
    find_markers();
    const auto& E = parsed_.entries;
    std::uint64_t writes = 0, flushes = 0, fuas = 0, discards = 0;
    for (std::size_t i = 0; i < E.size(); ++i) {
        writes += E[i].is_write() ? 1 : 0;
        flushes += E[i].is_flush() ? 1 : 0;
        fuas += (E[i].is_write() && fua_[i]) ? 1 : 0;
        discards += E[i].is_discard() ? 1 : 0;
    }
    const std::string name = a_.tag.empty() ? "log" : a_.tag;
    std::printf("replay %s: log entries %zu (counted %llu; writes %llu, flushes %llu, fua writes %llu, discards %llu), "
                "markers %zu\n",
                name.c_str(), E.size(), static_cast<unsigned long long>(parsed_.nr_entries),
                static_cast<unsigned long long>(writes), static_cast<unsigned long long>(flushes),
                static_cast<unsigned long long>(fuas), static_cast<unsigned long long>(discards), markers_.size());
    if (markers_.empty()) {
        die(fmt::format("no marker{} in the log: nothing to replay", a_.tag.empty() ? "" : " of tag " + a_.tag));
    }
    // The window: from the first marker's entry to the last one's.
    const std::size_t lo = markers_.front().entry, hi = markers_.back().entry;

    // Cut points c: entries [0, c) reached the device.
    enum kind { after_flush, before_flush, after_fua, random_point, end_point };
    std::map<std::size_t, kind> cuts;
    for (std::size_t i = lo; i <= hi; ++i) {
        if (E[i].is_flush()) {
            cuts.emplace(i + 1, after_flush);
            cuts.emplace(i, before_flush);
        } else if (E[i].is_write() && fua_[i]) {
            cuts.emplace(i + 1, after_fua);
        }
    }
    std::mt19937_64 rng(a_.seed_given ? a_.seed : std::random_device{}());
    const std::uint64_t seed = a_.seed_given ? a_.seed : rng();
    rng.seed(seed);
    std::uniform_int_distribution<std::size_t> pick(lo + 1, hi + 1);
    for (std::uint64_t r = 0; r < a_.cuts; ++r) {
        cuts.emplace(pick(rng), random_point);
    }
    cuts[hi + 1] = end_point;
    for (auto it = cuts.begin(); it != cuts.end();) {
        it = (it->first <= lo) ? cuts.erase(it) : std::next(it);  // nothing of the window yet
    }
    const std::size_t all_cuts = cuts.size();
    std::vector<std::pair<std::size_t, kind>> chosen(cuts.begin(), cuts.end());
    if (a_.max_cuts != 0 && chosen.size() > a_.max_cuts) {
        std::vector<std::pair<std::size_t, kind>> sample;
        for (std::uint64_t k = 0; k < a_.max_cuts; ++k) {
            sample.push_back(chosen[static_cast<std::size_t>(k * (chosen.size() - 1) / std::max<std::uint64_t>(a_.max_cuts - 1, 1))]);
        }
        sample.erase(std::unique(sample.begin(), sample.end()), sample.end());
        chosen = std::move(sample);
    }

    copy_sparse(a_.base, a_.work);
    work_fd_ = ::open(a_.work.c_str(), O_RDWR | O_CLOEXEC);
    base_fd_ = ::open(a_.base.c_str(), O_RDONLY | O_CLOEXEC);
    if (work_fd_ < 0 || base_fd_ < 0) {
        die(fmt::format("open {} / {}: {}", a_.work, a_.base, std::strerror(errno)));
    }
    fd_guard gw(work_fd_), gb(base_fd_);
    const std::string acked_path = a_.work + ".acked";
    if (!a_.verify_map.empty()) {
        std::ifstream in(a_.verify_map);
        if (!in || !wzt::ackwrite::parse_map(in, verify_map_)) {
            die(fmt::format("{} is not an extent map (\"FILE DEVICE LENGTH\" lines)", a_.verify_map));
        }
    }

    std::uint64_t images = 0, per_kind[5] = {}, dropped_max = 0;
    std::size_t prefix = 0;  // entries [0, prefix) are applied to the work image for good
    std::size_t cuts_checked = 0;
    const auto caught = [&] { return a_.until_caught && violations_ > 0; };
    for (const auto& [c, k] : chosen) {
        if (caught()) {
            break;
        }
        cuts_checked++;
        per_kind[k]++;
        // The last flush entry before the cut: everything before it is durable.
        std::size_t f = c;
        while (f > 0 && !E[f - 1].is_flush()) {
            --f;
        }
        // f is one past the flush entry (0: none). The flush entry's own data (a PREFLUSH
        // write) is not covered by it.
        std::size_t durable_end = f;
        if (f > 0 && E[f - 1].is_write()) {
            durable_end = f - 1;
        }
        for (; prefix < durable_end; ++prefix) {
            apply(prefix, nullptr);
        }
        std::vector<std::size_t> optional;  // pending, not FUA
        std::vector<std::size_t> fua_pending;
        for (std::size_t i = durable_end; i < c; ++i) {
            if (!E[i].is_write() && !(E[i].is_discard() && E[i].nr_sectors != 0)) {
                continue;
            }
            (E[i].is_write() && fua_[i] ? fua_pending : optional).push_back(i);
        }
        dropped_max = std::max<std::uint64_t>(dropped_max, optional.size());
        // Acknowledgements given before the cut.
        std::string acked;
        for (const auto& m : markers_) {
            if (m.entry < c) {
                acked += m.text;
                acked += '\n';
            }
        }
        if (!a_.check_cmd.empty()) {
            std::ofstream out(acked_path, std::ios::trunc);
            out << acked;
            if (!out) {
                die(fmt::format("write {}", acked_path));
            }
        }
        std::optional<wzt::ackwrite::ack_list> acks;
        if (a_.verify_acked) {
            std::istringstream in(acked);
            acks = wzt::ackwrite::parse_acks(in);
            if (acks->malformed != 0 || (!acks->run_id && !acks->acks.empty())) {
                die(fmt::format("tag {}: {} malformed ack lines{} before cut {}", a_.tag, acks->malformed,
                                acks->run_id ? "" : ", no \"open\" line", c));
            }
        }
        std::vector<std::pair<std::string, std::vector<bool>>> variants;
        variants.emplace_back(optional.empty() ? "all" : "none", std::vector<bool>(optional.size(), false));
        if (!optional.empty()) {
            variants.emplace_back("all", std::vector<bool>(optional.size(), true));
            for (std::uint64_t s = 0; s < a_.subsets; ++s) {
                std::vector<bool> keep(optional.size());
                for (std::size_t j = 0; j < keep.size(); ++j) {
                    keep[j] = (rng() & 1) != 0;
                }
                variants.emplace_back(fmt::format("random{}", s + 1), std::move(keep));
            }
        }
        for (const auto& [vname, keep] : variants) {
            std::vector<std::size_t> selected = fua_pending;
            for (std::size_t j = 0; j < optional.size(); ++j) {
                if (keep[j]) {
                    selected.push_back(optional[j]);
                }
            }
            std::sort(selected.begin(), selected.end());  // log order
            std::vector<undo_t> undo;
            for (std::size_t i : selected) {
                apply(i, &undo);
            }
            images++;
            std::vector<std::string> why;
            if (!a_.ranges.empty()) {
                // The window's entries that reached the image: its part of the durable prefix
                // and the pending ones this subset kept.
                std::vector<std::size_t> reached;
                for (std::size_t i = lo; i < durable_end; ++i) {
                    reached.push_back(i);
                }
                for (std::size_t i : selected) {
                    if (i >= lo) {
                        reached.push_back(i);
                    }
                }
                check_ranges(reached, why);
            }
            if (!a_.check_cmd.empty()) {
                if (::fsync(work_fd_) != 0) {
                    die(fmt::format("fsync {}: {}", a_.work, std::strerror(errno)));
                }
                ::setenv("WZ_REPLAY_IMAGE", a_.work.c_str(), 1);
                ::setenv("WZ_REPLAY_ACKED", acked_path.c_str(), 1);
                ::setenv("WZ_REPLAY_CUT", std::to_string(c).c_str(), 1);
                ::setenv("WZ_REPLAY_SUBSET", vname.c_str(), 1);
                std::fflush(stdout);
                const int st = std::system(a_.check_cmd.c_str());
                if (st != 0) {
                    why.push_back(WIFEXITED(st) ? fmt::format("--check exit status {}", WEXITSTATUS(st))
                                                : fmt::format("--check ended by signal {}", WTERMSIG(st)));
                }
            }
            if (acks) {
                verify_acked(*acks, why);
            }
            for (const auto& w : why) {
                violation(c, vname, w);
            }
            for (auto it = undo.rbegin(); it != undo.rend(); ++it) {
                pwrite_all(work_fd_, it->old.data(), it->old.size(), it->offset, a_.work);
            }
            if (caught()) {
                break;
            }
        }
    }
    ::unlink(acked_path.c_str());
    if (violations_ > max_violation_lines) {
        std::printf("... and %llu more violations\n", static_cast<unsigned long long>(violations_ - max_violation_lines));
    }
    std::printf("replay %s: window entries %zu-%zu, cut points %zu of %zu (after flush %llu, before flush %llu, "
                "after fua %llu, random %llu, end %llu), images checked %llu, most writes pending at a cut %llu, "
                "seed %llu\n",
                name.c_str(), lo, hi, cuts_checked, all_cuts, static_cast<unsigned long long>(per_kind[after_flush]),
                static_cast<unsigned long long>(per_kind[before_flush]),
                static_cast<unsigned long long>(per_kind[after_fua]),
                static_cast<unsigned long long>(per_kind[random_point]),
                static_cast<unsigned long long>(per_kind[end_point]), static_cast<unsigned long long>(images),
                static_cast<unsigned long long>(dropped_max), static_cast<unsigned long long>(seed));
    if (!a_.ranges.empty()) {
        std::printf("replay %s: sectors outside the ranges rewritten with their old data (most at a cut) %llu\n",
                    name.c_str(), static_cast<unsigned long long>(rewritten_outside_));
    }
    if (caught() && cuts_checked < chosen.size()) {
        std::printf("replay %s: stopped at the first violation (--until-caught), %zu of %zu cut points checked\n",
                    name.c_str(), cuts_checked, chosen.size());
    }
    std::printf("replay %s: violations %llu\n", name.c_str(), static_cast<unsigned long long>(violations_));
    return violations_ == 0 ? 0 : exit_violation;
}

}  // namespace

int main(int argc, char** argv) {
    const std::vector<std::string> args(argv + 1, argv + argc);
    if (args.empty()) {
        usage("no command");
    }
    const std::string& cmd = args[0];
    auto value = [&](std::size_t& i) -> const std::string& {
        if (i + 1 >= args.size()) {
            usage(args[i] + " needs a value");
        }
        return args[++i];
    };
    check_args a;
    std::string dev;
    std::vector<std::string> pos;
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string& o = args[i];
        if (o == "--dev") {
            dev = value(i);
        } else if (o == "--at" || o == "--marker-at") {
            a.marker_at = parse_u64(value(i), "--marker-at");
        } else if (o == "--length" || o == "--marker-length") {
            a.marker_length = parse_u64(value(i), "--marker-length");
        } else if (o == "--tag") {
            a.tag = value(i);
        } else if (o == "--log") {
            a.log = value(i);
        } else if (o == "--base") {
            a.base = value(i);
        } else if (o == "--work") {
            a.work = value(i);
        } else if (o == "--lba") {
            a.lba = parse_u64(value(i), "--lba");
        } else if (o == "--fua-from") {
            a.fua_from = value(i);
        } else if (o == "--cuts") {
            a.cuts = parse_u64(value(i), "--cuts");
        } else if (o == "--max-cuts") {
            a.max_cuts = parse_u64(value(i), "--max-cuts");
        } else if (o == "--subsets") {
            a.subsets = parse_u64(value(i), "--subsets");
        } else if (o == "--seed") {
            a.seed = parse_u64(value(i), "--seed");
            a.seed_given = true;
        } else if (o == "--range") {
            a.ranges.push_back(parse_range(value(i)));
        } else if (o == "--check") {
            a.check_cmd = value(i);
        } else if (o == "--verify-acked") {
            a.verify_acked = true;
        } else if (o == "--until-caught") {
            a.until_caught = true;
        } else if (o == "--verify-map") {
            a.verify_map = value(i);
        } else if (o.size() > 1 && o[0] == '-') {
            usage("unknown option " + o);
        } else {
            pos.push_back(o);
        }
    }
    if (cmd == "mark") {
        if (dev.empty() || a.marker_length == 0 || !pos.empty()) {
            usage("mark takes --dev DEV --at OFF --length LEN [--tag TAG]");
        }
        return run_mark(dev, a.marker_at, a.marker_length, a.tag);
    }
    if (cmd == "fill") {
        if (pos.size() != 3) {
            usage("fill takes FILE OFF LEN");
        }
        return run_fill(pos[0], parse_u64(pos[1], "OFF"), parse_u64(pos[2], "LEN"));
    }
    if (cmd == "dump") {
        if (pos.size() != 1) {
            usage("dump takes LOG");
        }
        return run_dump(pos[0]);
    }
    if (cmd == "check") {
        if (a.log.empty() || a.base.empty() || a.work.empty() || a.marker_length == 0 || !pos.empty()) {
            usage("check takes --log LOG --base IMG --work FILE --marker-at OFF --marker-length LEN");
        }
        if (a.lba < 512 || (a.lba & (a.lba - 1)) != 0) {
            usage("--lba must be a power of two of at least 512");
        }
        if (a.ranges.empty() && a.check_cmd.empty() && !a.verify_acked) {
            usage("check needs --range, --check or --verify-acked: nothing would be checked");
        }
        if (!a.verify_map.empty() && !a.verify_acked) {
            usage("--verify-map goes with --verify-acked");
        }
        return replayer(a).run();
    }
    usage("unknown command '" + cmd + "'");
}

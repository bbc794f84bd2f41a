// SPDX-License-Identifier: MIT
// wz_faultloop: many faulted runs of wz::preallocate and the durable writer in one process,
// for the fault tests of fstests/tests/nvme (nvme/021-025). The device below PATH fails some
// writes, write zeroes or flushes (QEMU blkdebug, scsi_debug error injection), or goes away.
//
//   wz_faultloop [options] PATH
//     --alloc OFF:LEN:METHODS   wz::preallocate of the range with each method (write, nvme,
//                               kernel, zeroout; comma separated), no fallback, per iteration
//     --writer OFF:LEN:MODES    the durable writer over the range in each mode (auto, flush,
//                               dsync, fua, through), synchronous pwrite() then asynchronous
//                               submit()/complete(), one 4 KiB write per block, per iteration
//     --fault OFF               the byte the fault covers: an error's range must contain it
//     --iterations N            (default 20)
//     --bound SECS              every call must return within SECS (default 30)
//     --no-readback             the device is gone: do not read acknowledged blocks back
//     --go                      print "@@WZFAULT:GO@@" once the first call is about to start,
//                               and "@@WZFAULT:ROUND N@@" as round N starts
//     --disappear               the device goes away during the run (nvmet namespace disabled,
//                               QEMU device_del): outcomes differ between rounds, so only the
//                               verdicts are printed (every failure names an operation and the
//                               path; rounds after the device went fail)
//     --acks FILE               write "ack OFFSET ITERATION TAG" for every block whose last
//                               write was acknowledged
//   wz_faultloop --verify-acks FILE PATH
//                               read those blocks of PATH (a device back again, or the VM's
//                               disk image on the host) and say whether they hold what was
//                               acknowledged
//
// stdout (stable lines, for the test's golden output): per call of the first iteration
//   "alloc METHOD: error: OPERATION; range covers the fault: yes|no" or "alloc METHOD: ok"
//   "writer MODE sync|async: error: OPERATION; ..." or "writer MODE sync|async: ok"
// where OPERATION is the message's text before the path; later iterations must give the same
// outcome ("outcomes: the same in every iteration"); then whether every call returned in the
// bound, whether every acknowledged block reads back (O_DIRECT) with what was acknowledged,
// and whether descriptors (/proc/self/fd, io_uring rings among them) or threads
// (/proc/self/task, not counting the kernel's io-wq workers iou-wrk-PID) grew between the end
// of the first iteration and the end of the last.
// Full messages, timings and counts go to stderr. Exit status 0 when the program ran to the
// end (the verdicts are in the output), 1 on a usage or setup error.

#include <wzero/wzero.hpp>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

constexpr std::size_t block_bytes = 4096;
constexpr char magic[8] = {'W', 'Z', 'F', 'A', 'U', 'L', 'T', '1'};

[[noreturn]] void usage_error(const std::string& why) {
    std::fprintf(stderr, "wz_faultloop: %s (see the comment at the top of wz_faultloop.cpp)\n", why.c_str());
    std::exit(1);
}

std::uint64_t parse_u64(const std::string& s, const char* what) {
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(s.c_str(), &end, 0);
    std::uint64_t mult = 1;
    if (end != nullptr && *end != '\0') {
        switch (*end) {
        case 'K': mult = 1ULL << 10; break;
        case 'M': mult = 1ULL << 20; break;
        case 'G': mult = 1ULL << 30; break;
        default: usage_error(std::string("bad ") + what + " '" + s + "'");
        }
        if (end[1] != '\0' && std::strcmp(end + 1, "iB") != 0) {
            usage_error(std::string("bad ") + what + " '" + s + "'");
        }
    }
    if (s.empty() || errno != 0) {
        usage_error(std::string("bad ") + what + " '" + s + "'");
    }
    return v * mult;
}

std::vector<std::string> split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::stringstream ss(s);
    std::string item;
    while (std::getline(ss, item, sep)) {
        if (!item.empty()) {
            out.push_back(item);
        }
    }
    return out;
}

struct range_spec {
    std::uint64_t offset = 0, length = 0;
    std::vector<std::string> names;
};

range_spec parse_range(const std::string& s, const char* what) {
    const auto parts = split(s, ':');
    if (parts.size() != 3) {
        usage_error(std::string(what) + " wants OFF:LEN:LIST, not '" + s + "'");
    }
    return {parse_u64(parts[0], what), parse_u64(parts[1], what), split(parts[2], ',')};
}

struct counts {
    int fds = 0, rings = 0, threads = 0, io_workers = 0;
    std::vector<std::string> fd_names;
    std::string thread_names;
};

counts count_self();

// count_self() once the threads are back to BASE's number, or after 1 s: a thread the library
// joined may still be listed in /proc/self/task for a moment (the kernel finishes its exit
// after pthread_join returned). A leaked thread is still there a second later.
counts settled_count(const counts& base) {
    counts c = count_self();
    for (int i = 0; i < 100 && c.threads > base.threads; ++i) {
        ::usleep(10000);
        c = count_self();
    }
    return c;
}

counts count_self() {
    counts c;
    if (DIR* d = ::opendir("/proc/self/fd")) {
        const int own = ::dirfd(d);
        while (const dirent* e = ::readdir(d)) {
            if (e->d_name[0] == '.' || std::atoi(e->d_name) == own) {
                continue;
            }
            char target[256] = {};
            const std::string link = std::string("/proc/self/fd/") + e->d_name;
            const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
            const std::string name = n > 0 ? std::string(target, static_cast<std::size_t>(n)) : "?";
            ++c.fds;
            if (name == "anon_inode:[io_uring]") {
                ++c.rings;
            }
            c.fd_names.push_back(std::string(e->d_name) + " -> " + name);
        }
        ::closedir(d);
    }
    if (DIR* d = ::opendir("/proc/self/task")) {
        while (const dirent* e = ::readdir(d)) {
            if (e->d_name[0] != '.') {
                char comm[64] = {};
                if (std::FILE* f = std::fopen((std::string("/proc/self/task/") + e->d_name + "/comm").c_str(), "r")) {
                    if (std::fgets(comm, sizeof comm, f) == nullptr) {
                        comm[0] = '\0';
                    }
                    std::fclose(f);
                }
                // io_uring's io-wq workers (iou-wrk-PID) are the kernel's, not the program's:
                // they outlive a closed ring for a while and go on their own; a ring left open
                // shows as its descriptor.
                if (std::strncmp(comm, "iou-wrk-", 8) == 0) {
                    ++c.io_workers;
                } else {
                    ++c.threads;
                }
                c.thread_names += std::string(c.thread_names.empty() ? "" : ", ") + e->d_name + " " +
                                  std::string(comm, ::strcspn(comm, "\n"));
            }
        }
        ::closedir(d);
    }
    return c;
}

// "write (io_uring) /dev/nvme0n1 [offset 1, length 2]: ..." -> "write (io_uring)": the text
// before the device's name (the block device, or its NVMe char device /dev/ngXnY).
std::string operation_of(const std::string& msg) {
    const auto at = msg.find(" /dev/");
    if (at == std::string::npos || at == 0) {
        return "(the message names no device)";
    }
    return msg.substr(0, at);
}

// /dev/nvme0n1 -> /dev/ng0n1 (the char device NVMe passthrough messages name); else empty.
std::string char_device_of(const std::string& path) {
    static const std::regex re(R"(^/dev/nvme([0-9]+)n([0-9]+)$)");
    std::smatch m;
    if (std::regex_match(path, m, re)) {
        return "/dev/ng" + m[1].str() + "n" + m[2].str();
    }
    return {};
}

// The byte ranges a message names: "[offset X, length Y]", or NVMe's "SLBA X, NLB Y" (NLB as
// a count of blocks of `lba` bytes).
std::vector<std::pair<std::uint64_t, std::uint64_t>> ranges_of(const std::string& msg, std::uint64_t lba) {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
    static const std::regex bytes(R"(\[offset ([0-9]+), length ([0-9]+)\])");
    static const std::regex lbas(R"(slba ([0-9]+), nlb ([0-9]+))", std::regex::icase);
    for (auto it = std::sregex_iterator(msg.begin(), msg.end(), bytes); it != std::sregex_iterator(); ++it) {
        out.emplace_back(std::stoull((*it)[1].str()), std::stoull((*it)[2].str()));
    }
    for (auto it = std::sregex_iterator(msg.begin(), msg.end(), lbas); it != std::sregex_iterator(); ++it) {
        out.emplace_back(std::stoull((*it)[1].str()) * lba, std::stoull((*it)[2].str()) * lba);
    }
    return out;
}

// Does a range of the message lie inside [lo, hi) and (when given) contain `fault`?
bool range_ok(const std::string& msg, std::uint64_t lba, std::optional<std::uint64_t> fault, std::uint64_t lo,
              std::uint64_t hi) {
    for (const auto& [off, len] : ranges_of(msg, lba)) {
        if (len > 0 && off >= lo && off + len <= hi && (!fault || (off <= *fault && *fault < off + len))) {
            return true;
        }
    }
    return false;
}

// The logical block size of a block device PATH (sysfs); 512 for anything else.
std::uint64_t lba_bytes_of(const std::string& path) {
    const auto slash = path.rfind('/');
    const std::string attr = "/sys/class/block/" + path.substr(slash + 1) + "/queue/logical_block_size";
    unsigned long long v = 512;
    if (std::FILE* f = std::fopen(attr.c_str(), "r")) {
        if (std::fscanf(f, "%llu", &v) != 1) {
            v = 512;
        }
        std::fclose(f);
    }
    return v;
}

struct options {
    std::string path;
    std::optional<range_spec> alloc, writer;
    std::optional<std::uint64_t> fault;
    unsigned iterations = 20;
    double bound = 30;
    bool readback = true;
    bool go = false;
    bool disappear = false;
    std::string acks_file;    // --acks: write the acknowledged blocks here
    std::string verify_file;  // --verify-acks: only check PATH against this file
};

struct state {
    explicit state(const options& o) : opt(o), lba(lba_bytes_of(o.path)) {}
    const options& opt;
    std::uint64_t lba;
    std::map<std::string, std::string> first_outcome;  // call -> outcome line of iteration 1
    std::vector<std::string> order;
    unsigned changed = 0;
    double max_seconds = 0;
    std::string slowest;
    // block offset -> (iteration, tag) of its last acknowledged write; erased when a later
    // write of the block failed (its content is then either).
    std::map<std::uint64_t, std::pair<std::uint64_t, std::uint64_t>> acked;
    std::uint64_t acks = 0;
    // --disappear: failures whose message does not name PATH; failed calls in this round.
    std::uint64_t unnamed = 0;
    std::size_t round_failures = 0;
    bool last_round_failed = false;
};

void outcome(state& st, unsigned iter, const std::string& call, const std::optional<wz::error_info>& err,
             std::uint64_t lo, std::uint64_t hi, const std::string& extra = {}) {
    std::string line = call + ": ";
    if (err) {
        ++st.round_failures;
        const std::string ng = char_device_of(st.opt.path);
        const bool names = err->message.find(st.opt.path) != std::string::npos ||
                           (!ng.empty() && err->message.find(ng) != std::string::npos);
        if (!names || operation_of(err->message).front() == '(') {
            ++st.unnamed;
        }
        line += "error: " + operation_of(err->message);
        line += std::string(st.opt.fault ? "; range covers the fault: " : "; range inside the request: ") +
                (range_ok(err->message, st.lba, st.opt.fault, lo, hi) ? "yes" : "no");
        std::fprintf(stderr, "iteration %u %s: %s%s\n", iter, call.c_str(), err->message.c_str(), extra.c_str());
    } else {
        line += "ok";
        std::fprintf(stderr, "iteration %u %s: ok%s\n", iter, call.c_str(), extra.c_str());
    }
    auto [it, fresh] = st.first_outcome.emplace(call, line);
    if (fresh) {
        st.order.push_back(call);
    } else if (it->second != line) {
        ++st.changed;
        std::fprintf(stderr, "iteration %u %s: outcome changed from '%s' to '%s'\n", iter, call.c_str(),
                     it->second.c_str(), line.c_str());
    }
}

template <typename F>
auto timed(state& st, const std::string& call, F&& f) {
    const auto t0 = std::chrono::steady_clock::now();
    auto r = f();
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (s > st.max_seconds) {
        st.max_seconds = s;
        st.slowest = call;
    }
    return r;
}

std::optional<wz::method_request> method_of(const std::string& m) {
    if (m == "write") return wz::method_request::write;
    if (m == "nvme") return wz::method_request::nvme;
    if (m == "kernel") return wz::method_request::kernel;
    if (m == "zeroout") return wz::method_request::zeroout;
    return std::nullopt;
}

std::optional<wz::durability_mode> mode_of(const std::string& m) {
    if (m == "auto") return wz::durability_mode::automatic;
    if (m == "flush") return wz::durability_mode::flush;
    if (m == "dsync") return wz::durability_mode::dsync;
    if (m == "fua") return wz::durability_mode::fua;
    if (m == "through") return wz::durability_mode::through;
    return std::nullopt;
}

void fill(unsigned char* buf, std::uint64_t iter, std::uint64_t tag, std::uint64_t off) {
    for (std::size_t i = 0; i < block_bytes; i += 32) {
        std::memcpy(buf + i, magic, 8);
        std::memcpy(buf + i + 8, &iter, 8);
        std::memcpy(buf + i + 16, &tag, 8);
        std::memcpy(buf + i + 24, &off, 8);
    }
}

struct aligned_buf {
    unsigned char* p = nullptr;
    explicit aligned_buf(std::size_t n) {
        void* v = nullptr;
        if (::posix_memalign(&v, block_bytes, n) != 0) {
            usage_error("out of memory");
        }
        p = static_cast<unsigned char*>(v);
    }
    ~aligned_buf() { std::free(p); }
    aligned_buf(const aligned_buf&) = delete;
    aligned_buf& operator=(const aligned_buf&) = delete;
};

void run_alloc(state& st, unsigned iter) {
    const range_spec& r = *st.opt.alloc;
    // Zeroing the range overwrites (or, failing, may have overwritten) the writer's blocks in
    // it: they no longer hold what the writer acknowledged.
    st.acked.erase(st.acked.lower_bound(r.offset), st.acked.lower_bound(r.offset + r.length));
    for (const auto& m : r.names) {
        wz::preallocate_options po;
        po.method = *method_of(m);
        po.fallback = false;
        po.force = true;
        po.verify = wz::verify_mode::none;
        wz::preallocate_report partial;
        const std::string call = "alloc " + m;
        auto res = timed(st, call, [&] { return wz::preallocate(st.opt.path, r.offset, r.length, po, &partial); });
        std::optional<wz::error_info> err;
        if (!res) {
            err = res.error();
        }
        outcome(st, iter, call, err, r.offset, r.offset + r.length,
                " (bytes_done " + std::to_string(res ? res->bytes_done : partial.bytes_done) + ")");
    }
}

void run_writer(state& st, unsigned iter) {
    const range_spec& r = *st.opt.writer;
    const std::uint64_t blocks = r.length / block_bytes;
    aligned_buf buf(static_cast<std::size_t>(blocks) * block_bytes);
    std::uint64_t tag = 0;
    for (const auto& m : r.names) {
        for (const bool async : {false, true}) {
            ++tag;
            const std::string call = "writer " + m + (async ? " async" : " sync");
            wz::writer_options wo;
            wo.mode = *mode_of(m);
            wo.force = true;
            wo.queue_depth = 8;
            std::optional<wz::error_info> first;
            std::uint64_t acked = 0, failed = 0;
            auto note_fail = [&](std::uint64_t off, const wz::error_info& e) {
                ++failed;
                st.acked.erase(off);
                if (!first) {
                    first = e;
                }
            };
            auto note_ack = [&](std::uint64_t off) {
                ++acked;
                ++st.acks;
                st.acked[off] = {iter, tag};
            };
            timed(st, call, [&] {
                auto w = wz::writer::open(st.opt.path, r.offset, r.length, wo);
                if (!w) {
                    first = w.error();
                    return 0;
                }
                for (std::uint64_t b = 0; b < blocks; ++b) {
                    fill(buf.p + b * block_bytes, iter, tag, r.offset + b * block_bytes);
                }
                if (!async) {
                    for (std::uint64_t b = 0; b < blocks && !first; ++b) {
                        const std::uint64_t off = r.offset + b * block_bytes;
                        auto n = w->pwrite(buf.p + b * block_bytes, block_bytes, off);
                        if (n) {
                            note_ack(off);
                        } else {
                            note_fail(off, n.error());
                        }
                    }
                } else {
                    std::vector<wz::writer_completion> done;
                    std::set<std::uint64_t> in_flight;
                    std::uint64_t next = 0;
                    bool broken = false;
                    // Like the synchronous loop (and a database), nothing new is submitted
                    // after the first failure: the writes in flight are collected, the rest
                    // of the blocks keep what was acknowledged before.
                    while (!broken && ((next < blocks && !first) || w->in_flight() > 0)) {
                        while (next < blocks && !first) {
                            const std::uint64_t off = r.offset + next * block_bytes;
                            auto s = w->submit(buf.p + next * block_bytes, block_bytes, off, off);
                            if (!s.ok()) {
                                if (s.error().code == std::errc::device_or_resource_busy) {
                                    break;
                                }
                                note_fail(off, s.error());
                            } else {
                                in_flight.insert(off);
                            }
                            ++next;
                        }
                        if (w->in_flight() == 0) {
                            continue;
                        }
                        done.clear();
                        auto c = w->complete(done, 1);
                        if (!c) {
                            // The writer could not say what became of the writes in flight:
                            // none of them is acknowledged, and their blocks hold either.
                            note_fail(r.offset, c.error());
                            for (const std::uint64_t off : in_flight) {
                                st.acked.erase(off);
                            }
                            broken = true;
                            break;
                        }
                        for (const auto& d : done) {
                            in_flight.erase(d.user_data);
                            if (d.error) {
                                note_fail(d.user_data, *d.error);
                            } else {
                                note_ack(d.user_data);
                            }
                        }
                    }
                }
                auto cs = w->close();
                if (!cs.ok() && !first) {
                    first = cs.error();
                }
                return 0;
            });
            outcome(st, iter, call, first, r.offset, r.offset + r.length,
                    " (acked " + std::to_string(acked) + ", failed " + std::to_string(failed) + ")");
        }
    }
}

// Reads every acknowledged block back with O_DIRECT; prints the verdict.
void readback(state& st) {
    int fd = ::open(st.opt.path.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC);
    if (fd < 0 && errno == EINVAL) {
        // A file system without O_DIRECT (an image on tmpfs): the page cache is coherent.
        fd = ::open(st.opt.path.c_str(), O_RDONLY | O_CLOEXEC);
    }
    if (fd < 0) {
        std::printf("acknowledged blocks read back: cannot open %s: %s\n", st.opt.path.c_str(), std::strerror(errno));
        return;
    }
    aligned_buf buf(block_bytes), want(block_bytes);
    std::uint64_t bad = 0;
    for (const auto& [off, who] : st.acked) {
        const ssize_t n = ::pread(fd, buf.p, block_bytes, static_cast<off_t>(off));
        fill(want.p, who.first, who.second, off);
        if (n != static_cast<ssize_t>(block_bytes) || std::memcmp(buf.p, want.p, block_bytes) != 0) {
            ++bad;
            std::fprintf(stderr, "block at %llu: not what iteration %llu tag %llu acknowledged\n",
                         static_cast<unsigned long long>(off), static_cast<unsigned long long>(who.first),
                         static_cast<unsigned long long>(who.second));
        }
    }
    ::close(fd);
    std::fprintf(stderr, "acknowledged writes %llu; blocks whose last write was acknowledged %zu, bad %llu\n",
                 static_cast<unsigned long long>(st.acks), st.acked.size(), static_cast<unsigned long long>(bad));
    std::printf("acknowledged blocks read back: %s\n",
                bad != 0 ? "some differ" : st.acked.empty() ? "none acknowledged" : "all as acknowledged");
}

}  // namespace

int main(int argc, char** argv) {
    options opt;
    std::vector<std::string> args(argv + 1, argv + argc);
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= args.size()) {
                usage_error(a + " needs a value");
            }
            return args[++i];
        };
        if (a == "--alloc") {
            opt.alloc = parse_range(value(), "--alloc");
            for (const auto& m : opt.alloc->names) {
                if (!method_of(m)) usage_error("unknown method '" + m + "'");
            }
        } else if (a == "--writer") {
            opt.writer = parse_range(value(), "--writer");
            for (const auto& m : opt.writer->names) {
                if (!mode_of(m)) usage_error("unknown writer mode '" + m + "'");
            }
            if (opt.writer->length % block_bytes != 0 || opt.writer->length == 0) {
                usage_error("--writer length must be a non-zero multiple of 4096");
            }
        } else if (a == "--fault") {
            opt.fault = parse_u64(value(), "--fault");
        } else if (a == "--iterations") {
            opt.iterations = static_cast<unsigned>(parse_u64(value(), "--iterations"));
        } else if (a == "--bound") {
            opt.bound = std::stod(value());
        } else if (a == "--no-readback") {
            opt.readback = false;
        } else if (a == "--go") {
            opt.go = true;
        } else if (a == "--disappear") {
            opt.disappear = true;
        } else if (a == "--acks") {
            opt.acks_file = value();
        } else if (a == "--verify-acks") {
            opt.verify_file = value();
        } else if (!a.empty() && a[0] == '-') {
            usage_error("unknown option " + a);
        } else if (opt.path.empty()) {
            opt.path = a;
        } else {
            usage_error("one PATH only");
        }
    }
    if (!opt.verify_file.empty()) {
        if (opt.path.empty()) {
            usage_error("--verify-acks wants PATH");
        }
        state st(opt);
        std::FILE* f = std::fopen(opt.verify_file.c_str(), "r");
        if (f == nullptr) {
            usage_error("cannot open " + opt.verify_file);
        }
        unsigned long long off = 0, it = 0, tag = 0;
        while (std::fscanf(f, "ack %llu %llu %llu\n", &off, &it, &tag) == 3) {
            st.acked[off] = {it, tag};
        }
        std::fclose(f);
        readback(st);
        return 0;
    }
    if (opt.path.empty() || opt.iterations == 0 || (!opt.alloc && !opt.writer)) {
        usage_error("want PATH, --alloc and/or --writer, and at least one iteration");
    }
    state st(opt);
    const counts at_start = count_self();
    counts after_first;
    if (opt.go) {
        std::printf("@@WZFAULT:GO@@\n");
        std::fflush(stdout);
    }
    for (unsigned iter = 1; iter <= opt.iterations; ++iter) {
        if (opt.go) {
            std::printf("@@WZFAULT:ROUND %u@@\n", iter);
            std::fflush(stdout);
        }
        if (opt.alloc) {
            run_alloc(st, iter);
        }
        if (opt.writer) {
            run_writer(st, iter);
        }
        if (iter == 1) {
            after_first = settled_count(at_start);
            for (const auto& call : st.order) {
                if (!opt.disappear) {
                    std::printf("%s\n", st.first_outcome[call].c_str());
                }
            }
            std::fflush(stdout);
        }
        if (opt.disappear) {
            st.last_round_failed = st.round_failures == st.order.size();
            st.round_failures = 0;
        }
    }
    const counts at_end = settled_count(after_first);
    std::fprintf(stderr, "iterations %u; slowest call %.3f s (%s)\n", opt.iterations, st.max_seconds, st.slowest.c_str());
    std::fprintf(stderr, "fds %d/%d/%d, io_uring rings %d/%d/%d, threads %d/%d/%d (start/after 1/end)\n",
                 at_start.fds, after_first.fds, at_end.fds, at_start.rings, after_first.rings, at_end.rings,
                 at_start.threads, after_first.threads, at_end.threads);
    if (opt.disappear) {
        std::printf("every failure names an operation and %s: %s\n", opt.path.c_str(),
                    st.unnamed == 0 ? "yes" : "no");
        std::printf("the last round: %s\n", st.last_round_failed ? "every call failed" : "some call succeeded");
    } else {
        std::printf("outcomes: %s\n", st.changed == 0 ? "the same in every iteration" : "changed between iterations");
    }
    std::printf("every call returned within %g s: %s\n", opt.bound, st.max_seconds <= opt.bound ? "yes" : "no");
    if (!opt.acks_file.empty()) {
        std::FILE* f = std::fopen(opt.acks_file.c_str(), "w");
        if (f == nullptr) {
            usage_error("cannot write " + opt.acks_file);
        }
        for (const auto& [off, who] : st.acked) {
            std::fprintf(f, "ack %llu %llu %llu\n", static_cast<unsigned long long>(off),
                         static_cast<unsigned long long>(who.first), static_cast<unsigned long long>(who.second));
        }
        std::fclose(f);
        std::fprintf(stderr, "blocks whose last write was acknowledged: %zu (in %s)\n", st.acked.size(),
                     opt.acks_file.c_str());
    }
    if (opt.readback && opt.writer) {
        readback(st);
    }
    const bool grew = at_end.fds > after_first.fds || at_end.rings > after_first.rings ||
                      at_end.threads > after_first.threads || after_first.fds > at_start.fds ||
                      after_first.rings > at_start.rings;
    if (grew) {
        for (const auto& n : at_end.fd_names) {
            std::fprintf(stderr, "fd at the end: %s\n", n.c_str());
        }
    }
    std::fprintf(stderr, "threads at the start: %s; after round 1: %s; at the end: %s\n", at_start.thread_names.c_str(),
                 after_first.thread_names.c_str(), at_end.thread_names.c_str());
    std::printf("descriptors, io_uring rings, threads after %u iterations: %s\n", opt.iterations,
                grew ? "grew" : "no growth");
    return 0;
}

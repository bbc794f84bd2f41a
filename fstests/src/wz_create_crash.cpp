// SPDX-License-Identifier: MIT
// wz_create_crash: the crash-safety tool of wz::create_zeroed, for nvme/015 (the
// process SIGKILLed at random points) and nvme/016 (the VM killed: power loss).
//
//   wz_create_crash create DIR PREFIX COUNT SIZE
//   wz_create_crash create-unsafe DIR PREFIX COUNT SIZE
//   wz_create_crash check DIR SIZE [CREATED-LOG]
//   wz_create_crash sigkill DIR SIZE RUNS MAX-DELAY-MS [--unsafe] [--until-caught] [--seed N]
//
// create: makes DIR/PREFIX0000, DIR/PREFIX0001, ... one after another with wz::create_zeroed
// (mode 0644, default options: durable on return) and writes "created DIR/NAME" to stdout
// with write(2) only after the call returned, so a line that left the process names a file
// the library handed back as complete and durable. "done" after the last.
// create-unsafe: the broken control, what the contract forbids: open(O_CREAT|O_EXCL) under
// the final name, buffered writes of zeroes, no fsync at all. The checker must catch it.
//
// check: judges every entry of DIR as a database scanning its directory would see it. A name
// that does not start with '.' must be a regular file of exactly SIZE bytes whose FIEMAP
// extents (read without FIEMAP_FLAG_SYNC, so delayed allocation shows as such) cover
// [0, SIZE) as written extents (no hole, unwritten, delalloc or unknown extent) and which
// reads back as zeroes with O_DIRECT (the device answers, not the page cache). Hidden
// ".NAME.wz-tmp.XXXXXX" temporaries are counted apart (allowed only where O_TMPFILE is not
// used), other hidden names too. With CREATED-LOG, every "created DIR/NAME" line in it whose
// directory is DIR must exist and be complete. The map is read before the data: an O_DIRECT
// read writes dirty pages back first and would turn delalloc into written extents.
// stdout: one line "check DIR: entries E complete C bad B (size S, extents X, data D, type T)
// tmp H hidden_other O created N missing M"; one "bad NAME: why" line per bad entry on stderr.
// Exit status 0 when bad = missing = 0, 1 otherwise.
//
// sigkill: RUNS times: fork a child running create (or create-unsafe with --unsafe) of up to
// 10000 files of SIZE bytes in DIR with its stdout in DIR.log, sleep a random delay in
// [0, MAX-DELAY-MS] ms (doubled after each run, up to 16 times, until some run has seen a
// file reported created), SIGKILL the child, reap it, run check on DIR with DIR.log, then
// empty DIR. stdout: "runs R killed K failed_runs F bad B missing M tmp H complete C
// created N" plus the seed ("seed S", random from the clock unless given); R counts the runs
// done. --until-caught (for a control, which must fail) stops after the first failed run.
// Exit status 0 when no run failed, 1 otherwise.

#include "tool_args.hpp"

#include <fcntl.h>
#include <dirent.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <wzero/wzero.hpp>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <set>
#include <string>
#include <vector>

namespace {

int usage() {
    std::fprintf(stderr,
                 "usage: wz_create_crash create|create-unsafe DIR PREFIX COUNT SIZE\n"
                 "       wz_create_crash check DIR SIZE [CREATED-LOG]\n"
                 "       wz_create_crash sigkill DIR SIZE RUNS MAX-DELAY-MS [--unsafe] [--until-caught] [--seed N]\n");
    return 1;
}

// write(2) of the whole line: no stdio buffer that a SIGKILL could throw away.
void emit(int fd, const std::string& line) {
    std::size_t done = 0;
    while (done < line.size()) {
        const ssize_t n = ::write(fd, line.data() + done, line.size() - done);
        if (n < 0 && errno == EINTR) {
            continue;
        }
        if (n <= 0) {
            return;  // wz: ignored-error (a closed pipe: the reader has gone, nothing to tell)
        }
        done += static_cast<std::size_t>(n);
    }
}

std::string seg_name(const std::string& prefix, std::uint64_t i) {
    char num[32];
    std::snprintf(num, sizeof num, "%04llu", static_cast<unsigned long long>(i));
    return prefix + num;
}

int create_unsafe(int dirfd, const std::string& name, std::uint64_t size) {
    const int fd = ::openat(dirfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) {
        return -errno;
    }
    static const std::vector<char> zeroes(65536, 0);
    std::uint64_t off = 0;
    while (off < size) {
        const std::size_t len = static_cast<std::size_t>(std::min<std::uint64_t>(zeroes.size(), size - off));
        const ssize_t n = ::pwrite(fd, zeroes.data(), len, static_cast<off_t>(off));
        if (n < 0) {
            const int err = errno;
            ::close(fd);
            return -err;
        }
        off += static_cast<std::uint64_t>(n);
    }
    ::close(fd);
    return 0;
}

int do_create(const std::string& dir, const std::string& prefix, std::uint64_t count, std::uint64_t size,
              bool unsafe) {
    const int dirfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        std::fprintf(stderr, "wz_create_crash: open %s: %s\n", dir.c_str(), std::strerror(errno));
        return 1;
    }
    for (std::uint64_t i = 0; i < count; ++i) {
        const std::string name = seg_name(prefix, i);
        if (unsafe) {
            const int rc = create_unsafe(dirfd, name, size);
            if (rc < 0) {
                std::fprintf(stderr, "wz_create_crash: create-unsafe %s/%s: %s\n", dir.c_str(), name.c_str(),
                             std::strerror(-rc));
                return 1;
            }
        } else {
            const wz::status st = wz::create_zeroed(dirfd, name, size, 0644);
            if (!st.ok()) {
                std::fprintf(stderr, "wz_create_crash: create_zeroed %s/%s: %s\n", dir.c_str(), name.c_str(),
                             st.error().message.c_str());
                return 1;
            }
        }
        emit(STDOUT_FILENO, "created " + dir + "/" + name + "\n");
    }
    emit(STDOUT_FILENO, "done\n");
    return 0;
}

struct check_counts {
    std::uint64_t entries = 0, complete = 0, bad = 0, bad_size = 0, bad_extents = 0, bad_data = 0,
                  bad_type = 0, tmp = 0, hidden_other = 0, created = 0, missing = 0;
};

// "" when [0, size) is all written extents; else why not.
std::string extent_problem(int fd, std::uint64_t size) {
    constexpr unsigned max_extents = 256;
    std::vector<char> buf(sizeof(struct fiemap) + max_extents * sizeof(struct fiemap_extent));
    std::uint64_t covered = 0;
    while (covered < size) {
        std::memset(buf.data(), 0, buf.size());
        auto* fm = reinterpret_cast<struct fiemap*>(buf.data());
        fm->fm_start = covered;
        fm->fm_length = size - covered;
        fm->fm_flags = 0;  // no FIEMAP_FLAG_SYNC: delayed allocation must show
        fm->fm_extent_count = max_extents;
        if (::ioctl(fd, FS_IOC_FIEMAP, fm) != 0) {
            return std::string("FIEMAP: ") + std::strerror(errno);
        }
        if (fm->fm_mapped_extents == 0) {
            return "hole at " + std::to_string(covered);
        }
        bool last = false;
        for (unsigned i = 0; i < fm->fm_mapped_extents; ++i) {
            const struct fiemap_extent& e = fm->fm_extents[i];
            if (e.fe_logical > covered) {
                return "hole at " + std::to_string(covered);
            }
            constexpr std::uint32_t not_written = FIEMAP_EXTENT_UNWRITTEN | FIEMAP_EXTENT_DELALLOC |
                                                  FIEMAP_EXTENT_UNKNOWN;
            if ((e.fe_flags & not_written) != 0) {
                char flags[32];
                std::snprintf(flags, sizeof flags, "0x%x", e.fe_flags);
                return "extent at " + std::to_string(e.fe_logical) + " not written (flags " + flags + ")";
            }
            covered = std::max<std::uint64_t>(covered, e.fe_logical + e.fe_length);
            last = (e.fe_flags & FIEMAP_EXTENT_LAST) != 0;
        }
        if (last && covered < size) {
            return "hole at " + std::to_string(covered);
        }
    }
    return "";
}

// "" when the file reads back as SIZE zero bytes with O_DIRECT; else why not.
std::string data_problem(int dirfd, const std::string& name, std::uint64_t size) {
    const int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECT | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        return std::string("open O_DIRECT: ") + std::strerror(errno);
    }
    constexpr std::size_t chunk = 1 << 20;
    void* mem = nullptr;
    if (::posix_memalign(&mem, 4096, chunk) != 0) {
        ::close(fd);
        return "out of memory";
    }
    std::string why;
    std::uint64_t off = 0;
    while (off < size && why.empty()) {
        const ssize_t n = ::pread(fd, mem, chunk, static_cast<off_t>(off));
        if (n < 0) {
            why = "read at " + std::to_string(off) + ": " + std::strerror(errno);
        } else if (n == 0) {
            why = "short read at " + std::to_string(off);
        } else {
            const auto* p = static_cast<const unsigned char*>(mem);
            for (ssize_t i = 0; i < n; ++i) {
                if (p[i] != 0) {
                    why = "non-zero byte at " + std::to_string(off + static_cast<std::uint64_t>(i));
                    break;
                }
            }
            off += static_cast<std::uint64_t>(n);
        }
    }
    std::free(mem);
    ::close(fd);
    return why;
}

// Judges one visible entry; "" when complete.
std::string entry_problem(int dirfd, const std::string& name, std::uint64_t size, check_counts& c) {
    struct stat st {};
    if (::fstatat(dirfd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
        ++c.bad_type;
        return std::string("stat: ") + std::strerror(errno);
    }
    if (!S_ISREG(st.st_mode)) {
        ++c.bad_type;
        return "not a regular file";
    }
    if (static_cast<std::uint64_t>(st.st_size) != size) {
        ++c.bad_size;
        return "size " + std::to_string(st.st_size) + ", want " + std::to_string(size);
    }
    const int fd = ::openat(dirfd, name.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) {
        ++c.bad_type;
        return std::string("open: ") + std::strerror(errno);
    }
    const std::string ext = extent_problem(fd, size);
    ::close(fd);
    if (!ext.empty()) {
        ++c.bad_extents;
        return ext;
    }
    const std::string data = data_problem(dirfd, name, size);
    if (!data.empty()) {
        ++c.bad_data;
        return data;
    }
    return "";
}

int do_check(const std::string& dir, std::uint64_t size, const std::string& created_log, check_counts& c,
             bool print) {
    const int dirfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0) {
        std::fprintf(stderr, "wz_create_crash: open %s: %s\n", dir.c_str(), std::strerror(errno));
        return 1;
    }
    DIR* d = ::fdopendir(::dup(dirfd));
    if (d == nullptr) {
        std::fprintf(stderr, "wz_create_crash: opendir %s: %s\n", dir.c_str(), std::strerror(errno));
        ::close(dirfd);
        return 1;
    }
    std::set<std::string> complete;
    const check_counts before = c;
    while (struct dirent* de = ::readdir(d)) {
        const std::string name = de->d_name;
        if (name == "." || name == "..") {
            continue;
        }
        ++c.entries;
        if (name[0] == '.') {
            if (name.find(".wz-tmp.") != std::string::npos) {
                ++c.tmp;
                std::fprintf(stderr, "tmp %s/%s\n", dir.c_str(), name.c_str());
            } else {
                ++c.hidden_other;
                std::fprintf(stderr, "hidden %s/%s\n", dir.c_str(), name.c_str());
            }
            continue;
        }
        const std::string why = entry_problem(dirfd, name, size, c);
        if (why.empty()) {
            ++c.complete;
            complete.insert(name);
        } else {
            ++c.bad;
            std::fprintf(stderr, "bad %s/%s: %s\n", dir.c_str(), name.c_str(), why.c_str());
        }
    }
    ::closedir(d);
    ::close(dirfd);
    if (!created_log.empty()) {
        FILE* f = std::fopen(created_log.c_str(), "re");
        if (f == nullptr) {
            std::fprintf(stderr, "wz_create_crash: open %s: %s\n", created_log.c_str(), std::strerror(errno));
            return 1;
        }
        char line[4096];
        const std::string want = "created " + dir + "/";
        while (std::fgets(line, sizeof line, f) != nullptr) {
            std::string l = line;
            while (!l.empty() && (l.back() == '\n' || l.back() == '\r')) {
                l.pop_back();
            }
            if (l.compare(0, want.size(), want) != 0 || l.size() == want.size()) {
                continue;
            }
            const std::string name = l.substr(want.size());
            ++c.created;
            if (complete.count(name) == 0) {
                ++c.missing;
                std::fprintf(stderr, "missing %s/%s: reported created, not complete now\n", dir.c_str(),
                             name.c_str());
            }
        }
        std::fclose(f);
    }
    if (print) {
        std::printf("check %s: entries %llu complete %llu bad %llu (size %llu, extents %llu, data %llu, type %llu)"
                    " tmp %llu hidden_other %llu created %llu missing %llu\n",
                    dir.c_str(), static_cast<unsigned long long>(c.entries),
                    static_cast<unsigned long long>(c.complete), static_cast<unsigned long long>(c.bad),
                    static_cast<unsigned long long>(c.bad_size), static_cast<unsigned long long>(c.bad_extents),
                    static_cast<unsigned long long>(c.bad_data), static_cast<unsigned long long>(c.bad_type),
                    static_cast<unsigned long long>(c.tmp), static_cast<unsigned long long>(c.hidden_other),
                    static_cast<unsigned long long>(c.created), static_cast<unsigned long long>(c.missing));
    }
    return (c.bad == before.bad && c.missing == before.missing) ? 0 : 1;
}

// Removes every entry of DIR (regular files only are expected there).
int empty_dir(const std::string& dir) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) {
        std::fprintf(stderr, "wz_create_crash: opendir %s: %s\n", dir.c_str(), std::strerror(errno));
        return 1;
    }
    int rc = 0;
    while (struct dirent* de = ::readdir(d)) {
        const std::string name = de->d_name;
        if (name == "." || name == "..") {
            continue;
        }
        if (::unlinkat(::dirfd(d), name.c_str(), 0) != 0) {
            std::fprintf(stderr, "wz_create_crash: unlink %s/%s: %s\n", dir.c_str(), name.c_str(),
                         std::strerror(errno));
            rc = 1;
        }
    }
    ::closedir(d);
    return rc;
}

int do_sigkill(const std::string& self, const std::string& dir, std::uint64_t size, std::uint64_t runs,
               std::uint64_t max_delay_ms, bool unsafe, bool until_caught, std::uint64_t seed) {
    std::mt19937_64 rng(seed);
    std::printf("seed %llu\n", static_cast<unsigned long long>(seed));
    std::fflush(stdout);
    const std::string log = dir + ".log";
    check_counts total;
    std::uint64_t killed = 0, failed_runs = 0, done = 0;
    // Doubled (up to 16) after every run while no run has seen a file created: a machine that
    // takes longer than MAX-DELAY-MS to start the child and create one file (TCG under load)
    // still gets kills between creates, not only before the first.
    std::uint64_t delay_scale = 1;
    for (std::uint64_t run = 0; run < runs && !(until_caught && failed_runs > 0); ++run) {
        ++done;
        const int logfd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (logfd < 0) {
            std::fprintf(stderr, "wz_create_crash: open %s: %s\n", log.c_str(), std::strerror(errno));
            return 1;
        }
        const std::uint64_t delay_us =
            std::uniform_int_distribution<std::uint64_t>(0, max_delay_ms * 1000 * delay_scale)(rng);
        const pid_t pid = ::fork();
        if (pid < 0) {
            std::fprintf(stderr, "wz_create_crash: fork: %s\n", std::strerror(errno));
            return 1;
        }
        if (pid == 0) {
            ::dup2(logfd, STDOUT_FILENO);
            const char* mode = unsafe ? "create-unsafe" : "create";
            ::execl(self.c_str(), self.c_str(), mode, dir.c_str(), "seg", "10000", std::to_string(size).c_str(),
                    static_cast<char*>(nullptr));
            std::_Exit(127);
        }
        ::close(logfd);
        struct timespec ts {};
        ts.tv_sec = static_cast<time_t>(delay_us / 1000000);
        ts.tv_nsec = static_cast<long>((delay_us % 1000000) * 1000);
        while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
        }
        ::kill(pid, SIGKILL);
        int wstatus = 0;
        while (::waitpid(pid, &wstatus, 0) < 0 && errno == EINTR) {
        }
        if (WIFSIGNALED(wstatus) && WTERMSIG(wstatus) == SIGKILL) {
            ++killed;
        } else {
            std::fprintf(stderr, "run %llu: child not killed (status 0x%x)\n", static_cast<unsigned long long>(run),
                         static_cast<unsigned>(wstatus));
        }
        check_counts c;
        const int rc = do_check(dir, size, log, c, false);
        std::fprintf(stderr, "run %llu: delay %llu us, entries %llu complete %llu bad %llu created %llu missing %llu tmp %llu\n",
                     static_cast<unsigned long long>(run), static_cast<unsigned long long>(delay_us),
                     static_cast<unsigned long long>(c.entries), static_cast<unsigned long long>(c.complete),
                     static_cast<unsigned long long>(c.bad), static_cast<unsigned long long>(c.created),
                     static_cast<unsigned long long>(c.missing), static_cast<unsigned long long>(c.tmp));
        if (rc != 0) {
            ++failed_runs;
        }
        total.entries += c.entries;
        total.complete += c.complete;
        total.bad += c.bad;
        total.bad_size += c.bad_size;
        total.bad_extents += c.bad_extents;
        total.bad_data += c.bad_data;
        total.tmp += c.tmp;
        total.created += c.created;
        total.missing += c.missing;
        if (total.created == 0 && delay_scale < 16) {
            delay_scale *= 2;
        }
        if (empty_dir(dir) != 0) {
            return 1;
        }
    }
    std::printf("runs %llu killed %llu failed_runs %llu bad %llu (size %llu, extents %llu, data %llu) missing %llu"
                " tmp %llu complete %llu created %llu\n",
                static_cast<unsigned long long>(done), static_cast<unsigned long long>(killed),
                static_cast<unsigned long long>(failed_runs), static_cast<unsigned long long>(total.bad),
                static_cast<unsigned long long>(total.bad_size), static_cast<unsigned long long>(total.bad_extents),
                static_cast<unsigned long long>(total.bad_data), static_cast<unsigned long long>(total.missing),
                static_cast<unsigned long long>(total.tmp), static_cast<unsigned long long>(total.complete),
                static_cast<unsigned long long>(total.created));
    return failed_runs == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        return usage();
    }
    const std::string mode = argv[1];
    std::uint64_t count = 0, size = 0, runs = 0, max_delay_ms = 0;
    if ((mode == "create" || mode == "create-unsafe") && argc == 6) {
        if (!parse_u64(argv[4], count) || !parse_u64(argv[5], size) || size == 0) {
            return usage();
        }
        return do_create(argv[2], argv[3], count, size, mode == "create-unsafe");
    }
    if (mode == "check" && (argc == 4 || argc == 5)) {
        if (!parse_u64(argv[3], size) || size == 0) {
            return usage();
        }
        check_counts c;
        return do_check(argv[2], size, argc == 5 ? argv[4] : "", c, true);
    }
    if (mode == "sigkill" && argc >= 6) {
        if (!parse_u64(argv[3], size) || size == 0 || !parse_u64(argv[4], runs) || !parse_u64(argv[5], max_delay_ms)) {
            return usage();
        }
        bool unsafe = false, until_caught = false;
        std::uint64_t seed = static_cast<std::uint64_t>(::time(nullptr)) ^ (static_cast<std::uint64_t>(::getpid()) << 20);
        for (int i = 6; i < argc; ++i) {
            const std::string a = argv[i];
            if (a == "--unsafe") {
                unsafe = true;
            } else if (a == "--until-caught") {
                until_caught = true;
            } else if (a == "--seed" && i + 1 < argc && parse_u64(argv[i + 1], seed)) {
                ++i;
            } else {
                return usage();
            }
        }
        char self[4096];
        const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
        if (n <= 0) {
            std::fprintf(stderr, "wz_create_crash: readlink /proc/self/exe: %s\n", std::strerror(errno));
            return 1;
        }
        self[n] = '\0';
        return do_sigkill(self, argv[2], size, runs, max_delay_ms, unsafe, until_caught, seed);
    }
    return usage();
}

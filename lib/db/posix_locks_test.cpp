// SPDX-License-Identifier: MIT
// POSIX record locks survive every call of the public API (C ABI and C++) that takes the
// caller's descriptor or the file's path. fcntl(2) F_SETLK locks belong to the process and the
// inode: closing ANY descriptor of the file in the process drops all of them (fs/locks.c
// locks_remove_posix, called by filp_close with the process's file table as the owner). The
// library reopens files through /proc/self/fd (O_DIRECT data writes and verification reads)
// and probes open them by path; SQLite keeps its database locks this way, and lost them when
// it called wz_extend on its file (found building the SQLite VFS).
//
// For each directory given (a real filesystem: ext4, xfs, tmpfs ...) and each entry point:
// the process takes a write lock and a read lock on two ranges and a write lock from 1 MiB to
// the end of any file, calls the entry point on that file, then a forked child asks the kernel
// with F_GETLK whether a conflicting lock stands in each range, held by this process. One line
// per entry point: "held 3/3" or "LOST"; exit 1 if any lock was lost or a call failed.
// Only the public headers, through the shared library, as a database would.

#include <wzero/wzero.h>
#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace {

constexpr std::uint64_t file_bytes = 2 << 20;  // 2 MiB: the calls below work inside or just past it

struct lock_range {
    short type;
    off_t start, len;  // len 0: to the end of any file
};
constexpr lock_range locks[] = {
    {F_WRLCK, 0, 4096},
    {F_RDLCK, 65536, 8192},
    {F_WRLCK, 1 << 20, 0},
};
constexpr int lock_count = static_cast<int>(std::size(locks));

int take_locks(int fd) {
    for (const lock_range& l : locks) {
        struct flock f {};
        f.l_type = l.type;
        f.l_whence = SEEK_SET;
        f.l_start = l.start;
        f.l_len = l.len;
        if (::fcntl(fd, F_SETLK, &f) != 0) {
            return -errno;
        }
    }
    return 0;
}

// In a child (another process, so the locks conflict with it): how many of `locks` the kernel
// still reports held by `owner`. F_GETLK with the conflicting type: a write lock conflicts
// with a read request, a read lock with a write request.
int count_held(const std::string& path, pid_t owner) {
    const pid_t child = ::fork();
    if (child < 0) {
        std::perror("fork");
        return -1;
    }
    if (child == 0) {
        const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
        if (fd < 0) {
            ::_exit(100);
        }
        int held = 0;
        for (const lock_range& l : locks) {
            struct flock f {};
            f.l_type = l.type == F_WRLCK ? F_RDLCK : F_WRLCK;
            f.l_whence = SEEK_SET;
            f.l_start = l.start;
            f.l_len = l.len == 0 ? 4096 : l.len;
            if (::fcntl(fd, F_GETLK, &f) != 0) {
                ::_exit(101);
            }
            if (f.l_type == l.type && f.l_pid == owner) {
                ++held;
            }
        }
        ::_exit(held);
    }
    int st = 0;
    if (::waitpid(child, &st, 0) != child || !WIFEXITED(st) || WEXITSTATUS(st) > lock_count) {
        return -1;
    }
    return WEXITSTATUS(st);
}

struct call {
    std::string name;
    // Calls the entry point on the file (FD open read-write, PATH its name); "" or the error.
    std::function<std::string(int fd, const std::string& path)> run;
};

std::string c_error(const char* what, long rc) {
    return std::string(what) + ": " + std::strerror(static_cast<int>(-rc)) + " (" + wz_last_error() + ")";
}

std::string cxx_error(const wz::status& s) { return s.ok() ? std::string() : s.error().message; }

template <class T>
std::string cxx_error(const wz::result<T>& r) {
    return r ? std::string() : r.error().message;
}

// The writer's cases check the locks themselves before the writer closes (its close releases
// them by design: see libwzero(3)); main() reads this instead of its own count after the call.
int held_before_close = -1;
std::string current_path;

std::string writer_work_c(wz_writer* w) {
    void* buf = nullptr;
    if (::posix_memalign(&buf, 4096, 4096) != 0) {
        return "posix_memalign failed";
    }
    std::memset(buf, 0x5a, 4096);
    std::string err;
    if (const ssize_t n = wz_writer_pwrite(w, buf, 4096, 8192); n != 4096) {
        err = c_error("wz_writer_pwrite", n);
    } else if (const int rc = wz_writer_refresh(w); rc < 0) {
        err = c_error("wz_writer_refresh", rc);
    }
    std::free(buf);
    return err;
}

std::string writer_work_cxx(wz::writer& w) {
    void* buf = nullptr;
    if (::posix_memalign(&buf, 4096, 4096) != 0) {
        return "posix_memalign failed";
    }
    std::memset(buf, 0x5a, 4096);
    std::string err;
    if (auto n = w.pwrite(buf, 4096, 8192); !n) {
        err = n.error().message;
    } else if (auto s = w.refresh(); !s.ok()) {
        err = s.error().message;
    }
    std::free(buf);
    return err;
}

wz_zero_opts zero_opts(int method, int verify) {
    wz_zero_opts o{};
    o.size = sizeof o;
    o.method = method;
    o.verify = verify;
    return o;
}

wz::preallocate_options cxx_opts(wz::method_request m, wz::verify_mode v) {
    wz::preallocate_options o;
    o.method = m;
    o.verify = v;
    return o;
}

std::vector<call> calls() {
    using wz::method_request;
    using wz::verify_mode;
    std::vector<call> v;
    // First, before any call has probed this filesystem: wz::stat(fd) is tried in place, from
    // the caches, and must go to its worker for what they do not hold yet (on tmpfs and btrfs,
    // whether O_DIRECT opens: the file reopened); then again, answered in place.
    v.push_back({"wz::stat (fd), the first call", [](int fd, const std::string& path) {
                     return cxx_error(wz::stat(fd, path));
                 }});
    v.push_back({"wz::stat (fd), answered from the caches", [](int fd, const std::string& path) {
                     return cxx_error(wz::stat(fd, path));
                 }});
    // The C ABI.
    v.push_back({"wz_extend", [](int fd, const std::string&) {
                     const wz_zero_opts o = zero_opts(WZ_METHOD_AUTO, WZ_VERIFY_DATA);
                     const int rc = wz_extend(fd, file_bytes + (1 << 20), &o);
                     return rc < 0 ? c_error("wz_extend", rc) : std::string();
                 }});
    v.push_back({"wz_extend (data writes)", [](int fd, const std::string&) {
                     const wz_zero_opts o = zero_opts(WZ_METHOD_WRITE, WZ_VERIFY_DATA);
                     const int rc = wz_extend(fd, file_bytes + (1 << 20), &o);
                     return rc < 0 ? c_error("wz_extend", rc) : std::string();
                 }});
    v.push_back({"wz_zero_range", [](int fd, const std::string&) {
                     const wz_zero_opts o = zero_opts(WZ_METHOD_AUTO, WZ_VERIFY_DATA);
                     const int rc = wz_zero_range(fd, 0, file_bytes, &o);
                     return rc < 0 ? c_error("wz_zero_range", rc) : std::string();
                 }});
    v.push_back({"wz_rezero", [](int fd, const std::string&) {
                     const wz_zero_opts o = zero_opts(WZ_METHOD_AUTO, WZ_VERIFY_DATA);
                     const int rc = wz_rezero(fd, 0, 1 << 20, &o);
                     return rc < 0 ? c_error("wz_rezero", rc) : std::string();
                 }});
    v.push_back({"wz_pwrite_zeros", [](int fd, const std::string&) {
                     const ssize_t rc = wz_pwrite_zeros(fd, 1 << 20, 1 << 20);
                     return rc < 0 ? c_error("wz_pwrite_zeros", -errno) : std::string();
                 }});
    v.push_back({"wz_stat", [](int, const std::string& path) {
                     wz_caps caps{};
                     caps.size = sizeof caps;
                     const int rc = wz_stat(path.c_str(), &caps);
                     return rc < 0 ? c_error("wz_stat", rc) : std::string();
                 }});
    v.push_back({"wz_stat_json", [](int, const std::string& path) {
                     char* json = nullptr;
                     char err[256] = "";
                     const int rc = wz_stat_json(path.c_str(), &json, err, sizeof err);
                     wz_free(json);
                     return rc < 0 ? std::string("wz_stat_json: ") + err : std::string();
                 }});
    // The C++ API.
    v.push_back({"wz::extend", [](int fd, const std::string&) {
                     return cxx_error(wz::extend(fd, file_bytes + (1 << 20),
                                                 cxx_opts(method_request::automatic, verify_mode::data)));
                 }});
    v.push_back({"wz::zero_range (data writes)", [](int fd, const std::string&) {
                     return cxx_error(
                         wz::zero_range(fd, 0, file_bytes, cxx_opts(method_request::write, verify_mode::data)));
                 }});
    v.push_back({"wz::rezero", [](int fd, const std::string&) {
                     return cxx_error(wz::rezero(fd, 0, 1 << 20, cxx_opts(method_request::automatic, verify_mode::data)));
                 }});
    v.push_back({"wz::preallocate (fd)", [](int fd, const std::string& path) {
                     return cxx_error(wz::preallocate(fd, path, 0, file_bytes,
                                                      cxx_opts(method_request::automatic, verify_mode::data)));
                 }});
    v.push_back({"wz::preallocate (path)", [](int, const std::string& path) {
                     return cxx_error(
                         wz::preallocate(path, 0, file_bytes, cxx_opts(method_request::automatic, verify_mode::data)));
                 }});
    v.push_back({"wz::stat (fd)", [](int fd, const std::string& path) { return cxx_error(wz::stat(fd, path)); }});
    v.push_back({"wz::stat (path)", [](int, const std::string& path) { return cxx_error(wz::stat(path)); }});
    v.push_back({"wz::verify", [](int fd, const std::string& path) {
                     // Written zeroes first (on the caller's descriptor: no reopen), then the proof.
                     std::vector<char> zeroes(file_bytes);
                     if (::pwrite(fd, zeroes.data(), zeroes.size(), 0) != static_cast<ssize_t>(zeroes.size()) ||
                         ::fsync(fd) != 0) {
                         return std::string("pwrite/fsync: ") + std::strerror(errno);
                     }
                     auto r = wz::verify(path, 0, file_bytes, verify_mode::data);
                     return cxx_error(r);
                 }});
    // The writer: open (also a failed one: tmpfs has no FIEMAP), a write and a refresh keep
    // the locks; its descriptors stay open until it closes, which releases them (libwzero(3)).
    v.push_back({"wz_writer_open_fd, pwrite, refresh", [](int fd, const std::string&) {
                     wz_writer* w = nullptr;
                     int rc = wz_writer_open_fd(fd, 0, file_bytes, nullptr, &w);
                     if (rc == -EOPNOTSUPP) {
                         return std::string();  // no FIEMAP or O_DIRECT here (tmpfs): opened and closed all the same
                     }
                     if (rc < 0) {
                         return c_error("wz_writer_open_fd", rc);
                     }
                     std::string err = writer_work_c(w);
                     held_before_close = count_held(current_path, ::getpid());
                     (void)wz_writer_close(w);  // wz: ignored-error (the writes above were checked)
                     return err;
                 }});
    v.push_back({"wz_writer_open (path), pwrite, refresh", [](int, const std::string& path) {
                     wz_writer* w = nullptr;
                     int rc = wz_writer_open(path.c_str(), 0, file_bytes, nullptr, &w);
                     if (rc == -EOPNOTSUPP) {
                         return std::string();  // no FIEMAP or O_DIRECT here (tmpfs): opened and closed all the same
                     }
                     if (rc < 0) {
                         return c_error("wz_writer_open", rc);
                     }
                     std::string err = writer_work_c(w);
                     held_before_close = count_held(current_path, ::getpid());
                     (void)wz_writer_close(w);  // wz: ignored-error (the writes above were checked)
                     return err;
                 }});
    v.push_back({"wz::writer::open (fd), pwrite, refresh", [](int fd, const std::string& path) {
                     auto w = wz::writer::open(fd, path, 0, file_bytes);
                     if (!w) {
                         return w.error().code.value() == EOPNOTSUPP ? std::string() : w.error().message;
                     }
                     std::string err = writer_work_cxx(*w);
                     held_before_close = count_held(current_path, ::getpid());
                     return err;
                 }});
    v.push_back({"wz::map_extents", [](int, const std::string& path) {
                     // Opened and closed by path either way; tmpfs has no FIEMAP (EOPNOTSUPP).
                     auto r = wz::map_extents(path, 0, 0);
                     return !r && r.error().code.value() == EOPNOTSUPP ? std::string() : cxx_error(r);
                 }});
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s DIR...\n", argv[0]);
        return 2;
    }
    int failures = 0;
    const pid_t self = ::getpid();
    for (int a = 1; a < argc; ++a) {
        const std::string dir = argv[a];
        if (::mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
            std::fprintf(stderr, "mkdir %s: %s\n", dir.c_str(), std::strerror(errno));
            return 1;
        }
        int n = 0;
        for (const call& c : calls()) {
            const std::string path = dir + "/locks." + std::to_string(n++);
            ::unlink(path.c_str());  // wz: ignored-error (a leftover of an earlier run, or none)
            const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
            if (fd < 0 || ::ftruncate(fd, file_bytes) != 0) {
                std::fprintf(stderr, "%s: create: %s\n", path.c_str(), std::strerror(errno));
                return 1;
            }
            if (const int rc = take_locks(fd); rc < 0) {
                std::fprintf(stderr, "%s: F_SETLK: %s\n", path.c_str(), std::strerror(-rc));
                return 1;
            }
            const int before = count_held(path, self);
            current_path = path;
            held_before_close = -1;
            const std::string err = c.run(fd, path);
            const int after = held_before_close >= 0 ? held_before_close : count_held(path, self);
            if (!err.empty()) {
                std::printf("%s: call failed: %s\n", c.name.c_str(), err.c_str());
                ++failures;
            } else if (before != lock_count || after != lock_count) {
                std::printf("%s: LOST locks (held %d/%d before the call, %d/%d after)\n", c.name.c_str(), before,
                            lock_count, after, lock_count);
                ++failures;
            } else {
                std::printf("%s: held %d/%d\n", c.name.c_str(), after, lock_count);
            }
            ::close(fd);
            ::unlink(path.c_str());  // wz: ignored-error (best-effort cleanup)
        }
    }
    std::fflush(stdout);
    return failures == 0 ? 0 : 1;
}

// SPDX-License-Identifier: MIT
// A C++ program using the installed libwzero the way an outside consumer does: only
// <wzero/wzero.hpp> and the shared library (pkg-config or find_package), C++17. It calls
// every public function at least once, so a function declared in the header but missing
// from the library's export list fails here at link time; cmake/install_check.sh builds it.
// Usage: install_consumer SCRATCH_DIR (an empty directory on a filesystem with O_DIRECT)
#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <system_error>
#include <vector>

namespace {

int failures = 0;

void check(bool cond, const std::string& what) {
    if (!cond) {
        std::fprintf(stderr, "FAILED: %s\n", what.c_str());
        ++failures;
    }
}

template <class T>
bool ok(const wz::result<T>& r, const std::string& what) {
    check(r.has_value(), what + (r.has_value() ? "" : ": " + r.error().message));
    return r.has_value();
}

void check_names() {
    check(std::strlen(wz::version()) > 0, "wz::version() is not empty");
    for (wz::zero_method m : wz::all_zero_methods) {
        check(std::strlen(wz::to_string(m)) > 0, "to_string(zero_method)");
    }
    check(std::string(wz::to_string(wz::cache_mode::write_back)) == "write-back", "to_string(cache_mode)");
    check(std::string(wz::to_string(wz::durability_mode::flush)) == "flush", "to_string(durability_mode)");
    check(std::string(wz::to_string(wz::completion_mode::adaptive)) == "adaptive", "to_string(completion_mode)");
    check(std::string(wz::to_string(wz::io_engine::psync)) == "psync", "to_string(io_engine)");
    // Automatic keeps whatever the environment (WZERO_ENGINE) or the probe chose.
    check(wz::select_io_engine(wz::io_engine_request::automatic).ok(), "select_io_engine(automatic)");
    check(!wz::current_io_engine().reason.empty(), "current_io_engine() gives a reason");
}

void check_zeroing(const std::string& file) {
    constexpr std::uint64_t mib = 1 << 20;
    wz::preallocate_options opts;
    opts.verify = wz::verify_mode::data;
    auto rep = wz::preallocate(file, 0, mib, opts);  // creates the file
    if (ok(rep, "preallocate(path)")) {
        check(rep->bytes_done == mib, "preallocate(path) zeroed the whole range");
        check(wz::to_json(*rep).find("\"bytes_done\"") != std::string::npos, "to_json(preallocate_report)");
    }
    const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
    check(fd >= 0, "open " + file);
    if (fd < 0) {
        return;
    }
    auto grown = wz::preallocate(fd, file, mib, mib, opts);  // grows it to 2 MiB
    ok(grown, "preallocate(fd)");
    auto by_fd = wz::stat(fd, file);
    if (ok(by_fd, "stat(fd)")) {
        check(by_fd->size_bytes == 2 * mib, "stat(fd) sees the grown size");
        auto cache = wz::write_cache(fd, file, std::chrono::nanoseconds(0));
        if (ok(cache, "write_cache")) {
            check(cache->reread && cache->effective == by_fd->cache.effective,
                  "write_cache(max_age 0) reads again and says what stat says");
        }
    }
    ::close(fd);
    auto caps = wz::stat(file);
    if (ok(caps, "stat(path)")) {
        check(caps->file_type == "regular", "stat(path): regular file");
        check(wz::to_json(*caps).find("\"write_zeroes\"") != std::string::npos, "to_json(capabilities)");
    }
    auto proof = wz::verify(file, 0, 2 * mib, wz::verify_mode::data);
    if (ok(proof, "verify")) {
        check(proof->verified.value_or(false), "verify: the range is proven written zeroes");
    }
    auto map = wz::map_extents(file, 0, 0);
    if (ok(map, "map_extents")) {
        check(!map->empty() && map->front().kind == "written", "map_extents: written extents");
        std::vector<wz::mapped_extent> streamed;
        const wz::status walked = wz::map_extents(file, 0, 0, [&streamed](const wz::mapped_extent& e) -> wz::status {
            streamed.push_back(e);
            return {};
        });
        check(walked.ok() && streamed.size() == map->size() && streamed.front().offset == map->front().offset &&
                  streamed.back().length == map->back().length,
              "map_extents(callback): the same extents as the vector");
        const wz::status stopped = wz::map_extents(file, 0, 0, [](const wz::mapped_extent&) -> wz::status {
            return wz::error_info{std::make_error_code(std::errc::operation_canceled), "stop"};
        });
        check(stopped.code() == std::errc::operation_canceled, "map_extents(callback): the callback's error stops it");
    }
}

void check_writer(const std::string& file) {
    auto opened = wz::writer::open(file, 0, 1 << 20);
    if (!ok(opened, "writer::open(path)")) {
        return;
    }
    wz::writer w(std::move(*opened));  // move constructor
    const std::uint32_t align = w.alignment();
    check(align > 0 && align <= 4096, "writer::alignment()");
    check(std::strlen(wz::to_string(w.mode())) > 0 && !w.reason().empty(), "writer::mode() and reason()");
    check(w.completion() == wz::completion_mode::interrupt, "writer::completion()");

    void* buf = nullptr;
    check(::posix_memalign(&buf, 4096, 8192) == 0, "posix_memalign");
    std::memset(buf, 0xab, 8192);
    auto n = w.pwrite(buf, 4096, 0);
    check(n.has_value() && *n == 4096, "writer::pwrite");
    ::iovec iov[2] = {{buf, 4096}, {static_cast<char*>(buf) + 4096, 4096}};
    auto v = w.pwritev(iov, 2, 8192);
    check(v.has_value() && *v == 8192, "writer::pwritev");
    const wz::status submitted = w.submit(buf, 4096, 16384, 7);
    check(submitted.ok(), "writer::submit");
    check(w.in_flight() <= 1, "writer::in_flight()");
    std::vector<wz::writer_completion> done;
    auto reaped = w.complete(done, 1);
    check(reaped.has_value() && done.size() == 1 && done[0].user_data == 7 && !done[0].error, "writer::complete");
    check(w.refresh().ok(), "writer::refresh");
    check(w.stats().writes == 3, "writer::stats counts three writes");

    const int fd = ::open(file.c_str(), O_RDWR | O_CLOEXEC);
    check(fd >= 0, "open " + file);
    auto by_fd = wz::writer::open(fd, file, 0, 1 << 20);
    if (ok(by_fd, "writer::open(fd)")) {
        w = std::move(*by_fd);  // move assignment; the first writer is closed by its destructor
        check(w.pwrite(buf, 4096, 4096).has_value(), "writer::pwrite after open(fd)");
        check(w.close().ok(), "writer::close");
    }
    if (fd >= 0) {
        ::close(fd);
    }
    std::free(buf);
}

// The database file lifecycle: create, grow, recycle, zero a range.
void check_lifecycle(const std::string& dir) {
    constexpr std::uint64_t mib = 1 << 20;
    const int dirfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    check(dirfd >= 0, "open " + dir);
    if (dirfd < 0) {
        return;
    }
    wz::preallocate_report rep;
    const wz::status created = wz::create_zeroed(dirfd, "segment", mib, 0644, {}, &rep);
    check(created.ok(), "create_zeroed" + (created.ok() ? std::string() : ": " + created.error().message));
    check(wz::create_zeroed(dirfd, "segment", mib, 0644).code() == std::errc::file_exists,
          "create_zeroed never replaces a file");
    const std::string path = dir + "/segment";
    const int fd = ::open(path.c_str(), O_RDWR | O_CLOEXEC);
    check(fd >= 0, "open " + path);
    if (fd >= 0) {
        check(wz::extend(fd, 2 * mib).ok(), "extend");
        check(wz::rezero(fd, 0, mib).ok(), "rezero");
        wz::preallocate_options no_sync;
        no_sync.sync = false;
        no_sync.verify = wz::verify_mode::none;
        check(wz::zero_range(fd, 2 * mib, mib, no_sync).ok(), "zero_range");
        check(static_cast<bool>(wz::allocate(fd, path, 2 * mib, 2 * mib, no_sync)), "allocate");
        struct ::stat st {};
        check(::fstat(fd, &st) == 0 && static_cast<std::uint64_t>(st.st_size) == 4 * mib,
              "the lifecycle calls left a 4 MiB file");
        ::close(fd);
    }
    ::unlink(path.c_str());
    check(static_cast<bool>(wz::allocate(path, 0, mib, {})), "allocate (creating the file)");
    ::unlink(path.c_str());
    ::close(dirfd);
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: %s SCRATCH_DIR\n", argv[0]);
        return 2;
    }
    const std::string file = std::string(argv[1]) + "/consumer.img";
    check_names();
    check_zeroing(file);
    check_writer(file);
    check_lifecycle(argv[1]);
    ::unlink(file.c_str());
    if (failures != 0) {
        std::fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    std::printf("C++ consumer: every public function called, all checks passed\n");
    return 0;
}

// SPDX-License-Identifier: MIT
#include "io/engine.hpp"

#include "io/engine_impl.hpp"
#include "io/engine_select.hpp"

#include "testing/sanitizer.hpp"
#include "testing/scratch_dir.hpp"
#include "util/nvme_status.hpp"
#include "util/unique_fd.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using namespace wz::io;

constexpr std::uint64_t KiB = 1024, MiB = 1024 * KiB;
constexpr std::uint64_t file_bytes = 64 * MiB;
constexpr unsigned char fill_byte = 0xAA;

// The scratch directory of every test here.
class scratch_dir : public wz::testing::scratch_dir {
public:
    scratch_dir() : wz::testing::scratch_dir("wz_engine_test") {}
};

void fill_file(const fs::path& p, std::uint64_t bytes) {
    wz::unique_fd fd(::open(p.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd) << p << ": " << std::strerror(errno);
    std::vector<unsigned char> buf(4 * MiB, fill_byte);
    for (std::uint64_t off = 0; off < bytes;) {
        const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(buf.size(), bytes - off));
        ASSERT_EQ(::pwrite(fd.get(), buf.data(), n, static_cast<off_t>(off)), static_cast<ssize_t>(n));
        off += n;
    }
    ASSERT_EQ(::fsync(fd.get()), 0);
}

std::vector<unsigned char> read_file(const fs::path& p) {
    wz::unique_fd fd(::open(p.c_str(), O_RDONLY | O_CLOEXEC));
    std::vector<unsigned char> data;
    if (!fd) {
        ADD_FAILURE() << p << ": " << std::strerror(errno);
        return data;
    }
    struct stat st {};
    EXPECT_EQ(::fstat(fd.get(), &st), 0);
    data.resize(static_cast<std::size_t>(st.st_size));
    std::size_t got = 0;
    while (got < data.size()) {
        ssize_t n = ::pread(fd.get(), data.data() + got, data.size() - got, static_cast<off_t>(got));
        if (n <= 0) {
            ADD_FAILURE() << "short read of " << p;
            break;
        }
        got += static_cast<std::size_t>(n);
    }
    return data;
}

// The first index in [from, to) whose byte differs from `want`, or `to`.
std::uint64_t first_not(const std::vector<unsigned char>& d, std::uint64_t from, std::uint64_t to, unsigned char want) {
    for (std::uint64_t i = from; i < to; ++i) {
        if (d[i] != want) {
            return i;
        }
    }
    return to;
}

// Zero in [zero_from, zero_to), fill byte everywhere outside [off, off + len).
void expect_layout(const fs::path& p, std::uint64_t off, std::uint64_t len, std::uint64_t zero_to) {
    const auto d = read_file(p);
    ASSERT_EQ(d.size(), file_bytes);
    EXPECT_EQ(first_not(d, off, zero_to, 0), zero_to) << "non-zero byte inside the written range";
    EXPECT_EQ(first_not(d, 0, off, fill_byte), off) << "byte before the range changed";
    EXPECT_EQ(first_not(d, off + len, d.size(), fill_byte), d.size()) << "byte after the range changed";
}

// Every write_zeroes test runs on both engines: the same guarantees, the same assertions.
// The choice is forced (which overrides WZERO_ENGINE) and forgotten afterwards.
class on_engine : public ::testing::TestWithParam<wz::io_engine> {
protected:
    void SetUp() override {
        reset_engine_for_testing();
        ASSERT_TRUE(wz::select_io_engine(GetParam() == wz::io_engine::psync ? wz::io_engine_request::psync
                                                                             : wz::io_engine_request::io_uring)
                        .ok());
    }
    void TearDown() override { reset_engine_for_testing(); }
    [[nodiscard]] bool psync() const { return GetParam() == wz::io_engine::psync; }
};

std::string engine_name(const ::testing::TestParamInfo<wz::io_engine>& info) { return wz::to_string(info.param); }

#define WZ_ON_BOTH_ENGINES(fixture)                                                                               \
    INSTANTIATE_TEST_SUITE_P(engines, fixture, ::testing::Values(wz::io_engine::io_uring, wz::io_engine::psync), \
                             engine_name)

class write_zeroes_test : public on_engine {
protected:
    void SetUp() override {
        on_engine::SetUp();
        file_ = dir_.path() / "data";
        fill_file(file_, file_bytes);
    }
    wz::unique_fd open_file(bool direct) {
        return wz::unique_fd(::open(file_.c_str(), O_RDWR | O_CLOEXEC | (direct ? O_DIRECT : 0)));
    }
    scratch_dir dir_;
    fs::path file_;
};

struct range_case {
    std::uint64_t offset, length;
    std::uint32_t chunk_bytes;
    unsigned queue_depth;
    bool direct;
};

WZ_ON_BOTH_ENGINES(write_zeroes_test);

TEST_P(write_zeroes_test, ranges_are_zero_and_nothing_else_changes) {
    const range_case cases[] = {
        // buffered: nothing needs to be aligned
        {1, 4095, 4 * KiB, 1, false},
        {12345, 3 * MiB + 777, 64 * KiB, 32, false},
        {5000, 1, 4 * KiB, 32, false},
        {file_bytes - 10, 10, 4 * KiB, 1, false},
        {777, 20 * MiB + 3, 4 * MiB, 32, false},
        {4 * KiB, 5 * MiB, 4 * MiB, 64, false},  // queue deeper than the chunks
        // O_DIRECT, aligned
        {0, file_bytes, 1 * MiB, 32, true},
        {4 * KiB, 4 * KiB, 4 * KiB, 1, true},
        {1 * MiB, 8 * MiB + 4 * KiB, 4 * MiB, 32, true},
        {8 * KiB, 16 * MiB, 4 * KiB, 32, true},
        {12 * KiB, 40 * KiB, 8 * KiB, 1, true},
        {32 * MiB, 32 * MiB, 4 * MiB, 1, true},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(fmt::format("offset {} length {} chunk {} qd {} direct {}", c.offset, c.length, c.chunk_bytes,
                                 c.queue_depth, c.direct));
        fill_file(file_, file_bytes);
        auto fd = open_file(c.direct);
        ASSERT_TRUE(fd) << std::strerror(errno);
        zero_write_request req;
        req.fd = fd.get();
        req.path = file_.string();
        req.offset = c.offset;
        req.length = c.length;
        req.chunk_bytes = c.chunk_bytes;
        req.queue_depth = c.queue_depth;
        req.direct = c.direct;
        std::uint64_t reported = 0;
        io_outcome partial;
        auto res = write_zeroes(
            req,
            [&](std::uint64_t n) {
                reported += n;
                return true;
            },
            rate_limit{}, &partial);
        ASSERT_TRUE(res) << res.error().message;
        EXPECT_EQ(res->bytes_done, c.length);
        EXPECT_EQ(partial.bytes_done, c.length);
        EXPECT_EQ(reported, c.length);
        EXPECT_GE(res->commands, (c.length + c.chunk_bytes - 1) / c.chunk_bytes);
        EXPECT_EQ(res->engine, GetParam());
        if (::geteuid() == 0) {
            EXPECT_EQ(res->fixed_buffer, !psync());  // root: no RLIMIT_MEMLOCK in the way
        }
        fd.reset();
        expect_layout(file_, c.offset, c.length, c.offset + c.length);
    }
}

TEST_P(write_zeroes_test, empty_range_does_nothing) {
    auto fd = open_file(false);
    zero_write_request req{fd.get(), file_.string(), 100, 0};
    req.direct = false;
    auto res = write_zeroes(req, nullptr, rate_limit{});
    ASSERT_TRUE(res) << res.error().message;
    EXPECT_EQ(res->commands, 0U);
    fd.reset();
    expect_layout(file_, 0, 0, 0);
}

TEST_P(write_zeroes_test, direct_misaligned_is_einval_naming_the_range) {
    struct bad {
        std::uint64_t offset, length;
        std::uint32_t chunk_bytes;
    };
    for (const bad& b : {bad{100, 4096, 4096}, bad{4096, 1000, 4096}, bad{4096, 8192, 1000}}) {
        auto fd = open_file(true);
        ASSERT_TRUE(fd);
        zero_write_request req;
        req.fd = fd.get();
        req.path = file_.string();
        req.offset = b.offset;
        req.length = b.length;
        req.chunk_bytes = b.chunk_bytes;
        io_outcome partial{1, 1, true};
        bool called = false;
        auto res = write_zeroes(
            req,
            [&](std::uint64_t) {
                called = true;
                return true;
            },
            rate_limit{}, &partial);
        ASSERT_FALSE(res);
        EXPECT_EQ(res.error().code, std::errc::invalid_argument);
        EXPECT_NE(res.error().message.find(fmt::format("[offset {}, length {}]", b.offset, b.length)),
                  std::string::npos)
            << res.error().message;
        EXPECT_NE(res.error().message.find(file_.string()), std::string::npos);
        EXPECT_EQ(partial.bytes_done, 0U);
        EXPECT_EQ(partial.commands, 0U);
        EXPECT_FALSE(called);
    }
    expect_layout(file_, 0, 0, 0);
}

TEST_P(write_zeroes_test, bad_arguments_are_einval) {
    auto fd = open_file(false);
    zero_write_request req{fd.get(), file_.string(), 0, 4096};
    req.direct = false;
    req.chunk_bytes = 0;
    EXPECT_EQ(write_zeroes(req, nullptr, {}).error().code, std::errc::invalid_argument);
    req.chunk_bytes = 4096;
    req.queue_depth = 0;
    EXPECT_EQ(write_zeroes(req, nullptr, {}).error().code, std::errc::invalid_argument);
    req.queue_depth = 1;
    req.offset = UINT64_MAX - 10;
    EXPECT_EQ(write_zeroes(req, nullptr, {}).error().code, std::errc::invalid_argument);
    req.offset = 0;
    req.fd = -1;
    EXPECT_EQ(write_zeroes(req, nullptr, {}).error().code, std::errc::bad_file_descriptor);
    fd.reset();
    expect_layout(file_, 0, 0, 0);
}

// Cancelling stops new submissions; what is reported done is really zero.
TEST_P(write_zeroes_test, cancel_from_progress) {
    struct cancel_case {
        unsigned queue_depth;
        bool direct;
        std::uint64_t cancel_after;
    };
    for (const auto& c : {cancel_case{4, true, 8 * MiB}, cancel_case{32, false, 3 * MiB}, cancel_case{1, true, 1}}) {
        SCOPED_TRACE(fmt::format("qd {} direct {} cancel after {}", c.queue_depth, c.direct, c.cancel_after));
        fill_file(file_, file_bytes);
        auto fd = open_file(c.direct);
        zero_write_request req{fd.get(), file_.string(), 4 * MiB, 40 * MiB};
        req.chunk_bytes = 1 << 20;
        req.queue_depth = c.queue_depth;
        req.direct = c.direct;
        std::uint64_t seen = 0;
        unsigned calls_after_cancel = 0;
        io_outcome partial;
        auto res = write_zeroes(
            req,
            [&](std::uint64_t n) {
                if (seen >= c.cancel_after) {
                    ++calls_after_cancel;
                }
                seen += n;
                return seen < c.cancel_after;
            },
            rate_limit{}, &partial);
        ASSERT_FALSE(res);
        EXPECT_EQ(res.error().code, std::errc::operation_canceled) << res.error().message;
        EXPECT_EQ(calls_after_cancel, 0U);
        EXPECT_GE(partial.bytes_done, std::min<std::uint64_t>(c.cancel_after, req.chunk_bytes));
        EXPECT_LT(partial.bytes_done, req.length);
        // No more than one queue of writes can land after the cancelling call.
        EXPECT_LE(partial.bytes_done, seen + std::uint64_t{c.queue_depth} * req.chunk_bytes);
        if (c.queue_depth == 1) {
            EXPECT_EQ(partial.bytes_done, req.chunk_bytes);  // one write, then the cancel
            EXPECT_EQ(partial.commands, 1U);
        }
        fd.reset();
        // Everything below offset + bytes_done is zero; outside the request nothing changed.
        expect_layout(file_, req.offset, req.length, req.offset + partial.bytes_done);
        const auto d = read_file(file_);
        // Beyond the last possible write the fill byte survives.
        const std::uint64_t untouched = req.offset + (partial.commands * req.chunk_bytes);
        EXPECT_EQ(first_not(d, untouched, req.offset + req.length, fill_byte), req.offset + req.length);
    }
}

// A full filesystem mid-way: ENOSPC naming the failing range, bytes_done exactly where
// the zeroes stop.
class write_zeroes_enospc : public on_engine {};
WZ_ON_BOTH_ENGINES(write_zeroes_enospc);

TEST_P(write_zeroes_enospc, full_tmpfs) {
    scratch_dir dir;
    const fs::path mnt = dir.path() / "tmpfs";
    fs::create_directory(mnt);
    if (::mount("wz_test", mnt.c_str(), "tmpfs", 0, "size=8M") != 0) {
        GTEST_SKIP() << "mount tmpfs: " << std::strerror(errno) << " (needs CAP_SYS_ADMIN)";
    }
    struct unmount {
        const fs::path& p;
        ~unmount() { (void)::umount2(p.c_str(), MNT_DETACH); }  // wz: ignored-error (test cleanup)
    } guard{mnt};
    const fs::path file = mnt / "data";
    for (unsigned qd : {1U, 8U}) {
        SCOPED_TRACE(fmt::format("qd {}", qd));
        // 4 MiB of old data to overwrite, then growth until the 8 MiB run out.
        fill_file(file, 4 * MiB);
        wz::unique_fd fd(::open(file.c_str(), O_RDWR | O_CLOEXEC));
        ASSERT_TRUE(fd);
        zero_write_request req{fd.get(), file.string(), 0, 16 * MiB};
        req.chunk_bytes = 1 << 20;
        req.queue_depth = qd;
        req.direct = false;
        io_outcome partial;
        auto res = write_zeroes(req, nullptr, rate_limit{}, &partial);
        ASSERT_FALSE(res);
        EXPECT_EQ(res.error().code, std::errc::no_space_on_device) << res.error().message;
        EXPECT_NE(res.error().message.find("write zeroes " + file.string()), std::string::npos)
            << res.error().message;
        // The lowest failing range starts where the contiguous zeroes end.
        EXPECT_NE(res.error().message.find(fmt::format("[offset {}, length ", partial.bytes_done)), std::string::npos)
            << res.error().message << " bytes_done " << partial.bytes_done;
        EXPECT_GE(partial.bytes_done, 4 * MiB);
        EXPECT_LE(partial.bytes_done, 8 * MiB);
        fd.reset();
        const auto d = read_file(file);
        ASSERT_GE(d.size(), partial.bytes_done);
        EXPECT_EQ(first_not(d, 0, partial.bytes_done, 0), partial.bytes_done);
        fs::remove(file);
    }
}

// RLIMIT_FSIZE cuts the write that crosses it short (generic_write_check_limits) and fails
// the next with EFBIG: the rest of a short write is resubmitted, and bytes_done counts the
// short write's prefix exactly.
class write_zeroes_short : public on_engine {};
WZ_ON_BOTH_ENGINES(write_zeroes_short);

TEST_P(write_zeroes_short, short_write_resubmitted_then_efbig) {
    scratch_dir dir;
    const fs::path file = dir.path() / "grow";
    wz::unique_fd fd(::open(file.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd);
    constexpr std::uint64_t limit = 5 * MiB + 1234;
    rlimit old{};
    ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &old), 0);
    auto old_sigxfsz = ::signal(SIGXFSZ, SIG_IGN);
    rlimit lim{limit, old.rlim_max};
    ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &lim), 0);
    zero_write_request req{fd.get(), file.string(), 0, 8 * MiB};
    req.direct = false;
    req.queue_depth = 4;
    io_outcome partial;
    auto res = write_zeroes(req, nullptr, rate_limit{}, &partial);
    (void)::setrlimit(RLIMIT_FSIZE, &old);  // wz: ignored-error (test cleanup)
    (void)::signal(SIGXFSZ, old_sigxfsz);  // wz: ignored-error (test cleanup)
    ASSERT_FALSE(res);
    EXPECT_EQ(res.error().code, std::errc::file_too_large) << res.error().message;
    EXPECT_NE(res.error().message.find(fmt::format("[offset {}, length {}]", limit, 6 * MiB - limit)),
              std::string::npos)
        << res.error().message;
    EXPECT_EQ(partial.bytes_done, limit);
    fd.reset();
    const auto d = read_file(file);
    ASSERT_EQ(d.size(), limit);
    EXPECT_EQ(first_not(d, 0, limit, 0), limit);
}

TEST_P(write_zeroes_test, rate_limit_8_mib_per_s) {
    auto fd = open_file(false);
    zero_write_request req{fd.get(), file_.string(), 0, 16 * MiB};
    req.direct = false;
    req.chunk_bytes = 1 << 20;
    const auto t0 = std::chrono::steady_clock::now();
    auto res = write_zeroes(req, nullptr, rate_limit{8 * MiB});
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(res) << res.error().message;
    EXPECT_GE(s, 1.8);
    EXPECT_LT(s, 30.0);
    RecordProperty("seconds", fmt::format("{:.3f}", s));
    fd.reset();
    expect_layout(file_, 0, 16 * MiB, 16 * MiB);
}

// Regression: at 1 byte/s the first chunk waits 12 days; the wait slept
// in one piece and ignored the caller's cancel (a SIGINT in the CLI). It must ask the
// progress callback while it waits and stop as soon as that says no: the first answer is
// go on, the second stop (by count, not by the clock: under TSan with a second CI run beside,
// the first question came after a 200 ms deadline, and "asked twice" failed on a loaded
// machine, not on the code). The time bound is generous: a 12-day wait is the bug.
TEST_P(write_zeroes_test, cancel_ends_a_rate_limit_wait_at_once) {
    auto fd = open_file(false);
    zero_write_request req{fd.get(), file_.string(), 0, 1 * MiB};
    req.direct = false;
    req.chunk_bytes = 1 << 20;
    const auto t0 = std::chrono::steady_clock::now();
    unsigned asked = 0;
    progress_fn progress = [&](std::uint64_t) { return ++asked < 2; };
    io_outcome partial;
    auto res = write_zeroes(req, progress, rate_limit{1}, &partial);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_FALSE(res);
    EXPECT_EQ(res.error().code.value(), ECANCELED) << res.error().message;
    EXPECT_EQ(partial.bytes_done, 0U);
    EXPECT_EQ(asked, 2U);  // stopped at the first "no"
    EXPECT_LT(s, 60.0);
}

// ---------------------------------------------------------------------------------------
// psync only: the pool itself, seen from /proc (not from what the engine says of itself).

std::vector<long> task_ids() {
    std::vector<long> ids;
    for (const auto& e : fs::directory_iterator("/proc/self/task")) {
        ids.push_back(std::stol(e.path().filename().string()));
    }
    return ids;
}

// The SigBlk mask of one thread, from /proc/self/task/<tid>/status.
std::uint64_t blocked_signals(long tid) {
    std::ifstream in(fmt::format("/proc/self/task/{}/status", tid));
    std::string line;
    while (std::getline(in, line)) {
        if (line.rfind("SigBlk:", 0) == 0) {
            return std::stoull(line.substr(7), nullptr, 16);
        }
    }
    ADD_FAILURE() << "no SigBlk for thread " << tid;
    return 0;
}

class psync_pool : public write_zeroes_test {};
INSTANTIATE_TEST_SUITE_P(engines, psync_pool, ::testing::Values(wz::io_engine::psync), engine_name);

// min(queue depth, cap) workers, every one blocking the signals the CLI handles on its main
// thread, and all of them gone when the call returns.
TEST_P(psync_pool, threads_capped_signals_blocked_and_joined) {
    const long self = static_cast<long>(::gettid());
    // The runtime's own threads first: ThreadSanitizer starts its background thread at the
    // process's first pthread_create, which would count as a worker left behind.
    std::thread([] {}).join();
    for (unsigned qd : {1U, 3U, 32U}) {
        SCOPED_TRACE(fmt::format("qd {}", qd));
        auto fd = open_file(true);
        ASSERT_TRUE(fd);
        const std::size_t before = task_ids().size();
        zero_write_request req{fd.get(), file_.string(), 0, 16 * MiB};
        req.chunk_bytes = 256 * KiB;
        req.queue_depth = qd;
        std::size_t seen_threads = 0;
        bool checked = false;
        auto res = write_zeroes(
            req,
            [&](std::uint64_t) {
                EXPECT_EQ(static_cast<long>(::gettid()), self) << "progress called off the caller's thread";
                const auto ids = task_ids();
                seen_threads = std::max(seen_threads, ids.size() - before);
                if (!checked) {
                    checked = true;
                    for (long tid : ids) {
                        if (tid == self) {
                            continue;
                        }
                        const std::uint64_t mask = blocked_signals(tid);
                        for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGPIPE, SIGALRM}) {
                            EXPECT_NE(mask & (std::uint64_t{1} << (sig - 1)), 0U)
                                << "thread " << tid << " does not block signal " << sig;
                        }
                    }
                }
                return true;
            },
            rate_limit{});
        ASSERT_TRUE(res) << res.error().message;
        EXPECT_EQ(res->engine, wz::io_engine::psync);
        EXPECT_TRUE(checked);
        EXPECT_EQ(seen_threads, std::min(qd, detail::psync_zero_depth));
        EXPECT_EQ(task_ids().size(), before) << "worker threads left behind";
        fd.reset();
        expect_layout(file_, 0, 16 * MiB, 16 * MiB);
    }
}

// The automatic choice picked io_uring, then a ring setup is refused (no descriptor left,
// as under a tight `ulimit -n`): the request runs on psync and the process stays there.
// io_uring asked for explicitly gets the setup error instead.
class engine_fallback : public write_zeroes_test {
protected:
    void SetUp() override {
        write_zeroes_test::SetUp();
        const char* env = std::getenv("WZERO_ENGINE");
        saved_env_ = env ? std::optional<std::string>(env) : std::nullopt;
        ::unsetenv("WZERO_ENGINE");
        reset_engine_for_testing();
        ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved_), 0);
    }
    void TearDown() override {
        (void)::setrlimit(RLIMIT_NOFILE, &saved_);  // wz: ignored-error (test cleanup)
        if (saved_env_) {
            ::setenv("WZERO_ENGINE", saved_env_->c_str(), 1);
        }
        write_zeroes_test::TearDown();
    }
    // No descriptor left: the lowest free one becomes the limit.
    void exhaust_descriptors() {
        const int next = ::dup(0);
        ASSERT_GE(next, 0);
        ::close(next);
        rlimit lim{static_cast<rlim_t>(next), saved_.rlim_max};
        ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &lim), 0);
    }
    rlimit saved_{};
    std::optional<std::string> saved_env_;
};
INSTANTIATE_TEST_SUITE_P(engines, engine_fallback, ::testing::Values(wz::io_engine::io_uring), engine_name);

TEST_P(engine_fallback, refused_ring_setup_moves_automatic_to_psync) {
    if (wz::testing::asan_ubsan_build) {
        GTEST_SKIP() << wz::testing::no_descriptor_left_under_ubsan;
    }
    if (wz::current_io_engine().engine != wz::io_engine::io_uring) {
        GTEST_SKIP() << "io_uring is not usable here: " << wz::current_io_engine().reason;
    }
    auto fd = open_file(true);
    ASSERT_TRUE(fd);
    exhaust_descriptors();
    zero_write_request req{fd.get(), file_.string(), 4 * MiB, 8 * MiB};
    io_outcome partial;
    auto res = write_zeroes(req, nullptr, rate_limit{}, &partial);
    ASSERT_TRUE(res) << res.error().message;
    EXPECT_EQ(res->engine, wz::io_engine::psync);
    EXPECT_EQ(partial.engine, wz::io_engine::psync);
    EXPECT_EQ(res->bytes_done, 8 * MiB);
    const auto now = wz::current_io_engine();
    EXPECT_EQ(now.engine, wz::io_engine::psync);
    EXPECT_NE(now.reason.find("io_uring setup (8 entries): Too many open files"), std::string::npos) << now.reason;
    fd.reset();
    expect_layout(file_, 4 * MiB, 8 * MiB, 12 * MiB);
}

TEST_P(engine_fallback, forced_io_uring_reports_the_setup_error) {
    ASSERT_TRUE(wz::select_io_engine(wz::io_engine_request::io_uring).ok());
    auto fd = open_file(true);
    ASSERT_TRUE(fd);
    exhaust_descriptors();
    zero_write_request req{fd.get(), file_.string(), 0, 4 * MiB};
    io_outcome partial;
    auto res = write_zeroes(req, nullptr, rate_limit{}, &partial);
    ASSERT_FALSE(res);
    EXPECT_EQ(res.error().code.value(), EMFILE) << res.error().message;
    EXPECT_NE(res.error().message.find("io_uring setup (4 entries)"), std::string::npos) << res.error().message;
    EXPECT_EQ(partial.commands, 0U);
    EXPECT_EQ(wz::current_io_engine().engine, wz::io_engine::io_uring);
    fd.reset();
    expect_layout(file_, 0, 0, 0);
}

TEST(zero_buffer, page_aligned_and_zero) {
    zero_buffer b(5000);
    const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
    EXPECT_EQ(reinterpret_cast<std::uintptr_t>(b.data()) % page, 0U);
    EXPECT_EQ(b.size() % page, 0U);
    EXPECT_GE(b.size(), 5000U);
    const auto* p = static_cast<const unsigned char*>(b.data());
    EXPECT_TRUE(std::all_of(p, p + b.size(), [](unsigned char c) { return c == 0; }));
}

// ---------------------------------------------------------------------------------------
// NVMe passthrough: no NVMe device on the host; the VM rig runs nvme_zero_tool for real.
// A regular file stands in for the char device: any command that reached it would fail
// with something other than EINVAL (uring_cmd EOPNOTSUPP, ioctl ENOTTY).

class nvme_args_test : public on_engine {
protected:
    void SetUp() override {
        on_engine::SetUp();
        file_ = dir_.path() / "not_a_chardev";
        fill_file(file_, 4096);
        fd_.reset(::open(file_.c_str(), O_RDWR | O_CLOEXEC));
        ASSERT_TRUE(fd_);
        target_ = nvme_target{fd_.get(), "/dev/ng9n1", 1, 512};
    }
    scratch_dir dir_;
    fs::path file_;
    wz::unique_fd fd_;
    nvme_target target_;
};

WZ_ON_BOTH_ENGINES(nvme_args_test);

TEST_P(nvme_args_test, invalid_nlb_is_einval_and_nothing_is_sent) {
    struct bad_case {
        std::vector<nvme_zero_cmd> cmds;
        const char* needle;
    };
    const bad_case cases[] = {
        {{{100, 0, false}}, "NLB 0"},
        {{{100, 65537, true}}, "NLB 65537"},
        {{{0, 8, false}, {8, 0, false}}, "SLBA 8, NLB 0"},  // a valid first command is not sent either
        {{{UINT64_MAX - 3, 8, false}}, "NLB 8"},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.needle);
        bool called = false;
        auto used = static_cast<passthrough_path>(77);
        io_outcome partial{1, 1, true};
        auto res = nvme_write_zeroes(
            target_, c.cmds, 4,
            [&](std::uint64_t) {
                called = true;
                return true;
            },
            rate_limit{}, &used, passthrough_choice::automatic, &partial);
        ASSERT_FALSE(res);
        EXPECT_EQ(res.error().code, std::errc::invalid_argument) << res.error().message;
        EXPECT_NE(res.error().message.find(c.needle), std::string::npos) << res.error().message;
        EXPECT_NE(res.error().message.find("/dev/ng9n1"), std::string::npos);
        EXPECT_FALSE(called);
        EXPECT_EQ(static_cast<int>(used), 77);
        EXPECT_EQ(partial.commands, 0U);
        EXPECT_EQ(partial.bytes_done, 0U);
    }
}

TEST_P(nvme_args_test, invalid_target_is_einval) {
    const nvme_zero_cmd cmd{0, 8, false};
    nvme_target t = target_;
    t.nsid = 0;
    EXPECT_EQ(nvme_write_zeroes(t, {&cmd, 1}, 1, nullptr, rate_limit{}).error().code, std::errc::invalid_argument);
    t = target_;
    t.lba_bytes = 520;
    EXPECT_EQ(nvme_write_zeroes(t, {&cmd, 1}, 1, nullptr, rate_limit{}).error().code, std::errc::invalid_argument);
    EXPECT_EQ(nvme_write_zeroes(target_, {&cmd, 1}, 0, nullptr, rate_limit{}).error().code,
              std::errc::invalid_argument);
    t = target_;
    t.deac_unit_lba = 0;
    EXPECT_EQ(nvme_write_zeroes(t, {&cmd, 1}, 1, nullptr, rate_limit{}).error().code, std::errc::invalid_argument);
    t = target_;
    t.dev_fd = -1;
    EXPECT_EQ(nvme_write_zeroes(t, {&cmd, 1}, 1, nullptr, rate_limit{}).error().code, std::errc::bad_file_descriptor);
}

// Not a char device: uring_cmd is missing for it (EOPNOTSUPP on the first command), so the
// automatic choice falls back to the ioctl, which reports ENOTTY with the full context.
TEST_P(nvme_args_test, missing_uring_cmd_falls_back_to_ioctl_and_says_so) {
    const nvme_zero_cmd cmds[] = {{100, 8, true}, {108, 8, true}};
    auto used = passthrough_path::uring_cmd;
    io_outcome partial;
    auto res =
        nvme_write_zeroes(target_, cmds, 4, nullptr, rate_limit{}, &used, passthrough_choice::automatic, &partial);
    ASSERT_FALSE(res);
    EXPECT_EQ(used, passthrough_path::ioctl);
    EXPECT_EQ(res.error().code, std::errc::inappropriate_io_control_operation) << res.error().message;
    EXPECT_EQ(res.error().code.category(), std::system_category());
    EXPECT_NE(res.error().message.find("/dev/ng9n1 [nsid 1, SLBA 100, NLB 8, DEAC 1] (ioctl)"), std::string::npos)
        << res.error().message;
    EXPECT_EQ(partial.commands, 1U);  // stopped at the first failure
    EXPECT_EQ(partial.bytes_done, 0U);
    EXPECT_EQ(partial.engine, GetParam());

    // Asked for uring_cmd only: "not supported", no fallback.
    res = nvme_write_zeroes(target_, cmds, 4, nullptr, rate_limit{}, &used, passthrough_choice::uring_cmd);
    ASSERT_FALSE(res);
    EXPECT_EQ(res.error().code, std::errc::operation_not_supported) << res.error().message;
    EXPECT_NE(res.error().message.find("not supported"), std::string::npos);
    if (psync()) {
        EXPECT_NE(res.error().message.find("I/O engine psync: forced"), std::string::npos) << res.error().message;
    }

    used = passthrough_path::uring_cmd;
    res = nvme_write_zeroes(target_, cmds, 4, nullptr, rate_limit{}, &used, passthrough_choice::ioctl);
    ASSERT_FALSE(res);
    EXPECT_EQ(used, passthrough_path::ioctl);
    EXPECT_EQ(res.error().code, std::errc::inappropriate_io_control_operation);
}

// The namespace's block device (no generic char device): the ioctl on either engine, and a
// forced uring_cmd is refused before anything is sent, naming why.
TEST_P(nvme_args_test, block_device_takes_the_ioctl_only) {
    const nvme_zero_cmd cmds[] = {{100, 8, true}, {108, 8, true}};
    nvme_target t = target_;
    t.dev_path = "/dev/nvme9n1";
    t.block_device = true;
    auto used = passthrough_path::uring_cmd;
    io_outcome partial;
    auto res = nvme_write_zeroes(t, cmds, 4, nullptr, rate_limit{}, &used, passthrough_choice::automatic, &partial);
    ASSERT_FALSE(res);
    EXPECT_EQ(used, passthrough_path::ioctl);
    EXPECT_EQ(res.error().code, std::errc::inappropriate_io_control_operation) << res.error().message;
    EXPECT_NE(res.error().message.find("/dev/nvme9n1 [nsid 1, SLBA 100, NLB 8, DEAC 1] (ioctl)"), std::string::npos)
        << res.error().message;
    EXPECT_EQ(partial.commands, 1U);

    used = passthrough_path::ioctl;
    partial = io_outcome{};
    res = nvme_write_zeroes(t, cmds, 4, nullptr, rate_limit{}, &used, passthrough_choice::uring_cmd, &partial);
    ASSERT_FALSE(res);
    EXPECT_EQ(res.error().code, std::errc::operation_not_supported) << res.error().message;
    EXPECT_NE(res.error().message.find("/dev/nvme9n1: io_uring passthrough not supported here (uring_cmd needs the "
                                       "namespace's generic char device; this is its block device)"),
              std::string::npos)
        << res.error().message;
    EXPECT_EQ(partial.commands, 0U);
}

// Under a rate a command goes as pieces: what reaches the device (here the ioctl, which fails
// at once with ENOTTY) is the first piece, and the error names it. 1.5 MiB/s gives pieces of
// 64 KiB, 128 blocks; a DEAC command is cut in whole units (48 blocks: 96 a piece). Without a
// rate the same command goes whole.
TEST_P(nvme_args_test, rate_cuts_commands_into_pieces) {
    struct row {
        nvme_zero_cmd cmd;
        std::uint64_t rate;
        const char* sent;
    };
    const row rows[] = {
        {{100, 2048, false}, 1536 * 1024, "SLBA 100, NLB 128, DEAC 0"},
        {{96, 2048, true}, 1536 * 1024, "SLBA 96, NLB 96, DEAC 1"},
        {{100, 2048, false}, 0, "SLBA 100, NLB 2048, DEAC 0"},
    };
    nvme_target t = target_;
    t.deac_unit_lba = 48;
    for (const auto& r : rows) {
        SCOPED_TRACE(r.sent);
        io_outcome partial;
        auto res = nvme_write_zeroes(t, {&r.cmd, 1}, 4, nullptr, rate_limit{r.rate}, nullptr,
                                     passthrough_choice::automatic, &partial);
        ASSERT_FALSE(res);
        EXPECT_EQ(res.error().code, std::errc::inappropriate_io_control_operation) << res.error().message;
        EXPECT_NE(res.error().message.find(r.sent), std::string::npos) << res.error().message;
        EXPECT_EQ(partial.commands, 1U);
        EXPECT_EQ(partial.bytes_done, 0U);
    }
}

// The bucket holds the first piece back (64 KiB at 1 byte/s: 18 hours); the caller's cancel,
// asked while it waits, ends the call at once with nothing sent, on both engines and paths.
TEST_P(nvme_args_test, cancel_ends_a_rate_wait_and_nothing_is_sent) {
    const nvme_zero_cmd cmd{0, 2048, false};
    for (auto choice : {passthrough_choice::automatic, passthrough_choice::ioctl}) {
        // Go on at the first question, stop at the second (by count, not by the clock; as
        // cancel_ends_a_rate_limit_wait_at_once).
        const auto t0 = std::chrono::steady_clock::now();
        unsigned asked = 0;
        io_outcome partial{1, 1, true};
        auto res = nvme_write_zeroes(
            target_, {&cmd, 1}, 4,
            [&](std::uint64_t n) {
                EXPECT_EQ(n, 0U);
                return ++asked < 2;
            },
            rate_limit{1}, nullptr, choice, &partial);
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        ASSERT_FALSE(res);
        EXPECT_EQ(res.error().code.value(), ECANCELED) << res.error().message;
        EXPECT_NE(res.error().message.find("cancelled after 0 of 1048576 bytes"), std::string::npos)
            << res.error().message;
        EXPECT_EQ(partial.commands, 0U);
        EXPECT_EQ(partial.bytes_done, 0U);
        EXPECT_EQ(asked, 2U);  // stopped at the first "no"
        EXPECT_LT(s, 60.0);    // generous: an 18-hour wait is the bug
    }
}

TEST_P(nvme_args_test, flush_errors_name_the_device) {
    auto err = nvme_flush(target_);
    ASSERT_FALSE(err.ok());
    EXPECT_EQ(err.code(), std::errc::inappropriate_io_control_operation);
    EXPECT_NE(err.error().message.find("nvme flush /dev/ng9n1 [nsid 1]"), std::string::npos) << err.error().message;
}

TEST(nvme_status, category_is_not_errno) {
    const std::error_code ec(0x4002, wz::nvme_status_category());  // DNR | Invalid Field in Command
    EXPECT_NE(ec.category(), std::system_category());
    EXPECT_STREQ(to_string(passthrough_path::uring_cmd), "uring_cmd");
    EXPECT_STREQ(to_string(passthrough_path::ioctl), "ioctl");
}

}  // namespace

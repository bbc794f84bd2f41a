// SPDX-License-Identifier: MIT
// wz::writer on a real file (WZ_TEST_DIR, else /var/tmp): the asynchronous API, pwritev,
// open from a descriptor, and the errors a caller must get. The device-side checks (flush
// and FUA counts at the device, kill -9) are fstests (host/006, nvme/*).
#include "io/engine_select.hpp"
#include "testing/sanitizer.hpp"
#include "testing/scratch_dir.hpp"
#include "testing/threads.hpp"
#include "util/unique_fd.hpp"

#include <wzero/wzero.hpp>

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace {

constexpr std::size_t block = 4096;
constexpr std::uint64_t file_bytes = 4 << 20;

struct aligned_free {
    void operator()(void* p) const { std::free(p); }
};
using buffer = std::unique_ptr<unsigned char, aligned_free>;

buffer make_buffer(std::size_t n, unsigned char fill) {
    void* p = nullptr;
    if (::posix_memalign(&p, block, n) != 0) {
        return nullptr;
    }
    std::memset(p, fill, n);
    return buffer(static_cast<unsigned char*>(p));
}

// Every test runs on both engines of the asynchronous API (and of NVMe commands): io_uring
// and psync, chosen as a new process would (WZERO_ENGINE notwithstanding).
unsigned char read_file_byte(const std::string& path, off_t off) {
    unsigned char c = 0;
    wz::unique_fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    EXPECT_EQ(::pread(fd.get(), &c, 1, off), 1);
    return c;
}

// A file of written extents (data, fsynced), so every mode is possible, where O_DIRECT works;
// the process's engine choice forgotten before and after.
class WrittenFileTest : public ::testing::Test {
protected:
    void SetUp() override {
        wz::io::reset_engine_for_testing();
        path_ = (dir_.path() / "f").string();
        wz::unique_fd fd(::open(path_.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
        ASSERT_TRUE(fd) << std::strerror(errno);
        std::vector<unsigned char> zero(file_bytes, 0);
        ASSERT_EQ(::pwrite(fd.get(), zero.data(), zero.size(), 0), static_cast<ssize_t>(zero.size()));
        ASSERT_EQ(::fsync(fd.get()), 0);
        wz::unique_fd d(::open(path_.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC));
        if (!d) {
            GTEST_SKIP() << wz::testing::test_base() << " takes no O_DIRECT (set WZ_TEST_DIR)";
        }
    }
    void TearDown() override { wz::io::reset_engine_for_testing(); }
    wz::testing::scratch_dir dir_{"wz_writer_test"};
    std::string path_;
};

// The same on each engine, selected before the test runs.
class WriterTest : public WrittenFileTest, public ::testing::WithParamInterface<wz::io_engine> {
protected:
    void SetUp() override {
        WrittenFileTest::SetUp();
        if (IsSkipped() || HasFatalFailure()) {
            return;
        }
        const auto req =
            GetParam() == wz::io_engine::psync ? wz::io_engine_request::psync : wz::io_engine_request::io_uring;
        ASSERT_TRUE(wz::select_io_engine(req).ok());
    }
    std::vector<unsigned char> read_back(std::uint64_t off, std::size_t n) {
        std::vector<unsigned char> v(n);
        wz::unique_fd fd(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
        EXPECT_EQ(::pread(fd.get(), v.data(), n, static_cast<off_t>(off)), static_cast<ssize_t>(n));
        return v;
    }
};

// The engine choice itself: each test selects (or lets the probe choose) its own.
using WriterEngine = WrittenFileTest;

std::string engine_name(const ::testing::TestParamInfo<wz::io_engine>& p) { return wz::to_string(p.param); }

// io_uring instances in this process, from the kernel's view of its descriptors.
unsigned rings_open() {
    unsigned n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/fd")) {
        std::error_code ec;
        if (std::filesystem::read_symlink(e.path(), ec).string() == "anon_inode:[io_uring]") {
            ++n;
        }
    }
    return n;
}

TEST_P(WriterTest, AsyncWritesAreHandedBackOnceAndLand) {
    for (auto mode : {wz::durability_mode::flush, wz::durability_mode::dsync}) {
        for (const auto& [completion, qd] : {std::pair{wz::completion_mode::interrupt, 4U},
                                             std::pair{wz::completion_mode::interrupt, 16U},
                                             std::pair{wz::completion_mode::adaptive, 4U},
                                             std::pair{wz::completion_mode::adaptive, 16U}}) {
            SCOPED_TRACE(::testing::Message() << "mode " << wz::to_string(mode) << ", completion "
                                              << wz::to_string(completion) << ", qd " << qd);
            wz::writer_options o;
            o.mode = mode;
            o.queue_depth = 64;
            o.completion.mode = completion;
            auto w = wz::writer::open(path_, 0, file_bytes, o);
            ASSERT_TRUE(w) << w.error().message;
            constexpr unsigned n = 256;
            std::vector<buffer> bufs;
            for (unsigned i = 0; i < qd; ++i) {
                bufs.push_back(make_buffer(block, 0));
            }
            std::vector<int> seen(n, 0);
            std::vector<wz::writer_completion> done;
            unsigned next = 0;
            std::vector<unsigned> free_bufs;
            for (unsigned i = 0; i < qd; ++i) {
                free_bufs.push_back(i);
            }
            std::vector<unsigned> buf_of(n);
            while (next < n || w->in_flight() > 0) {
                while (next < n && !free_bufs.empty()) {
                    const unsigned b = free_bufs.back();
                    free_bufs.pop_back();
                    std::memset(bufs[b].get(), static_cast<int>(next & 0xff), block);
                    buf_of[next] = b;
                    ASSERT_TRUE(w->submit(bufs[b].get(), block, std::uint64_t{next} * block, next).ok());
                    ++next;
                }
                done.clear();
                auto r = w->complete(done, 1);
                ASSERT_TRUE(r) << r.error().message;
                ASSERT_GE(*r, 1U);
                for (const auto& c : done) {
                    ASSERT_FALSE(c.error) << c.error->message;
                    EXPECT_EQ(c.bytes, block);
                    ++seen.at(c.user_data);
                    free_bufs.push_back(buf_of[c.user_data]);
                }
            }
            for (unsigned i = 0; i < n; ++i) {
                EXPECT_EQ(seen[i], 1) << "write " << i;
            }
            auto s = w->stats();
            EXPECT_EQ(s.writes, n);
            EXPECT_EQ(s.bytes, n * block);
            if (mode == wz::durability_mode::flush) {
                // Group commit: a flush starts once no other write is on the device (or the
                // oldest waiting write has waited a write's time), so writes submitted together
                // share one flush: about 1/q per write at QD q. Which writes share a flush on a
                // real device depends on timing: every bound tighter than one per write failed
                // under load (3/8 at QD 4: 97 and 99 for 96, TSan 102 and 104, ASan 109; 1/2:
                // 129 for 128 under ASan beside a VM). So here only what holds on any machine;
                // the batching rule is proven without timing by group_commit_test.cpp's
                // simulated device (FlushBatcher.ACohortSharesOneFlush,
                // SimulatedDeviceAtMostHalfAFlushPerWrite) and measured by
                // bench/write-engines.sh (flushes per write at QD 1, 16 and 64).
                EXPECT_GE(s.flushes, 1U);
                EXPECT_LE(s.flushes, n) << "queue depth " << qd;
            } else {
                EXPECT_EQ(s.flushes, 0U);  // O_DSYNC: the kernel's business
            }
            // No bound on blocking_waits: how many complete() calls found nothing done is
            // timing (under TSan, and on a loaded machine, the submitting loop is the slow side
            // and every call finds a write done).
            ASSERT_TRUE(w->close().ok());
            auto data = read_back(0, n * block);
            for (unsigned i = 0; i < n; ++i) {
                ASSERT_EQ(data[i * block], i & 0xff) << "block " << i;
                ASSERT_EQ(data[i * block + block - 1], i & 0xff) << "block " << i;
            }
        }
    }
}

// Flush mode with nothing to group: at QD 1, asynchronous and from one
// thread, every write goes alone as RWF_DSYNC and the writer issues no flush of its own (a
// write and then a flush cost a round trip more than O_DSYNC for the same device work). At
// QD 8 the group commit stays: flushes, and at most the first write alone.
TEST_P(WriterTest, FlushModeSendsALoneWriteAsDsync) {
    wz::writer_options o;
    o.mode = wz::durability_mode::flush;
    o.queue_depth = 8;
    auto w = wz::writer::open(path_, 0, file_bytes, o);
    ASSERT_TRUE(w) << w.error().message;
    EXPECT_NE(w->reason().find("alone as RWF_DSYNC"), std::string::npos) << w->reason();
    std::vector<buffer> bufs;
    for (unsigned i = 0; i < 8; ++i) {
        bufs.push_back(make_buffer(block, static_cast<unsigned char>('a' + i)));
    }
    constexpr unsigned n = 32;
    std::vector<wz::writer_completion> done;
    for (unsigned i = 0; i < n; ++i) {
        ASSERT_TRUE(w->submit(bufs[0].get(), block, std::uint64_t{i} * block, i).ok());
        done.clear();
        auto r = w->complete(done, 1);
        ASSERT_TRUE(r) << r.error().message;
        ASSERT_EQ(*r, 1U);
        ASSERT_FALSE(done[0].error) << done[0].error->message;
    }
    auto s = w->stats();
    EXPECT_EQ(s.writes, n);
    EXPECT_EQ(s.dsync_writes, n) << "asynchronous, QD 1";
    EXPECT_EQ(s.flushes, 0U) << "asynchronous, QD 1";
    for (unsigned i = 0; i < n; ++i) {
        ASSERT_TRUE(w->pwrite(bufs[1].get(), block, std::uint64_t{n + i} * block));
    }
    s = w->stats();
    EXPECT_EQ(s.dsync_writes, 2 * n) << "synchronous, one thread";
    EXPECT_EQ(s.flushes, 0U) << "synchronous, one thread";
    // QD 8, kept full: group commit.
    unsigned next = 0, in_flight = 0;
    std::vector<unsigned> free_bufs{0, 1, 2, 3, 4, 5, 6, 7};
    while (next < 4 * n || in_flight > 0) {
        while (next < 4 * n && !free_bufs.empty()) {
            const unsigned b = free_bufs.back();
            free_bufs.pop_back();
            ASSERT_TRUE(w->submit(bufs[b].get(), block, std::uint64_t{2 * n + next % (2 * n)} * block, b).ok());
            ++next;
            ++in_flight;
        }
        done.clear();
        auto r = w->complete(done, 1);
        ASSERT_TRUE(r) << r.error().message;
        for (const auto& c : done) {
            ASSERT_FALSE(c.error) << c.error->message;
            free_bufs.push_back(static_cast<unsigned>(c.user_data));
            --in_flight;
        }
    }
    const auto q8 = w->stats();
    EXPECT_EQ(q8.writes, 6 * n);
    EXPECT_LE(q8.dsync_writes - s.dsync_writes, 1U) << "QD 8: the group commit's writes went alone";
    EXPECT_GE(q8.flushes, 1U);
    EXPECT_LE(q8.flushes, 4 * n) << "QD 8: more flushes than writes";  // the grouping: see above
    ASSERT_TRUE(w->close().ok());
    auto data = read_back(0, 2 * n * block);
    EXPECT_EQ(data[0], 'a');
    EXPECT_EQ(data[(2 * n - 1) * block], 'b');
}

TEST_P(WriterTest, SubmitBeyondTheQueueDepthIsEbusy) {
    wz::writer_options o;
    o.mode = wz::durability_mode::flush;
    o.queue_depth = 4;
    auto w = wz::writer::open(path_, 0, file_bytes, o);
    ASSERT_TRUE(w) << w.error().message;
    auto buf = make_buffer(block, 1);
    for (std::uint64_t i = 0; i < 4; ++i) {
        const auto st = w->submit(buf.get(), block, i * block, i);
        ASSERT_TRUE(st.ok()) << st.error().message;
    }
    auto e = w->submit(buf.get(), block, 4 * block, 4);
    ASSERT_FALSE(e.ok());
    EXPECT_EQ(e.code().value(), EBUSY);
    EXPECT_NE(e.error().message.find(path_), std::string::npos) << e.error().message;
    // close() waits for the four in flight.
    EXPECT_TRUE(w->close().ok());
    EXPECT_EQ(w->stats().writes, 4U);
}

TEST_P(WriterTest, MisalignedAndOutOfRangeWritesAreRefused) {
    auto w = wz::writer::open(path_, block, 16 * block);
    ASSERT_TRUE(w) << w.error().message;
    auto buf = make_buffer(2 * block, 1);
    auto caps = wz::stat(path_);
    ASSERT_TRUE(caps && caps->dio);
    // A buffer off its memory alignment: by one byte, or (where any address goes) none.
    const std::size_t skew = caps->dio->mem_align > 1 ? 1 : 0;
    struct bad {
        const unsigned char* p;
        std::size_t len;
        std::uint64_t off;
        int err;
        const char* says;
    };
    for (const bad& b : {bad{buf.get() + skew, skew == 0 ? 100 : block, block, EINVAL, "not aligned"},
                         bad{buf.get(), block, block + 1, EINVAL, "not aligned"},
                         bad{buf.get(), 100, block, EINVAL, "not aligned"},
                         bad{buf.get(), 0, block, EINVAL, "non-zero"},
                         bad{buf.get(), block, 0, ERANGE, "outside the writer's range"},
                         bad{buf.get(), 2 * block, 16 * block, ERANGE, "outside the writer's range"}}) {
        auto r = w->pwrite(b.p, b.len, b.off);
        ASSERT_FALSE(r);
        EXPECT_EQ(r.error().code.value(), b.err) << r.error().message;
        EXPECT_NE(r.error().message.find(b.says), std::string::npos) << r.error().message;
        EXPECT_NE(r.error().message.find(path_), std::string::npos) << r.error().message;
        auto e = w->submit(b.p, b.len, b.off, 0);
        ASSERT_FALSE(e.ok());
        EXPECT_EQ(e.code().value(), b.err) << e.error().message;
    }
    EXPECT_EQ(w->in_flight(), 0U);
    EXPECT_EQ(w->stats().writes, 0U);
}

TEST_P(WriterTest, PwritevWritesEverySegment) {
    auto w = wz::writer::open(path_, 0, file_bytes);
    ASSERT_TRUE(w) << w.error().message;
    auto a = make_buffer(block, 'a'), b = make_buffer(2 * block, 'b'), c = make_buffer(block, 'c');
    ::iovec iov[3] = {{a.get(), block}, {b.get(), 2 * block}, {c.get(), block}};
    auto r = w->pwritev(iov, 3, 8 * block);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, 4 * block);
    ASSERT_TRUE(w->close().ok());
    auto data = read_back(8 * block, 4 * block);
    EXPECT_EQ(data[0], 'a');
    EXPECT_EQ(data[block], 'b');
    EXPECT_EQ(data[3 * block - 1], 'b');
    EXPECT_EQ(data[3 * block], 'c');
    // A misaligned middle segment refuses the whole vector.
    auto w2 = wz::writer::open(path_, 0, file_bytes);
    ASSERT_TRUE(w2);
    ::iovec odd[2] = {{a.get(), block}, {b.get(), 100}};
    auto r2 = w2->pwritev(odd, 2, 0);
    ASSERT_FALSE(r2);
    EXPECT_EQ(r2.error().code.value(), EINVAL);
}

TEST_P(WriterTest, OpenFromADescriptor) {
    wz::unique_fd ro(::open(path_.c_str(), O_RDONLY | O_CLOEXEC));
    auto bad = wz::writer::open(ro.get(), path_, 0, file_bytes);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code.value(), EBADF);
    EXPECT_NE(bad.error().message.find("read-only"), std::string::npos) << bad.error().message;

    wz::unique_fd wo(::open(path_.c_str(), O_WRONLY | O_CLOEXEC));
    auto w = wz::writer::open(wo.get(), path_, 0, file_bytes);
    ASSERT_TRUE(w) << w.error().message;
    wo.reset();  // the caller's descriptor may go: the writer has its own
    auto buf = make_buffer(block, 'z');
    ASSERT_TRUE(w->pwrite(buf.get(), block, 0));
    const auto submitted = w->submit(buf.get(), block, block, 7);
    ASSERT_TRUE(submitted.ok()) << submitted.error().message;
    std::vector<wz::writer_completion> done;
    auto r = w->complete(done, 1);
    ASSERT_TRUE(r);
    ASSERT_EQ(done.size(), 1U);
    EXPECT_EQ(done[0].user_data, 7U);
    ASSERT_TRUE(w->close().ok());
    auto data = read_back(0, 2 * block);
    EXPECT_EQ(data[0], 'z');
    EXPECT_EQ(data[2 * block - 1], 'z');
}

TEST_P(WriterTest, OpenErrorsNameThePath) {
    const std::string missing = (dir_.path() / "missing").string();
    auto w = wz::writer::open(missing, 0, block);
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().code.value(), ENOENT);
    EXPECT_NE(w.error().message.find(missing), std::string::npos) << w.error().message;

    auto past = wz::writer::open(path_, file_bytes - block, 2 * block);
    ASSERT_FALSE(past);
    EXPECT_EQ(past.error().code.value(), EINVAL);

    wz::writer_options o;
    o.completion.mode = wz::completion_mode::adaptive;
    o.completion.low_watermark = 40;  // above the high watermark of 32
    auto bad = wz::writer::open(path_, 0, file_bytes, o);
    ASSERT_FALSE(bad);
    EXPECT_EQ(bad.error().code.value(), EINVAL);
    EXPECT_NE(bad.error().message.find("low watermark"), std::string::npos) << bad.error().message;

    ASSERT_EQ(::chmod(path_.c_str(), 0400), 0);
    if (::geteuid() != 0) {  // root opens a 0400 file for writing anyway
        auto ro = wz::writer::open(path_, 0, file_bytes);
        ASSERT_FALSE(ro);
        EXPECT_EQ(ro.error().code.value(), EACCES);
    }
}

TEST_P(WriterTest, ThroughIsRefusedOverUnwrittenExtents) {
    const std::string p = (dir_.path() / "unwritten").string();
    wz::unique_fd fd(::open(p.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600));
    ASSERT_TRUE(fd);
    if (::fallocate(fd.get(), 0, 0, file_bytes) != 0) {
        GTEST_SKIP() << "fallocate: " << std::strerror(errno);
    }
    wz::writer_options o;
    o.mode = wz::durability_mode::through;
    o.allow_unsafe_through = true;  // the cache is not the point here: the extents are
    auto w = wz::writer::open(p, 0, file_bytes, o);
    ASSERT_FALSE(w);
    EXPECT_EQ(w.error().code.value(), EINVAL);
    EXPECT_EQ(w.error().reason, wz::error_reason::not_written);
    EXPECT_NE(w.error().message.find("written extents"), std::string::npos) << w.error().message;
}

TEST_P(WriterTest, TheEngineIsSaidAndPsyncSetsUpNoRing) {
    const unsigned rings_before = rings_open();
    wz::writer_options o;
    o.mode = wz::durability_mode::flush;
    o.queue_depth = 8;
    auto w = wz::writer::open(path_, 0, file_bytes, o);
    ASSERT_TRUE(w) << w.error().message;
    EXPECT_EQ(w->stats().engine, wz::to_string(GetParam())) << "before the first submit";
    auto buf = make_buffer(block, 'e');
    for (std::uint64_t i = 0; i < 8; ++i) {
        ASSERT_TRUE(w->submit(buf.get(), block, i * block, i).ok());
    }
    ASSERT_TRUE(w->pwrite(buf.get(), block, 8 * block));
    // While the engine is up: a ring on io_uring (so that this check can see one), none on psync.
    if (GetParam() == wz::io_engine::psync) {
        EXPECT_EQ(rings_open(), rings_before);
    } else {
        EXPECT_GT(rings_open(), rings_before);
    }
    std::vector<wz::writer_completion> done;
    auto r = w->complete(done, 8);
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(*r, 8U);
    const auto s = w->stats();
    EXPECT_EQ(s.engine, wz::to_string(GetParam()));
    EXPECT_EQ(s.writes, 9U);
    EXPECT_GE(s.flushes, 1U);
    ASSERT_TRUE(w->close().ok());
    EXPECT_EQ(rings_open(), rings_before);
    auto data = read_back(0, 9 * block);
    for (std::size_t i = 0; i < 9; ++i) {
        ASSERT_EQ(data[i * block], 'e') << "block " << i;
    }
}

// No worker thread (psync's "wz-psync") outlives the writer's asynchronous engine: gone once
// it is closed, refreshed or destroyed. (io_uring's own io-wq workers are the kernel's, and
// leave in their own time.)
TEST_P(WriterTest, NoThreadOutlivesTheAsynchronousEngine) {
    auto tasks = [] { return wz::testing::threads_named("wz-psync"); };
    // After a close, refresh or destruction: joined workers may linger in /proc a moment.
    auto tasks_settled = [](std::size_t want) { return wz::testing::threads_named_settled("wz-psync", want); };
    const std::size_t before = tasks();
    auto buf = make_buffer(block, 't');
    for (int how = 0; how < 3; ++how) {
        SCOPED_TRACE(how == 0 ? "close" : how == 1 ? "refresh" : "destructor");
        {
            wz::writer_options o;
            o.mode = wz::durability_mode::flush;
            o.queue_depth = 32;
            auto w = wz::writer::open(path_, 0, file_bytes, o);
            ASSERT_TRUE(w) << w.error().message;
            for (std::uint64_t i = 0; i < 32; ++i) {
                ASSERT_TRUE(w->submit(buf.get(), block, i * block, i).ok());
            }
            std::vector<wz::writer_completion> done;
            ASSERT_TRUE(w->complete(done, 32));
            // Threads of its own on psync (so that this check sees them), none on io_uring.
            if (GetParam() == wz::io_engine::psync) {
                EXPECT_GT(tasks(), before);
                EXPECT_LE(tasks(), before + 32);  // the queue depth
            } else {
                EXPECT_EQ(tasks(), before);
            }
            if (how == 0) {
                ASSERT_TRUE(w->close().ok());
                EXPECT_EQ(tasks_settled(before), before);
            } else if (how == 1) {
                ASSERT_TRUE(w->refresh().ok());
                EXPECT_EQ(tasks_settled(before), before);
                EXPECT_EQ(w->stats().writes, 32U);
            }
        }
        EXPECT_EQ(tasks_settled(before), before);
    }
}

INSTANTIATE_TEST_SUITE_P(Engines, WriterTest, ::testing::Values(wz::io_engine::io_uring, wz::io_engine::psync),
                         engine_name);

// The writer's first submit() with the lowest free descriptor as RLIMIT_NOFILE: the ring's
// setup gets EMFILE. The limit is back before this returns.
void submit_with_no_descriptor_left(wz::writer& w, const void* buf, wz::status& submitted) {
    rlimit saved{};
    ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
    const int lowest_free = ::fcntl(0, F_DUPFD_CLOEXEC, 0);
    ASSERT_GE(lowest_free, 0);
    ::close(lowest_free);
    rlimit tight = saved;
    tight.rlim_cur = static_cast<rlim_t>(lowest_free);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &tight), 0);
    submitted = w.submit(buf, block, 0, 1);
    ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
}

// Automatic choice: a ring refused when the writer sets up its engine (here EMFILE: no
// descriptor left) moves the process to psync, and the writes go through.
TEST_F(WriterEngine, ARingRefusedAtTheFirstSubmitFallsBackToPsync) {
    if (wz::testing::asan_ubsan_build) {
        GTEST_SKIP() << wz::testing::no_descriptor_left_under_ubsan;
    }
    const std::string& path = path_;
    ASSERT_TRUE(wz::select_io_engine(wz::io_engine_request::automatic).ok());
    if (wz::current_io_engine().engine != wz::io_engine::io_uring) {
        GTEST_SKIP() << "io_uring is not usable here: " << wz::current_io_engine().reason;
    }
    wz::writer_options o;
    o.mode = wz::durability_mode::dsync;
    auto w = wz::writer::open(path, 0, 1 << 20, o);
    ASSERT_TRUE(w) << w.error().message;
    auto buf = make_buffer(block, 'f');
    wz::status submitted;
    submit_with_no_descriptor_left(*w, buf.get(), submitted);
    ASSERT_TRUE(submitted.ok()) << submitted.error().message;
    std::vector<wz::writer_completion> done;
    ASSERT_TRUE(w->complete(done, 1));
    ASSERT_EQ(done.size(), 1U);
    EXPECT_FALSE(done[0].error);
    EXPECT_EQ(w->stats().engine, "psync");
    const auto now = wz::current_io_engine();
    EXPECT_EQ(now.engine, wz::io_engine::psync);
    EXPECT_NE(now.reason.find("io_uring setup"), std::string::npos) << now.reason;
    EXPECT_NE(now.reason.find(path), std::string::npos) << now.reason;
    EXPECT_NE(now.reason.find("psync from then on"), std::string::npos) << now.reason;
    ASSERT_TRUE(w->close().ok());
    EXPECT_EQ(read_file_byte(path, 0), 'f');
}

// io_uring asked for explicitly: a refused ring is the caller's error, never a quiet psync.
TEST_F(WriterEngine, ARingRefusedWhenIoUringWasForcedIsAnError) {
    if (wz::testing::asan_ubsan_build) {
        GTEST_SKIP() << wz::testing::no_descriptor_left_under_ubsan;
    }
    const std::string& path = path_;
    ASSERT_TRUE(wz::select_io_engine(wz::io_engine_request::io_uring).ok());
    wz::writer_options o;
    o.mode = wz::durability_mode::dsync;
    auto w = wz::writer::open(path, 0, 1 << 20, o);
    ASSERT_TRUE(w) << w.error().message;
    auto buf = make_buffer(block, 'g');
    wz::status submitted;
    submit_with_no_descriptor_left(*w, buf.get(), submitted);
    ASSERT_FALSE(submitted.ok());
    EXPECT_EQ(submitted.code().value(), EMFILE);
    EXPECT_NE(submitted.error().message.find("io_uring setup"), std::string::npos) << submitted.error().message;
    EXPECT_EQ(w->in_flight(), 0U);
    EXPECT_EQ(wz::current_io_engine().engine, wz::io_engine::io_uring);
    // With descriptors again, the next submit sets the ring up.
    ASSERT_TRUE(w->submit(buf.get(), block, 0, 2).ok());
    std::vector<wz::writer_completion> done;
    ASSERT_TRUE(w->complete(done, 1));
    ASSERT_EQ(done.size(), 1U);
    EXPECT_FALSE(done[0].error);
    EXPECT_EQ(w->stats().engine, "io_uring");
    ASSERT_TRUE(w->close().ok());
}

}  // namespace

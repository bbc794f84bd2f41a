// SPDX-License-Identifier: MIT
#include "io/engine_select.hpp"

#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>

namespace wz::io {
namespace {

// Each test starts as a new process would, without WZERO_ENGINE, and leaves it so.
class EngineSelect : public ::testing::Test {
protected:
    void SetUp() override {
        const char* env = std::getenv("WZERO_ENGINE");
        saved_ = env ? std::optional<std::string>(env) : std::nullopt;
        ::unsetenv("WZERO_ENGINE");
        reset_engine_for_testing();
    }
    void TearDown() override {
        if (saved_) {
            ::setenv("WZERO_ENGINE", saved_->c_str(), 1);
        } else {
            ::unsetenv("WZERO_ENGINE");
        }
        reset_engine_for_testing();
    }
    std::optional<std::string> saved_;
};

TEST_F(EngineSelect, ParsesTheThreeNames) {
    EXPECT_EQ(parse_engine_request("io_uring"), io_engine_request::io_uring);
    EXPECT_EQ(parse_engine_request("psync"), io_engine_request::psync);
    EXPECT_EQ(parse_engine_request("auto"), io_engine_request::automatic);
    EXPECT_EQ(parse_engine_request(""), io_engine_request::automatic);
    EXPECT_EQ(parse_engine_request("sync"), std::nullopt);
    EXPECT_EQ(parse_engine_request("IO_URING"), std::nullopt);
}

TEST_F(EngineSelect, AutomaticMatchesTheProbe) {
    const auto why = probe_io_uring();
    const io_engine_info e = current_io_engine();
    EXPECT_FALSE(e.forced);
    EXPECT_EQ(e.engine, why ? io_engine::psync : io_engine::io_uring) << e.reason;
    EXPECT_EQ(e.reason, why ? *why : std::string("io_uring set up"));
}

TEST_F(EngineSelect, ChosenOnceThenOnlyTheSameEngine) {
    ASSERT_TRUE(select_io_engine(io_engine_request::psync).ok());
    EXPECT_EQ(current_io_engine().engine, io_engine::psync);
    EXPECT_EQ(current_engine_kind(), io_engine::psync);
    EXPECT_EQ(current_io_engine().reason, "forced (select_io_engine())");
    EXPECT_TRUE(current_io_engine().forced);
    EXPECT_TRUE(select_io_engine(io_engine_request::psync).ok());
    EXPECT_TRUE(select_io_engine(io_engine_request::automatic).ok());
    const status again = select_io_engine(io_engine_request::io_uring);
    ASSERT_FALSE(again.ok());
    EXPECT_EQ(again.code(), std::errc::device_or_resource_busy);
    EXPECT_NE(again.error().message.find("psync was chosen already"), std::string::npos) << again.error().message;
    EXPECT_EQ(current_io_engine().engine, io_engine::psync);
}

TEST_F(EngineSelect, EnvironmentForcesWhenNothingWasSelected) {
    ::setenv("WZERO_ENGINE", "psync", 1);
    EXPECT_EQ(current_engine_kind(), io_engine::psync);  // decides, as current_io_engine() would
    EXPECT_EQ(current_io_engine().engine, io_engine::psync);
    EXPECT_EQ(current_io_engine().reason, "forced (WZERO_ENGINE=psync)");
}

TEST_F(EngineSelect, SelectionBeatsTheEnvironment) {
    ::setenv("WZERO_ENGINE", "psync", 1);
    ASSERT_TRUE(select_engine(io_engine_request::io_uring, "--engine io_uring").ok());
    EXPECT_EQ(current_io_engine().engine, io_engine::io_uring);
    EXPECT_EQ(current_io_engine().reason, "forced (--engine io_uring)");
}

TEST_F(EngineSelect, UnknownEnvironmentValueIsSaidAndIgnored) {
    ::setenv("WZERO_ENGINE", "aio", 1);
    const io_engine_info e = current_io_engine();
    EXPECT_FALSE(e.forced);
    EXPECT_NE(e.reason.find("WZERO_ENGINE=aio not understood"), std::string::npos) << e.reason;
}

TEST_F(EngineSelect, AutomaticFallsBackOnceForPermanentRefusals) {
    if (probe_io_uring()) {
        GTEST_SKIP() << "io_uring cannot be set up here: automatic is psync from the start";
    }
    ASSERT_EQ(current_io_engine().engine, io_engine::io_uring);
    EXPECT_EQ(current_engine_kind(), io_engine::io_uring);
    EXPECT_FALSE(fall_back_to_psync(EINVAL, "io_uring setup (8 entries)"));  // a bug, not a refusal
    EXPECT_EQ(current_io_engine().engine, io_engine::io_uring);
    EXPECT_TRUE(fall_back_to_psync(EMFILE, "io_uring setup (8 entries)"));
    EXPECT_EQ(current_engine_kind(), io_engine::psync);
    const io_engine_info e = current_io_engine();
    EXPECT_EQ(e.engine, io_engine::psync);
    EXPECT_EQ(e.reason, "io_uring setup (8 entries): Too many open files (no descriptor left for the ring); psync "
                        "from then on");
    EXPECT_TRUE(fall_back_to_psync(EPERM, "again"));  // already there
    EXPECT_EQ(current_io_engine().reason, e.reason);
}

TEST_F(EngineSelect, ForcedIoUringNeverFallsBack) {
    ASSERT_TRUE(select_io_engine(io_engine_request::io_uring).ok());
    EXPECT_FALSE(fall_back_to_psync(EPERM, "io_uring setup (8 entries)"));
    EXPECT_EQ(current_io_engine().engine, io_engine::io_uring);
}

}  // namespace
}  // namespace wz::io

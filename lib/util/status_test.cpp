// SPDX-License-Identifier: MIT
// wz::status: the outcome of calls that return nothing.
#include <wzero/wzero.hpp>

#include <gtest/gtest.h>

#include <type_traits>

namespace {

// Code written for the old std::optional<error_info> returns ("true" = failed) must not
// compile against status: no conversion to bool, explicit or contextual.
static_assert(!std::is_constructible_v<bool, wz::status>);
static_assert(!std::is_convertible_v<wz::status, bool>);
static_assert(std::is_nothrow_default_constructible_v<wz::status>);

TEST(status, default_is_ok) {
    const wz::status s;
    EXPECT_TRUE(s.ok());
    EXPECT_FALSE(s.code());
}

TEST(status, carries_the_error) {
    const wz::status s = wz::error_info{std::make_error_code(std::errc::no_space_on_device), "write /x: No space"};
    EXPECT_FALSE(s.ok());
    EXPECT_EQ(s.code(), std::errc::no_space_on_device);
    EXPECT_EQ(s.error().message, "write /x: No space");
}

TEST(status, error_moves_into_a_result) {
    wz::status s = wz::error_info{std::make_error_code(std::errc::io_error), "flush /x: I/O error"};
    const wz::result<int> r = std::move(s).error();
    ASSERT_FALSE(r.has_value());
    EXPECT_EQ(r.error().code, std::errc::io_error);
}

}  // namespace

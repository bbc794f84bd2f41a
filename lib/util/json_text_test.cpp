// SPDX-License-Identifier: MIT
#include "util/json_text.hpp"

#include <gtest/gtest.h>

#include <string>

namespace {

struct utf8_case {
    const char* name;
    std::string in, out;
};

// Regression: a path with a 0xff byte made every --json output abort.
TEST(escape_invalid_utf8, table) {
    const utf8_case cases[] = {
        {"empty", "", ""},
        {"ascii", "/mnt/a b/c", "/mnt/a b/c"},
        {"controls stay for the JSON encoder", "a\tb\n", "a\tb\n"},
        {"two bytes", "caf\xc3\xa9", "caf\xc3\xa9"},
        {"three bytes", "\xe2\x82\xac", "\xe2\x82\xac"},
        {"four bytes", "\xf0\x9f\x98\x80", "\xf0\x9f\x98\x80"},
        {"largest code point", "\xf4\x8f\xbf\xbf", "\xf4\x8f\xbf\xbf"},
        {"last before surrogates", "\xed\x9f\xbf", "\xed\x9f\xbf"},
        {"0xff", "x\xffy", "x\\xffy"},
        {"0xfe", "\xfe", "\\xfe"},
        {"lone continuation", "a\x80z", "a\\x80z"},
        {"two continuations", "\x80\xbf", "\\x80\\xbf"},
        {"overlong slash C0 AF", "\xc0\xaf", "\\xc0\\xaf"},
        {"overlong C1", "\xc1\xbf", "\\xc1\\xbf"},
        {"overlong E0 80 AF", "\xe0\x80\xaf", "\\xe0\\x80\\xaf"},
        {"overlong F0 80 80 AF", "\xf0\x80\x80\xaf", "\\xf0\\x80\\x80\\xaf"},
        {"surrogate ED A0 80", "\xed\xa0\x80", "\\xed\\xa0\\x80"},
        {"above U+10FFFF", "\xf4\x90\x80\x80", "\\xf4\\x90\\x80\\x80"},
        {"F5 lead", "\xf5\x80\x80\x80", "\\xf5\\x80\\x80\\x80"},
        {"truncated at the end", "ab\xe2\x82", "ab\\xe2\\x82"},
        {"truncated before ASCII", "\xe2\x82z\xc3\xa9", "\\xe2\\x82z\xc3\xa9"},
        {"truncated four-byte", "\xf0\x9f\x98", "\\xf0\\x9f\\x98"},
        {"lead then lead", "\xc3\xc3\xa9", "\\xc3\xc3\xa9"},
        {"latin-1 name", "gr\xfc\xdf", "gr\\xfc\\xdf"},
        {"embedded NUL kept", std::string("a\0b", 3), std::string("a\0b", 3)},
    };
    for (const auto& c : cases) {
        EXPECT_EQ(wz::escape_invalid_utf8(c.in), c.out) << c.name;
    }
}

TEST(escape_invalid_utf8, every_string_and_key_of_a_document) {
    nlohmann::ordered_json j{{"path", "/t/x\xffy"},
                             {"ok", "\xc3\xa9"},
                             {"n", 5},
                             {"list", {"\x80", 1, nullptr, {{"deep", "\xfe"}}}}};
    j["k\xff"] = "v";
    const std::string text = wz::dump_json(j, -1);
    EXPECT_EQ(text, R"({"path":"/t/x\\xffy","ok":")"
                    "\xc3\xa9"
                    R"(","n":5,"list":["\\x80",1,null,{"deep":"\\xfe"}],"k\\xff":"v"})");
    // What was dumped parses back.
    EXPECT_TRUE(nlohmann::json::accept(text));
    nlohmann::json unordered{{"a", "\xff"}};
    EXPECT_EQ(wz::dump_json(unordered, -1), R"({"a":"\\xff"})");
}

}  // namespace

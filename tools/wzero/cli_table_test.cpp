// SPDX-License-Identifier: MIT
// cli_table: a table printed in chunks (map's way, bounded memory) is the table printed whole.

#include "cli_table.hpp"

#include <gtest/gtest.h>

#include <fmt/format.h>

#include <string>
#include <vector>

namespace wzcli {

// cli_table.cpp's messages go here instead of main.cpp's stderr.
std::string last_error;
void print_error(const std::string& message) {
    last_error = message;
}
void print_stderr(const std::string& text) {
    last_error = text;
}

namespace {

const std::vector<column_info> columns = {
    {"OFFSET", column_type::number, true, 1, false, "a number"},
    {"KIND", column_type::string, false, 1, false, "a string"},
    {"ALIGNED", column_type::boolean, false, 1, false, "a boolean, or null"},
    {"NAME", column_type::string, false, 1, false, "a string with bytes to escape"},
};

std::vector<std::optional<std::string>> row(std::size_t i) {
    std::optional<bool> aligned;
    if (i % 3 != 0) {
        aligned = i % 3 == 1;
    }
    return {fmt::format("{}", i * 4096 * (i % 7 + 1)),
            i % 2 == 0 ? std::optional<std::string>("written") : std::optional<std::string>("hole"),
            aligned ? std::optional<std::string>(*aligned ? "1" : "0") : std::nullopt,
            i % 5 == 0 ? std::nullopt : std::optional<std::string>(fmt::format("n\"{}\\\t\xff", i))};
}

std::string whole(table_format format, std::size_t rows) {
    table t("extents", columns, {0, 1, 2, 3}, format, false);
    for (std::size_t i = 0; i < rows; ++i) {
        EXPECT_TRUE(t.add_row(row(i)).ok());
    }
    std::string out;
    EXPECT_TRUE(t.print(out).ok());
    return out;
}

std::string chunked(table_format format, std::size_t rows, std::size_t chunk) {
    table t("extents", columns, {0, 1, 2, 3}, format, false);
    if (format == table_format::human) {
        // The widths of the whole table, as map measures them in a pass of its own.
        std::vector<std::size_t> widths;
        for (const auto& c : columns) {
            widths.push_back(std::string(c.name).size());
        }
        for (std::size_t i = 0; i < rows; ++i) {
            const auto r = row(i);
            for (std::size_t c = 0; c < r.size(); ++c) {
                widths[c] = std::max(widths[c], r[c] ? r[c]->size() : 0);
            }
        }
        for (std::size_t c = 0; c < widths.size(); ++c) {
            t.fix_width(c, widths[c]);
        }
    }
    std::string out = format == table_format::json ? t.json_begin() : std::string();
    for (std::size_t i = 0; i < rows; ++i) {
        EXPECT_TRUE(t.add_row(row(i)).ok());
        if (t.rows() == chunk) {
            EXPECT_TRUE(t.print_chunk(out).ok());
        }
    }
    EXPECT_TRUE(t.print_chunk(out).ok());
    if (format == table_format::json) {
        out += table::json_end();
    }
    return out;
}

TEST(CliTable, JsonChunksAreOneTable) {
    for (std::size_t rows : {0, 1, 2, 7, 64, 65, 1000}) {
        for (std::size_t chunk : {1, 2, 7, 64}) {
            EXPECT_EQ(chunked(table_format::json, rows, chunk), whole(table_format::json, rows))
                << rows << " rows in chunks of " << chunk;
        }
    }
}

TEST(CliTable, JsonEscapesAndTypes) {
    const std::string j = whole(table_format::json, 6);
    EXPECT_NE(j.find("\"offset\": 0,"), std::string::npos) << j;
    EXPECT_NE(j.find("\"aligned\": null"), std::string::npos) << j;
    EXPECT_NE(j.find("\"aligned\": true"), std::string::npos) << j;
    EXPECT_NE(j.find("\"aligned\": false"), std::string::npos) << j;
    EXPECT_NE(j.find("\"name\": null"), std::string::npos) << j;
    // A byte that is not UTF-8 is \xNN (util/json_text.hpp), the quote and tab escaped.
    EXPECT_NE(j.find(R"("name": "n\"1\\\t\\xff")"), std::string::npos) << j;
}

TEST(CliTable, TextChunksWithWholeWidthsAreOneTable) {
    for (std::size_t rows : {1, 2, 64, 65, 1000}) {
        for (std::size_t chunk : {1, 7, 64}) {
            EXPECT_EQ(chunked(table_format::human, rows, chunk), whole(table_format::human, rows))
                << rows << " rows in chunks of " << chunk;
            EXPECT_EQ(chunked(table_format::raw, rows, chunk), whole(table_format::raw, rows))
                << rows << " rows in chunks of " << chunk;
        }
    }
}

TEST(CliTable, SelectColumns) {
    const std::vector<std::size_t> defaults = {0, 1};
    EXPECT_EQ(select_columns(columns, defaults, std::nullopt, false), defaults);
    EXPECT_EQ(select_columns(columns, defaults, std::string("name,Offset"), false),
              (std::vector<std::size_t>{3, 0}));
    EXPECT_EQ(select_columns(columns, defaults, std::string("+ALIGNED"), false),
              (std::vector<std::size_t>{0, 1, 2}));
    EXPECT_EQ(select_columns(columns, defaults, std::nullopt, true), (std::vector<std::size_t>{0, 1, 2, 3}));
    for (const char* bad : {"FOO", "OFFSET,,KIND", "", "+", "OFFSET,"}) {
        last_error.clear();
        EXPECT_EQ(select_columns(columns, defaults, std::string(bad), false), std::nullopt) << bad;
        EXPECT_EQ(last_error.rfind("unknown column: ", 0), 0U) << bad << ": " << last_error;
    }
}

TEST(CliTable, ListColumns) {
    std::string out;
    ASSERT_TRUE(list_columns("wzero-test-columns", columns, table_format::raw, out).ok());
    EXPECT_EQ(out, "OFFSET <integer> a\\x20number\nKIND <string> a\\x20string\n"
                   "ALIGNED <boolean> a\\x20boolean,\\x20or\\x20null\n"
                   "NAME <string> a\\x20string\\x20with\\x20bytes\\x20to\\x20escape\n");
}

}  // namespace
}  // namespace wzcli

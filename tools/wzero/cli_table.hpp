// SPDX-License-Identifier: MIT
#pragma once
// The tables of `wzero stat` and `wzero map`, printed by libsmartcols as lsblk and findmnt
// print theirs: column selection (-o LIST, -o +LIST, -O), --list-columns, -r, -n, -J.

#include "cli.hpp"

#include <wzero/wzero.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

struct libscols_table;

namespace wzcli {

// A column's value in JSON: a string, a number, or a boolean that is null when not known.
enum class column_type { string, number, boolean };

struct column_info {
    const char* name;         // upper case, as lsblk's: the JSON key is its lower-case form
    column_type type;
    bool right;               // right-aligned (numbers)
    double width_hint;        // libsmartcols' whint: < 1 a fraction of the terminal
    bool wrap;                // long text: wraps in a terminal rather than widen the table
    const char* description;  // --list-columns and wzero(1)
};

enum class table_format { human, raw, json };

// Adds -J/--json, -r/--raw, -n/--noheadings, -O/--output-all, --list-columns and the column
// list: "-o,--output" where -o is free, "--output" alone where -o is the command's offset
// (map, whose -o/--offset and -l/--length are fallocate's).
void add_table_options(CLI::App* cmd, table_args& args, const std::string& output_names);
// PATH is required, except with --list-columns (CLI11 says "path is required" otherwise).
void path_required_unless_list_columns(CLI::App* cmd, CLI::Option* path);
// The format asked for; -J with -r is a usage error (said here, nullopt), as util-linux's
// err_exclusive_options says it.
std::optional<table_format> format_of(const table_args& args);
// The -o/--output list if one was given.
std::optional<std::string> output_list(const table_args& args);

// Writes to stdout; a short write is an error ("write error: ..."), the caller says where.
wz::status write_stdout(std::string_view text);

// The columns to print: the defaults, LIST ("A,B,C": exactly those) or "+LIST" (the defaults,
// then those), or every column (-O). An unknown name prints "wzero: unknown column: X" and
// the --help hint, and returns nullopt (exit status 1, a usage error).
std::optional<std::vector<std::size_t>> select_columns(const std::vector<column_info>& all,
                                                       const std::vector<std::size_t>& defaults,
                                                       const std::optional<std::string>& list, bool output_all);

// --list-columns, as util-linux 2.40's lsblk -H prints it (include/column-list-table.h): no
// headings; the name, its JSON type (<string>, <integer>, <boolean>) and its description; as
// JSON with -J, as raw with -r. The text is appended to `out`.
wz::status list_columns(const std::string& table_name, const std::vector<column_info>& all, table_format format,
                        std::string& out);

// One table. Cells are given as text, nullopt where the value is not known: empty in text,
// null in JSON (lsblk's way). Booleans are "1" or "0".
class table {
public:
    table(const std::string& name, const std::vector<column_info>& all, std::vector<std::size_t> selected,
          table_format format, bool noheadings);
    ~table();
    table(const table&) = delete;
    table& operator=(const table&) = delete;

    [[nodiscard]] const std::vector<std::size_t>& selected() const noexcept { return selected_; }
    [[nodiscard]] table_format format() const noexcept { return format_; }
    [[nodiscard]] std::size_t rows() const noexcept { return rows_; }

    // One row, a cell per selected column in the order of selected().
    wz::status add_row(const std::vector<std::optional<std::string>>& cells);

    // The whole table at once (scols_print_table): for tables that fit in memory.
    wz::status print(std::string& out);

    // Printing in chunks, for tables too long to hold (map: a million extents). libsmartcols
    // keeps every line in memory, so each chunk is printed (scols_table_print_range) and its
    // lines removed; the header is printed once, with the first chunk. In a terminal table the
    // widths must not change from chunk to chunk: fix_width() each column to the widest cell
    // of the whole table first (it pads the header: libsmartcols never prints a column
    // narrower than its header).
    // JSON: libsmartcols 2.38 cannot print a JSON range (see print_chunk); each chunk is
    // printed as a table of its own, and its rows are taken out of that document, so that
    // json_begin(), the chunks and json_end() are byte for byte what scols_print_table prints
    // for the same rows in one table.
    void fix_width(std::size_t selected_index, std::size_t width);
    [[nodiscard]] std::string json_begin() const;
    wz::status print_chunk(std::string& out);  // the rows added since the last chunk
    [[nodiscard]] static std::string json_end();

private:
    libscols_table* tb_ = nullptr;
    std::string name_;
    std::vector<column_info> columns_;  // the selected ones, in order
    std::vector<std::size_t> selected_;
    table_format format_;
    std::size_t rows_ = 0;
    bool first_json_row_ = true;
};

}  // namespace wzcli

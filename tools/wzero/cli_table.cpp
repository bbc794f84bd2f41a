// SPDX-License-Identifier: MIT
// libsmartcols tables for stat and map (see cli_table.hpp).

#include "cli_table.hpp"

#include "cli.hpp"

#include "util/errors.hpp"
#include "util/json_text.hpp"

#include <libsmartcols.h>

#include <fmt/format.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>
#include <system_error>
#include <utility>

namespace wzcli {

namespace {

wz::error_info scols_error(int rc, std::string_view what) {
    const int err = rc < 0 ? -rc : ENOMEM;
    return wz::make_error_msg(err, fmt::format("{}: {}", what, wz::errno_text(err)));
}

std::string upper(std::string_view s) {
    std::string r(s);
    for (char& c : r) {
        if (c >= 'a' && c <= 'z') {
            c = static_cast<char>(c - 'a' + 'A');
        }
    }
    return r;
}

int json_type_of(column_type t) {
    switch (t) {
    case column_type::number:
        return SCOLS_JSON_NUMBER;
    case column_type::boolean:
        return SCOLS_JSON_BOOLEAN_OPTIONAL;
    case column_type::string:
        break;
    }
    return SCOLS_JSON_STRING;
}

// A string libsmartcols allocated (open_memstream), freed with free().
struct c_string_free {
    void operator()(char* p) const noexcept { std::free(p); }
};
using c_string = std::unique_ptr<char, c_string_free>;

libscols_table* new_table(const std::string& name, table_format format, bool noheadings) {
    libscols_table* tb = scols_new_table();
    if (tb == nullptr) {
        return nullptr;
    }
    if (scols_table_set_name(tb, name.c_str()) != 0 || scols_table_enable_noheadings(tb, noheadings ? 1 : 0) != 0 ||
        scols_table_enable_raw(tb, format == table_format::raw ? 1 : 0) != 0 ||
        scols_table_enable_json(tb, format == table_format::json ? 1 : 0) != 0) {
        scols_unref_table(tb);
        return nullptr;
    }
    return tb;
}

}  // namespace

void add_table_options(CLI::App* cmd, table_args& a, const std::string& output_names) {
    a.output_option = cmd->add_option(output_names, a.output,
                                      std::string(output_names == "--output" ? "Output columns (-o is the offset): "
                                                                             : "Output columns: ") +
                                          "LIST, or +LIST to add to the default ones (see --list-columns)")
                          ->type_name("LIST");
    cmd->add_flag("-O,--output-all", a.output_all, "Output all columns");
    cmd->add_flag("-J,--json", a.json, "Use JSON output format");
    cmd->add_flag("-r,--raw", a.raw, "Use raw output format");
    cmd->add_flag("-n,--noheadings", a.noheadings, "Don't print headings");
    cmd->add_flag("--list-columns", a.list_columns, "List the available columns");
}

void path_required_unless_list_columns(CLI::App* cmd, CLI::Option* path) {
    path->required();
    // Checked once the command line is parsed: --list-columns, wherever it is, needs no path.
    cmd->get_option("--list-columns")
        ->each([path](const std::string&) { path->required(false); })
        ->trigger_on_parse();
}

std::optional<table_format> format_of(const table_args& a) {
    if (a.json && a.raw) {
        print_error("mutually exclusive arguments: --json --raw\nTry 'wzero --help' for more information.");
        return std::nullopt;
    }
    return a.json ? table_format::json : a.raw ? table_format::raw : table_format::human;
}

std::optional<std::string> output_list(const table_args& a) {
    if (a.output_option == nullptr || a.output_option->count() == 0) {
        return std::nullopt;
    }
    return a.output;
}

// Output that failed to reach stdout (a full disk, `>/dev/full`) is an error of its own.
// EPIPE never gets here: SIGPIPE ends the process first, as for any filter.
wz::status write_stdout(std::string_view text) {
    errno = 0;  // a short fwrite that set none must not report an earlier call's error
    if (std::fwrite(text.data(), 1, text.size(), stdout) != text.size()) {
        const int err = errno != 0 ? errno : EIO;
        return wz::error_info{std::error_code(err, std::generic_category()), "write error: " + wz::errno_text(err)};
    }
    return {};
}

std::optional<std::vector<std::size_t>> select_columns(const std::vector<column_info>& all,
                                                       const std::vector<std::size_t>& defaults,
                                                       const std::optional<std::string>& list, bool output_all) {
    std::vector<std::size_t> out;
    if (output_all) {
        for (std::size_t i = 0; i < all.size(); ++i) {
            out.push_back(i);
        }
        return out;
    }
    if (!list) {
        return defaults;
    }
    std::string_view rest(*list);
    if (!rest.empty() && rest.front() == '+') {
        out = defaults;
        rest.remove_prefix(1);
    }
    // util-linux's string_add_to_idarray: names separated by commas, compared without regard
    // to case; an empty name (",," or a list that is empty) is an unknown column.
    while (true) {
        const std::size_t comma = rest.find(',');
        const std::string_view name = rest.substr(0, comma);
        std::size_t found = all.size();
        for (std::size_t i = 0; i < all.size(); ++i) {
            if (upper(name) == all[i].name) {
                found = i;
                break;
            }
        }
        if (found == all.size()) {
            print_error(fmt::format("unknown column: {}\nTry 'wzero --help' for more information.", name));
            return std::nullopt;
        }
        out.push_back(found);
        if (comma == std::string_view::npos) {
            break;
        }
        rest.remove_prefix(comma + 1);
    }
    return out;
}

wz::status list_columns(const std::string& table_name, const std::vector<column_info>& all, table_format format,
                        std::string& out) {
    static const std::vector<column_info> list_cols = {
        {"HOLDER", column_type::string, true, 0, false, ""},
        {"TYPE", column_type::string, false, 0, false, ""},
        {"DESCRIPTION", column_type::string, false, 0, false, ""},
    };
    table t(table_name, list_cols, {0, 1, 2}, format, true);
    for (const auto& c : all) {
        const char* type = c.type == column_type::number ? "<integer>"
                           : c.type == column_type::boolean ? "<boolean>"
                                                            : "<string>";
        if (auto s = t.add_row({std::string(c.name), std::string(type), std::string(c.description)}); !s.ok()) {
            return s;
        }
    }
    return t.print(out);
}

table::table(const std::string& name, const std::vector<column_info>& all, std::vector<std::size_t> selected,
             table_format format, bool noheadings)
    : tb_(new_table(name, format, noheadings)), name_(name), selected_(std::move(selected)), format_(format) {
    if (tb_ == nullptr) {
        throw std::bad_alloc();
    }
    for (std::size_t i : selected_) {
        const column_info& c = all.at(i);
        columns_.push_back(c);
        int flags = 0;
        if (c.right) {
            flags |= SCOLS_FL_RIGHT;
        }
        if (c.wrap) {
            flags |= SCOLS_FL_WRAP;
        }
        libscols_column* cl = scols_table_new_column(tb_, c.name, c.width_hint, flags);
        if (cl == nullptr || scols_column_set_json_type(cl, json_type_of(c.type)) != 0) {
            scols_unref_table(tb_);
            throw std::bad_alloc();
        }
    }
}

table::~table() {
    scols_unref_table(tb_);
}

wz::status table::add_row(const std::vector<std::optional<std::string>>& cells) {
    libscols_line* ln = scols_table_new_line(tb_, nullptr);
    if (ln == nullptr) {
        return scols_error(-ENOMEM, "table " + name_ + ": new line");
    }
    for (std::size_t i = 0; i < cells.size() && i < columns_.size(); ++i) {
        if (!cells[i] || cells[i]->empty()) {
            continue;  // no data: empty in text, null in JSON
        }
        // JSON text must be UTF-8: names are bytes (util/json_text.hpp). In a terminal table
        // libsmartcols shows such bytes as \xNN itself.
        const std::string text = format_ == table_format::json && columns_[i].type == column_type::string
                                     ? wz::escape_invalid_utf8(*cells[i])
                                     : *cells[i];
        if (const int rc = scols_line_set_data(ln, i, text.c_str()); rc != 0) {
            return scols_error(rc, "table " + name_ + ": set data");
        }
    }
    ++rows_;
    return {};
}

wz::status table::print(std::string& out) {
    char* data = nullptr;
    const int rc = scols_print_table_to_string(tb_, &data);
    c_string owned(data);
    if (rc != 0) {
        return scols_error(rc, "table " + name_ + ": print");
    }
    if (data != nullptr) {
        out += data;
    }
    // scols_print_table ends a non-empty text table with a newline; the _to_string form does not.
    if (format_ != table_format::json && rows_ > 0) {
        out += '\n';
    }
    return {};
}

void table::fix_width(std::size_t selected_index, std::size_t width) {
    libscols_column* cl = scols_table_get_column(tb_, selected_index);
    if (cl == nullptr || format_ != table_format::human || selected_index >= columns_.size()) {
        return;
    }
    // libsmartcols sizes a column by the widest cell of what it prints, but never narrower
    // than its header (calculate.c: the header's width is the column's minimum, and a width
    // hint only applies to a column at least that wide). A header padded to the width of the
    // whole table's widest cell keeps every chunk at that width, and looks the same: spaces
    // before a right-aligned name, after a left-aligned one (none after the last column's,
    // which is not padded either).
    const std::string name = columns_[selected_index].name;
    if (width <= name.size() || (!columns_[selected_index].right && selected_index + 1 == columns_.size())) {
        return;
    }
    const std::string pad(width - name.size(), ' ');
    const std::string padded = columns_[selected_index].right ? pad + name : name + pad;
    (void)scols_column_set_name(cl, padded.c_str());  // wz: ignored-error (ENOMEM: the chunk widths may then vary)
}

std::string table::json_begin() const {
    // What ul_jsonwrt_root_open and ul_jsonwrt_array_open print (the key in lower case).
    std::string key = name_;
    for (char& c : key) {
        if (c >= 'A' && c <= 'Z') {
            c = static_cast<char>(c - 'A' + 'a');
        }
    }
    return "{\n   " + wz::dump_json(nlohmann::json(key)) + ": [\n";
}

std::string table::json_end() {
    return "\n   ]\n}\n";
}

wz::status table::print_chunk(std::string& out) {
    if (rows_ == 0) {
        return {};
    }
    char* data = nullptr;
    // 2.38 cannot print a JSON range: its rows' members are closed as if they were the root
    // (lib/jsonwrt.c: ul_jsonwrt_close at indentation 1 prints "\n}\n"), and the next one
    // fails an assertion. A chunk is printed as a whole table instead, and its rows are taken
    // out of the document around them.
    errno = 0;
    const int rc = format_ == table_format::json ? scols_print_table_to_string(tb_, &data)
                                                 : scols_table_print_range_to_string(tb_, nullptr, nullptr, &data);
    c_string owned(data);
    scols_table_remove_lines(tb_);
    rows_ = 0;
    if (rc != 0) {
        return scols_error(rc, "table " + name_ + ": print");
    }
    const std::string_view text = data != nullptr ? std::string_view(data) : std::string_view();
    if (format_ != table_format::json) {
        // A range ends without the line separator of its last row (findmnt --poll adds it).
        out.append(text);
        out += '\n';
        return {};
    }
    // "{\n   "NAME": [\n" ROWS "\n   ]\n}\n", the rows two levels (six spaces) in, joined as
    // "},{": the rows of the next chunk join the previous ones the same way.
    const std::string head = json_begin();
    const std::string tail = json_end();
    const std::string_view first_row = "      {";
    if (text.size() < head.size() + tail.size() || text.substr(0, head.size()) != head ||
        text.substr(text.size() - tail.size()) != tail ||
        text.substr(head.size(), first_row.size()) != first_row) {
        // libsmartcols 2.38 does not check its writes into the memory stream: an allocation
        // that failed there (errno, seen under `ulimit -v`) cuts the text short with rc 0.
        if (errno == ENOMEM) {
            return scols_error(-ENOMEM, "table " + name_ + ": print (cut short)");
        }
        return wz::make_error_msg(EPROTO, fmt::format("table {}: libsmartcols printed JSON of an unexpected form", name_));
    }
    std::string_view rows = text.substr(head.size(), text.size() - head.size() - tail.size());
    if (!first_json_row_) {
        out += ',';
        rows.remove_prefix(first_row.size() - 1);  // keep the "{"
    }
    first_json_row_ = false;
    out.append(rows);
    return {};
}

}  // namespace wzcli

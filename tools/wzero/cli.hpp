#pragma once

#include <CLI/CLI.hpp>

#include <string>

namespace wzcli {

// Exit status, as blkdiscard and util-linux fallocate use it.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;         // also usage errors
inline constexpr int exit_not_supported = 2;   // the requested method/operation is not supported here

struct stat_args {
    std::string path;
    bool json = false;
    bool refresh = false;
};
void add_stat_command(CLI::App& app, stat_args& args);
int run_stat(const stat_args& args);

// "wzero: MESSAGE" on stderr.
void print_error(const std::string& message);

}  // namespace wzcli

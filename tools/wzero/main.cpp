// wzero: command-line front end. Parsing, printing and exit codes only; the work is in libwzero.

#include "cli.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>

#include <cstdio>

namespace wzcli {

void print_error(const std::string& message) {
    fmt::print(stderr, "wzero: {}\n", message);
}

}  // namespace wzcli

namespace {

bool has_subcommand(const CLI::App& app, const std::string& name) {
    for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; })) {
        if (sub->check_name(name)) {
            return true;
        }
    }
    return false;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"wzero: written, zeroed extents and durable writes for Linux storage", "wzero"};
    app.set_version_flag("-V,--version", fmt::format("wzero {}", wz::version()));
    app.require_subcommand(1);
    app.failure_message([](const CLI::App* a, const CLI::Error& e) {
        (void)a;
        return std::string(e.what()) + "\nTry 'wzero --help' for more information.\n";
    });

    wzcli::stat_args stat;
    wzcli::add_stat_command(app, stat);
    wzcli::alloc_args alloc;
    wzcli::add_alloc_commands(app, alloc);
    wzcli::bench_args bench;
    wzcli::add_bench_commands(app, bench);

    // CLI11 would only say "A subcommand is required" for a mistyped command.
    if (argc > 1 && argv[1][0] != '-' && !has_subcommand(app, argv[1])) {
        fmt::print(stderr, "wzero: unknown command '{}'\nTry 'wzero --help' for more information.\n", argv[1]);
        return wzcli::exit_failure;
    }
    try {
        app.parse(argc, argv);
    } catch (const CLI::CallForHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForAllHelp& e) {
        return app.exit(e);
    } catch (const CLI::CallForVersion& e) {
        return app.exit(e);
    } catch (const CLI::ParseError& e) {
        (void)app.exit(e);  // wz: ignored-error (prints the message; our status is 1, not CLI11's)
        return wzcli::exit_failure;
    }
    if (app.got_subcommand("stat")) {
        return wzcli::run_stat(stat);
    }
    if (app.got_subcommand("alloc")) {
        return wzcli::run_alloc(alloc);
    }
    if (app.got_subcommand("map")) {
        return wzcli::run_map(alloc);
    }
    if (app.got_subcommand("verify")) {
        return wzcli::run_verify(alloc);
    }
    if (app.got_subcommand("bench")) {
        return wzcli::run_bench_write(bench);
    }
    return wzcli::exit_failure;
}

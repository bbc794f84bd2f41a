// SPDX-License-Identifier: MIT
// wzero-fallocate: util-linux fallocate's command line (v2.38.1, sys-utils/fallocate.c, plus
// 2.42's -w/--write-zeroes), doing written zeroes, so that `alias fallocate=wzero-fallocate`
// keeps existing scripts working. Parsing, printing and exit statuses only: allocating with
// data kept is wz::allocate(), zeroing is wz::preallocate().
//
// Parsed with getopt_long, not CLI11: "fallocate's command line unchanged" is getopt_long's
// behaviour, which CLI11 does not have: unambiguous long-option prefixes (--len, --keep),
// "--length=1M", attached short arguments (-l1M), bundled flags (-vn, -nl1M), options after
// the file name (argv permutation), "--" ending the options, and a repeated option whose
// last value wins, each as util-linux's fallocate takes them.

#include "cli_fallocate.hpp"

#include "cli.hpp"
#include "util/errors.hpp"
#include "util/size.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>

#include <getopt.h>
#include <sys/stat.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace wzcli {

namespace {

// Messages go out under program_invocation_short_name, as util-linux's do: "wzero-fallocate",
// or "fallocate" when run through a link of that name (main() sets it: wzcli::program()).
void say(const std::string& message) {
    print_error(message);
}

int usage_error(const std::string& message) {
    say(message);
    print_stderr(fmt::format("Try '{} --help' for more information.\n", program()));
    return exit_failure;
}

void print_help() {
    const std::string p = program();
    std::string text = fmt::format("\nUsage:\n {} [options] <filename>\n\n", p);
    text += "Make a range of a file written zeroes, taking fallocate(1)'s command line.\n";
    text += "\nOptions:\n";
    text += " -c, --collapse-range refused: removes a range from the file\n";
    text += " -d, --dig-holes      refused: replaces zeroes with holes\n";
    text += " -i, --insert-range   refused: inserts a hole, shifting existing data\n";
    text += " -l, --length <num>   length for range operations, in bytes\n";
    text += " -n, --keep-size      maintain the apparent size of the file (range inside it)\n";
    text += " -o, --offset <num>   offset for range operations, in bytes\n";
    text += " -p, --punch-hole     refused: replaces a range with a hole\n";
    text += " -w, --write-zeroes   write zeroes over the range, its data included\n";
    text += " -z, --zero-range     zero the range as written zeroes, its data included\n";
    text += " -x, --posix          as without a mode: allocate written zeroes, keep data\n";
    text += " -v, --verbose        verbose mode\n";
    text += "     --force          zero a file that another process has open (wzero's own)\n";
    text += "\n";
    text += fmt::format("{:<22}{}\n{:<22}{}\n", " -h, --help", "display this help", " -V, --version",
                        "display version");
    text += "\nArguments:\n";
    text += " <num> arguments may be followed by the suffixes for\n"
            "   GiB, TiB, PiB, EiB, ZiB, and YiB (the \"iB\" is optional)\n";
    text += "\nFor more details see wzero-fallocate(1).\n";
    (void)std::fwrite(text.data(), 1, text.size(), stdout);  // wz: ignored-error (finish_stdout reports it)
}

// wzero's own long option, with no short form so that none of util-linux's is ever taken.
constexpr int force_option = 0x100;

// util-linux 2.38's long options, in its order, plus 2.42's write-zeroes, plus --force.
const option long_options[] = {
    {"help", no_argument, nullptr, 'h'},         {"version", no_argument, nullptr, 'V'},
    {"keep-size", no_argument, nullptr, 'n'},    {"punch-hole", no_argument, nullptr, 'p'},
    {"collapse-range", no_argument, nullptr, 'c'}, {"dig-holes", no_argument, nullptr, 'd'},
    {"insert-range", no_argument, nullptr, 'i'}, {"zero-range", no_argument, nullptr, 'z'},
    {"write-zeroes", no_argument, nullptr, 'w'}, {"offset", required_argument, nullptr, 'o'},
    {"length", required_argument, nullptr, 'l'}, {"posix", no_argument, nullptr, 'x'},
    {"verbose", no_argument, nullptr, 'v'},      {"force", no_argument, nullptr, force_option},
    {nullptr, 0, nullptr, 0},
};
constexpr const char* short_options = "hvVncpdizwxl:o:";

// util-linux's err_exclusive_options() (include/optutils.h) over 2.38's table, rows and
// their quirk kept as they are: a row is only looked at for options not smaller than its
// first entry, so 2.38's last row, which starts with 'x', only ever refuses -x with -z (-x
// -n and -x -p pass there, and so they do here). Rows for -w (2.42: -w goes with no other
// mode, nor with -n) are added as pairs, so that nothing 2.38 accepts is refused.
class exclusive_options {
public:
    // An error message, or nothing.
    std::optional<std::string> check(int c) {
        for (std::size_t e = 0; e < rows_.size() && rows_[e][0] <= c; ++e) {
            for (const int op : rows_[e]) {
                if (op > c) {
                    break;
                }
                if (op != c) {
                    continue;
                }
                if (status_[e] == 0) {
                    status_[e] = c;
                } else if (status_[e] != c) {
                    std::string m = "mutually exclusive arguments:";
                    for (const int o : rows_[e]) {
                        m += fmt::format(" --{}", long_name(o));
                    }
                    return m;
                }
                break;
            }
        }
        return std::nullopt;
    }

private:
    static std::string long_name(int c) {
        for (const option* o = long_options; o->name != nullptr; ++o) {
            if (o->val == c) {
                return o->name;
            }
        }
        return std::string(1, static_cast<char>(c));
    }
    std::vector<std::vector<int>> rows_ = {
        {'c', 'd', 'p', 'z'}, {'c', 'n'}, {'c', 'w'}, {'d', 'w'}, {'i', 'w'},
        {'n', 'w'},           {'p', 'w'}, {'w', 'x'}, {'w', 'z'}, {'x', 'c', 'd', 'i', 'n', 'p', 'z'},
    };
    std::vector<int> status_ = std::vector<int>(rows_.size(), 0);
};

// util-linux's cvtnum(): a size as strtosize() reads it (wz::parse_size follows it), which
// must also fit in a signed 64-bit off_t (2.38 casts to loff_t; larger is then negative and
// "invalid"). The reason, for our message, when it is not.
struct size_arg {
    bool given = false;
    std::optional<std::uint64_t> value;
    std::string why;
};

size_arg parse_off_t(const char* text) {
    size_arg a;
    a.given = true;
    auto v = wz::parse_size(text);
    if (!v) {
        a.why = v.error().message;
    } else if (*v > static_cast<std::uint64_t>(INT64_MAX)) {
        a.why = fmt::format("'{}' is {} bytes, more than the largest file offset ({})", text, *v, INT64_MAX);
    } else {
        a.value = *v;
    }
    return a;
}

enum class action { allocate, zero_range, write_zeroes };

struct request {
    action what = action::allocate;
    bool keep_size = false;
    bool verbose = false;
    bool force = false;  // wzero's own --force: zero a file that another process has open
    std::string path;
    std::uint64_t offset = 0, length = 0;
};

void print_verbose(const request& rq, const wz::preallocate_report& r) {
    std::string line = fmt::format("{}: {} ({} bytes) ", rq.path, human_size(rq.length), rq.length);
    if (rq.what == action::zero_range) {
        line += "zeroed.";
    } else if (rq.what == action::write_zeroes) {
        line += "written as zeroes.";
    } else if (r.bytes_done >= rq.length) {
        line += "allocated as written zeroes.";
    } else if (r.bytes_done == 0) {
        line += "allocated: already data, kept.";
    } else {
        line += fmt::format("allocated: {} ({} bytes) written zeroes, the rest data, kept.", human_size(r.bytes_done),
                            r.bytes_done);
    }
    std::string text = line + "\n";
    for (const auto& d : r.decisions) {
        text += d + "\n";
    }
    (void)std::fwrite(text.data(), 1, text.size(), stdout);  // wz: ignored-error (finish_stdout reports it)
}

int run(const request& rq) {
    wz::preallocate_options opt;
    opt.cancel = &catch_stop_signals();
    // Nobody else may have the file open while parts of it are zeroed; --force zeroes it anyway.
    opt.exclusive = rq.force ? wz::exclusive_mode::none : wz::exclusive_mode::require;
    wz::preallocate_report partial;
    // Default, -x and -w: a missing file is created (0666 less the umask), as util-linux opens
    // with O_CREAT in these modes; -n and -z open only an existing one.
    opt.create = !rq.keep_size && rq.what != action::zero_range;
    if (rq.keep_size) {
        // Where the name is missing or cannot be looked up, the call says why.
        struct ::stat st {};
        const std::uint64_t end = rq.offset + rq.length;
        if (::stat(rq.path.c_str(), &st) == 0 && S_ISREG(st.st_mode) && end > static_cast<std::uint64_t>(st.st_size)) {
            say(fmt::format("{}: --keep-size with [offset {}, length {}] past the end of the file ({} bytes) is not "
                            "supported: written extents beyond the end of a file are not possible (util-linux's "
                            "`command fallocate -n` keeps unwritten ones there)",
                            rq.path, rq.offset, rq.length, st.st_size));
            return exit_not_supported;
        }
    }
    wz::result<wz::preallocate_report> r =
        rq.what == action::write_zeroes || rq.what == action::zero_range
            ? wz::preallocate(rq.path, rq.offset, rq.length, opt, &partial)
            : wz::allocate(rq.path, rq.offset, rq.length, opt, &partial);
    hold_stop_signals();
    if (!r) {
        const auto& e = r.error();
        if (e.code.value() == ECANCELED && stop_signal() != 0) {
            say(fmt::format("{}: interrupted by {}", rq.path, signal_name(stop_signal())));
        }
        say(e.message);
        if (const std::string hint = hint_for(e, hint_command::fallocate); !hint.empty()) {
            say(hint);
        }
        if (partial.bytes_done != 0) {
            say(fmt::format("{}: stopped after zeroing {} of {} bytes; data outside [offset {}, length {}] is "
                            "untouched",
                            rq.path, partial.bytes_done, rq.length, rq.offset, rq.length));
        }
        if (!partial.cleanup.empty()) {
            say(fmt::format("{}: {}", rq.path, partial.cleanup));
        }
        // util-linux's fallocate exits 1 on every failure (a block device refusing mode 0
        // included: EOPNOTSUPP, "fallocate failed"); scripts written for it see the same.
        return exit_failure;
    }
    if (rq.verbose) {
        print_verbose(rq, *r);
    }
    return exit_ok;
}

const char* refused_reason(int c) {
    switch (c) {
        case 'p':
            return "--punch-hole is not supported: it deallocates the range (a hole), the opposite of written "
                   "zeroes";
        case 'c':
            return "--collapse-range is not supported: it removes the range and moves the data after it, the "
                   "opposite of written zeroes";
        case 'i':
            return "--insert-range is not supported: it inserts a hole and moves the data after it, the opposite "
                   "of written zeroes";
        case 'd':
            return "--dig-holes is not supported: it turns zeroes into holes, the opposite of written zeroes";
        default:
            return nullptr;
    }
}

int parse_and_run(int argc, char** argv) {
    // getopt_long names the program from argv[0] in its own messages ("invalid option"): give
    // it the short name, as the messages here use. The copy is also what getopt permutes.
    std::string name = program();
    std::vector<char*> args(argv, argv + argc);
    args.push_back(nullptr);
    if (argc > 0) {
        args[0] = name.data();
    }
    size_arg length, offset;
    request rq;
    bool dig = false;
    bool posix = false;
    int mode = 0;  // the first refused mode given, in option order
    bool zero_range = false, write_zeroes = false;
    exclusive_options excl;
    optind = 0;  // a full reinitialisation of getopt (GNU)
    int c = 0;
    while ((c = ::getopt_long(argc, args.data(), short_options, long_options, nullptr)) != -1) {
        if (auto m = excl.check(c)) {
            return usage_error(*m);
        }
        switch (c) {
            case 'c':
            case 'i':
            case 'p':
                mode = mode != 0 ? mode : c;
                break;
            case 'd':
                dig = true;
                mode = mode != 0 ? mode : c;
                break;
            case 'l':
                length = parse_off_t(optarg);
                break;
            case 'o':
                offset = parse_off_t(optarg);
                break;
            case 'n':
                rq.keep_size = true;
                break;
            case 'z':
                zero_range = true;
                break;
            case 'w':
                write_zeroes = true;
                break;
            case 'x':
                posix = true;
                break;
            case 'v':
                rq.verbose = true;
                break;
            case force_option:
                rq.force = true;
                break;
            case 'h':
                print_help();
                return exit_ok;
            case 'V':
                (void)std::fputs(fmt::format("{} from wzero {}\n", program(), wz::version()).c_str(),
                                 stdout);  // wz: ignored-error (finish_stdout reports it)
                return exit_ok;
            default:
                // getopt_long has said what was wrong.
                print_stderr(fmt::format("Try '{} --help' for more information.\n", program()));
                return exit_failure;
        }
    }
    (void)posix;  // -x is the default action: posix_fallocate(3) allocates as mode 0 does
    if (optind == argc) {
        return usage_error("no filename specified");
    }
    rq.path = args[static_cast<std::size_t>(optind++)];
    if (optind != argc) {
        return usage_error("unexpected number of arguments");
    }
    // util-linux's checks, in its order: the length (optional with --dig-holes), then the offset.
    if (dig && !length.given) {
        length.value = 0;
    }
    if (!dig && !length.given) {
        return usage_error("no length argument specified");
    }
    if (!length.value) {
        return usage_error("invalid length value specified: " + length.why);
    }
    if (!dig && *length.value == 0) {
        return usage_error("invalid length value specified: the length must be greater than zero");
    }
    if (offset.given && !offset.value) {
        return usage_error("invalid offset value specified: " + offset.why);
    }
    if (mode != 0) {
        say(fmt::format("{}: {}; use util-linux's `command fallocate` for it", rq.path, refused_reason(mode)));
        return exit_not_supported;
    }
    rq.length = *length.value;
    rq.offset = offset.value.value_or(0);
    if (rq.length > static_cast<std::uint64_t>(INT64_MAX) - rq.offset) {
        // util-linux hands this to the kernel: EFBIG, "fallocate failed: File too large".
        say(fmt::format("{}: [offset {}, length {}] ends past the largest file offset: File too large", rq.path,
                        rq.offset, rq.length));
        return exit_failure;
    }
    rq.what = zero_range ? action::zero_range : write_zeroes ? action::write_zeroes : action::allocate;
    return run(rq);
}

}  // namespace

// size_to_human_string(SIZE_SUFFIX_3LETTER | SIZE_SUFFIX_SPACE) of util-linux 2.38
// (lib/strutils.c), so that -v reads as fallocate's: "1 MiB", "1.5 KiB", "512 B".
std::string human_size(std::uint64_t bytes) {
    int exp = 10;
    for (; exp <= 60; exp += 10) {
        if (bytes < (1ULL << exp)) {
            break;
        }
    }
    exp -= 10;
    const char letter = "BKMGTPE"[exp != 0 ? exp / 10 : 0];
    std::uint64_t dec = exp != 0 ? bytes / (1ULL << exp) : bytes;
    std::uint64_t frac = exp != 0 ? bytes % (1ULL << exp) : 0;
    const std::string suffix = letter == 'B' ? " B" : fmt::format(" {}iB", letter);
    if (frac != 0) {
        if (frac >= UINT64_MAX / 1000) {
            frac = ((frac / 1024) * 1000) / (1ULL << (exp - 10));
        } else {
            frac = (frac * 1000) / (1ULL << exp);
        }
        frac = ((frac + 50) / 100) * 10;
        if (frac == 100) {
            dec++;
            frac = 0;
        }
    }
    if (frac == 0) {
        return fmt::format("{}{}", dec, suffix);
    }
    std::string text = fmt::format("{}.{:02}", dec, frac);
    if (text.back() == '0') {
        text.pop_back();
    }
    return text + suffix;
}

bool invoked_as_fallocate(const char* argv0) {
    if (argv0 == nullptr) {
        return false;
    }
    std::string_view name(argv0);
    if (const auto slash = name.rfind('/'); slash != std::string_view::npos) {
        name.remove_prefix(slash + 1);
    }
    return name == "wzero-fallocate" || name == "fallocate";
}

int run_fallocate(int argc, char** argv) {
    return parse_and_run(argc, argv);
}

}  // namespace wzcli

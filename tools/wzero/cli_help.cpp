// SPDX-License-Identifier: MIT
// --help and --version in util-linux's layout (include/c.h: USAGE_HEADER, USAGE_OPTIONS,
// USAGE_HELP_OPTIONS, USAGE_ARGUMENTS, USAGE_MAN_TAIL), built from the CLI11 definitions so
// that the text cannot drift from what the parser accepts.

#include "cli.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>
#include <vector>

namespace wzcli {

namespace {

// util-linux writes option descriptions in lower case ("length for range operations").
// Words that are upper case on purpose (NVMe, JSON, FUA) keep their capitals.
std::string lower_first(std::string text) {
    if (text.size() >= 2 && std::isupper(static_cast<unsigned char>(text[0])) != 0 &&
        std::islower(static_cast<unsigned char>(text[1])) != 0) {
        text[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(text[0])));
    }
    return text;
}

// CLI11 appends its validators' descriptions to the type name ("TEXT:{a,b}"): the label is
// the part before them, in util-linux's angle brackets.
std::string value_label(const CLI::Option* opt) {
    std::string t = opt->get_type_name();
    t = t.substr(0, t.find_first_of(": "));
    std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return "<" + (t.empty() ? std::string("arg") : t) + ">";
}

std::string option_names(const CLI::Option* opt) {
    std::string names;
    for (const auto& s : opt->get_snames()) {
        names += (names.empty() ? "-" : ", -") + s;
    }
    for (const auto& l : opt->get_lnames()) {
        names += (names.empty() ? "--" : ", --") + l;
    }
    if (opt->get_snames().empty()) {
        names = "    " + names;  // long-only options line up with the long names, as util-linux does
    }
    if (opt->get_expected_max() > 0) {
        names += opt->get_expected_min() == 0 ? "[=" + value_label(opt) + "]" : " " + value_label(opt);
    }
    return names;
}

// Descriptions wrap at 80 columns, continued under the description column.
std::string wrap(const std::string& text, std::size_t indent) {
    const std::size_t room = indent < 50 ? 80 - indent : 30;
    std::string out, line;
    std::size_t pos = 0;
    while (pos < text.size()) {
        std::size_t end = text.find(' ', pos);
        end = end == std::string::npos ? text.size() : end;
        const std::string word = text.substr(pos, end - pos);
        if (!line.empty() && line.size() + 1 + word.size() > room) {
            out += line + "\n" + std::string(indent, ' ');
            line.clear();
        }
        line += (line.empty() ? "" : " ") + word;
        pos = end + 1;
    }
    return out + line;
}

std::string columns(const std::vector<std::pair<std::string, std::string>>& rows) {
    std::size_t width = 0;
    for (const auto& r : rows) {
        width = std::max(width, r.first.size());
    }
    std::string out;
    for (const auto& r : rows) {
        if (r.first.empty() && r.second.empty()) {
            out += "\n";
        } else {
            out += fmt::format(" {:<{}}  {}\n", r.first, width, wrap(r.second, width + 3));
        }
    }
    return out;
}

std::string full_name(const CLI::App* app) {
    std::string name = app->get_name();
    for (const CLI::App* p = app->get_parent(); p != nullptr; p = p->get_parent()) {
        name = p->get_name() + " " + name;
    }
    return name;
}

class util_linux_help : public CLI::FormatterBase {
public:
    std::string make_help(const CLI::App* app, std::string /*name*/, CLI::AppFormatMode /*mode*/) const override {
        const auto subs = app->get_subcommands([](const CLI::App* s) { return !s->get_group().empty(); });
        std::vector<const CLI::Option*> opts, positionals;
        for (const CLI::Option* o : app->get_options()) {
            if (o == app->get_help_ptr() || o == app->get_version_ptr() || o->get_group().empty()) {
                continue;
            }
            (o->nonpositional() ? opts : positionals).push_back(o);
        }
        std::string usage = " " + full_name(app);
        if (!opts.empty()) {
            usage += " [options]";
        }
        if (!subs.empty()) {
            usage += " <command> [<args>]";
        }
        bool sizes = false;
        for (const CLI::Option* p : positionals) {
            const std::string n = "<" + p->get_name(true) + ">";
            usage += " " + (p->get_required() ? n : "[" + n + "]") + (p->get_items_expected_max() > 1 ? "..." : "");
        }
        std::string out = "\nUsage:\n" + usage + "\n\n";
        if (!app->get_description().empty()) {
            std::string d = app->get_description();
            out += d + (d.back() == '.' ? "\n" : ".\n");
        }
        if (!subs.empty()) {
            std::vector<std::pair<std::string, std::string>> rows;
            for (const CLI::App* s : subs) {
                rows.emplace_back(s->get_name(), lower_first(s->get_description()));
            }
            out += "\nCommands:\n" + columns(rows);
        }
        std::vector<std::pair<std::string, std::string>> rows;
        for (const CLI::Option* o : opts) {
            rows.emplace_back(option_names(o), lower_first(o->get_description()));
            sizes = sizes || value_label(o) == "<num>";
        }
        if (!rows.empty()) {
            rows.emplace_back("", "");
        }
        rows.emplace_back("-h, --help", "display this help");
        if (app->get_version_ptr() != nullptr) {
            rows.emplace_back("-V, --version", "display version");
        }
        out += "\nOptions:\n" + columns(rows);
        if (sizes) {
            out += "\nArguments:\n"
                   " <num> arguments may be followed by the suffixes for\n"
                   "   KiB (=1024), MiB, GiB, TiB, PiB, EiB, ZiB and YiB (the \"iB\" is optional),\n"
                   "   or KB (=1000), MB, GB, ... for powers of 1000\n";
        }
        const std::string footer = app->get_footer();
        if (!footer.empty()) {
            out += "\n" + footer + "\n";
        }
        out += "\nFor more details see wzero(1).\n";
        return out;
    }
};

}  // namespace

std::shared_ptr<CLI::FormatterBase> help_formatter() {
    return std::make_shared<util_linux_help>();
}

std::string version_text(const std::string& program) {
    return fmt::format("{} from wzero {}", program, wz::version());
}

}  // namespace wzcli

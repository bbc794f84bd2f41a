// SPDX-License-Identifier: MIT
// wz::writer::open(): the writer opened in a descriptor table of its own (so that its opens and
// closes keep the process's POSIX locks), its descriptors then carried into the process's.

#include "api/entry.hpp"
#include "util/errors.hpp"
#include "util/private_fd_table.hpp"
#include "util/unique_fd.hpp"
#include "writer/writer_impl.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>

#include <functional>
#include <memory>
#include <vector>

namespace wz {

namespace {

// The writer's descriptors, made in the call's own table, installed in the process's: its
// writes run on the caller's threads. Only a writer that opened carries any, so a failed open
// closed everything in the call's table, and the process kept its POSIX locks.
status adopt_in_caller(writer::impl& w, private_fd_table& table, fd_passage& passage) {
    std::vector<unique_fd*> slots;
    std::vector<int> fds;
    for (unique_fd* f : {&w.origin, &w.fd, &w.passthrough_fd}) {
        if (*f) {
            slots.push_back(f);
            fds.push_back(f->get());
        }
    }
    auto moved = passage.carry(table, fds, fmt::format("writer {}", w.path));
    if (!moved) {
        return std::move(moved).error();
    }
    for (std::size_t i = 0; i < slots.size(); ++i) {
        *slots[i] = unique_fd((*moved)[i]);  // closes the call table's own: no lock of the process's
    }
    return {};
}

// Both forms open, probe and close descriptors of the file in a table of their own (see
// util/private_fd_table.hpp), so that opening a writer keeps the process's POSIX locks.
// FD: the caller's descriptor the writer opens from (-1: by path).
result<std::unique_ptr<writer::impl>> open_in_private_table(const std::string& path, int fd,
                                     const std::function<result<std::unique_ptr<writer::impl>>()>& open_here) {
    const std::string what = fmt::format("writer {}", path);
    auto passage = fd_passage::make(what);
    if (!passage) {
        return passage.error();
    }
    return api::entry<result<std::unique_ptr<writer::impl>>>(
        what, {fd, passage->sender()}, [&](private_fd_table& table) -> result<std::unique_ptr<writer::impl>> {
            auto p = open_here();
            if (!p) {
                return p;
            }
            if (auto s = adopt_in_caller(**p, table, *passage); !s.ok()) {
                return std::move(s).error();
            }
            return p;
        });
}

}  // namespace

result<writer> writer::open(const std::string& path, std::uint64_t offset, std::uint64_t length,
                            const writer_options& options) {
    auto r = open_in_private_table(path, -1, [&] { return writer_detail::open_path(path, offset, length, options); });
    if (!r) {
        return r.error();
    }
    return writer(std::move(*r));
}

result<writer> writer::open(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                            const writer_options& options) {
    auto r = open_in_private_table(path, fd, [&] { return writer_detail::open_fd(fd, path, offset, length, options); });
    if (!r) {
        return r.error();
    }
    return writer(std::move(*r));
}

}  // namespace wz

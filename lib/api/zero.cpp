// SPDX-License-Identifier: MIT
// The zeroing calls: wz::preallocate(), wz::allocate() (zero/), wz::verify() (verify/), and the
// database file lifecycle: wz::zero_range(), wz::extend(), wz::rezero(), wz::create_zeroed()
// (db/). Each reopens and closes descriptors of the file (O_DIRECT writes, verification
// reads, probes): through the entry wrapper (api/entry.hpp).

#include "api/entry.hpp"
#include "db/lifecycle.hpp"
#include "util/reopen.hpp"
#include "verify/verify.hpp"
#include "zero/zero.hpp"

#include <wzero/wzero.hpp>

#include <fmt/format.h>

namespace wz {

result<preallocate_report> preallocate(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial) {
    return api::entry<result<preallocate_report>>(
        fmt::format("preallocate {}", path), {fd}, options,
        [&](const preallocate_options& o) { return zero::preallocate(fd, path, offset, length, o, partial); });
}

result<preallocate_report> preallocate(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                       const preallocate_options& options, preallocate_report* partial) {
    return api::entry<result<preallocate_report>>(
        fmt::format("preallocate {}", path), {}, options,
        [&](const preallocate_options& o) { return zero::preallocate(path, offset, length, o, partial); });
}

result<preallocate_report> allocate(int fd, const std::string& path, std::uint64_t offset, std::uint64_t length,
                                    const preallocate_options& options, preallocate_report* partial) {
    return api::entry<result<preallocate_report>>(
        fmt::format("allocate {}", path), {fd}, options,
        [&](const preallocate_options& o) { return zero::allocate(fd, path, offset, length, o, partial); });
}

result<preallocate_report> allocate(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                    const preallocate_options& options, preallocate_report* partial) {
    return api::entry<result<preallocate_report>>(
        fmt::format("allocate {}", path), {}, options,
        [&](const preallocate_options& o) { return zero::allocate(path, offset, length, o, partial); });
}

result<preallocate_report> verify(const std::string& path, std::uint64_t offset, std::uint64_t length,
                                  verify_mode mode, preallocate_report* partial) {
    preallocate_report rep;
    auto s = api::entry<status>(fmt::format("verify {}", path), {}, [&](private_fd_table&) {
        return verify_detail::verify_path(path, offset, length, mode, rep);
    });
    if (!s.ok()) {
        if (partial != nullptr) {
            *partial = std::move(rep);
        }
        return std::move(s).error();
    }
    return rep;
}

status zero_range(int fd, std::uint64_t offset, std::uint64_t length, const preallocate_options& options,
                  preallocate_report* report) {
    return api::entry<status>(fmt::format("zero_range {}", self_fd_name(fd)), {fd}, options,
                              [&](const preallocate_options& o) { return db::zero_range(fd, offset, length, o, report); });
}

status extend(int fd, std::uint64_t new_size, const preallocate_options& options, preallocate_report* report) {
    return api::entry<status>(fmt::format("extend {} to {} bytes", self_fd_name(fd), new_size), {fd}, options,
                              [&](const preallocate_options& o) { return db::extend(fd, new_size, o, report); });
}

status rezero(int fd, std::uint64_t offset, std::uint64_t length, const preallocate_options& options,
              preallocate_report* report) {
    return api::entry<status>(fmt::format("rezero {}", self_fd_name(fd)), {fd}, options,
                              [&](const preallocate_options& o) { return db::rezero(fd, offset, length, o, report); });
}

status create_zeroed(int dirfd, const std::string& path, std::uint64_t size, mode_t mode,
                     const preallocate_options& options, preallocate_report* report) {
    return api::entry<status>(fmt::format("create {}", path), {dirfd}, options, [&](const preallocate_options& o) {
        return db::create_zeroed(dirfd, path, size, mode, o, report);
    });
}

}  // namespace wz

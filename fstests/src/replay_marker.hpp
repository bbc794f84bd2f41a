// SPDX-License-Identifier: MIT
// Marker blocks of the write-log replay tests: one logical block written with
// O_DIRECT into a marker area of the device after an event (an acknowledgement), so that the
// device's write log says which events had happened before any of its points.
//   bytes 0-7 "WZMARK01", 8-15 INDEX (u64 LE), 16-19 LENGTH (u32 LE), then LENGTH bytes of
//   text ("TAG LINE"), the rest of the block zero.
// Written by `wz_replay mark` (lines of any program) and `wz_ackwrite write --mark-area`
// (from the acknowledging thread itself, right after the ack); read by `wz_replay check`.
#pragma once

#include <fcntl.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

namespace wzt {

inline constexpr char marker_magic[8] = {'W', 'Z', 'M', 'A', 'R', 'K', '0', '1'};
inline constexpr std::size_t marker_header = 8 + 8 + 4;

// Fills the block `b` of `lba` bytes; text longer than the block holds is cut (returns false).
inline bool encode_marker(unsigned char* b, std::size_t lba, std::uint64_t index, std::string text) {
    const bool whole = text.size() <= lba - marker_header;
    if (!whole) {
        text.resize(lba - marker_header);
    }
    std::memset(b, 0, lba);
    std::memcpy(b, marker_magic, sizeof marker_magic);
    for (int i = 0; i < 8; ++i) {
        b[8 + i] = static_cast<unsigned char>(index >> (8 * i));
    }
    for (int i = 0; i < 4; ++i) {
        b[16 + i] = static_cast<unsigned char>(text.size() >> (8 * i));
    }
    std::memcpy(b + marker_header, text.data(), text.size());
    return whole;
}

// The marker area [at, at + length) of a device (or image file), open with O_DIRECT; write()
// is safe from several threads (each marker its own block, the index from one counter).
class marker_area {
public:
    // Empty string on success, else why not.
    std::string open(const std::string& dev, std::uint64_t at, std::uint64_t length) {
        fd_ = ::open(dev.c_str(), O_WRONLY | O_DIRECT | O_CLOEXEC);
        if (fd_ < 0) {
            return "open " + dev + " O_DIRECT: " + std::strerror(errno);
        }
        struct stat st {};
        if (::fstat(fd_, &st) == 0 && S_ISBLK(st.st_mode)) {
            int ssz = 0;
            if (::ioctl(fd_, BLKSSZGET, &ssz) != 0 || ssz <= 0) {
                return "BLKSSZGET " + dev + ": " + std::strerror(errno);
            }
            lba_ = static_cast<std::uint64_t>(ssz);
        }
        if (at % lba_ != 0 || length % lba_ != 0 || length == 0) {
            return "marker area [" + std::to_string(at) + ", +" + std::to_string(length) + ") of " + dev +
                   " is not aligned to its " + std::to_string(lba_) + "-byte blocks";
        }
        dev_ = dev;
        at_ = at;
        slots_ = length / lba_;
        return {};
    }
    marker_area() = default;
    marker_area(const marker_area&) = delete;
    marker_area& operator=(const marker_area&) = delete;
    ~marker_area() {
        if (fd_ >= 0) {
            ::close(fd_);
        }
    }
    [[nodiscard]] bool is_open() const { return fd_ >= 0; }
    // Writes the next marker with `text`; empty string on success, else why not.
    std::string write(const std::string& text) {
        void* mem = nullptr;
        if (::posix_memalign(&mem, 4096, lba_) != 0) {
            return "out of memory";
        }
        std::unique_ptr<void, decltype(&std::free)> hold(mem, &std::free);
        const std::uint64_t index = next_++;
        encode_marker(static_cast<unsigned char*>(mem), lba_, index, text);
        const std::uint64_t off = at_ + (index % slots_) * lba_;
        for (;;) {
            const ssize_t n = ::pwrite(fd_, mem, lba_, static_cast<off_t>(off));
            if (n == static_cast<ssize_t>(lba_)) {
                return {};
            }
            if (n < 0 && errno == EINTR) {
                continue;
            }
            return "pwrite " + dev_ + " [offset " + std::to_string(off) + ", " + std::to_string(lba_) +
                   " bytes]: " + (n < 0 ? std::strerror(errno) : "short write");
        }
    }

private:
    int fd_ = -1;
    std::string dev_;
    std::uint64_t at_ = 0, lba_ = 512, slots_ = 1;
    std::atomic<std::uint64_t> next_{0};
};

}  // namespace wzt

// SPDX-License-Identifier: MIT
// The blocks wz_ackwrite writes and how an acknowledged one is checked: shared by
// `wz_ackwrite verify` (a device or file read back) and `wz_replay check --verify-acked` (each
// rebuilt image of a replay, in process: nvme/050 checks thousands of them).
//   A block is 4 KiB of 32-byte records "WZACKv1\0" RUN_ID SEQ OFFSET (u64 LE each).
//   An acknowledgement list has "open RUN_ID ..." and "ack SEQ OFFSET" lines (others ignored).
//   An extent map has "FILE_OFFSET DEVICE_OFFSET LENGTH" lines (bytes).
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <cstring>
#include <istream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

namespace wzt::ackwrite {

inline constexpr std::size_t block_bytes = 4096;
inline constexpr std::size_t record_bytes = 32;
inline constexpr char magic[8] = {'W', 'Z', 'A', 'C', 'K', 'v', '1', '\0'};

inline void put_u64(unsigned char* p, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        p[i] = static_cast<unsigned char>(v >> (8 * i));
    }
}

inline std::uint64_t get_u64(const unsigned char* p) {
    std::uint64_t v = 0;
    for (int i = 7; i >= 0; --i) {
        v = (v << 8) | p[i];
    }
    return v;
}

inline void fill_block(unsigned char* b, std::uint64_t run_id, std::uint64_t seq, std::uint64_t offset) {
    for (std::size_t r = 0; r < block_bytes; r += record_bytes) {
        std::memcpy(b + r, magic, sizeof magic);
        put_u64(b + r + 8, run_id);
        put_u64(b + r + 16, seq);
        put_u64(b + r + 24, offset);
    }
}

// What a block that is not the expected one holds, for the message.
inline std::string describe_block(const unsigned char* b) {
    bool zero = true;
    for (std::size_t i = 0; i < block_bytes && zero; ++i) {
        zero = b[i] == 0;
    }
    if (zero) {
        return "zeroes";
    }
    if (std::memcmp(b, magic, sizeof magic) != 0) {
        return "no pattern (first bytes not the magic)";
    }
    unsigned char first[record_bytes];
    std::memcpy(first, b, record_bytes);
    bool uniform = true;
    for (std::size_t r = record_bytes; r < block_bytes && uniform; r += record_bytes) {
        uniform = std::memcmp(b + r, first, record_bytes) == 0;
    }
    return fmt::format("{}pattern of run {:#x} seq {} offset {}", uniform ? "" : "torn block; first record: ",
                       get_u64(first + 8), get_u64(first + 16), get_u64(first + 24));
}

struct extent {
    std::uint64_t file, device, length;
};

// The map's lines; false when a line is not one or there is none.
inline bool parse_map(std::istream& in, std::vector<extent>& map) {
    extent e{};
    while (in >> e.file >> e.device >> e.length) {
        map.push_back(e);
    }
    return in.eof() && !map.empty();
}

struct ack {
    std::uint64_t seq, offset;
};
struct ack_list {
    std::optional<std::uint64_t> run_id;  // from the first "open" line
    std::vector<ack> acks;
    std::uint64_t malformed = 0;  // "ack" lines without two numbers
};

inline ack_list parse_acks(std::istream& in) {
    ack_list l;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream ls(line);
        std::string word;
        ls >> word;
        if (word == "open" && !l.run_id) {
            std::string id;
            ls >> id;
            l.run_id = std::stoull(id, nullptr, 0);
        } else if (word == "ack") {
            ack a{};
            if (ls >> a.seq >> a.offset) {
                l.acks.push_back(a);
            } else {
                l.malformed++;
            }
        }
    }
    return l;
}

struct verify_counts {
    std::uint64_t intact = 0, bad = 0;
};

// Reads every acknowledged block (through `map` when it is not empty) with
// read(buf, device_offset) -> error text or empty, into `buf` (block_bytes, aligned as the
// reader needs), and compares it with the pattern of run `run_id`; on_bad(ack, why) for each
// that does not hold it.
template <class Read, class OnBad>
verify_counts verify_acks(const std::vector<ack>& acks, std::uint64_t run_id, const std::vector<extent>& map,
                          unsigned char* buf, unsigned char* want, Read&& read, OnBad&& on_bad) {
    verify_counts n;
    for (const auto& a : acks) {
        std::uint64_t at = a.offset;
        std::string why;
        if (!map.empty()) {
            why = "not in the extent map";
            for (const auto& e : map) {
                if (a.offset >= e.file && a.offset - e.file + block_bytes <= e.length) {
                    at = e.device + (a.offset - e.file);
                    why.clear();
                    break;
                }
            }
        }
        if (why.empty()) {
            why = read(buf, at);
        }
        if (why.empty()) {
            fill_block(want, run_id, a.seq, a.offset);
            if (std::memcmp(buf, want, block_bytes) == 0) {
                n.intact++;
                continue;
            }
            why = "the block holds " + describe_block(buf);
        }
        n.bad++;
        on_bad(a, why);
    }
    return n;
}

}  // namespace wzt::ackwrite

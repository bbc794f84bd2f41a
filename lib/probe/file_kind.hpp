// SPDX-License-Identifier: MIT
#pragma once

// The type of file an entry point works on, decided once on the descriptor's st_mode.
// Internal code branches on file_kind; the public record keeps its `file_type` string
// ("regular" or "block", also in the JSON), converted here, at the edge.

#include <wzero/wzero.hpp>

#include <sys/types.h>

namespace wz {

enum class file_kind { regular, block, directory, fifo, char_device, socket, symlink, other };

[[nodiscard]] file_kind file_kind_of(mode_t mode) noexcept;

// The record's file_type: "regular" -> regular, "block" -> block, anything else -> other.
[[nodiscard]] file_kind file_kind_of(const capabilities& caps) noexcept;

// The record's name of a kind it can hold: "regular" or "block"; "" for the others, which
// never get a record.
[[nodiscard]] const char* record_name(file_kind kind) noexcept;

// "a FIFO", "a character device", ...: what a file of this kind is, for messages that
// refuse it.
[[nodiscard]] const char* describe(file_kind kind) noexcept;

}  // namespace wz

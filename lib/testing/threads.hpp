// SPDX-License-Identifier: MIT
// Unit tests only: counting this process's threads by name (/proc/self/task/*/comm), to check
// that no worker outlives what started it.
#pragma once

#include <chrono>
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <string>
#include <system_error>
#include <thread>

namespace wz::testing {

// Threads of this process named NAME (their comm, as pthread_setname_np set it).
inline std::size_t threads_named(const std::string& name) {
    std::size_t n = 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator("/proc/self/task", ec)) {
        std::ifstream comm(e.path() / "comm");
        std::string got;
        if (std::getline(comm, got) && got == name) {
            ++n;
        }
    }
    return n;
}

// threads_named(NAME) once it reaches WANT, or after 5 s. A joined thread may still be listed
// in /proc/self/task for a moment: pthread_join returns when the kernel clears the thread's
// tid (at its mm release), before the task is unhashed (seen under load: 1 where 0 was
// right). A thread that outlived its owner is still there after 5 s.
inline std::size_t threads_named_settled(const std::string& name, std::size_t want) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    std::size_t n = threads_named(name);
    while (n != want && std::chrono::steady_clock::now() < deadline) {
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
        n = threads_named(name);
    }
    return n;
}

}  // namespace wz::testing

// SPDX-License-Identifier: MIT
#pragma once

// wzero-fallocate: the same binary run under the name wzero-fallocate (or fallocate, through a
// link), taking util-linux fallocate's command line and doing written zeroes (wzero-fallocate(1)).

namespace wzcli {

// True when argv[0]'s last component is "wzero-fallocate" or "fallocate".
bool invoked_as_fallocate(const char* argv0);

// The program for that name: parsing, the run, messages and the exit status. main() does
// what both names share first (SIGXFSZ, the POSIX-lock note, the program name) and after
// (exceptions, util-linux's close_stdout).
int run_fallocate(int argc, char** argv);

}  // namespace wzcli

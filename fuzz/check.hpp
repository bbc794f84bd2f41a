// SPDX-License-Identifier: MIT
#pragma once

// The fuzz targets' assertion: a property that does not hold is a crash, so that libFuzzer
// keeps the input (crash-<sha1> under -artifact_prefix) and the run fails.

#include <cstdio>
#include <cstdlib>

#define FUZZ_CHECK(cond)                                                                        \
    do {                                                                                        \
        if (!(cond)) {                                                                          \
            std::fprintf(stderr, "fuzz: property failed at %s:%d: %s\n", __FILE__, __LINE__, #cond); \
            std::abort();                                                                       \
        }                                                                                       \
    } while (0)

/* SPDX-License-Identifier: MIT */
/* Included (-include) by the wzero VFS's sources when tools/sqlite-testsuite.sh compiles them
 * into SQLite's testfixture with -DWZS_DEFAULT_WAL_CHUNK_BYTES=wz_testfixture_wal_chunk_bytes:
 * the WAL chunk becomes a variable that sqlite_testfixture_init.c sets from the environment. */
#ifndef WZERO_SQLITE_TESTFIXTURE_INIT_H
#define WZERO_SQLITE_TESTFIXTURE_INIT_H
#include <stdint.h>
extern uint64_t wz_testfixture_wal_chunk_bytes;
#endif

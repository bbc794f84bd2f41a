/* SPDX-License-Identifier: MIT */
/* Linked into SQLite's own testfixture (tools/sqlite-testsuite.sh), together with the wzero
 * VFS's sources compiled with SQLITE_CORE, and named by -DSQLITE_EXTRA_INIT: SQLite calls it
 * at the end of every sqlite3_initialize(). With WZ_TESTFIXTURE_VFS=wzero in the environment
 * it registers the VFS "wzero" as the default, so that every database the test suite opens,
 * and every test VFS the suite stacks on "the default VFS", goes through it; without, it does
 * nothing and the same binary is SQLite's own testfixture. The suite shuts SQLite down and
 * initialises it again between tests (os_unix.c then makes "unix" the default again), so
 * this runs again each time.
 * WZ_TESTFIXTURE_WAL_CHUNK=BYTES replaces the VFS's default WAL chunk (the VFS's sources are
 * compiled with WZS_DEFAULT_WAL_CHUNK_BYTES naming the variable below): 0 grows every file
 * to exactly what SQLite writes, as the unix VFS does, so a case that fails with the chunk
 * and passes without fails only on the size of the preallocated WAL. */
#include "policy.h" /* the VFS's real default, before anything redefines it */

#include <sqlite3.h>

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

uint64_t wz_testfixture_wal_chunk_bytes = WZS_DEFAULT_WAL_CHUNK_BYTES;

int sqlite3_wzerosqlite_init(sqlite3* db, char** err, const sqlite3_api_routines* api);

int wz_testfixture_init(const char* unused);

int wz_testfixture_init(const char* unused) {
    const char* want = getenv("WZ_TESTFIXTURE_VFS");
    char* err = NULL;
    sqlite3_vfs* vfs;
    int rc;
    (void)unused;
    if (want == NULL || want[0] == '\0') {
        return SQLITE_OK;
    }
    if (strcmp(want, "wzero") != 0) {
        return SQLITE_ERROR;
    }
    const char* chunk = getenv("WZ_TESTFIXTURE_WAL_CHUNK");
    if (chunk != NULL && chunk[0] != '\0') {
        char* end = NULL;
        errno = 0;
        const unsigned long long v = strtoull(chunk, &end, 10);
        if (errno != 0 || *end != '\0' || chunk[0] < '0' || chunk[0] > '9') {
            return SQLITE_ERROR;
        }
        wz_testfixture_wal_chunk_bytes = v;
    }
    rc = sqlite3_wzerosqlite_init(NULL, &err, NULL);
    if (rc != SQLITE_OK && rc != SQLITE_OK_LOAD_PERMANENTLY) {
        sqlite3_free(err);
        return rc;
    }
    vfs = sqlite3_vfs_find("wzero");
    return vfs != NULL ? sqlite3_vfs_register(vfs, 1) : SQLITE_ERROR;
}

/* SPDX-License-Identifier: MIT */
/* The C API seen from C99 through the shared library: only exported symbols link. */
#define _POSIX_C_SOURCE 200809L /* mkstemp, unlink, close */

#include <wzero/wzero.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

static void check(int cond, const char *what) {
    if (!cond) {
        fprintf(stderr, "FAILED: %s\n", what);
        failures++;
    }
}

int main(int argc, char **argv) {
    char err[256];
    char *json = NULL;
    int rc;
    if (argc != 2) {
        fprintf(stderr, "usage: %s REGULAR_FILE\n", argv[0]);
        return 2;
    }
    check(strlen(wz_version()) > 0, "wz_version is not empty");

    rc = wz_stat_json(argv[1], &json, err, sizeof err);
    check(rc == 0, "wz_stat_json on a regular file succeeds");
    check(json != NULL && strstr(json, "\"recommended_method\"") != NULL, "the JSON has recommended_method");
    check(json != NULL && strstr(json, "\"file_type\": \"regular\"") != NULL, "the JSON says regular");
    wz_free(json);

    json = NULL;
    rc = wz_stat_json("/nonexistent/wzero-capi", &json, err, sizeof err);
    check(rc == -ENOENT, "a missing path gives -ENOENT");
    check(json == NULL, "no JSON on failure");
    check(strstr(err, "/nonexistent/wzero-capi") != NULL, "the message names the path");

    rc = wz_stat_json("/", &json, err, sizeof err);
    check(rc == -EISDIR, "a directory gives -EISDIR");

    rc = wz_stat_json(NULL, &json, err, sizeof err);
    check(rc == -EINVAL, "NULL path gives -EINVAL");

    /* Regression: a name that is not UTF-8 aborted the process inside the JSON encoder.
     * Its bytes come back as \xNN (a backslash in the string, so "\\xff" in the JSON text). */
    {
        char name[] = "/tmp/wzero-capi-\xff\x80-XXXXXX";
        int fd = mkstemp(name);
        check(fd >= 0, "mkstemp of a non-UTF-8 name");
        if (fd >= 0) {
            json = NULL;
            rc = wz_stat_json(name, &json, err, sizeof err);
            check(rc == 0, "wz_stat_json on a non-UTF-8 name succeeds");
            check(json != NULL && strstr(json, "wzero-capi-\\\\xff\\\\x80-") != NULL,
                  "the name's bytes are escaped as \\xNN");
            wz_free(json);
            (void)close(fd);
            (void)unlink(name);
        }
    }

    if (failures == 0) {
        printf("capi: all checks passed\n");
    }
    return failures == 0 ? 0 : 1;
}

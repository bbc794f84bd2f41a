/* The C API seen from C99 through the shared library: only exported symbols link. */
#include <wzero/wzero.h>

#include <errno.h>
#include <stdio.h>
#include <string.h>

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

    if (failures == 0) {
        printf("capi: all checks passed\n");
    }
    return failures == 0 ? 0 : 1;
}

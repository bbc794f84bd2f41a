/* SPDX-License-Identifier: MIT */
/* wzero: written, zeroed extents and durable writes for Linux storage.
 * The stable C API. Compiles as C99 and as C++. */
#ifndef WZERO_WZERO_H
#define WZERO_WZERO_H

#ifdef __cplusplus
extern "C" {
#endif

/* The version of the library in use, "MAJOR.MINOR.PATCH". */
const char *wz_version(void);

/* Probe PATH (a regular file or a block device) and return its capability record
 * as a JSON document (the same document as `wzero stat --json`) in *json_out,
 * to be released with wz_free(). Returns 0, or a negative errno value; then, if
 * errbuf is not NULL, a message naming the path and the operation is written to it. */
int wz_stat_json(const char *path, char **json_out, char *errbuf, unsigned long errbuf_len);

/* Release memory returned by the library. */
void wz_free(void *p);

#ifdef __cplusplus
}
#endif

#endif /* WZERO_WZERO_H */

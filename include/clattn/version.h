/* SPDX-License-Identifier: MIT */
/* clattn version: the one place the version and the library's API number
 * live. meson.build reads these with cc.get_define() (and fails when its
 * project version disagrees), so the soname follows them. */
#ifndef CLATTN_VERSION_H
#define CLATTN_VERSION_H

#define CLATTN_VERSION_MAJOR 0
#define CLATTN_VERSION_MINOR 2
#define CLATTN_VERSION_PATCH 0

/* The API and ABI: the major is bumped on every incompatible change (it is
 * the soname, libclattn.so.MAJOR), the minor when functions or fields are
 * added compatibly. */
#define CLATTN_API_VERSION_MAJOR 1
#define CLATTN_API_VERSION_MINOR 6
/* Major and minor in one number, (major << 16) | minor, comparable with
 * clattn_api_version(). */
#define CLATTN_API_VERSION ((CLATTN_API_VERSION_MAJOR << 16) | CLATTN_API_VERSION_MINOR)
#define CLATTN_API_MAJOR_OF(v) ((unsigned)(v) >> 16)
#define CLATTN_API_MINOR_OF(v) ((unsigned)(v) & 0xffffu)

#endif /* CLATTN_VERSION_H */

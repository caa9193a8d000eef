/* clattn version: the one place the version and the library's ABI number live.
 * meson.build reads these with cc.get_define(), so the soname follows them. */
#ifndef CLATTN_VERSION_H
#define CLATTN_VERSION_H

#define CLATTN_VERSION_MAJOR 0
#define CLATTN_VERSION_MINOR 1
#define CLATTN_VERSION_PATCH 0

/* Bumped on every incompatible change to the public ABI. */
#define CLATTN_API_VERSION_MAJOR 0

#endif /* CLATTN_VERSION_H */

/*
 * oxblosc_plugin.h: the C ABI of compiled oxblosc plugins (version 1).
 *
 * A plugin is a shared library exporting one function, `oxblosc_plugin_entry`, that returns
 * a pointer to a static `oxb_library`: the ABI version it was written for and the codecs and
 * filters it provides, each with its Blosc2 id. oxblosc loads the library the first time a
 * chunk needs one of those ids (never unloads it) and calls the functions from several
 * threads at once, each call with its own buffers: they must be thread-safe.
 * The full contract is in docs/plugins.md of the oxblosc repository.
 */
#ifndef OXBLOSC_PLUGIN_H
#define OXBLOSC_PLUGIN_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The ABI version this header describes. `abi_version` stays the first field in every
 * future version, so a mismatch is always detected and reported, never misread. */
#define OXBLOSC_PLUGIN_ABI_VERSION 1

/* `oxb_plugin.kind` */
#define OXB_CODEC 0
#define OXB_FILTER 1

/* Most dimensions of a b2nd block shape. */
#define OXB_MAX_DIMS 8

/* What a codec or filter gets to know about the block it works on. */
typedef struct oxb_params {
  uint8_t clevel;        /* compression level 0-9 (0 when decoding and for filters) */
  uint8_t meta;          /* codec: the chunk's codec_meta; filter: its slot's filters_meta */
  uint16_t reserved0;    /* 0 */
  uint32_t typesize;     /* item size recorded in the chunk (1 when the real one is > 255) */
  uint64_t block;        /* index of the block in its chunk */
  uint32_t ndim;         /* dimensions of the b2nd block shape; 0 outside b2nd arrays */
  uint32_t reserved1;    /* 0 */
  uint64_t blockshape[OXB_MAX_DIMS]; /* items per dimension (first `ndim` entries) */
} oxb_params;

/*
 * One direction of a codec or filter: read `src_len` bytes at `src`, write into `dst`,
 * which holds `dst_cap` bytes (zeroed when decoding). Never write past `dst_cap`.
 * Return (anything else fails the chunk with an error naming the library, the id and
 * the block; oxblosc checks every size before using a byte of the output):
 *   codec encode:     bytes written, 1..dst_cap; 0 = "does not compress" (stored raw)
 *   codec decode:     bytes written, exactly dst_cap (the block's size is known)
 *   filter forward,
 *   filter backward:  exactly dst_cap (== src_len: filters keep the block's length)
 *   any of them:      a negative error code (see `error_message`)
 */
typedef int64_t (*oxb_transform)(const uint8_t *src, size_t src_len, uint8_t *dst, size_t dst_cap,
                                 const oxb_params *params);

/* One codec or filter. */
typedef struct oxb_plugin {
  uint8_t kind;          /* OXB_CODEC or OXB_FILTER */
  uint8_t id;            /* Blosc2 id: 32-159 Blosc-registered plugins, 160-255 user plugins */
  uint8_t version;       /* format version (codecs: written to chunk headers) */
  uint8_t reserved;      /* 0 */
  const char *name;      /* 1-63 characters of [A-Za-z0-9_.-], NUL-terminated */
  oxb_transform encode;  /* codec: encode; filter: forward */
  oxb_transform decode;  /* codec: decode; filter: backward */
} oxb_plugin;

/* What `oxblosc_plugin_entry` returns: static data, valid for the life of the process. */
typedef struct oxb_library {
  uint32_t abi_version;        /* OXBLOSC_PLUGIN_ABI_VERSION */
  uint32_t nplugins;           /* entries in `plugins` (at most 512: a codec and a filter per id) */
  const oxb_plugin *plugins;
  /* Text for a negative return code (static, NUL-terminated), or NULL; may itself be NULL. */
  const char *(*error_message)(int64_t code);
} oxb_library;

/* The one symbol oxblosc looks up. */
#define OXBLOSC_PLUGIN_ENTRY oxblosc_plugin_entry
typedef const oxb_library *(*oxb_entry_fn)(void);

#if defined(_WIN32)
#define OXB_EXPORT __declspec(dllexport)
#else
#define OXB_EXPORT __attribute__((visibility("default")))
#endif

#ifdef __cplusplus
}
#endif

#endif /* OXBLOSC_PLUGIN_H */

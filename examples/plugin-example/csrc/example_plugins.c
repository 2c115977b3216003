/*
 * Compiled plugins of the example package, written against oxblosc_plugin.h (ABI 1):
 *
 *   codec 252 "rle_c":       byte runs as (count, byte) pairs, count 1-255;
 *   filter 253 "plus_one_c": +1 on every little-endian int64 going in, -1 coming out
 *                             (the Python filter 250 in C).
 *
 * Built into oxblosc_plugin_example/liboxblosc_example.so by the package's build backend.
 * Every function is pure (no globals), so oxblosc may call it from many threads at once.
 */
#include <string.h>

#include "oxblosc_plugin.h"

#define ERR_NOT_INT64 (-2)
#define ERR_CORRUPT (-3)

static int64_t rle_encode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, const oxb_params *p) {
  size_t out = 0;
  if (p->clevel == 0) return 0; /* level 0: store as is */
  for (size_t i = 0; i < n;) {
    size_t run = 1;
    while (i + run < n && run < 255 && src[i + run] == src[i]) run++;
    if (out + 2 > cap) return 0; /* does not compress */
    dst[out++] = (uint8_t)run;
    dst[out++] = src[i];
    i += run;
  }
  return (int64_t)out;
}

static int64_t rle_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, const oxb_params *p) {
  size_t out = 0;
  (void)p;
  if (n % 2 != 0) return ERR_CORRUPT;
  for (size_t i = 0; i < n; i += 2) {
    size_t run = src[i];
    if (run == 0 || out + run > cap) return ERR_CORRUPT;
    memset(dst + out, src[i + 1], run);
    out += run;
  }
  return (int64_t)out;
}

/* Add `delta` to each 8-byte little-endian integer (wrapping). */
static int64_t add_int64(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, const oxb_params *p,
                         uint64_t delta) {
  if (p->typesize != 8 || n % 8 != 0 || cap != n) return ERR_NOT_INT64;
  for (size_t i = 0; i < n; i += 8) {
    uint64_t v = 0;
    for (int b = 7; b >= 0; b--) v = (v << 8) | src[i + (size_t)b];
    v += delta;
    for (int b = 0; b < 8; b++) dst[i + (size_t)b] = (uint8_t)(v >> (8 * b));
  }
  return (int64_t)n;
}

static int64_t plus_one_forward(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, const oxb_params *p) {
  return add_int64(src, n, dst, cap, p, 1);
}

static int64_t plus_one_backward(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, const oxb_params *p) {
  return add_int64(src, n, dst, cap, p, (uint64_t)-1);
}

static const char *error_message(int64_t code) {
  switch (code) {
    case ERR_NOT_INT64: return "plus_one_c works on int64 data only (typesize 8)";
    case ERR_CORRUPT: return "corrupt run-length stream";
    default: return NULL;
  }
}

static const oxb_plugin plugins[] = {
    {OXB_CODEC, 252, 1, 0, "rle_c", rle_encode, rle_decode},
    {OXB_FILTER, 253, 1, 0, "plus_one_c", plus_one_forward, plus_one_backward},
};

static const oxb_library library = {OXBLOSC_PLUGIN_ABI_VERSION, 2, plugins, error_message};

OXB_EXPORT const oxb_library *OXBLOSC_PLUGIN_ENTRY(void) { return &library; }

/*
 * A test plugin library that misbehaves on request (crates/oxblosc-chunk/tests/native_plugins.rs).
 *
 * codec 200 "tail_zeros": payload = 4-byte length + the block without its trailing zeros.
 *   The chunk's codec_meta picks a misbehaviour: 1 encode reports cap + 1 bytes, 2 encode
 *   fails (-5, with a message), 3 decode reports one byte short, 4 decode fails (-7, no
 *   message), 5 decode reports INT64_MAX bytes, 6 encode fails on block 2 only, with a code
 *   that spells the parameters it got: -(100000 + 10000 * ndim + 10 * last block edge + typesize).
 * filter 201 "neg": bytes negated (0 stays 0). filters_meta 1: forward reports one byte short; 2: backward
 *   fails (-5).
 * filter 35 "fake_bytedelta" (a built-in id), filter 202 "late" (the test registers 202
 * first), codec 9 "reserved" (Blosc's range): for the collision tests.
 * Built variants: -DABI_VERSION=N (another ABI), -DNO_ENTRY (no entry symbol), -DNULL_DESC
 * (entry returns NULL), -DBAD_NAME (a name with a space).
 */
#include <string.h>

#include "oxblosc_plugin.h"

#ifndef ABI_VERSION
#define ABI_VERSION OXBLOSC_PLUGIN_ABI_VERSION
#endif

static int64_t tz_encode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, const oxb_params *p) {
  size_t len = n;
  if (p->meta == 1) return (int64_t)cap + 1;
  if (p->meta == 2) return -5;
  if (p->meta == 6 && p->block == 2)
    return -(int64_t)(100000 + 10000 * p->ndim + 10 * (p->ndim ? p->blockshape[p->ndim - 1] : 0) + p->typesize);
  while (len > 0 && src[len - 1] == 0) len--;
  if (len + 4 > cap) return 0;
  for (int b = 0; b < 4; b++) dst[b] = (uint8_t)(len >> (8 * b));
  memcpy(dst + 4, src, len);
  return (int64_t)(len + 4);
}

static int64_t tz_decode(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, const oxb_params *p) {
  size_t len = 0;
  if (p->meta == 4) return -7;
  if (p->meta == 5) return INT64_MAX;
  if (n < 4) return -3;
  for (int b = 3; b >= 0; b--) len = (len << 8) | src[b];
  if (len != n - 4 || len > cap) return -3;
  memcpy(dst, src + 4, len);
  memset(dst + len, 0, cap - len);
  return p->meta == 3 ? (int64_t)cap - 1 : (int64_t)cap;
}

static int64_t neg_forward(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, const oxb_params *p) {
  for (size_t i = 0; i < n && i < cap; i++) dst[i] = (uint8_t)(0u - src[i]);
  return p->meta == 1 ? (int64_t)n - 1 : (int64_t)n;
}

static int64_t neg_backward(const uint8_t *src, size_t n, uint8_t *dst, size_t cap, const oxb_params *p) {
  if (p->meta == 2) return -5;
  for (size_t i = 0; i < n && i < cap; i++) dst[i] = (uint8_t)(0u - src[i]);
  return (int64_t)n;
}

static const char *message(int64_t code) { return code == -5 ? "asked to fail" : NULL; }

#ifdef BAD_NAME
#define TZ_NAME "tail zeros"
#else
#define TZ_NAME "tail_zeros"
#endif

static const oxb_plugin plugins[] = {
    {OXB_CODEC, 200, 3, 0, TZ_NAME, tz_encode, tz_decode},
    {OXB_FILTER, 201, 1, 0, "neg", neg_forward, neg_backward},
    {OXB_FILTER, 35, 1, 0, "fake_bytedelta", neg_forward, neg_backward},
    {OXB_FILTER, 202, 1, 0, "late", neg_forward, neg_backward},
    {OXB_CODEC, 9, 1, 0, "reserved", tz_encode, tz_decode},
};

static const oxb_library library = {ABI_VERSION, sizeof plugins / sizeof plugins[0], plugins, message};

#ifdef NO_ENTRY
OXB_EXPORT const oxb_library *some_other_symbol(void) { return &library; }
#else
OXB_EXPORT const oxb_library *OXBLOSC_PLUGIN_ENTRY(void) {
#ifdef NULL_DESC
  (void)&library;
  return NULL;
#else
  return &library;
#endif
}
#endif

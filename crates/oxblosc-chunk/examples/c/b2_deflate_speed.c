/* C-Blosc2 side of examples/zlib_deflate_speed.rs: the zlib-ng inside python-blosc2's libblosc2
 * deflating 256 KiB blocks of a raw file (decision 0008). Needs the wheel's static libblosc2.a,
 * where zlib-ng's functions are reachable (`make native-peer` builds it into target/native-peer/):
 *   ./b2_deflate_speed FILE [level] [rounds]      prints the best round */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
/* zlib-ng 2.3's native stream (zlib-ng.h; the wheel ships no zlib-ng header). */
typedef struct {
  const uint8_t* next_in; uint32_t avail_in; size_t total_in;
  uint8_t* next_out; uint32_t avail_out; size_t total_out;
  const char* msg; void* state; void *zalloc, *zfree, *opaque;
  int data_type; uint32_t adler; unsigned long reserved;
} zng_stream;
int32_t zng_deflateInit2(zng_stream* s, int32_t level, int32_t method, int32_t bits, int32_t mem, int32_t strategy);
int32_t zng_deflateReset(zng_stream* s);
int32_t zng_deflate(zng_stream* s, int32_t flush);
enum { Z_FINISH = 4, Z_STREAM_END = 1 };
int main(int argc, char** argv) {
  FILE* f = fopen(argv[1], "rb"); fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
  uint8_t* src = malloc(n); if (fread(src, 1, n, f) != (size_t)n) return 1; fclose(f);
  int level = argc > 2 ? atoi(argv[2]) : 5, rounds = argc > 3 ? atoi(argv[3]) : 5;
  const long block = 256 << 10; uint8_t* out = malloc(block + 4096);
  zng_stream* s = calloc(1, 4096); /* room to spare: only its address is handed over */
  if (zng_deflateInit2(s, level, 8, 15, 8, 0) != 0) return 1;
  double best = 1e30; long total = 0;
  for (int r = 0; r < rounds; r++) {
    struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a); total = 0;
    for (long at = 0; at < n; at += block) {
      long len = n - at < block ? n - at : block;
      zng_deflateReset(s); s->next_in = src + at; s->avail_in = len; s->next_out = out; s->avail_out = len;
      total += zng_deflate(s, Z_FINISH) == Z_STREAM_END ? (long)s->total_out : len; /* else stored */
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    double t = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9; if (t < best) best = t;
  }
  printf("%s: level %d: C-Blosc2's zlib-ng %.1f ms (%ld B)\n", argv[1], level, best * 1e3, total);
  return 0;
}

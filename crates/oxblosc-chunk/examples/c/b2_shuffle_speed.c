/* C-Blosc2 side of examples/shuffle_speed.rs: blosc2_shuffle/unshuffle of a cached block written
 * block after block over a chunk-sized destination. Build as b2_decode_loop.c:
 *   ./b2_shuffle_speed [block KiB] [chunk MiB] [reps] */
#include <blosc2.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
static double now(){struct timespec t;clock_gettime(CLOCK_MONOTONIC,&t);return t.tv_sec+t.tv_nsec*1e-9;}
int main(int argc, char** argv) {
  size_t bs = (argc>1?atoi(argv[1]):256) << 10, total = (size_t)(argc>2?atoi(argv[2]):8) << 20; int reps = argc>3?atoi(argv[3]):20;
  unsigned char* src = malloc(bs); char* dst = calloc(total, 1);
  for (size_t i = 0; i < bs; i++) src[i] = (unsigned char)((i * 2654435761u) >> 13);
  int es[] = {2,3,4,5,6,7,8,12,16,24,32};
  blosc2_init();
  for (int k = 0; k < 11; k++) { int e = es[k]; int32_t b = bs - bs % e; printf("e=%2d", e);
    for (int m = 0; m < 2; m++) { double t = now();
      for (int r = 0; r < reps; r++) for (size_t o = 0; o + bs <= total; o += bs)
        if (m == 0) blosc2_shuffle(e, b, src, dst + o); else blosc2_unshuffle(e, b, src, dst + o);
      printf("  %s %6.2f GB/s", m ? "unshuffle" : "shuffle", (double)total * reps / (now() - t) / 1e9); }
    printf("\n"); }
  blosc2_destroy(); return 0; }

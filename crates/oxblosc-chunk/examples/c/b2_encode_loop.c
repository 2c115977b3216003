/* C-Blosc2 side of examples/encode_file.rs: compress one raw file in a loop with python-blosc2's own
 * libblosc2 (1 thread, one context), for perf/callgrind next to ours. Build against the wheel:
 *   B=.venv/lib/python3.11/site-packages/blosc2
 *   gcc -O2 -I$B/include b2_encode_loop.c -L$B/lib -lblosc2 -Wl,-rpath,$PWD/$B/lib -o b2_encode_loop
 *   ./b2_encode_loop FILE CODEC CLEVEL FILTER TYPESIZE [reps]   (ids as in encode_file.rs) */
#include <blosc2.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char** argv) {
  FILE* f = fopen(argv[1], "rb"); fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
  char* s = malloc(n); if (fread(s, 1, n, f) != (size_t)n) return 1; fclose(f);
  int reps = argc > 6 ? atoi(argv[6]) : 50;
  blosc2_init();
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  cp.compcode = atoi(argv[2]); cp.clevel = atoi(argv[3]); cp.filters[BLOSC2_MAX_FILTERS - 1] = atoi(argv[4]);
  cp.typesize = atoi(argv[5]); cp.nthreads = 1;
  blosc2_context* ctx = blosc2_create_cctx(cp);
  int cap = n + BLOSC2_MAX_OVERHEAD; int r = 0;
  struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < reps; i++) {
    /* A fresh output per call, as python-blosc2's compress2 and our compress() do. */
    char* d = malloc(cap); r = blosc2_compress_ctx(ctx, s, n, d, cap); free(d);
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double t = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
  printf("%.3f ms per call, %.2f GB/s, %d bytes\n", t * 1e3 / reps, (double)n * reps / t / 1e9, r);
  blosc2_free_ctx(ctx); blosc2_destroy(); return 0;
}

/* C-Blosc2 side of examples/decode_file.rs: decode one chunk file in a loop with python-blosc2's own
 * libblosc2 (1 thread, one context). Build against the wheel:
 *   B=.venv/lib/python3.11/site-packages/blosc2
 *   gcc -O2 -I$B/include b2_decode_loop.c -L$B/lib -lblosc2 -Wl,-rpath,$PWD/$B/lib -o b2_decode_loop
 *   ./b2_decode_loop CHUNK [reps] [into|fresh]   (fresh: a new malloc per call) */
#include <blosc2.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
int main(int argc, char** argv) {
  FILE* f = fopen(argv[1], "rb"); fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
  char* c = malloc(n); fread(c, 1, n, f); fclose(f);
  int reps = argc > 2 ? atoi(argv[2]) : 100; int fresh = argc > 3 && argv[3][0] == 'f';
  blosc2_init();
  blosc2_dparams dp = BLOSC2_DPARAMS_DEFAULTS; dp.nthreads = 1;
  blosc2_context* ctx = blosc2_create_dctx(dp);
  int32_t nbytes, cbytes, bs; blosc2_cbuffer_sizes(c, &nbytes, &cbytes, &bs);
  char* d = malloc(nbytes);
  struct timespec a, b; clock_gettime(CLOCK_MONOTONIC, &a);
  for (int i = 0; i < reps; i++) {
    if (fresh) { char* o = malloc(nbytes); blosc2_decompress_ctx(ctx, c, n, o, nbytes); free(o); }
    else if (blosc2_decompress_ctx(ctx, c, n, d, nbytes) != nbytes) { puts("fail"); return 1; }
  }
  clock_gettime(CLOCK_MONOTONIC, &b);
  double s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9;
  printf("%.3f ms per call, %.2f GB/s\n", s * 1e3 / reps, (double)nbytes * reps / s / 1e9);
  blosc2_free_ctx(ctx); blosc2_destroy(); return 0;
}

/* C-Blosc2 side of examples/decode_file.rs: decode one chunk file in a loop with python-blosc2's own
 * libblosc2 (1 thread, one context). `make native-peer` builds it against the wheel's static
 * libblosc2.a (symbols, for perf) into target/native-peer/; by hand:
 *   B=.venv/lib/python3.11/site-packages/blosc2
 *   gcc -O2 -I$B/include b2_decode_loop.c $B/lib/libblosc2.a -lpthread -lm -ldl -o b2_decode_loop
 *   ./b2_decode_loop CHUNK [reps] [into|fresh] [trash_mib] [RAW CODEC CLEVEL FILTER TYPESIZE]
 * fresh: a new malloc per call. trash_mib: dirty that many MiB of another buffer before each call;
 * RAW...: compress that file (ids as in encode_file.rs) before each call, the decode right after
 * a compression of decision 0011. With either, the median call is printed, as decode_file does. */
#include <blosc2.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + t.tv_nsec * 1e-9; }
static int by_value(const void* a, const void* b) { double x = *(const double*)a, y = *(const double*)b; return (x > y) - (x < y); }
static char* slurp(const char* path, long* n) {
  FILE* f = fopen(path, "rb"); if (!f) { fprintf(stderr, "cannot open %s\n", path); exit(2); }
  fseek(f, 0, SEEK_END); *n = ftell(f); fseek(f, 0, SEEK_SET);
  char* s = malloc(*n + 1); if (fread(s, 1, *n, f) != (size_t)*n) { fprintf(stderr, "short read\n"); exit(2); }
  fclose(f); return s;
}
int main(int argc, char** argv) {
  long n; char* c = slurp(argv[1], &n);
  int reps = argc > 2 ? atoi(argv[2]) : 100; int fresh = argc > 3 && argv[3][0] == 'f';
  long trash_len = argc > 4 ? atol(argv[4]) << 20 : 0;
  blosc2_init();
  blosc2_dparams dp = BLOSC2_DPARAMS_DEFAULTS; dp.nthreads = 1;
  blosc2_context* ctx = blosc2_create_dctx(dp);
  int32_t nbytes, cbytes, bs; blosc2_cbuffer_sizes(c, &nbytes, &cbytes, &bs);
  char* d = malloc(nbytes); memset(d, 1, nbytes);
  char* trash = calloc(trash_len + 1, 1);
  long raw_len = 0; char *raw = NULL, *packed = NULL; blosc2_context* cctx = NULL;
  if (argc > 9) {
    raw = slurp(argv[5], &raw_len); packed = malloc(raw_len + BLOSC2_MAX_OVERHEAD);
    blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
    cp.compcode = atoi(argv[6]); cp.clevel = atoi(argv[7]); cp.filters[BLOSC2_MAX_FILTERS - 1] = atoi(argv[8]);
    cp.typesize = atoi(argv[9]); cp.nthreads = 1;
    cctx = blosc2_create_cctx(cp);
  }
  double* calls = malloc(sizeof(double) * reps);
  double start = now();
  for (int i = 0; i < reps; i++) {
    for (long k = 0; k < trash_len; k += 64) trash[k]++;
    if (cctx) blosc2_compress_ctx(cctx, raw, raw_len, packed, raw_len + BLOSC2_MAX_OVERHEAD);
    double t = now();
    if (fresh) { char* o = malloc(nbytes); blosc2_decompress_ctx(ctx, c, n, o, nbytes); free(o); }
    else if (blosc2_decompress_ctx(ctx, c, n, d, nbytes) != nbytes) { puts("fail"); return 1; }
    calls[i] = now() - t;
  }
  double s = now() - start;
  if (trash_len == 0 && !cctx) printf("%.3f ms per call, %.2f GB/s\n", s * 1e3 / reps, (double)nbytes * reps / s / 1e9);
  qsort(calls, reps, sizeof(double), by_value);
  printf("median call %.3f ms, min %.3f ms\n", calls[reps / 2] * 1e3, calls[0] * 1e3);
  blosc2_free_ctx(ctx); blosc2_destroy(); return 0;
}

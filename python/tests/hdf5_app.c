/* A plain C HDF5 application for the plugin tests: it knows nothing of oxblosc and finds the
 * Blosc2 (32026) and Blosc (32001) filters on HDF5_PLUGIN_PATH.
 *
 *   hdf5_app write FILE        create "b2" (20x30x7 float32, chunks 8x16x4, Blosc2 zstd +
 *                              shuffle) and "b1" (1000 int64, chunks 300, Blosc lz4), values
 *                              b2[i] = i * 0.5 and b1[i] = i * 3 in C order
 *   hdf5_app read FILE NAME OUT  read dataset NAME as native float32 (b2-like) or int64
 *                              (anything else) and write its raw bytes to OUT
 * Exit status 0 on success; HDF5 prints its error stack otherwise. */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int write_file(const char *path) {
    hid_t f = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    if (f < 0) return 1;
    hsize_t dims[3] = {20, 30, 7}, chunk[3] = {8, 16, 4};
    /* cd_values as hdf5plugin passes them: set_local fills slots 0-3 and the dims. */
    unsigned cd2[7] = {0, 0, 0, 0, 5, 1, 5};
    hid_t space = H5Screate_simple(3, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (H5Pset_chunk(dcpl, 3, chunk) < 0) return 1;
    if (H5Pset_filter(dcpl, 32026, H5Z_FLAG_OPTIONAL, 7, cd2) < 0) return 1;
    hid_t d = H5Dcreate2(f, "b2", H5T_IEEE_F32LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0) return 1;
    size_t n = 20 * 30 * 7;
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = (float)i * 0.5f;
    if (H5Dwrite(d, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) < 0) return 1;
    free(v);
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(space);

    hsize_t dims1[1] = {1000}, chunk1[1] = {300};
    unsigned cd1[7] = {0, 0, 0, 0, 5, 1, 1};
    space = H5Screate_simple(1, dims1, NULL);
    dcpl = H5Pcreate(H5P_DATASET_CREATE);
    if (H5Pset_chunk(dcpl, 1, chunk1) < 0) return 1;
    if (H5Pset_filter(dcpl, 32001, H5Z_FLAG_OPTIONAL, 7, cd1) < 0) return 1;
    d = H5Dcreate2(f, "b1", H5T_STD_I64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (d < 0) return 1;
    long long w[1000];
    for (int i = 0; i < 1000; i++) w[i] = (long long)i * 3;
    if (H5Dwrite(d, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, w) < 0) return 1;
    H5Dclose(d);
    H5Pclose(dcpl);
    H5Sclose(space);
    return H5Fclose(f) < 0;
}

static int read_file(const char *path, const char *name, const char *out) {
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return 1;
    hid_t d = H5Dopen2(f, name, H5P_DEFAULT);
    if (d < 0) return 1;
    hid_t space = H5Dget_space(d);
    hssize_t n = H5Sget_simple_extent_npoints(space);
    int is_float = H5Tget_class(H5Dget_type(d)) == H5T_FLOAT;
    size_t item = is_float ? sizeof(float) : sizeof(long long);
    void *buf = malloc((size_t)n * item);
    if (H5Dread(d, is_float ? H5T_NATIVE_FLOAT : H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf) < 0) return 1;
    FILE *o = fopen(out, "wb");
    if (!o || fwrite(buf, item, (size_t)n, o) != (size_t)n) return 1;
    fclose(o);
    free(buf);
    H5Sclose(space);
    H5Dclose(d);
    return H5Fclose(f) < 0;
}

int main(int argc, char **argv) {
    if (argc == 3 && strcmp(argv[1], "write") == 0) return write_file(argv[2]);
    if (argc == 5 && strcmp(argv[1], "read") == 0) return read_file(argv[2], argv[3], argv[4]);
    fprintf(stderr, "usage: hdf5_app write FILE | hdf5_app read FILE NAME OUT\n");
    return 2;
}

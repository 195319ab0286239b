/* Direct chunk I/O: H5Dwrite_chunk and H5Dread_chunk (and the high-level H5DOwrite_chunk,
 * which calls H5Dwrite_chunk) on a 2-D chunked dataset of 4 x 4 chunks of 16 x 16 bytes,
 * through the default (sec2) driver: each chunk is one pwrite or pread of 256 bytes beneath.
 *
 * usage: hdf5_chunks FILE
 * Exit code 0 when every call succeeded and each chunk read back as written. */
#include <hdf5.h>
#include <hdf5_hl.h>
#include <stdio.h>
#include <string.h>

#define CHUNK 16

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    hsize_t dims[2] = {4 * CHUNK, 4 * CHUNK}, chunk[2] = {CHUNK, CHUNK};
    hid_t file = H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hid_t space = H5Screate_simple(2, dims, NULL);
    hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    /* Chunks are allocated as they are written, at their first write. */
    hid_t dset = H5Dcreate2(file, "chunks", H5T_NATIVE_UCHAR, space, H5P_DEFAULT, dcpl,
                            H5P_DEFAULT);
    if (file < 0 || space < 0 || dcpl < 0 || dset < 0) return 3;
    unsigned char buf[CHUNK * CHUNK], back[CHUNK * CHUNK];
    /* Chunks (0,0), (0,16), (16,0) by H5Dwrite_chunk, (16,16) by H5DOwrite_chunk. */
    hsize_t at[4][2] = {{0, 0}, {0, CHUNK}, {CHUNK, 0}, {CHUNK, CHUNK}};
    for (int i = 0; i < 4; i++) {
        memset(buf, 'a' + i, sizeof buf);
        herr_t e = i < 3 ? H5Dwrite_chunk(dset, H5P_DEFAULT, 0, at[i], sizeof buf, buf)
                         : H5DOwrite_chunk(dset, H5P_DEFAULT, 0, at[i], sizeof buf, buf);
        if (e < 0) return 10 + i;
    }
    for (int i = 0; i < 4; i++) {
        uint32_t filters = 1;
        if (H5Dread_chunk(dset, H5P_DEFAULT, at[i], &filters, back) < 0) return 20 + i;
        memset(buf, 'a' + i, sizeof buf);
        if (filters != 0 || memcmp(buf, back, sizeof buf)) return 30 + i;
    }
    H5Dclose(dset);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(file);
    return 0;
}

/* Questions asked of an HDF5 file, as h5py asks them (`name in group` is H5Lexists and
 * H5Oexists_by_name, `name in obj.attrs` H5Aexists, `len(group)` H5Gget_info, the type of
 * what it opens H5Oget_info), named datatypes, and the start of SWMR writing. HDF5 reads the
 * file to answer a question its metadata cache cannot.
 *
 * Writes FILE (latest format): group "g" holding N datasets d0..d{N-1} of 4 ints each;
 * datatypes committed as "t" (H5Tcommit2), "t1" (H5Tcommit1) and anonymously
 * (H5Tcommit_anon); attribute "a" on the root group. Closes it, opens it read-only (nothing
 * of it cached), and asks, in this order, each once:
 *   H5Lexists(f, "g/d3") = 1, H5Lexists(f, "g/none") = 0, H5Oexists_by_name(f, "g/d3") = 1,
 *   H5Aexists(f, "a") = 1, H5Aexists_by_name(f, "g", "a") = 0, H5Gget_info(f): 3 links,
 *   H5Gget_info_by_name(f, "g"): N links, H5Oget_info1(f): a group,
 *   H5Oget_info2(f, basic): a group, H5Oget_info_by_name1(f, "t"): a named datatype,
 *   H5Oget_info_by_name2(f, "g/d1", basic): a dataset,
 *   H5Oget_info_by_idx2(f, "g", by name, increasing, 0, basic): a dataset (d0).
 * Then opens the named datatypes, H5Topen2(f, "t") (8 bytes) and H5Topen1(f, "t1") (4 bytes),
 * each closed by H5Tclose.
 * Closes it, opens it for writing and calls H5Fstart_swmr_write, then closes it.
 * Every call and answer is checked; any failure exits 2.
 * Usage: hdf5_queries FILE N */
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>

/* The 1.8-style info H5Oget_info1 and 2 fill (named H5O_info1_t from 1.12 on). */
#if H5_VERSION_GE(1, 12, 0)
typedef H5O_info1_t info1_t;
#else
typedef H5O_info_t info1_t;
#endif

#define OK(x) do { if ((x) < 0) exit(2); } while (0)
#define IS(x, v) do { if ((x) != (v)) exit(2); } while (0)

static hid_t must(hid_t id) {
    if (id < 0) exit(2);
    return id;
}

int main(int argc, char **argv) {
    if (argc != 3) return 1;
    unsigned long n = strtoul(argv[2], NULL, 10);
    hid_t fapl = must(H5Pcreate(H5P_FILE_ACCESS));
    OK(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));

    hid_t f = must(H5Fcreate(argv[1], H5F_ACC_TRUNC, H5P_DEFAULT, fapl));
    hid_t g = must(H5Gcreate2(f, "g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    hsize_t four = 4;
    int data[4] = {1, 2, 3, 4};
    hid_t space = must(H5Screate_simple(1, &four, NULL));
    for (unsigned long i = 0; i < n; i++) {
        char name[32];
        snprintf(name, sizeof name, "d%lu", i);
        hid_t d = must(H5Dcreate2(g, name, H5T_NATIVE_INT, space, H5P_DEFAULT, H5P_DEFAULT,
                                  H5P_DEFAULT));
        OK(H5Dwrite(d, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
        OK(H5Dclose(d));
    }
    OK(H5Gclose(g));
    hid_t t = must(H5Tcopy(H5T_NATIVE_DOUBLE));
    OK(H5Tcommit2(f, "t", t, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Tclose(t));
    t = must(H5Tcopy(H5T_NATIVE_FLOAT));
    OK(H5Tcommit1(f, "t1", t));
    OK(H5Tclose(t));
    t = must(H5Tcopy(H5T_NATIVE_INT));
    OK(H5Tcommit_anon(f, t, H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Tclose(t));
    hid_t scalar = must(H5Screate(H5S_SCALAR));
    hid_t a = must(H5Acreate2(f, "a", H5T_NATIVE_INT, scalar, H5P_DEFAULT, H5P_DEFAULT));
    OK(H5Awrite(a, H5T_NATIVE_INT, data));
    OK(H5Aclose(a));
    OK(H5Sclose(scalar));
    OK(H5Sclose(space));
    OK(H5Fclose(f));

    f = must(H5Fopen(argv[1], H5F_ACC_RDONLY, fapl));
    IS(H5Lexists(f, "g/d3", H5P_DEFAULT), 1);
    IS(H5Lexists(f, "g/none", H5P_DEFAULT), 0);
    IS(H5Oexists_by_name(f, "g/d3", H5P_DEFAULT), 1);
    IS(H5Aexists(f, "a"), 1);
    IS(H5Aexists_by_name(f, "g", "a", H5P_DEFAULT), 0);
    H5G_info_t ginfo;
    OK(H5Gget_info(f, &ginfo));
    IS(ginfo.nlinks, 3);
    OK(H5Gget_info_by_name(f, "g", &ginfo, H5P_DEFAULT));
    IS(ginfo.nlinks, n);
    info1_t info;
    OK(H5Oget_info1(f, &info));
    IS(info.type, H5O_TYPE_GROUP);
    OK(H5Oget_info2(f, &info, H5O_INFO_BASIC));
    IS(info.type, H5O_TYPE_GROUP);
    OK(H5Oget_info_by_name1(f, "t", &info, H5P_DEFAULT));
    IS(info.type, H5O_TYPE_NAMED_DATATYPE);
    OK(H5Oget_info_by_name2(f, "g/d1", &info, H5O_INFO_BASIC, H5P_DEFAULT));
    IS(info.type, H5O_TYPE_DATASET);
    OK(H5Oget_info_by_idx2(f, "g", H5_INDEX_NAME, H5_ITER_INC, 0, &info, H5O_INFO_BASIC,
                           H5P_DEFAULT));
    IS(info.type, H5O_TYPE_DATASET);
    hid_t named = must(H5Topen2(f, "t", H5P_DEFAULT));
    IS(H5Tget_size(named), 8);
    OK(H5Tclose(named));
    named = must(H5Topen1(f, "t1"));
    IS(H5Tget_size(named), 4);
    OK(H5Tclose(named));
    OK(H5Fclose(f));

    f = must(H5Fopen(argv[1], H5F_ACC_RDWR, fapl));
    OK(H5Fstart_swmr_write(f));
    OK(H5Fclose(f));
    OK(H5Pclose(fapl));
    return 0;
}

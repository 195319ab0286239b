"""h5py, whose wheel brings its own HDF5 (a build named libhdf5-<hash>.so.<version>), loaded when
h5py is imported. Writes FILE: group "g", dataset "g/d" of N int32 (0..N-1) with attribute
"units", and dataset "anon" of N int32 (N-1..0) by `f["anon"] = array` (h5py makes it by
H5Dcreate_anon, writes it, then links it by H5Olink); closes it; reads "g/d" back in 10 slices
of N/10 values and the attribute, and checks them. h5py opens objects by H5Oopen and closes
every id by H5Idec_ref.

Usage: python3 h5py_objects.py FILE N"""
import sys

import h5py
import numpy as np

path, n = sys.argv[1], int(sys.argv[2])
with h5py.File(path, "w") as f:
    d = f.create_group("g").create_dataset("d", data=np.arange(n, dtype="i4"))
    d.attrs["units"] = "m"
    f["anon"] = np.arange(n, dtype="i4")[::-1]
with h5py.File(path, "r") as f:
    d = f["g/d"]
    step = n // 10
    for i in range(10):
        part = d[i * step:(i + 1) * step]
        if list(part) != list(range(i * step, (i + 1) * step)):
            sys.exit(2)
    if d.attrs["units"] != "m":
        sys.exit(2)

! A Fortran MPI job's I/O through Fortran's own interfaces: MPI-IO through the mpi_f08
! module, parallel HDF5 through HDF5's Fortran module (with -DWITH_HDF5), and the Fortran
! runtime's I/O on rank 0. The bindings call the C functions strata probes; nothing of
! Fortran's own is probed.
!
! Usage: fortran_io DIR. Each rank r of N:
!   DIR/mpi.dat: MPI_File_write_at_all of 1024 integers at r*4096, MPI_File_write_at of 512
!     at (N+r)*4096, then (after a sync and a barrier) MPI_File_read_at_all of rank r+1's
!     1024 integers at ((r+1) mod N)*4096, checked;
!   DIR/f.h5 (WITH_HDF5): dataset "x" of 100*N doubles, rank r's 100 at 100*r written
!     collectively with H5Dwrite, then read back independently with H5Dread, checked;
!   DIR/plain.bin (rank 0): 4 unformatted stream writes of 100 doubles, 3,200 bytes.

module dat_io
  implicit none
  private
  public :: dat_write_read
contains
  subroutine dat_write_read(dir)
    use mpi_f08
    character(len=*), intent(in) :: dir
    type(MPI_File) :: fh
    type(MPI_Status) :: st
    integer :: rank, nprocs, n, buf(1024), back(1024)
    integer(kind=MPI_OFFSET_KIND) :: block

    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
    buf = rank
    block = 4096
    call MPI_File_open(MPI_COMM_WORLD, dir//'/mpi.dat', MPI_MODE_CREATE + MPI_MODE_RDWR, &
                       MPI_INFO_NULL, fh)
    call MPI_File_write_at_all(fh, rank*block, buf, 1024, MPI_INTEGER, st)
    call MPI_File_write_at(fh, (nprocs + rank)*block, buf, 512, MPI_INTEGER, st)
    call MPI_File_sync(fh)
    call MPI_Barrier(MPI_COMM_WORLD)
    call MPI_File_sync(fh)
    call MPI_File_read_at_all(fh, mod(rank + 1, nprocs)*block, back, 1024, MPI_INTEGER, st)
    call MPI_Get_count(st, MPI_INTEGER, n)
    if (n /= 1024 .or. any(back /= mod(rank + 1, nprocs))) error stop 'mpi.dat read back'
    call MPI_File_close(fh)
  end subroutine
end module

#ifdef WITH_HDF5
module hdf5_io
  implicit none
  private
  public :: hdf5_write_read
contains
  subroutine hdf5_write_read(dir)
    use mpi
    use hdf5
    character(len=*), intent(in) :: dir
    integer(hid_t) :: fapl, file, space, mem, dset, dxpl
    integer(hsize_t) :: dims(1), count(1), start(1)
    integer :: rank, nprocs, ierr, herr
    real(8) :: x(100), back(100)

    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
    x = rank
    call h5open_f(herr)
    call h5pcreate_f(H5P_FILE_ACCESS_F, fapl, herr)
    call h5pset_fapl_mpio_f(fapl, MPI_COMM_WORLD, MPI_INFO_NULL, herr)
    call h5fcreate_f(dir//'/f.h5', H5F_ACC_TRUNC_F, file, herr, access_prp=fapl)
    dims(1) = 100*nprocs
    count(1) = 100
    start(1) = 100*rank
    call h5screate_simple_f(1, dims, space, herr)
    call h5dcreate_f(file, 'x', H5T_NATIVE_DOUBLE, space, dset, herr)
    call h5sselect_hyperslab_f(space, H5S_SELECT_SET_F, start, count, herr)
    call h5screate_simple_f(1, count, mem, herr)
    call h5pcreate_f(H5P_DATASET_XFER_F, dxpl, herr)
    call h5pset_dxpl_mpio_f(dxpl, H5FD_MPIO_COLLECTIVE_F, herr)
    call h5dwrite_f(dset, H5T_NATIVE_DOUBLE, x, count, herr, file_space_id=space, &
                    mem_space_id=mem, xfer_prp=dxpl)
    if (herr /= 0) error stop 'h5dwrite_f'
    call h5dread_f(dset, H5T_NATIVE_DOUBLE, back, count, herr, file_space_id=space, &
                   mem_space_id=mem)
    if (herr /= 0 .or. any(back /= rank)) error stop 'f.h5 read back'
    call h5pclose_f(dxpl, herr)
    call h5sclose_f(mem, herr)
    call h5sclose_f(space, herr)
    call h5dclose_f(dset, herr)
    call h5fclose_f(file, herr)
    call h5pclose_f(fapl, herr)
    call h5close_f(herr)
  end subroutine
end module
#endif

program fortran_io
  use mpi_f08, only: MPI_Init, MPI_Finalize, MPI_Comm_rank, MPI_COMM_WORLD
  use dat_io
#ifdef WITH_HDF5
  use hdf5_io
#endif
  implicit none
  character(len=4096) :: dir
  integer :: rank, u, i
  real(8) :: x(100)

  call get_command_argument(1, dir)
  if (len_trim(dir) == 0) error stop 'usage: fortran_io DIR'
  call MPI_Init()
  call MPI_Comm_rank(MPI_COMM_WORLD, rank)
  call dat_write_read(trim(dir))
#ifdef WITH_HDF5
  call hdf5_write_read(trim(dir))
#endif
  if (rank == 0) then
    x = 1.5d0
    open(newunit=u, file=trim(dir)//'/plain.bin', form='unformatted', access='stream', &
         status='replace')
    do i = 1, 4
      write(u) x
    end do
    close(u)
  end if
  call MPI_Finalize()
end program

! A Fortran 90 program over efarm, built with MPICH's mpifort (use mpi):
! every rank sends an array of doubles round a ring (3 elements, then 2**17,
! which takes the long subprotocols), checks every element, and the ranks
! agree on a sum with MPI_Allreduce. Prints "lang_fortran: OK (N ranks)" on
! rank 0 when every check passed; stops with code 1 otherwise.
program lang_fortran
    use mpi
    implicit none
    integer :: rank, nprocs, ierr, to, from, n, i, k, bad, all_bad
    integer :: sizes(2)
    double precision, allocatable :: sendbuf(:), recvbuf(:)
    integer :: mine, total

    call MPI_Init(ierr)
    call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
    to = mod(rank + 1, nprocs)
    from = mod(rank + nprocs - 1, nprocs)
    sizes = (/ 3, 131072 /)
    bad = 0
    do k = 1, 2
        n = sizes(k)
        allocate(sendbuf(n), recvbuf(n))
        do i = 1, n
            sendbuf(i) = rank * 1.0d6 + i
        end do
        recvbuf = -1.0d0
        call MPI_Sendrecv(sendbuf, n, MPI_DOUBLE_PRECISION, to, 7, recvbuf, n, &
                          MPI_DOUBLE_PRECISION, from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE, ierr)
        do i = 1, n
            if (recvbuf(i) /= from * 1.0d6 + i) then
                write (0, '(a,i0,a)') 'lang_fortran: rank ', rank, ': ring data differs'
                bad = bad + 1
                exit
            end if
        end do
        deallocate(sendbuf, recvbuf)
    end do
    mine = rank + 1
    call MPI_Allreduce(mine, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (total /= nprocs * (nprocs + 1) / 2) then
        write (0, '(a,i0,a)') 'lang_fortran: rank ', rank, ': allreduce sum differs'
        bad = bad + 1
    end if
    call MPI_Allreduce(bad, all_bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
    if (rank == 0 .and. all_bad == 0) write (*, '(a,i0,a)') 'lang_fortran: OK (', nprocs, ' ranks)'
    call MPI_Finalize(ierr)
    if (all_bad /= 0) stop 1
end program lang_fortran

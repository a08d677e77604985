! The same through the Fortran 2008 bindings (use mpi_f08), built with mpifort:
! a ring of 2**17 doubles and an allreduce, every element checked. Prints
! "lang_f08: OK (N ranks)" on rank 0 when every check passed; stops with code 1
! otherwise.
program lang_f08
    use mpi_f08
    implicit none
    integer :: rank, nprocs, to, from, i, bad, all_bad
    integer, parameter :: n = 131072
    double precision :: sendbuf(n), recvbuf(n)

    call MPI_Init()
    call MPI_Comm_rank(MPI_COMM_WORLD, rank)
    call MPI_Comm_size(MPI_COMM_WORLD, nprocs)
    to = mod(rank + 1, nprocs)
    from = mod(rank + nprocs - 1, nprocs)
    do i = 1, n
        sendbuf(i) = rank * 1.0d6 + i
    end do
    recvbuf = -1.0d0
    call MPI_Sendrecv(sendbuf, n, MPI_DOUBLE_PRECISION, to, 7, recvbuf, n, MPI_DOUBLE_PRECISION, &
                      from, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE)
    bad = 0
    do i = 1, n
        if (recvbuf(i) /= from * 1.0d6 + i) then
            write (0, '(a,i0,a)') 'lang_f08: rank ', rank, ': ring data differs'
            bad = 1
            exit
        end if
    end do
    call MPI_Allreduce(bad, all_bad, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD)
    if (rank == 0 .and. all_bad == 0) write (*, '(a,i0,a)') 'lang_f08: OK (', nprocs, ' ranks)'
    call MPI_Finalize()
    if (all_bad /= 0) stop 1
end program lang_f08

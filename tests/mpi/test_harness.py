"""The harness itself at every process count."""

from mpi4py import MPI


def test_allreduce_of_ranks():
    comm = MPI.COMM_WORLD
    n = comm.size
    assert comm.allreduce(comm.rank) == n * (n - 1) // 2


def test_barrier_and_gather(comm):
    comm.Barrier()
    ranks = comm.allgather(comm.rank)
    assert ranks == list(range(comm.size))

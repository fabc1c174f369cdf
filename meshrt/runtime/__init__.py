"""What runs underneath every other part of meshrt: the MPI layer and the process's own settings.

``malloc`` tunes glibc's allocator at import; ``mpiexec`` finds an MPI's launcher and spells a job
for it; ``mpi`` is the only door to mpi4py (communicators of device groups, datatypes, reduction
ops, and ``internal(...)``, the name of each MPI call meshrt makes on its own behalf); ``check`` is
``MESHRT_CHECK``'s agreement of operations and arguments across processes; ``watchdog`` reports a
process stuck in an MPI call (``MESHRT_TIMEOUT``); ``heartbeat`` ends a job whose host, link or
rank is lost (a helper process per rank, beating over UDP outside MPI).  The faces that use them (`meshrt.launch`,
`meshrt.testing`, the ``meshrt`` command) sit at the top of the package.
"""

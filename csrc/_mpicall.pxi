# The declarations of _mpicall.h and the function that fills its table, for
# ``include "_mpicall.pxi"`` (each module that includes it has a table of its own).

cdef extern from "_mpicall.h" nogil:
    int MF_COUNT
    int meshrt_hs
    void meshrt_set(int i, size_t addr)
    int meshrt_ready()
    int meshrt_allreduce(const void *s, void *r, int n, size_t dt, size_t op, size_t c)
    int meshrt_iallreduce(const void *s, void *r, int n, size_t dt, size_t op, size_t c, void *req)
    int meshrt_reduce(const void *s, void *r, int n, size_t dt, size_t op, int root, size_t c)
    int meshrt_ireduce(const void *s, void *r, int n, size_t dt, size_t op, int root, size_t c, void *req)
    int meshrt_reduce_scatter_block(const void *s, void *r, int n, size_t dt, size_t op, size_t c)
    int meshrt_ireduce_scatter_block(const void *s, void *r, int n, size_t dt, size_t op, size_t c, void *req)
    int meshrt_bcast(void *b, int n, size_t dt, int root, size_t c)
    int meshrt_ibcast(void *b, int n, size_t dt, int root, size_t c, void *req)
    int meshrt_allgather(const void *s, int sn, void *r, int rn, size_t dt, size_t c)
    int meshrt_iallgather(const void *s, int sn, void *r, int rn, size_t dt, size_t c, void *req)
    int meshrt_alltoall(const void *s, int sn, void *r, int rn, size_t dt, size_t c)
    int meshrt_ialltoall(const void *s, int sn, void *r, int rn, size_t dt, size_t c, void *req)
    int meshrt_gather(const void *s, int sn, void *r, int rn, size_t dt, int root, size_t c)
    int meshrt_igather(const void *s, int sn, void *r, int rn, size_t dt, int root, size_t c, void *req)
    int meshrt_scatter(const void *s, int sn, void *r, int rn, size_t dt, int root, size_t c)
    int meshrt_iscatter(const void *s, int sn, void *r, int rn, size_t dt, int root, size_t c, void *req)
    int meshrt_allgatherv(const void *s, int sn, void *r, const int *rc, const int *rd, size_t dt, size_t c)
    int meshrt_iallgatherv(const void *s, int sn, void *r, const int *rc, const int *rd, size_t dt, size_t c,
                           void *req)
    int meshrt_alltoallv(const void *s, const int *sc, const int *sd, void *r, const int *rc, const int *rd,
                         size_t dt, size_t c)
    int meshrt_ialltoallv(const void *s, const int *sc, const int *sd, void *r, const int *rc, const int *rd,
                          size_t dt, size_t c, void *req)
    int meshrt_gatherv(const void *s, int sn, void *r, const int *rc, const int *rd, size_t dt, int root, size_t c)
    int meshrt_igatherv(const void *s, int sn, void *r, const int *rc, const int *rd, size_t dt, int root, size_t c,
                        void *req)
    int meshrt_scatterv(const void *s, const int *sc, const int *sd, void *r, int rn, size_t dt, int root, size_t c)
    int meshrt_iscatterv(const void *s, const int *sc, const int *sd, void *r, int rn, size_t dt, int root, size_t c,
                         void *req)
    int meshrt_reduce_scatter(const void *s, void *r, const int *rc, size_t dt, size_t op, size_t c)
    int meshrt_ireduce_scatter(const void *s, void *r, const int *rc, size_t dt, size_t op, size_t c, void *req)
    int meshrt_sendrecv(const void *s, int sn, int dst, int stag, void *r, int rn, int src, int rtag, size_t dt,
                        size_t c)
    int meshrt_send(const void *b, int n, size_t dt, int dst, int tag, size_t c)
    int meshrt_recv(void *b, int n, size_t dt, int src, int tag, size_t c)
    int meshrt_isend(const void *b, int n, size_t dt, int dst, int tag, size_t c, void *req)
    int meshrt_irecv(void *b, int n, size_t dt, int src, int tag, size_t c, void *req)
    int meshrt_waitall(int n, void *reqs)
    int meshrt_waitall_n(int n, void *reqs, void *st)
    int MESHRT_STATUS_BYTES
    int meshrt_testall(int n, void *reqs, int *flag)
    int meshrt_startall(int n, void *reqs)
    int meshrt_barrier(size_t c)

# in the order of _mpicall.h's MF_* indices
_MPI_NAMES = ("MPI_Allreduce", "MPI_Iallreduce", "MPI_Reduce", "MPI_Ireduce", "MPI_Reduce_scatter_block",
              "MPI_Ireduce_scatter_block", "MPI_Bcast", "MPI_Ibcast", "MPI_Allgather", "MPI_Iallgather",
              "MPI_Gather", "MPI_Igather", "MPI_Scatter", "MPI_Iscatter", "MPI_Alltoall", "MPI_Ialltoall",
              "MPI_Sendrecv", "MPI_Send", "MPI_Recv", "MPI_Isend", "MPI_Irecv", "MPI_Waitall", "MPI_Testall",
              "MPI_Barrier", "MPI_Allgatherv", "MPI_Iallgatherv", "MPI_Alltoallv", "MPI_Ialltoallv",
              "MPI_Gatherv", "MPI_Igatherv", "MPI_Scatterv", "MPI_Iscatterv", "MPI_Reduce_scatter",
              "MPI_Ireduce_scatter", "MPI_Startall")


def _mpi_library():
    """The ``ctypes.CDLL`` of the MPI library mpi4py loaded (the first mapped library named
    like one that has ``MPI_Allreduce``), or None."""
    import ctypes
    import os

    try:
        with open("/proc/self/maps") as f:
            # (rpartition: these modules turn negative indexing off)
            paths = sorted({line.rpartition(" ")[2].strip() for line in f if ".so" in line})
    except OSError:
        return None
    for path in paths:
        if "mpi" in os.path.basename(path).lower() and "mpi4py" not in path:
            try:
                lib = ctypes.CDLL(path)
                lib.MPI_Allreduce
                return lib
            except (OSError, AttributeError):
                continue
    return None


cdef int _mpicall_init() except -1:
    """Fill this module's table from the loaded MPI library; 1 when every entry point was found
    and mpi4py's handles are 4 bytes or a pointer wide, else 0 (mpi4py's path then)."""
    import ctypes

    from mpi4py import MPI

    global meshrt_hs
    if len(_MPI_NAMES) != MF_COUNT:
        raise AssertionError("_mpicall.pxi and _mpicall.h disagree on the MPI functions")
    size = MPI._sizeof(MPI.Comm)
    if size not in (4, sizeof(void *)) or any(MPI._sizeof(t) != size for t in (MPI.Datatype, MPI.Op, MPI.Request)):
        return 0
    lib = _mpi_library()
    if lib is None:
        return 0
    for i, name in enumerate(_MPI_NAMES):
        try:
            meshrt_set(i, ctypes.cast(getattr(lib, name), ctypes.c_void_p).value or 0)
        except AttributeError:
            return 0
    meshrt_hs = size
    return meshrt_ready()

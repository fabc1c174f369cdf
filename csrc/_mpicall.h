/* MPI calls through the addresses of the MPI library mpi4py loaded, without mpi.h.
 *
 * One build serves every MPI ABI mpi4py runs on: MPICH's (Intel MPI's too) has 32-bit
 * int handles, Open MPI's pointer handles.  Handles travel as size_t (mpi4py's
 * MPI._handleof) and each call casts them to the type of the ABI found at run time
 * (meshrt_hs: 4 or the pointer size).  Requests are stored packed, meshrt_hs bytes each,
 * so an array of them is an MPI_Request array of either ABI; statuses are never read and
 * go to a buffer larger than either ABI's MPI_Status (MPICH 20 bytes, Open MPI 24).
 *
 * Each including module has its own table; it fills meshrt_fn[] with meshrt_set and
 * meshrt_hs, and checks meshrt_ready() before any call.
 */
#ifndef MESHRT_MPICALL_H
#define MESHRT_MPICALL_H

#include <stddef.h>
#include <stdint.h>

enum {
    MF_ALLREDUCE, MF_IALLREDUCE, MF_REDUCE, MF_IREDUCE, MF_REDUCE_SCATTER_BLOCK, MF_IREDUCE_SCATTER_BLOCK,
    MF_BCAST, MF_IBCAST, MF_ALLGATHER, MF_IALLGATHER, MF_GATHER, MF_IGATHER, MF_SCATTER, MF_ISCATTER,
    MF_ALLTOALL, MF_IALLTOALL, MF_SENDRECV, MF_SEND, MF_RECV, MF_ISEND, MF_IRECV, MF_WAITALL, MF_TESTALL,
    MF_BARRIER, MF_ALLGATHERV, MF_IALLGATHERV, MF_ALLTOALLV, MF_IALLTOALLV, MF_GATHERV, MF_IGATHERV,
    MF_SCATTERV, MF_ISCATTERV, MF_REDUCE_SCATTER, MF_IREDUCE_SCATTER, MF_STARTALL, MF_COUNT
};

static void *meshrt_fn[MF_COUNT];
static int meshrt_hs = 0;

#define MESHRT_STATUS_BYTES 64  /* per status: room for either ABI's MPI_Status */

static inline void meshrt_set(int i, size_t addr) { if (i >= 0 && i < MF_COUNT) meshrt_fn[i] = (void *)addr; }
static inline int meshrt_ready(void) {
    for (int i = 0; i < MF_COUNT; i++) if (!meshrt_fn[i]) return 0;
    return meshrt_hs == 4 || meshrt_hs == (int)sizeof(void *);
}

typedef const void *CV;
#define H4(h) ((int)(h))
#define HP(h) ((void *)(h))
/* CALL(index, (arg types, int handles), (arg types, pointer handles), (args, int), (args, pointer)) */
#define MESHRT_CALL(I, T4, TP, A4, AP) \
    (meshrt_hs == 4 ? ((int (*) T4)meshrt_fn[I]) A4 : ((int (*) TP)meshrt_fn[I]) AP)
#define REQ(r, k) ((void *)((char *)(r) + (size_t)(k) * (size_t)meshrt_hs))

static inline int meshrt_allreduce(CV s, void *r, int n, size_t dt, size_t op, size_t c) {
    return MESHRT_CALL(MF_ALLREDUCE, (CV, void *, int, int, int, int), (CV, void *, int, void *, void *, void *),
                       (s, r, n, H4(dt), H4(op), H4(c)), (s, r, n, HP(dt), HP(op), HP(c)));
}
static inline int meshrt_iallreduce(CV s, void *r, int n, size_t dt, size_t op, size_t c, void *req) {
    return MESHRT_CALL(MF_IALLREDUCE, (CV, void *, int, int, int, int, void *),
                       (CV, void *, int, void *, void *, void *, void *),
                       (s, r, n, H4(dt), H4(op), H4(c), req), (s, r, n, HP(dt), HP(op), HP(c), req));
}
static inline int meshrt_reduce(CV s, void *r, int n, size_t dt, size_t op, int root, size_t c) {
    return MESHRT_CALL(MF_REDUCE, (CV, void *, int, int, int, int, int), (CV, void *, int, void *, void *, int, void *),
                       (s, r, n, H4(dt), H4(op), root, H4(c)), (s, r, n, HP(dt), HP(op), root, HP(c)));
}
static inline int meshrt_ireduce(CV s, void *r, int n, size_t dt, size_t op, int root, size_t c, void *req) {
    return MESHRT_CALL(MF_IREDUCE, (CV, void *, int, int, int, int, int, void *),
                       (CV, void *, int, void *, void *, int, void *, void *),
                       (s, r, n, H4(dt), H4(op), root, H4(c), req), (s, r, n, HP(dt), HP(op), root, HP(c), req));
}
static inline int meshrt_reduce_scatter_block(CV s, void *r, int n, size_t dt, size_t op, size_t c) {
    return MESHRT_CALL(MF_REDUCE_SCATTER_BLOCK, (CV, void *, int, int, int, int),
                       (CV, void *, int, void *, void *, void *),
                       (s, r, n, H4(dt), H4(op), H4(c)), (s, r, n, HP(dt), HP(op), HP(c)));
}
static inline int meshrt_ireduce_scatter_block(CV s, void *r, int n, size_t dt, size_t op, size_t c, void *req) {
    return MESHRT_CALL(MF_IREDUCE_SCATTER_BLOCK, (CV, void *, int, int, int, int, void *),
                       (CV, void *, int, void *, void *, void *, void *),
                       (s, r, n, H4(dt), H4(op), H4(c), req), (s, r, n, HP(dt), HP(op), HP(c), req));
}
static inline int meshrt_bcast(void *b, int n, size_t dt, int root, size_t c) {
    return MESHRT_CALL(MF_BCAST, (void *, int, int, int, int), (void *, int, void *, int, void *),
                       (b, n, H4(dt), root, H4(c)), (b, n, HP(dt), root, HP(c)));
}
static inline int meshrt_ibcast(void *b, int n, size_t dt, int root, size_t c, void *req) {
    return MESHRT_CALL(MF_IBCAST, (void *, int, int, int, int, void *), (void *, int, void *, int, void *, void *),
                       (b, n, H4(dt), root, H4(c), req), (b, n, HP(dt), root, HP(c), req));
}
/* Allgather, Alltoall: (send, n, dt, recv, n, dt, comm); Gather, Scatter add a root */
#define MESHRT_MOVE(NAME, I, II)                                                                            \
static inline int meshrt_##NAME(CV s, int sn, void *r, int rn, size_t dt, size_t c) {                       \
    return MESHRT_CALL(I, (CV, int, int, void *, int, int, int), (CV, int, void *, void *, int, void *, void *), \
                       (s, sn, H4(dt), r, rn, H4(dt), H4(c)), (s, sn, HP(dt), r, rn, HP(dt), HP(c)));       \
}                                                                                                           \
static inline int meshrt_i##NAME(CV s, int sn, void *r, int rn, size_t dt, size_t c, void *req) {           \
    return MESHRT_CALL(II, (CV, int, int, void *, int, int, int, void *),                                   \
                       (CV, int, void *, void *, int, void *, void *, void *),                              \
                       (s, sn, H4(dt), r, rn, H4(dt), H4(c), req), (s, sn, HP(dt), r, rn, HP(dt), HP(c), req)); \
}
#define MESHRT_ROOTED(NAME, I, II)                                                                          \
static inline int meshrt_##NAME(CV s, int sn, void *r, int rn, size_t dt, int root, size_t c) {             \
    return MESHRT_CALL(I, (CV, int, int, void *, int, int, int, int),                                       \
                       (CV, int, void *, void *, int, void *, int, void *),                                 \
                       (s, sn, H4(dt), r, rn, H4(dt), root, H4(c)), (s, sn, HP(dt), r, rn, HP(dt), root, HP(c))); \
}                                                                                                           \
static inline int meshrt_i##NAME(CV s, int sn, void *r, int rn, size_t dt, int root, size_t c, void *req) { \
    return MESHRT_CALL(II, (CV, int, int, void *, int, int, int, int, void *),                              \
                       (CV, int, void *, void *, int, void *, int, void *, void *),                         \
                       (s, sn, H4(dt), r, rn, H4(dt), root, H4(c), req),                                    \
                       (s, sn, HP(dt), r, rn, HP(dt), root, HP(c), req));                                   \
}
MESHRT_MOVE(allgather, MF_ALLGATHER, MF_IALLGATHER)
MESHRT_MOVE(alltoall, MF_ALLTOALL, MF_IALLTOALL)
MESHRT_ROOTED(gather, MF_GATHER, MF_IGATHER)
MESHRT_ROOTED(scatter, MF_SCATTER, MF_ISCATTER)

/* Allgatherv: (send, n, dt, recv, counts, displs, dt, comm); Alltoallv: (send, counts, displs, dt, recv,
   counts, displs, dt, comm) */
static inline int meshrt_allgatherv(CV s, int sn, void *r, const int *rc, const int *rd, size_t dt, size_t c) {
    return MESHRT_CALL(MF_ALLGATHERV, (CV, int, int, void *, const int *, const int *, int, int),
                       (CV, int, void *, void *, const int *, const int *, void *, void *),
                       (s, sn, H4(dt), r, rc, rd, H4(dt), H4(c)), (s, sn, HP(dt), r, rc, rd, HP(dt), HP(c)));
}
static inline int meshrt_iallgatherv(CV s, int sn, void *r, const int *rc, const int *rd, size_t dt, size_t c,
                                     void *req) {
    return MESHRT_CALL(MF_IALLGATHERV, (CV, int, int, void *, const int *, const int *, int, int, void *),
                       (CV, int, void *, void *, const int *, const int *, void *, void *, void *),
                       (s, sn, H4(dt), r, rc, rd, H4(dt), H4(c), req),
                       (s, sn, HP(dt), r, rc, rd, HP(dt), HP(c), req));
}
static inline int meshrt_alltoallv(CV s, const int *sc, const int *sd, void *r, const int *rc, const int *rd,
                                   size_t dt, size_t c) {
    return MESHRT_CALL(MF_ALLTOALLV, (CV, const int *, const int *, int, void *, const int *, const int *, int, int),
                       (CV, const int *, const int *, void *, void *, const int *, const int *, void *, void *),
                       (s, sc, sd, H4(dt), r, rc, rd, H4(dt), H4(c)), (s, sc, sd, HP(dt), r, rc, rd, HP(dt), HP(c)));
}
static inline int meshrt_ialltoallv(CV s, const int *sc, const int *sd, void *r, const int *rc, const int *rd,
                                    size_t dt, size_t c, void *req) {
    return MESHRT_CALL(MF_IALLTOALLV,
                       (CV, const int *, const int *, int, void *, const int *, const int *, int, int, void *),
                       (CV, const int *, const int *, void *, void *, const int *, const int *, void *, void *, void *),
                       (s, sc, sd, H4(dt), r, rc, rd, H4(dt), H4(c), req),
                       (s, sc, sd, HP(dt), r, rc, rd, HP(dt), HP(c), req));
}

/* Gatherv: (send, n, dt, recv, counts, displs, dt, root, comm); Scatterv: (send, counts, displs, dt, recv, n,
   dt, root, comm) */
static inline int meshrt_gatherv(CV s, int sn, void *r, const int *rc, const int *rd, size_t dt, int root, size_t c) {
    return MESHRT_CALL(MF_GATHERV, (CV, int, int, void *, const int *, const int *, int, int, int),
                       (CV, int, void *, void *, const int *, const int *, void *, int, void *),
                       (s, sn, H4(dt), r, rc, rd, H4(dt), root, H4(c)),
                       (s, sn, HP(dt), r, rc, rd, HP(dt), root, HP(c)));
}
static inline int meshrt_igatherv(CV s, int sn, void *r, const int *rc, const int *rd, size_t dt, int root, size_t c,
                                  void *req) {
    return MESHRT_CALL(MF_IGATHERV, (CV, int, int, void *, const int *, const int *, int, int, int, void *),
                       (CV, int, void *, void *, const int *, const int *, void *, int, void *, void *),
                       (s, sn, H4(dt), r, rc, rd, H4(dt), root, H4(c), req),
                       (s, sn, HP(dt), r, rc, rd, HP(dt), root, HP(c), req));
}
static inline int meshrt_scatterv(CV s, const int *sc, const int *sd, void *r, int rn, size_t dt, int root, size_t c) {
    return MESHRT_CALL(MF_SCATTERV, (CV, const int *, const int *, int, void *, int, int, int, int),
                       (CV, const int *, const int *, void *, void *, int, void *, int, void *),
                       (s, sc, sd, H4(dt), r, rn, H4(dt), root, H4(c)),
                       (s, sc, sd, HP(dt), r, rn, HP(dt), root, HP(c)));
}
static inline int meshrt_iscatterv(CV s, const int *sc, const int *sd, void *r, int rn, size_t dt, int root, size_t c,
                                   void *req) {
    return MESHRT_CALL(MF_ISCATTERV, (CV, const int *, const int *, int, void *, int, int, int, int, void *),
                       (CV, const int *, const int *, void *, void *, int, void *, int, void *, void *),
                       (s, sc, sd, H4(dt), r, rn, H4(dt), root, H4(c), req),
                       (s, sc, sd, HP(dt), r, rn, HP(dt), root, HP(c), req));
}
/* Reduce_scatter: (send, recv, counts, dt, op, comm) */
static inline int meshrt_reduce_scatter(CV s, void *r, const int *rc, size_t dt, size_t op, size_t c) {
    return MESHRT_CALL(MF_REDUCE_SCATTER, (CV, void *, const int *, int, int, int),
                       (CV, void *, const int *, void *, void *, void *),
                       (s, r, rc, H4(dt), H4(op), H4(c)), (s, r, rc, HP(dt), HP(op), HP(c)));
}
static inline int meshrt_ireduce_scatter(CV s, void *r, const int *rc, size_t dt, size_t op, size_t c, void *req) {
    return MESHRT_CALL(MF_IREDUCE_SCATTER, (CV, void *, const int *, int, int, int, void *),
                       (CV, void *, const int *, void *, void *, void *, void *),
                       (s, r, rc, H4(dt), H4(op), H4(c), req), (s, r, rc, HP(dt), HP(op), HP(c), req));
}

static inline int meshrt_sendrecv(CV s, int sn, int dst, int stag, void *r, int rn, int src, int rtag, size_t dt,
                                  size_t c) {
    char st[MESHRT_STATUS_BYTES];
    return MESHRT_CALL(MF_SENDRECV, (CV, int, int, int, int, void *, int, int, int, int, int, void *),
                       (CV, int, void *, int, int, void *, int, void *, int, int, void *, void *),
                       (s, sn, H4(dt), dst, stag, r, rn, H4(dt), src, rtag, H4(c), (void *)st),
                       (s, sn, HP(dt), dst, stag, r, rn, HP(dt), src, rtag, HP(c), (void *)st));
}
static inline int meshrt_send(CV b, int n, size_t dt, int dst, int tag, size_t c) {
    return MESHRT_CALL(MF_SEND, (CV, int, int, int, int, int), (CV, int, void *, int, int, void *),
                       (b, n, H4(dt), dst, tag, H4(c)), (b, n, HP(dt), dst, tag, HP(c)));
}
static inline int meshrt_recv(void *b, int n, size_t dt, int src, int tag, size_t c) {
    char st[MESHRT_STATUS_BYTES];
    return MESHRT_CALL(MF_RECV, (void *, int, int, int, int, int, void *), (void *, int, void *, int, int, void *, void *),
                       (b, n, H4(dt), src, tag, H4(c), (void *)st), (b, n, HP(dt), src, tag, HP(c), (void *)st));
}
static inline int meshrt_isend(CV b, int n, size_t dt, int dst, int tag, size_t c, void *req) {
    return MESHRT_CALL(MF_ISEND, (CV, int, int, int, int, int, void *), (CV, int, void *, int, int, void *, void *),
                       (b, n, H4(dt), dst, tag, H4(c), req), (b, n, HP(dt), dst, tag, HP(c), req));
}
static inline int meshrt_irecv(void *b, int n, size_t dt, int src, int tag, size_t c, void *req) {
    return MESHRT_CALL(MF_IRECV, (void *, int, int, int, int, int, void *), (void *, int, void *, int, int, void *, void *),
                       (b, n, H4(dt), src, tag, H4(c), req), (b, n, HP(dt), src, tag, HP(c), req));
}
/* at most 2 requests per call here (shift's send and receive) */
static inline int meshrt_waitall(int n, void *reqs) {
    char st[2 * MESHRT_STATUS_BYTES];
    return ((int (*)(int, void *, void *))meshrt_fn[MF_WAITALL])(n, reqs, (void *)st);
}
/* n requests, statuses into st (n * MESHRT_STATUS_BYTES bytes) */
static inline int meshrt_waitall_n(int n, void *reqs, void *st) {
    return ((int (*)(int, void *, void *))meshrt_fn[MF_WAITALL])(n, reqs, st);
}
/* persistent requests (a halo exchange's), packed as above */
static inline int meshrt_startall(int n, void *reqs) {
    return ((int (*)(int, void *))meshrt_fn[MF_STARTALL])(n, reqs);
}
static inline int meshrt_testall(int n, void *reqs, int *flag) {
    char st[2 * MESHRT_STATUS_BYTES];
    return ((int (*)(int, void *, int *, void *))meshrt_fn[MF_TESTALL])(n, reqs, flag, (void *)st);
}
static inline int meshrt_barrier(size_t c) {
    return MESHRT_CALL(MF_BARRIER, (int), (void *), (H4(c)), (HP(c)));
}

#endif

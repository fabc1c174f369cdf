/* ScaLAPACK anchor for bench/bench_linalg.py: times pdpotrf, pdgesv (1 rhs), pdgeqrf, pdsyevd on an
 * N x N float64 matrix in ScaLAPACK's 2-D block-cyclic layout on a Pr x Pc BLACS grid.
 *
 * Not part of meshrt: the bench script compiles it at run time against Debian's libscalapack-mpich.
 *
 *   mpiexec -n P ./scalapack_driver ROUTINE N NB PR PC REPS
 *
 * ROUTINE: potrf | gesv | geqrf | syevd. Each repetition refills the matrix (not timed: random entries
 * from a hash of the global index, symmetric with N added to the diagonal for potrf/syevd), then times the
 * routine between two barriers; the time is the slowest process's. Rank 0 prints one line per repetition:
 *
 *   RESULT routine=potrf n=8192 nb=128 grid=1x2 rep=0 seconds=1.234 cpu_seconds=1.2 info=0 maxrss_kib=...
 *
 * (cpu_seconds: the largest CPU time of a process during the call; maxrss_kib: the largest ru_maxrss over
 * the processes, KiB, after the repetition.)
 */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

extern void Cblacs_pinfo(int *me, int *np);
extern void Cblacs_get(int ctx, int what, int *val);
extern void Cblacs_gridinit(int *ctx, const char *order, int pr, int pc);
extern void Cblacs_gridinfo(int ctx, int *pr, int *pc, int *r, int *c);
extern void Cblacs_gridexit(int ctx);
extern int numroc_(const int *n, const int *nb, const int *iproc, const int *isrc, const int *nprocs);
extern void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb, const int *irsrc,
                      const int *icsrc, const int *ctx, const int *lld, int *info);
extern void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia, const int *ja, const int *desca,
                     int *info);
extern void pdgesv_(const int *n, const int *nrhs, double *a, const int *ia, const int *ja, const int *desca,
                    int *ipiv, double *b, const int *ib, const int *jb, const int *descb, int *info);
extern void pdgeqrf_(const int *m, const int *n, double *a, const int *ia, const int *ja, const int *desca,
                     double *tau, double *work, const int *lwork, int *info);
extern void pdsyevd_(const char *jobz, const char *uplo, const int *n, double *a, const int *ia, const int *ja,
                     const int *desca, double *w, double *z, const int *iz, const int *jz, const int *descz,
                     double *work, const int *lwork, int *iwork, const int *liwork, int *info);

static double entry(uint64_t i, uint64_t j, uint64_t seed) {
    uint64_t x = i * 0x9E3779B97F4A7C15ULL ^ (j + 0x632BE59BD9B4E019ULL) * 0xBF58476D1CE4E5B9ULL ^ seed;
    x ^= x >> 31; x *= 0x94D049BB133111EBULL; x ^= x >> 29; x *= 0xBF58476D1CE4E5B9ULL; x ^= x >> 32;
    return (double)(x >> 11) * (1.0 / 9007199254740992.0) - 0.5;
}

/* this process's CPU seconds (user + system): on a loaded machine wall time measures the load */
static double cpu_seconds(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_utime.tv_sec + ru.ru_stime.tv_sec + 1e-6 * (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec);
}

/* global index of local index l (block nb, my coordinate p of np) */
static int global_of(int l, int nb, int p, int np) { return (l / nb) * nb * np + p * nb + l % nb; }

static void fill(double *a, int lr, int lc, int n, int nb, int r, int c, int pr, int pc, int spd) {
    for (int lj = 0; lj < lc; lj++) {
        int gj = global_of(lj, nb, c, pc);
        for (int li = 0; li < lr; li++) {
            int gi = global_of(li, nb, r, pr);
            double v = spd ? entry(gi < gj ? gi : gj, gi < gj ? gj : gi, 7) : entry(gi, gj, 7);
            if (spd && gi == gj) v += n;
            a[(size_t)lj * lr + li] = v;
        }
    }
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    if (argc < 7) {
        fprintf(stderr, "usage: %s potrf|gesv|geqrf|syevd N NB PR PC REPS\n", argv[0]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    const char *routine = argv[1];
    int n = atoi(argv[2]), nb = atoi(argv[3]), pr = atoi(argv[4]), pc = atoi(argv[5]), reps = atoi(argv[6]);
    int me, np, ctx, nprow, npcol, r, c, izero = 0, ione = 1, info;
    Cblacs_pinfo(&me, &np);
    if (pr * pc != np) {
        if (me == 0) fprintf(stderr, "grid %dx%d does not hold %d processes\n", pr, pc, np);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    Cblacs_get(-1, 0, &ctx);
    Cblacs_gridinit(&ctx, "Row", pr, pc);
    Cblacs_gridinfo(ctx, &nprow, &npcol, &r, &c);
    int lr = numroc_(&n, &nb, &r, &izero, &nprow), lc = numroc_(&n, &nb, &c, &izero, &npcol);
    int lld = lr > 1 ? lr : 1;
    int desca[9], descb[9];
    descinit_(desca, &n, &n, &nb, &nb, &izero, &izero, &ctx, &lld, &info);
    int spd = !strcmp(routine, "potrf") || !strcmp(routine, "syevd");
    double *a = malloc(sizeof(double) * (size_t)lr * lc + 8);
    /* the extra operands of each routine, sized once (ScaLAPACK's workspace queries) */
    double *b = NULL, *tau = NULL, *work = NULL, *w = NULL, *z = NULL;
    int *ipiv = NULL, *iwork = NULL, lwork = 0, liwork = 0;
    int lcb = numroc_(&ione, &nb, &c, &izero, &npcol);
    if (!strcmp(routine, "gesv")) {
        descinit_(descb, &n, &ione, &nb, &nb, &izero, &izero, &ctx, &lld, &info);
        b = malloc(sizeof(double) * (size_t)lr * (lcb > 0 ? lcb : 1) + 8);
        ipiv = malloc(sizeof(int) * (lr + nb));
    } else if (!strcmp(routine, "geqrf")) {
        tau = malloc(sizeof(double) * (lc + nb));
        double q;
        int m1 = -1;
        pdgeqrf_(&n, &n, a, &ione, &ione, desca, tau, &q, &m1, &info);
        lwork = (int)q + 1;
        work = malloc(sizeof(double) * lwork);
    } else if (!strcmp(routine, "syevd")) {
        w = malloc(sizeof(double) * n);
        z = malloc(sizeof(double) * (size_t)lr * lc + 8);
        double q;
        int qi, m1 = -1;
        pdsyevd_("V", "L", &n, a, &ione, &ione, desca, w, z, &ione, &ione, desca, &q, &m1, &qi, &m1, &info);
        lwork = (int)q + 1;
        liwork = qi > 1 ? qi : 1;
        work = malloc(sizeof(double) * lwork);
        iwork = malloc(sizeof(int) * liwork);
    } else if (strcmp(routine, "potrf")) {
        if (me == 0) fprintf(stderr, "unknown routine %s\n", routine);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    for (int rep = 0; rep < reps; rep++) {
        fill(a, lr, lc, n, nb, r, c, pr, pc, spd);
        if (b && lcb > 0)
            for (int li = 0; li < lr; li++) b[li] = entry(global_of(li, nb, r, pr), 0, 11);
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = MPI_Wtime(), c0 = cpu_seconds();
        if (!strcmp(routine, "potrf"))
            pdpotrf_("L", &n, a, &ione, &ione, desca, &info);
        else if (b)
            pdgesv_(&n, &ione, a, &ione, &ione, desca, ipiv, b, &ione, &ione, descb, &info);
        else if (tau)
            pdgeqrf_(&n, &n, a, &ione, &ione, desca, tau, work, &lwork, &info);
        else
            pdsyevd_("V", "L", &n, a, &ione, &ione, desca, w, z, &ione, &ione, desca, work, &lwork, iwork,
                     &liwork, &info);
        double dc = cpu_seconds() - c0, dcmax;
        MPI_Barrier(MPI_COMM_WORLD);
        double dt = MPI_Wtime() - t0, dtmax;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        long rss = ru.ru_maxrss, rssmax;
        MPI_Reduce(&dt, &dtmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&rss, &rssmax, 1, MPI_LONG, MPI_MAX, 0, MPI_COMM_WORLD);
        MPI_Reduce(&dc, &dcmax, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
        if (me == 0) {
            printf("RESULT routine=%s n=%d nb=%d grid=%dx%d rep=%d seconds=%.6f cpu_seconds=%.6f info=%d "
                   "maxrss_kib=%ld\n", routine, n, nb, pr, pc, rep, dtmax, dcmax, info, rssmax);
            fflush(stdout);
        }
    }
    Cblacs_gridexit(ctx);
    MPI_Finalize();
    return 0;
}

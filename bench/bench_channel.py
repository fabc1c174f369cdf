"""The channel flow of CFD Python step 12 (41 x 41, periodic in x, rows split): time per step, meshrt against
the same step written in plain mpi4py + numpy (`RawChannel`: rows split, a ghost row a side, ``Sendrecv``).

    mpiexec -n 2 python bench/bench_channel.py [nx] [steps] [reps]

One untimed step of each (kernels compiled or loaded, plans made), then ``steps`` steps (default 3) timed
on the slowest process, the two taking turns, best of ``reps`` (default 3); both fields are checked equal to
the same code on numpy arrays.  Prints ms per step, meshrt / raw, and the deferred-expression counters of a
step (`meshrt.tensor.lazy.stats`).  Its periodic-column statements (``p[1:-1, -1] = ... pn[2:, -1] ...``:
an int on one dim) are fused writes.  The plain code at several process counts says what the host allows
(issue 53 item 4: on 2 cores, 3 processes take ~3x as long a step as 2, for it too).
"""

import sys
import time

import numpy as np
from mpi4py import MPI

from meshrt import DistributedTensor as DT, Mesh, Sharding
from meshrt.tensor import lazy

comm = MPI.COMM_WORLD


def build_up_b(rho, dt, dx, dy, u, v):
    b = np.zeros_like(u)
    b[1:-1, 1:-1] = (rho * (1 / dt * ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx) + (v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy)) -
                    ((u[1:-1, 2:] - u[1:-1, 0:-2]) / (2 * dx))**2 - 2 * ((u[2:, 1:-1] - u[0:-2, 1:-1]) / (2 * dy) *
                    (v[1:-1, 2:] - v[1:-1, 0:-2]) / (2 * dx)) - ((v[2:, 1:-1] - v[0:-2, 1:-1]) / (2 * dy))**2))
    b[1:-1, -1] = (rho * (1 / dt * ((u[1:-1, 0] - u[1:-1, -2]) / (2 * dx) + (v[2:, -1] - v[0:-2, -1]) / (2 * dy)) -
                  ((u[1:-1, 0] - u[1:-1, -2]) / (2 * dx))**2 - 2 * ((u[2:, -1] - u[0:-2, -1]) / (2 * dy) *
                  (v[1:-1, 0] - v[1:-1, -2]) / (2 * dx)) - ((v[2:, -1] - v[0:-2, -1]) / (2 * dy))**2))
    b[1:-1, 0] = (rho * (1 / dt * ((u[1:-1, 1] - u[1:-1, -1]) / (2 * dx) + (v[2:, 0] - v[0:-2, 0]) / (2 * dy)) -
                 ((u[1:-1, 1] - u[1:-1, -1]) / (2 * dx))**2 - 2 * ((u[2:, 0] - u[0:-2, 0]) / (2 * dy) *
                 (v[1:-1, 1] - v[1:-1, -1]) / (2 * dx)) - ((v[2:, 0] - v[0:-2, 0]) / (2 * dy))**2))
    return b
def pressure_poisson_periodic(p, dx, dy, b, nit=50):
    for q in range(nit):
        pn = p.copy()
        p[1:-1, 1:-1] = (((pn[1:-1, 2:] + pn[1:-1, 0:-2]) * dy**2 + (pn[2:, 1:-1] + pn[0:-2, 1:-1]) * dx**2) / (2 * (dx**2 + dy**2)) - dx**2 * dy**2 / (2 * (dx**2 + dy**2)) * b[1:-1, 1:-1])
        p[1:-1, -1] = (((pn[1:-1, 0] + pn[1:-1, -2]) * dy**2 + (pn[2:, -1] + pn[0:-2, -1]) * dx**2) / (2 * (dx**2 + dy**2)) - dx**2 * dy**2 / (2 * (dx**2 + dy**2)) * b[1:-1, -1])
        p[1:-1, 0] = (((pn[1:-1, 1] + pn[1:-1, -1]) * dy**2 + (pn[2:, 0] + pn[0:-2, 0]) * dx**2) / (2 * (dx**2 + dy**2)) - dx**2 * dy**2 / (2 * (dx**2 + dy**2)) * b[1:-1, 0])
        p[-1, :] = p[-2, :]
        p[0, :] = p[1, :]
    return p
def step(u, v, p, nx=41, ny=41):
    dx = 2 / (nx - 1); dy = 2 / (ny - 1); rho = 1; nu = .1; F = 1; dt = .01
    un = u.copy(); vn = v.copy()
    b = build_up_b(rho, dt, dx, dy, u, v)
    p = pressure_poisson_periodic(p, dx, dy, b)
    u[1:-1, 1:-1] = (un[1:-1, 1:-1] - un[1:-1, 1:-1] * dt / dx * (un[1:-1, 1:-1] - un[1:-1, 0:-2]) - vn[1:-1, 1:-1] * dt / dy * (un[1:-1, 1:-1] - un[0:-2, 1:-1]) - dt / (2 * rho * dx) * (p[1:-1, 2:] - p[1:-1, 0:-2]) + nu * (dt / dx**2 * (un[1:-1, 2:] - 2 * un[1:-1, 1:-1] + un[1:-1, 0:-2]) + dt / dy**2 * (un[2:, 1:-1] - 2 * un[1:-1, 1:-1] + un[0:-2, 1:-1])) + F * dt)
    u[0, :] = 0; u[-1, :] = 0; v[0, :] = 0; v[-1, :] = 0
    return u, v, p


class RawChannel:
    """The same step by hand: rows split, one ghost row each side, two Sendrecv per exchange."""

    def __init__(self, nx, comm):
        self.comm, self.nx = comm, nx
        n, r = comm.size, comm.rank
        m = nx // n + (1 if r < nx % n else 0)
        self.r0 = r * (nx // n) + min(r, nx % n)
        self.r1 = self.r0 + m
        self.up = r - 1 if r > 0 else MPI.PROC_NULL
        self.down = r + 1 if r < n - 1 else MPI.PROC_NULL
        self.lo = max(1, self.r0) - self.r0 + 1
        self.hi = min(nx - 1, self.r1) - self.r0 + 1

    def field(self, g):
        e = np.zeros((self.r1 - self.r0 + 2, self.nx))
        e[1:-1] = g[self.r0:self.r1]
        return e

    def exchange(self, e):
        c = self.comm
        c.Sendrecv(e[1], self.up, 0, e[-1], self.down, 0)
        c.Sendrecv(e[-2], self.down, 1, e[0], self.up, 1)

    def step(self, u, v, p):
        nx = self.nx
        dx = 2 / (nx - 1); dy = 2 / (nx - 1); rho = 1; nu = .1; F = 1; dt = .01
        I, Ip, Im = slice(self.lo, self.hi), slice(self.lo + 1, self.hi + 1), slice(self.lo - 1, self.hi - 1)
        un = u.copy(); vn = v.copy()
        self.exchange(u); self.exchange(v)
        b = np.zeros_like(u)
        b[I, 1:-1] = (rho * (1 / dt * ((u[I, 2:] - u[I, 0:-2]) / (2 * dx) + (v[Ip, 1:-1] - v[Im, 1:-1]) / (2 * dy)) -
                      ((u[I, 2:] - u[I, 0:-2]) / (2 * dx))**2 - 2 * ((u[Ip, 1:-1] - u[Im, 1:-1]) / (2 * dy) *
                      (v[I, 2:] - v[I, 0:-2]) / (2 * dx)) - ((v[Ip, 1:-1] - v[Im, 1:-1]) / (2 * dy))**2))
        b[I, -1] = (rho * (1 / dt * ((u[I, 0] - u[I, -2]) / (2 * dx) + (v[Ip, -1] - v[Im, -1]) / (2 * dy)) -
                    ((u[I, 0] - u[I, -2]) / (2 * dx))**2 - 2 * ((u[Ip, -1] - u[Im, -1]) / (2 * dy) *
                    (v[I, 0] - v[I, -2]) / (2 * dx)) - ((v[Ip, -1] - v[Im, -1]) / (2 * dy))**2))
        b[I, 0] = (rho * (1 / dt * ((u[I, 1] - u[I, -1]) / (2 * dx) + (v[Ip, 0] - v[Im, 0]) / (2 * dy)) -
                   ((u[I, 1] - u[I, -1]) / (2 * dx))**2 - 2 * ((u[Ip, 0] - u[Im, 0]) / (2 * dy) *
                   (v[I, 1] - v[I, -1]) / (2 * dx)) - ((v[Ip, 0] - v[Im, 0]) / (2 * dy))**2))
        first, last = self.r0 == 0, self.r1 == nx
        for q in range(50):
            pn = p.copy()
            self.exchange(pn)
            p[I, 1:-1] = (((pn[I, 2:] + pn[I, 0:-2]) * dy**2 + (pn[Ip, 1:-1] + pn[Im, 1:-1]) * dx**2) / (2 * (dx**2 + dy**2)) - dx**2 * dy**2 / (2 * (dx**2 + dy**2)) * b[I, 1:-1])
            p[I, -1] = (((pn[I, 0] + pn[I, -2]) * dy**2 + (pn[Ip, -1] + pn[Im, -1]) * dx**2) / (2 * (dx**2 + dy**2)) - dx**2 * dy**2 / (2 * (dx**2 + dy**2)) * b[I, -1])
            p[I, 0] = (((pn[I, 1] + pn[I, -1]) * dy**2 + (pn[Ip, 0] + pn[Im, 0]) * dx**2) / (2 * (dx**2 + dy**2)) - dx**2 * dy**2 / (2 * (dx**2 + dy**2)) * b[I, 0])
            if last:
                p[-2, :] = p[-3, :]
            if first:
                p[1, :] = p[2, :]
        self.exchange(un)
        u[I, 1:-1] = (un[I, 1:-1] - un[I, 1:-1] * dt / dx * (un[I, 1:-1] - un[I, 0:-2]) - vn[I, 1:-1] * dt / dy * (un[I, 1:-1] - un[Im, 1:-1]) - dt / (2 * rho * dx) * (p[I, 2:] - p[I, 0:-2]) + nu * (dt / dx**2 * (un[I, 2:] - 2 * un[I, 1:-1] + un[I, 0:-2]) + dt / dy**2 * (un[Ip, 1:-1] - 2 * un[I, 1:-1] + un[Im, 1:-1])) + F * dt)
        if first:
            u[1, :] = 0; v[1, :] = 0
        if last:
            u[-2, :] = 0; v[-2, :] = 0
        return u, v, p


def timed(fn, steps):
    """The slowest process's seconds per call of ``fn`` over ``steps`` calls."""
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        fn()
    return comm.allreduce(time.perf_counter() - t0, op=MPI.MAX) / steps


def main():
    nx = int(sys.argv[1]) if len(sys.argv) > 1 else 41
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    reps = int(sys.argv[3]) if len(sys.argv) > 3 else 3
    s = Sharding(Mesh((-1,)), [[0]])
    g = np.zeros((nx, nx))
    tensors = [DT.from_global(g, s) for _ in range(3)]
    raw = RawChannel(nx, comm)
    fields = [raw.field(g) for _ in range(3)]
    def meshrt_step():
        tensors[:] = step(*tensors, nx, nx)
    def raw_step():
        fields[:] = raw.step(*fields)
    meshrt_step(); raw_step()
    st = dict(lazy.stats)
    best = {"meshrt": float("inf"), "raw": float("inf")}
    for rep in range(reps):
        for name, fn in (("meshrt", meshrt_step), ("raw", raw_step))[::1 if rep % 2 == 0 else -1]:
            best[name] = min(best[name], timed(fn, steps))
    a = [g.copy() for _ in range(3)]
    for _ in range(1 + reps * steps):
        a = step(*a, nx, nx)
    ok = all(np.allclose(x.gather(), y, rtol=1e-9, atol=1e-12) for x, y in zip(tensors, a))
    ends = comm.allgather((raw.r0, raw.r1))
    ok_raw = all(np.allclose(np.concatenate([f[1:-1] for f in comm.allgather(x)]), y, rtol=1e-9, atol=1e-12)
                 for x, y in zip(fields, a))
    if comm.rank == 0:
        assert [e[0] for e in ends] == sorted(e[0] for e in ends)
        print(comm.size, "processes", f"meshrt {best['meshrt'] * 1e3:.2f} ms/step",
              f"raw mpi4py + numpy {best['raw'] * 1e3:.2f} ms/step", f"meshrt/raw {best['meshrt'] / best['raw']:.2f}",
              "" if ok else "WRONG RESULT", "" if ok_raw else "WRONG RAW RESULT",
              {k: (lazy.stats[k] - st[k]) // (reps * steps) for k in st})
    if not (ok and ok_raw):  # (alike on every process: both checks read the gathered fields)
        sys.exit(1)


if __name__ == "__main__":
    main()

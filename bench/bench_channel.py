"""The channel flow of CFD Python step 12 (41 x 41, periodic in x, rows split): time per step, meshrt.

    mpiexec -n 2 python bench/bench_channel.py [nx] [steps]

One untimed step (kernels compiled or loaded, plans made), then ``steps`` steps (default 3) timed on the
slowest process; the fields are checked equal to the same code on numpy arrays.  Prints ms per step and
the deferred-expression counters of the timed steps (`meshrt.tensor.lazy.stats`).  Its periodic-column
statements (``p[1:-1, -1] = ... pn[2:, -1] ...``: an int on one dim) are fused writes (issue 53 item 4).
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


def main():
    nx = int(sys.argv[1]) if len(sys.argv) > 1 else 41
    steps = int(sys.argv[2]) if len(sys.argv) > 2 else 3
    s = Sharding(Mesh((-1,)), [[0]])
    g = np.zeros((nx, nx))
    u, v, p = (DT.from_global(g, s) for _ in range(3))
    a, b, c = g.copy(), g.copy(), g.copy()
    step(u, v, p, nx, nx)
    st = dict(lazy.stats)
    comm.Barrier()
    t0 = time.perf_counter()
    for _ in range(steps):
        u, v, p = step(u, v, p, nx, nx)
    t = comm.allreduce(time.perf_counter() - t0, op=MPI.MAX)
    for _ in range(steps + 1):
        a, b, c = step(a, b, c, nx, nx)
    ok = all(np.allclose(x.gather(), y, rtol=1e-9, atol=1e-12) for x, y in ((u, a), (v, b), (p, c)))
    if comm.rank == 0:
        print(comm.size, "processes", f"{t / steps * 1e3:.1f} ms/step", "" if ok else "WRONG RESULT",
              {k: lazy.stats[k] - st[k] for k in st})


if __name__ == "__main__":
    main()

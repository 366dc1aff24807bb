// grid_pr.cu: phase one of push-relabel (the minimum cut) on a GridGraph, launched only from
// src/maxflow/cuda/grid.rs, which owns the argument order of every kernel below.
//
// Layout (the GridGraph layout): node v = x + W*(y + H*z); rcap[d*n + v] is the residual capacity
// of the arc v -> neighbour(v, d), and direction d ^ 1 is its reverse. The sink is implicit, with
// label 0; sink_r[v] is the residual capacity of v -> t. Source arcs were saturated on the host.
//
// Labels: 0..=n are distances (or lower bounds on them); INF = n + 1 marks a node that cannot
// reach the sink. Such a node is inactive: its excess cannot change the minimum cut.
//
// Concurrency (Hong 2008): a node's outgoing residual capacities and its excess are decreased
// only by that node's own thread, so a value it read is a lower bound of the current one and the
// amount it pushes is always available; increases made by other threads are atomicAdd. The host
// never trusts the labels for the answer: it stops only after a fresh breadth-first search from
// the sink finds no node with excess that reaches the sink.

typedef long long i64;
typedef unsigned long long u64;

// Neighbour offsets {dx, dy, dz} in opposite pairs, the same order as Connectivity::offsets in
// src/graph/grid.rs (the 2D sets N4 and N8 use the table below; N6 and N26 the 3D one).
__constant__ int OFFSETS_2D[8][3] = {
    {1, 0, 0}, {-1, 0, 0}, {0, 1, 0}, {0, -1, 0},
    {1, 1, 0}, {-1, -1, 0}, {1, -1, 0}, {-1, 1, 0},
};
__constant__ int OFFSETS_3D[26][3] = {
    {1, 0, 0},   {-1, 0, 0},  {0, 1, 0},   {0, -1, 0},  {0, 0, 1},   {0, 0, -1},
    {1, 1, 0},   {-1, -1, 0}, {1, -1, 0},  {-1, 1, 0},  {1, 0, 1},   {-1, 0, -1},
    {1, 0, -1},  {-1, 0, 1},  {0, 1, 1},   {0, -1, -1}, {0, 1, -1},  {0, -1, 1},
    {1, 1, 1},   {-1, -1, -1}, {1, 1, -1}, {-1, -1, 1}, {1, -1, 1},  {-1, 1, -1},
    {-1, 1, 1},  {1, -1, -1},
};

// The grid's shape, passed by value to every kernel.
struct Grid {
    unsigned w, h, d;   // dimensions
    unsigned n;         // w * h * d
    unsigned deg;       // 4, 8, 6 or 26
    unsigned is3d;      // which offset table
};

// The neighbour of (x, y, z) in direction dir, or -1 when it lies outside the grid.
__device__ __forceinline__ i64 neighbor(const Grid g, unsigned x, unsigned y, unsigned z,
                                        unsigned dir) {
    const int *o = g.is3d ? OFFSETS_3D[dir] : OFFSETS_2D[dir];
    i64 nx = (i64)x + o[0], ny = (i64)y + o[1], nz = (i64)z + o[2];
    if (nx < 0 || ny < 0 || nz < 0 || nx >= g.w || ny >= g.h || nz >= g.d) return -1;
    return nx + (i64)g.w * (ny + (i64)g.h * nz);
}

__device__ __forceinline__ void coords(const Grid g, unsigned v, unsigned &x, unsigned &y,
                                       unsigned &z) {
    x = v % g.w;
    y = (v / g.w) % g.h;
    z = v / (g.w * g.h); // w * h fits: the host checks n < 2^32
}

// Reads a value other threads may change (the compiler must not cache it in a register).
__device__ __forceinline__ i64 load_excess(const i64 *e, unsigned v) {
    return *(volatile const i64 *)(e + v);
}
__device__ __forceinline__ int load_cap(const int *c, size_t i) {
    return *(volatile const int *)(c + i);
}
__device__ __forceinline__ unsigned load_label(const unsigned *l, i64 v) {
    return *(volatile const unsigned *)(l + v);
}

// sync: rcap (reverse arcs, +), excess (neighbours, +; own, -), flow (+), active (+)
// safe: label[v], sink_r[v], rcap[d*n + v] decreases and excess[v] decreases of the thread's own v
// Hong's lock-free push-relabel: each active node pushes to its lowest residual neighbour (the
// sink counts as label 0) while it is higher, or else relabels to one above that neighbour; up to
// max_ops operations per launch. With count != 0 the nodes still active at the end are counted.
extern "C" __global__ void pr_round(const Grid g, int *rcap, int *sink_r, i64 *excess,
                                    unsigned *label, u64 *flow, unsigned *active, int count,
                                    int max_ops) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= g.n) return;
    const unsigned inf = g.n + 1;
    unsigned x, y, z;
    coords(g, v, x, y, z);
    for (int op = 0; op < max_ops; ++op) {
        i64 e = load_excess(excess, v);
        unsigned h = label[v];
        if (e <= 0 || h >= inf) break;

        // The lowest residual neighbour; -1 is the sink.
        unsigned best_h = sink_r[v] > 0 ? 0u : 0xffffffffu;
        int best_d = -1;
        i64 best_w = -1;
        for (unsigned d = 0; d < g.deg && best_h > 0; ++d) {
            i64 w = neighbor(g, x, y, z, d);
            if (w < 0 || load_cap(rcap, (size_t)d * g.n + v) <= 0) continue;
            unsigned hw = load_label(label, w);
            if (hw < best_h) {
                best_h = hw;
                best_d = (int)d;
                best_w = w;
            }
        }
        if (best_h == 0xffffffffu) { // no residual arc at all: v cannot reach the sink
            label[v] = inf;
            break;
        }
        if (h <= best_h) { // relabel
            label[v] = best_h + 1 < inf ? best_h + 1 : inf;
            continue;
        }
        if (best_d < 0) { // push to the sink: sink_r[v] is v's alone
            int delta = (int)min(e, (i64)sink_r[v]);
            sink_r[v] -= delta;
            atomicAdd((u64 *)(excess + v), (u64)(-(i64)delta));
            atomicAdd(flow, (u64)delta);
        } else {
            size_t a = (size_t)best_d * g.n + v;
            size_t r = (size_t)(best_d ^ 1) * g.n + (size_t)best_w;
            // Only this thread decreases rcap[a], so it holds at least what was read above.
            int delta = (int)min(e, (i64)load_cap(rcap, a));
            atomicSub(rcap + a, delta);
            atomicAdd(rcap + r, delta);
            atomicAdd((u64 *)(excess + best_w), (u64)delta);
            atomicAdd((u64 *)(excess + v), (u64)(-(i64)delta));
        }
    }
    if (count && load_excess(excess, v) > 0 && label[v] < inf) atomicAdd(active, 1u);
}

// sync: none
// safe: label[v]
// Global relabel, first level: nodes with residual capacity to the sink are at distance 1, all
// others unreached (INF).
extern "C" __global__ void bfs_init(const Grid g, const int *sink_r, unsigned *label) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= g.n) return;
    label[v] = sink_r[v] > 0 ? 1u : g.n + 1;
}

// sync: reached (+); label of neighbours is read while they may change from INF to level + 1,
//       which never reads as `level`, so the result does not depend on the order
// safe: label[v]
// Global relabel, one level of the breadth-first search from the sink over residual arcs
// (pull form): an unreached node with a residual arc to a node at distance `level` is at
// distance level + 1.
extern "C" __global__ void bfs_level(const Grid g, const int *rcap, unsigned *label,
                                     unsigned level, unsigned *reached) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= g.n || label[v] != g.n + 1) return;
    unsigned x, y, z;
    coords(g, v, x, y, z);
    for (unsigned d = 0; d < g.deg; ++d) {
        i64 w = neighbor(g, x, y, z, d);
        if (w < 0 || rcap[(size_t)d * g.n + v] <= 0) continue;
        if (load_label(label, w) == level) {
            label[v] = level + 1;
            atomicAdd(reached, 1u);
            return;
        }
    }
}

// sync: active (+)
// safe: none (read only)
// Counts the active nodes (excess > 0 and able to reach the sink) after a global relabel.
extern "C" __global__ void count_active(const Grid g, const i64 *excess, const unsigned *label,
                                        unsigned *active) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= g.n) return;
    if (excess[v] > 0 && label[v] <= g.n) atomicAdd(active, 1u);
}

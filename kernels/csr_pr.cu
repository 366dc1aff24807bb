// csr_pr.cu: push-relabel max-flow on a general graph (cuda-csr). Launched only through the
// typed launchers of src/cuda/launch/csr_pr.rs, which hold every kernel's argument order and
// launch shape; src/maxflow/cuda/csr.rs drives them.
//
// Both phases run here: phase one ends with a maximum preflow and the canonical minimum cut;
// phase two, run only when arc flows are asked for, is the same loop with the source as the
// target (the host swaps the source capacities into sink_r), returning the excess left on
// source-side nodes.
//
// Layout (built on the host from a CsrGraph). Every arc pair is stored once, as a forward arc
// p = u -> v in a CSR by tail (fwd_first, fwd_head), with rf[p], the residual capacity of u -> v,
// and tot[p], the pair's total capacity cap(u -> v) + cap(v -> u). The residual of the reverse
// arc v -> u is tot[p] - rf[p]. A second CSR by head (rev_first, rev_tail, rev_arc) lists for
// every node v the forward arcs entering it: rev_tail[q] = u and rev_arc[q] = p. A node's
// neighbour slots are 0..dfwd (its forward arcs) followed by dfwd..dfwd+drev (its reverse ones).
//
// Why one word per pair is enough without locks (Hong 2008, extended to a shared pair word):
// - the residual of u -> v is rf[p], and only u decreases it (u's pushes on p: atomicSub);
//   v's pushes on v -> u increase it (atomicAdd);
// - the residual of v -> u is tot[p] - rf[p], and only v decreases it (v's pushes raise rf[p]);
//   u's pushes increase it.
// So each residual has one owner that decreases it; every other change increases it. When the
// owner reads a residual r and later pushes delta <= r, the current residual is at least r (only
// the owner itself could have lowered it), hence rf[p] stays within [0, tot[p]] and the push is
// always legal. Excesses follow the same rule (only the owner decreases its own, with atomics
// because others add to it concurrently), and sink residuals are only ever decreased by their
// owner. The amounts are exact; only the labels seen by concurrent groups may be stale, and the
// host's stop test does not trust labels: it stops only after a fresh BFS from the sink finds no
// node with excess that reaches the sink.
//
// The sink is implicit with label 0 (sink_r[v] is the residual of v -> t); labels 1..=n are
// distances (lower bounds), INF = n + 1 marks a node that cannot reach the sink.
//
// Threads work in groups of G = 2^log_g lanes (4..32, chosen on the host from the mean degree);
// a group takes one worklist item, its lanes scan the neighbour slots in strides of G, a shuffle
// minimum picks the lowest residual neighbour, and lane 0 pushes or relabels.

#include "common.cuh"

#define NO_SLOT 0xffffffffu

// Reads of values other groups may change (the compiler must not keep them in registers).
__device__ __forceinline__ i64 vload(const i64 *p) { return *(volatile const i64 *)p; }
__device__ __forceinline__ int vload(const int *p) { return *(volatile const int *)p; }
__device__ __forceinline__ unsigned vload(const unsigned *p) {
    return *(volatile const unsigned *)p;
}

// The lanes of this thread's group inside its warp, for the *_sync intrinsics.
__device__ __forceinline__ unsigned group_mask(unsigned g) {
    if (g == 32) return 0xffffffffu;
    unsigned base = (threadIdx.x & 31u) & ~(g - 1u);
    return ((1u << g) - 1u) << base;
}

// Adds w to the worklist of epoch `ep` unless it is already there (one slot per node and epoch).
__device__ __forceinline__ void enlist(unsigned w, unsigned ep, unsigned *stamp, unsigned *list,
                                       unsigned *count) {
    if (atomicExch(stamp + w, ep) != ep) list[atomicAdd(count, 1u)] = w;
}

// The neighbour slot `i` of v: its node and the residual capacity of v -> node.
__device__ __forceinline__ void slot(unsigned i, unsigned f0, unsigned df, unsigned r0,
                                     const unsigned *fwd_head, const unsigned *rev_tail,
                                     const unsigned *rev_arc, const int *rf, const int *tot,
                                     unsigned &w, int &res) {
    if (i < df) {
        unsigned p = f0 + i;
        w = fwd_head[p];
        res = vload(rf + p);
    } else {
        unsigned q = r0 + (i - df);
        unsigned p = rev_arc[q];
        w = rev_tail[q];
        res = tot[p] - vload(rf + p);
    }
}

// sync: label (others read it), stamp, list count (+)
// safe: list (own slot)
// Global relabel, first level: nodes with residual capacity to the sink are at distance 1 and
// form the first frontier; all others are unreached (INF).
extern "C" __global__ void bfs_init(unsigned n, const int *sink_r, unsigned *label,
                                    unsigned *frontier, unsigned *count) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    if (sink_r[v] > 0) {
        label[v] = 1;
        frontier[atomicAdd(count, 1u)] = v;
    } else {
        label[v] = n + 1;
    }
}

// Visits frontier node w at BFS level `level`: every unreached u with a residual arc u -> w gets
// distance level + 1 and joins the next frontier.
__device__ __forceinline__ void bfs_visit(unsigned w, unsigned n, const unsigned *fwd_first,
                                          const unsigned *fwd_head, const unsigned *rev_first,
                                          const unsigned *rev_tail, const unsigned *rev_arc,
                                          const int *rf, const int *tot, unsigned *label,
                                          unsigned *next, unsigned *next_count, unsigned level,
                                          unsigned g, unsigned lane) {
    const unsigned inf = n + 1;
    unsigned f0 = fwd_first[w], df = fwd_first[w + 1] - f0;
    unsigned r0 = rev_first[w], deg = df + rev_first[w + 1] - r0;
    for (unsigned i = lane; i < deg; i += g) {
        unsigned u;
        int res_in; // residual of u -> w
        if (i < df) {
            unsigned p = f0 + i;
            u = fwd_head[p];
            res_in = tot[p] - rf[p];
        } else {
            unsigned q = r0 + (i - df);
            u = rev_tail[q];
            res_in = rf[rev_arc[q]];
        }
        if (res_in > 0 && vload(label + u) == inf && atomicCAS(label + u, inf, level + 1) == inf)
            next[atomicAdd(next_count, 1u)] = u;
    }
}

// sync: label (atomicCAS from INF), counts[(level + 1) % 3] (+)
// safe: counts[(level + 2) % 3] (zeroed by thread 0: no group of this launch touches it), next
//       (own slots)
// Global relabel, one level of the breadth-first search from the sink over residual arcs (push
// form, a group per frontier node, see `bfs_visit`). The frontier size is read from
// counts[level % 3] on the device, so the host launches levels without reading anything back.
extern "C" __global__ void bfs_level(unsigned n, const unsigned *fwd_first,
                                     const unsigned *fwd_head, const unsigned *rev_first,
                                     const unsigned *rev_tail, const unsigned *rev_arc,
                                     const int *rf, const int *tot, unsigned *label,
                                     const unsigned *frontier, unsigned *next, unsigned *counts,
                                     unsigned level, unsigned log_g) {
    const unsigned g = 1u << log_g;
    const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid == 0) counts[(level + 2) % 3] = 0;
    const unsigned size = counts[level % 3];
    const unsigned lane = tid & (g - 1u);
    const unsigned groups = (gridDim.x * blockDim.x) >> log_g;
    for (unsigned k = tid >> log_g; k < size; k += groups)
        bfs_visit(frontier[k], n, fwd_first, fwd_head, rev_first, rev_tail, rev_arc, rf, tot, label,
                  next, counts + (level + 1) % 3, level, g, lane);
}

// sync: stamp, count (+)
// safe: list (own slots)
// After a global relabel: the worklist of epoch `ep`, every node with excess that reaches the
// sink.
extern "C" __global__ void compact_active(unsigned n, const i64 *excess, const unsigned *label,
                                          unsigned *stamp, unsigned *list, unsigned *count,
                                          unsigned ep) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= n) return;
    if (excess[v] > 0 && label[v] <= n) enlist(v, ep, stamp, list, count);
}

// One visit of node v by its group (up to max_ops pushes or relabels): push to the lowest residual
// neighbour (the sink counts as label 0) while v is higher, else relabel to one above it. Nodes
// that receive excess, and v itself while still active, join the worklist of epoch ep + 1.
//
// With `spread`, a push goes to every admissible neighbour at once (all residual arcs to the
// lowest label), an equal share e / K each (capped by the residual), when there are K > 1 of them
// and e >= K. One push then splits a large excess instead of carrying it whole along one arc: on
// GENRMF frames (in-frame arcs far larger than the inter-frame ones) the source's excess otherwise
// walks the frame one node per round. Each lane pushes on its own slots, at most as many as it
// counted, so the pushes add up to at most e even if labels change between the two passes; only
// v's group lowers v's residuals and excess, as the header's argument requires, and lane 0 takes
// the sum off v's excess (the group's lanes are not in step: a lane's own subtraction could still
// be pending when lane 0 reads the excess for the next operation).
__device__ __forceinline__ void discharge(unsigned v, unsigned n, const unsigned *fwd_first,
                                          const unsigned *fwd_head, const unsigned *rev_first,
                                          const unsigned *rev_tail, const unsigned *rev_arc,
                                          int *rf, const int *tot, int *sink_r, i64 *excess,
                                          unsigned *label, unsigned *stamp, u64 *flow,
                                          unsigned *next, unsigned *next_count, unsigned ep,
                                          unsigned g, unsigned lane, unsigned mask, int max_ops,
                                          int spread) {
    const unsigned inf = n + 1;
    const unsigned f0 = fwd_first[v], df = fwd_first[v + 1] - f0;
    const unsigned r0 = rev_first[v], deg = df + rev_first[v + 1] - r0;
    for (int op = 0; op < max_ops; ++op) {
        // The last operation's atomics on v's arcs were made by other lanes than the ones that
        // scan those slots now: __syncwarp orders memory among the group (a shuffle does not).
        __syncwarp(mask);
        // Lane 0 reads the node's state so that the whole group takes the same branch.
        i64 e = 0;
        unsigned h = 0;
        if (lane == 0) {
            e = vload(excess + v);
            h = label[v];
        }
        e = __shfl_sync(mask, e, 0, g);
        h = __shfl_sync(mask, h, 0, g);
        if (e <= 0 || h >= inf) break;

        // The lowest residual neighbour, as (label << 32 | slot); the sink is (0, NO_SLOT).
        u64 best = (lane == 0 && sink_r[v] > 0) ? (u64)NO_SLOT : ~0ull;
        for (unsigned i = lane; i < deg; i += g) {
            unsigned w;
            int res;
            slot(i, f0, df, r0, fwd_head, rev_tail, rev_arc, rf, tot, w, res);
            if (res > 0) {
                u64 key = ((u64)vload(label + w) << 32) | i;
                best = key < best ? key : best;
            }
        }
        for (unsigned off = g >> 1; off > 0; off >>= 1) {
            u64 other = __shfl_xor_sync(mask, best, off, g);
            best = other < best ? other : best;
        }
        if (best == ~0ull) { // no residual arc at all: v cannot reach the sink
            if (lane == 0) label[v] = inf;
            break;
        }
        const unsigned best_h = (unsigned)(best >> 32);
        if (h <= best_h) { // relabel
            if (lane == 0) label[v] = best_h + 1 < inf ? best_h + 1 : inf;
            continue;
        }
        if (spread && (unsigned)best != NO_SLOT) {
            unsigned c = 0; // this lane's admissible slots
            for (unsigned i = lane; i < deg; i += g) {
                unsigned w;
                int res;
                slot(i, f0, df, r0, fwd_head, rev_tail, rev_arc, rf, tot, w, res);
                if (res > 0 && vload(label + w) == best_h) ++c;
            }
            unsigned total = c;
            for (unsigned off = g >> 1; off > 0; off >>= 1)
                total += __shfl_xor_sync(mask, total, off, g);
            if (total > 1 && e >= (i64)total) {
                const i64 share = e / total;
                i64 sent = 0;
                for (unsigned i = lane; i < deg && c > 0; i += g) {
                    unsigned w;
                    int res;
                    slot(i, f0, df, r0, fwd_head, rev_tail, rev_arc, rf, tot, w, res);
                    if (res > 0 && vload(label + w) == best_h) {
                        --c;
                        int delta = (int)min(share, (i64)res);
                        if (i < df)
                            atomicSub(rf + f0 + i, delta);
                        else
                            atomicAdd(rf + rev_arc[r0 + (i - df)], delta);
                        atomicAdd((u64 *)(excess + w), (u64)delta);
                        enlist(w, ep + 1, stamp, next, next_count);
                        sent += delta;
                    }
                }
                // One subtraction by lane 0, after every lane's pushes: lane 0 reads v's excess
                // next, and must not see it before the other lanes' shares are taken off.
                for (unsigned off = g >> 1; off > 0; off >>= 1)
                    sent += __shfl_xor_sync(mask, sent, off, g);
                if (lane == 0 && sent > 0) atomicAdd((u64 *)(excess + v), (u64)(-sent));
                continue;
            }
        }
        if (lane == 0) {
            const unsigned i = (unsigned)best;
            if (i == NO_SLOT) { // push to the sink: sink_r[v] is v's alone
                int delta = (int)min(e, (i64)sink_r[v]);
                sink_r[v] -= delta;
                atomicAdd((u64 *)(excess + v), (u64)(-(i64)delta));
                atomicAdd(flow, (u64)delta);
            } else {
                unsigned w;
                int res;
                // Only v lowers this residual, so it still holds at least what the scan saw.
                slot(i, f0, df, r0, fwd_head, rev_tail, rev_arc, rf, tot, w, res);
                int delta = (int)min(e, (i64)res);
                if (i < df)
                    atomicSub(rf + f0 + i, delta);
                else
                    atomicAdd(rf + rev_arc[r0 + (i - df)], delta);
                atomicAdd((u64 *)(excess + w), (u64)delta);
                atomicAdd((u64 *)(excess + v), (u64)(-(i64)delta));
                enlist(w, ep + 1, stamp, next, next_count);
            }
        }
    }
    if (lane == 0 && vload(excess + v) > 0 && label[v] < inf)
        enlist(v, ep + 1, stamp, next, next_count);
}

// sync: rf (pair words, see the header), excess (neighbours +, own -), label (read by others),
//       stamp, flow (+), counts[(ep + 1) % 3] (+)
// safe: sink_r[v] and label[v] of the group's own node; counts[(ep + 2) % 3] (zeroed by thread 0)
// One round of Hong's lock-free push-relabel over the worklist of epoch `ep` (a group per active
// node, see `discharge`), for long worklists: the host launches one per round.
extern "C" __global__ void pr_round(unsigned n, const unsigned *fwd_first,
                                    const unsigned *fwd_head, const unsigned *rev_first,
                                    const unsigned *rev_tail, const unsigned *rev_arc, int *rf,
                                    const int *tot, int *sink_r, i64 *excess, unsigned *label,
                                    unsigned *stamp, u64 *flow, const unsigned *list,
                                    unsigned *next, unsigned *counts, unsigned ep,
                                    unsigned log_g, int max_ops, int spread) {
    const unsigned g = 1u << log_g;
    const unsigned tid = blockIdx.x * blockDim.x + threadIdx.x;
    if (tid == 0) counts[(ep + 2) % 3] = 0;
    const unsigned size = counts[ep % 3];
    const unsigned lane = tid & (g - 1u);
    const unsigned mask = group_mask(g);
    const unsigned groups = (gridDim.x * blockDim.x) >> log_g;
    for (unsigned k = tid >> log_g; k < size; k += groups)
        discharge(list[k], n, fwd_first, fwd_head, rev_first, rev_tail, rev_arc, rf, tot, sink_r,
                  excess, label, stamp, flow, next, counts + (ep + 1) % 3, ep, g, lane, mask,
                  max_ops, spread);
}

// Block-wide loops for short worklists and frontiers. One block of SMALL_THREADS runs round after
// round (or level after level) with __syncthreads() between them, which also makes each round's
// global writes visible to the next; the host is not involved until the list outgrows `limit`,
// empties, or `max_steps` are done. Launch overhead, not work, dominates rounds over a few hundred
// nodes (the long RLG and GENRMF families run tens of thousands of them).
#define SMALL_THREADS 1024

// sync: as pr_round; state[0] (the epoch reached) and state[1] (rounds done) are written by
//       thread 0 at the end
// safe: counts[(ep + 2) % 3] (zeroed by thread 0 between barriers)
// Rounds of pr_round's work over lists[ep % 2] (next: lists[(ep + 1) % 2]) while the list is
// non-empty and at most `limit` long, at most `max_steps` of them.
extern "C" __global__ void __launch_bounds__(SMALL_THREADS)
    pr_small(unsigned n, const unsigned *fwd_first, const unsigned *fwd_head,
             const unsigned *rev_first, const unsigned *rev_tail, const unsigned *rev_arc, int *rf,
             const int *tot, int *sink_r, i64 *excess, unsigned *label, unsigned *stamp, u64 *flow,
             unsigned *list0, unsigned *list1, unsigned *counts, unsigned *state, unsigned ep,
             unsigned log_g, int max_ops, int spread, unsigned limit, unsigned max_steps) {
    const unsigned g = 1u << log_g;
    const unsigned tid = threadIdx.x;
    const unsigned lane = tid & (g - 1u);
    const unsigned mask = group_mask(g);
    const unsigned groups = blockDim.x >> log_g;
    unsigned step = 0;
    for (; step < max_steps; ++step, ++ep) {
        const unsigned size = vload(counts + ep % 3);
        if (size == 0 || size > limit) break;
        if (tid == 0) counts[(ep + 2) % 3] = 0;
        __syncthreads(); // everyone has read the size before it is reused three rounds on
        const unsigned *list = ep % 2 ? list1 : list0;
        unsigned *next = ep % 2 ? list0 : list1;
        for (unsigned k = tid >> log_g; k < size; k += groups)
            discharge(list[k], n, fwd_first, fwd_head, rev_first, rev_tail, rev_arc, rf, tot,
                      sink_r, excess, label, stamp, flow, next, counts + (ep + 1) % 3, ep, g, lane,
                      mask, max_ops, spread);
        __syncthreads();
    }
    if (tid == 0) {
        state[0] = ep;
        state[1] = step;
    }
}

// sync: label (atomicCAS from INF), counts (ring as bfs_level); state[0] (the level reached)
//       written by thread 0 at the end
// The BFS levels of bfs_level over frontiers lists[level % 2] while the frontier is non-empty and
// at most `limit` long, at most `max_steps` levels.
extern "C" __global__ void __launch_bounds__(SMALL_THREADS)
    bfs_small(unsigned n, const unsigned *fwd_first, const unsigned *fwd_head,
              const unsigned *rev_first, const unsigned *rev_tail, const unsigned *rev_arc,
              const int *rf, const int *tot, unsigned *label, unsigned *list0, unsigned *list1,
              unsigned *counts, unsigned *state, unsigned level, unsigned log_g, unsigned limit,
              unsigned max_steps) {
    const unsigned g = 1u << log_g;
    const unsigned tid = threadIdx.x;
    const unsigned lane = tid & (g - 1u);
    const unsigned groups = blockDim.x >> log_g;
    for (unsigned step = 0; step < max_steps; ++step, ++level) {
        const unsigned size = vload(counts + level % 3);
        if (size == 0 || size > limit) break;
        if (tid == 0) counts[(level + 2) % 3] = 0;
        __syncthreads();
        const unsigned *frontier = level % 2 ? list1 : list0;
        unsigned *next = level % 2 ? list0 : list1;
        for (unsigned k = tid >> log_g; k < size; k += groups)
            bfs_visit(frontier[k], n, fwd_first, fwd_head, rev_first, rev_tail, rev_arc, rf, tot,
                      label, next, counts + (level + 1) % 3, level, g, lane);
        __syncthreads();
    }
    if (tid == 0) state[0] = level;
}

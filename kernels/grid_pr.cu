// grid_pr.cu: push-relabel max-flow on a GridGraph (cuda-grid). Launched only through the typed
// launchers of src/cuda/launch/grid_pr.rs, which hold every kernel's argument order and launch
// shape; src/maxflow/cuda/grid.rs drives them.
//
// Both phases run here. Phase one moves excess towards the sink and ends with a maximum preflow
// and the canonical minimum cut; phase two, run only when arc flows are asked for, is the same
// loop with the source as the target: the host swaps the source capacities into sink_r, and the
// kernels return the excess left on source-side nodes.
//
// Layout (the GridGraph layout): node v = x + W*(y + H*z); rcap[d*n + v] is the residual capacity
// of the arc v -> neighbour(v, d), and direction d ^ 1 is its reverse. The target is implicit,
// with label 0; sink_r[v] is the residual capacity of v -> target. Source arcs are saturated on
// the device at the start (init_terminals).
//
// Labels: 0..=n are distances (or lower bounds on them); INF = n + 1 marks a node that cannot
// reach the target. Such a node is inactive: its excess cannot change the minimum cut.
//
// Concurrency (Hong 2008): a node's outgoing residual capacities and its excess are decreased
// only by that node's own thread (or its tile's block, below), so a value it read is a lower
// bound of the current one and the amount it pushes is always available; increases made by
// others are atomicAdd. The host never trusts the labels for the answer: it stops only after a
// fresh breadth-first search from the target finds no node with excess that reaches it.

#include "common.cuh"

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
// The discharge of 26-connected grids, where a tile's 8 colour classes would leave most of its
// block idle: Hong's lock-free push-relabel, a thread per node. Each active node pushes to its
// lowest residual neighbour (the sink counts as label 0) while it is higher, or else relabels to
// one above that neighbour; up to max_ops operations per launch. With count != 0 the nodes still
// active at the end are counted.
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

// Takes up to `want` from the residual capacity *c, which other threads may be taking from at
// the same time (push_paths); returns what it took, 0 when nothing was left.
__device__ __forceinline__ int claim_cap(int *c, i64 want) {
    int cur = load_cap(c, 0);
    while (cur > 0) {
        const int take = (int)min((i64)cur, want);
        const int seen = atomicCAS(c, cur, cur - take);
        if (seen == cur) return take;
        cur = seen;
    }
    return 0;
}

// sync: rcap (decreased by any thread, each decrease an atomicCAS that cannot go below zero;
//       increases atomic), sink_r (as rcap), excess (taken by atomicExch, added to atomically),
//       flow (+), moved (+)
// safe: label (no kernel changes a label while this one runs)
// The tail finish, run with the exact distance labels of a global relabel once few nodes are
// active. Each active node's thread takes its excess and carries it down a path of admissible
// arcs (label[w] == label[v] - 1) to the sink: at each node it sends what it can into the sink
// arc, then into every admissible arc in turn (claiming capacity with a compare-and-swap, since
// other carriers share the arcs), follows the first arc that took anything with that amount,
// leaves what the other arcs took at their heads (a plain push), and leaves the rest at the
// node. Every step is a push on an admissible arc of a valid labelling, so the preflow and the
// labelling stay valid and the solve's stop test is unchanged. The tile rounds move excess at
// most a tile's width per round; a carrier crosses the whole distance in one launch, which is
// what the long low tail of the activity profile needs.
// A carrier stops where all of a node's admissible arcs are used up: none of them can gain
// capacity during the launch (that needs a push from a lower node), so the next global relabel
// raises that node, as a relabel in push-relabel would. `moved` counts carriers that pushed.
extern "C" __global__ void push_paths(const Grid g, int *rcap, int *sink_r, i64 *excess,
                                      const unsigned *label, u64 *flow, unsigned *moved) {
    const unsigned u = blockIdx.x * blockDim.x + threadIdx.x;
    if (u >= g.n) return;
    if (load_excess(excess, u) <= 0 || label[u] > g.n) return;
    i64 carry = (i64)atomicExch((u64 *)(excess + u), 0ull);
    if (carry <= 0) { // another carrier's deposit raced ahead of a (settled) negative value
        if (carry != 0) atomicAdd((u64 *)(excess + u), (u64)carry);
        return;
    }
    bool pushed = false;
    unsigned v = u;
    for (;;) {
        if (load_cap(sink_r, v) > 0) {
            const int took = claim_cap(sink_r + v, carry);
            if (took > 0) {
                atomicAdd(flow, (u64)took);
                carry -= took;
                pushed = true;
            }
        }
        const unsigned h = label[v];
        unsigned x, y, z;
        coords(g, v, x, y, z);
        i64 next = -1, next_amount = 0;
        for (unsigned d = 0; d < g.deg && carry > 0; ++d) {
            const i64 w = neighbor(g, x, y, z, d);
            if (w < 0 || label[w] + 1 != h) continue;
            const size_t a = (size_t)d * g.n + v;
            if (load_cap(rcap, a) <= 0) continue;
            const int took = claim_cap(rcap + a, carry);
            if (took == 0) continue;
            atomicAdd(rcap + (size_t)(d ^ 1) * g.n + (size_t)w, took);
            carry -= took;
            pushed = true;
            if (next < 0) {
                next = w;
                next_amount = took;
            } else {
                atomicAdd((u64 *)(excess + w), (u64)took);
            }
        }
        if (carry > 0) atomicAdd((u64 *)(excess + v), (u64)carry);
        if (next < 0) break;
        v = (unsigned)next;
        carry = next_amount;
    }
    if (pushed) atomicAdd(moved, 1u);
}

// ---------------------------------------------------------------------------------------------
// Tiled solver: the grid is cut into tiles (TX × TY × TZ nodes); a thread block loads one tile
// into shared memory, runs many push/relabel sweeps there (region discharge), and writes back.
// Only tiles on a worklist are launched. The global relabel is a breadth-first search computed as
// tile-local fixed points (Bellman-Ford inside the tile, in shared memory; on 2D grids a warp's
// search by levels over bit masks, bfs_wtile) iterated over tiles until no tile changes.
//
// Inside a tile, nodes act by colour classes in which no two nodes are neighbours (2 classes by
// parity for N4 and N6; 4 for N8 and 8 for N26 by the parities of each coordinate), with a
// barrier between classes. A node acting thus sees its neighbours' labels and its own arcs and
// excess unchanging, as in the sequential algorithm; only a neighbour's excess is added to by
// several nodes at once (shared atomics).
//
// Between blocks, ownership is as in the node kernels above, at tile level:
// - an arc with both ends in the tile (interior) is touched only by this block while it runs: it
//   lives in shared memory and is written back by value;
// - an arc leaving the tile (boundary) is decreased only by its tail's block: the shared copy is
//   a lower bound of the global value, and every push on it is applied to global memory at once
//   (decrease of v -> w, atomic increase of w -> v and of w's excess);
// - a node's excess may grow by pushes from other tiles while its tile runs, so the block writes
//   back its net change (atomicAdd of ex - ex0), never the value.
// Halo labels are read once per launch and may be stale; exactness rests on the host's stop test
// (a fresh global relabel finds no active node), never on the labels.

template <int DEG> struct Tile;
template <> struct Tile<4> { enum { X = 32, Y = 16, Z = 1, IS3D = 0, NCOL = 2 }; };
template <> struct Tile<8> { enum { X = 32, Y = 16, Z = 1, IS3D = 0, NCOL = 4 }; };
template <> struct Tile<6> { enum { X = 32, Y = 4, Z = 4, IS3D = 1, NCOL = 2 }; };
template <> struct Tile<26> { enum { X = 16, Y = 4, Z = 4, IS3D = 1, NCOL = 8 }; };

template <int DEG> struct TileGeom {
    enum {
        TX = Tile<DEG>::X, TY = Tile<DEG>::Y, TZ = Tile<DEG>::Z, IS3D = Tile<DEG>::IS3D,
        NCOL = Tile<DEG>::NCOL,
        T = TX * TY * TZ,
        PERCOL = T / NCOL,                                   // nodes of one colour
        STEPS = (PERCOL + BLOCK - 1) / BLOCK,      // of one colour, per thread
        HX = TX + 2, HY = TY + 2, HZ = IS3D ? TZ + 2 : 1,
        HN = HX * HY * HZ,
    };
    __device__ static const int *off(int d) { return IS3D ? OFFSETS_3D[d] : OFFSETS_2D[d]; }
    // Offset of neighbour d in the halo array.
    __device__ static int hoff(int d) {
        const int *o = off(d);
        return o[0] + HX * (o[1] + HY * o[2]);
    }
    // The q-th node of colour c, in tile coordinates.
    __device__ static void colour_node(int c, int q, int &lx, int &ly, int &lz) {
        if (NCOL == 2) { // parity of x + y + z
            int m = q % (TX / 2), rest = q / (TX / 2);
            ly = rest % TY;
            lz = rest / TY;
            lx = 2 * m + ((ly + lz + c) & 1);
        } else { // parity of each coordinate
            int m = q % (TX / 2), r = q / (TX / 2) % (TY / 2), s = q / ((TX / 2) * (TY / 2));
            lx = 2 * m + (c & 1);
            ly = 2 * r + ((c >> 1) & 1);
            lz = IS3D ? 2 * s + ((c >> 2) & 1) : 0;
        }
    }
    __device__ static bool inside(int x, int y, int z) {
        return x >= 0 && y >= 0 && z >= 0 && x < TX && y < TY && z < TZ;
    }
    __device__ static int tidx(int x, int y, int z) { return x + TX * (y + TY * z); }
    __device__ static int hidx(int x, int y, int z) {
        return (x + 1) + HX * ((y + 1) + HY * (z + IS3D));
    }
};

// The tile's origin and the number of tiles along x and y.
struct TilePos {
    unsigned ox, oy, oz, ntx, nty;
};

template <int DEG> __device__ __forceinline__ TilePos tile_pos(const Grid g, unsigned tile) {
    typedef TileGeom<DEG> G;
    TilePos p;
    p.ntx = (g.w + G::TX - 1) / G::TX;
    p.nty = (g.h + G::TY - 1) / G::TY;
    p.ox = (tile % p.ntx) * G::TX;
    p.oy = (tile / p.ntx % p.nty) * G::TY;
    p.oz = (tile / (p.ntx * p.nty)) * G::TZ;
    return p;
}

template <int DEG>
__device__ __forceinline__ unsigned tile_of(const TilePos &p, unsigned x, unsigned y, unsigned z) {
    typedef TileGeom<DEG> G;
    return x / G::TX + p.ntx * (y / G::TY + p.nty * (z / G::TZ));
}

__device__ __forceinline__ bool in_grid(const Grid g, int x, int y, int z) {
    return x >= 0 && y >= 0 && z >= 0 && (unsigned)x < g.w && (unsigned)y < g.h &&
           (unsigned)z < g.d;
}

__device__ __forceinline__ size_t gidx(const Grid g, int x, int y, int z) {
    return x + (size_t)g.w * (y + (size_t)g.h * z);
}

// Loads the labels of a tile and its one-node halo (INF outside the grid).
template <int DEG>
__device__ void load_halo(const Grid g, const TilePos &p, const unsigned *label, unsigned *lab) {
    typedef TileGeom<DEG> G;
    for (int i = threadIdx.x; i < G::HN; i += BLOCK) {
        int x = (int)p.ox + i % G::HX - 1, y = (int)p.oy + i / G::HX % G::HY - 1;
        int z = G::IS3D ? (int)p.oz + i / (G::HX * G::HY) - 1 : 0;
        lab[i] = in_grid(g, x, y, z) ? label[gidx(g, x, y, z)] : g.n + 1;
    }
}

// sync: flags (set to 1 from any thread)
// safe: label[v]
// Global relabel, start: distance 1 for nodes with residual capacity to the sink, INF for all
// others; the tiles holding or touching a distance-1 node are flagged for the first pass.
template <int DEG>
__device__ void bfs_seed_at(const Grid g, const int *sink_r, unsigned *label, unsigned *flags,
                            unsigned v) {
    unsigned x, y, z;
    coords(g, v, x, y, z);
    bool seed = sink_r[v] > 0;
    label[v] = seed ? 1u : g.n + 1;
    if (!seed) return;
    // The seed's tile, and the tiles next to it: a seed's label never changes in a pass, so no
    // pass would flag them on its account.
    const TilePos p = tile_pos<DEG>(g, 0);
    unsigned own = tile_of<DEG>(p, x, y, z);
    flags[own] = 1;
    for (int d = 0; d < DEG; ++d) {
        const int *o = TileGeom<DEG>::off(d);
        int ax = (int)x + o[0], ay = (int)y + o[1], az = (int)z + o[2];
        if (in_grid(g, ax, ay, az)) {
            unsigned t = tile_of<DEG>(p, ax, ay, az);
            if (t != own) flags[t] = 1;
        }
    }
}

template <int DEG>
__device__ void bfs_seed(const Grid g, const int *sink_r, unsigned *label, unsigned *flags) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v < g.n) bfs_seed_at<DEG>(g, sink_r, label, flags, v);
}

// sync: flags (set to 1 from any thread)
// safe: label[v]
// Local relabel after a warm start, start: the labels of the last solve's final global relabel
// are exact distances in the residual graph it left; the new terminal capacities only add or
// remove sink arcs. A node that gained a sink residual gets label 1 where it had more, and its
// tile and the tiles next to it are flagged; bfs_tile passes from there lower the labels of the
// region that now reaches the sink sooner. The result is a valid labelling (no residual arc
// drops by more than one), not an exact one: the host stops only on a full relabel.
template <int DEG>
__device__ void bfs_reseed(const Grid g, const int *sink_r, unsigned *label, unsigned *flags) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= g.n) return;
    if (sink_r[v] <= 0 || label[v] <= 1u) return;
    label[v] = 1u;
    unsigned x, y, z;
    coords(g, v, x, y, z);
    const TilePos p = tile_pos<DEG>(g, 0);
    unsigned own = tile_of<DEG>(p, x, y, z);
    flags[own] = 1;
    for (int d = 0; d < DEG; ++d) {
        const int *o = TileGeom<DEG>::off(d);
        int ax = (int)x + o[0], ay = (int)y + o[1], az = (int)z + o[2];
        if (in_grid(g, ax, ay, az)) {
            unsigned t = tile_of<DEG>(p, ax, ay, az);
            if (t != own) flags[t] = 1;
        }
    }
}

// sync: flags (set to 1), count (atomic)
// safe: flags[t] cleared by its own thread
// Turns the flags into a list of tiles (in any order) and clears them; count must be zero.
// Tile t's part of it; every lane of the warp calls (the ballot), t past ntiles included.
__device__ __forceinline__ void list_tile(unsigned t, unsigned ntiles, unsigned *flags,
                                          unsigned *list, unsigned *count) {
    bool f = t < ntiles && flags[t] != 0;
    unsigned lane = threadIdx.x & 31;
    unsigned m = __ballot_sync(0xffffffffu, f);
    if (m == 0) return;
    unsigned leader = __ffs(m) - 1, base = 0;
    if (lane == leader) base = atomicAdd(count, (unsigned)__popc(m));
    base = __shfl_sync(0xffffffffu, base, leader);
    if (f) {
        flags[t] = 0;
        list[base + __popc(m & ((1u << lane) - 1))] = t;
    }
}

extern "C" __global__ void build_list(unsigned ntiles, unsigned *flags, unsigned *list,
                                      unsigned *count) {
    list_tile(blockIdx.x * blockDim.x + threadIdx.x, ntiles, flags, list, count);
}

// sync: label (other tiles' halo reads see old or new values; both are upper bounds of the
//       distance, and a decrease on a tile's border flags the neighbour tile for the next pass)
// safe: label of the tile's own nodes
// One pass of the tile-wise global relabel over the listed tiles: each tile iterates
// label(v) = min(label(v), 1 + label(w)) over residual arcs v -> w to a fixed point in shared
// memory (colour by colour), with its halo fixed.
// `lab` is a shared array of TileGeom<DEG>::HN entries (the caller's, so that the persistent
// solve below can share one between this and the discharge).
template <int DEG>
__device__ void bfs_one_tile(const Grid g, const int *rcap, unsigned *label, const unsigned tile,
                             unsigned *flags, unsigned *lab) {
    typedef TileGeom<DEG> G;
    const TilePos p = tile_pos<DEG>(g, tile);
    load_halo<DEG>(g, p, label, lab);
    // Residual arcs of this thread's nodes, as bit masks; -1 marks a slot with no node.
    unsigned mask[G::NCOL][G::STEPS];
    int hix[G::NCOL][G::STEPS];
#pragma unroll
    for (int c = 0; c < G::NCOL; ++c) {
#pragma unroll
        for (int s = 0; s < G::STEPS; ++s) {
            int q = threadIdx.x + s * BLOCK, lx, ly, lz;
            mask[c][s] = 0;
            hix[c][s] = -1;
            if (q >= G::PERCOL) continue;
            G::colour_node(c, q, lx, ly, lz);
            int x = p.ox + lx, y = p.oy + ly, z = p.oz + lz;
            if (!in_grid(g, x, y, z)) continue;
            size_t v = gidx(g, x, y, z);
            hix[c][s] = G::hidx(lx, ly, lz);
            for (int d = 0; d < DEG; ++d) {
                const int *o = G::off(d);
                if (in_grid(g, x + o[0], y + o[1], z + o[2]) && rcap[(size_t)d * g.n + v] > 0)
                    mask[c][s] |= 1u << d;
            }
        }
    }
    __syncthreads();
    unsigned orig[G::NCOL][G::STEPS];
#pragma unroll
    for (int c = 0; c < G::NCOL; ++c)
#pragma unroll
        for (int s = 0; s < G::STEPS; ++s) orig[c][s] = hix[c][s] >= 0 ? lab[hix[c][s]] : 0;
    for (;;) {
        int changed = 0;
#pragma unroll
        for (int c = 0; c < G::NCOL; ++c) {
#pragma unroll
            for (int s = 0; s < G::STEPS; ++s) {
                int hi = hix[c][s];
                if (hi < 0) continue;
                unsigned cur = lab[hi];
                if (cur <= 1) continue;
                unsigned best = cur;
                for (unsigned m = mask[c][s]; m; m &= m - 1) {
                    unsigned hw = lab[hi + G::hoff(__ffs(m) - 1)];
                    if (hw + 1 < best) best = hw + 1;
                }
                if (best < cur) {
                    lab[hi] = best;
                    changed = 1;
                }
            }
            if (c + 1 < G::NCOL) __syncthreads();
        }
        if (!__syncthreads_or(changed)) break;
    }
#pragma unroll
    for (int c = 0; c < G::NCOL; ++c) {
#pragma unroll
        for (int s = 0; s < G::STEPS; ++s) {
            int hi = hix[c][s];
            if (hi < 0 || lab[hi] == orig[c][s]) continue;
            int q = threadIdx.x + s * BLOCK, lx, ly, lz;
            G::colour_node(c, q, lx, ly, lz);
            int x = p.ox + lx, y = p.oy + ly, z = p.oz + lz;
            label[gidx(g, x, y, z)] = lab[hi];
            // A changed border node may shorten paths in the tiles next to it.
            for (int d = 0; d < DEG; ++d) {
                const int *o = G::off(d);
                if (!G::inside(lx + o[0], ly + o[1], lz + o[2]) &&
                    in_grid(g, x + o[0], y + o[1], z + o[2]))
                    flags[tile_of<DEG>(p, x + o[0], y + o[1], z + o[2])] = 1;
            }
        }
    }
}

// The listed tiles, block-strided: the launch holds as many blocks as fit on the GPU at once
// (or one per tile), not one per tile of the grid, so short lists do not pay for idle blocks.
template <int DEG>
__device__ void bfs_tile(const Grid g, const int *rcap, unsigned *label, const unsigned *list,
                         const unsigned *count, unsigned *flags) {
    __shared__ unsigned lab[TileGeom<DEG>::HN];
    const unsigned m = *count;
    for (unsigned b = blockIdx.x; b < m; b += gridDim.x) {
        bfs_one_tile<DEG>(g, rcap, label, list[b], flags, lab);
        __syncthreads(); // the next tile reuses the shared arrays
    }
}

// ---------------------------------------------------------------------------------------------
// Warp-per-tile global relabel for 2D grids (N4 and N8, whose tiles are 32 nodes wide).
//
// ncu on the 4K photo graphs showed bfs_tile spending its time at block barriers: every sweep
// of a tile's fixed point is NCOL colour classes with a barrier after each, and a tile needs
// as many sweeps as its longest chain of label changes (2.6 % of DRAM bandwidth, 47 % of the
// issue slots waiting at barriers, 340 us per pass at 4K on an H200). Here one warp computes a
// tile's fixed point on its own as a breadth-first search by levels over bit masks: lane r holds
// row r of the tile as a 32-bit word, and one level is a few shifts and ANDs per direction and
// two shuffles. The residual arcs come packed as bits (res_bits, once per global relabel), so a
// pass reads DEG words per tile row instead of DEG capacities per node.

// sync: none
// safe: bits[...] of the thread's own warp's row word (written by its lane 0)
// Packs which arcs have residual capacity, for the global relabel that follows: word
// bits[(d * h + y) * ww + x / 32], ww = ceil(w / 32), has bit x % 32 set when
// rcap[d*n + v] > 0 for node v = (x, y) and v's neighbour in direction d lies in the grid. `i`
// numbers the threads of the layout (y, word, lane); every lane of a warp calls (the ballot).
template <int DEG>
__device__ void res_bits_at(const Grid g, const int *rcap, unsigned *bits, size_t i) {
    const unsigned ww = (g.w + 31) / 32;
    const unsigned lane = (unsigned)(i & 31), word = (unsigned)((i >> 5) % ww);
    const unsigned y = (unsigned)((i >> 5) / ww), x = word * 32 + lane;
    const bool ok = y < g.h && x < g.w;
    for (int d = 0; d < DEG; ++d) {
        const int *o = OFFSETS_2D[d];
        const bool r = ok && in_grid(g, (int)x + o[0], (int)y + o[1], 0) &&
                       rcap[(size_t)d * g.n + gidx(g, x, y, 0)] > 0;
        const unsigned m = __ballot_sync(0xffffffffu, r);
        if (lane == 0 && y < g.h) bits[((size_t)d * g.h + y) * ww + word] = m;
    }
}

// Threads of the res_bits layout: a warp per row word.
__device__ __forceinline__ size_t res_bits_threads(const Grid g) {
    return (size_t)g.h * ((g.w + 31) / 32) * 32;
}

template <int DEG> __device__ void res_bits(const Grid g, const int *rcap, unsigned *bits) {
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < res_bits_threads(g)) res_bits_at<DEG>(g, rcap, bits, i); // whole warps: 32 | total
}

// The work queue of the queued global relabel (bfs_wqueue, below). Tiles whose halo fell are
// queued at once instead of being flagged for the next pass, so a relabel is one launch whose
// warps take tiles as they come, not a pass per tile width of the longest path.
// ring[ntiles]: slot i % ntiles holds tile + 1 once published, 0 when empty (zero at launch).
// ctl[QCTL_*]: head and tail (claimed and published slot counts), work (tiles queued and not yet
// finished: the relabel is over when it is 0 with nothing left to claim), visits (tiles
// processed), depth (the deepest chain of queuings, the queued relabel's "passes").
// depth[t]: the chain length at which t was last queued.
// A tile is in the ring at most once: its flag is set (atomicExch) by whoever queues it and
// cleared by the warp that takes it, so at most ntiles slots are ever published and not yet
// taken, and a slot is never reused before its tile was read.
#define QCTL_HEAD 10
#define QCTL_TAIL 11
#define QCTL_WORK 12
#define QCTL_VISITS 13
#define QCTL_DEPTH 14
struct TileQueue {
    unsigned *ring;
    unsigned *ctl;
    unsigned *depth;
    unsigned ntiles;
    unsigned level; // the depth of the tile being processed
};

// Queues tile t unless it is queued already. The caller has just lowered a label on t's
// border (the fence makes that label visible before t can be taken).
__device__ __forceinline__ void queue_tile(const TileQueue &q, unsigned *flags, unsigned t) {
    __threadfence();
    if (atomicExch(flags + t, 1u) != 0u) return;
    q.depth[t] = q.level + 1;
    atomicMax(q.ctl + QCTL_DEPTH, q.level + 1);
    atomicAdd(q.ctl + QCTL_WORK, 1u); // before it can be taken: work never reads 0 early
    const unsigned at = atomicAdd(q.ctl + QCTL_TAIL, 1u);
    __threadfence(); // depth[t] before the slot
    atomicExch(q.ring + at % q.ntiles, t + 1);
}

// sync: label (halo reads, through L2, see old or new values of the tiles next to this one)
// safe: label of the tile's own nodes (only this warp writes them), lv (this warp's own)
// One tile's fixed point of label(v) = min over residual arcs v -> w of 1 + label(w), by one
// warp, as a breadth-first search by levels from the tile's seeds: its distance-1 nodes (label
// 1, set by bfs_seed where the sink residual is positive) and its border nodes at 1 + the label
// of a halo node they have a residual arc to. The tile's other old labels are not seeds: in a
// global relabel each came from the same seeds with halo labels at least as large (labels only
// decrease, and halo and own labels are read through L2, never from a stale L1 line), so the
// new fixed point is at most the old one everywhere and equals what bfs_one_tile's iteration
// from the old labels reaches. (The local relabel of a warm start keeps labels that did not
// come from these seeds: it uses bfs_tile.) Levels that hold no node are skipped: when the
// frontier empties, the search jumps to the smallest seed not yet reached.
// `lv` holds TY * 32 entries, this warp's own: the new labels by row.
// With QUEUE the tiles next to a lowered border node are queued at once (`q`) and labels fall
// by atomicMin: a tile queued again while a warp still works on it may be taken by a second
// warp, and of two writers the lower label must win (each is the length of a real path).
template <int DEG, bool QUEUE = false>
__device__ void bfs_warp_tile(const Grid g, const unsigned *bits, unsigned *label,
                              const unsigned tile, unsigned *flags, unsigned *lv,
                              const TileQueue q = TileQueue{}) {
    typedef TileGeom<DEG> G;
    const unsigned FULL = 0xffffffffu, INF = g.n + 1, TOP = 0x80000000u;
    const int TY = G::TY;
    const int lane = threadIdx.x & 31;
    const unsigned bit = 1u << lane;
    const TilePos p = tile_pos<DEG>(g, tile);
    const unsigned ww = (g.w + 31) / 32, word = p.ox / 32;
    // Lane r holds row y = oy + r of the tile (r < TY) and column x = ox + r of the rows above
    // and below it.
    const unsigned ry = p.oy + lane, cx = p.ox + lane;
    const bool row = lane < TY && ry < g.h, col = cx < g.w;
    unsigned R[8];
#pragma unroll
    for (int d = 0; d < 8; ++d)
        R[d] = d < DEG && row ? bits[((size_t)d * g.h + ry) * ww + word] : 0u;
    // The halo: left and right of this lane's row, above and below this lane's column, corners.
    const bool has_l = p.ox > 0, has_r = p.ox + 32 < g.w;
    const bool has_t = p.oy > 0, has_b = p.oy + TY < g.h;
    const unsigned hl = row && has_l ? load_label(label, gidx(g, p.ox - 1, ry, 0)) : INF;
    const unsigned hr = row && has_r ? load_label(label, gidx(g, p.ox + 32, ry, 0)) : INF;
    const unsigned ht = col && has_t ? load_label(label, gidx(g, cx, p.oy - 1, 0)) : INF;
    const unsigned hb = col && has_b ? load_label(label, gidx(g, cx, p.oy + TY, 0)) : INF;
    const unsigned tl = has_t && has_l ? load_label(label, gidx(g, p.ox - 1, p.oy - 1, 0)) : INF;
    const unsigned tr = has_t && has_r ? load_label(label, gidx(g, p.ox + 32, p.oy - 1, 0)) : INF;
    const unsigned bl = has_b && has_l ? load_label(label, gidx(g, p.ox - 1, p.oy + TY, 0)) : INF;
    const unsigned br = has_b && has_r ? load_label(label, gidx(g, p.ox + 32, p.oy + TY, 0)) : INF;
    // Neighbouring halo values by shuffles (every lane takes part; the ends take the corners).
    unsigned hl_up = __shfl_up_sync(FULL, hl, 1), hl_dn = __shfl_down_sync(FULL, hl, 1);
    unsigned hr_up = __shfl_up_sync(FULL, hr, 1), hr_dn = __shfl_down_sync(FULL, hr, 1);
    unsigned ht_l = __shfl_up_sync(FULL, ht, 1), ht_r = __shfl_down_sync(FULL, ht, 1);
    unsigned hb_l = __shfl_up_sync(FULL, hb, 1), hb_r = __shfl_down_sync(FULL, hb, 1);
    if (lane == 0) { hl_up = tl; hr_up = tr; ht_l = tl; hb_l = bl; }
    if (lane == TY - 1) { hl_dn = bl; hr_dn = br; }
    if (lane == 31) { ht_r = tr; hb_r = br; }
    // The rows next to the halo, for the column lanes.
    const unsigned t0[3] = {__shfl_sync(FULL, R[3], 0), __shfl_sync(FULL, R[5], 0),
                            __shfl_sync(FULL, R[6], 0)};
    const unsigned b0[3] = {__shfl_sync(FULL, R[2], TY - 1), __shfl_sync(FULL, R[7], TY - 1),
                            __shfl_sync(FULL, R[4], TY - 1)};
    // Seeds through the halo (INF: none). Halo labels are at most INF, so 1 + h does not wrap.
    unsigned cl = INF, cr = INF, ct = INF, cb = INF;
    if (R[1] & 1u) cl = min(cl, hl + 1);      // (-1, 0)
    if (R[0] & TOP) cr = min(cr, hr + 1);     // (+1, 0)
    if (t0[0] & bit) ct = min(ct, ht + 1);    // (0, -1)
    if (b0[0] & bit) cb = min(cb, hb + 1);    // (0, +1)
    if (DEG == 8) {
        if (R[5] & 1u) cl = min(cl, hl_up + 1);  // (-1, -1)
        if (R[7] & 1u) cl = min(cl, hl_dn + 1);  // (-1, +1)
        if (R[6] & TOP) cr = min(cr, hr_up + 1); // (+1, -1)
        if (R[4] & TOP) cr = min(cr, hr_dn + 1); // (+1, +1)
        if (t0[1] & bit) ct = min(ct, ht_l + 1); // (-1, -1)
        if (t0[2] & bit) ct = min(ct, ht_r + 1); // (+1, -1)
        if (b0[1] & bit) cb = min(cb, hb_l + 1); // (-1, +1)
        if (b0[2] & bit) cb = min(cb, hb_r + 1); // (+1, +1)
    }
    // The tile's labels (lane = column, coalesced), every row's load issued before the first is
    // used: a ballot per row right after its load made the TY round trips to L2 follow one
    // another. They are also the labels the write-back compares with: in a pass only this warp
    // writes the tile's labels (queued relabel: labels only fall, and atomicMin decides).
    unsigned old[TY];
#pragma unroll
    for (int r = 0; r < TY; ++r) {
        const unsigned y = p.oy + r;
        old[r] = col && y < g.h ? load_label(label, gidx(g, cx, y, 0)) : INF;
    }
    // The distance-1 nodes, row by row.
    unsigned front = 0;
#pragma unroll
    for (int r = 0; r < TY; ++r) {
        const unsigned m = __ballot_sync(FULL, old[r] == 1u);
        if (lane == r) front = m;
    }
    // The search: `front` holds the nodes first reached at level L.
    unsigned vis = 0, L = 1;
    while (L < INF) {
        const unsigned tb = __ballot_sync(FULL, ct == L), bb = __ballot_sync(FULL, cb == L);
        if (lane == 0) front |= tb;
        if (lane == TY - 1) front |= bb;
        if (cl == L) front |= 1u;
        if (cr == L) front |= TOP;
        front &= ~vis;
        if (!__any_sync(FULL, front != 0)) {
            // Nothing at this level: on to the smallest seed above it not yet reached.
            const unsigned v0 = __shfl_sync(FULL, vis, 0), vb = __shfl_sync(FULL, vis, TY - 1);
            unsigned next = INF;
            if (ct > L && !(v0 & bit)) next = min(next, ct);
            if (cb > L && !(vb & bit)) next = min(next, cb);
            if (cl > L && !(vis & 1u)) next = min(next, cl);
            if (cr > L && !(vis & TOP)) next = min(next, cr);
            for (int s = 16; s > 0; s >>= 1) next = min(next, __shfl_xor_sync(FULL, next, s));
            if (next >= INF) break;
            L = next;
            continue;
        }
        vis |= front;
        for (unsigned m = front; m; m &= m - 1) lv[lane * 32 + __ffs(m) - 1] = L;
        // Next level: nodes with a residual arc into this one's frontier.
        unsigned up = __shfl_up_sync(FULL, front, 1), dn = __shfl_down_sync(FULL, front, 1);
        if (lane == 0) up = 0;
        if (lane == 31) dn = 0;
        unsigned e = (R[0] & (front >> 1)) | (R[1] & (front << 1)) | (R[2] & dn) | (R[3] & up);
        if (DEG == 8)
            e |= (R[4] & (dn >> 1)) | (R[5] & (up << 1)) | (R[6] & (up >> 1)) | (R[7] & (dn << 1));
        front = e & ~vis;
        ++L;
    }
    __syncwarp();
    // Write back what fell (lane = column), flagging the tiles next to a changed border node.
#pragma unroll
    for (int r = 0; r < TY; ++r) {
        const unsigned y = p.oy + r;
        if (y >= g.h) break;
        const unsigned reached = __shfl_sync(FULL, vis, r) & bit;
        if (!col || !reached) continue;
        const size_t v = gidx(g, cx, y, 0);
        const unsigned nw = lv[r * 32 + lane];
        if (nw >= old[r]) continue;
        if (QUEUE) {
            if (atomicMin(label + v, nw) <= nw) continue; // another warp got lower first
        } else {
            label[v] = nw;
        }
        if (lane == 0 || lane == 31 || r == 0 || r == TY - 1) {
            for (int d = 0; d < DEG; ++d) {
                const int *o = OFFSETS_2D[d];
                const int ax = (int)cx + o[0], ay = (int)y + o[1];
                if (!G::inside(lane + o[0], r + o[1], 0) && in_grid(g, ax, ay, 0)) {
                    const unsigned nt = tile_of<DEG>(p, ax, ay, 0);
                    if (QUEUE)
                        queue_tile(q, flags, nt);
                    else
                        flags[nt] = 1;
                }
            }
        }
    }
    __syncwarp(); // lv is reused by this warp's next tile
}

// Warps per block of the warp-per-tile relabel pass.
#define WTILE_WARPS (BLOCK / 32)

// The listed tiles, a warp each, warp-strided.
template <int DEG>
__device__ void bfs_wtile(const Grid g, const unsigned *bits, unsigned *label,
                          const unsigned *list, const unsigned *count, unsigned *flags) {
    __shared__ unsigned lv[WTILE_WARPS][TileGeom<DEG>::TY * 32];
    if (TileGeom<DEG>::IS3D) return; // 2D only (the host launches it for N4 and N8)
    const unsigned m = *count, w = threadIdx.x >> 5;
    for (unsigned b = blockIdx.x * WTILE_WARPS + w; b < m; b += gridDim.x * WTILE_WARPS)
        bfs_warp_tile<DEG>(g, bits, label, list[b], flags, lv[w]);
}

// sync: ring, ctl (atomic), flags (set and cleared by atomicExch)
// safe: none
// Puts the flagged tiles into the empty ring of a queued relabel (flags stay set: they mean
// "queued"); ring and ctl are zero.
extern "C" __global__ void queue_fill(unsigned ntiles, const unsigned *flags, unsigned *ring,
                                      unsigned *ctl, unsigned *depth) {
    const unsigned t = blockIdx.x * blockDim.x + threadIdx.x;
    const bool f = t < ntiles && flags[t] != 0;
    const unsigned lane = threadIdx.x & 31, m = __ballot_sync(0xffffffffu, f);
    if (m == 0) return;
    const unsigned leader = __ffs(m) - 1;
    unsigned base = 0;
    if (lane == leader) {
        atomicAdd(ctl + QCTL_WORK, (unsigned)__popc(m));
        base = atomicAdd(ctl + QCTL_TAIL, (unsigned)__popc(m));
    }
    base = __shfl_sync(0xffffffffu, base, leader);
    if (f) {
        depth[t] = 0;
        ring[base + __popc(m & ((1u << lane) - 1))] = t + 1;
    }
}

// sync: label (atomicMin; halo reads through L2), flags, ring and ctl (atomics, see TileQueue)
// safe: lv (the warp's own)
// The queued global relabel (2D): one launch after bfs_seed, res_bits and queue_fill. Each warp
// takes a tile from the ring, computes its fixed point as bfs_warp_tile does, and queues the
// tiles whose halo it lowered; warps wait (briefly sleeping) while tiles are still being worked
// on, and all leave when none is queued or in work. Labels only fall, each to the length of a
// real path, and a tile is processed again after every fall of its halo (the flag is cleared
// before its labels are read; a fall after that queues it again), so the result is the same
// fixed point as the passes': the exact distances.
template <int DEG>
__device__ void bfs_wqueue(const Grid g, const unsigned *bits, unsigned *label, unsigned *flags,
                           unsigned *ring, unsigned *ctl, unsigned *depth, unsigned ntiles) {
    __shared__ unsigned lv[WTILE_WARPS][TileGeom<DEG>::TY * 32];
    if (TileGeom<DEG>::IS3D) return;
    const unsigned w = threadIdx.x >> 5, lane = threadIdx.x & 31, DONE = 0xffffffffu;
    volatile unsigned *vctl = ctl;
    unsigned visits = 0;
    for (;;) {
        unsigned got = 0; // tile + 1, or DONE
        if (lane == 0) {
            unsigned nap = 32;
            for (;;) {
                const unsigned h = vctl[QCTL_HEAD], t = vctl[QCTL_TAIL];
                if ((int)(t - h) > 0) {
                    if (atomicCAS(ctl + QCTL_HEAD, h, h + 1) != h) continue;
                    // Claimed: the slot is published, or about to be (its tail was taken).
                    while ((got = atomicExch(ring + h % ntiles, 0u)) == 0u) __nanosleep(32);
                    break;
                }
                if (vctl[QCTL_WORK] == 0) {
                    got = DONE;
                    break;
                }
                __nanosleep(nap);
                nap = min(nap * 2, 1024u);
            }
        }
        got = __shfl_sync(0xffffffffu, got, 0);
        if (got == DONE) break;
        const unsigned tile = got - 1;
        unsigned level = 0;
        if (lane == 0) {
            level = *(volatile unsigned *)(depth + tile);
            atomicExch(flags + tile, 0u); // a fall of the halo from now on queues it again
            __threadfence();
        }
        TileQueue q{ring, ctl, depth, ntiles, __shfl_sync(0xffffffffu, level, 0)};
        __syncwarp();
        bfs_warp_tile<DEG, true>(g, bits, label, tile, flags, lv[w], q);
        __threadfence();
        __syncwarp();
        if (lane == 0) atomicSub(ctl + QCTL_WORK, 1u); // after every queuing it made
        ++visits;
    }
    if (lane == 0 && visits) atomicAdd(ctl + QCTL_VISITS, visits);
}

// sync: flags (set to 1), any (set to 1)
// safe: none (read only otherwise)
// After a global relabel: flags the tiles holding an active node (excess > 0, reaches the sink).
// Whether v is active.
template <int DEG>
__device__ bool mark_active_at(const Grid g, const i64 *excess, const unsigned *label,
                               unsigned *flags, unsigned *any, unsigned v) {
    if (excess[v] > 0 && label[v] <= g.n) {
        unsigned x, y, z;
        coords(g, v, x, y, z);
        flags[tile_of<DEG>(tile_pos<DEG>(g, 0), x, y, z)] = 1;
        *any = 1;
        return true;
    }
    return false;
}

// sync: flags (set to 1), count (atomic)
// safe: none (read only otherwise)
// As mark_active_at for every node, and `count` gains the number of active nodes (one atomic
// per warp): the solve's activity profile, read back once per global relabel.
template <int DEG>
__device__ void mark_active(const Grid g, const i64 *excess, const unsigned *label,
                            unsigned *flags, unsigned *count) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x, ignored = 0;
    const bool act = v < g.n && mark_active_at<DEG>(g, excess, label, flags, &ignored, v);
    const unsigned m = __ballot_sync(0xffffffffu, act);
    if ((threadIdx.x & 31) == 0 && m != 0) atomicAdd(count, (unsigned)__popc(m));
}

// sync: rcap of boundary arcs (+ from other tiles, - by the owner, both atomic), excess (net
//       change added atomically), flow (+), flags (set to 1)
// safe: interior arcs, label and sink_r of the tile's own nodes
// Region discharge of the listed tiles: up to `iters` sweeps over the colour classes, every
// active node pushing to its lowest residual neighbour (the sink has label 0) or relabelling to
// one above it. A tile still active at the end, and every tile that received excess, is flagged
// for the next round.
// `lab` as in bfs_one_tile.
template <int DEG>
__device__ void discharge_tile(const Grid g, int *rcap, int *sink_r, i64 *excess,
                               unsigned *label, u64 *flow, const unsigned tile, unsigned *flags,
                               int iters, unsigned *lab) {
    typedef TileGeom<DEG> G;
    __shared__ int cap[DEG][G::T];
    __shared__ i64 ex[G::T];
    __shared__ i64 ex0[G::T];
    __shared__ int sr[G::T];
    __shared__ unsigned dirty[G::T]; // bit 0: arcs changed, bit 1: sink residual changed
    const TilePos p = tile_pos<DEG>(g, tile);
    const unsigned inf = g.n + 1;
    load_halo<DEG>(g, p, label, lab);
    for (int i = threadIdx.x; i < G::T; i += BLOCK) {
        int x = p.ox + i % G::TX, y = p.oy + i / G::TX % G::TY, z = p.oz + i / (G::TX * G::TY);
        bool ok = in_grid(g, x, y, z);
        size_t v = gidx(g, x, y, z);
        i64 e = ok ? excess[v] : 0;
        ex[i] = e;
        ex0[i] = e;
        sr[i] = ok ? sink_r[v] : 0;
        dirty[i] = 0;
        for (int d = 0; d < DEG; ++d) cap[d][i] = ok ? rcap[(size_t)d * g.n + v] : 0;
    }
    __syncthreads();

    u64 pushed = 0;
    for (int it = 0; it < iters; ++it) {
        int any = 0;
#pragma unroll
        for (int c = 0; c < G::NCOL; ++c) {
#pragma unroll
            for (int s = 0; s < G::STEPS; ++s) {
                int q = threadIdx.x + s * BLOCK, lx, ly, lz;
                if (q >= G::PERCOL) continue;
                G::colour_node(c, q, lx, ly, lz);
                int i = G::tidx(lx, ly, lz), hi = G::hidx(lx, ly, lz);
                i64 e = ex[i];
                unsigned h = lab[hi];
                if (e <= 0 || h >= inf) continue;
                any = 1;
                // Discharge the node (push and relabel until it has no excess or cannot reach the
                // sink): its neighbours do not act during this colour's turn. Pushes create no
                // residual arc out of it, so it relabels at most once per arc.
                for (;;) {
                    unsigned best = sr[i] > 0 ? 0u : 0xffffffffu;
                    int bd = -1;
                    for (int d = 0; d < DEG && best > 0; ++d) {
                        if (cap[d][i] <= 0) continue;
                        unsigned hw = lab[hi + G::hoff(d)];
                        if (hw < best) {
                            best = hw;
                            bd = d;
                        }
                    }
                    if (best >= inf) { // no residual arc to a node that may reach the sink
                        lab[hi] = inf;
                        break;
                    }
                    if (h <= best) { // relabel, then push on at once
                        h = best + 1;
                        lab[hi] = h;
                        continue;
                    }
                    if (bd < 0) {
                        int delta = (int)min(e, (i64)sr[i]);
                        sr[i] -= delta;
                        pushed += delta;
                        e -= delta;
                        atomicOr(&dirty[i], 2u);
                    } else {
                        const int *o = G::off(bd);
                        int ax = lx + o[0], ay = ly + o[1], az = lz + o[2];
                        int delta = (int)min(e, (i64)cap[bd][i]);
                        cap[bd][i] -= delta;
                        e -= delta;
                        if (G::inside(ax, ay, az)) {
                            int j = G::tidx(ax, ay, az);
                            cap[bd ^ 1][j] += delta; // this node's turn: no one else touches it
                            atomicAdd((u64 *)&ex[j], (u64)delta);
                            atomicOr(&dirty[i], 1u);
                            atomicOr(&dirty[j], 1u);
                        } else {
                            int x = p.ox + lx, y = p.oy + ly, z = p.oz + lz;
                            int wx = p.ox + ax, wy = p.oy + ay, wz = p.oz + az;
                            size_t w = gidx(g, wx, wy, wz);
                            atomicSub(rcap + (size_t)bd * g.n + gidx(g, x, y, z), delta);
                            atomicAdd(rcap + (size_t)(bd ^ 1) * g.n + w, delta);
                            atomicAdd((u64 *)(excess + w), (u64)delta);
                            flags[tile_of<DEG>(p, wx, wy, wz)] = 1;
                        }
                    }
                    if (e <= 0) break;
                }
                ex[i] = e;
            }
            __syncthreads();
        }
        if (!__syncthreads_or(any)) break;
    }

    int still = 0;
    for (int i = threadIdx.x; i < G::T; i += BLOCK) {
        int lx = i % G::TX, ly = i / G::TX % G::TY, lz = i / (G::TX * G::TY);
        int x = p.ox + lx, y = p.oy + ly, z = p.oz + lz;
        if (!in_grid(g, x, y, z)) continue;
        size_t v = gidx(g, x, y, z);
        unsigned h = lab[G::hidx(lx, ly, lz)];
        label[v] = h;
        if (dirty[i] & 2) sink_r[v] = sr[i];
        if (ex[i] != ex0[i]) atomicAdd((u64 *)(excess + v), (u64)(ex[i] - ex0[i]));
        if (dirty[i] & 1) {
            for (int d = 0; d < DEG; ++d) {
                const int *o = G::off(d);
                if (G::inside(lx + o[0], ly + o[1], lz + o[2]))
                    rcap[(size_t)d * g.n + v] = cap[d][i];
            }
        }
        if (ex[i] > 0 && h < inf) still = 1;
    }
    // One atomic per warp for the flow into the sink.
    pushed = warp_sum(pushed);
    if ((threadIdx.x & 31) == 0 && pushed) atomicAdd(flow, pushed);
    if (__syncthreads_or(still) && threadIdx.x == 0) flags[tile] = 1;
}

// The listed tiles, block-strided as in bfs_tile.
template <int DEG>
__device__ void discharge(const Grid g, int *rcap, int *sink_r, i64 *excess, unsigned *label,
                          u64 *flow, const unsigned *list, const unsigned *count,
                          unsigned *flags, int iters) {
    __shared__ unsigned lab[TileGeom<DEG>::HN];
    const unsigned m = *count;
    for (unsigned b = blockIdx.x; b < m; b += gridDim.x) {
        discharge_tile<DEG>(g, rcap, sink_r, excess, label, flow, list[b], flags, iters, lab);
        __syncthreads(); // the next tile reuses the shared arrays
    }
}

// sync: none
// safe: out[v] written by v's own thread
// The canonical cut from the final labels: 1 where the node reaches the sink. A byte per node
// comes back to the host instead of the 4-byte label.
extern "C" __global__ void sink_side(const Grid g, const unsigned *label, unsigned char *out) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v < g.n) out[v] = label[v] <= g.n;
}

// sync: flow (+)
// safe: excess[v], sink_r[v] (read and written by the node's own thread)
// Start of a solve: saturate every source arc and send at once what can leave through the
// node's own sink arc.
extern "C" __global__ void init_terminals(const Grid g, const int *source, i64 *excess,
                                          int *sink_r, u64 *flow) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    u64 m = 0;
    if (v < g.n) {
        int s = source[v], t = sink_r[v]; // sink_r holds the sink capacities on entry
        int c = min(s, t);
        excess[v] = s - c;
        sink_r[v] = t - c;
        m = (u64)c;
    }
    m = warp_sum(m);
    if ((threadIdx.x & 31) == 0 && m) atomicAdd(flow, m);
}

// sync: flow (+, atomic, two's complement), overflow (|=)
// safe: excess[v] and sink_r[v] of the thread's own v (no other kernel runs)
// Warm start (Kohli & Torr): node v's source capacity changes from old_source[v] to source[v]
// and its sink capacity from old_sink[v] to sink[v] (all non-negative, so the changes fit). The source arc stays saturated, so the excess moves with d_source and
// the sink residual with d_sink; where either would turn negative, the same constant k is added
// to both terminal capacities (every cut cuts exactly one of them, so every cut grows by k and the
// minimum cut stays), then what can leave through the node's own sink arc goes at once, as in
// init_terminals. flow (the flow into the sink) moves by the change of the node's sink flow
// without k, (t' - r') - (t - r): the flow value of the graph as given. A sink residual past
// i32 sets *overflow and leaves the node as it was: the host then solves from scratch.
extern "C" __global__ void update_terminals(const Grid g, const int *source, const int *sink,
                                            const int *old_source, const int *old_sink,
                                            i64 *excess, int *sink_r, u64 *flow,
                                            unsigned *overflow) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    i64 delta = 0;
    if (v < g.n) {
        int ds = source[v] - old_source[v], dt = sink[v] - old_sink[v];
        // A negative excess (left by update_arcs) is settled here too.
        if (ds != 0 || dt != 0 || excess[v] < 0) {
            i64 r0 = sink_r[v];
            i64 e = excess[v] + ds, r = r0 + dt;
            i64 k = max(max(-e, -r), (i64)0);
            e += k;
            r += k;
            i64 c = min(e, r);
            e -= c;
            r -= c;
            if (r > 2147483647ll) {
                atomicOr(overflow, 1u);
            } else {
                excess[v] = e;
                sink_r[v] = (int)r;
                delta = (i64)dt - r + r0;
            }
        }
    }
    u64 m = warp_sum((u64)delta);
    if ((threadIdx.x & 31) == 0 && m) atomicAdd(flow, m);
}

// ---------------------------------------------------------------------------------------------
// Persistent solve (small grids): the host loop of src/maxflow/cuda/grid.rs (global relabel,
// mark the active tiles, a budget of discharge rounds, again until a fresh relabel finds no
// active node) run by one cooperative launch, with grid-wide barriers where the host loop has a
// kernel boundary or a read-back. Each step works exactly as the separate kernels do (the same
// device functions on the same lists); what goes is the host round trip per relabel pass and per
// discharge round, which is what a solve of a grid of ~10^5 nodes mostly waits for.
//
// Control words (ctl, CTL_WORDS entries, zero at launch):
#define CTL_ARRIVED 0  // grid barrier: blocks arrived
#define CTL_GEN 1      // grid barrier: generation
#define CTL_COUNT 2    // worklist lengths, two, used by the parity of the step
#define CTL_ANY 4      // mark_active's "some node is active"
#define CTL_STATUS 5   // 1: the round limit was reached (the host reports it)
#define CTL_ROUNDS 6   // discharge rounds run
#define CTL_RELABELS 7 // global relabels run
#define CTL_PASSES 8   // relabel passes run
#define CTL_WORDS 16

// A barrier of every block of a cooperative launch (all resident at once, which the cooperative
// launch guarantees or refuses). Thread 0 of each block arrives; the last to arrive resets the
// count and advances the generation, which the others wait for. The fences on both sides make
// every write before the barrier, by any thread of any block, visible to every read after it
// (the pattern of cooperative groups' grid sync).
__device__ void grid_barrier(unsigned *ctl) {
    __syncthreads();
    if (threadIdx.x == 0) {
        volatile unsigned *gen = ctl + CTL_GEN;
        const unsigned mine = *gen;
        __threadfence();
        if (atomicAdd(ctl + CTL_ARRIVED, 1u) == gridDim.x - 1) {
            ctl[CTL_ARRIVED] = 0;
            __threadfence();
            atomicAdd(ctl + CTL_GEN, 1u);
        } else {
            while (*gen == mine) __nanosleep(64);
        }
        __threadfence();
    }
    __syncthreads();
}

// One worklist step: barrier, the flags become the list (its length in one of the two counters,
// by the step's parity; thread 0 of block 0 clears the other one, which every block read
// before this barrier), barrier; returns the list's length, the same in every block (nothing
// writes that counter until after the next barrier).
__device__ unsigned coop_list(unsigned &step, unsigned ntiles, unsigned *flags, unsigned *list,
                              unsigned *ctl) {
    grid_barrier(ctl);
    unsigned *count = ctl + CTL_COUNT + (step & 1);
    if (blockIdx.x == 0 && threadIdx.x == 0) {
        ctl[CTL_COUNT + ((step + 1) & 1)] = 0;
        ctl[CTL_ANY] = 0; // read by every block before the barrier, written only after the next
    }
    const unsigned stride = gridDim.x * blockDim.x;
    for (unsigned base = blockIdx.x * blockDim.x; base < ntiles; base += stride)
        list_tile(base + threadIdx.x, ntiles, flags, list, count);
    grid_barrier(ctl);
    ++step;
    return *(volatile unsigned *)count;
}

// sync: as bfs_tile (2D: res_bits, then bfs_wtile), mark_active and discharge (one at a time,
//       separated by grid barriers);
//       ctl (barrier words atomic; counters written by one thread between barriers)
// safe: as those kernels
// The whole of phase one from initialised terminals (init_terminals run, flags clear): returns
// with a maximum preflow, exact labels from the final global relabel, and the counters in ctl.
template <int DEG>
__device__ void solve_coop(const Grid g, int *rcap, int *sink_r, i64 *excess, unsigned *label,
                           u64 *flow, unsigned *flags, unsigned *list, unsigned ntiles,
                           unsigned *bits, unsigned *ctl, int iters, unsigned min_rounds,
                           float ratio, unsigned max_rounds) {
    typedef TileGeom<DEG> G;
    // The halo labels of the block relabel and the discharge; in 2D also the warp relabel's
    // label rows (HN >= TY * 32), for the block's first warp: the block already holds the
    // discharge's shared arrays, and a second warp's rows would pass 48 KB for N4.
    __shared__ unsigned lab[G::HN];
    const unsigned stride = gridDim.x * blockDim.x;
    const unsigned me = blockIdx.x * blockDim.x + threadIdx.x;
    const bool lead = blockIdx.x == 0 && threadIdx.x == 0;
    unsigned step = 0, rounds = 0;
    for (;;) {
        // Step 2, the global relabel (the last discharge round ended at a barrier in coop_list
        // or here on the first pass: the labels are no longer read).
        grid_barrier(ctl);
        for (unsigned v = me; v < g.n; v += stride) bfs_seed_at<DEG>(g, sink_r, label, flags, v);
        // 2D: the residual bits, written before the barrier in the first coop_list.
        if (!G::IS3D)
            for (size_t i = me; i < res_bits_threads(g); i += stride)
                res_bits_at<DEG>(g, rcap, bits, i);
        unsigned passes = 0;
        for (;;) {
            const unsigned m = coop_list(step, ntiles, flags, list, ctl);
            if (m == 0) break;
            ++passes;
            if (!G::IS3D) {
                if (threadIdx.x < 32)
                    for (unsigned b = blockIdx.x; b < m; b += gridDim.x)
                        bfs_warp_tile<DEG>(g, bits, label, list[b], flags, lab);
            } else {
                for (unsigned b = blockIdx.x; b < m; b += gridDim.x) {
                    bfs_one_tile<DEG>(g, rcap, label, list[b], flags, lab);
                    __syncthreads();
                }
            }
        }
        if (lead) {
            ctl[CTL_RELABELS] += 1;
            ctl[CTL_PASSES] += passes;
        }
        // Step 3: the active tiles (CTL_ANY was cleared in the last coop_list).
        for (unsigned v = me; v < g.n; v += stride)
            mark_active_at<DEG>(g, excess, label, flags, ctl + CTL_ANY, v);
        grid_barrier(ctl);
        if (*(volatile unsigned *)(ctl + CTL_ANY) == 0) return;
        // Step 4: discharge rounds, as many as the host loop would run.
        unsigned budget = (unsigned)ceilf(fmaxf((float)max(min_rounds, 1u), ratio * passes));
        for (unsigned done = 0; done < budget; ++done) {
            const unsigned m = coop_list(step, ntiles, flags, list, ctl);
            if (m == 0) break;
            for (unsigned b = blockIdx.x; b < m; b += gridDim.x) {
                discharge_tile<DEG>(g, rcap, sink_r, excess, label, flow, list[b], flags, iters,
                                    lab);
                __syncthreads();
            }
            ++rounds;
            if (lead) ctl[CTL_ROUNDS] = rounds;
            if (rounds > max_rounds) {
                if (lead) ctl[CTL_STATUS] = 1;
                return;
            }
        }
    }
}

// sync: excess (atomicAdd, two's complement, both ends of a changed pair)
// safe: rcap[d*n + v] and rcap[(d^1)*n + w] of each pair v -> w with d even, written only by v's
//       thread
// Warm start with new arc capacities (dynamic graph cuts, Kohli & Torr): the arc pair v -> w,
// w -> v (direction d even at v, d ^ 1 at w) had capacities old_caps and residuals old_rcap, so
// the net flow f = old_cap(v -> w) - old_rcap(v -> w) runs from v to w (negative: from w to v).
// rcap holds the new capacities on entry and the new residuals on return: the flow stays where
// the new pair admits it (-cap(w -> v) <= f <= cap(v -> w)), else it is clamped to the nearest
// bound and what no longer flows goes back to v's excess and out of w's. Excesses may turn
// negative; update_terminals then settles them (the same constant on both terminal arcs, which
// keeps every minimum cut), so the result is a preflow of the new graph.
extern "C" __global__ void update_arcs(const Grid g, const int *old_caps, const int *old_rcap,
                                       int *rcap, i64 *excess) {
    unsigned v = blockIdx.x * blockDim.x + threadIdx.x;
    if (v >= g.n) return;
    unsigned x, y, z;
    coords(g, v, x, y, z);
    i64 back = 0;
    for (unsigned d = 0; d < g.deg; d += 2) {
        i64 w = neighbor(g, x, y, z, d);
        if (w < 0) continue;
        const size_t fwd = (size_t)d * g.n + v, rev = (size_t)(d ^ 1) * g.n + (size_t)w;
        const i64 f = (i64)old_caps[fwd] - (i64)old_rcap[fwd];
        const i64 cf = rcap[fwd], cb = rcap[rev];
        const i64 kept = f > cf ? cf : (f < -cb ? -cb : f);
        rcap[fwd] = (int)(cf - kept);
        rcap[rev] = (int)(cb + kept);
        if (kept != f) {
            back += f - kept;
            atomicAdd((u64 *)(excess + w), (u64)(kept - f));
        }
    }
    if (back != 0) atomicAdd((u64 *)(excess + v), (u64)back);
}

#define TILE_KERNELS(DEG)                                                                          \
    extern "C" __global__ void __launch_bounds__(BLOCK)                                            \
        bfs_seed_n##DEG(const Grid g, const int *sink_r, unsigned *label, unsigned *flags) {       \
        bfs_seed<DEG>(g, sink_r, label, flags);                                                    \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(BLOCK)                                            \
        bfs_reseed_n##DEG(const Grid g, const int *sink_r, unsigned *label, unsigned *flags) {     \
        bfs_reseed<DEG>(g, sink_r, label, flags);                                                  \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(BLOCK)                                            \
        bfs_tile_n##DEG(const Grid g, const int *rcap, unsigned *label, const unsigned *list,      \
                        const unsigned *count, unsigned *flags) {                                  \
        bfs_tile<DEG>(g, rcap, label, list, count, flags);                                         \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(BLOCK)                                            \
        res_bits_n##DEG(const Grid g, const int *rcap, unsigned *bits) {                           \
        res_bits<DEG>(g, rcap, bits);                                                              \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(BLOCK)                                            \
        bfs_wtile_n##DEG(const Grid g, const unsigned *bits, unsigned *label,                      \
                         const unsigned *list, const unsigned *count, unsigned *flags) {           \
        bfs_wtile<DEG>(g, bits, label, list, count, flags);                                        \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(BLOCK)                                            \
        bfs_wqueue_n##DEG(const Grid g, const unsigned *bits, unsigned *label, unsigned *flags,    \
                          unsigned *ring, unsigned *ctl, unsigned *depth, unsigned ntiles) {       \
        bfs_wqueue<DEG>(g, bits, label, flags, ring, ctl, depth, ntiles);                          \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(BLOCK)                                            \
        mark_active_n##DEG(const Grid g, const i64 *excess, const unsigned *label,                 \
                           unsigned *flags, unsigned *count) {                                     \
        mark_active<DEG>(g, excess, label, flags, count);                                          \
    }                                                                                              \
    extern "C" __global__ void __launch_bounds__(BLOCK)                                            \
        discharge_n##DEG(const Grid g, int *rcap, int *sink_r, i64 *excess, unsigned *label,       \
                         u64 *flow, const unsigned *list, const unsigned *count,                   \
                         unsigned *flags, int iters) {                                             \
        discharge<DEG>(g, rcap, sink_r, excess, label, flow, list, count, flags, iters);           \
    }

// The persistent solve, per degree (26-connected grids run it only with the tiles, which their
// default node sweep does not use).
#define COOP_KERNEL(DEG)                                                                           \
    extern "C" __global__ void __launch_bounds__(BLOCK)                                            \
        solve_coop_n##DEG(const Grid g, int *rcap, int *sink_r, i64 *excess, unsigned *label,      \
                          u64 *flow, unsigned *flags, unsigned *list, unsigned ntiles,             \
                          unsigned *bits, unsigned *ctl, int iters, unsigned min_rounds,           \
                          float ratio, unsigned max_rounds) {                                      \
        solve_coop<DEG>(g, rcap, sink_r, excess, label, flow, flags, list, ntiles, bits, ctl,      \
                        iters, min_rounds, ratio, max_rounds);                                     \
    }

TILE_KERNELS(4)
TILE_KERNELS(8)
TILE_KERNELS(6)
TILE_KERNELS(26)
COOP_KERNEL(4)
COOP_KERNEL(8)
COOP_KERNEL(6)
COOP_KERNEL(26)

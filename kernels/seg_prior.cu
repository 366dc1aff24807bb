// seg_prior.cu: the stroke-geometry prior of src/segment/prior.rs on the GPU: the geodesic
// distances of every pixel to the foreground and the background strokes, the prior's log-odds
// from them, and after the first fit its scaling by the strokes' enclosure (prior_enclosure,
// prior_scale: integer counts and one product per pixel, the host's bits). Launched only through
// the typed launchers of src/cuda/launch/seg_prior.rs; src/segment/gpu_prior.rs drives them.
//
// The distances are the fixed point of d(p) = min(d(p), min_q fl(d(q) + step(p, q))) with d = 0
// on the class's strokes, the same f32 expressions as prior.rs (compiled with --fmad=false, IEEE
// sqrt and division: NVRTC's defaults). Relaxing is monotone and only lowers values, so from the
// initial values (0 on strokes, infinity elsewhere) every schedule of single relaxations that
// reads upper bounds of the fixed point produces upper bounds of it, and one that runs until a
// pass relaxing every pixel against every neighbour changes nothing stops exactly on it: the
// CPU's bits (docs/segmentation.md, "Why any schedule gives the same bits"). The schedule here
// (prior_strips): sweeps along each axis in both directions, a warp per strip of 32 lines.
//
// Why the races are safe. A warp reads lines of other strips (its two outer lines; in 3D the
// neighbouring strips' lines) while their warps may be lowering them, through volatile loads of
// aligned 4-byte floats: each value read is one that was stored, an old or a new one, both upper
// bounds of the fixed point, so a race changes how many passes convergence takes, never the
// result. Each pixel is stored only by the warp owning its line in that launch, and only lowered,
// so no store is lost between launches. A pass that changed nothing stored nothing, so every
// read in it saw final values: the fixed point.

#include "common.cuh"

// Value i of the image: bytes when it was uploaded as bytes (floats then null), else floats.
// Through the read-only cache: no kernel of this file writes the image.
__device__ __forceinline__ float pixel_value(const unsigned char *bytes, const float *floats,
                                             size_t i) {
    return bytes ? (float)__ldg(bytes + i) : __ldg(floats + i);
}

// Squared colour distance of pixels v and q, channels summed in order (prior.rs step_length).
__device__ __forceinline__ float colour_dist2(const unsigned char *bytes, const float *floats,
                                              unsigned ch, size_t v, size_t q) {
    float c2 = 0.0f;
    for (unsigned c = 0; c < ch; ++c) {
        float diff = pixel_value(bytes, floats, v * ch + c) - pixel_value(bytes, floats, q * ch + c);
        c2 += diff * diff;
    }
    return c2;
}

// sync: none. safe: steps[k*n + v] for the thread's own v.
// The step lengths of a 2D grid, once per prior: steps[k*n + v] is the length of the step between
// v and its neighbour in direction k (prior.rs step_length: sqrt(dist2[k] + colour * c2), the
// channels summed in order), infinity where there is no neighbour. The sweeps then read them
// instead of recomputing each from the colours in their dependent chain of steps.
extern "C" __global__ void prior_steps(const Grid g, unsigned ch, const unsigned char *bytes,
                                       const float *floats, const float *dist2, float colour,
                                       float *steps) {
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < g.n;
         v += gridDim.x * blockDim.x) {
        unsigned x, y, z;
        coords(g, v, x, y, z);
        for (unsigned k = 0; k < g.deg; ++k) {
            i64 q = neighbor(g, x, y, z, k);
            float len = 1.0f / 0.0f;
            if (q >= 0) len = sqrtf(dist2[k] + colour * colour_dist2(bytes, floats, ch, v, (size_t)q));
            steps[(size_t)k * g.n + v] = len;
        }
    }
}

// The image's sum of squared neighbour differences over every neighbour pair (each pair once: the
// even directions), one partial per block, for the colour term's sigma^2 (mean_sq_diff in
// energy.rs: each pair's distance in float, summed in double; exact for integer images).
// sync: none. safe: partials[blockIdx.x].
extern "C" __global__ void prior_pair_sum(const Grid g, unsigned ch, const unsigned char *bytes,
                                          const float *floats, double *partials) {
    __shared__ double sh[BLOCK];
    double s = 0.0;
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < g.n;
         v += gridDim.x * blockDim.x) {
        unsigned x, y, z;
        coords(g, v, x, y, z);
        for (unsigned dir = 0; dir < g.deg; dir += 2) {
            i64 q = neighbor(g, x, y, z, dir);
            if (q >= 0) s += (double)colour_dist2(bytes, floats, ch, v, (size_t)q);
        }
    }
    double t = block_sum(s, sh);
    if (threadIdx.x == 0) partials[blockIdx.x] = t;
}

// Distances before the sweeps: 0 on the class's hard seeds (Seed::Foreground = 1,
// Seed::Background = 2), infinity elsewhere.
// sync: none. safe: d_fg[v], d_bg[v].
extern "C" __global__ void prior_init(unsigned n, const unsigned char *seeds, float *d_fg,
                                      float *d_bg) {
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        d_fg[v] = seeds[v] == 1 ? 0.0f : 1.0f / 0.0f;
        d_bg[v] = seeds[v] == 2 ? 0.0f : 1.0f / 0.0f;
    }
}

// Lines per strip: a warp's lanes, one line each.
#define STRIP 32
// Warps per block of prior_strips (STRIP_WARPS in src/cuda/launch/seg_prior.rs).
#define STRIP_WARPS 2

// A block's shared arrays for prior_strips, per warp: the chunk's distances [line][step] (padded
// by one so that a lane's row and a step's column are both free of bank conflicts), with
// precomputed step lengths the chunk's lengths of the three steps behind (straight, towards the
// lower and the higher line), and the strip's two outer lines (a0 - 1, a0 + 32) one step behind
// each step of the chunk. Two warps per block keep it within 48 KB of static shared memory.
struct StripTiles {
    float tile_f[STRIP_WARPS][STRIP][STRIP + 1];
    float tile_b[STRIP_WARPS][STRIP][STRIP + 1];
    float tile_len[STRIP_WARPS][3][STRIP][STRIP + 1];
    float halo_f[STRIP_WARPS][2][STRIP];
    float halo_b[STRIP_WARPS][2][STRIP];
};

// The sweep of prior_strips along axis AXIS (see there), for the warp's strip.
template <unsigned AXIS>
__device__ __forceinline__ void strip_sweep(const Grid g, int sign, unsigned shift, unsigned seg,
                                            unsigned ch,
                                            const unsigned char *bytes, const float *floats,
                                            const float *dist2, float colour,
                                            const float *lens, float *d_fg, float *d_bg,
                                            StripTiles &sh, bool &lowered) {
    const unsigned FULL = 0xffffffffu;
    const float INF = 1.0f / 0.0f;
    const unsigned A = AXIS == 0 ? 1 : 0, B = AXIS == 2 ? 1 : 2;
    const unsigned lane = threadIdx.x % STRIP, warp = threadIdx.x / STRIP;
    const unsigned dims[3] = {g.w, g.h, g.d};
    const size_t stride[3] = {1, (size_t)g.w, (size_t)g.w * g.h};
    const unsigned len = dims[AXIS], na = dims[A], nb = dims[B];
    const unsigned strips_a = (na + shift + STRIP - 1) / STRIP;
    // The warp's strip and its segment of the axis, steps [i_begin, i_end).
    const unsigned nseg = (len + seg - 1) / seg;
    const unsigned strip = (blockIdx.x * STRIP_WARPS + warp) / nseg;
    const unsigned part = (blockIdx.x * STRIP_WARPS + warp) % nseg;
    // The whole warp leaves together: nothing below waits on another warp.
    if (strip >= strips_a * nb) return;
    const unsigned i_begin = part * seg, i_end = min(len, i_begin + seg);
    // The line coordinate along A of lane 0 (signed: the first strip of a shifted partition
    // starts before the grid), of this lane, and the strip's coordinate along B.
    const long long a0 = (long long)(strip % strips_a) * STRIP - (long long)shift;
    const long long ca = a0 + lane;
    const unsigned cb = strip / strips_a;
    const bool live = ca >= 0 && ca < (long long)na;
    const int behind = -sign;
    // The squared lengths of the directions one step behind, by their offsets along B and A
    // (-1 where the grid has no such direction: the third axis of a 2D grid).
    float len2[3][3];
#pragma unroll
    for (int ob = -1; ob <= 1; ++ob) {
#pragma unroll
        for (int oa = -1; oa <= 1; ++oa) {
            float l2 = -1.0f;
            for (unsigned k = 0; k < g.deg; ++k) {
                const int *o = g.is3d ? OFFSETS_3D[k] : OFFSETS_2D[k];
                if (o[AXIS] == behind && o[A] == oa && o[B] == ob) l2 = dist2[k];
            }
            len2[ob + 1][oa + 1] = l2;
        }
    }
    // The coordinate along AXIS of step i.
    auto ci_of = [&](unsigned i) -> size_t { return sign > 0 ? i : len - 1 - i; };
    float(*tf)[STRIP + 1] = sh.tile_f[warp];
    float(*tb)[STRIP + 1] = sh.tile_b[warp];
    float(*tl)[STRIP][STRIP + 1] = sh.tile_len[warp];
    float(*hf)[STRIP] = sh.halo_f[warp];
    float(*hb)[STRIP] = sh.halo_b[warp];
    // Other warps' lines are read through volatile pointers: each read is a fresh load.
    const volatile float *vf = d_fg, *vb = d_bg;
    // This lane's values one step behind: infinite before the first step; before a later
    // segment's first step, the value stored there now (an upper bound, possibly older than
    // what the segment's warp is writing).
    float prev_f = INF, prev_b = INF;
    if (i_begin > 0 && live) {
        const size_t v = ci_of(i_begin - 1) * stride[AXIS] + (size_t)ca * stride[A] + cb * stride[B];
        prev_f = vf[v];
        prev_b = vb[v];
    }
    // With precomputed step lengths (2D, lens): the directions one step behind, straight and
    // towards the lower and the higher neighbouring line (-1 where the connectivity has none).
    int k_st = -1, k_lo = -1, k_hi = -1;
    if (lens) {
        for (unsigned k = 0; k < g.deg; ++k) {
            const int *o = OFFSETS_2D[k];
            if (o[AXIS] != behind) continue;
            if (o[A] == 0) k_st = (int)k;
            else if (o[A] < 0) k_lo = (int)k;
            else k_hi = (int)k;
        }
    }
    for (unsigned i0 = i_begin; i0 < i_end; i0 += STRIP) {
        // The chunk's tile, entry [line][step]: along x a lane loads a step (a line's
        // consecutive pixels), along y or z a line, so each of the warp's loads is contiguous.
#pragma unroll 8
        for (unsigned r = 0; r < STRIP; ++r) {
            const unsigned line = AXIS == 0 ? r : lane, step = AXIS == 0 ? lane : r;
            const long long la = a0 + line;
            const unsigned i = i0 + step;
            float f = INF, bg = INF;
            if (la >= 0 && la < (long long)na && i < i_end) {
                const unsigned ci = sign > 0 ? i : len - 1 - i;
                const size_t v = ci * stride[AXIS] + (size_t)la * stride[A] + cb * stride[B];
                f = d_fg[v];
                bg = d_bg[v];
                // The step lengths ride on the same loads: the chain below then waits on
                // shared memory, not on a global load per step.
                if (lens) {
                    const size_t n = g.n;
                    tl[0][line][step] = lens[(size_t)k_st * n + v];
                    tl[1][line][step] = k_lo >= 0 ? lens[(size_t)k_lo * n + v] : INF;
                    tl[2][line][step] = k_hi >= 0 ? lens[(size_t)k_hi * n + v] : INF;
                }
            }
            tf[line][step] = f;
            tb[line][step] = bg;
        }
        // The outer lines one step behind each of the chunk's steps (lane = step): as they
        // are now, which may be older than what their warps write during the chunk.
        for (unsigned side = 0; side < 2; ++side) {
            const long long la = side == 0 ? a0 - 1 : a0 + STRIP;
            float f = INF, bg = INF;
            if (la >= 0 && la < (long long)na && i0 + lane >= 1 && i0 + lane - 1 < len) {
                const unsigned i = i0 + lane - 1;
                const unsigned ci = sign > 0 ? i : len - 1 - i;
                const size_t v = ci * stride[AXIS] + (size_t)la * stride[A] + cb * stride[B];
                f = vf[v];
                bg = vb[v];
            }
            hf[side][lane] = f;
            hb[side][lane] = bg;
        }
        __syncwarp();
        bool dirty = false;
        const unsigned steps = min(STRIP, i_end - i0);
        for (unsigned j = 0; j < steps; ++j) {
            const unsigned i = i0 + j;
            // Lines t - 1 and t + 1 one step behind, from their lanes (every lane shuffles).
            const float up_f = __shfl_up_sync(FULL, prev_f, 1);
            const float up_b = __shfl_up_sync(FULL, prev_b, 1);
            const float dn_f = __shfl_down_sync(FULL, prev_f, 1);
            const float dn_b = __shfl_down_sync(FULL, prev_b, 1);
            float best_f = tf[lane][j], best_b = tb[lane][j];
            if (lens && live && i > 0) {
                // The same minimum as the loop below (a neighbour that cannot improve gives a
                // candidate no lower than the value: min is exact, so the order and the skips
                // do not matter); a missing neighbour's step or distance is infinite.
                const float s_st = tl[0][lane][j], s_lo = tl[1][lane][j], s_hi = tl[2][lane][j];
                const float lo_f = lane > 0 ? up_f : hf[0][j], lo_b = lane > 0 ? up_b : hb[0][j];
                const float hi_f = lane < STRIP - 1 ? dn_f : hf[1][j];
                const float hi_b = lane < STRIP - 1 ? dn_b : hb[1][j];
                const float old_f = best_f, old_b = best_b;
                best_f = fminf(best_f, prev_f + s_st);
                best_b = fminf(best_b, prev_b + s_st);
                if (k_lo >= 0) {
                    best_f = fminf(best_f, lo_f + s_lo);
                    best_b = fminf(best_b, lo_b + s_lo);
                }
                if (k_hi >= 0) {
                    best_f = fminf(best_f, hi_f + s_hi);
                    best_b = fminf(best_b, hi_b + s_hi);
                }
                if (best_f < old_f || best_b < old_b) {
                    tf[lane][j] = best_f;
                    tb[lane][j] = best_b;
                    dirty = true;
                }
            } else if (live && i > 0) {
                const size_t v = ci_of(i) * stride[AXIS] + (size_t)ca * stride[A] + cb * stride[B];
                const float old_f = best_f, old_b = best_b;
#pragma unroll
                for (int ob = -1; ob <= 1; ++ob) {
#pragma unroll
                    for (int oa = -1; oa <= 1; ++oa) {
                        const float l2 = len2[ob + 1][oa + 1];
                        // Not a direction of the grid (2D: no third axis), or off the grid.
                        if (l2 < 0.0f) continue;
                        const long long qa = ca + oa, qb = (long long)cb + ob;
                        if (qa < 0 || qa >= (long long)na || qb < 0 || qb >= (long long)nb)
                            continue;
                        const size_t q = (size_t)((long long)v - sign * (long long)stride[AXIS] +
                                                  oa * (long long)stride[A] +
                                                  ob * (long long)stride[B]);
                        float from_f, from_b;
                        if (ob != 0) {
                            // A line of another strip (3D): read now, possibly older than its
                            // warp's latest value.
                            from_f = vf[q];
                            from_b = vb[q];
                        } else if (oa == 0) {
                            from_f = prev_f;
                            from_b = prev_b;
                        } else if (oa < 0) {
                            from_f = lane > 0 ? up_f : hf[0][j];
                            from_b = lane > 0 ? up_b : hb[0][j];
                        } else {
                            from_f = lane < STRIP - 1 ? dn_f : hf[1][j];
                            from_b = lane < STRIP - 1 ? dn_b : hb[1][j];
                        }
                        // An unreached or farther neighbour cannot improve anything.
                        if (!(from_f < best_f || from_b < best_b)) continue;
                        const float c2 = colour_dist2(bytes, floats, ch, v, q);
                        const float len_q = sqrtf(l2 + colour * c2);
                        if (from_f < best_f) best_f = fminf(best_f, from_f + len_q);
                        if (from_b < best_b) best_b = fminf(best_b, from_b + len_q);
                    }
                }
                if (best_f < old_f || best_b < old_b) {
                    tf[lane][j] = best_f;
                    tb[lane][j] = best_b;
                    dirty = true;
                }
            }
            prev_f = live ? best_f : INF;
            prev_b = live ? best_b : INF;
        }
        __syncwarp();
        // Store the chunk, as it was loaded, where a lane lowered something in it.
        if (__any_sync(FULL, dirty)) {
            lowered = true;
#pragma unroll 8
            for (unsigned r = 0; r < STRIP; ++r) {
                const unsigned line = AXIS == 0 ? r : lane, step = AXIS == 0 ? lane : r;
                const long long la = a0 + line;
                const unsigned i = i0 + step;
                if (la >= 0 && la < (long long)na && i < i_end) {
                    const unsigned ci = sign > 0 ? i : len - 1 - i;
                    const size_t v = ci * stride[AXIS] + (size_t)la * stride[A] + cb * stride[B];
                    d_fg[v] = tf[line][step];
                    d_bg[v] = tb[line][step];
                }
            }
        }
        // The next chunk's loads overwrite the tiles other lanes read above.
        __syncwarp();
    }
}

// One sweep along `axis` (0: x, 1: y, 2: z) in direction `sign` (+1: increasing coordinate), for
// both classes at once (they share the step lengths), as a relaxation schedule of the header's
// fixed point. The lines along `axis` are grouped in strips of 32 neighbours along the lower
// other axis A (at one coordinate of the third axis B); a warp takes a strip, lane t the line at
// A = a0 + t with a0 = 32 * (strip index) - shift (the host alternates shift between 0 and 16, so
// that a strip's edge in one pass is a strip's middle in the next). The warp walks the axis in
// chunks of 32 steps: it loads the chunk's distances of its lines into a shared tile (along x
// transposed through it, so that every global access of the warp is contiguous), then at each
// step each lane relaxes its pixel from the neighbours one step behind (offset -sign along
// `axis`) in the CPU's expressions. The previous step's values of lines t - 1, t, t + 1 come from
// the lanes' registers (shuffles), those of the strip's outer lines from global memory read at
// the start of the chunk, and in 3D those of the lines at B -+ 1 from global memory when used.
// The tile goes back to global memory at the end of the chunk if a lane lowered something.
// Long axes are cut into segments of `seg` steps (a multiple of 32), a warp per strip and
// segment, so that more warps share the work of a sweep: a segment's warp starts from the values
// stored one step before its segment (upper bounds, possibly not yet lowered by the warp before
// it), so a path crosses a segment boundary in a later pass at worst; the fixed point and its
// bits are the same (the header's argument), only the passes it takes change.
//
// Passes (every axis, both directions) are launched in batches without a host round trip:
// flags[pass] is set when the pass lowered a distance, and every sweep of a pass whose
// predecessor changed nothing returns at once, so a batch runs on past convergence for free.
// sync: flags[pass] (atomicOr); d_fg, d_bg of lines outside the strip are read while their warps
// write them (see the file's header). safe: d_fg[v], d_bg[v] for v on the strip's lines; the
// warp's tiles and halos (ordered by __syncwarp).
extern "C" __global__ void prior_strips(const Grid g, unsigned axis, int sign, unsigned shift,
                                        unsigned seg, unsigned pass, unsigned ch, const unsigned char *bytes,
                                        const float *floats, const float *dist2, float colour,
                                        const float *steps, float *d_fg, float *d_bg,
                                        unsigned *flags) {
    // The previous pass changed nothing: the distances are final (the same for the whole grid).
    if (pass > 0 && ((volatile unsigned *)flags)[pass - 1] == 0) return;
    __shared__ StripTiles sh;
    bool lowered = false;
    switch (axis) {
    case 0:
        strip_sweep<0>(g, sign, shift, seg, ch, bytes, floats, dist2, colour, steps, d_fg, d_bg, sh,
                       lowered);
        break;
    case 1:
        strip_sweep<1>(g, sign, shift, seg, ch, bytes, floats, dist2, colour, steps, d_fg, d_bg, sh,
                       lowered);
        break;
    default:
        strip_sweep<2>(g, sign, shift, seg, ch, bytes, floats, dist2, colour, steps, d_fg, d_bg, sh,
                       lowered);
        break;
    }
    if (lowered && threadIdx.x % STRIP == 0) atomicOr(&flags[pass], 1u);
}

// The prior's cost difference per pixel (prior_costs in prior.rs): gamma (d_F - d_B) / (d_F + d_B
// + soft), 0 where the denominator is not positive.
// sync: none. safe: prior[v].
extern "C" __global__ void prior_costs(unsigned n, const float *d_fg, const float *d_bg,
                                       float gamma, float soft, float *prior) {
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        float f = d_fg[v], b = d_bg[v];
        float sum = f + b + soft;
        prior[v] = sum > 0.0f ? gamma * (f - b) / sum : 0.0f;
    }
}

// The strokes' enclosure (enclosure_counts in prior.rs) from the prior itself: over the image's
// border pixels (x, y at either end; in a volume also z; every pixel once), counts[0] gets 2 where
// prior > 0 (nearer the background strokes), 1 where prior == 0 (a tie), 0 otherwise (a NaN
// included), counts[1] one per pixel. Integer sums, so the order of the atomics does not change
// them: the host's counts exactly. counts must be zero before the launch.
// sync: counts[0], counts[1] (atomicAdd, lane 0 of each warp). safe: none.
extern "C" __global__ void prior_enclosure(const Grid g, const float *prior, u64 *counts) {
    u64 halves = 0, border = 0;
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < g.n;
         v += gridDim.x * blockDim.x) {
        unsigned x, y, z;
        coords(g, v, x, y, z);
        const bool edge = x == 0 || x + 1 == g.w || y == 0 || y + 1 == g.h ||
                          (g.d > 1 && (z == 0 || z + 1 == g.d));
        if (!edge) continue;
        const float p = prior[v];
        halves += p > 0.0f ? 2 : (p == 0.0f ? 1 : 0);
        border += 1;
    }
    // Every lane reaches here (the loop has no early return): full-warp sums.
    halves = warp_sum(halves);
    border = warp_sum(border);
    if (threadIdx.x % 32 == 0 && border > 0) {
        atomicAdd(&counts[0], halves);
        atomicAdd(&counts[1], border);
    }
}

// The whole prior times the enclosure's factor gain = E^k (scale_by_enclosure in prior.rs; the
// factor computed and rounded to float on the host): one float product per pixel, the host's.
// sync: none. safe: prior[v].
extern "C" __global__ void prior_scale(unsigned n, float gain, float *prior) {
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x)
        prior[v] = prior[v] * gain;
}

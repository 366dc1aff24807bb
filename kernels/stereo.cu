// stereo.cu: α-expansion stereo kept on the device (src/stereo/gpu.rs drives it through the
// launchers of src/cuda/launch/stereo.rs): the cost volume of a rectified pair (Birchfield–Tomasi
// plus census, the arithmetic of src/stereo/cost.rs operation for operation: this file is compiled
// with --fmad=false, so no product is fused into an addition and every cost equals the host's bit
// for bit), the contrast-sensitive pair weights, the winner-takes-all start, each expansion move's
// graph written straight into the grid solver's arrays, the energy and the cut capacity of a
// move's proposal, and the commit of a move. Only the final labels and a few numbers per pass go
// back to the host.
//
// Layouts: pixel p = x + w*y; cost[l*n + p]; weights[k*n + p] is the weight of the pair
// (p, p + OFFSETS_2D[2k]) (k = 0: +x, 1: +y, for N8 also the diagonals 4 and 6); labels one
// unsigned per pixel. The move graph is the grid solver's: caps[d*n + v] (direction-major), one
// source and one sink capacity per node; a node on the sink side takes α. The solver's label of a
// node is at most n exactly when the node reaches the sink (the canonical cut's sink side).
//
// Packed pairs: the grid may be K problems of `rows` rows each stacked along y (w × K·rows, the
// layouts above over the whole stacked grid). The host gives every pair that joins two parts
// weight 0, so the graph kernels need no change; move_energy and commit_move keep their sums and
// decisions per part, and weighted_median clips its window at the part's own rows.
//
// The pairwise distance V is Potts when vtrunc is 0, else min(|a - b|, vtrunc).

#include "common.cuh"

// Every kernel strides over its items, so any launch size is correct.
#define STRIDE(i, count)                                                                           \
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (size_t)(count);           \
         i += (size_t)gridDim.x * blockDim.x)

__device__ __forceinline__ i64 vdist(unsigned a, unsigned b, unsigned vtrunc) {
    if (vtrunc == 0) return a != b;
    i64 d = (i64)a - (i64)b;
    d = d < 0 ? -d : d;
    return d < (i64)vtrunc ? d : (i64)vtrunc;
}

// sync: none
// safe: planes[c*n + p] and grey[p] written by p's thread
// The image's channel planes times k (the host's range rescaling) and the grey plane, the mean of
// the channels summed in channel order.
extern "C" __global__ void view_planes(unsigned n, unsigned ch, const float *img, float k,
                                       float *planes, float *grey) {
    STRIDE(p, n) {
        float s = 0.0f;
        for (unsigned c = 0; c < ch; ++c) {
            float v = img[p * ch + c] * k;
            planes[c * (size_t)n + p] = v;
            s = s + v;
        }
        grey[p] = s / (float)ch;
    }
}

// sync: none
// safe: lo[i] and hi[i] written by i's thread
// Birchfield–Tomasi: the range of each plane value and its two linearly interpolated half-pixel
// neighbours along the row (the row's ends clamped), for the `count` = channels·n values.
extern "C" __global__ void bt_ranges(unsigned w, unsigned count, const float *planes, float *lo,
                                     float *hi) {
    STRIDE(i, count) {
        unsigned x = i % w;
        float c = planes[i];
        float m = 0.5f * (c + planes[x > 0 ? i - 1 : i]);
        float q = 0.5f * (c + planes[x + 1 < w ? i + 1 : i]);
        lo[i] = fminf(fminf(c, m), q);
        hi[i] = fmaxf(fmaxf(c, m), q);
    }
}

// sync: none
// safe: out[p] written by p's thread
// 5×5 census signatures of a grey plane (24 bits, neighbour darker than the centre, row-major
// window order), the window clamped at the border.
extern "C" __global__ void census(unsigned w, unsigned h, const float *grey, unsigned *out) {
    STRIDE(p, (size_t)w * h) {
        int x = (int)(p % w), y = (int)(p / w);
        float c = grey[p];
        unsigned bits = 0;
        for (int dy = -2; dy <= 2; ++dy) {
            for (int dx = -2; dx <= 2; ++dx) {
                if (dx == 0 && dy == 0) continue;
                int nx = min(max(x + dx, 0), (int)w - 1), ny = min(max(y + dy, 0), (int)h - 1);
                bits = (bits << 1) | (grey[nx + (size_t)w * ny] < c ? 1u : 0u);
            }
        }
        out[p] = bits;
    }
}

// sync: none
// safe: cost[l*n + p] written by its own thread
// The cost volume for labels 0..labels-1 (disparity min_d + l): left pixel x against right pixel
// x - d clamped to the row; BT as the mean over channels, truncated, plus census_weight times the
// census Hamming distance when lcen is not null; round(scale · cost).
extern "C" __global__ void cost_volume(unsigned w, unsigned h, unsigned ch, unsigned labels,
                                       int min_d, const float *lp, const float *rp,
                                       const float *llo, const float *lhi, const float *rlo,
                                       const float *rhi, const unsigned *lcen,
                                       const unsigned *rcen, float truncation,
                                       float census_weight, float scale, int *cost) {
    const size_t n = (size_t)w * h;
    STRIDE(i, n * labels) {
        size_t p = i % n;
        unsigned l = (unsigned)(i / n);
        i64 x = (i64)(p % w), y = (i64)(p / w);
        i64 xr = x - ((i64)min_d + l);
        xr = xr < 0 ? 0 : (xr > (i64)w - 1 ? (i64)w - 1 : xr);
        size_t q = (size_t)xr + (size_t)w * y;
        float bt = 0.0f;
        for (unsigned c = 0; c < ch; ++c) {
            size_t cp = c * n + p, cq = c * n + q;
            float il = lp[cp], ir = rp[cq];
            float d1 = fmaxf(fmaxf(il - rhi[cq], rlo[cq] - il), 0.0f);
            float d2 = fmaxf(fmaxf(ir - lhi[cp], llo[cp] - ir), 0.0f);
            bt = bt + fminf(d1, d2);
        }
        float v = fminf(bt / (float)ch, truncation);
        if (lcen) v = v + census_weight * (float)__popc(lcen[p] ^ rcen[q]);
        cost[i] = (int)roundf(v * scale);
    }
}

// sync: none
// safe: weights[k*n + p] written by p's thread
// Contrast-sensitive pair weights: lam1 where the largest channel difference of the pair is below
// threshold, else lam2; 0 where the pair's second pixel lies outside the image.
extern "C" __global__ void pair_weights(const Grid g, unsigned ch, const float *planes,
                                        float threshold, int lam1, int lam2, int *weights) {
    STRIDE(p, g.n) {
        unsigned x = (unsigned)(p % g.w), y = (unsigned)(p / g.w);
        for (unsigned k = 0; k < g.deg / 2; ++k) {
            i64 q = neighbor(g, x, y, 0, 2 * k);
            int wt = 0;
            if (q >= 0) {
                float diff = 0.0f;
                for (unsigned c = 0; c < ch; ++c)
                    diff = fmaxf(diff, fabsf(planes[c * (size_t)g.n + p] - planes[c * (size_t)g.n + q]));
                wt = diff < threshold ? lam1 : lam2;
            }
            weights[k * (size_t)g.n + p] = wt;
        }
    }
}

// sync: none
// safe: labels[p] written by p's thread
// The winner-takes-all labelling: each pixel's cheapest label, the lowest on ties.
extern "C" __global__ void winner_takes_all(unsigned n, unsigned labels, const int *cost,
                                            unsigned *out) {
    STRIDE(p, n) {
        unsigned best = 0;
        int bc = cost[p];
        for (unsigned l = 1; l < labels; ++l) {
            int c = cost[l * (size_t)n + p];
            if (c < bc) {
                bc = c;
                best = l;
            }
        }
        out[p] = best;
    }
}

// E_p(1) - E_p(0) of the move "take α" at pixel p = (x, y) with label fp: its unary difference,
// plus per forward pair (p, q) the linear term C - A, minus per backward pair (r, p) the term C
// of that pair (src/stereo/expansion.rs, build_move, has the construction).
__device__ i64 node_delta(const Grid g, unsigned x, unsigned y, size_t p, const int *cost,
                          const int *weights, unsigned vtrunc, const unsigned *labels,
                          unsigned alpha, unsigned fp) {
    i64 delta = (i64)cost[alpha * (size_t)g.n + p] - (i64)cost[fp * (size_t)g.n + p];
    for (unsigned k = 0; k < g.deg / 2; ++k) {
        i64 q = neighbor(g, x, y, 0, 2 * k);
        if (q >= 0) {
            i64 w = weights[k * (size_t)g.n + p];
            unsigned fq = labels[q];
            delta += w * vdist(alpha, fq, vtrunc) - w * vdist(fp, fq, vtrunc);
        }
        i64 r = neighbor(g, x, y, 0, 2 * k + 1);
        if (r >= 0) delta -= (i64)weights[k * (size_t)g.n + r] * vdist(alpha, fp, vtrunc);
    }
    return delta;
}

// The capacity of the forward arc p -> q of the move: B + C - A.
__device__ __forceinline__ i64 arc_cap(i64 w, unsigned fp, unsigned fq, unsigned alpha,
                                       unsigned vtrunc) {
    return w * vdist(fp, alpha, vtrunc) + w * vdist(alpha, fq, vtrunc) - w * vdist(fp, fq, vtrunc);
}

// sync: none
// safe: caps[d*n + p], source[p], sink[p] written by p's thread
// The graph of the move "take α" from labels, into the grid solver's arrays (every entry
// overwritten): forward arcs p -> q of capacity B + C - A, reverse arcs 0, and each node's
// terminal arcs the positive part of its cost difference on the source side, the negative part on
// the sink side.
extern "C" __global__ void build_move(const Grid g, const int *cost, const int *weights,
                                      unsigned vtrunc, const unsigned *labels, unsigned alpha,
                                      int *caps, int *source, int *sink) {
    STRIDE(p, g.n) {
        unsigned x = (unsigned)(p % g.w), y = (unsigned)(p / g.w);
        unsigned fp = labels[p];
        for (unsigned k = 0; k < g.deg / 2; ++k) {
            i64 q = neighbor(g, x, y, 0, 2 * k);
            i64 c = 0;
            if (q >= 0) c = arc_cap(weights[k * (size_t)g.n + p], fp, labels[q], alpha, vtrunc);
            caps[(2 * k) * (size_t)g.n + p] = (int)c;
            caps[(2 * k + 1) * (size_t)g.n + p] = 0;
        }
        i64 d = node_delta(g, x, y, p, cost, weights, vtrunc, labels, alpha, fp);
        source[p] = (int)(d > 0 ? d : 0);
        sink[p] = (int)(d < 0 ? -d : 0);
    }
}

// sync: sums (+, one atomic per warp for each of the two, per lane where a warp spans two parts)
// safe: none (read only otherwise)
// The energy of the move's proposal and the capacity of the move's cut (the certificate: summed
// over the parts it must equal the solver's flow), per part: the grid is `parts = g.h / rows`
// problems of `rows` rows stacked along y (packed pairs; one part is a single problem), and part
// k's sums go to sums[2*(slot*parts + k)] and sums[2*(slot*parts + k) + 1]. No pair crossing a
// seam has weight (the host zeroes them), so each part's sums are its own problem's. The proposal
// is labels with α where the solver's label is at most n (the cut's sink side); with side null it
// is labels itself (and the cut gets 0). Both are sums of non-negative integers, so their order
// does not matter.
extern "C" __global__ void move_energy(const Grid g, unsigned rows, const int *cost,
                                       const int *weights, unsigned vtrunc,
                                       const unsigned *labels, const unsigned *side,
                                       unsigned alpha, unsigned slot, u64 *sums) {
    const unsigned parts = g.h / rows;
    const size_t part_n = (size_t)g.w * rows;
    u64 e = 0, cut = 0;
    // The part this thread's sums belong to; they are flushed when its pixels enter another.
    unsigned part = 0;
    STRIDE(p, g.n) {
        unsigned x = (unsigned)(p % g.w), y = (unsigned)(p / g.w);
        const unsigned pk = (unsigned)(p / part_n);
        if (pk != part) {
            u64 *s = sums + 2 * ((size_t)slot * parts + part);
            if (e) atomicAdd(s, e);
            if (cut) atomicAdd(s + 1, cut);
            e = cut = 0;
            part = pk;
        }
        unsigned fp = labels[p];
        bool tp = side && side[p] <= g.n;
        unsigned lp = tp ? alpha : fp;
        e += (u64)cost[lp * (size_t)g.n + p];
        for (unsigned k = 0; k < g.deg / 2; ++k) {
            i64 q = neighbor(g, x, y, 0, 2 * k);
            if (q < 0) continue;
            i64 w = weights[k * (size_t)g.n + p];
            unsigned fq = labels[q];
            bool tq = side && side[q] <= g.n;
            e += (u64)(w * vdist(lp, tq ? alpha : fq, vtrunc));
            if (!tp && tq) cut += (u64)arc_cap(w, fp, fq, alpha, vtrunc);
        }
        if (side) {
            i64 d = node_delta(g, x, y, p, cost, weights, vtrunc, labels, alpha, fp);
            // Sink side: the source arc (its positive part) is cut; source side: the sink arc.
            cut += (u64)(tp ? (d > 0 ? d : 0) : (d < 0 ? -d : 0));
        }
    }
    // One atomic per warp where its lanes hold sums of one part (always with one part), else one
    // per lane. A lane with nothing to add agrees with any part.
    const unsigned first = __shfl_sync(0xffffffffu, part, 0);
    const bool one = __all_sync(0xffffffffu, part == first || (e == 0 && cut == 0));
    u64 *s = sums + 2 * ((size_t)slot * parts + (one ? first : part));
    if (one) {
        e = warp_sum(e);
        cut = warp_sum(cut);
        if ((threadIdx.x & 31) != 0) e = cut = 0;
    }
    if (e) atomicAdd(s, e);
    if (cut) atomicAdd(s + 1, cut);
}

// sync: switched (+, one atomic per warp, per lane where a warp spans two parts)
// safe: labels[p] by p's thread; hist[(m + 1)*parts + k], flows[m], taken[m*parts + k] by thread 0
// of block 0
// Move m's commit, decided per part (the grid is `parts` problems of n / parts nodes stacked, as
// in move_energy): with solved != 0, part k's proposal (energy sums[2*(m*parts + k)]) replaces
// its labels when it is lower than hist[m*parts + k], the part's energy before the move;
// hist[(m + 1)*parts + k] gets the energy after it, taken[m*parts + k] whether part k took it,
// switched[m*parts + k] the pixels of part k that changed, flows[m] the solver's flow (all
// parts'). With solved == 0 (a move skipped because its graph is the one solved before) only the
// bookkeeping: the energies stay, nothing is taken.
extern "C" __global__ void commit_move(unsigned n, unsigned parts, unsigned alpha,
                                       unsigned *labels, const unsigned *side, const u64 *sums,
                                       u64 *hist, const u64 *flow, u64 *flows, unsigned *taken,
                                       unsigned *switched, unsigned m, int solved) {
    const size_t part_n = n / parts;
    const size_t at = (size_t)m * parts;
    bool any = false;
    for (unsigned k = 0; k < parts; ++k) {
        const u64 before = hist[at + k];
        const u64 after = solved ? sums[2 * (at + k)] : before;
        const bool take = after < before;
        any = any || take;
        if (blockIdx.x == 0 && threadIdx.x == 0) {
            hist[at + parts + k] = take ? after : before;
            taken[at + k] = take;
        }
    }
    if (blockIdx.x == 0 && threadIdx.x == 0) flows[m] = solved ? *flow : 0;
    if (!any) return;
    // Every thread of a warp reaches the ballots: the loop runs the same count per warp.
    const size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t base = blockIdx.x * (size_t)blockDim.x; base < n; base += stride) {
        size_t p = base + threadIdx.x;
        const unsigned k = p < n ? (unsigned)(p / part_n) : 0;
        const bool take = p < n && sums[2 * (at + k)] < hist[at + k];
        bool sw = take && side[p] <= n && labels[p] != alpha;
        if (sw) labels[p] = alpha;
        const unsigned first = __shfl_sync(0xffffffffu, k, 0);
        const bool one = __all_sync(0xffffffffu, k == first || !sw);
        unsigned mask = __ballot_sync(0xffffffffu, sw);
        if (one) {
            if ((threadIdx.x & 31) == 0 && mask) atomicAdd(switched + at + first, (unsigned)__popc(mask));
        } else if (sw) {
            atomicAdd(switched + at + k, 1u);
        }
    }
}

// The most labels weighted_median takes: each thread's histogram has this many sums, in local
// memory (1 KB a thread). DEVICE_MAX_LABELS in src/stereo/median.rs; with more labels the host
// filters.
#define MEDIAN_MAX_LABELS 128

// sync: none
// safe: out[p*ch + c] written by p's thread
// The weighted median filter's guide: each plane value as a whole 8-bit colour, pixel-interleaved;
// rounded half away from zero, below 0 (and NaN) to 0, above 255 to 255 (guide_byte in
// src/stereo/median.rs).
extern "C" __global__ void guide_bytes(unsigned n, unsigned ch, const float *planes,
                                       unsigned char *out) {
    STRIDE(p, n) {
        for (unsigned c = 0; c < ch; ++c) {
            float v = roundf(planes[c * (size_t)n + p]);
            out[p * ch + c] = (unsigned char)(v > 0.0f ? (v < 255.0f ? v : 255.0f) : 0.0f);
        }
    }
}

// sync: none
// safe: out[p] written by p's thread; hist is the thread's own
// The joint weighted median filter (src/stereo/median.rs, `filter`), one thread per pixel p: the
// summed weight of each label over p's (2·radius + 1)² window clipped at the border, a neighbour
// q weighing colour[d²] · space[(qy − y + r)·(2r + 1) + qx − x + r], where d² is the squared
// distance of the 8-bit colours of p and q and colour[d²] is 0 from colour_len on; then the
// smallest label whose running sum reaches half of the total (p's own label if the total is 0,
// which the tables rule out: the centre weighs 2^48). Integer sums only: the result does not
// depend on their order and equals the host's bit for bit. Labels ≥ nl add nothing (the launchers
// never pass one); with nl outside 1..=MEDIAN_MAX_LABELS nothing is written. The image is h / rows
// parts of `rows` rows stacked along y (packed pairs; rows = h for one image): the window is
// clipped at the part's own top and bottom rows, so each part's map is its own image's.
extern "C" __global__ void weighted_median(unsigned w, unsigned h, unsigned rows, unsigned ch,
                                           unsigned radius,
                                           unsigned nl, const unsigned char *guide,
                                           const unsigned *labels, const unsigned *colour,
                                           unsigned colour_len, const unsigned *space,
                                           unsigned *out) {
    if (nl == 0 || nl > MEDIAN_MAX_LABELS) return;
    u64 hist[MEDIAN_MAX_LABELS];
    const int r = (int)radius, side = 2 * r + 1;
    STRIDE(p, (size_t)w * h) {
        const int x = (int)(p % w), y = (int)(p / w);
        for (unsigned l = 0; l < nl; ++l) hist[l] = 0;
        const int x0 = max(x - r, 0), x1 = min(x + r, (int)w - 1);
        const int top = y / (int)rows * (int)rows;
        const int y0 = max(y - r, top), y1 = min(y + r, top + (int)rows - 1);
        const unsigned char *cp = guide + p * ch;
        u64 total = 0;
        for (int qy = y0; qy <= y1; ++qy) {
            const unsigned *srow = space + (size_t)(qy - y + r) * side;
            for (int qx = x0; qx <= x1; ++qx) {
                const size_t q = (size_t)qx + (size_t)w * qy;
                const unsigned char *cq = guide + q * ch;
                unsigned d2 = 0;
                for (unsigned c = 0; c < ch; ++c) {
                    int d = (int)cp[c] - (int)cq[c];
                    d2 += (unsigned)(d * d);
                }
                const u64 wt = (u64)(d2 < colour_len ? colour[d2] : 0u) * srow[qx - x + r];
                const unsigned l = labels[q];
                if (l < nl) {
                    hist[l] += wt;
                    total += wt;
                }
            }
        }
        unsigned med = labels[p];
        u64 acc = 0;
        for (unsigned l = 0; l < nl; ++l) {
            acc += hist[l];
            if (total > 0 && 2 * acc >= total) {
                med = l;
                break;
            }
        }
        out[p] = med;
    }
}

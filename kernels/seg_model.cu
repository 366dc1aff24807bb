// seg_model.cu: the colour models on the GPU: each class's samples gathered from the working
// image (by the seeds or by the last mask), every step-th pixel in pixel order, exactly the
// samples the host's gather in src/segment/pipeline.rs hands to Gmm::fit; then the mixture fit
// itself on them (model_fit, below). Launched only through the typed launchers of
// src/cuda/launch/seg_model.rs; src/segment/gpu_model.rs drives them.
//
// Classes: pixel v belongs to the foreground when bit labels[v] of fg_set is set, to the
// background when that bit of bg_set is (labels are seed codes 0..4 or mask bytes 0/1).
//
// Both kernels split the pixels into contiguous chunks, one per block (`chunk` pixels, a multiple
// of BLOCK), walked in tiles of BLOCK pixels, so that a block knows each pixel's ordinal among its
// class: the host adds the blocks' counts from model_count into each block's first ordinal.

#include "common.cuh"

__device__ __forceinline__ unsigned class_bits(unsigned char label, unsigned fg_set,
                                               unsigned bg_set) {
    unsigned fg = label < 32 ? (fg_set >> label) & 1u : 0u;
    unsigned bg = label < 32 ? (bg_set >> label) & 1u : 0u;
    return fg | (bg << 1);
}

// Exclusive prefix sum of x over the block's BLOCK threads (every thread calls), with the block's
// total in `total`; sh holds BLOCK / 32 + 1 entries.
__device__ unsigned block_exclusive_scan(unsigned x, unsigned *sh, unsigned &total) {
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    unsigned incl = x;
    for (unsigned o = 1; o < 32; o <<= 1) {
        unsigned y = __shfl_up_sync(0xffffffffu, incl, o);
        if (lane >= o) incl += y;
    }
    if (lane == 31) sh[warp] = incl;
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned run = 0;
        for (unsigned w = 0; w < BLOCK / 32; ++w) {
            unsigned t = sh[w];
            sh[w] = run;
            run += t;
        }
        sh[BLOCK / 32] = run;
    }
    __syncthreads();
    unsigned excl = sh[warp] + incl - x;
    total = sh[BLOCK / 32];
    __syncthreads();
    return excl;
}

// Per block, the number of foreground and background pixels of its chunk:
// counts[2 * block] and counts[2 * block + 1].
// sync: fg, bg (shared counters, atomicAdd). safe: counts[2 * blockIdx.x ..+2].
extern "C" __global__ void model_count(unsigned n, const unsigned char *labels, unsigned fg_set,
                                       unsigned bg_set, unsigned chunk, unsigned *counts) {
    __shared__ unsigned fg, bg;
    if (threadIdx.x == 0) fg = bg = 0;
    __syncthreads();
    const u64 start = (u64)blockIdx.x * chunk;
    const u64 end = start + chunk < n ? start + chunk : n;
    unsigned my_fg = 0, my_bg = 0;
    for (u64 v = start + threadIdx.x; v < end; v += blockDim.x) {
        unsigned c = class_bits(labels[v], fg_set, bg_set);
        my_fg += c & 1u;
        my_bg += c >> 1;
    }
    atomicAdd(&fg, my_fg);
    atomicAdd(&bg, my_bg);
    __syncthreads();
    if (threadIdx.x == 0) {
        counts[2 * blockIdx.x] = fg;
        counts[2 * blockIdx.x + 1] = bg;
    }
}

// Copies the samples: the pixel of class ordinal k goes to out_*[(k / step) * ch ..] when k is a
// multiple of the class's step. first[2 * block + c] is the ordinal of the block's first pixel of
// class c (the host's prefix sum of model_count's counts).
// sync: none (the scans' shared arrays are the block's own). safe: out_fg, out_bg (each
// sample's slots are written by the one thread holding its pixel).
extern "C" __global__ void model_gather(unsigned n, unsigned ch, const float *img,
                                        const unsigned char *labels, unsigned fg_set,
                                        unsigned bg_set, unsigned chunk, const unsigned *first,
                                        unsigned step_fg, unsigned step_bg, float *out_fg,
                                        float *out_bg) {
    __shared__ unsigned sh_fg[BLOCK / 32 + 1], sh_bg[BLOCK / 32 + 1];
    const u64 start = (u64)blockIdx.x * chunk;
    const u64 end = start + chunk < n ? start + chunk : n;
    unsigned run_fg = first[2 * blockIdx.x], run_bg = first[2 * blockIdx.x + 1];
    // Every thread runs every tile (the scans need the whole block).
    for (u64 base = start; base < start + chunk; base += BLOCK) {
        const u64 v = base + threadIdx.x;
        unsigned c = v < end ? class_bits(labels[v], fg_set, bg_set) : 0u;
        unsigned total_fg, total_bg;
        unsigned k_fg = run_fg + block_exclusive_scan(c & 1u, sh_fg, total_fg);
        unsigned k_bg = run_bg + block_exclusive_scan(c >> 1, sh_bg, total_bg);
        if ((c & 1u) && k_fg % step_fg == 0) {
            for (unsigned i = 0; i < ch; ++i)
                out_fg[(size_t)(k_fg / step_fg) * ch + i] = img[v * ch + i];
        }
        if ((c >> 1) && k_bg % step_bg == 0) {
            for (unsigned i = 0; i < ch; ++i)
                out_bg[(size_t)(k_bg / step_bg) * ch + i] = img[v * ch + i];
        }
        run_fg += total_fg;
        run_bg += total_bg;
    }
}

// The labels of the nearer-background first fit (pipeline.rs `nearer_background`): each pixel's
// seed code, but NEARER_BACKGROUND (5) for an unlabelled pixel (code 0) whose prior cost delta is
// above `margin` (the host's `geometry[i] > margin`, the same f32 comparison), so that
// model_count / model_gather with 5 in bg_set pick the host's background class without the prior
// leaving the device.
// sync: none. safe: out[v] for the thread's own v.
extern "C" __global__ void model_nearer_labels(unsigned n, const unsigned char *seeds,
                                               const float *prior, float margin,
                                               unsigned char *out) {
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        unsigned char s = seeds[v];
        out[v] = (s == 0 && prior[v] > margin) ? (unsigned char)5 : s;
    }
}

// ---------------------------------------------------------------------------------------------
// The mixture fit on the device (model.rs `Gmm::fit` / `Gmm::refit`, the same steps in the same
// order): k-means++ seeding from the host's random draws, Lloyd steps, the hard assignment's
// moments, EM. One block per class runs the whole fit, its passes separated by block barriers,
// so a fit is one launch and one small read-back instead of ~20 host round trips; the small
// algebra (the M-step's Cholesky factors) runs on the block's first threads. Every expression
// keeps model.rs's operation order (this file is compiled with --fmad=false); what differs from
// the host is the order in which the per-sample terms are summed (each thread sums a contiguous
// range of samples, then a fixed tree adds the threads' sums, where the host sums chunks of 512
// samples in order) and the device's exp and log, so the parameters agree with the host's to
// rounding, not bit for bit (tests/gpu_model.rs states the tolerance).

#define FIT_MAX_K 16
#define FIT_MAX_N 12000
// Per component of the output and of a warm start: log_coef, mean[3], L^-1 row-major 3x3.
#define FIT_COMP 13
#define FIT_OUT (1 + FIT_MAX_K * FIT_COMP)
// Scratch per class, in doubles: the k-means++ distances (n), the assignments (n), the
// responsibilities (n * FIT_MAX_K).
#define FIT_SCRATCH (FIT_MAX_N * (FIT_MAX_K + 2))
// Threads per fit block (its own launch shape, not BLOCK): enough warps to hide the passes'
// memory latency, about 12 samples per thread at the cap.
#define FIT_THREADS 1024
#define FIT_WARPS (FIT_THREADS / 32)

// Sums each of v[0..V) over the block into res[0..V) (shared), in a fixed order: a shuffle tree
// per warp, then the warps' sums in warp order. Every thread calls; res is valid after return.
template <int V>
__device__ void fit_sums(const double (&v)[V], double *warp_sh, double *res) {
    const unsigned lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
#pragma unroll
    for (int i = 0; i < V; ++i) {
        double x = v[i];
        for (int o = 16; o > 0; o >>= 1) x += __shfl_down_sync(0xffffffffu, x, o);
        if (lane == 0) warp_sh[warp * V + i] = x;
    }
    __syncthreads();
    if (threadIdx.x < V) {
        double s = warp_sh[threadIdx.x];
        for (unsigned w = 1; w < FIT_WARPS; ++w) s += warp_sh[w * V + threadIdx.x];
        res[threadIdx.x] = s;
    }
    __syncthreads();
}

// The smallest x over the block (every thread calls).
__device__ unsigned fit_min_u32(unsigned x, unsigned *sh) {
    for (int o = 16; o > 0; o >>= 1) x = min(x, __shfl_down_sync(0xffffffffu, x, o));
    if ((threadIdx.x & 31) == 0) sh[threadIdx.x >> 5] = x;
    __syncthreads();
    unsigned r = sh[0];
    for (unsigned w = 1; w < FIT_WARPS; ++w) r = min(r, sh[w]);
    __syncthreads();
    return r;
}

template <int D>
__device__ __forceinline__ void fit_load(const float *x, unsigned i, double (&out)[D]) {
#pragma unroll
    for (int a = 0; a < D; ++a) out[a] = (double)x[(size_t)i * D + a];
}

// model.rs `nearest`: the first centre of least squared distance.
template <int D>
__device__ unsigned fit_nearest(const double *centres, unsigned nc, const double (&x)[D]) {
    unsigned best = 0;
    double best_d = 1.0 / 0.0;
    for (unsigned j = 0; j < nc; ++j) {
        double dist = 0.0;
#pragma unroll
        for (int a = 0; a < D; ++a) dist += (centres[j * D + a] - x[a]) * (centres[j * D + a] - x[a]);
        if (dist < best_d) {
            best_d = dist;
            best = j;
        }
    }
    return best;
}

// model.rs `Gmm::from_moments` for component j: the moments sums[j] = [w, s1 (D), s2 lower
// triangle by rows] about shift[j], over n samples; writes [log_coef, mean, L^-1 (D x D)] into
// comp (FIT_COMP doubles) and returns false where the component has no weight (dropped).
template <int D>
__device__ bool fit_component(const double *m, const double *shift, unsigned n, double floor,
                              double d_ln_2pi, double *comp) {
    const double w = m[0];
    if (w < 1e-9) return false;
    double delta[D], cov[D][D], l[D][D], inv[D][D];
#pragma unroll
    for (int a = 0; a < D; ++a) delta[a] = m[1 + a] / w;
    int t = 1 + D;
#pragma unroll
    for (int a = 0; a < D; ++a) {
#pragma unroll
        for (int b = 0; b <= a; ++b) {
            cov[a][b] = m[t++] / w - delta[a] * delta[b];
            cov[b][a] = cov[a][b];
        }
        cov[a][a] = fmax(cov[a][a], 0.0) + floor;
    }
    // inverse_cholesky
#pragma unroll
    for (int a = 0; a < D; ++a)
#pragma unroll
        for (int b = 0; b < D; ++b) l[a][b] = inv[a][b] = 0.0;
#pragma unroll
    for (int i = 0; i < D; ++i) {
#pragma unroll
        for (int j = 0; j <= i; ++j) {
            double s = cov[i][j];
#pragma unroll
            for (int p = 0; p < j; ++p) s -= l[i][p] * l[j][p];
            if (i == j) l[i][i] = sqrt(fmax(s, floor));
            else l[i][j] = s / l[j][j];
        }
    }
    double log_det = 0.0;
#pragma unroll
    for (int i = 0; i < D; ++i) log_det += log(l[i][i]);
    log_det = 2.0 * log_det;
#pragma unroll
    for (int col = 0; col < D; ++col) {
#pragma unroll
        for (int i = col; i < D; ++i) {
            double s = i == col ? 1.0 : 0.0;
#pragma unroll
            for (int p = col; p < i; ++p) s -= l[i][p] * inv[p][col];
            inv[i][col] = s / l[i][i];
        }
    }
    comp[0] = log(w / (double)n) - 0.5 * (log_det + d_ln_2pi);
#pragma unroll
    for (int a = 0; a < D; ++a) comp[1 + a] = shift[a] + delta[a];
    for (int a = 0; a < 9; ++a) comp[4 + a] = 0.0;
#pragma unroll
    for (int a = 0; a < D; ++a)
#pragma unroll
        for (int b = 0; b < D; ++b) comp[4 + a * D + b] = inv[a][b];
    return true;
}

// The M-step over `nk` components' moments (about `shifts`, D values each): components[] gets
// the kept ones in order and the count is returned (every thread gets it).
template <int D>
__device__ unsigned fit_m_step(const double *moments, const double *shifts, unsigned nk,
                               unsigned n, double floor, double d_ln_2pi, double *comps,
                               double *tmp, unsigned *keep) {
    const int M = 1 + D + D * (D + 1) / 2;
    if (threadIdx.x < nk)
        keep[threadIdx.x] = fit_component<D>(moments + threadIdx.x * M, shifts + threadIdx.x * D,
                                             n, floor, d_ln_2pi, tmp + threadIdx.x * FIT_COMP);
    __syncthreads();
    if (threadIdx.x == 0) {
        unsigned kept = 0;
        for (unsigned j = 0; j < nk; ++j)
            if (keep[j]) {
                for (int a = 0; a < FIT_COMP; ++a) comps[kept * FIT_COMP + a] = tmp[j * FIT_COMP + a];
                ++kept;
            }
        keep[FIT_MAX_K] = kept;
    }
    __syncthreads();
    return keep[FIT_MAX_K];
}

// Adds sample diff (about the component's shift) with responsibility r to v = [w, s1, s2 lower].
template <int D>
__device__ __forceinline__ void fit_add(double (&v)[1 + D + D * (D + 1) / 2], double r,
                                        const double (&diff)[D]) {
    v[0] += r;
    int t = 1 + D;
#pragma unroll
    for (int a = 0; a < D; ++a) {
        double ra = r * diff[a];
        v[1 + a] += ra;
#pragma unroll
        for (int b = 0; b <= a; ++b) v[t++] += ra * diff[b];
    }
}

// Each thread takes a contiguous range of about n / FIT_THREADS samples (the k-means++ draw
// needs sums in sample order).
template <int D>
__device__ void fit_class(const float *x, unsigned n, unsigned k, double floor, double d_ln_2pi,
                          unsigned first, const double *draws, unsigned kmeans_steps,
                          unsigned em_steps, const double *start, unsigned warm_steps,
                          double *scratch, double *out) {
    const int M = 1 + D + D * (D + 1) / 2;
    __shared__ double warp_sh[FIT_WARPS * 10];
    __shared__ double res[10];
    __shared__ double centres[FIT_MAX_K * 3];
    __shared__ double moments[FIT_MAX_K * 10];
    __shared__ double comps[FIT_MAX_K * FIT_COMP];
    __shared__ double tmp[FIT_MAX_K * FIT_COMP];
    __shared__ double thread_sums[FIT_THREADS];
    __shared__ unsigned keep[FIT_MAX_K + 1];
    __shared__ unsigned ush[FIT_WARPS];
    __shared__ double pick_total;

    const unsigned per = (n + FIT_THREADS - 1) / FIT_THREADS;
    const unsigned lo = min(n, threadIdx.x * per), hi = min(n, lo + per);
    double *d2 = scratch;
    unsigned *assign = (unsigned *)(scratch + FIT_MAX_N);
    double *resp = scratch + 2 * FIT_MAX_N;

    // count_distinct (the first k distinct samples, in sample order), into centres as scratch.
    unsigned distinct = 0;
    for (unsigned s = 0; s < k; ++s) {
        unsigned mine = 0xffffffffu;
        for (unsigned i = lo; i < hi && mine == 0xffffffffu; ++i) {
            double xi[D];
            fit_load<D>(x, i, xi);
            bool seen = false;
            for (unsigned q = 0; q < s && !seen; ++q) {
                bool same = true;
#pragma unroll
                for (int a = 0; a < D; ++a) same = same && centres[q * D + a] == xi[a];
                seen = same;
            }
            if (!seen) mine = i;
        }
        unsigned idx = fit_min_u32(mine, ush);
        if (idx == 0xffffffffu) break;
        if (threadIdx.x == 0) {
            double xi[D];
            fit_load<D>(x, idx, xi);
#pragma unroll
            for (int a = 0; a < D; ++a) centres[s * D + a] = xi[a];
        }
        __syncthreads();
        distinct = s + 1;
    }
    const unsigned ke = max(1u, min(k, distinct));
    __syncthreads();

    unsigned nk;
    unsigned steps;
    const unsigned start_k = start ? (unsigned)start[0] : 0u;
    if (start && warm_steps > 0 && start_k >= ke) {
        // Gmm::refit: EM from the given mixture.
        for (unsigned a = threadIdx.x; a < start_k * FIT_COMP; a += FIT_THREADS)
            comps[a] = start[1 + a];
        nk = start_k;
        steps = warm_steps;
        __syncthreads();
    } else {
        // kmeans: k-means++ seeding.
        if (threadIdx.x == 0) {
            double xi[D];
            fit_load<D>(x, first, xi);
#pragma unroll
            for (int a = 0; a < D; ++a) centres[a] = xi[a];
        }
        __syncthreads();
        unsigned nc = 1;
        for (unsigned i = lo; i < hi; ++i) d2[i] = 1.0 / 0.0;
        for (;;) {
            // d2 = min(d2, distance to the newest centre); this thread's sum of them.
            const double *c = centres + (nc - 1) * D;
            double sum = 0.0;
            for (unsigned i = lo; i < hi; ++i) {
                double xi[D];
                fit_load<D>(x, i, xi);
                double dist = 0.0;
#pragma unroll
                for (int a = 0; a < D; ++a) dist += (c[a] - xi[a]) * (c[a] - xi[a]);
                double v = fmin(d2[i], dist);
                d2[i] = v;
                sum += v;
            }
            thread_sums[threadIdx.x] = sum;
            __syncthreads();
            if (nc >= ke) break;
            // D^2 sampling: the sample where the running sum, in sample order, passes the draw.
            if (threadIdx.x == 0) {
                double run = 0.0;
                for (unsigned t = 0; t < FIT_THREADS; ++t) {
                    double s = thread_sums[t];
                    thread_sums[t] = run;
                    run += s;
                }
                pick_total = run;
            }
            __syncthreads();
            const double total = pick_total;
            if (total <= 0.0) break;
            double target = draws[nc - 1] * total;
            const double from = thread_sums[threadIdx.x];
            const double to = threadIdx.x + 1 < FIT_THREADS ? thread_sums[threadIdx.x + 1] : total;
            unsigned pick = 0xffffffffu;
            if (from <= target && target < to) {
                target -= from;
                for (unsigned i = lo; i < hi; ++i) {
                    if (target < d2[i]) {
                        pick = i;
                        break;
                    }
                    target -= d2[i];
                }
            }
            pick = fit_min_u32(pick, ush);
            if (pick == 0xffffffffu) {
                // Rounding left the draw past the end: the last sample not yet a centre.
                unsigned last = 0;
                for (unsigned i = lo; i < hi; ++i)
                    if (d2[i] > 0.0) last = i + 1;
                unsigned l = 0xffffffffu - fit_min_u32(0xffffffffu - last, ush);
                pick = l > 0 ? l - 1 : n - 1;
            }
            if (threadIdx.x == 0) {
                double xi[D];
                fit_load<D>(x, pick, xi);
#pragma unroll
                for (int a = 0; a < D; ++a) centres[nc * D + a] = xi[a];
            }
            __syncthreads();
            ++nc;
        }
        // Lloyd steps.
        for (unsigned step = 0; step < kmeans_steps; ++step) {
            for (unsigned i = lo; i < hi; ++i) {
                double xi[D];
                fit_load<D>(x, i, xi);
                assign[i] = fit_nearest<D>(centres, nc, xi);
            }
            for (unsigned j = 0; j < nc; ++j) {
                double v[D + 1];
#pragma unroll
                for (int a = 0; a <= D; ++a) v[a] = 0.0;
                for (unsigned i = lo; i < hi; ++i) {
                    if (assign[i] != j) continue;
                    double xi[D];
                    fit_load<D>(x, i, xi);
#pragma unroll
                    for (int a = 0; a < D; ++a) v[a] += xi[a];
                    v[D] += 1.0;
                }
                fit_sums<D + 1>(v, warp_sh, res);
                if (threadIdx.x < D && res[D] > 0.0)
                    centres[j * D + threadIdx.x] = res[threadIdx.x] / res[D];
                __syncthreads();
            }
        }
        // The hard assignment's moments about the centres, then the first M-step.
        for (unsigned i = lo; i < hi; ++i) {
            double xi[D];
            fit_load<D>(x, i, xi);
            assign[i] = fit_nearest<D>(centres, nc, xi);
        }
        for (unsigned j = 0; j < nc; ++j) {
            double v[M];
#pragma unroll
            for (int a = 0; a < M; ++a) v[a] = 0.0;
            for (unsigned i = lo; i < hi; ++i) {
                if (assign[i] != j) continue;
                double xi[D], diff[D];
                fit_load<D>(x, i, xi);
#pragma unroll
                for (int a = 0; a < D; ++a) diff[a] = xi[a] - centres[j * D + a];
                fit_add<D>(v, 1.0, diff);
            }
            fit_sums<M>(v, warp_sh, res);
            if (threadIdx.x < M) moments[j * M + threadIdx.x] = res[threadIdx.x];
            __syncthreads();
        }
        nk = fit_m_step<D>(moments, centres, nc, n, floor, d_ln_2pi, comps, tmp, keep);
        steps = em_steps;
    }

    // EM: responsibilities, then each component's moments about its mean, then the M-step.
    for (unsigned step = 0; step < steps; ++step) {
        for (unsigned i = lo; i < hi; ++i) {
            double xi[D];
            fit_load<D>(x, i, xi);
            double logs[FIT_MAX_K];
            double best = -1.0 / 0.0;
            for (unsigned j = 0; j < nk; ++j) {
                const double *c = comps + j * FIT_COMP;
                double diff[D];
#pragma unroll
                for (int a = 0; a < D; ++a) diff[a] = xi[a] - c[1 + a];
                double maha = 0.0;
#pragma unroll
                for (int r = 0; r < D; ++r) {
                    double y = 0.0;
#pragma unroll
                    for (int q = 0; q <= r; ++q) y += c[4 + r * D + q] * diff[q];
                    maha += y * y;
                }
                logs[j] = c[0] - 0.5 * maha;
                best = fmax(best, logs[j]);
            }
            double total = 0.0;
            for (unsigned j = 0; j < nk; ++j) {
                double t = logs[j] - best;
                logs[j] = t < -700.0 ? 0.0 : exp(t);
                total += logs[j];
            }
            for (unsigned j = 0; j < nk; ++j) resp[(size_t)i * FIT_MAX_K + j] = logs[j] / total;
        }
        for (unsigned j = 0; j < nk; ++j) {
            double v[M];
#pragma unroll
            for (int a = 0; a < M; ++a) v[a] = 0.0;
            const double *c = comps + j * FIT_COMP;
            for (unsigned i = lo; i < hi; ++i) {
                double r = resp[(size_t)i * FIT_MAX_K + j];
                if (r == 0.0) continue;
                double xi[D], diff[D];
                fit_load<D>(x, i, xi);
#pragma unroll
                for (int a = 0; a < D; ++a) diff[a] = xi[a] - c[1 + a];
                fit_add<D>(v, r, diff);
            }
            fit_sums<M>(v, warp_sh, res);
            if (threadIdx.x < M) moments[j * M + threadIdx.x] = res[threadIdx.x];
            if (threadIdx.x < D) centres[j * D + threadIdx.x] = c[1 + threadIdx.x];
            __syncthreads();
        }
        nk = fit_m_step<D>(moments, centres, nk, n, floor, d_ln_2pi, comps, tmp, keep);
    }
    for (unsigned a = threadIdx.x; a < nk * FIT_COMP; a += FIT_THREADS) out[1 + a] = comps[a];
    if (threadIdx.x == 0) out[0] = (double)nk;
}

// One block of FIT_THREADS threads per class: desc[3 * b ..] = {offset of its first sample (in
// samples), its sample count n (1..=FIT_MAX_N), the k-means++ first index (< n)};
// draws[b * (FIT_MAX_K - 1) ..] the k-means++ uniforms; start (null: none) a warm start per block
// in the output's layout (FIT_OUT doubles), used when warm_steps > 0 and it has at least as many
// components as the fit would use (Gmm::refit), for warm_steps EM iterations; otherwise the fit
// from scratch runs kmeans_steps Lloyd steps and em_steps EM iterations. ch is 1 or 3.
// out[b * FIT_OUT ..] = {components kept, then per component (FIT_COMP doubles) log_coef, the
// mean in slots 1..1+ch, L^-1 (ch x ch, row-major) from slot 4}.
// sync: block barriers between passes; the shared arrays are the block's own, written by one
// thread (or one per value) between barriers. safe: the block's scratch (FIT_SCRATCH doubles)
// and output (FIT_OUT doubles); within a pass each thread writes the scratch entries of its own
// sample range only, and reads others' only after a barrier.
extern "C" __global__ void __launch_bounds__(FIT_THREADS)
    model_fit(unsigned ch, unsigned k, double floor, double d_ln_2pi, unsigned kmeans_steps,
              unsigned em_steps, const float *samples, const unsigned *desc, const double *draws,
              const double *start, unsigned warm_steps, double *scratch, double *out) {
    const unsigned b = blockIdx.x;
    const float *x = samples + (size_t)desc[3 * b] * ch;
    const unsigned n = desc[3 * b + 1], first = desc[3 * b + 2];
    const double *dr = draws + (size_t)b * (FIT_MAX_K - 1);
    const double *st = start ? start + (size_t)b * FIT_OUT : nullptr;
    double *sc = scratch + (size_t)b * FIT_SCRATCH;
    double *o = out + (size_t)b * FIT_OUT;
    if (ch == 1)
        fit_class<1>(x, n, k, floor, d_ln_2pi, first, dr, kmeans_steps, em_steps, st, warm_steps,
                     sc, o);
    else
        fit_class<3>(x, n, k, floor, d_ln_2pi, first, dr, kmeans_steps, em_steps, st, warm_steps,
                     sc, o);
}

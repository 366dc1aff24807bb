// seg_energy.cu: the Boykov-Jolly / GrabCut energy of an image built on the GPU. Launched only
// through the typed launchers of src/cuda/launch/seg_energy.rs, which hold every kernel's argument
// order and launch shape; src/segment/gpu.rs drives them.
//
// The kernels redo src/segment/energy.rs (and the Lab conversion of src/segment/color.rs)
// operation for operation, so that the capacities equal the CPU's: this file is compiled with
// --fmad=false (no fused multiply-add contraction, which Rust never does either), every float
// expression keeps the CPU's evaluation order, and the tables (exp, sRGB linearisation, grey
// costs) are computed on the host by the same Rust code the CPU path runs. What remains different
// is the device's exp/log (double), which may round differently in the last bit.
//
// Layout (the GridGraph layout): node v = x + W*(y + H*z); caps[d*n + v] is the capacity of
// v -> neighbour(v, d), zero where the neighbour lies outside the grid; d ^ 1 is the reverse.
//
// Reductions (channel statistics, the beta sum, the largest n-link sum, the unary constant, the
// cut capacity) are two-level: a block reduces in shared memory and writes one partial per block;
// the host adds the partials, so no floating-point atomics make results depend on timing.

#include "common.cuh"

// sRGB (already linearised through the host's table) -> CIE L*a*b*, as srgb_to_lab in
// src/segment/color.rs. The cube root goes through double precision: rounded to float it is
// the correctly rounded cbrtf, which is what the host's libm gives (glibc's cbrtf agrees with it on
// every float in [0.008, 1.2], all Lab needs); the device's cbrtf is only faithful, and moved 1-3 %
// of the capacities by one unit.
__device__ __forceinline__ float lab_f(float t) {
    return t > 0.008856f ? (float)cbrt((double)t) : 7.787f * t + 16.0f / 116.0f;
}

__device__ __forceinline__ void lab_store(float r, float g, float b, float *out) {
    float x = (0.4124f * r + 0.3576f * g + 0.1805f * b) / 0.95047f;
    float y = 0.2126f * r + 0.7152f * g + 0.0722f * b;
    float z = (0.0193f * r + 0.1192f * g + 0.9505f * b) / 1.08883f;
    float fx = lab_f(x), fy = lab_f(y), fz = lab_f(z);
    out[0] = 116.0f * fy - 16.0f;
    out[1] = 500.0f * (fx - fy);
    out[2] = 200.0f * (fy - fz);
}

// 8-bit RGB -> Lab. lin[i] is the linearised value of i / 255.
// sync: none. safe: lab (pixel v's three values only).
extern "C" __global__ void lab_from_u8(unsigned n, const unsigned char *rgb, const float *lin,
                                       float *lab) {
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        lab_store(lin[rgb[3 * v]], lin[rgb[3 * v + 1]], lin[rgb[3 * v + 2]], lab + 3 * (size_t)v);
    }
}

// Integer-valued RGB as float (8- or 16-bit, checked on the host) -> Lab; lin has one entry per
// value up to the image's full scale.
// sync: none. safe: lab (pixel v's three values only).
extern "C" __global__ void lab_from_f32(unsigned n, const float *rgb, const float *lin,
                                        float *lab) {
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        const float *p = rgb + 3 * (size_t)v;
        lab_store(lin[(int)p[0]], lin[(int)p[1]], lin[(int)p[2]], lab + 3 * (size_t)v);
    }
}

// 8-bit values -> float, unchanged (the colour space is the image's own).
// sync: none. safe: out[i].
extern "C" __global__ void widen_u8(unsigned long long count, const unsigned char *input,
                                    float *out) {
    for (u64 i = blockIdx.x * (u64)blockDim.x + threadIdx.x; i < count;
         i += (u64)gridDim.x * blockDim.x)
        out[i] = (float)input[i];
}

// Per channel c < ch (ch <= 3): min, max, sum, sum of squares of the working image (for
// ModelParams), plus the number of values that are not integers in i32 range (value_range's test),
// as partials[block * (4 ch + 1) + ...].
// sync: none. safe: partials[blockIdx.x * (4 ch + 1) ..].
extern "C" __global__ void channel_stats(unsigned n, unsigned ch, const float *img,
                                         double *partials) {
    __shared__ double sh[BLOCK];
    double lo[3], hi[3], s[3], s2[3], frac = 0.0;
    for (unsigned c = 0; c < ch; ++c) {
        lo[c] = 1.0 / 0.0;
        hi[c] = -1.0 / 0.0;
        s[c] = 0.0;
        s2[c] = 0.0;
    }
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        for (unsigned c = 0; c < ch; ++c) {
            float f = img[(size_t)v * ch + c];
            double x = (double)f;
            lo[c] = fmin(lo[c], x);
            hi[c] = fmax(hi[c], x);
            s[c] += x;
            s2[c] += x * x;
            // Rust's `v as i32` saturates, as __float2int_rz does.
            if ((float)__float2int_rz(f) != f) frac += 1.0;
        }
    }
    double *out = partials + (size_t)blockIdx.x * (4 * ch + 1);
    for (unsigned c = 0; c < ch; ++c) {
        double a = block_min(lo[c], sh), b = block_max(hi[c], sh);
        double t = block_sum(s[c], sh), t2 = block_sum(s2[c], sh);
        if (threadIdx.x == 0) {
            out[4 * c] = a;
            out[4 * c + 1] = b;
            out[4 * c + 2] = t;
            out[4 * c + 3] = t2;
        }
    }
    double f = block_sum(frac, sh);
    if (threadIdx.x == 0) out[4 * ch] = f;
}

// Squared colour distance of pixels v and q, summed in channel order as in energy.rs.
__device__ __forceinline__ float dist2(const float *img, unsigned ch, size_t v, size_t q) {
    float s = 0.0f;
    for (unsigned c = 0; c < ch; ++c) {
        float d = img[v * ch + c] - img[q * ch + c];
        s += d * d;
    }
    return s;
}

// The sum over all neighbour pairs (each pair once: the even directions) of the squared colour
// distance, for beta; partials[block].
// sync: none. safe: partials[blockIdx.x].
extern "C" __global__ void pair_sum(Grid g, unsigned ch, const float *img, double *partials) {
    __shared__ double sh[BLOCK];
    double sum = 0.0;
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < g.n; v += gridDim.x * blockDim.x) {
        unsigned x, y, z;
        coords(g, v, x, y, z);
        for (unsigned d = 0; d < g.deg; d += 2) {
            i64 q = neighbor(g, x, y, z, d);
            if (q >= 0) sum += (double)dist2(img, ch, v, (size_t)q);
        }
    }
    double t = block_sum(sum, sh);
    if (threadIdx.x == 0) partials[blockIdx.x] = t;
}

// n-links from colour distances: caps[d*n + v] = round(top * exp(-beta * |I_v - I_q|^2) / dist_d)
// with exp from the host's table (ExpTable in energy.rs: `steps` + 2 entries on [0, 32], 256 per
// unit, linear interpolation); and each block's largest n-link sum of a node, for K.
// sync: none. safe: caps[d*n + v] for the thread's own v, partials[blockIdx.x].
extern "C" __global__ void nlinks(Grid g, unsigned ch, const float *img, float beta,
                                  const float *inv_dist, const float *exp_table, float end,
                                  int *caps, i64 *partials) {
    __shared__ i64 sh[BLOCK];
    i64 best = 0;
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < g.n; v += gridDim.x * blockDim.x) {
        unsigned x, y, z;
        coords(g, v, x, y, z);
        i64 sum = 0;
        for (unsigned d = 0; d < g.deg; ++d) {
            i64 q = neighbor(g, x, y, z, d);
            int cap = 0;
            if (q >= 0) {
                float t = beta * dist2(img, ch, v, (size_t)q) * 256.0f;
                float e = 0.0f;
                if (t < end) {
                    unsigned i = (unsigned)t;
                    float f = t - (float)i;
                    float a = exp_table[i], b = exp_table[i + 1];
                    e = a + f * (b - a);
                }
                cap = (int)(e * inv_dist[d] + 0.5f);
            }
            caps[(size_t)d * g.n + v] = cap;
            sum += cap;
        }
        best = sum > best ? sum : best;
    }
    i64 m = block_max_i64(best, sh);
    if (threadIdx.x == 0) partials[blockIdx.x] = m;
}

// n-links of integer grey images from per-|difference| tables of final capacities:
// caps[d*n + v] = tables[table_of[d] * span1 + |I_v - I_q|]; partials as in nlinks.
// sync: none. safe: caps[d*n + v] for the thread's own v, partials[blockIdx.x].
extern "C" __global__ void nlinks_grey_table(Grid g, const float *img, const int *tables,
                                             const unsigned *table_of, unsigned span1, int *caps,
                                             i64 *partials) {
    __shared__ i64 sh[BLOCK];
    i64 best = 0;
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < g.n; v += gridDim.x * blockDim.x) {
        unsigned x, y, z;
        coords(g, v, x, y, z);
        i64 sum = 0;
        for (unsigned d = 0; d < g.deg; ++d) {
            i64 q = neighbor(g, x, y, z, d);
            int cap = 0;
            if (q >= 0) {
                unsigned delta = (unsigned)fabsf(img[v] - img[q]);
                cap = tables[(size_t)table_of[d] * span1 + delta];
            }
            caps[(size_t)d * g.n + v] = cap;
            sum += cap;
        }
        best = sum > best ? sum : best;
    }
    i64 m = block_max_i64(best, sh);
    if (threadIdx.x == 0) partials[blockIdx.x] = m;
}

// -ln p(x) under a Gaussian mixture of k components, each stored as
// [log_coef, mean[ch], L^-1 lower triangle by rows] (ch <= 3; Gmm::nll3's formula and order).
__device__ double gmm_nll(const double *comp, unsigned k, unsigned ch, const double *x) {
    const unsigned stride = 1 + ch + ch * (ch + 1) / 2;
    double logs[16];
    double best = -1.0 / 0.0;
    for (unsigned j = 0; j < k; ++j) {
        const double *c = comp + j * stride;
        double diff[3];
        for (unsigned a = 0; a < ch; ++a) diff[a] = x[a] - c[1 + a];
        const double *l = c + 1 + ch;
        double maha = 0.0;
        for (unsigned i = 0; i < ch; ++i) {
            double y = l[0] * diff[0];
            for (unsigned p = 1; p <= i; ++p) y += l[p] * diff[p];
            l += i + 1;
            maha += y * y;
        }
        logs[j] = c[0] - 0.5 * maha;
        best = fmax(best, logs[j]);
    }
    double sum = 0.0;
    for (unsigned j = 0; j < k; ++j) sum += exp(logs[j] - best);
    return -(best + log(sum));
}

// -ln(e^la + e^lb) from the larger term (model.rs's neg_log_sum_exp).
__device__ __forceinline__ double neg_log_sum_exp(double la, double lb) {
    double m = fmax(la, lb);
    return -(m + log(exp(la - m) + exp(lb - m)));
}

// A class's cost: the refitted mixture, blended with the seed-fitted one when w > 0, then mixed
// with the uniform outlier density when there is one (model.rs's Blend). header (HEADER
// doubles) = {refit offset, refit k, seeds offset (< 0: none), seeds k, ln(1 - w), ln w,
// ln(1 - eps), ln(eps u) (-inf: no outlier)}, offsets into `models`.
#define HEADER 8
__device__ double class_nll(const double *models, const double *header, unsigned ch,
                            const double *x) {
    double c = gmm_nll(models + (size_t)header[0], (unsigned)header[1], ch, x);
    if (header[2] >= 0.0) {
        double b = gmm_nll(models + (size_t)header[2], (unsigned)header[3], ch, x);
        c = neg_log_sum_exp(header[4] - c, header[5] - b);
    }
    if (header[7] > -1.0 / 0.0) c = neg_log_sum_exp(header[6] - c, header[7]);
    return c;
}

// The stroke-geometry prior (prior.rs), when there is one: delta = its cost of foreground minus
// that of background, added to the costs as energy.rs's write_tlinks does.
__device__ __forceinline__ void add_prior(const float *prior, unsigned v, double &dfg,
                                          double &dbg) {
    if (prior == nullptr) return;
    double delta = (double)prior[v];
    dfg += fmax(delta, 0.0);
    dbg += fmax(-delta, 0.0);
}

// The t-link of one pixel from its costs, as write_tlinks in energy.rs; false if the costs are
// unusable (NaN net cost or non-finite smaller cost).
__device__ __forceinline__ bool tlink(double dfg, double dbg, double scale, int k, int &s,
                                      int &t, double &constant) {
    double net = (dbg - dfg) * scale;
    double lo = fmin(dfg, dbg);
    if (isnan(net) || !isfinite(lo)) return false;
    constant += lo;
    int c = (int)(fmin(fabs(net), (double)k) + 0.5);
    if (net > 0.0) {
        s = c;
        t = 0;
    } else {
        s = 0;
        t = c;
    }
    return true;
}

// Seeds: 1 foreground (K, 0), 2 background (0, K), others get their net data cost.
__device__ __forceinline__ bool hard_seed(unsigned char label, int k, int &s, int &t) {
    if (label == 1) {
        s = k;
        t = 0;
        return true;
    }
    if (label == 2) {
        s = 0;
        t = k;
        return true;
    }
    return false;
}

// t-links from the two classes' mixtures evaluated per pixel, plus the prior (null: none); the
// partial sums of the unary constant per block; the lowest pixel whose costs are unusable in
// *bad (atomicMin).
// sync: bad. safe: source[v], sink[v] for the thread's own v, partials[blockIdx.x].
extern "C" __global__ void tlinks_gmm(unsigned n, unsigned ch, const float *img,
                                      const unsigned char *seeds, const double *models,
                                      const double *headers, const float *prior, double scale,
                                      int k, int *source, int *sink, double *partials,
                                      unsigned *bad) {
    __shared__ double sh[BLOCK];
    double constant = 0.0;
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        int s, t;
        if (!hard_seed(seeds[v], k, s, t)) {
            double x[3];
            for (unsigned c = 0; c < ch; ++c) x[c] = (double)img[(size_t)v * ch + c];
            double dfg = class_nll(models, headers, ch, x);
            double dbg = class_nll(models, headers + HEADER, ch, x);
            add_prior(prior, v, dfg, dbg);
            if (!tlink(dfg, dbg, scale, k, s, t, constant)) {
                atomicMin(bad, v);
                s = 0;
                t = 0;
            }
        }
        source[v] = s;
        sink[v] = t;
    }
    double c = block_sum(constant, sh);
    if (threadIdx.x == 0) partials[blockIdx.x] = c;
}

// t-links of grey images from the host's cost table (energy.rs's CostTable: nodes[2i], nodes[2i+1]
// = (D_fg, D_bg) at lo + i * step, linear interpolation between nodes); otherwise as tlinks_gmm.
// sync: bad. safe: source[v], sink[v] for the thread's own v, partials[blockIdx.x].
extern "C" __global__ void tlinks_grey_table(unsigned n, const float *img,
                                             const unsigned char *seeds, const double *nodes,
                                             unsigned count, float lo, float inv_step,
                                             const float *prior, double scale, int k,
                                             int *source, int *sink, double *partials,
                                             unsigned *bad) {
    __shared__ double sh[BLOCK];
    double constant = 0.0;
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < n; v += gridDim.x * blockDim.x) {
        int s, t;
        if (!hard_seed(seeds[v], k, s, t)) {
            unsigned last = count - 1;
            float tt = fmaxf((img[v] - lo) * inv_step, 0.0f);
            unsigned i = (unsigned)tt;
            if (i > last) i = last;
            double f = (double)(tt - (float)i);
            double dfg = nodes[2 * i], dbg = nodes[2 * i + 1];
            if (!(f == 0.0 || i == last)) {
                dfg = dfg + f * (nodes[2 * i + 2] - dfg);
                dbg = dbg + f * (nodes[2 * i + 3] - dbg);
            }
            add_prior(prior, v, dfg, dbg);
            if (!tlink(dfg, dbg, scale, k, s, t, constant)) {
                atomicMin(bad, v);
                s = 0;
                t = 0;
            }
        }
        source[v] = s;
        sink[v] = t;
    }
    double c = block_sum(constant, sh);
    if (threadIdx.x == 0) partials[blockIdx.x] = c;
}

// The capacity of a cut (sink_side[v] = 1: v is on the sink side) from the original capacities:
// source arcs of sink-side nodes, sink arcs of source-side nodes, n-links from the source side to
// the sink side; partial sums per block (for the certificate check, as maxflow::verify).
// sync: none. safe: partials[blockIdx.x].
extern "C" __global__ void cut_capacity(Grid g, const int *caps, const int *source,
                                        const int *sink, const unsigned char *sink_side,
                                        u64 *partials) {
    __shared__ i64 sh[BLOCK];
    u64 sum = 0;
    for (unsigned v = blockIdx.x * blockDim.x + threadIdx.x; v < g.n; v += gridDim.x * blockDim.x) {
        if (sink_side[v]) {
            sum += (u64)source[v];
            continue;
        }
        sum += (u64)sink[v];
        unsigned x, y, z;
        coords(g, v, x, y, z);
        for (unsigned d = 0; d < g.deg; ++d) {
            i64 q = neighbor(g, x, y, z, d);
            if (q >= 0 && sink_side[q]) sum += (u64)caps[(size_t)d * g.n + v];
        }
    }
    // Sums of non-negative i32 over at most 2^32 nodes and 27 arcs each fit i64.
    sh[threadIdx.x] = (i64)sum;
    __syncthreads();
    for (unsigned s = BLOCK / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) sh[threadIdx.x] += sh[threadIdx.x + s];
        __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = (u64)sh[0];
}

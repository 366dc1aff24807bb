// seg_prior.cu: the stroke-geometry prior of src/segment/prior.rs on the GPU: the geodesic
// distances of every pixel to the foreground and the background strokes, and the prior's log-odds
// from them. Launched only through the typed launchers of src/cuda/launch/seg_prior.rs;
// src/segment/gpu_prior.rs drives them.
//
// The distances are the fixed point of d(p) = min(d(p), min_q fl(d(q) + step(p, q))) with d = 0
// on the class's strokes, the same f32 expressions as prior.rs (compiled with --fmad=false, IEEE
// sqrt and division: NVRTC's defaults). The fixed point is unique, so any schedule of relaxations
// that runs until nothing changes reaches the CPU's bits. The schedule here: line sweeps, a thread
// per grid line along one axis walking it in one direction and relaxing each pixel from its
// neighbours one step behind (3 of them in 2D, 9 in 3D); the host repeats the sweeps over every
// axis and both directions until a whole pass sets no `changed` flag.
//
// A sweep reads neighbouring lines' distances while their threads may be lowering them. Any value
// read is the old or the new one, both upper bounds of the fixed point, so the race only changes
// how many passes convergence takes, never the result; a pass that changed nothing read final
// values everywhere.

#include "common.cuh"

// Value i of the image: bytes when it was uploaded as bytes (floats then null), else floats.
__device__ __forceinline__ float pixel_value(const unsigned char *bytes, const float *floats,
                                             size_t i) {
    return bytes ? (float)bytes[i] : floats[i];
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

// One sweep along `axis` (0: x, 1: y, 2: z) in direction `sign` (+1: increasing coordinate): a
// thread per line walks it and relaxes each pixel, for both classes at once (they share the step
// lengths), from the neighbours whose offset along the axis is -sign. dist2[k] is direction k's
// squared physical length, colour the factor (kappa / sigma)^2. A thread that lowered a distance
// sets *changed.
// sync: changed (atomicOr); d_fg, d_bg of the neighbouring lines are read while their threads
// write them (see the file's header). safe: d_fg[v], d_bg[v] for v on the thread's own line.
extern "C" __global__ void prior_sweep(const Grid g, unsigned axis, int sign, unsigned ch,
                                       const unsigned char *bytes, const float *floats,
                                       const float *dist2, float colour, float *d_fg, float *d_bg,
                                       unsigned *changed) {
    const unsigned dims[3] = {g.w, g.h, g.d};
    const unsigned len = dims[axis];
    const unsigned lines = g.n / len;
    const unsigned line = blockIdx.x * blockDim.x + threadIdx.x;
    if (line >= lines) return;
    // The line's fixed coordinates: the other two axes, the lower one varying fastest.
    const unsigned a = axis == 0 ? 1 : 0, b = axis == 2 ? 1 : 2;
    unsigned c[3];
    c[a] = line % dims[a];
    c[b] = line / dims[a];
    volatile float *vf = d_fg, *vb = d_bg;
    const int behind = -sign;
    bool lowered = false;
    for (unsigned i = 0; i < len; ++i) {
        c[axis] = sign > 0 ? i : len - 1 - i;
        const size_t v = c[0] + (size_t)g.w * (c[1] + (size_t)g.h * c[2]);
        float best_f = vf[v], best_b = vb[v];
        for (unsigned k = 0; k < g.deg; ++k) {
            const int *o = g.is3d ? OFFSETS_3D[k] : OFFSETS_2D[k];
            if (o[axis] != behind) continue;
            i64 q = neighbor(g, c[0], c[1], c[2], k);
            if (q < 0) continue;
            float from_f = vf[q], from_b = vb[q];
            // An unreached or farther neighbour cannot improve anything.
            if (!(from_f < best_f || from_b < best_b)) continue;
            float c2 = colour_dist2(bytes, floats, ch, v, (size_t)q);
            float step = sqrtf(dist2[k] + colour * c2);
            if (from_f < best_f) best_f = fminf(best_f, from_f + step);
            if (from_b < best_b) best_b = fminf(best_b, from_b + step);
        }
        if (best_f < vf[v]) {
            vf[v] = best_f;
            lowered = true;
        }
        if (best_b < vb[v]) {
            vb[v] = best_b;
            lowered = true;
        }
    }
    if (lowered) atomicOr(changed, 1u);
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

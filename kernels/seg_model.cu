// seg_model.cu: the colour models' samples gathered on the GPU: each class's pixels of the
// working image (by the seeds or by the last mask), every step-th of them in pixel order, exactly
// the samples the host's gather in src/segment/pipeline.rs hands to Gmm::fit. Launched only
// through the typed launchers of src/cuda/launch/seg_model.rs; src/segment/gpu_model.rs drives
// them.
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
